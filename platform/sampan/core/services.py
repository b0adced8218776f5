"""Writes shared by every job: progress publishing and reaping jobs whose worker is gone."""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from asgiref.sync import async_to_sync
from django.apps import apps
from django.conf import settings
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext as _

from sampan.core.errors import QuotaExceeded
from sampan.core.language import phrase
from sampan.core.jobs import JobStatus, job_heartbeat, job_transition
from sampan.core.models import Job
from sampan.core.stored_text import WORKER_LOST

log = logging.getLogger(__name__)

_last_publish: dict[str, float] = {}


def job_group_name(job_model: type[Job], pk: Any) -> str:
    """The Channels group that carries a job's progress: ``job.<app>_<model>.<uuid hex>``."""
    # workers pass ids as strings, models hold UUIDs: both must name the same group
    return f"job.{job_model._meta.label_lower.replace('.', '_')}.{uuid.UUID(str(pk)).hex}"


def job_publish(job_model: type[Job], pk: Any, event: dict[str, Any], *, force: bool = False,
                min_interval_s: float = 0.5) -> None:
    """Push ``event`` to the job's Channels group, at most every ``min_interval_s`` unless forced.

    A browser that reconnects reads the current state from the database, so dropping a throttled
    event loses nothing.
    """
    key = f"{job_model._meta.label_lower}:{pk}"
    now = time.monotonic()
    if not force and now - _last_publish.get(key, 0.0) < min_interval_s:
        return
    _last_publish[key] = now
    try:
        from channels.layers import get_channel_layer

        layer = get_channel_layer()
        if layer is None:
            return
        async_to_sync(layer.group_send)(job_group_name(job_model, pk),
                                        {"type": "job.event", "event": event})
    except Exception:  # a dead channel layer must never fail a job
        log.warning("could not publish progress for %s", key, exc_info=True)


def job_report_progress(job_model: type[Job], pk: Any, progress: dict[str, Any]) -> bool:
    """Write progress + heartbeat to the database and publish it. False when no longer RUNNING
    (cancelled or reaped): the caller should stop."""
    alive = job_heartbeat(job_model, pk, progress)
    if alive:  # a cancelled or reaped job's socket must not hear "RUNNING" after its end
        job_publish(job_model, pk, {"status": JobStatus.RUNNING, "progress": progress})
    return alive


def job_queue_quota_check(model: type[Job], project: Any, *, kind: str) -> None:
    """Refuse a new job of ``model`` when ``project`` already has
    ``settings.SAMPAN_MAX_QUEUED_JOBS_PER_PROJECT`` of them waiting (PENDING or QUEUED).

    Call inside the transaction that creates the job: the project's row is locked first, so two
    concurrent creates count one after the other. Raises QuotaExceeded (429) naming the limit
    and what frees a place."""
    from sampan.accounts.models import Project

    limit = settings.SAMPAN_MAX_QUEUED_JOBS_PER_PROJECT
    # FOR NO KEY UPDATE: serialises the quota checks, yet leaves the KEY SHARE locks that rows
    # pointing at the project take (a deployment, a model version) free: FOR UPDATE deadlocked
    # with a deployment holding its device (review)
    list(Project.objects.select_for_update(no_key=True).filter(pk=project.pk)
         .values_list("pk", flat=True))
    waiting = model.objects.filter(project=project,
                                   status__in=(JobStatus.PENDING, JobStatus.QUEUED)).count()
    if waiting >= limit:
        values = {"count": waiting, "kind": phrase(kind), "limit": limit}
        # the plural is English's "s" (a kind from idempotency.KINDS); Chinese has one form
        message = (_("this project already has %(count)d %(kind)s waiting in the queue, the most "
                     "it may have (SAMPAN_MAX_QUEUED_JOBS_PER_PROJECT = %(limit)d): wait until "
                     "one starts, or cancel one") if waiting == 1 else
                   _("this project already has %(count)d %(kind)ss waiting in the queue, the "
                     "most it may have (SAMPAN_MAX_QUEUED_JOBS_PER_PROJECT = %(limit)d): wait "
                     "until one starts, or cancel one"))
        raise QuotaExceeded(message % values, details={"limit": limit})


def job_models() -> list[type[Job]]:
    """Every concrete model that inherits the abstract job."""
    return [m for m in apps.get_models() if issubclass(m, Job) and not m._meta.abstract]


def jobs_reap_stale(*, timeout_s: float | None = None) -> int:
    """Fail RUNNING jobs whose heartbeat is older than ``timeout_s`` with "worker lost".

    Returns the number of jobs failed. Compare-and-set: a job that heartbeats meanwhile is kept.
    """
    seconds = settings.SAMPAN_JOB_HEARTBEAT_TIMEOUT_S if timeout_s is None else timeout_s
    cutoff = timezone.now() - timedelta(seconds=seconds)
    reaped = 0
    for model in job_models():
        for pk in model.objects.filter(status=JobStatus.RUNNING, heartbeat_at__lt=cutoff
                                       ).values_list("pk", flat=True):
            updated = model.objects.filter(pk=pk, status=JobStatus.RUNNING,
                                           heartbeat_at__lt=cutoff).update(
                status=JobStatus.FAILED, finished_at=timezone.now(),
                error=WORKER_LOST % {"seconds": seconds})
            if updated:
                reaped += 1
                log.warning("reaped %s %s: worker lost", model.__name__, pk)
                job_publish(model, pk, {"status": JobStatus.FAILED, "error": "worker lost"},
                            force=True)
                # a job kind that leaves work half-done takes it back (imports: their samples)
                after_reaped = getattr(model, "after_reaped", None)
                if after_reaped is not None:
                    after_reaped(pk)
    return reaped


REQUEUED = "sent again to the {queue} queue after {seconds:.0f} s: {why}"
LOST = "the broker no longer held its message"
UNKNOWN = "the broker's queue could not be read"


def jobs_requeue_lost(*, after_s: float | None = None,
                      held: Callable[[str], set[str] | None] | None = None) -> int:
    """Send again the message of every QUEUED job that has waited ``after_s`` seconds
    (``settings.SAMPAN_JOB_REQUEUE_AFTER_S``) and that the broker no longer holds.

    A job stays QUEUED forever when its message is lost (the web process stopped between the
    commit and the send, the broker lost its data). ``held(queue)``: the job ids the broker
    holds for a queue (default :func:`sampan.core.enqueue.broker_job_ids`); when it cannot tell
    (None), the message is sent again anyway: a job's task starts it with a compare-and-set
    (QUEUED -> RUNNING), so a second message for a job that already ran returns at once. Each
    re-send restarts the job's wait (``queued_at``) and says so in its progress. Returns the
    number of messages sent."""
    from sampan.core.enqueue import broker_job_ids, enqueue_on_commit

    seconds = settings.SAMPAN_JOB_REQUEUE_AFTER_S if after_s is None else after_s
    held = broker_job_ids if held is None else held
    now = timezone.now()
    cutoff = now - timedelta(seconds=seconds)
    waited = Q(queued_at__lt=cutoff) | Q(queued_at__isnull=True, created_at__lt=cutoff)
    sent = 0
    for model in job_models():
        if not model.task_name:
            continue
        stale = [str(pk) for pk in model.objects.filter(waited, status=JobStatus.QUEUED)
                 .order_by("created_at").values_list("pk", flat=True)[:500]]
        if not stale:
            continue
        queue = model.task_queue or settings.CELERY_TASK_DEFAULT_QUEUE
        holding = held(queue)
        for pk in stale:
            if holding is not None and pk in holding:
                continue
            message = REQUEUED.format(queue=queue, seconds=seconds,
                                      why=UNKNOWN if holding is None else LOST)
            if model.objects.filter(waited, pk=pk, status=JobStatus.QUEUED).update(
                    queued_at=now, progress={"message": message}):
                enqueue_on_commit(model.task_name, pk, queue=model.task_queue)
                sent += 1
                log.warning("re-sent %s %s: %s", model.__name__, pk, message)
    return sent


__all__ = ["job_transition", "job_heartbeat", "job_publish", "job_report_progress",
           "jobs_reap_stale", "job_models", "job_group_name", "job_queue_quota_check",
           "jobs_requeue_lost"]
