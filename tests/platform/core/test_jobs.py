"""The job state machine, enqueue-after-commit and the reaper."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.db import transaction
from django.utils import timezone

from sampan.core.jobs import JobStatus, job_transition
from sampan.core.services import jobs_reap_stale
from sampan.datasets.models import ImportJob
from sampan.datasets.services import dataset_create


@pytest.fixture
def job(project_with_roles: dict[str, Any]) -> ImportJob:
    dataset = dataset_create(project=project_with_roles["project"], name="d")
    return ImportJob.objects.create(project=dataset.project, dataset=dataset, staging_dir="/none")


@pytest.mark.django_db
def test_transitions_are_compare_and_set(job: ImportJob) -> None:
    assert job_transition(ImportJob, job.pk, JobStatus.QUEUED)
    assert job_transition(ImportJob, job.pk, JobStatus.RUNNING)
    assert not job_transition(ImportJob, job.pk, JobStatus.RUNNING)  # a second delivery loses
    assert job_transition(ImportJob, job.pk, JobStatus.SUCCEEDED)
    assert not job_transition(ImportJob, job.pk, JobStatus.FAILED)  # terminal stays terminal
    job.refresh_from_db()
    assert (job.status, job.attempt) == (JobStatus.SUCCEEDED, 1)
    assert job.finished_at is not None and job.started_at is not None


@pytest.mark.django_db
def test_stale_running_job_is_failed_as_worker_lost(job: ImportJob) -> None:
    job_transition(ImportJob, job.pk, JobStatus.QUEUED)
    job_transition(ImportJob, job.pk, JobStatus.RUNNING)
    assert jobs_reap_stale(timeout_s=30) == 0
    ImportJob.objects.filter(pk=job.pk).update(heartbeat_at=timezone.now() - timedelta(seconds=31))
    assert jobs_reap_stale(timeout_s=30) == 1
    job.refresh_from_db()
    assert job.status == JobStatus.FAILED and job.error.startswith("worker lost")


@pytest.mark.django_db(transaction=True)
def test_task_enqueued_in_a_rolled_back_transaction_is_never_sent(
        monkeypatch: pytest.MonkeyPatch, project_with_roles: dict[str, Any]) -> None:
    from sampan.celery import app
    from sampan.core.enqueue import enqueue_on_commit

    sent: list[str] = []
    monkeypatch.setattr(app, "send_task", lambda name, **kw: sent.append(name))
    with pytest.raises(RuntimeError):
        with transaction.atomic():
            enqueue_on_commit("datasets.run_import", "x")
            raise RuntimeError("roll back")
    assert sent == []
    with transaction.atomic():
        enqueue_on_commit("datasets.run_import", "y")
    assert sent == ["datasets.run_import"]


def _queued_since(job: ImportJob, seconds: float) -> None:
    assert job_transition(ImportJob, job.pk, JobStatus.QUEUED)
    ImportJob.objects.filter(pk=job.pk).update(
        queued_at=timezone.now() - timedelta(seconds=seconds))


@pytest.mark.django_db
def test_a_queued_job_whose_message_is_lost_is_sent_again_once(
        job: ImportJob, django_capture_on_commit_callbacks: Any) -> None:
    """QUEUED longer than the wait and absent from the broker: its task is sent again, its
    progress says why, and its wait starts over (no second send at the next round)."""
    from sampan.core.services import jobs_requeue_lost

    _queued_since(job, 200)
    asked: list[str] = []

    def held(queue: str) -> set[str]:
        asked.append(queue)
        return {"some-other-job"}

    with django_capture_on_commit_callbacks() as sends:
        assert jobs_requeue_lost(after_s=120, held=held) == 1
        assert jobs_requeue_lost(after_s=120, held=held) == 0
    assert len(sends) == 1 and asked == ["imports"]
    job.refresh_from_db()
    assert job.status == JobStatus.QUEUED
    assert job.progress["message"] == ("sent again to the imports queue after 120 s: the "
                                       "broker no longer held its message")
    assert timezone.now() - job.queued_at < timedelta(seconds=5)


@pytest.mark.django_db
def test_a_job_the_broker_holds_or_that_waited_briefly_is_left_alone(
        job: ImportJob, django_capture_on_commit_callbacks: Any) -> None:
    from sampan.core.services import jobs_requeue_lost

    _queued_since(job, 200)
    with django_capture_on_commit_callbacks() as sends:
        assert jobs_requeue_lost(after_s=120, held=lambda queue: {str(job.pk)}) == 0
        ImportJob.objects.filter(pk=job.pk).update(queued_at=timezone.now())
        assert jobs_requeue_lost(after_s=120, held=lambda queue: set()) == 0
        job_transition(ImportJob, job.pk, JobStatus.RUNNING)
        ImportJob.objects.filter(pk=job.pk).update(
            queued_at=timezone.now() - timedelta(seconds=200))
        assert jobs_requeue_lost(after_s=120, held=lambda queue: set()) == 0
    assert sends == []


@pytest.mark.django_db
def test_an_unreadable_broker_or_a_job_from_before_queued_at_is_sent_again(
        job: ImportJob, django_capture_on_commit_callbacks: Any) -> None:
    from sampan.core.services import jobs_requeue_lost

    assert job_transition(ImportJob, job.pk, JobStatus.QUEUED)
    ImportJob.objects.filter(pk=job.pk).update(
        queued_at=None, created_at=timezone.now() - timedelta(seconds=200))
    with django_capture_on_commit_callbacks() as sends:
        assert jobs_requeue_lost(after_s=120, held=lambda queue: None) == 1
    assert len(sends) == 1
    job.refresh_from_db()
    assert job.progress["message"].endswith("the broker's queue could not be read")
