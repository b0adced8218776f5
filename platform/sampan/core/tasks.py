from celery import shared_task

from sampan.core.services import jobs_reap_stale


@shared_task(name="core.reap_stale_jobs")
def reap_stale_jobs() -> int:
    """Periodic (Celery beat): fail jobs whose worker stopped heartbeating."""
    return jobs_reap_stale()
