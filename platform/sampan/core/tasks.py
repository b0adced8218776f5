from celery import shared_task

from sampan.core.services import jobs_reap_stale, jobs_requeue_lost


@shared_task(name="core.reap_stale_jobs")
def reap_stale_jobs() -> int:
    """Periodic (Celery beat): fail jobs whose worker stopped heartbeating, and send again the
    message of queued jobs that the broker lost."""
    return jobs_reap_stale() + jobs_requeue_lost()
