"""Reads for the registry, scoped to a project."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.db.models import Count, QuerySet
from django.utils.translation import gettext as _

from sampan.accounts.models import Project
from sampan.core import storage
from sampan.core.errors import NotFound
from sampan.registry.models import ModelVersion, RegisteredModel


def model_list(*, project: Project) -> QuerySet[RegisteredModel]:
    return project.models.annotate(version_count=Count("versions")).order_by("created_at")


def model_get(*, project: Project, model_id: Any) -> RegisteredModel:
    found = model_list(project=project).filter(pk=model_id).first()
    if found is None:
        raise NotFound(_("model not found"))
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
        raise NotFound(_("model version not found"))
    return found


PACKAGE_FILES = ("model.onnx", "manifest.json")


def model_version_file_name(version: ModelVersion, name: str) -> str:
    """Storage name of ``model.onnx`` or ``manifest.json`` of a version's package. Raises
    NotFound for any other file name, or when the file is missing from storage."""
    if name not in PACKAGE_FILES:
        raise NotFound(_("no file %(name)r in a model package") % {"name": name})
    stored = f"{version.package_dir.rstrip('/')}/{name}"
    if not storage.exists(stored):
        raise NotFound(_("%(name)s of %(version)s is missing from storage")
                       % {"name": name, "version": version.label})
    return stored


def model_version_file(version: ModelVersion, name: str, *, cache: Path | None = None) -> Path:
    """A path on this host holding ``model.onnx`` or ``manifest.json`` of a version's package:
    the stored file with local storage, a cached copy (under ``cache``, by default
    ``SAMPAN_DATA_DIR/cache``: a version never changes) from the bucket. Raises NotFound,
    StorageUnavailable."""
    stored = model_version_file_name(version, name)
    try:
        return storage.local_file(stored, cache=cache)
    except FileNotFoundError:
        raise NotFound(_("%(name)s of %(version)s is missing from storage")
                       % {"name": name, "version": version.label}) from None
