"""Reads for compression jobs, scoped to a project."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from django.utils.translation import gettext as _

from sampan.accounts.models import Project
from sampan.compression.models import CompressionJob
from sampan.core.errors import NotFound


def compression_job_list(*, project: Project, source_id: Any = None
                         ) -> QuerySet[CompressionJob]:
    jobs = CompressionJob.objects.filter(project=project).select_related(
        "source__model", "model_version__model")
    if source_id is not None:
        jobs = jobs.filter(source_id=source_id)
    return jobs.order_by("-created_at")


def compression_job_get(*, project: Project, job_id: Any) -> CompressionJob:
    job = compression_job_list(project=project).filter(pk=job_id).first()
    if job is None:
        raise NotFound(_("compression job not found"))
    return job


def compression_job_candidates(*, job_id: Any) -> list[dict[str, Any]]:
    """The job's candidates as stored (the worker's and the device's figures merged)."""
    row = CompressionJob.objects.filter(pk=job_id).values_list("candidates", flat=True).first()
    return list(row or [])
