"""The real agent process (``python -m edge_agent.cli``) against the fake control plane."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import requests

REPO = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def agent_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "edge_agent.cli", *args]


@contextmanager
def running_agent(home: Path, port: int, log_path: Path) -> Iterator[subprocess.Popen]:
    with open(log_path, "ab") as log:
        process = subprocess.Popen(
            agent_command("run", "--home", str(home), "--port", str(port)),
            cwd=REPO,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        yield process
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            assert process.wait(timeout=20) == 0, log_path.read_text()
        finally:
            if process.poll() is None:
                process.kill()


def enroll(url: str, home: Path, token: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        agent_command(
            "enroll",
            "--url",
            url,
            "--token",
            token,
            "--name",
            "cam-1",
            "--home",
            str(home),
            "--force",
        ),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_enroll_writes_the_credential_once(tmp_path: Path, control_plane, signing_key) -> None:
    home = tmp_path / "agent"
    result = enroll(control_plane.url, home, "enroll-token-1")
    assert result.returncode == 0, result.stderr

    config = json.loads((home / "agent.json").read_text())
    assert control_plane.credentials[config["credential"]] == config["device_id"]
    assert config["signing_public_key"] == signing_key.public_b64
    assert config["server_url"] == control_plane.url
    assert (home / "agent.json").stat().st_mode & 0o777 == 0o600
    (enrollment,) = control_plane.enrollments
    assert enrollment["token"] == "enroll-token-1"
    assert enrollment["name"] == "cam-1"
    assert enrollment["info"]["onnxruntime"] == "1.32.0"
    assert control_plane.heartbeats == []  # nothing is sent before `run`

    again = enroll(control_plane.url, home, "enroll-token-1")  # one-time token
    assert again.returncode == 1
    assert "invalid or used enrollment token" in again.stderr
    assert json.loads((home / "agent.json").read_text()) == config  # kept as it was


def test_agent_converges_serves_and_survives_a_bad_deployment(
    tmp_path: Path, control_plane, package_factory, png
) -> None:
    home, port, log_path = tmp_path / "agent", free_port(), tmp_path / "agent.log"
    assert enroll(control_plane.url, home, "enroll-token-1").returncode == 0
    base = f"http://127.0.0.1:{port}"
    good = package_factory()
    control_plane.deploy(good, "d1")

    with running_agent(home, port, log_path):
        # The HTTP socket is bound before the first heartbeat, so once "running" is reported
        # the API accepts connections.
        control_plane.wait_for(lambda: ("running", None) in control_plane.deployment_states("d1"))
        # each step in order (a state may repeat: heartbeats go on while a step runs)
        states = [s for s, _ in control_plane.deployment_states("d1")]
        assert [s for i, s in enumerate(states) if i == 0 or states[i - 1] != s][:3] == [
            "downloading",
            "verifying",
            "running",
        ]

        reply = requests.post(f"{base}/v1/predict?top_k=2", data=png((255, 0, 0)), timeout=10)
        assert reply.status_code == 200
        body = reply.json()
        assert body["model_version_id"] == good.version_id
        assert [p["label"] for p in body["predictions"]] == ["red", "green"]
        assert body["predictions"][0]["index"] == 0
        assert body["predictions"][0]["probability"] > 0.99
        assert body["latency_ms"] > 0

        bad = requests.post(f"{base}/v1/predict", data=b"not an image", timeout=10)
        assert bad.status_code == 400
        assert bad.json() == {"error": "unsupported format 'unknown'"}

        health = requests.get(f"{base}/healthz", timeout=10).json()
        assert health == {"status": "ok", "model_version_id": good.version_id}
        metrics = requests.get(f"{base}/metrics", timeout=10)
        assert metrics.headers["Content-Type"].startswith("text/plain")
        assert 'sampan_agent_requests_total{outcome="ok"} 1.0' in metrics.text
        assert 'sampan_agent_requests_total{outcome="bad_request"} 1.0' in metrics.text
        assert (
            f'sampan_agent_model_info{{model_version_id="{good.version_id}"}} 1.0' in metrics.text
        )

        reported = control_plane.wait_for(
            lambda: next(
                (h["metrics"] for h in control_plane.heartbeats if h["metrics"]["requests"] == 2),
                None,
            )
        )
        assert reported["errors"] == 1
        assert reported["latency_ms"]["p50"] > 0
        assert reported["latency_ms"]["p50"] <= reported["latency_ms"]["p99"]
        assert reported["memory_bytes"] > 10_000_000

        # A second version whose desired sha256 is wrong: failed, old version keeps serving.
        second = package_factory(version=2)
        control_plane.deploy(second, "d2", sha256="0" * 64)
        failed = control_plane.wait_for(
            lambda: next(
                (e for s, e in control_plane.deployment_states("d2") if s == "failed"), None
            )
        )
        assert "does not match the signed manifest" in failed and "0" * 64 in failed
        after = len(control_plane.heartbeats)
        control_plane.wait_for(lambda: len(control_plane.heartbeats) >= after + 3)
        fetched = [p for m, p, _ in control_plane.requests if second.version_id in p]
        assert fetched == [f"/api/device/v1/model-versions/{second.version_id}/manifest.json"]
        assert control_plane.heartbeats[-1]["current_model_version_id"] == good.version_id

        reply = requests.post(f"{base}/v1/predict", data=png((0, 0, 255)), timeout=10).json()
        assert reply["model_version_id"] == good.version_id
        assert reply["predictions"][0]["label"] == "blue"

    # Restarted while the control plane is down: serves the installed model from state.json.
    control_plane.down = True
    seen = len(control_plane.heartbeats)
    with running_agent(home, port, log_path):
        control_plane.wait_for(lambda: len(control_plane.heartbeats) > seen)
        health = requests.get(f"{base}/healthz", timeout=10).json()
        assert health == {"status": "ok", "model_version_id": good.version_id}
        reply = requests.post(f"{base}/v1/predict", data=png((0, 255, 0)), timeout=10).json()
        assert reply["predictions"][0]["label"] == "green"


def test_zero_failed_predictions_while_a_model_is_swapped_under_load(
    tmp_path: Path, control_plane, package_factory, png
) -> None:
    """50 requests/s (open loop: sent on schedule, whatever the answers' pace) through a
    deployment of a new version: every request answers 200, by the old version before the swap
    and the new one after; the p99 during the swap is printed."""
    import statistics
    import threading
    import time
    from concurrent.futures import ThreadPoolExecutor

    home, port, log_path = tmp_path / "agent", free_port(), tmp_path / "agent.log"
    assert enroll(control_plane.url, home, "enroll-token-1").returncode == 0
    base = f"http://127.0.0.1:{port}"
    old, new = package_factory(), package_factory(version=2)
    control_plane.deploy(old, "d1")
    image = png((255, 0, 0))
    local = threading.local()
    answers: list[tuple[float, int, str | None, float]] = []  # (sent, status, version, ms)
    lock = threading.Lock()

    def send(sent_at: float) -> None:
        session = getattr(local, "session", None) or requests.Session()
        local.session = session
        began = time.perf_counter()
        try:
            reply = session.post(f"{base}/v1/predict", data=image, timeout=10)
            status = reply.status_code
            version = reply.json().get("model_version_id") if status == 200 else None
        except requests.RequestException:
            status, version = 0, None
        with lock:
            answers.append((sent_at, status, version, (time.perf_counter() - began) * 1000))

    with running_agent(home, port, log_path):
        control_plane.wait_for(lambda: ("running", None) in control_plane.deployment_states("d1"))
        stop = threading.Event()
        with ThreadPoolExecutor(max_workers=16) as pool:

            def schedule() -> None:
                began = time.monotonic()
                n = 0
                while not stop.is_set():
                    pool.submit(send, time.monotonic())
                    n += 1
                    stop.wait(max(0.0, began + n * 0.02 - time.monotonic()))  # 50/s pacing

            pacer = threading.Thread(target=schedule, daemon=True)
            pacer.start()
            control_plane.wait_for(lambda: len(answers) >= 50)  # a second of load first
            swap_began = time.monotonic()
            control_plane.deploy(new, "d2")
            control_plane.wait_for(lambda: ("running", None)
                                   in control_plane.deployment_states("d2"))
            swapped_at = time.monotonic()
            count = len(answers)
            control_plane.wait_for(lambda: len(answers) >= count + 50)  # a second after
            stop.set()
            pacer.join(timeout=5)
    failed = [a for a in answers if a[1] != 200]
    assert failed == [], failed[:5]
    ordered = sorted(answers)
    assert ordered[0][2] == old.version_id and ordered[-1][2] == new.version_id
    # once the new version answered, the old one did not again (an atomic swap; requests
    # sent within 0.5 s of each other may reach the model in another order)
    first_new = next(a[0] for a in ordered if a[2] == new.version_id)
    assert {a[2] for a in ordered if a[0] > first_new + 0.5} == {new.version_id}
    during = [a[3] for a in answers if swap_began <= a[0] <= swapped_at]
    assert during, "no request was sent during the swap"
    p99 = statistics.quantiles(during, n=100)[98] if len(during) > 1 else during[0]
    print(f"swap under load: {len(answers)} requests, 0 failed, {len(during)} during the swap, "
          f"p99 {p99:.1f} ms")


def test_an_agent_killed_in_the_middle_of_a_swap_serves_a_version_after_restart(
    tmp_path: Path, control_plane, package_factory, png
) -> None:
    """SIGKILL while the new version downloads: restarted, the agent serves the old version at
    once (never none), reports it, and finishes the deployment (resuming the download)."""
    import threading

    home, port, log_path = tmp_path / "agent", free_port(), tmp_path / "agent.log"
    assert enroll(control_plane.url, home, "enroll-token-1").returncode == 0
    base = f"http://127.0.0.1:{port}"
    old, new = package_factory(), package_factory(version=2)
    control_plane.deploy(old, "d1")
    with open(log_path, "ab") as log:
        process = subprocess.Popen(agent_command("run", "--home", str(home), "--port", str(port)),
                                   cwd=REPO, stdout=log, stderr=subprocess.STDOUT)
    try:
        control_plane.wait_for(lambda: ("running", None) in control_plane.deployment_states("d1"))
        control_plane.hold_downloads = threading.Event()
        control_plane.deploy(new, "d2")
        control_plane.wait_for(lambda: model_gets(control_plane, new.version_id))
    finally:
        process.kill()  # SIGKILL: no clean shutdown
        process.wait(timeout=10)
        if control_plane.hold_downloads is not None:
            control_plane.hold_downloads.set()
    control_plane.hold_downloads = None
    seen = len(control_plane.heartbeats)
    with running_agent(home, port, log_path):
        control_plane.wait_for(lambda: len(control_plane.heartbeats) > seen)
        # the model is loaded before the first heartbeat: that beat reports the old version
        assert control_plane.heartbeats[seen]["current_model_version_id"] == old.version_id
        control_plane.wait_for(lambda: ("running", None) in control_plane.deployment_states("d2"))
        reply = requests.post(f"{base}/v1/predict", data=png((0, 0, 255)), timeout=10).json()
        assert reply["model_version_id"] == new.version_id
        health = requests.get(f"{base}/healthz", timeout=10).json()
        assert health == {"status": "ok", "model_version_id": new.version_id}


def model_gets(plane, version_id: str) -> list[str]:
    return [p for m, p, _ in plane.requests
            if m == "GET" and p.endswith(f"{version_id}/model.onnx")]


def test_run_refuses_a_short_or_unreadable_api_key_file(tmp_path: Path, control_plane) -> None:
    home = tmp_path / "agent"
    assert enroll(control_plane.url, home, "enroll-token-1").returncode == 0
    short = tmp_path / "short.key"
    short.write_text("abc\n")
    for path, message in ((short, "is 3 characters; use at least 16"),
                          (tmp_path / "missing.key", "cannot read the API key file")):
        result = subprocess.run(
            agent_command("run", "--home", str(home), "--port", "0", "--api-key-file",
                          str(path)), cwd=REPO, capture_output=True, text=True, timeout=60)
        assert result.returncode == 1 and message in result.stderr, result.stderr
