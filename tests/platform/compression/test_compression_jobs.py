"""Compression jobs on the platform: creation rules, the API, device benchmarks requested and
merged, incompatible devices, a device going offline, cancel, and registration of the pick with
its lineage. The engine and the agent have their own tests (tests/workers/test_compression.py,
tests/platform/fleet/test_benchmark_agent.py); the whole loop runs in
tests/e2e/test_compression.py."""

from __future__ import annotations

import hashlib
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from sampan.compression import selectors, services
from sampan.compression.models import CompressionJob
from sampan.core import storage
from sampan.core.errors import ValidationFailed
from sampan.core.jobs import JobStatus, job_transition
from sampan.fleet.benchmarks import device_benchmark_report
from sampan.fleet.models import BenchmarkStatus, Device, DeviceBenchmark
from sampan.registry.services import model_version_register
from tests.platform.training.test_training_services import labelled_version, tiny_onnx
from workers.ml.compression import pick
from workers.ml.compression.graph import onnx_info
from workers.tasks import compression as task

pytestmark = pytest.mark.django_db

PREPROCESSING = {"size": [4, 4], "resize": "stretch", "mean": [0.5] * 3, "std": [0.5] * 3,
                 "colour_order": "RGB", "layout": "NCHW", "dtype": "float32"}


@pytest.fixture
def setup(project_with_roles: dict[str, Any], tmp_path: Path) -> dict[str, Any]:
    project = project_with_roles["project"]
    dataset_version = labelled_version(project, {"a": 12, "b": 12})
    onnx_path = tiny_onnx(tmp_path / "model.onnx")
    source = model_version_register(
        project=project, model_name="digits", task_type="image_classification",
        labels=["a", "b"], preprocessing=PREPROCESSING, onnx_path=onnx_path,
        input_shape=["N", 3, 4, 4], metrics={"val_accuracy": 0.9}, lineage={},
        onnx_info={"opset": 18, "ir_version": 9}, pretrained=False,
        dataset_version=dataset_version)
    device = _device(project, "camera-1", "1.32.0")
    return {**project_with_roles, "source": source, "device": device, "onnx": onnx_path,
            "dataset_version": dataset_version}


def _device(project: Any, name: str, onnxruntime: str) -> Device:
    return Device.objects.create(
        project=project, name=name, credential_sha256=hashlib.sha256(name.encode()).hexdigest(),
        runtime={"onnxruntime": onnxruntime, "providers": ["CPUExecutionProvider"]},
        last_seen_at=timezone.now())


def _api(user: Any) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def _running(setup: dict[str, Any], device: Device | None = None) -> CompressionJob:
    job = services.compression_job_create(project=setup["project"], source=setup["source"],
                                          device=device or setup["device"])
    assert job_transition(CompressionJob, job.pk, JobStatus.RUNNING)
    return job


def _candidate(key: str, onnx_path: Path, drop: float, **extra: Any) -> dict[str, Any]:
    return {"key": key, "method": "int8" if "int8" in key else "fp32", "status": "ready",
            "onnx_path": str(onnx_path), "preprocessing": PREPROCESSING, "accuracy": 0.9,
            "evaluated_on": "test", "val_accuracy": 0.9, "macro_f1": 0.9,
            "accuracy_drop_pt": drop, "within_budget": drop <= 1.0, "size_bytes": 100,
            "params": {"calibration_method": "minmax"}, "onnx": onnx_info(onnx_path),
            "latency": None, "compatible": True, "benchmark": None, **extra}


def test_create_refuses_bad_input_naming_the_field(setup: dict[str, Any]) -> None:
    create = services.compression_job_create
    cases = [({"budget_s": 60}, "budget_s"), ({"budget_s": 10**6}, "budget_s"),
             ({"accuracy_budget_pt": -0.5}, "accuracy_budget_pt"),
             ({"accuracy_budget_pt": 51}, "accuracy_budget_pt"),
             ({"methods": ["magic"]}, "methods"), ({"methods": []}, "methods")]
    for kwargs, field in cases:
        with pytest.raises(ValidationFailed) as error:
            create(project=setup["project"], source=setup["source"], device=None, **kwargs)
        assert error.value.field == field, kwargs
    other_device = _device(setup["other"], "elsewhere", "1.32.0")
    with pytest.raises(ValidationFailed) as error:
        create(project=setup["project"], source=setup["source"], device=other_device)
    assert error.value.field == "device_id"
    compressed = model_version_register(
        project=setup["project"], model_name="digits", task_type="image_classification",
        labels=["a", "b"], preprocessing=PREPROCESSING, onnx_path=setup["onnx"],
        input_shape=["N", 3, 4, 4], metrics={}, lineage={}, onnx_info={"opset": 18},
        pretrained=False, dataset_version=setup["dataset_version"], parent=setup["source"])
    with pytest.raises(ValidationFailed, match="itself compressed") as error:
        create(project=setup["project"], source=compressed, device=None)
    assert error.value.field == "source_model_version_id"
    job = create(project=setup["project"], source=setup["source"], device=None,
                 methods=["int8", "pruning", "int8"])
    assert job.methods == ["int8", "pruning"]
    job.delete()
    setup["source"].dataset_version = None
    with pytest.raises(ValidationFailed, match="no dataset version") as error:
        create(project=setup["project"], source=setup["source"], device=None)
    assert error.value.field == "source_model_version_id"
    assert not CompressionJob.objects.exists()


def test_api_create_list_get_cancel_and_roles(setup: dict[str, Any]) -> None:
    p = f"/api/v1/projects/{setup['project'].pk}"
    body = {"source_model_version_id": str(setup["source"].pk),
            "device_id": str(setup["device"].pk)}
    viewer = _api(setup["viewer"]).post(f"{p}/compression-jobs/", body, format="json")
    assert viewer.status_code == 403
    bad = _api(setup["editor"]).post(f"{p}/compression-jobs/", {**body, "budget_s": 5},
                                     format="json")
    assert bad.status_code == 400 and bad.json()["error"]["field"] == "budget_s"
    foreign = _api(setup["editor"]).post(
        f"{p}/compression-jobs/", {**body, "device_id": str(uuid.uuid4())}, format="json")
    assert foreign.status_code == 404
    created = _api(setup["editor"]).post(f"{p}/compression-jobs/", body, format="json")
    assert created.status_code == 201, created.content
    job = created.json()
    assert job["status"] == "QUEUED" and job["accuracy_budget_pt"] == 1.0
    assert job["budget_s"] == 600.0 and job["device_name"] == "camera-1"
    assert job["methods"] == ["int8", "resolution", "pruning", "fp16"]
    assert job["source"]["version"] == setup["source"].version
    listed = _api(setup["viewer"]).get(f"{p}/compression-jobs/?source={setup['source'].pk}")
    assert [j["id"] for j in listed.json()["results"]] == [job["id"]]
    outsider = _api(setup["outsider"]).get(f"{p}/compression-jobs/{job['id']}/")
    assert outsider.status_code == 404
    cancelled = _api(setup["editor"]).post(f"{p}/compression-jobs/{job['id']}/cancel/")
    assert cancelled.json()["status"] == "CANCELLED"
    again = _api(setup["editor"]).post(f"{p}/compression-jobs/{job['id']}/cancel/")
    assert again.status_code == 400 and again.json()["error"]["field"] == "status"


def test_device_measures_candidates_the_pick_is_registered_with_lineage(
        setup: dict[str, Any], tmp_path: Path) -> None:
    job = _running(setup)
    onnx_path = setup["onnx"]
    candidates = [_candidate("fp32", onnx_path, 0.0), _candidate("int8", onnx_path, 0.5),
                  _candidate("res64-int8", onnx_path, 3.0)]
    for candidate in candidates:
        assert services.compression_candidate_record(job_id=job.pk, candidate=candidate)
    inputs = [f"samples/a{i}.png" for i in range(3)]
    assert services.compression_benchmarks_request(job_id=job.pk, candidates=candidates,
                                                   inputs=inputs) == 3
    benchmarks = {b.candidate: b for b in DeviceBenchmark.objects.filter(compression_job_id=job.pk)}
    assert set(benchmarks) == {"fp32", "int8", "res64-int8"}
    assert all(b.status == BenchmarkStatus.PENDING and b.inputs == inputs and b.runs == 200
               for b in benchmarks.values())
    # the packages are signed like any model package, the candidate named in the manifest
    manifest = benchmarks["int8"].manifest
    assert manifest["signature"]["algorithm"] == "ed25519"
    assert manifest["model"]["version"] is None and manifest["lineage"]["candidate"] == "int8"
    for key, p50 in (("fp32", 4.0), ("int8", 1.5), ("res64-int8", 0.5)):
        device_benchmark_report(device=setup["device"], benchmark_id=benchmarks[key].pk,
                                status="succeeded", error=None,
                                result={"p50_ms": p50, "p99_ms": p50 * 2, "runs": 200})
    assert services.compression_benchmarks_sync(job_id=job.pk) == {"open": 0,
                                                                   "device_online": True}
    stored = selectors.compression_job_candidates(job_id=job.pk)
    assert [c["key"] for c in stored] == ["fp32", "int8", "res64-int8"]  # the order made
    assert {c["key"]: c["latency"]["p50_ms"] for c in stored} == {
        "fp32": 4.0, "int8": 1.5, "res64-int8": 0.5}
    key, reason = pick(stored)
    assert key == "int8", reason  # res64-int8 is faster but 3 points below: never picked
    version = services.compression_job_complete(job_id=job.pk, picked=key, reason=reason)
    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED and job.model_version == version
    assert job.picked == "int8" and "2.7x faster" in job.pick_reason
    assert version.parent == setup["source"] and version.version == setup["source"].version + 1
    lineage = version.manifest["lineage"]
    assert lineage["compressed_from"] == {"model_version_id": str(setup["source"].pk),
                                          "version": setup["source"].version}
    assert lineage["method"] == "int8" and lineage["params"]["calibration_method"] == "minmax"
    assert lineage["methods"] == ["int8"]
    assert lineage["compression_job_id"] == str(job.pk)
    assert version.metrics["device_latency"]["p50_ms"] == 1.5
    assert version.metrics["test_accuracy"] == 0.9 and version.metrics["accuracy_drop_pt"] == 0.5
    assert version.manifest["onnx"]["operators"]  # what devices are checked against
    shown = _api(setup["viewer"]).get(
        f"/api/v1/projects/{setup['project'].pk}/compression-jobs/{job.pk}/").json()
    assert [c["key"] for c in shown["candidates"]] == ["fp32", "int8", "res64-int8"]
    assert not any("onnx_path" in c for c in shown["candidates"])  # the worker's paths
    services.compression_cleanup(job_id=job.pk, out_dir=None)
    for benchmark in benchmarks.values():
        assert not storage.exists(f"{benchmark.package_dir}/model.onnx")
    assert storage.exists(f"{version.package_dir}/model.onnx")


def test_a_device_with_an_older_onnxruntime_gets_incompatible_never_picked(
        setup: dict[str, Any]) -> None:
    old = _device(setup["project"], "old-box", "1.16.3")
    job = _running(setup, old)
    candidates = [_candidate("fp32", setup["onnx"], 0.0), _candidate("int8", setup["onnx"], 0.0)]
    for candidate in candidates:
        services.compression_candidate_record(job_id=job.pk, candidate=candidate)
    services.compression_benchmarks_request(job_id=job.pk, candidates=candidates,
                                            inputs=["samples/a1.png"])
    stored = selectors.compression_job_candidates(job_id=job.pk)
    for candidate in stored:
        assert candidate["compatible"] is False and candidate["benchmark"]["status"] == \
            "incompatible"
        assert any("1.16.3" in reason for reason in candidate["incompatibilities"])
    assert services.compression_benchmarks_sync(job_id=job.pk)["open"] == 0
    assert pick(stored)[0] is None


def test_a_device_going_offline_ends_the_wait_with_what_was_measured(
        setup: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    job = _running(setup)
    candidates = [_candidate("fp32", setup["onnx"], 0.0), _candidate("int8", setup["onnx"], 0.0)]
    for candidate in candidates:
        services.compression_candidate_record(job_id=job.pk, candidate=candidate)
    inputs = services.CompressionInputs(
        job_id=str(job.pk), attempt=1, labels=["a", "b"], preprocessing=PREPROCESSING,
        teacher_onnx=setup["onnx"], checkpoint=None, out_dir=Path("."), budget_s=600,
        accuracy_budget_pt=1.0, methods=["int8"], seed=0, allow_flips=True,
        providers=["CPUExecutionProvider"], device_id=str(setup["device"].pk),
        benchmark_inputs=[("samples/a1.png", "unused")])
    original_request = services.compression_benchmarks_request

    def request_then_measure_one(**kwargs: Any) -> int:
        count = original_request(**kwargs)
        first = DeviceBenchmark.objects.get(compression_job_id=job.pk, candidate="fp32")
        device_benchmark_report(device=setup["device"], benchmark_id=first.pk,
                                status="succeeded", error=None, result={"p50_ms": 2.0})
        Device.objects.filter(pk=setup["device"].pk).update(
            last_seen_at=timezone.now() - timedelta(hours=1))  # then the device goes away
        return count

    monkeypatch.setattr(services, "compression_benchmarks_request", request_then_measure_one)
    monkeypatch.setattr(task, "OFFLINE_GRACE_S", 0.0)
    monkeypatch.setattr(task, "POLL_S", 0.01)
    task._measure_on_device(str(job.pk), inputs, candidates, deadline=10**12,
                            alive={"value": True})
    stored = {c["key"]: c for c in selectors.compression_job_candidates(job_id=job.pk)}
    assert stored["fp32"]["latency"] == {"p50_ms": 2.0}
    assert stored["int8"]["benchmark"]["status"] == "expired"
    assert "went offline" in stored["int8"]["benchmark"]["error"]
    assert stored["int8"]["latency"] is None


def test_the_deadline_ends_the_wait_and_names_what_was_not_measured(
        setup: dict[str, Any]) -> None:
    job = _running(setup)
    candidates = [_candidate("fp32", setup["onnx"], 0.0)]
    services.compression_candidate_record(job_id=job.pk, candidate=candidates[0])
    inputs = services.CompressionInputs(
        job_id=str(job.pk), attempt=1, labels=["a", "b"], preprocessing=PREPROCESSING,
        teacher_onnx=setup["onnx"], checkpoint=None, out_dir=Path("."), budget_s=600,
        accuracy_budget_pt=1.0, methods=["int8"], seed=0, allow_flips=True,
        providers=["CPUExecutionProvider"], device_id=str(setup["device"].pk),
        benchmark_inputs=[("samples/a1.png", "unused")])
    task._measure_on_device(str(job.pk), inputs, candidates, deadline=0.0, alive={"value": True})
    (stored,) = selectors.compression_job_candidates(job_id=job.pk)
    assert stored["benchmark"]["status"] == "expired"
    assert "time budget" in stored["benchmark"]["error"]


def test_cancel_closes_open_benchmarks_and_stops_the_worker(setup: dict[str, Any]) -> None:
    job = _running(setup)
    candidate = _candidate("fp32", setup["onnx"], 0.0)
    services.compression_candidate_record(job_id=job.pk, candidate=candidate)
    services.compression_benchmarks_request(job_id=job.pk, candidates=[candidate],
                                            inputs=["samples/a1.png"])
    services.compression_job_cancel(job=job)
    job.refresh_from_db()
    assert job.status == JobStatus.CANCELLED and job.model_version is None
    assert DeviceBenchmark.objects.get(compression_job_id=job.pk).status == "cancelled"
    (shown,) = selectors.compression_job_candidates(job_id=job.pk)
    assert shown["benchmark"]["status"] == "cancelled"  # not "waiting for the device"
    # the worker hears it at its next report, and registers nothing
    assert services.compression_candidate_record(job_id=job.pk, candidate=candidate) is False
    assert services.compression_progress(job_id=job.pk, progress={"phase": "int8"}) is False
    assert services.compression_job_complete(job_id=job.pk, picked="fp32", reason="") is None


def test_the_lineage_names_every_step_from_the_float_model() -> None:
    candidates = [{"key": "fp32", "method": "fp32", "parent": None},
                  {"key": "res64", "method": "distilled", "parent": "fp32"},
                  {"key": "res64-int8", "method": "int8", "parent": "res64"}]
    assert services._method_chain(candidates, "res64-int8") == ["distilled", "int8"]
    assert services._method_chain(candidates, "res64") == ["distilled"]


def test_a_project_may_have_only_so_many_compression_jobs_waiting(setup: dict[str, Any],
                                                                 settings: Any) -> None:
    from sampan.core.errors import QuotaExceeded

    settings.SAMPAN_MAX_QUEUED_JOBS_PER_PROJECT = 1
    services.compression_job_create(project=setup["project"], source=setup["source"],
                                    device=None)
    with pytest.raises(QuotaExceeded) as error:
        services.compression_job_create(project=setup["project"], source=setup["source"],
                                        device=None)
    assert "1 compression job waiting" in error.value.message
    assert error.value.details == {"limit": 1}
    assert CompressionJob.objects.count() == 1
