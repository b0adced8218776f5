"""Model/device compatibility (sampan.fleet.compatibility): a pure function over two dicts."""

from __future__ import annotations

import pytest

from sampan.fleet.compatibility import (
    ONNXRUNTIME_SUPPORT,
    model_incompatibilities,
    onnx_support,
    version_tuple,
)


def manifest(**onnx: object) -> dict[str, object]:
    return {"min_onnxruntime": "1.17.0", "onnx": {"opset": 18, "ir_version": 10, **onnx}}


CPU = ["CPUExecutionProvider"]


def test_the_table_is_onnxruntimes_published_one() -> None:
    # spot checks against https://onnxruntime.ai/docs/reference/compatibility.html
    assert onnx_support((1, 20, 1)) == (21, 10)
    assert onnx_support((1, 17, 3)) == (20, 9)
    assert onnx_support((1, 16, 0)) == (19, 9)
    assert onnx_support((1, 14, 1)) == (18, 8)
    assert onnx_support((1, 8, 2)) == (14, 7)
    assert onnx_support((0, 5, 0)) == (10, 5)
    assert onnx_support((0, 0, 9)) == (8, 3)  # older than the table: its oldest row
    assert onnx_support((1, 21, 0)) is None and onnx_support((2, 0, 0)) is None  # newer
    releases = [row[0] for row in ONNXRUNTIME_SUPPORT]
    assert releases == sorted(releases, reverse=True)


def test_versions_parse_loosely() -> None:
    assert version_tuple("1.20.1") == (1, 20, 1)
    assert version_tuple("1.17") == (1, 17, 0)
    assert version_tuple("1.18.0+cu118") == (1, 18, 0)
    assert version_tuple("") is None and version_tuple(None) is None


def test_a_device_that_can_load_it_gets_no_reasons() -> None:
    runtime = {"onnxruntime": "1.20.1", "providers": CPU}
    assert model_incompatibilities(manifest(), runtime) == []
    assert model_incompatibilities(manifest(opset=21, ir_version=10), runtime) == []
    # newer than the table: assumed to support everything
    assert model_incompatibilities(manifest(opset=23, ir_version=11),
                                   {"onnxruntime": "1.32.0"}) == []


def test_an_older_onnxruntime_than_min_onnxruntime() -> None:
    (reason,) = model_incompatibilities(manifest(opset=17, ir_version=8),
                                        {"onnxruntime": "1.16.3", "providers": CPU})
    assert reason == "the model needs onnxruntime >= 1.17.0; the device has 1.16.3"


def test_opset_and_ir_version_above_the_release_name_both() -> None:
    reasons = model_incompatibilities({"onnx": {"opset": 21, "ir_version": 10}},
                                      {"onnxruntime": "1.16.0"})
    assert reasons == [
        "the model uses ONNX opset 21; onnxruntime 1.16.0 implements opsets up to 19 "
        "(https://onnxruntime.ai/docs/reference/compatibility.html)",
        "the model has ONNX IR version 10; onnxruntime 1.16.0 supports IR versions up to 9 "
        "(https://onnxruntime.ai/docs/reference/compatibility.html)",
    ]


def test_a_missing_execution_provider() -> None:
    needs_cuda = manifest(execution_providers=["CUDAExecutionProvider", "CPUExecutionProvider"])
    (reason,) = model_incompatibilities(needs_cuda, {"onnxruntime": "1.20.0", "providers": CPU})
    assert reason == ("the model needs the execution provider(s) CUDAExecutionProvider; the "
                      "device offers CPUExecutionProvider")
    assert model_incompatibilities(needs_cuda, {"onnxruntime": "1.20.0", "providers": [
        "CUDAExecutionProvider", "CPUExecutionProvider"]}) == []
    # absent: CPU, which every build has
    assert model_incompatibilities(manifest(), {"onnxruntime": "1.20.0", "providers": []}) == []


@pytest.mark.parametrize(("operator", "version", "flagged"), [
    ("ai.onnx:ConvInteger", "1.20.1", True),
    ("ai.onnx:ConvInteger", "1.24.0", False),
    ("ai.onnx:MatMulInteger", "1.17.0", False),
    ("ai.onnx:MatMulInteger", "0.5.0", True),
    ("ai.onnx:QLinearConv", "1.17.0", False),
    ("com.microsoft:QLinearConv", "1.17.0", False),
])
def test_quantized_operators_known_not_to_run_on_older_cpu_builds(
        operator: str, version: str, flagged: bool) -> None:
    model = {"onnx": {"opset": 10, "ir_version": 5, "operators": ["ai.onnx:Conv", operator]}}
    reasons = model_incompatibilities(model, {"onnxruntime": version})
    assert bool(reasons) is flagged
    if flagged:
        assert reasons[0].startswith(f"the model uses {operator}, which onnxruntime's CPU "
                                     "provider runs from")
        assert f"the device has {version}" in reasons[0]


def test_an_unknown_runtime_is_allowed() -> None:
    model = {"min_onnxruntime": "99.0", "onnx": {"opset": 30, "ir_version": 20,
                                                  "operators": ["ai.onnx:ConvInteger"]}}
    assert model_incompatibilities(model, {}) == []
    assert model_incompatibilities(model, {"onnxruntime": "unknown"}) == []
    # old manifests: no onnx object, no operators
    assert model_incompatibilities({"schema": "sampan.model-package/1"},
                                   {"onnxruntime": "1.10.0"}) == []
