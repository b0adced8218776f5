from celery import shared_task

from sampan.datasets.services import import_job_run


@shared_task(name="datasets.run_import")
def run_import(import_job_id: str) -> None:
    """Import staged uploads into a dataset (idempotent; see ``import_job_run``)."""
    import_job_run(job_id=import_job_id)
