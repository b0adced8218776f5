"""Object detection training jobs: creation rules, the engine's inputs (boxes), history, the box
export gate and registration with the detection manifest."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import onnx
import pytest
from onnx import TensorProto, helper

from edge_agent.runtime import DetectorSession, verify_manifest
from sampan.core.errors import ValidationFailed
from sampan.datasets.models import Sample, TaskType
from sampan.datasets.services import dataset_create, sample_boxes_set
from sampan.datasets.versions import dataset_version_create
from sampan.registry.signing import public_key_b64
from sampan.training import services
from sampan.training.budget import minimum_budget_s
from sampan.training.models import TrainingJob

pytestmark = pytest.mark.django_db


def detection_version(project: Any, n: int = 10, name: str = "boxes") -> Any:
    dataset = dataset_create(project=project, name=name, task_type=TaskType.OBJECT_DETECTION)
    for i in range(n):
        sample = Sample.objects.create(dataset=dataset,
                                       content_sha256=f"box-{i:04d}".ljust(64, "0"),
                                       file=f"samples/box{i}.png", original_name=f"{i}",
                                       width=64, height=48)
        sample_boxes_set(sample=sample, boxes=[
            {"x1": 1, "y1": 2, "x2": 30, "y2": 40, "class_label": "car"},
            {"x1": 40, "y1": 5, "x2": 60, "y2": 20,
             "class_label": "person" if i % 2 else "car"}])
    return dataset_version_create(dataset=dataset)


def tiny_detector_onnx(path: Path, classes: int = 2, size: int = 8) -> Path:
    """A graph with the detection signature: boxes = a constant box per cell, scores from the
    input's mean (enough for the session's checks)."""
    cells = 4
    boxes = helper.make_tensor("boxes_c", TensorProto.FLOAT, [1, cells, 4],
                               [v for i in range(cells) for v in (i, i, i + 2, i + 3)])
    nodes = [
        helper.make_node("ReduceMean", ["images"], ["m"], axes=[1, 2, 3], keepdims=0),
        helper.make_node("Sigmoid", ["m"], ["s"]),
        helper.make_node("Unsqueeze", ["s", "ax"], ["s2"]),
        helper.make_node("Expand", ["s2", "shape"], ["scores"]),
        helper.make_node("Shape", ["images"], ["ishape"]),
        helper.make_node("Slice", ["ishape", "zero", "one"], ["n"]),
        helper.make_node("Concat", ["n", "tail"], ["bshape"], axis=0),
        helper.make_node("Expand", ["boxes_c", "bshape"], ["boxes"]),
    ]
    inits = [boxes,
             helper.make_tensor("ax", TensorProto.INT64, [2], [1, 2]),
             helper.make_tensor("shape", TensorProto.INT64, [3], [1, cells, classes]),
             helper.make_tensor("zero", TensorProto.INT64, [1], [0]),
             helper.make_tensor("one", TensorProto.INT64, [1], [1]),
             helper.make_tensor("tail", TensorProto.INT64, [2], [cells, 4])]
    graph = helper.make_graph(
        nodes, "tiny_det",
        [helper.make_tensor_value_info("images", TensorProto.FLOAT, ["N", 3, size, size])],
        [helper.make_tensor_value_info("boxes", TensorProto.FLOAT, ["N", cells, 4]),
         helper.make_tensor_value_info("scores", TensorProto.FLOAT, ["N", cells, classes])],
        inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, path)
    return path


def detection_result(onnx_path: Path, passed: bool = True) -> dict[str, Any]:
    return {"onnx_path": str(onnx_path), "pretrained": True, "weights_note": "",
            "preprocessing": {"size": [8, 8], "resize": "letterbox",
                              "mean": [0.485, 0.456, 0.406], "std": [0.229, 0.224, 0.225],
                              "colour_order": "RGB", "layout": "NCHW", "dtype": "float32"},
            "detection": {"score_threshold": 0.35, "nms_iou": 0.6, "pre_nms_top_k": 1000,
                          "max_detections": 300, "tile": None},
            "metrics": {"val_map50": 0.5, "test_map50": 0.45, "evaluated_on": "test"},
            "history": [{"step": 10, "val_map50": 0.5}],
            "report": {"task": "object_detection", "split": "test", "map50": 0.45},
            "recipe": {"input_size": 8},
            "parity": {"passed": passed, "images": 3, "candidates": 12, "differing": 0 if passed
                       else 4, "min_iou": 1.0 if passed else 0.8, "min_iou_limit": 0.99,
                       "max_score_diff": 0.0, "max_score_diff_limit": 0.001},
            "onnx": {"opset": 13, "ir_version": 8}}


def test_detection_job_gets_its_boxes_and_registers_a_detection_package(
        project_with_roles: dict[str, Any], tmp_path: Path) -> None:
    project = project_with_roles["project"]
    version = detection_version(project)
    assert version.labels == ["car", "person"]
    job = services.training_job_create(project=project, dataset_version=version,
                                       budget_s=minimum_budget_s(10, 0, "object_detection") + 1)
    inputs = services.training_job_start(job_id=job.pk)
    assert inputs is not None and inputs.task_type == "object_detection"
    rows = inputs.train + inputs.val + inputs.test
    assert len(rows) == 10
    path, boxes, sample_id = rows[0]
    assert [b[4] for b in boxes] in ([0, 0], [0, 1])  # class indices into version.labels
    assert boxes[0][:4] == [1.0, 2.0, 30.0, 40.0]

    # a validation round (no epoch, no accuracy) is kept in history while running
    services.training_job_progress(job_id=job.pk, progress={"phase": "train", "step": 5,
                                                            "val_map50": 0.2})
    assert TrainingJob.objects.get(pk=job.pk).history[-1]["val_map50"] == 0.2

    onnx_path = tiny_detector_onnx(tmp_path / "model.onnx")
    model_version = services.training_job_complete(job_id=job.pk,
                                                   result=detection_result(onnx_path))
    assert model_version is not None and model_version.task_type == "object_detection"
    manifest = model_version.manifest
    verify_manifest(manifest, public_key_b64())
    assert manifest["task"] == "object_detection"
    assert manifest["detection"]["score_threshold"] == 0.35
    assert [o["name"] for o in manifest["outputs"]] == ["boxes", "scores"]
    assert manifest["inputs"][0]["name"] == "images"
    # the device's session loads the package as registered
    session = DetectorSession(onnx_path, manifest)
    session.self_test()
    assert session.labels == ["car", "person"]


def test_failed_box_gate_names_the_difference_and_registers_nothing(
        project_with_roles: dict[str, Any], tmp_path: Path) -> None:
    project = project_with_roles["project"]
    job = services.training_job_create(project=project,
                                       dataset_version=detection_version(project), budget_s=120)
    services.training_job_start(job_id=job.pk)
    result = detection_result(tiny_detector_onnx(tmp_path / "m.onnx"), passed=False)
    assert services.training_job_complete(job_id=job.pk, result=result) is None
    job.refresh_from_db()
    assert job.status == "FAILED" and job.model_version is None
    assert "4 of 12 candidate boxes differ" in job.error
    assert "lowest IoU 0.8 (limit 0.99)" in job.error


def test_detection_budget_floor_is_higher_and_named(project_with_roles: dict[str, Any]) -> None:
    project = project_with_roles["project"]
    version = detection_version(project)
    floor = math.ceil(minimum_budget_s(10, 0, "object_detection"))
    assert floor > math.ceil(minimum_budget_s(10, 0))
    with pytest.raises(ValidationFailed) as caught:
        services.training_job_create(project=project, dataset_version=version,
                                     budget_s=floor - 1)
    assert caught.value.field == "budget_s" and f"at least {floor} s" in caught.value.message


def test_detection_version_without_classes_is_refused(project_with_roles: dict[str, Any]) -> None:
    """A version whose labels are empty (frozen before boxes were required) cannot train."""
    project = project_with_roles["project"]
    version = detection_version(project, n=4, name="old")
    type(version).objects.filter(pk=version.pk).update(labels=[])
    version.refresh_from_db()
    with pytest.raises(ValidationFailed) as caught:
        services.training_job_create(project=project, dataset_version=version, budget_s=600)
    assert caught.value.field == "dataset_version_id"
    assert "at least 1 class" in caught.value.message


@pytest.mark.parametrize("allow_flips, augmentation", [
    (True, "auto"), (False, "strong"), (True, "none")])
def test_the_jobs_options_reach_the_detector(tmp_path: Path, allow_flips: bool,
                                              augmentation: str) -> None:
    """"Never mirror the images" (allow_flips false) and the augmentation strength are the
    user's for detection too: the request the worker builds carries them."""
    from workers.tasks.training import _detect_request

    inputs = services.TrainingInputs(
        job_id="j", attempt=1, labels=["car"], task_type=TaskType.OBJECT_DETECTION,
        train=[("a.png", [[1, 2, 30, 40, 0]], "s1")], val=[("b.png", [], "s2")],
        augmentation=augmentation, allow_flips=allow_flips, out_dir=tmp_path)
    request = _detect_request(inputs, 60.0)
    assert (request.flips, request.augmentation) == (allow_flips, augmentation)
    assert request.train[0].boxes == ((1.0, 2.0, 30.0, 40.0, 0),) and request.val[0].boxes == ()
