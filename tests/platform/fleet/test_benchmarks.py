"""On-device benchmarks: services, the device API (heartbeat listing, manifest, model, inputs,
result), the project-side list, the device's reported runtime, and deployments refused to a
device that cannot load the model."""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from rest_framework.test import APIClient

from edge_agent.runtime import verify_manifest
from sampan.core import storage
from sampan.core.errors import NotFound, ValidationFailed
from sampan.fleet import benchmarks
from sampan.fleet.models import BenchmarkStatus, Deployment, DeploymentState, DeviceBenchmark
from sampan.registry.signing import trusted_keys

MODEL = bytes(range(256)) * 40  # 10240 bytes; the API never loads it
R = "/api/device/v1/benchmarks"
RESULT = {"p50_ms": 1.5, "p99_ms": 3.25, "mean_ms": 1.75, "throughput_ips": 520.0,
          "load_s": 0.05, "peak_memory_bytes": 80_000_000, "runs": 50, "warmup": 5,
          "serving_p99_ms": None, "serving_requests": 0, "onnxruntime": "1.32.0",
          "providers": ["CPUExecutionProvider"]}


def package_manifest(**overrides: Any) -> dict[str, Any]:
    return {"schema": "sampan.model-package/1",
            "model": {"id": "candidate", "name": "digits-int8", "version": 0,
                      "version_id": str(uuid.uuid4())},
            "task": "image_classification", "labels": ["0", "1"],
            "onnx": {"opset": 18, "ir_version": 10}, "min_onnxruntime": "1.17.0", **overrides}


@pytest.fixture
def package(project: Any, tmp_path: Path) -> Callable[..., benchmarks.BenchmarkPackage]:
    def make(**overrides: Any) -> benchmarks.BenchmarkPackage:
        onnx = tmp_path / f"{uuid.uuid4()}.onnx"
        onnx.write_bytes(MODEL)
        return benchmarks.benchmark_package_store(project=project, onnx_path=onnx,
                                                  manifest=package_manifest(**overrides))
    return make


@pytest.fixture
def inputs() -> list[str]:
    return [storage.save_bytes(f"benchmark-inputs/{n}.png", f"image-{n}".encode())
            for n in range(3)]


@pytest.fixture
def request_benchmark(package: Any, inputs: list[str]) -> Callable[..., DeviceBenchmark]:
    def make(device: Any, pkg: benchmarks.BenchmarkPackage | None = None,
             **kwargs: Any) -> DeviceBenchmark:
        pkg = pkg or package()
        values = {"package_dir": pkg.package_dir, "manifest": pkg.manifest,
                  "model_sha256": pkg.model_sha256, "model_size": pkg.model_size,
                  "inputs": inputs, **kwargs}
        return benchmarks.device_benchmark_create(device=device, **values)
    return make


def post_result(client: APIClient, benchmark_id: Any, **body: Any) -> Any:
    return client.post(f"{R}/{benchmark_id}/result", body, format="json")


def test_a_stored_package_is_signed_like_a_model_version(package: Any) -> None:
    pkg = package()
    assert pkg.model_sha256 == hashlib.sha256(MODEL).hexdigest()
    assert pkg.manifest["files"] == {"model.onnx": {"sha256": pkg.model_sha256, "size": 10240}}
    verify_manifest(pkg.manifest, [key.public_key for key in trusted_keys()])
    assert storage.read_bytes(f"{pkg.package_dir}/model.onnx") == MODEL
    benchmarks.benchmark_package_delete(package_dir=pkg.package_dir)
    assert not storage.exists(f"{pkg.package_dir}/model.onnx")


def test_heartbeat_lists_open_benchmarks_oldest_first_and_at_most_four(
        enrolled: Any, heartbeat: Any, request_benchmark: Any, package: Any) -> None:
    device, client = enrolled()
    other, other_client = enrolled("other")
    pkg = package()
    created = [request_benchmark(device, pkg, runs=10 + n, warmup=n, candidate=f"c{n}")
               for n in range(5)]
    request_benchmark(other, pkg)
    listed = heartbeat(client).json()["benchmarks"]
    assert [b["benchmark_id"] for b in listed] == [str(b.pk) for b in created[:4]]
    first = listed[0]
    base = f"http://testserver{R}/{created[0].pk}"
    assert first == {"benchmark_id": str(created[0].pk), "manifest_url": f"{base}/manifest.json",
                     "artifact_url": f"{base}/model.onnx", "sha256": pkg.model_sha256,
                     "size": 10240, "inputs": [f"{base}/inputs/{n}" for n in range(3)],
                     "warmup": 0, "runs": 10}
    # expired and cancelled ones are not listed any more
    benchmarks.device_benchmark_expire(benchmark=created[0], reason="device offline")
    benchmarks.device_benchmark_cancel(benchmark=created[1])
    listed = heartbeat(client).json()["benchmarks"]
    assert [b["benchmark_id"] for b in listed] == [str(b.pk) for b in created[2:]]
    assert len(heartbeat(other_client).json()["benchmarks"]) == 1


def test_the_device_downloads_manifest_model_and_inputs(
        enrolled: Any, request_benchmark: Any) -> None:
    device, client = enrolled()
    benchmark = request_benchmark(device)
    manifest = client.get(f"{R}/{benchmark.pk}/manifest.json")
    assert manifest.status_code == 200
    assert manifest.json() == benchmark.manifest
    model = client.get(f"{R}/{benchmark.pk}/model.onnx")
    assert model.status_code == 200 and b"".join(model.streaming_content) == MODEL
    part = client.get(f"{R}/{benchmark.pk}/model.onnx", HTTP_RANGE="bytes=10000-")
    assert part.status_code == 206
    assert part["Content-Range"] == "bytes 10000-10239/10240"
    assert b"".join(part.streaming_content) == MODEL[10000:]
    assert part["ETag"] == f'"{benchmark.model_sha256}"'
    image = client.get(f"{R}/{benchmark.pk}/inputs/2")
    assert image.status_code == 200 and image.content == b"image-2"
    assert client.get(f"{R}/{benchmark.pk}/inputs/3").status_code == 404


def test_another_device_gets_404_for_everything(enrolled: Any, request_benchmark: Any) -> None:
    device, _ = enrolled()
    _, stranger = enrolled("stranger")
    benchmark = request_benchmark(device)
    for path in ("manifest.json", "model.onnx", "inputs/0"):
        assert stranger.get(f"{R}/{benchmark.pk}/{path}").status_code == 404
    response = post_result(stranger, benchmark.pk, status="failed", error="forged")
    assert response.status_code == 404
    benchmark.refresh_from_db()
    assert (benchmark.status, benchmark.error) == ("pending", "")
    assert APIClient().get(f"{R}/{benchmark.pk}/manifest.json").status_code == 401


def test_files_of_a_closed_benchmark_are_gone(enrolled: Any, request_benchmark: Any) -> None:
    device, client = enrolled()
    expired = benchmarks.device_benchmark_expire(benchmark=request_benchmark(device),
                                                 reason="took too long")
    assert (expired.status, expired.error) == ("expired", "took too long")
    assert expired.finished_at is not None
    for path in ("manifest.json", "model.onnx", "inputs/0"):
        assert client.get(f"{R}/{expired.pk}/{path}").status_code == 404


def test_running_then_succeeded_stores_the_figures(
        owner_api: APIClient, project: Any, enrolled: Any, heartbeat: Any,
        request_benchmark: Any) -> None:
    device, client = enrolled()
    benchmark = request_benchmark(device, candidate="int8-static",
                                  compression_job_id="6b1e3c36-5d0e-4d3a-9a68-5a6a4b0c7f11")
    response = post_result(client, benchmark.pk, status="running", error=None, result=None)
    assert response.status_code == 200 and response.json() == {"status": "running"}
    benchmark.refresh_from_db()
    assert benchmark.status == "running" and benchmark.delivered_at is not None
    delivered = benchmark.delivered_at
    assert post_result(client, benchmark.pk, status="running").json() == {"status": "running"}
    assert [b["benchmark_id"] for b in heartbeat(client).json()["benchmarks"]] == [
        str(benchmark.pk)]  # still listed while running

    response = post_result(client, benchmark.pk, status="succeeded", error=None, result=RESULT)
    assert response.json() == {"status": "succeeded"}
    benchmark.refresh_from_db()
    assert benchmark.status == "succeeded" and benchmark.result == RESULT
    assert benchmark.delivered_at == delivered and benchmark.finished_at is not None
    assert heartbeat(client).json()["benchmarks"] == []
    # a late report changes nothing
    assert post_result(client, benchmark.pk, status="failed", error="late").json() == {
        "status": "succeeded"}
    assert benchmarks.device_benchmark_cancel(benchmark=benchmark).status == "succeeded"

    listed = owner_api.get(f"/api/v1/projects/{project.pk}/devices/{device.pk}/benchmarks/")
    assert listed.status_code == 200
    (row,) = listed.json()
    assert row["id"] == str(benchmark.pk) and row["status"] == "succeeded"
    assert row["candidate"] == "int8-static" and row["result"]["p99_ms"] == 3.25
    assert row["compression_job_id"] == "6b1e3c36-5d0e-4d3a-9a68-5a6a4b0c7f11"
    assert (row["runs"], row["warmup"], row["model_size"]) == (50, 5, 10240)


def test_a_terminal_report_straight_from_pending(enrolled: Any, request_benchmark: Any) -> None:
    device, client = enrolled()
    benchmark = request_benchmark(device)
    response = post_result(client, benchmark.pk, status="incompatible",
                           error="model needs onnxruntime >= 99.0, have 1.32.0")
    assert response.json() == {"status": "incompatible"}
    benchmark.refresh_from_db()
    assert benchmark.error == "model needs onnxruntime >= 99.0, have 1.32.0"
    assert benchmark.delivered_at is not None and benchmark.finished_at is not None


def test_a_report_for_an_expired_or_cancelled_benchmark_is_ignored(
        enrolled: Any, request_benchmark: Any) -> None:
    device, client = enrolled()
    expired = benchmarks.device_benchmark_expire(benchmark=request_benchmark(device), reason="x")
    cancelled = benchmarks.device_benchmark_cancel(benchmark=request_benchmark(device))
    assert cancelled.status == "cancelled"
    for row, status in ((expired, "expired"), (cancelled, "cancelled")):
        response = post_result(client, row.pk, status="succeeded", result=RESULT)
        assert response.status_code == 200 and response.json() == {"status": status}
        row.refresh_from_db()
        assert row.status == status and row.result == {}


def test_wrongly_typed_reports_name_the_field(enrolled: Any, request_benchmark: Any) -> None:
    device, client = enrolled()
    benchmark = request_benchmark(device)
    cases = [({"status": "done"}, "status"),
             ({"status": "succeeded", "result": {**RESULT, "p50_ms": "fast"}}, "result"),
             ({"status": "succeeded", "result": {**RESULT, "runs": -1}}, "result"),
             ({"status": "succeeded", "result": {**RESULT, "providers": "CPU"}}, "result"),
             ({"status": "succeeded", "result": {"runs": 50}}, "result"),
             ({"status": "failed", "error": 12}, "error")]
    for body, field in cases:
        response = post_result(client, benchmark.pk, **body)
        assert response.status_code == 400, (body, response.content)
        assert response.json()["error"]["field"] == field, body
    nested = '{"status": "failed", "result": ' + "[" * 30_000 + "]" * 30_000 + "}"
    response = client.post(f"{R}/{benchmark.pk}/result", nested, content_type="application/json")
    assert response.status_code == 400 and "nested too deeply" in response.content.decode()
    huge = '{"status": "failed", "error": "' + "x" * (1 << 20) + '"}'  # refused unparsed
    response = client.post(f"{R}/{benchmark.pk}/result", huge, content_type="application/json")
    assert response.status_code == 413 and response.json()["error"]["code"] == "too_large"
    benchmark.refresh_from_db()
    assert benchmark.status == "pending"
    assert post_result(client, uuid.uuid4(), status="running").status_code == 404


def test_create_validates_and_names_the_field(enrolled: Any, request_benchmark: Any,
                                              package: Any) -> None:
    device, _ = enrolled()
    pkg = package()
    cases = [({"runs": 0}, "runs"), ({"runs": 1001}, "runs"), ({"runs": True}, "runs"),
             ({"warmup": -1}, "warmup"), ({"warmup": 101}, "warmup"),
             ({"inputs": []}, "inputs"), ({"inputs": [f"i/{n}" for n in range(17)]}, "inputs"),
             ({"model_sha256": "0" * 64}, "model_sha256"),
             ({"model_sha256": "not hex"}, "model_sha256"),
             ({"manifest": {"files": {}}}, "manifest"),
             ({"package_dir": ""}, "package_dir"),
             ({"compression_job_id": "job-7"}, "compression_job_id")]
    for kwargs, field in cases:
        with pytest.raises(ValidationFailed) as raised:
            request_benchmark(device, pkg, **kwargs)
        assert raised.value.field == field, kwargs
    assert not DeviceBenchmark.objects.exists()
    ok = request_benchmark(device, pkg, runs=1000, warmup=100,
                           inputs=[f"i/{n}" for n in range(16)])
    assert ok.status == "pending"


def test_the_heartbeat_runtime_is_stored_and_shown(owner_api: APIClient, project: Any,
                                                   enrolled: Any, heartbeat: Any) -> None:
    device, client = enrolled()
    url = f"/api/v1/projects/{project.pk}/devices/{device.pk}/"
    assert owner_api.get(url).json()["runtime"] == {}  # enrolled without info.onnxruntime
    runtime = {"onnxruntime": "1.20.1", "providers": ["CPUExecutionProvider"],
               "cpu_features": ["neon", "dotprod"]}
    assert heartbeat(client, runtime=runtime).status_code == 200
    device.refresh_from_db()
    assert device.runtime == runtime
    assert owner_api.get(url).json()["runtime"] == runtime
    assert heartbeat(client).status_code == 200  # a heartbeat without runtime keeps it
    device.refresh_from_db()
    assert device.runtime == runtime
    response = heartbeat(client, runtime={"onnxruntime": 1.2, "providers": "CPU"})
    assert response.status_code == 400 and response.json()["error"]["field"] == "runtime"


def test_enrollment_info_is_the_runtime_until_a_heartbeat_reports_one(
        project: Any, enrolled: Any, heartbeat: Any) -> None:
    device, client = enrolled()
    device.info = {"onnxruntime": "1.16.0"}
    device.save()
    assert device.known_runtime() == {"onnxruntime": "1.16.0"}
    heartbeat(client, runtime={"onnxruntime": "1.20.0", "providers": []})
    device.refresh_from_db()
    assert device.known_runtime()["onnxruntime"] == "1.20.0"


def test_a_device_that_cannot_load_the_model_gets_an_incompatible_benchmark(
        enrolled: Any, heartbeat: Any, request_benchmark: Any, package: Any) -> None:
    device, client = enrolled()
    heartbeat(client, runtime={"onnxruntime": "1.16.3", "providers": ["CPUExecutionProvider"]})
    device.refresh_from_db()
    benchmark = request_benchmark(device, package(onnx={"opset": 21, "ir_version": 10}))
    assert benchmark.status == BenchmarkStatus.INCOMPATIBLE
    assert benchmark.finished_at is not None
    assert "the model needs onnxruntime >= 1.17.0; the device has 1.16.3" in benchmark.error
    assert "ONNX opset 21" in benchmark.error and "IR version 10" in benchmark.error
    assert heartbeat(client).json()["benchmarks"] == []
    assert client.get(f"{R}/{benchmark.pk}/model.onnx").status_code == 404


def test_benchmark_get_for_the_requester(enrolled: Any, request_benchmark: Any) -> None:
    from sampan.fleet.selectors import device_benchmark_get

    device, _ = enrolled()
    benchmark = request_benchmark(device)
    assert device_benchmark_get(benchmark_id=benchmark.pk).device == device
    with pytest.raises(NotFound):
        device_benchmark_get(benchmark_id=uuid.uuid4())


# --- deployments refused to a device that cannot load the model -------------------------------


def deploy(owner_api: APIClient, project: Any, version: Any, *devices: Any) -> Any:
    return owner_api.post(f"/api/v1/projects/{project.pk}/deployments/",
                          {"model_version_id": str(version.pk),
                           "device_ids": [str(d.pk) for d in devices]}, format="json")


def test_a_deployment_to_a_device_with_an_older_onnxruntime_is_refused(
        owner_api: APIClient, project: Any, model_version: Any, enrolled: Any,
        heartbeat: Any) -> None:
    old, old_client = enrolled("old-camera")
    new, new_client = enrolled("new-camera")
    heartbeat(old_client, runtime={"onnxruntime": "1.16.3", "providers": ["CPUExecutionProvider"]})
    heartbeat(new_client, runtime={"onnxruntime": "1.20.1", "providers": ["CPUExecutionProvider"]})
    first = model_version(b"runs everywhere")
    current = deploy(owner_api, project, first, old, new)
    assert current.status_code == 201, current.content
    current_ids = {d["device_id"]: d["id"] for d in current.json()}

    demanding = model_version(b"needs a newer runtime")
    demanding.manifest = {**demanding.manifest, "min_onnxruntime": "1.17.0",
                          "onnx": {"opset": 21, "ir_version": 10}}
    demanding.save()
    response = deploy(owner_api, project, demanding, old, new)
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["field"] == "device_ids"
    assert error["message"].startswith("model version 2 cannot run on 1 device(s): old-camera: ")
    assert "the model needs onnxruntime >= 1.17.0; the device has 1.16.3" in error["message"]
    assert list(error["details"]["incompatible"]) == [str(old.pk)]
    # nothing written: both keep their current deployment
    active = Deployment.objects.exclude(state=DeploymentState.SUPERSEDED)
    assert {str(d.device_id): str(d.pk) for d in active} == current_ids
    assert heartbeat(old_client).json()["desired"]["model_version_id"] == str(first.pk)

    assert deploy(owner_api, project, demanding, new).status_code == 201  # new one can
    # a device that never reported a runtime is unknown, and allowed
    unknown, _ = enrolled("unknown")
    assert deploy(owner_api, project, demanding, unknown).status_code == 201
