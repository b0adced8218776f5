"""Samples, imports and training artifacts in the bucket (SAMPAN_STORAGE=s3, a moto S3 server
process). The web and the worker sides of an import or a training job run with DIFFERENT data
folders, as on two hosts: everything they share goes through the bucket."""

from __future__ import annotations

import io
import json
import shutil
import zipfile
from pathlib import Path
from typing import Any

import pytest
import requests
from django.core.files.uploadedfile import SimpleUploadedFile
from PIL import Image

from sampan.core import storage
from sampan.datasets.models import ImportJob, Sample
from sampan.datasets.imports import import_job_run
from sampan.datasets.services import dataset_create, sample_label_set
from sampan.datasets.storage import store_normalised_image
from sampan.datasets.versions import dataset_version_create
from sampan.training import services as training
from sampan.training.models import TrainingJob
from sampan.uploads import services as uploads
from sampan.uploads.models import UploadStatus
from sampan.uploads.selectors import upload_path
from tests.fixtures import images

pytestmark = pytest.mark.django_db


def zip_of(entries: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in entries.items():
            archive.writestr(name, data)
    return buffer.getvalue()


@pytest.fixture
def ctx(project_with_roles: dict[str, Any], api: Any) -> dict[str, Any]:
    editor = project_with_roles["editor"]
    client = api(editor)
    base = f"/api/v1/projects/{project_with_roles['project'].pk}"
    dataset = client.post(f"{base}/datasets/", {"name": "d"}, format="json").json()
    return {"client": client, "user": editor, "base": base,
            "imports": f"{base}/datasets/{dataset['id']}/imports/",
            "project": project_with_roles["project"]}


def as_another_host(settings: Any, root: Path) -> None:
    """From here on this process is a worker on another host: its own, empty data folder and
    MEDIA_ROOT; the web's are deleted, so reading them would fail."""
    shutil.rmtree(settings.DATA_DIR)
    shutil.rmtree(settings.MEDIA_ROOT, ignore_errors=True)
    settings.DATA_DIR = root / "worker-data"
    settings.MEDIA_ROOT = root / "worker-media"
    settings.DATA_DIR.mkdir()


def test_samples_are_saved_to_and_served_from_the_bucket(s3: Any, ctx: dict[str, Any],
                                                         settings: Any, tmp_path: Path) -> None:
    red, blue = images.png_bytes((200, 0, 0)), images.png_bytes((0, 0, 200))
    response = ctx["client"].post(ctx["imports"], {"files": [
        SimpleUploadedFile("colours.zip", zip_of({"red/1.png": red, "blue/2.png": blue}))]},
        format="multipart")
    assert response.status_code == 202, response.json()
    staged = s3.keys("staging/")
    assert len(staged) == 1 and staged[0].endswith("/archive-0000.zip")
    as_another_host(settings, tmp_path)
    import_job_run(job_id=response.json()["id"])
    job = ImportJob.objects.get(pk=response.json()["id"])
    assert job.status == "SUCCEEDED", job.error
    assert job.report["counts"]["imported"] == 2
    assert s3.keys("staging/") == []  # the staged archive is removed with the job
    samples = {s.original_name: s for s in Sample.objects.all()}
    assert sorted(s3.keys("samples/")) == sorted(s.file for s in samples.values())
    assert not Path(settings.MEDIA_ROOT).exists()  # nothing went to a local disk

    image = ctx["client"].get(f"{ctx['base']}/samples/{samples['red/1.png'].pk}/image/")
    assert image.status_code == 302 and image["Cache-Control"] == "private, max-age=1800"
    fetched = requests.get(image["Location"], timeout=10)
    assert fetched.status_code == 200 and fetched.headers["Content-Type"] == "image/png"
    with Image.open(io.BytesIO(fetched.content)) as decoded:
        assert decoded.mode == "RGB" and decoded.getpixel((0, 0)) == (200, 0, 0)
    assert requests.get(image["Location"].split("?")[0], timeout=10).status_code == 403


def test_a_resumable_upload_is_imported_by_a_worker_with_another_data_folder(
        s3: Any, ctx: dict[str, Any], settings: Any, tmp_path: Path) -> None:
    data = zip_of({"cats/a.png": images.png_bytes((1, 2, 3)),
                   "dogs/b.png": images.png_bytes((3, 2, 1))})
    upload = uploads.upload_create(owner=ctx["user"], length=len(data),
                                   metadata={"filename": "pets.zip"})
    upload_path(upload.pk).write_bytes(data)  # as the tus PATCHes leave it on the web host
    assert uploads.upload_record_progress(upload_id=upload.pk, offset=len(data))
    response = ctx["client"].post(ctx["imports"], {"upload_id": str(upload.pk)}, format="json")
    assert response.status_code == 202, response.json()
    assert not upload_path(upload.pk).exists()  # moved into the bucket
    upload.refresh_from_db()
    assert upload.status == UploadStatus.CONSUMED
    job = ImportJob.objects.get(pk=response.json()["id"])
    assert s3.keys(job.staging_dir + "/") == [f"{job.staging_dir}/archive-0000.zip"]
    web_data = Path(settings.DATA_DIR)
    as_another_host(settings, tmp_path)
    import_job_run(job_id=job.pk)
    job.refresh_from_db()
    assert job.status == "SUCCEEDED", job.error
    assert job.report["counts"]["imported"] == 2
    assert not web_data.exists() and s3.keys("staging/") == []
    assert len(s3.keys("samples/")) == 2
    # the worker's own scratch folder is left empty
    assert list((Path(settings.DATA_DIR) / "staging").iterdir()) == []


def test_a_training_job_reads_samples_through_its_cache_and_stores_artifacts_in_the_bucket(
        s3: Any, ctx: dict[str, Any], settings: Any, tmp_path: Path) -> None:
    from tests.platform.training.test_training_services import result_for, tiny_onnx

    dataset = dataset_create(project=ctx["project"], name="colours")
    for label, colour in (("red", (200, 0, 0)), ("blue", (0, 0, 200))):
        for i in range(5):
            data = images.png_bytes((colour[0], i, colour[2]))
            with Image.open(io.BytesIO(data)) as image:
                digest = f"{label}{i}".ljust(64, "0")
                name = store_normalised_image(image.convert("RGB"), digest)
            sample = Sample.objects.create(dataset=dataset, content_sha256=digest, file=name,
                                           original_name=f"{label}{i}.png", width=8, height=8)
            sample_label_set(sample=sample, label=label)
    version = dataset_version_create(dataset=dataset)
    job = training.training_job_create(project=ctx["project"], dataset_version=version,
                                       budget_s=60)
    as_another_host(settings, tmp_path)
    inputs = training.training_job_start(job_id=job.pk)
    assert inputs is not None
    cache = Path(settings.DATA_DIR) / "cache"
    paths = [Path(p) for p, _, _ in inputs.train + inputs.val + inputs.test]
    assert len(paths) == 10 and all(p.is_relative_to(cache) and p.is_file() for p in paths)
    # the engine writes its artifacts on the worker's disk
    out = Path(inputs.out_dir)
    assert out.is_relative_to(Path(settings.DATA_DIR))
    onnx_path = tiny_onnx(out / "model.onnx")
    (out / "checkpoint.pt").write_bytes(b"weights" * 1000)
    (out / "report.json").write_text(json.dumps({"accuracy": 1.0}))
    model_version = training.training_job_complete(job_id=job.pk, result={
        **result_for(onnx_path), "out_dir": str(out)})
    assert model_version is not None
    job.refresh_from_db()
    prefix = f"jobs/training/{job.pk}/attempt-{job.attempt}"
    assert s3.keys(prefix + "/") == [f"{prefix}/checkpoint.pt", f"{prefix}/model.onnx",
                                     f"{prefix}/report.json"]
    assert f"{model_version.package_dir}/model.onnx" in s3.keys("models/")
    assert TrainingJob.objects.get(pk=job.pk).status == "SUCCEEDED"


def test_a_sample_missing_from_the_bucket_fails_the_training_job_by_name(
        s3: Any, ctx: dict[str, Any]) -> None:
    dataset = dataset_create(project=ctx["project"], name="gone")
    for label in ("a", "b"):
        for i in range(5):
            sample = Sample.objects.create(
                dataset=dataset, content_sha256=f"{label}{i}".ljust(64, "0"),
                file=f"samples/{label}{i}.png", original_name="x", width=4, height=4)
            sample_label_set(sample=sample, label=label)
    job = training.training_job_create(project=ctx["project"],
                                       dataset_version=dataset_version_create(dataset=dataset),
                                       budget_s=60)
    assert training.training_job_start(job_id=job.pk) is None
    job.refresh_from_db()
    assert job.status == "FAILED" and "samples/a0.png is missing from storage" in job.error


@pytest.mark.parametrize(("override", "setting"), [
    ({"SAMPAN_S3_BUCKET": "sampan-not-there"}, "SAMPAN_S3_BUCKET"),
    ({"SAMPAN_S3_ACCESS_KEY_ID": "wrong-key"}, "SAMPAN_S3_ACCESS_KEY_ID"),
])
def test_a_missing_bucket_or_wrong_credentials_answer_json_naming_the_setting(
        s3: Any, ctx: dict[str, Any], settings: Any, override: dict[str, str],
        setting: str) -> None:
    s3.apply(settings, **override)
    response = ctx["client"].post(ctx["imports"], {"files": [
        SimpleUploadedFile("a.png", images.png_bytes())]}, format="multipart")
    assert response.status_code == 503
    error = response.json()["error"]
    assert error["code"] == "storage_unavailable" and error["field"] == setting
    assert setting in error["message"]
    with pytest.raises(storage.StorageUnavailable, match=setting):
        storage.check()
    assert ImportJob.objects.count() == 0


def test_the_storage_check_passes_on_a_usable_bucket_and_with_local_files(
        s3: Any, settings: Any) -> None:
    storage.check()
    settings.SAMPAN_STORAGE = "local"
    storage.check()
