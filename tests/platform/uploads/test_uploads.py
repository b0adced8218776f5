"""Resumable uploads as rows and files: metadata, limits, expiry (the beat task), and the import
of a finished upload through the REST API (``POST .../imports/`` with ``upload_id``)."""

from __future__ import annotations

import base64
import io
import zipfile
from datetime import timedelta
from typing import Any

import pytest
from django.conf import settings as django_settings
from django.utils import timezone

from sampan.core.errors import ValidationFailed
from sampan.datasets.models import ImportJob
from sampan.datasets.imports import import_job_run
from sampan.uploads import services
from sampan.uploads.models import Upload, UploadStatus
from sampan.uploads.selectors import upload_path
from sampan.uploads.tasks import delete_expired
from tests.fixtures import images

pytestmark = pytest.mark.django_db


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def finished(owner: Any, data: bytes, filename: str) -> Upload:
    """An upload whose bytes all arrived (as the tus app leaves it)."""
    upload = services.upload_create(owner=owner, length=len(data),
                                    metadata={"filename": filename})
    upload_path(upload.pk).write_bytes(data)
    assert services.upload_record_progress(upload_id=upload.pk, offset=len(data))
    upload.refresh_from_db()
    return upload


def test_metadata_is_base64_utf8_pairs() -> None:
    assert services.parse_metadata(f"filename {b64('猫 cat.zip')},filetype {b64('x/y')},"
                                   "is_confidential") == {
        "filename": "猫 cat.zip", "filetype": "x/y", "is_confidential": ""}
    with pytest.raises(ValidationFailed) as bad:
        services.parse_metadata("filename %%%")
    assert bad.value.field == "Upload-Metadata" and "'filename'" in bad.value.message


def test_create_checks_the_length_against_the_limit_and_the_name(make_user: Any,
                                                                settings: Any) -> None:
    settings.SAMPAN_UPLOAD_MAX_BYTES = 100
    user = make_user()
    with pytest.raises(services.TooLarge) as big:
        services.upload_create(owner=user, length=101, metadata={})
    assert big.value.status_code == 413 and big.value.details == {"limit_bytes": 100}
    with pytest.raises(ValidationFailed):
        services.upload_create(owner=user, length=10, metadata={"filename": "a\nb.zip"})
    assert Upload.objects.count() == 0
    upload = services.upload_create(owner=user, length=100, metadata={"name": "Cafe\u0301.zip"})
    assert upload.filename == "Caf\u00e9.zip" and upload_path(upload.pk).stat().st_size == 0
    empty = services.upload_create(owner=user, length=0, metadata={})
    assert empty.status == UploadStatus.COMPLETE


def test_expired_uploads_are_deleted_by_the_beat_task(make_user: Any) -> None:
    assert django_settings.CELERY_BEAT_SCHEDULE["delete-expired-uploads"]["task"] == \
        "uploads.delete_expired"
    user = make_user()
    stale = services.upload_create(owner=user, length=10, metadata={})
    unused = finished(user, b"0123456789", "x.bin")
    fresh = services.upload_create(owner=user, length=10, metadata={})
    Upload.objects.filter(pk__in=[stale.pk, unused.pk]).update(
        expires_at=timezone.now() - timedelta(seconds=1))
    assert delete_expired() == 2
    assert list(Upload.objects.values_list("pk", flat=True)) == [fresh.pk]
    assert not upload_path(stale.pk).exists() and not upload_path(unused.pk).exists()
    assert upload_path(fresh.pk).exists()


@pytest.fixture
def ctx(project_with_roles: dict[str, Any], api: Any) -> dict[str, Any]:
    editor = project_with_roles["editor"]
    client = api(editor)
    base = f"/api/v1/projects/{project_with_roles['project'].pk}"
    dataset = client.post(f"{base}/datasets/", {"name": "d"}, format="json").json()
    return {"client": client, "user": editor, "url": f"{base}/datasets/{dataset['id']}/imports/",
            "base": base, "roles": project_with_roles}


def zip_of(entries: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in entries.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def test_an_import_from_an_upload_imports_its_images_once(ctx: dict[str, Any]) -> None:
    upload = finished(ctx["user"], zip_of({"cats/a.png": images.png_bytes(),
                                           "dogs/b.png": images.png_bytes((1, 2, 3))}), "pets")
    response = ctx["client"].post(ctx["url"], {"upload_id": str(upload.pk)}, format="json")
    assert response.status_code == 202, response.json()
    assert not upload_path(upload.pk).exists()  # moved into the import's staging folder
    import_job_run(job_id=response.json()["id"])
    job = ImportJob.objects.get(pk=response.json()["id"])
    assert job.status == "SUCCEEDED" and job.report["counts"]["imported"] == 2
    again = ctx["client"].post(ctx["url"], {"upload_id": str(upload.pk)}, format="json")
    assert again.status_code == 409 and again.json()["error"]["field"] == "upload_id"


def test_an_upload_of_one_image_imports_with_the_label(ctx: dict[str, Any]) -> None:
    upload = finished(ctx["user"], images.png_bytes(), "cat.png")
    response = ctx["client"].post(ctx["url"], {"upload_id": str(upload.pk), "label": "cat"},
                                  format="json")
    assert response.status_code == 202
    import_job_run(job_id=response.json()["id"])
    job = ImportJob.objects.get(pk=response.json()["id"])
    assert job.report["counts"]["imported"] == 1
    assert [s.original_name for s in job.samples.all()] == ["cat.png"]


def test_an_unfinished_or_foreign_or_unsafe_upload_is_refused_and_kept(
        ctx: dict[str, Any]) -> None:
    partial = services.upload_create(owner=ctx["user"], length=10, metadata={})
    upload_path(partial.pk).write_bytes(b"01234")
    response = ctx["client"].post(ctx["url"], {"upload_id": str(partial.pk)}, format="json")
    assert response.status_code == 409
    assert response.json()["error"]["details"] == {"offset": 5, "length": 10}
    foreign = finished(ctx["roles"]["viewer"], images.png_bytes(), "x.png")
    response = ctx["client"].post(ctx["url"], {"upload_id": str(foreign.pk)}, format="json")
    assert response.status_code == 404 and response.json()["error"]["field"] == "upload_id"
    evil = finished(ctx["user"], zip_of({"../../x.png": images.png_bytes()}), "evil.zip")
    response = ctx["client"].post(ctx["url"], {"upload_id": str(evil.pk)}, format="json")
    assert response.status_code == 400 and response.json()["error"]["field"] == "upload_id"
    assert "'../../x.png'" in response.json()["error"]["message"]
    evil.refresh_from_db()
    assert evil.status == UploadStatus.COMPLETE and upload_path(evil.pk).exists()
    assert ImportJob.objects.count() == 0
