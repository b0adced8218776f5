"""Reads for the registry, scoped to a project."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.db.models import Count, QuerySet

from sampan.accounts.models import Project
from sampan.core.errors import NotFound
from sampan.registry.models import ModelVersion, RegisteredModel


def model_list(*, project: Project) -> QuerySet[RegisteredModel]:
    return project.models.annotate(version_count=Count("versions")).order_by("created_at")


def model_get(*, project: Project, model_id: Any) -> RegisteredModel:
    found = model_list(project=project).filter(pk=model_id).first()
    if found is None:
        raise NotFound("model not found")
    return found


def model_version_list(*, project: Project, model: RegisteredModel | None = None
                       ) -> QuerySet[ModelVersion]:
    queryset = ModelVersion.objects.filter(project=project).select_related(
        "model", "dataset_version__dataset")
    if model is not None:
        queryset = queryset.filter(model=model)
    return queryset.order_by("model__name", "-version")


def model_version_get(*, project: Project, version_id: Any) -> ModelVersion:
    found = ModelVersion.objects.select_related("model", "dataset_version__dataset").filter(
        pk=version_id, project=project).first()
    if found is None:
        raise NotFound("model version not found")
    return found


def model_version_file(version: ModelVersion, name: str) -> Path:
    """Absolute path of ``model.onnx`` or ``manifest.json`` of a version's package."""
    if name not in {"model.onnx", "manifest.json"}:
        raise NotFound(f"no file {name!r} in a model package")
    path = Path(settings.MEDIA_ROOT) / version.package_dir / name
    if not path.exists():
        raise NotFound(f"{name} of {version.label} is missing from storage")
    return path
