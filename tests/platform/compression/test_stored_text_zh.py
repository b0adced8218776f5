"""A compression job's texts, written in English by the worker (each candidate's reason, the
warnings, the pick's reason) and by the fleet (its benchmarks' errors and incompatibilities),
are shown in the request's language by the API (sampan.compression.stored_texts); keys, names
and figures stay as they are. The pick's reason is made by the worker's own ``pick``; the other
sentences are written as workers/ml/compression/engine.py writes them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.utils import translation
from rest_framework.test import APIClient

from sampan.compression import services
from sampan.compression.models import CompressionJob
from sampan.core.jobs import JobStatus, job_transition
from sampan.registry.services import model_version_register
from tests.platform.compression.test_compression_jobs import PREPROCESSING, _candidate, _device
from tests.platform.training.test_training_services import labelled_version, tiny_onnx
from workers.ml.compression import pick

pytestmark = pytest.mark.django_db

CHINESE = {"HTTP_ACCEPT_LANGUAGE": "zh-hans"}


@pytest.fixture
def job(project_with_roles: dict[str, Any], tmp_path: Path) -> dict[str, Any]:
    project = project_with_roles["project"]
    onnx_path = tiny_onnx(tmp_path / "model.onnx")
    source = model_version_register(
        project=project, model_name="digits", task_type="image_classification",
        labels=["a", "b"], preprocessing=PREPROCESSING, onnx_path=onnx_path,
        input_shape=["N", 3, 4, 4], metrics={"val_accuracy": 0.9}, lineage={},
        onnx_info={"opset": 18, "ir_version": 9}, pretrained=False,
        dataset_version=labelled_version(project, {"a": 12, "b": 12}))
    old = _device(project, "old-box", "1.16.3")
    created = services.compression_job_create(project=project, source=source, device=old)
    assert job_transition(CompressionJob, created.pk, JobStatus.RUNNING)
    client = APIClient()
    client.force_authenticate(project_with_roles["viewer"])
    return {"id": created.pk, "onnx": onnx_path, "client": client, "source": source,
            "project": project,
            "url": f"/api/v1/projects/{project.pk}/compression-jobs/{created.pk}/"}


def test_a_jobs_reasons_and_warnings_read_in_chinese(job: dict[str, Any]) -> None:
    ready = [_candidate("fp32", job["onnx"], 0.0), _candidate("int8", job["onnx"], 0.0)]
    with translation.override("en"):  # the worker's language
        for candidate in [*ready,
                          {"key": "pruned50", "method": "distilled", "status": "skipped",
                           "reason": "not enough time left in the budget"},
                          {"key": "int8-percentile", "method": "int8", "status": "failed",
                           "reason": "quantization failed: [ONNXRuntimeError] bad graph"}]:
            services.compression_candidate_record(job_id=job["id"], candidate=candidate)
        services.compression_benchmarks_request(job_id=job["id"], candidates=ready,
                                                inputs=["samples/a1.png"])
        services.compression_warnings_record(job_id=job["id"], warnings=[
            "this model has no training checkpoint: no distilled students, only graph-level "
            "candidates", "INT8 not attempted: 3 training images to calibrate on, at least 8 "
                          "are needed", "a warning of a newer worker"])
        stored = list(CompressionJob.objects.get(pk=job["id"]).candidates)
        key, reason = pick(stored, measured_on="old-box")
        services.compression_job_complete(job_id=job["id"], picked=key, reason=reason)

    english = job["client"].get(job["url"]).json()
    assert english["pick_reason"] == ("no candidate could be measured on old-box: keep the "
                                      "float model.")
    chinese = job["client"].get(job["url"], **CHINESE).json()
    assert chinese["pick_reason"] == "没有候选能在old-box上测量：保留浮点模型。"
    reasons = {c["key"]: c.get("reason") for c in chinese["candidates"]}
    assert reasons["pruned50"] == "预算中剩余时间不足"
    assert reasons["int8-percentile"] == "量化失败：[ONNXRuntimeError] bad graph"
    fp32 = next(c for c in chinese["candidates"] if c["key"] == "fp32")
    assert fp32["compatible"] is False and fp32["benchmark"]["status"] == "incompatible"
    # one reason, with the separator inside it: kept whole in the list
    english_fp32 = next(c for c in english["candidates"] if c["key"] == "fp32")
    assert english_fp32["incompatibilities"] == [
        "the model needs onnxruntime >= 1.17.0; the device has 1.16.3"]
    assert fp32["incompatibilities"] == ["模型需要 onnxruntime >= 1.17.0；设备上的版本为 1.16.3"]
    assert fp32["benchmark"]["error"] == "模型需要 onnxruntime >= 1.17.0；设备上的版本为 1.16.3"
    assert "onnx_path" not in fp32
    assert chinese["warnings"] == ["此模型没有训练检查点：没有蒸馏的学生模型，只有图级别的候选",
                                   "未尝试 INT8：只有 3 张训练图像可用于校准，至少需要 8 张",
                                   "a warning of a newer worker"]
    assert english["warnings"][1].startswith("INT8 not attempted: 3 training images")


@pytest.mark.parametrize("latencies, n_evaluated, split, expected", [
    ({"fp32": 4.0, "int8": 1.0}, 50, "test",
     "int8 是精度预算内最快的候选：在压缩工作进程上 p50 为 1.00 毫秒，"
     "比浮点模型快 4.0 倍；在 50 张测试图像上准确率比浮点模型低 0.5 个百分点。"),
    ({"fp32": None, "int8": 1.0}, 0, "val",
     "int8 是精度预算内最快的候选：在压缩工作进程上 p50 为 1.00 毫秒；"
     "在验证图像上准确率比浮点模型低 0.5 个百分点。未测量：fp32；所选的是已测量候选中最快的。"),
    ({"fp32": 1.0, "int8": 4.0}, 50, "test",
     "在压缩工作进程上，精度预算内没有比浮点模型更快的候选：保留浮点模型。"),
])
def test_every_form_of_the_picks_reason_reads_in_chinese(
        job: dict[str, Any], latencies: dict[str, float | None], n_evaluated: int, split: str,
        expected: str) -> None:
    candidates = [{**_candidate(k, job["onnx"], 0.5 if k == "int8" else 0.0),
                   "latency": {"p50_ms": p50} if p50 else None, "n_evaluated": n_evaluated,
                   "evaluated_on": split} for k, p50 in latencies.items()]
    key, reason = pick(candidates, measured_on="the compression worker")
    services.compression_job_complete(job_id=job["id"], picked=None, reason=reason)
    assert job["client"].get(job["url"]).json()["pick_reason"] == reason
    assert job["client"].get(job["url"], **CHINESE).json()["pick_reason"] == expected


def test_a_tied_pick_the_smaller_file_reads_in_chinese(job: dict[str, Any]) -> None:
    candidates = [{**_candidate(k, job["onnx"], 0.5 if k == "int8" else 0.0),
                   "latency": {"p50_ms": p50}, "size_bytes": size, "n_evaluated": 50}
                  for k, p50, size in (("fp32", 1.0, 400), ("int8", 1.02, 100))]
    key, reason = pick(candidates, measured_on="the compression worker")
    assert key == "int8" and reason.startswith("int8 is the smallest of the candidates")
    services.compression_job_complete(job_id=job["id"], picked=None, reason=reason)
    assert job["client"].get(job["url"]).json()["pick_reason"] == reason
    assert job["client"].get(job["url"], **CHINESE).json()["pick_reason"] == (
        "int8 是精度预算内 p50 与最快者相差不超过 3% 的候选中文件最小的：在压缩工作进程上 p50 为 "
        "1.02 毫秒（最快：1.00 毫秒）；在 50 张测试图像上准确率比浮点模型低 0.5 个百分点。")


def test_a_job_whose_source_cannot_be_read_fails_in_the_language_asked_for(
        job: dict[str, Any]) -> None:
    from sampan.core import storage

    queued = services.compression_job_create(project=job["project"], source=job["source"],
                                             device=None)
    storage.delete(f"{job['source'].package_dir}/model.onnx")
    with translation.override("en"):
        assert services.compression_job_start(job_id=queued.pk) is None
    url = job["url"].replace(str(job["id"]), str(queued.pk))
    english = job["client"].get(url).json()
    assert english["status"] == "FAILED"
    assert english["error"].startswith("reading the source model or its images failed: ")
    detail = english["error"].removeprefix("reading the source model or its images failed: ")
    assert job["client"].get(url, **CHINESE).json()["error"] == f"读取源模型或其图像失败：{detail}"
