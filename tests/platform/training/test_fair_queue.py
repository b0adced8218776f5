"""The training queue takes turns between projects: one project's queued jobs do not starve
another project's job that was queued after them."""

from __future__ import annotations

from typing import Any

import pytest

from sampan.core.jobs import JobStatus
from sampan.training import services
from sampan.training.models import TrainingJob
from tests.platform.training.test_training_services import labelled_version
from workers.tasks import training as task

pytestmark = pytest.mark.django_db


def _worker(queue: list[tuple[str, int]], monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """One training worker taking the queue's messages in order (a message put back goes to
    the end, as with the broker); the engine stops at once (the job stays RUNNING: served).
    Returns the job ids in the order they started."""
    from sampan.celery import app
    from workers.ml.specs import TrainingCancelled

    def send_task(name: str, args: list[Any], kwargs: dict[str, Any] | None = None,
                  **options: Any) -> None:
        assert name == "training.run" and options.get("queue") == "training"
        queue.append((args[0], (kwargs or {}).get("deferrals", 0)))

    def engine(*args: Any, **kwargs: Any) -> Any:
        raise TrainingCancelled("a stand-in engine")

    monkeypatch.setattr(app, "send_task", send_task)
    monkeypatch.setattr(task, "train_image_classifier", engine)
    while queue:
        job_id, deferrals = queue.pop(0)
        task.run_training(job_id, deferrals)
    return [str(pk) for pk in TrainingJob.objects.filter(started_at__isnull=False)
            .order_by("started_at").values_list("pk", flat=True)]


def test_a_project_queued_after_another_gets_the_next_turn(
        project_with_roles: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    a, b = project_with_roles["project"], project_with_roles["other"]
    version_a = labelled_version(a, {"x": 5, "y": 5})
    version_b = labelled_version(b, {"x": 5, "y": 5}, name="b")
    jobs_a = [str(services.training_job_create(project=a, dataset_version=version_a,
                                               budget_s=30).pk) for _ in range(3)]
    job_b = str(services.training_job_create(project=b, dataset_version=version_b,
                                             budget_s=30).pk)
    assert services.training_job_fair_next() == jobs_a[0]  # nobody served yet: the oldest
    started = _worker([(pk, 0) for pk in [*jobs_a, job_b]], monkeypatch)
    # FIFO would have run A, A, A, then B
    assert started == [jobs_a[0], job_b, jobs_a[1], jobs_a[2]]
    assert TrainingJob.objects.filter(status=JobStatus.QUEUED).count() == 0


def test_a_job_whose_fairer_rival_never_comes_runs_after_its_deferrals(
        project_with_roles: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    """The fairer job's message is lost (the reaper re-sends it later): the other job is put
    back MAX_DEFERRALS times, then runs: no worker spins on it."""
    a, b = project_with_roles["project"], project_with_roles["other"]
    version_a = labelled_version(a, {"x": 5, "y": 5})
    version_b = labelled_version(b, {"x": 5, "y": 5}, name="b")
    first = str(services.training_job_create(project=a, dataset_version=version_a,
                                             budget_s=30).pk)
    second = str(services.training_job_create(project=a, dataset_version=version_a,
                                              budget_s=30).pk)
    lost = str(services.training_job_create(project=b, dataset_version=version_b,
                                            budget_s=30).pk)
    started = _worker([(first, 0), (second, 0)], monkeypatch)  # b's message never arrives
    assert started == [first, second]
    assert TrainingJob.objects.get(pk=lost).status == JobStatus.QUEUED
