"""Compression jobs of text classifiers: a text model version (trained by workers.ml.text on a
text dataset version) is accepted, its held-out texts reach the worker, the candidates are made,
measured by the agent's own code and picked by the real worker task; the pick is registered as
a child version whose package is a text package (the source's ``text`` settings, the new
graph); a device gets text packages to measure."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from rest_framework.test import APIClient

from edge_agent.benchmark import measure
from edge_agent.runtime import verify_manifest
from edge_agent.text import TextFeatures
from edge_agent.text_session import TextClassifierSession
from sampan.compression import services
from sampan.compression.models import CompressionJob
from sampan.core import storage
from sampan.core.jobs import JobStatus, job_transition
from sampan.datasets.models import Split, TaskType
from sampan.fleet.models import DeviceBenchmark
from sampan.registry.services import model_version_register
from sampan.registry.signing import public_key_b64
from sampan.training.services import dataset_version_text_rows
from tests.platform.compression.test_compression_jobs import _device
from tests.platform.training.test_text_training import text_version
from workers.ml.compression import TextCompressRequest, compress_text_classifier
from workers.ml.compression.graph import onnx_info
from workers.ml.text.solvers import FamilyConfig
from workers.ml.text.train import TextTrainRequest, train_text_classifier
from workers.tasks import compression as task
from workers.tasks import heartbeat

pytestmark = pytest.mark.django_db

SMALL_FASTTEXT = FamilyConfig("fasttext", TextFeatures(buckets=2**15), dim=16, epochs=3)


@pytest.fixture
def text_source(project_with_roles: dict[str, Any], tmp_path: Path) -> dict[str, Any]:
    """A text model version as a training job registers one, trained on the version's rows."""
    project = project_with_roles["project"]
    version = text_version(project, n=40)
    rows = dataset_version_text_rows(version)
    result = train_text_classifier(TextTrainRequest(
        train=rows[Split.TRAIN], val=rows[Split.VAL], test=rows[Split.TEST],
        labels=list(version.labels), out_dir=tmp_path / "train", budget_s=15.0,
        candidates=("fasttext",), configs={"fasttext": SMALL_FASTTEXT}))
    source = model_version_register(
        project=project, model_name="reviews", task_type=TaskType.TEXT_CLASSIFICATION,
        labels=result.labels, preprocessing={}, onnx_path=result.onnx_path,
        input_shape=["N", "L"], metrics=result.metrics, lineage={},
        onnx_info=onnx_info(result.onnx_path), pretrained=False, dataset_version=version,
        text=result.features)
    return {**project_with_roles, "source": source, "version": version, "result": result,
            "rows": rows}


def _check_text_child(child: Any, source: Any, job: CompressionJob) -> None:
    """``child``: a registered compressed version of the text model ``source``."""
    manifest = child.manifest
    verify_manifest(manifest, public_key_b64())
    assert child.parent == source and child.version == source.version + 1
    assert manifest["task"] == "text_classification" and manifest["preprocessing"] == {}
    assert manifest["text"] == source.manifest["text"]  # the features unchanged
    assert [i["name"] for i in manifest["inputs"]] == ["indices", "weights"]
    assert manifest["lineage"]["compression_job_id"] == str(job.pk)
    assert manifest["lineage"]["method"] == "int8"
    assert manifest["lineage"]["params"]["quantization"] == "dynamic"
    data = storage.read_bytes(f"{child.package_dir}/model.onnx")
    assert manifest["files"]["model.onnx"]["sha256"] == hashlib.sha256(data).hexdigest()
    assert child.model_sha256 == hashlib.sha256(data).hexdigest() != source.model_sha256
    picked = next(c for c in job.candidates if c["key"] == job.picked)
    assert child.model_size == picked["size_bytes"]
    if job.picked == "int8":  # the n-gram table int8 too (int8-matmul keeps it float)
        assert child.model_size < source.model_size / 2
    assert manifest["reference"]["cases"], "the registry ran the graph in the device's session"
    assert child.metrics["evaluated_on"] == "test" and child.metrics["test_accuracy"] >= 0.75


def test_a_text_job_is_accepted_runs_on_the_worker_and_measures_every_candidate(
        text_source: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    # the heartbeat thread's own connection does not see this test's transaction (as in
    # tests/platform/training/test_text_training.py)
    monkeypatch.setattr(heartbeat, "HEARTBEAT_INTERVAL_S", 3600.0)
    project, source = text_source["project"], text_source["source"]
    client = APIClient()
    client.force_authenticate(text_source["editor"])
    url = f"/api/v1/projects/{project.pk}/compression-jobs/"
    default = client.post(url, {"source_model_version_id": str(source.pk)}, format="json")
    assert default.status_code == 201, default.json()
    assert default.json()["methods"] == ["int8", "fp16"]  # what applies to a text model
    client.post(f"{url}{default.json()['id']}/cancel/")
    # methods none of which applies to a text model: refused, naming the field (it would
    # "succeed" with the float model alone)
    for methods in (["pruning"], ["resolution", "pruning"]):
        refused = client.post(url, {"source_model_version_id": str(source.pk),
                                    "methods": methods}, format="json")
        assert refused.status_code == 400, refused.json()
        assert refused.json()["error"]["field"] == "methods", refused.json()
        assert "int8, fp16" in refused.json()["error"]["message"], refused.json()
    created = client.post(url, {"source_model_version_id": str(source.pk), "budget_s": 120,
                                "methods": ["int8", "pruning"]}, format="json")
    assert created.status_code == 201, created.json()
    job_id = created.json()["id"]
    inputs_seen: list[Any] = []
    start = services.compression_job_start

    def start_and_keep(**kwargs: Any) -> Any:
        inputs = start(**kwargs)
        inputs_seen.append(inputs)
        return inputs

    monkeypatch.setattr(services, "compression_job_start", start_and_keep)
    task.run_compression(job_id)
    job = CompressionJob.objects.get(pk=job_id)
    assert job.status == JobStatus.SUCCEEDED, job.error
    # the worker got the version's texts and classes, not image paths
    (inputs,) = inputs_seen
    assert inputs.text == source.manifest["text"] and inputs.checkpoint is None
    assert inputs.test == text_source["rows"][Split.TEST] and inputs.benchmark_inputs == []
    assert inputs.dataset_labels == list(text_source["version"].labels)
    candidates = {c["key"]: c for c in job.candidates}
    assert list(candidates) == ["fp32", "int8", "int8-matmul"]
    for candidate in candidates.values():
        assert candidate["status"] == "ready", candidate
        assert candidate["evaluated_on"] == "test"
        assert candidate["n_evaluated"] == len(text_source["rows"][Split.TEST])
        # measured on the worker by the agent's own code, one text per run
        assert candidate["latency"]["p50_ms"] > 0 and candidate["latency"]["runs"] == 200, \
            candidate
        assert "p95_ms" in candidate["latency"]  # the text models' figures
    assert candidates["int8"]["size_bytes"] * 3 < candidates["fp32"]["size_bytes"]
    assert any(w.startswith("pruning: not applicable to a text model") for w in job.warnings)
    if job.picked:
        assert job.model_version is not None
        _check_text_child(job.model_version, source, job)
        assert " test texts" in job.pick_reason, job.pick_reason
    else:  # the float model was the fastest here: kept, with the reason
        assert job.model_version is None and "keep the float model" in job.pick_reason
    assert not (Path(inputs.out_dir)).exists()  # the work folder is cleaned up
    # the text engine's sentences read in Chinese like the image engine's
    chinese = client.get(f"{url}{job_id}/", HTTP_ACCEPT_LANGUAGE="zh-hans").json()
    assert chinese["warnings"][0].startswith("pruning：不适用于文本模型"), chinese["warnings"]
    assert any(w.startswith("测试集有 ") and "条文本" in w for w in chinese["warnings"]), \
        chinese["warnings"]
    assert len(chinese["warnings"]) == len(job.warnings)
    assert all(zh != en for zh, en in zip(chinese["warnings"], job.warnings, strict=True))
    assert chinese["pick_reason"] != job.pick_reason
    if job.picked:
        assert "条测试文本上" in chinese["pick_reason"], chinese["pick_reason"]


def test_the_pick_registers_as_a_text_package_and_a_device_gets_text_packages(
        text_source: dict[str, Any], tmp_path: Path) -> None:
    project, source = text_source["project"], text_source["source"]
    device = _device(project, "kiosk", "1.32.0")
    job = services.compression_job_create(project=project, source=source, device=device)
    assert job.methods == ["int8", "fp16"]
    assert job_transition(CompressionJob, job.pk, JobStatus.RUNNING)
    rows, result = text_source["rows"], text_source["result"]
    compressed = compress_text_classifier(TextCompressRequest(
        onnx_path=result.onnx_path, text=source.manifest["text"], labels=list(source.labels),
        sample_labels=list(text_source["version"].labels), val=rows[Split.VAL],
        test=rows[Split.TEST], out_dir=tmp_path / "candidates", methods=tuple(job.methods)))
    ready = [{**c.to_dict(), "latency": None, "compatible": True, "benchmark": None}
             for c in compressed.candidates if c.status == "ready"]
    for candidate in ready:
        assert services.compression_candidate_record(job_id=job.pk, candidate=candidate)
    # the device measures text packages: signed, the source's text settings, an input to
    # download (the agent times its own texts)
    assert services.compression_benchmarks_request(job_id=job.pk, candidates=ready,
                                                   inputs=[]) == len(ready)
    benchmark = DeviceBenchmark.objects.get(compression_job_id=job.pk, candidate="int8")
    assert benchmark.status == "pending", benchmark.error
    assert benchmark.manifest["task"] == "text_classification"
    assert benchmark.manifest["text"] == source.manifest["text"]
    assert [i["name"] for i in benchmark.manifest["inputs"]] == ["indices", "weights"]
    verify_manifest(benchmark.manifest, public_key_b64())
    assert len(benchmark.inputs) == 1 and storage.exists(benchmark.inputs[0])
    package = tmp_path / "device"
    (package / "inputs").mkdir(parents=True)
    (package / "manifest.json").write_text(json.dumps(benchmark.manifest))
    (package / "model.onnx").write_bytes(storage.read_bytes(f"{benchmark.package_dir}/model.onnx"))
    (package / "inputs" / "0").write_bytes(storage.read_bytes(benchmark.inputs[0]))
    outcome = measure(package, warmup=2, runs=10)  # what the agent's child process runs
    assert outcome["status"] == "succeeded", outcome
    # the pick becomes the next version of the model: a text package
    child = services.compression_job_complete(job_id=job.pk, picked="int8", reason="int8")
    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED and job.model_version == child
    _check_text_child(child, source, job)
    served = tmp_path / "served"
    served.mkdir()
    (served / "model.onnx").write_bytes(storage.read_bytes(f"{child.package_dir}/model.onnx"))
    session = TextClassifierSession(served / "model.onnx", child.manifest)
    session.self_test()
    answer = session.predict_texts(["的了是喜欢在我", "讨厌是在我的了"])
    assert [r["predictions"][0]["label"] for r in answer] == ["正面", "负面"]
    services.compression_cleanup(job_id=job.pk, out_dir=None)
    assert not storage.exists(benchmark.inputs[0])  # deleted with its package
