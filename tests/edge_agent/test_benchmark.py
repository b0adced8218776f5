"""The Benchmarker's edge cases with a fake device client (real child processes, real files),
the measuring child on its own, the serving window of the telemetry, and the heartbeat's
``runtime``."""

from __future__ import annotations

import json
import os
import stat
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import onnxruntime
import pytest

from edge_agent.agent import Agent
from edge_agent.benchmark import Benchmarker, measure, runtime_info
from edge_agent.client import DeviceClient, RetryableError, TerminalError
from edge_agent.deploy import Converger
from edge_agent.home import AgentConfig, AgentHome, AgentState
from edge_agent.telemetry import WINDOW, Telemetry
from sampan.devstack.stack import wait_until


class FakeClient:
    """The device API calls a Benchmarker makes, from memory; records every call."""

    def __init__(self, package: Any, images: list[bytes]) -> None:
        self.package, self.images = package, images
        self.reports: list[tuple[str, dict[str, Any]]] = []
        self.stored: dict[str, str] = {}
        self.calls: list[str] = []
        self.fail_downloads = 0  # the next N downloads raise RetryableError
        self.changed = threading.Condition()

    def report_benchmark(self, benchmark_id: str, body: dict[str, Any]) -> dict[str, Any]:
        with self.changed:
            self.reports.append((benchmark_id, body))
            self.changed.notify_all()
        stored = self.stored.get(benchmark_id, "pending")
        if stored in ("pending", "running"):
            stored = body["status"]
            self.stored[benchmark_id] = stored
        return {"status": stored}

    def get_json(self, url: str, what: str) -> dict[str, Any]:
        self.calls.append(url)
        return self.package.manifest

    def download(self, url: str, destination: Path, expected_size: int) -> None:
        self.calls.append(url)
        if self.fail_downloads:
            self.fail_downloads -= 1
            destination.write_bytes(self.package.model_bytes[:10])  # a partial file
            raise RetryableError("download interrupted at 10 bytes")
        destination.write_bytes(self.package.model_bytes)

    def get_bytes(self, url: str, what: str, max_bytes: int) -> bytes:
        self.calls.append(url)
        return self.images[int(url.rsplit("/", 1)[1])]

    def wait_for(self, predicate: Any, timeout_s: float = 60.0) -> Any:
        deadline = time.monotonic() + timeout_s
        with self.changed:
            while not (value := predicate()):
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise AssertionError(f"condition not met within {timeout_s} s")
                self.changed.wait(remaining)
            return value


def spec(package: Any, inputs: int = 2, **override: Any) -> dict[str, Any]:
    benchmark_id = str(uuid.uuid4())
    base = f"/api/device/v1/benchmarks/{benchmark_id}"
    return {"benchmark_id": benchmark_id, "manifest_url": f"{base}/manifest.json",
            "artifact_url": f"{base}/model.onnx", "sha256": package.sha256,
            "size": len(package.model_bytes),
            "inputs": [f"{base}/inputs/{n}" for n in range(inputs)], "warmup": 2, "runs": 20,
            **override}


@pytest.fixture
def agent(tmp_path: Path, signing_key: Any) -> Agent:
    home = AgentHome(tmp_path / "agent")
    config = AgentConfig("http://control-plane", "device-1", "cred", signing_key.public_b64, 0.1)
    home.save_config(config)
    return Agent(home, config)


@pytest.fixture
def make(agent: Agent, package_factory: Any, png: Any) -> Any:
    started: list[Benchmarker] = []

    def build(package: Any = None, **kwargs: Any) -> tuple[Benchmarker, FakeClient]:
        package = package or package_factory()
        client = FakeClient(package, [png((255, 0, 0)), png((0, 0, 255))])
        benchmarker = Benchmarker(agent, client, retry_delays_s=(0.01, 0.01), **kwargs)
        started.append(benchmarker)
        return benchmarker, client

    yield build
    for benchmarker in started:
        benchmarker.stop()


def fake_python(tmp_path: Path, body: str) -> str:
    """An executable standing in for the Python that runs the measuring child."""
    path = tmp_path / f"fake-python-{uuid.uuid4().hex[:8]}"
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return str(path)


def test_a_benchmark_is_measured_and_reported(make: Any, agent: Agent) -> None:
    benchmarker, client = make()
    request = spec(client.package)
    body = benchmarker.run(request)
    assert [(s["status"]) for _, s in client.reports] == ["running", "succeeded"]
    assert body is not None and body["status"] == "succeeded", body
    result = body["result"]
    assert result["runs"] == 20 and result["warmup"] == 2
    assert 0 < result["p50_ms"] <= result["p99_ms"]
    assert result["onnxruntime"] == onnxruntime.__version__
    assert (result["serving_requests"], result["serving_p99_ms"]) == (0, None)
    assert not (agent.home.benchmarks_dir / request["benchmark_id"]).exists()


def test_offered_benchmarks_run_once_each_on_the_benchmarkers_thread(make: Any) -> None:
    benchmarker, client = make()
    first, second = spec(client.package), spec(client.package)
    benchmarker.offer([first, second])
    benchmarker.offer([first, second])  # the next heartbeat lists them again
    client.wait_for(lambda: sum(1 for _, b in client.reports if b["status"] == "succeeded") == 2)
    benchmarker.offer([first, second, {"benchmark_id": "malformed"}, "junk"])
    benchmarker.offer(None)
    benchmarker.stop()
    assert [(i, b["status"]) for i, b in client.reports] == [
        (first["benchmark_id"], "running"), (first["benchmark_id"], "succeeded"),
        (second["benchmark_id"], "running"), (second["benchmark_id"], "succeeded")]


def test_a_benchmark_the_platform_no_longer_wants_is_not_fetched(make: Any) -> None:
    benchmarker, client = make()
    request = spec(client.package)
    client.stored[request["benchmark_id"]] = "expired"
    assert benchmarker.run(request) is None
    assert client.calls == []


def test_a_child_past_its_timeout_is_killed_and_failed(make: Any, tmp_path: Path) -> None:
    benchmarker, client = make(base_timeout_s=1.0, per_run_timeout_s=0.0,
                               python=fake_python(tmp_path, "exec sleep 60"))
    started = time.monotonic()
    body = benchmarker.run(spec(client.package))
    assert time.monotonic() - started < 30
    assert body == {"status": "failed", "result": None,
                    "error": "the benchmark did not finish within 1 s and was stopped"}


def test_stopping_the_agent_kills_the_child_and_leaves_the_benchmark_open(
        make: Any, tmp_path: Path) -> None:
    benchmarker, client = make(python=fake_python(tmp_path, "exec sleep 60"))
    benchmarker.offer([spec(client.package)])
    child = wait_until(lambda: benchmarker._child, timeout_s=30, what="the measuring child",
                       interval_s=0.01)
    started = time.monotonic()
    benchmarker.stop()
    assert time.monotonic() - started < 10
    assert child is not None and child.poll() is not None
    # not reported as failed: the platform keeps it open and the next start runs it again
    assert [body["status"] for _, body in client.reports] == ["running"]


def test_a_child_that_crashes_is_failed_with_its_stderr(make: Any, tmp_path: Path) -> None:
    benchmarker, client = make(python=fake_python(tmp_path, "echo 'Segmentation fault' >&2; "
                                                            "exit 139"))
    body = benchmarker.run(spec(client.package))
    assert body is not None and body["status"] == "failed"
    assert body["error"] == ("the benchmark process exited with status 139: Segmentation fault")


def test_a_bad_signature_or_another_model_fails_before_downloading(
        make: Any, package_factory: Any) -> None:
    foreign = package_factory()
    foreign.manifest["signature"]["key_id"] = "0" * 16
    benchmarker, client = make(foreign)
    body = benchmarker.run(spec(foreign))
    assert body is not None and body["status"] == "failed"
    assert body["error"].startswith("manifest signed by another key ('0000000000000000')")
    benchmarker, client = make()
    body = benchmarker.run(spec(client.package, sha256="f" * 64))
    assert body is not None and body["status"] == "failed"
    assert "is not the one the signed manifest lists" in body["error"]
    assert not any(url.endswith("model.onnx") for url in client.calls)


def test_an_interrupted_download_is_retried(make: Any) -> None:
    benchmarker, client = make()
    client.fail_downloads = 1
    body = benchmarker.run(spec(client.package))
    assert body is not None and body["status"] == "succeeded", body
    client.fail_downloads = 5
    body = benchmarker.run(spec(client.package))
    assert body == {"status": "failed", "result": None,
                    "error": "download interrupted at 10 bytes"}


def test_a_refused_report_is_not_fatal(make: Any, monkeypatch: Any) -> None:
    benchmarker, client = make()

    def refuse(benchmark_id: str, body: dict[str, Any]) -> dict[str, Any]:
        raise TerminalError("benchmark result: HTTP 404: not found")

    monkeypatch.setattr(client, "report_benchmark", refuse)
    assert benchmarker.run(spec(client.package)) is None


# --- the measuring child ----------------------------------------------------------------------


def package_dir(tmp_path: Path, package: Any, images: list[bytes]) -> Path:
    directory = tmp_path / "bench"
    (directory / "inputs").mkdir(parents=True)
    (directory / "manifest.json").write_text(json.dumps(package.manifest))
    (directory / "model.onnx").write_bytes(package.model_bytes)
    for index, data in enumerate(images):
        (directory / "inputs" / str(index)).write_bytes(data)
    return directory


def test_measure_times_the_real_prediction_path(tmp_path: Path, package_factory: Any,
                                                png: Any) -> None:
    directory = package_dir(tmp_path, package_factory(), [png((255, 0, 0)), png((0, 255, 0))])
    outcome = measure(directory, warmup=3, runs=30)
    assert outcome["status"] == "succeeded"
    result = outcome["result"]
    assert set(result) == {"p50_ms", "p99_ms", "mean_ms", "throughput_ips", "load_s",
                           "peak_memory_bytes", "runs", "warmup", "onnxruntime", "providers"}
    assert result["runs"] == 30 and result["peak_memory_bytes"] > 10_000_000


def test_measure_says_incompatible_or_failed(tmp_path: Path, package_factory: Any,
                                             signing_key: Any, png: Any) -> None:
    package = package_factory()
    package.manifest["min_onnxruntime"] = "99.0"
    outcome = measure(package_dir(tmp_path, package, [png((1, 2, 3))]), warmup=0, runs=1)
    assert outcome == {"status": "incompatible",
                       "error": f"model needs onnxruntime >= 99.0, have {onnxruntime.__version__}"}
    package = package_factory()
    directory = package_dir(tmp_path / "b", package, [png((1, 2, 3)), b"not an image"])
    assert measure(directory, warmup=0, runs=4) == {
        "status": "failed", "error": "input 1: unsupported format 'unknown'"}


def test_the_child_lowers_its_priority(tmp_path: Path, package_factory: Any, png: Any) -> None:
    import subprocess

    directory = package_dir(tmp_path, package_factory(), [png((9, 9, 9))])
    # the child's niceness is that of its parent + 10: read through a tiny stand-in measure
    code = ("import os, sys, edge_agent.benchmark as b; "
            "b.measure = lambda d, w, r: {'status': 'succeeded', 'result': {'nice': os.nice(0)}};"
            " sys.exit(b.main(sys.argv[1:]))")
    done = subprocess.run([sys.executable, "-c", code, str(directory)], capture_output=True,
                          text=True, timeout=60, check=True)
    assert json.loads(done.stdout.strip())["result"]["nice"] == os.nice(0) + 10


# --- telemetry window and heartbeat runtime ---------------------------------------------------


def test_latencies_since_a_mark() -> None:
    telemetry = Telemetry()
    telemetry.record_request("ok", 0.001)
    mark = telemetry.mark()
    assert telemetry.latencies_since(mark) == []
    telemetry.record_request("ok", 0.002)
    telemetry.record_request("bad_request", 0.5)  # not served: not counted
    telemetry.record_request("ok", 0.004)
    assert telemetry.latencies_since(mark) == [2.0, 4.0]
    for _ in range(WINDOW + 10):
        telemetry.record_request("ok", 0.003)
    assert len(telemetry.latencies_since(mark)) == WINDOW  # the newest WINDOW of them


def test_heartbeats_carry_the_runtime_and_hand_benchmarks_over(
        tmp_path: Path, control_plane: Any, signing_key: Any) -> None:
    credential = f"cred-{uuid.uuid4().hex}"
    control_plane.credentials[credential] = "device-1"
    home = AgentHome(tmp_path / "agent")
    config = AgentConfig(control_plane.url, "device-1", credential, signing_key.public_b64, 0.1)
    agent = Agent(home, config)
    client = DeviceClient(config.server_url, credential)

    class Recorder:
        offered: list[Any] = []

        def offer(self, benchmarks: Any) -> None:
            self.offered.append(benchmarks)

    recorder = Recorder()
    try:
        Converger(agent, client, AgentState(), recorder).run_once()  # type: ignore[arg-type]
    finally:
        client.close()
    assert control_plane.heartbeats[-1]["runtime"] == runtime_info() == {
        "onnxruntime": onnxruntime.__version__,
        "providers": onnxruntime.get_available_providers()}
    assert recorder.offered == [None]  # this control plane lists none
