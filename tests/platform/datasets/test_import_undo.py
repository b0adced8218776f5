"""An import that does not finish leaves no half dataset: failed on an unexpected error,
cancelled, or reaped as "worker lost", the samples it had added are taken back (with their
files), except those a dataset version froze meanwhile."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from sampan.core.jobs import JobStatus
from sampan.core.services import jobs_reap_stale
from sampan.datasets import imports
from sampan.datasets.models import ImportJob, Sample
from sampan.datasets.storage import sample_local_file
from tests.fixtures import images
from tests.platform.datasets.test_imports import ctx, make_zip, upload  # noqa: F401 - fixture

pytestmark = pytest.mark.django_db


def ten_cats() -> bytes:
    return make_zip({f"cat/{i}.png": images.png_bytes((i * 20, 90, 30)) for i in range(10)})


def failing_after(monkeypatch: pytest.MonkeyPatch, count: int, error: BaseException) -> None:
    """The importer raises ``error`` on the file after ``count`` files were imported."""
    real = imports._import_one
    seen = [0]

    def one(*args: Any, **kwargs: Any) -> Any:
        seen[0] += 1
        if seen[0] > count:
            raise error
        return real(*args, **kwargs)

    monkeypatch.setattr(imports, "_import_one", one)


def test_an_unexpected_error_half_way_takes_back_what_was_imported(
        ctx: dict[str, Any], monkeypatch: pytest.MonkeyPatch,  # noqa: F811
        django_capture_on_commit_callbacks: Any) -> None:
    response = upload(ctx, "d.zip", ten_cats())
    failing_after(monkeypatch, 4, RuntimeError("disk on fire"))
    with pytest.raises(RuntimeError), django_capture_on_commit_callbacks(execute=True):
        imports.import_job_run(job_id=response.json()["id"])
    job = ImportJob.objects.get(pk=response.json()["id"])
    assert job.status == JobStatus.FAILED
    assert job.error == ("import failed: disk on fire; the 4 file(s) it had imported were "
                         "removed")
    assert job.report["undone"] == {"removed": 4, "kept_in_versions": 0}
    assert not Sample.objects.filter(dataset_id=ctx["dataset"]["id"]).exists()
    listed = ctx["client"].get(f"{ctx['base']}/datasets/{ctx['dataset']['id']}/").json()
    assert listed["sample_count"] == 0 and listed.get("class_count", 0) == 0


def test_files_are_removed_unless_another_dataset_holds_the_same_image(
        ctx: dict[str, Any], monkeypatch: pytest.MonkeyPatch,  # noqa: F811
        django_capture_on_commit_callbacks: Any) -> None:
    other = ctx["client"].post(f"{ctx['base']}/datasets/", {"name": "other"},
                               format="json").json()
    shared = images.png_bytes((0, 90, 30))  # the first cat, also in "other"
    first = ctx["client"].post(f"{ctx['base']}/datasets/{other['id']}/imports/",
                               {"files": [SimpleUploadedFile("a.png", shared)], "label": "cat"},
                               format="multipart")
    imports.import_job_run(job_id=first.json()["id"])
    kept = Sample.objects.get(dataset_id=other["id"])
    response = upload(ctx, "d.zip", ten_cats())
    failing_after(monkeypatch, 3, RuntimeError("boom"))
    with pytest.raises(RuntimeError), django_capture_on_commit_callbacks(execute=True):
        imports.import_job_run(job_id=response.json()["id"])
    removed = list(Sample.objects.filter(import_job_id=response.json()["id"]))
    assert removed == []
    assert ImportJob.objects.get(pk=response.json()["id"]).report["undone"]["removed"] == 3
    assert sample_local_file(kept.file).exists()  # shared with the other dataset's sample
    assert Sample.objects.filter(dataset_id=other["id"]).count() == 1


def test_a_cancel_half_way_takes_back_what_was_imported(
        ctx: dict[str, Any], monkeypatch: pytest.MonkeyPatch,  # noqa: F811
        django_capture_on_commit_callbacks: Any) -> None:
    response = upload(ctx, "d.zip", ten_cats())
    job_id = response.json()["id"]
    real = imports._import_one
    files: list[Any] = []

    def one(job: Any, staged: Any, *args: Any) -> Any:
        outcome = real(job, staged, *args)
        files.append(Sample.objects.filter(import_job_id=job_id).last())
        if len(files) == 6:  # the person presses Cancel
            ImportJob.objects.filter(pk=job_id).update(status=JobStatus.CANCELLED)
        return outcome

    monkeypatch.setattr(imports, "_import_one", one)
    with django_capture_on_commit_callbacks(execute=True):
        imports.import_job_run(job_id=job_id)  # reports every 25 files, the last, or 5 s
    assert ImportJob.objects.get(pk=job_id).status == JobStatus.CANCELLED
    assert not Sample.objects.filter(dataset_id=ctx["dataset"]["id"]).exists()
    assert files and not any(sample_local_file(s.file).exists() for s in files if s is not None)


def test_the_reaper_takes_back_a_lost_workers_samples_but_not_a_frozen_versions(
        ctx: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    """The worker died after 5 files (its job stays RUNNING with an old heartbeat); meanwhile
    someone froze a version that holds them: those stay, the rest goes."""
    from datetime import timedelta

    from django.utils import timezone

    from sampan.datasets.models import DatasetVersion, DatasetVersionItem

    response = upload(ctx, "d.zip", ten_cats())
    job_id = response.json()["id"]
    failing_after(monkeypatch, 5, SystemExit("killed"))  # not an Exception: no cleanup ran
    with pytest.raises(SystemExit):
        imports.import_job_run(job_id=job_id)
    assert ImportJob.objects.get(pk=job_id).status == JobStatus.RUNNING
    added = list(Sample.objects.filter(import_job_id=job_id).order_by("original_name"))
    assert len(added) == 5
    dataset = added[0].dataset
    held = DatasetVersion.objects.create(project=dataset.project, dataset=dataset, number=1,
                                         task_type=dataset.task_type, labels=["cat"],
                                         split_fractions={"val": 0.0, "test": 0.0},
                                         digest="sha256:" + "0" * 64)
    for sample in added[:2]:
        DatasetVersionItem.objects.create(version=held, sample=sample, split="train",
                                          class_index=0)
    ImportJob.objects.filter(pk=job_id).update(
        heartbeat_at=timezone.now() - timedelta(hours=1))
    assert jobs_reap_stale(timeout_s=60) == 1
    assert ImportJob.objects.get(pk=job_id).status == JobStatus.FAILED
    assert sorted(Sample.objects.filter(dataset=dataset).values_list("pk", flat=True)) == \
        sorted(sample.pk for sample in added[:2])
    assert ImportJob.objects.get(pk=job_id).status == JobStatus.FAILED
