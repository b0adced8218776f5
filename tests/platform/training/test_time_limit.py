"""A training job's hard time limit: an engine that runs past it has its job failed with the
reason, and one that hangs (never looks at ``should_stop``) has its worker process ended, so a
job can never stay RUNNING behind a heartbeat thread that keeps beating."""

from __future__ import annotations

import time
from typing import Any

import pytest

from sampan.core.jobs import JobStatus
from sampan.devstack.stack import wait_until
from sampan.training import services
from sampan.training.models import TrainingJob
from tests.platform.training.test_training_services import labelled_version
from workers.tasks import heartbeat
from workers.tasks import training as task


def test_the_limit_is_half_the_budget_again_plus_two_minutes() -> None:
    assert heartbeat.time_limit_s(600) == 1020 and heartbeat.time_limit_s(30) == 165


@pytest.fixture
def fast_limits(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[Any]]:
    """Heartbeats every 50 ms, a 0.4 s limit, 0.4 s more before the kill, which is recorded
    (the real one is SIGKILL to the worker process); the task runs here, not through a broker
    (the whole-system tests send real messages)."""
    from sampan.celery import app

    calls: dict[str, list[Any]] = {"kill": [], "sent": []}
    monkeypatch.setattr(app, "send_task", lambda name, **kw: calls["sent"].append(name))
    monkeypatch.setattr(heartbeat, "HEARTBEAT_INTERVAL_S", 0.05)
    monkeypatch.setattr(heartbeat, "KILL_AFTER_S", 0.4)
    monkeypatch.setattr(heartbeat, "_kill_this_process", lambda: calls["kill"].append(1))
    monkeypatch.setattr(task, "time_limit_s", lambda budget_s: 0.4)
    return calls


def _engine(seconds: float, *, checks: bool) -> Any:
    """A stand-in for the engine that works ``seconds``; with ``checks`` it looks at
    ``should_stop`` every 20 ms as the real engines do, without it it hangs."""
    from workers.ml.specs import TrainingCancelled

    def run(request: Any, *, on_progress: Any, should_stop: Any) -> Any:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            if checks and should_stop():
                raise TrainingCancelled("stopped")
            time.sleep(0.02)
        raise TrainingCancelled("stopped late")  # never registers a model either way
    return run


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("checks, killed", [(True, False), (False, True)])
def test_an_engine_past_its_limit_fails_the_job_and_a_hung_one_ends_the_worker(
        project_with_roles: dict[str, Any], fast_limits: dict[str, list[Any]],
        monkeypatch: pytest.MonkeyPatch, checks: bool, killed: bool) -> None:
    version = labelled_version(project_with_roles["project"], {"a": 5, "b": 5})
    job = services.training_job_create(project=project_with_roles["project"],
                                       dataset_version=version, budget_s=30)
    monkeypatch.setattr(task, "train_image_classifier", _engine(1.5, checks=checks))
    began = time.monotonic()
    task.run_training(str(job.pk))
    job.refresh_from_db()
    assert job.status == JobStatus.FAILED
    assert job.error.startswith("time limit exceeded: still training 0 s after the start "
                                "(budget 30 s"), job.error
    assert job.model_version_id is None
    # an engine that checks stops at once; a hung one is killed 0.4 s after the limit
    assert (len(fast_limits["kill"]) == 1) is killed
    if checks:
        assert time.monotonic() - began < 1.2


@pytest.mark.django_db(transaction=True)
def test_a_job_within_its_limit_keeps_beating(project_with_roles: dict[str, Any],
                                              fast_limits: dict[str, list[Any]]) -> None:
    version = labelled_version(project_with_roles["project"], {"a": 5, "b": 5})
    job = services.training_job_create(project=project_with_roles["project"],
                                       dataset_version=version, budget_s=30)
    assert services.training_job_start(job_id=job.pk) is not None
    alive = {"value": True}
    before = TrainingJob.objects.get(pk=job.pk).heartbeat_at
    with heartbeat.heartbeating(str(job.pk), alive, services.training_job_heartbeat,
                                limit_s=5.0, expire=lambda job_id: None):
        wait_until(lambda: TrainingJob.objects.get(pk=job.pk).heartbeat_at > before,
                   timeout_s=5, interval_s=0.02, what="a heartbeat")
    job.refresh_from_db()
    assert alive["value"] and job.status == JobStatus.RUNNING and job.heartbeat_at > before
    assert fast_limits["kill"] == []


@pytest.mark.django_db(transaction=True)
def test_an_error_while_registering_fails_the_job_with_that_error(
        project_with_roles: dict[str, Any], fast_limits: dict[str, list[Any]],
        monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    """Issue 12: an exception while the trained model is stored or registered (the bucket, the
    database) marks the job FAILED with that error, at once; before, it escaped the task and
    the job was reaped much later as "worker lost"."""
    from types import SimpleNamespace

    version = labelled_version(project_with_roles["project"], {"a": 5, "b": 5})
    job = services.training_job_create(project=project_with_roles["project"],
                                       dataset_version=version, budget_s=30)
    monkeypatch.setattr(task, "time_limit_s", lambda budget_s: 60.0)
    trained = SimpleNamespace(onnx_path=tmp_path / "m.onnx", preprocessing={}, pretrained=False,
                              weights_note="", metrics={}, history=[], report={}, parity={},
                              recipe={})
    monkeypatch.setattr(task, "train_image_classifier", lambda request, **_: trained)
    monkeypatch.setattr(task, "onnx_info", lambda path: {})

    def unreachable(**_: Any) -> None:
        raise ConnectionError("the bucket did not answer")

    monkeypatch.setattr(task.services, "training_job_complete", unreachable)
    task.run_training(str(job.pk))
    job.refresh_from_db()
    assert job.status == JobStatus.FAILED
    assert job.error == "storing the trained model failed: the bucket did not answer"
    assert job.model_version_id is None
