"""The job state machine shared by every background job (docs/architecture.md, "Jobs: one
state machine").

States: PENDING -> QUEUED -> RUNNING -> SUCCEEDED | FAILED | CANCELLED. The allowed transitions are
data (``TRANSITIONS``); every change is a compare-and-set ``UPDATE ... WHERE status IN (...)`` so a
task delivered twice loses the race and returns at once instead of running twice (Mender's
transition table; NetBox's TERMINAL_STATE_CHOICES).
"""

from __future__ import annotations

from typing import Any

from django.db import models
from django.utils import timezone


class JobStatus(models.TextChoices):
    PENDING = "PENDING"
    QUEUED = "QUEUED"
    RUNNING = "RUNNING"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"


TERMINAL = frozenset({JobStatus.SUCCEEDED, JobStatus.FAILED, JobStatus.CANCELLED})

# target state -> the states it may be entered from
TRANSITIONS: dict[str, frozenset[str]] = {
    JobStatus.QUEUED: frozenset({JobStatus.PENDING}),
    JobStatus.RUNNING: frozenset({JobStatus.QUEUED}),
    JobStatus.SUCCEEDED: frozenset({JobStatus.RUNNING}),
    JobStatus.FAILED: frozenset({JobStatus.PENDING, JobStatus.QUEUED, JobStatus.RUNNING}),
    JobStatus.CANCELLED: frozenset({JobStatus.PENDING, JobStatus.QUEUED, JobStatus.RUNNING}),
}


def job_transition(model: type[models.Model], pk: Any, to: str, **fields: Any) -> bool:
    """Move job ``pk`` of ``model`` to state ``to`` if its current state allows it.

    Returns True when this call made the transition, False when the job was in a state that does
    not allow it (already taken by another delivery, cancelled, or finished). Timestamps are set
    here: ``queued_at`` on QUEUED, ``started_at`` and ``heartbeat_at`` on RUNNING,
    ``finished_at`` on a terminal state.
    """
    allowed = TRANSITIONS[to]
    now = timezone.now()
    values: dict[str, Any] = {"status": to, **fields}
    if to == JobStatus.QUEUED:
        values.setdefault("queued_at", now)
    if to == JobStatus.RUNNING:
        values.setdefault("started_at", now)
        values.setdefault("heartbeat_at", now)
        values["attempt"] = models.F("attempt") + 1
    if to in TERMINAL:
        values.setdefault("finished_at", now)
    return bool(model.objects.filter(pk=pk, status__in=allowed).update(**values))


def job_heartbeat(model: type[models.Model], pk: Any,
                  progress: dict[str, Any] | None = None) -> bool:
    """Record that a RUNNING job is alive (and its progress). False if it is no longer RUNNING."""
    values: dict[str, Any] = {"heartbeat_at": timezone.now()}
    if progress is not None:
        values["progress"] = progress
    return bool(model.objects.filter(pk=pk, status=JobStatus.RUNNING).update(**values))
