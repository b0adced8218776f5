from celery import shared_task

from sampan.uploads.services import uploads_delete_expired


@shared_task(name="uploads.delete_expired")
def delete_expired() -> int:
    """Periodic (Celery beat): delete resumable uploads past their expiry, files and rows."""
    return uploads_delete_expired()
