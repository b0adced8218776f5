"""Reads for training, scoped to a project."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from django.utils.translation import gettext as _

from sampan.accounts.models import Project
from sampan.core.errors import NotFound
from sampan.training.models import EvaluationReport, TrainingJob


def training_job_list(*, project: Project) -> QuerySet[TrainingJob]:
    return (TrainingJob.objects.filter(project=project).select_related("dataset_version__dataset")
            .order_by("-created_at"))


def training_job_get(*, project: Project, job_id: Any) -> TrainingJob:
    job = training_job_list(project=project).filter(pk=job_id).first()
    if job is None:
        raise NotFound(_("training job not found"))
    return job


def evaluation_report_get(*, job: TrainingJob) -> EvaluationReport:
    report = EvaluationReport.objects.filter(training_job=job).first()
    if report is None:
        raise NotFound(_("this job has no evaluation report yet"))
    return report
