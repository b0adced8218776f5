"""Base models shared by every app: UUID primary keys, timestamps and the abstract job."""

from __future__ import annotations

import uuid
from typing import ClassVar

from django.db import models

from sampan.core.jobs import TERMINAL, JobStatus


class BaseModel(models.Model):
    """A row with a UUID primary key and creation/update times (aware UTC)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        abstract = True


class Job(BaseModel):
    """A background job (import, training, export, compression, evaluation).

    ``status`` only changes through ``sampan.core.jobs.job_transition``; ``progress`` is a JSON
    object written by the worker (at least ``fraction`` 0..1 and ``message`` when known);
    ``heartbeat_at`` is refreshed by a RUNNING worker and read by the reaper; ``queued_at``: when
    the job's message was last sent (``sampan.core.services.jobs_requeue_lost``).
    ``idempotency_key``: the client's ``Idempotency-Key`` of the request that created the job
    (empty: none); a second create with it answers this job (``sampan.core.idempotency``).
    """

    status = models.CharField(max_length=16, choices=JobStatus.choices, default=JobStatus.PENDING,
                              db_index=True)
    attempt = models.PositiveIntegerField(default=0)
    progress = models.JSONField(default=dict, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    #: when the job was last sent to the broker (QUEUED; a re-send after a lost message too)
    queued_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    error = models.TextField(blank=True, default="")
    idempotency_key = models.CharField(max_length=128, blank=True, default="", db_index=True)
    #: SHA-256 (hex) of the creating request's canonical JSON body (sampan.core.idempotency)
    idempotency_fingerprint = models.CharField(max_length=64, blank=True, default="")
    cancel_requested = models.BooleanField(default=False)

    #: the Celery task that runs a job of this kind (its one argument: the job's id) and its
    #: queue (the one settings.CELERY_TASK_ROUTES gives it; None: the default queue); the
    #: reaper re-sends a lost message with them and looks for it in that queue
    task_name: ClassVar[str] = ""
    task_queue: ClassVar[str | None] = None

    class Meta:
        abstract = True

    @property
    def is_terminal(self) -> bool:
        return self.status in TERMINAL
