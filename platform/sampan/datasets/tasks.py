from celery import shared_task

from sampan.datasets.prelabel import prelabel_job_run
from sampan.datasets.imports import import_job_run


@shared_task(name="datasets.run_import")
def run_import(import_job_id: str) -> None:
    """Import staged uploads into a dataset (idempotent; see ``import_job_run``)."""
    import_job_run(job_id=import_job_id)


@shared_task(name="datasets.run_prelabel")
def run_prelabel(prelabel_job_id: str) -> None:
    """Pre-label a dataset's unlabeled samples with a model version (idempotent; see
    ``prelabel_job_run``). Routed to the ``imports`` queue with every ``datasets.*`` task."""
    prelabel_job_run(job_id=prelabel_job_id)
