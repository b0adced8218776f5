"""Reference predictions at registration: a model finite on every real image but not on the
N(0,1) reference inputs registers without them (devices could never match NaN, and PostgreSQL
refuses NaN in JSON), and deploys."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import onnx
import pytest
from onnx import TensorProto, helper

from sampan.registry.services import model_version_register
from tests.platform.registry.test_predict import PREPROCESSING

pytestmark = pytest.mark.django_db


def log_onnx(path: Path) -> Path:
    """probabilities = softmax(log(x + 1.01) @ w): inputs normalised to [-1, 1] (mean 0.5,
    std 0.5: every real image) give finite outputs; N(0, 1) draws below -1.01 give NaN."""
    nodes = [helper.make_node("Flatten", ["input"], ["flat"]),
             helper.make_node("Add", ["flat", "shift"], ["shifted"]),
             helper.make_node("Log", ["shifted"], ["logged"]),
             helper.make_node("MatMul", ["logged", "w"], ["logits"]),
             helper.make_node("Softmax", ["logits"], ["probabilities"], axis=1)]
    w = helper.make_tensor("w", TensorProto.FLOAT, [48, 2], [0.01 * (i % 7) for i in range(96)])
    shift = helper.make_tensor("shift", TensorProto.FLOAT, [1], [1.01])
    graph = helper.make_graph(
        nodes, "log", [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["N", 3, 4, 4])],
        [helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, ["N", 2])], [w, shift])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 9
    onnx.save(model, path)
    return path


def test_a_model_with_non_finite_outputs_on_random_inputs_registers_and_deploys(
        project_with_roles: dict[str, Any], tmp_path: Path) -> None:
    version = model_version_register(
        project=project_with_roles["project"], model_name="m",
        task_type="image_classification", labels=["cat", "dog"], preprocessing=PREPROCESSING,
        onnx_path=log_onnx(tmp_path / "m.onnx"), input_shape=["N", 3, 4, 4], metrics={},
        lineage={}, onnx_info={"opset": 18, "ir_version": 9}, pretrained=False)
    manifest = version.manifest
    json.dumps(manifest, allow_nan=False)  # valid JSON for every client
    from edge_agent.reference import reference_check
    from edge_agent.sessions import open_session
    path = tmp_path / "copy.onnx"
    path.write_bytes(log_onnx(tmp_path / "again.onnx").read_bytes())
    assert "reference" not in manifest  # load-tested only on the device
    assert reference_check(open_session(path, manifest), manifest.get("reference")) is False
