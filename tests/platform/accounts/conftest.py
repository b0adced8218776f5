"""A project filled with one real object of every kind the user API serves, built by services."""

from __future__ import annotations

import io
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from onnx import TensorProto, helper, numpy_helper

from tests.fixtures.images import png_bytes

LABELS = ["cat", "dog"]
SIZE = 4


def tiny_classifier_onnx(path: Path, labels: list[str] = LABELS) -> Path:
    """Write a real ONNX classifier: input (N, 3, 4, 4) float32 -> probabilities (N, 2) float32
    (channel means -> linear -> Softmax)."""
    weights = np.eye(3, len(labels), dtype=np.float32)
    graph = helper.make_graph(
        [helper.make_node("GlobalAveragePool", ["input"], ["pooled"]),
         helper.make_node("Flatten", ["pooled"], ["features"], axis=1),
         helper.make_node("MatMul", ["features", "weights"], ["logits"]),
         helper.make_node("Softmax", ["logits"], ["probabilities"], axis=-1)],
        "tiny_classifier",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["N", 3, SIZE, SIZE])],
        [helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, ["N", len(labels)])],
        initializer=[numpy_helper.from_array(weights, "weights")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    path.write_bytes(model.SerializeToString())
    return path


def png_upload(name: str, color: tuple[int, int, int]) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, png_bytes(color=color), content_type="image/png")


@dataclass
class World:
    """Project A (``project``) with one object of each kind, and project B (``other``) of the
    outsider with a dataset of its own. ``ids`` maps a placeholder name to an object id."""

    project: Any
    other: Any
    users: dict[str, Any]
    ids: dict[str, str] = field(default_factory=dict)
    objects: dict[str, Any] = field(default_factory=dict)

    def url(self, template: str, project: Any = None) -> str:
        return "/api/v1/" + template.format(p=(project or self.project).pk, **self.ids)


def _model_result(onnx_path: Path) -> dict[str, Any]:
    """What the training engine hands to ``training_job_complete`` (its documented keys)."""
    return {
        "onnx_path": str(onnx_path),
        "preprocessing": {"size": [SIZE, SIZE], "resize": "stretch", "mean": [0.5, 0.5, 0.5],
                          "std": [0.5, 0.5, 0.5], "colour_order": "RGB", "layout": "NCHW"},
        "pretrained": False, "weights_note": "random init",
        "metrics": {"top1": 0.75}, "history": [{"epoch": 1, "loss": 0.5, "val_accuracy": 0.75}],
        "report": {"accuracy": 0.75, "confusion_matrix": [[1, 0], [1, 0]]},
        "parity": {"passed": True, "top1_agree": 1.0, "max_abs_diff": 1e-6},
        "recipe": {"epochs": 1}, "onnx": {"opset": 17, "ir_version": 8},
    }


@pytest.fixture
def world(project_with_roles: dict[str, Any], make_user: Any, tmp_path: Path) -> World:
    from sampan.accounts.models import Membership
    from sampan.datasets import imports, services as datasets
    from sampan.datasets.versions import dataset_version_create
    from sampan.training import services as training

    project, other = project_with_roles["project"], project_with_roles["other"]
    w = World(project=project, other=other,
              users={k: project_with_roles[k] for k in ("owner", "editor", "viewer", "outsider")})
    make_user("newcomer")

    dataset = datasets.dataset_create(project=project, name="Pets", labels=LABELS)
    colors = {"cat": [(250, 10, 10), (240, 20, 20)], "dog": [(10, 10, 250), (20, 20, 240)]}
    for label, shades in colors.items():
        job = imports.import_job_create(
            dataset=dataset, label=label,
            files=[png_upload(f"{label}-{i}.png", c) for i, c in enumerate(shades)])
        imports.import_job_run(job_id=job.pk)
    job.refresh_from_db()
    assert job.report["imported"] == 2, job.report
    sample = dataset.samples.order_by("original_name").first()
    version = dataset_version_create(dataset=dataset, seed=0)
    detection = datasets.dataset_create(project=project, name="Shelf", task_type="object_detection")
    boxes_job = imports.import_job_create(dataset=detection,
                                           files=[png_upload("shelf.png", (9, 99, 9))])
    imports.import_job_run(job_id=boxes_job.pk)
    w.ids["box_sample"] = str(detection.samples.get().pk)

    trained = training.training_job_create(project=project, dataset_version=version,
                                           budget_s=60)
    assert training.training_job_start(job_id=trained.pk) is not None
    model_version = training.training_job_complete(
        job_id=trained.pk, result=_model_result(tiny_classifier_onnx(tmp_path / "model.onnx")))
    assert model_version is not None
    queued = training.training_job_create(project=project, dataset_version=version, budget_s=60)

    w.objects.update(dataset=dataset, sample=sample, dataset_version=version,
                     model_version=model_version)
    w.ids.update(
        dataset=str(dataset.pk), sample=str(sample.pk), import_job=str(job.pk),
        dataset_version=str(version.pk), training_job=str(trained.pk),
        queued_job=str(queued.pk), model=str(model_version.model_id),
        model_version=str(model_version.pk),
        viewer_membership=str(Membership.objects.get(project=project,
                                                     user=w.users["viewer"]).pk))

    from sampan.fleet import services as fleet

    issued = fleet.enrollment_token_create(project=project, user=w.users["owner"],
                                           expires_in=timedelta(hours=1))
    device = fleet.device_enroll(token=issued.secret, name="shelf-camera", info={}).device
    deployment, = fleet.deployment_create(project=project, user=w.users["owner"],
                                          model_version_id=model_version.pk,
                                          device_ids=[device.pk])
    w.ids.update(enrollment_token=str(issued.token.pk), device=str(device.pk),
                 deployment=str(deployment.pk))

    # project B: the outsider's own dataset, so B's URLs reach real objects
    w.objects["other_dataset"] = datasets.dataset_create(project=other, name="Pets",
                                                         labels=LABELS)
    w.ids["other_dataset"] = str(w.objects["other_dataset"].pk)
    return w


def zip_names(content: bytes) -> list[str]:
    import zipfile

    with zipfile.ZipFile(io.BytesIO(content)) as archive:
        return sorted(archive.namelist())
