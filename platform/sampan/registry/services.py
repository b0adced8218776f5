"""Writes for the registry: registering immutable model versions as signed model packages."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import uuid
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from edge_agent.runtime import file_sha256
from sampan.accounts.models import Project
from sampan.core.errors import Conflict
from sampan.registry.models import ModelVersion, RegisteredModel
from sampan.registry.signing import sign_manifest

PACKAGE_SCHEMA = "sampan.model-package/1"
MIN_ONNXRUNTIME = "1.17.0"


def _package_root() -> Path:
    return Path(settings.MEDIA_ROOT) / "models"


def model_get_or_create(*, project: Project, name: str, task_type: str) -> RegisteredModel:
    model, _ = RegisteredModel.objects.get_or_create(project=project, name=name,
                                                     defaults={"task_type": task_type})
    return model


def model_version_register(*, project: Project, model_name: str, task_type: str,
                           labels: list[str], preprocessing: dict[str, Any], onnx_path: Path,
                           input_shape: list[Any], metrics: dict[str, Any],
                           lineage: dict[str, Any], onnx_info: dict[str, Any],
                           pretrained: bool, dataset_version: Any = None,
                           training_job: Any = None, parent: ModelVersion | None = None
                           ) -> ModelVersion:
    """Register ``onnx_path`` as the next immutable version of ``model_name``.

    Copies the file into ``MEDIA_ROOT/models/<model id>/<version id>/``, writes the signed
    ``manifest.json`` beside it (format in docs/contracts.md) and creates the row. The package is
    built in a temporary folder and renamed into place, so a failure leaves nothing half-written.
    Version numbers are unique per model; a concurrent registration retries (bounded).
    """
    model = model_get_or_create(project=project, name=model_name, task_type=task_type)
    version_id = uuid.uuid4()
    root = _package_root() / str(model.pk)
    root.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=root))
    final = root / str(version_id)
    try:
        shutil.copyfile(onnx_path, staging / "model.onnx")
        sha256 = file_sha256(staging / "model.onnx")
        size = (staging / "model.onnx").stat().st_size
        for attempt in range(5):
            try:
                with transaction.atomic():
                    number = (model.versions.order_by("-version")
                              .values_list("version", flat=True).first() or 0) + 1
                    manifest = sign_manifest({
                        "schema": PACKAGE_SCHEMA,
                        "model": {"id": str(model.pk), "name": model.name, "version": number,
                                  "version_id": str(version_id)},
                        "task": task_type,
                        "labels": list(labels),
                        "preprocessing": preprocessing,
                        "inputs": [{"name": "input", "shape": input_shape, "dtype": "float32"}],
                        "outputs": [{"name": "probabilities", "shape": ["N", len(labels)],
                                     "dtype": "float32"}],
                        "metrics": metrics,
                        "lineage": lineage,
                        "files": {"model.onnx": {"sha256": sha256, "size": size}},
                        "onnx": onnx_info,
                        "min_onnxruntime": MIN_ONNXRUNTIME,
                        "created_at": timezone.now().strftime("%Y-%m-%dT%H:%M:%SZ"),
                    })
                    (staging / "manifest.json").write_text(
                        json.dumps(manifest, indent=2, ensure_ascii=False), encoding="utf-8")
                    version = ModelVersion.objects.create(
                        id=version_id, project=project, model=model, version=number,
                        task_type=task_type, labels=list(labels), metrics=metrics,
                        manifest=manifest,
                        package_dir=str(final.relative_to(settings.MEDIA_ROOT)),
                        model_sha256=sha256, model_size=size, pretrained=pretrained,
                        dataset_version=dataset_version, training_job=training_job,
                        parent=parent)
                    os.replace(staging, final)
                return version
            except IntegrityError:
                if attempt == 4:
                    raise Conflict("could not allocate a model version number") from None
        raise AssertionError("unreachable")
    finally:
        shutil.rmtree(staging, ignore_errors=True)
