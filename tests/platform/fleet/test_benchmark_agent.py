"""A real ``sampan-agent`` process runs the benchmarks the platform asks of it (live server):
measured figures land in the database, serving keeps answering meanwhile, a package with a bad
signature fails, and a model the device's onnxruntime cannot load is incompatible."""

from __future__ import annotations

import io
import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime
import pytest
import requests
from PIL import Image

from sampan.core import storage
from sampan.devstack.stack import wait_until
from sampan.fleet import benchmarks, services
from sampan.fleet.models import BENCHMARK_OPEN, Deployment, DeploymentState, Device, DeviceBenchmark
from sampan.registry.services import model_version_register
from tests.edge_agent.conftest import LABELS, SIZE, build_classifier
from tests.edge_agent.test_agent_process import enroll, free_port, running_agent

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

PREPROCESSING = {"size": [SIZE, SIZE], "resize": "stretch", "mean": [0.5, 0.5, 0.5],
                 "std": [0.5, 0.5, 0.5], "colour_order": "RGB", "layout": "NCHW",
                 "dtype": "float32"}


def candidate_manifest(**overrides: Any) -> dict[str, Any]:
    return {"schema": "sampan.model-package/1",
            "model": {"id": "candidate", "name": "colours-small", "version": 0,
                      "version_id": "candidate-1"},
            "task": "image_classification", "labels": LABELS, "preprocessing": PREPROCESSING,
            "inputs": [{"name": "input", "shape": ["N", 3, SIZE, SIZE], "dtype": "float32"}],
            "outputs": [{"name": "probabilities", "shape": ["N", 3], "dtype": "float32"}],
            "onnx": {"opset": 18, "ir_version": 10}, "min_onnxruntime": "1.17.0", **overrides}


def photo(seed: int) -> bytes:
    """A 640 x 480 JPEG of noise: a few ms to decode, as a camera frame would be."""
    pixels = np.random.default_rng(seed).integers(0, 255, (480, 640, 3), dtype=np.uint8)
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, "JPEG", quality=90)
    return buffer.getvalue()


def png(colour: tuple[int, int, int]) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (32, 24), colour).save(buffer, "PNG")
    return buffer.getvalue()


@pytest.fixture
def agent(live_server: Any, settings: Any, project: Any, owner: Any,
          tmp_path: Path) -> Any:
    """An enrolled agent process serving a deployed model; yields (device, base URL)."""
    settings.SAMPAN_DEVICE_HEARTBEAT_INTERVAL_S = 0.3
    issued = services.enrollment_token_create(project=project, user=owner,
                                              expires_in=timedelta(minutes=5))
    home, port = tmp_path / "agent", free_port()
    result = enroll(live_server.url, home, issued.secret)
    assert result.returncode == 0, result.stderr
    device = Device.objects.get(pk=json.loads((home / "agent.json").read_text())["device_id"])
    onnx = tmp_path / "serving.onnx"
    onnx.write_bytes(build_classifier())
    version = model_version_register(
        project=project, model_name="colours", task_type="image_classification",
        labels=LABELS, preprocessing=PREPROCESSING, onnx_path=onnx,
        input_shape=["N", 3, SIZE, SIZE], metrics={}, lineage={},
        onnx_info={"opset": 18, "ir_version": 10}, pretrained=False)
    [deployment] = services.deployment_create(project=project, user=owner,
                                              model_version_id=version.pk,
                                              device_ids=[device.pk])
    with running_agent(home, port, tmp_path / "agent.log"):
        wait_until(lambda: Deployment.objects.get(pk=deployment.pk).state
                   == DeploymentState.RUNNING, timeout_s=60, what="the deployment to run")
        device.refresh_from_db()
        yield device, f"http://127.0.0.1:{port}", home


def store_package(project: Any, tmp_path: Path, **overrides: Any) -> benchmarks.BenchmarkPackage:
    onnx = tmp_path / "candidate.onnx"
    onnx.write_bytes(build_classifier(gain=5.0))
    return benchmarks.benchmark_package_store(project=project, onnx_path=onnx,
                                              manifest=candidate_manifest(**overrides))


def finished(benchmark: DeviceBenchmark) -> DeviceBenchmark | None:
    benchmark.refresh_from_db()
    return None if benchmark.status in BENCHMARK_OPEN else benchmark


def test_the_agent_measures_a_candidate_while_serving(agent: Any, project: Any,
                                                      tmp_path: Path) -> None:
    device, base, home = agent
    assert device.runtime == {"onnxruntime": onnxruntime.__version__,
                              "providers": onnxruntime.get_available_providers()}
    inputs = [storage.save_bytes(f"benchmark-inputs/{n}.jpg", photo(n)) for n in range(3)]
    pkg = store_package(project, tmp_path)
    benchmark = benchmarks.device_benchmark_create(
        device=device, package_dir=pkg.package_dir, manifest=pkg.manifest,
        model_sha256=pkg.model_sha256, model_size=pkg.model_size, inputs=inputs,
        warmup=5, runs=400, candidate="small")

    wait_until(lambda: finished(benchmark) or benchmark.status == "running", timeout_s=30,
               what="the agent to start the benchmark")
    # the current model keeps serving throughout
    answers = []
    while finished(benchmark) is None:
        reply = requests.post(f"{base}/v1/predict", data=png((0, 0, 255)), timeout=10)
        answers.append((reply.status_code, reply.json()["predictions"][0]["label"]))
        assert len(answers) < 100_000
    assert answers and set(answers) == {(200, "blue")}

    assert benchmark.status == "succeeded", benchmark.error
    result = benchmark.result
    assert result["runs"] == 400 and result["warmup"] == 5
    assert 0 < result["p50_ms"] <= result["p99_ms"]
    assert result["p50_ms"] > 1.0  # decoding a 640 x 480 JPEG is part of every run
    assert result["mean_ms"] > 0 and result["throughput_ips"] > 0 and result["load_s"] > 0
    assert result["throughput_ips"] == pytest.approx(1000.0 / result["mean_ms"], rel=0.2)
    assert result["peak_memory_bytes"] > 20_000_000
    assert result["onnxruntime"] == onnxruntime.__version__
    assert result["providers"] == onnxruntime.get_available_providers()
    assert result["serving_requests"] >= 1 and result["serving_p99_ms"] > 0
    assert benchmark.delivered_at is not None and benchmark.finished_at is not None
    assert not (home / "benchmarks" / str(benchmark.pk)).exists()  # the folder is removed


def test_a_bad_signature_fails_and_a_model_the_runtime_cannot_load_is_incompatible(
        agent: Any, project: Any, tmp_path: Path) -> None:
    device, base, home = agent
    inputs = [storage.save_bytes("benchmark-inputs/red.png", png((255, 0, 0)))]

    tampered = store_package(project, tmp_path)
    manifest = {**tampered.manifest, "labels": ["cat", "dog", "bird"]}  # signature now wrong
    storage.save_bytes(f"{tampered.package_dir}/manifest.json", json.dumps(manifest).encode())
    bad = benchmarks.device_benchmark_create(
        device=device, package_dir=tampered.package_dir, manifest=manifest,
        model_sha256=tampered.model_sha256, model_size=tampered.model_size, inputs=inputs)

    # The platform refuses what it knows the device cannot load: never delivered.
    refused_pkg = store_package(project, tmp_path, min_onnxruntime="99.0")
    refused = benchmarks.device_benchmark_create(
        device=device, package_dir=refused_pkg.package_dir, manifest=refused_pkg.manifest,
        model_sha256=refused_pkg.model_sha256, model_size=refused_pkg.model_size, inputs=inputs)
    assert refused.status == "incompatible"
    assert refused.error == (f"the model needs onnxruntime >= 99.0; the device has "
                             f"{onnxruntime.__version__}")
    # The same package as a device meets it when the platform did not know (a runtime it never
    # reported): created without the platform's check, the agent finds out at load time.
    unknown = DeviceBenchmark.objects.create(
        project=project, device=device, package_dir=refused_pkg.package_dir,
        manifest=refused_pkg.manifest, model_sha256=refused_pkg.model_sha256,
        model_size=refused_pkg.model_size, inputs=inputs, warmup=1, runs=3)

    wait_until(lambda: finished(bad) and finished(unknown), timeout_s=60,
               what="both benchmarks to finish")
    assert (bad.status, bad.error, bad.result) == ("failed", "bad signature", {})
    assert unknown.status == "incompatible"
    assert unknown.error == f"model needs onnxruntime >= 99.0, have {onnxruntime.__version__}"
    refused.refresh_from_db()
    assert refused.delivered_at is None
    reply = requests.post(f"{base}/v1/predict", data=png((0, 255, 0)), timeout=10).json()
    assert reply["predictions"][0]["label"] == "green"  # serving as before
    assert not any((home / "benchmarks").iterdir())
