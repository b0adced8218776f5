"""``make bench BENCH=swap``: predictions under load while the real agent swaps model versions.

The real agent process (``python -m edge_agent.cli run``, 1 intra-op thread) is enrolled by
writing ``agent.json`` directly, against a small in-process control plane (the device API of
docs/contracts.md: heartbeat, signed manifest, model.onnx) that answers every heartbeat with a
1 s interval. The models are real classifiers, MobileNetV2 for 10 classes at 96 x 96 px,
untrained: ``--swaps`` + 1 versions, each its own random initialisation (all sha256 differ),
exported with softmax in the graph by :func:`workers.ml.export.export_onnx`.

Sequence: version 1 is desired; once the agent serves it, 20 warm-up requests, then an open loop
of ``--rate`` requests per second (a pacer thread submits on schedule, whatever the answers'
pace, to 16 worker threads, each with its own keep-alive session) posts ``seeds/mnist/heldout``
PNGs to ``/v1/predict``. After ``--steady-s`` seconds version 2 is made desired; once the
agent's heartbeat reports its deployment ``running``, ``--gap-s`` seconds more load, then
version 3, and so on: ``--swaps`` swaps, each a full deployment (download, verify, load, swap);
``--after-s`` seconds of load after the last. Every swap goes to a new version, so none takes
the agent's cheaper rollback path (the previous version still on disk).

A swap window runs from the heartbeat whose reply first carried the new deployment (when the
agent learns of it) to the heartbeat reporting it ``running``. A request's latency runs from
its scheduled send time to its answer (a backlog in the client counts too). Failed: any answer
other than 200, or an exception. Reported, as one JSON line ``{"bench": "swap", ...}`` on stdout
(progress on stderr), nothing asserted:

- ``requests`` / ``failed`` / ``p50_ms`` / ``p99_ms``: the requests in flight at some time in a
  swap window, all ``swaps`` pooled; ``swap_s``: the mean window length (``swap_s_max`` the
  longest), ``desired_to_running_s``: the mean time from becoming desired (up to one heartbeat
  interval before the agent hears of it) to ``running``;
- the baseline, the same load with no swap: ``p50_ms_steady`` / ``p99_ms_steady`` over the
  requests answered in a window as long as all swap windows together just before the first
  swap (at most the steady phase), and ``p99_ratio`` = ``p99_ms`` / ``p99_ms_steady``;
- ``requests_total`` / ``failed_total`` over the whole load, ``rate_per_s`` (achieved send
  rate), ``answered_by_version`` and ``stale_answers`` (answers by a version to requests sent
  more than 0.5 s after its successor first answered: 0 when every swap is atomic).
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np
import requests
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from edge_agent.home import AgentConfig, AgentHome
from workers.bench import SEEDS, free_port, sign

REPO = Path(__file__).resolve().parent.parent
SIZE = 96
CREDENTIAL = "bench-swap"
DEVICE_API = "/api/device/v1"


def log(message: str) -> None:
    print(f"[bench swap] {message}", file=sys.stderr, flush=True)


def build_model(path: Path, seed: int, labels: list[str]) -> dict[str, Any]:
    """An untrained MobileNetV2 (``len(labels)`` classes, seeded random init) as ONNX at
    ``path``: input ``input`` (N, 3, 96, 96), output ``probabilities``. Returns export info."""
    import torch
    from torchvision.models import mobilenet_v2

    from workers.ml.export import export_onnx

    torch.manual_seed(seed)
    model = mobilenet_v2(weights=None, num_classes=len(labels))
    return export_onnx(model, path, (SIZE, SIZE), exporter="torchscript")


class Package:
    """A signed model package (contracts.md manifest) around ``model_bytes``."""

    def __init__(self, model_bytes: bytes, labels: list[str], info: dict[str, Any], version: int,
                 key: Ed25519PrivateKey, public_b64: str) -> None:
        self.version_id = str(uuid.uuid4())
        self.model_bytes = model_bytes
        self.sha256 = hashlib.sha256(model_bytes).hexdigest()
        self.manifest = sign({
            "schema": "sampan.model-package/1",
            "model": {"id": "bench-swap", "name": "bench-swap", "version": version,
                      "version_id": self.version_id},
            "task": "image_classification", "labels": labels,
            "preprocessing": {"size": [SIZE, SIZE], "resize": "stretch",
                              "mean": [0.1307] * 3, "std": [0.3081] * 3,
                              "colour_order": "RGB", "layout": "NCHW", "dtype": "float32"},
            "inputs": [{"name": "input", "shape": ["N", 3, SIZE, SIZE], "dtype": "float32"}],
            "outputs": [{"name": "probabilities", "shape": ["N", len(labels)],
                         "dtype": "float32"}],
            "metrics": {"val_accuracy": None},
            "lineage": {"dataset_version_id": None, "dataset_version_digest": None,
                        "training_job_id": None, "parent_model_version_id": None, "recipe": {}},
            "files": {"model.onnx": {"sha256": self.sha256, "size": len(model_bytes)}},
            "onnx": {"opset": info["opset"], "ir_version": info["ir_version"]},
            "min_onnxruntime": "1.17.0",
            "created_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        }, key, public_b64)


class ControlPlane:
    """The device API the agent needs (heartbeat, manifest, model.onnx without Range), in a
    thread. Heartbeats are kept with their receive time; :meth:`wait_for` waits on them."""

    def __init__(self) -> None:
        self.packages: dict[str, Package] = {}
        self.desired: dict[str, Any] | None = None
        #: (receive time.monotonic(), request body, whether the reply carried ``desired``'s id)
        self.heartbeats: list[tuple[float, dict[str, Any], str | None]] = []
        self._changed = threading.Condition()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> ControlPlane:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def deploy(self, package: Package, deployment_id: str) -> None:
        prefix = f"{DEVICE_API}/model-versions/{package.version_id}/"
        with self._changed:
            self.packages[package.version_id] = package
            self.desired = {"deployment_id": deployment_id,
                            "model_version_id": package.version_id,
                            "manifest_url": prefix + "manifest.json",
                            "artifact_url": prefix + "model.onnx",
                            "sha256": package.sha256, "size": len(package.model_bytes)}

    def first(self, predicate: Callable[[dict[str, Any], str | None], bool]) -> float | None:
        """Receive time of the first heartbeat (body, desired deployment id in its reply)
        matching ``predicate``; None if none yet. Call it through :meth:`wait_for` (the lock)."""
        return next((t for t, body, sent in self.heartbeats if predicate(body, sent)), None)

    def running(self, deployment_id: str) -> Callable[[], float | None]:
        def check() -> float | None:
            return self.first(lambda body, _: (body.get("deployment") or {}).get(
                "deployment_id") == deployment_id and body["deployment"]["state"] == "running")
        return check

    def received(self, deployment_id: str) -> Callable[[], float | None]:
        def check() -> float | None:
            return self.first(lambda _, sent: sent == deployment_id)
        return check

    def wait_for(self, predicate: Callable[[], Any], timeout_s: float) -> Any:
        deadline = time.monotonic() + timeout_s
        with self._changed:
            while not (value := predicate()):
                if time.monotonic() > deadline:
                    raise TimeoutError(f"not reached within {timeout_s} s")
                self._changed.wait(max(0.01, deadline - time.monotonic()))
            return value

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        plane = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass

            def _reply(self, status: int, body: bytes, kind: str = "application/json") -> None:
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _json(self, status: int, data: Any) -> None:
                self._reply(status, json.dumps(data).encode())

            def _authorised(self) -> bool:
                return self.headers.get("Authorization") == f"Device {CREDENTIAL}"

            def do_POST(self) -> None:  # noqa: N802
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if not self._authorised():
                    return self._json(401, {"error": {"code": "unauthorised",
                                                      "message": "bad credential"}})
                if self.path != f"{DEVICE_API}/heartbeat":
                    return self._json(404, {"error": {"code": "not_found", "message": "no"}})
                with plane._changed:
                    desired = plane.desired
                    plane.heartbeats.append((time.monotonic(), json.loads(raw or b"{}"),
                                             desired["deployment_id"] if desired else None))
                    plane._changed.notify_all()
                self._json(200, {"heartbeat_interval_s": 1.0, "desired": desired,
                                 "benchmarks": []})

            def do_GET(self) -> None:  # noqa: N802
                if not self._authorised():
                    return self._json(401, {"error": {"code": "unauthorised",
                                                      "message": "bad credential"}})
                parts = self.path.split("/")
                package = plane.packages.get(parts[-2]) if len(parts) > 2 else None
                if package is None:
                    return self._json(404, {"error": {"code": "not_found", "message": "no"}})
                if parts[-1] == "manifest.json":
                    return self._json(200, package.manifest)
                self._reply(200, package.model_bytes, "application/octet-stream")

        return Handler


class Load:
    """Open-loop load: ``rate`` POSTs per second on schedule, answered by 16 worker threads."""

    def __init__(self, url: str, images: list[bytes], rate: float) -> None:
        self.url, self.images, self.rate = url, images, rate
        #: (scheduled time.monotonic(), status (0: exception), model_version_id, latency ms)
        self.answers: list[tuple[float, int, str | None, float]] = []
        self.errors: list[str] = []
        self._lock = threading.Lock()
        self._local = threading.local()
        self._stop = threading.Event()
        self._pool = ThreadPoolExecutor(max_workers=16)
        self._pacer = threading.Thread(target=self._pace, daemon=True)
        self.began = self.ended = 0.0

    def _send(self, scheduled: float, image: bytes) -> None:
        session = getattr(self._local, "session", None)
        if session is None:
            session = self._local.session = requests.Session()
        version, error = None, None
        try:
            reply = session.post(f"{self.url}/v1/predict", data=image, timeout=10)
            status = reply.status_code
            if status == 200:
                version = reply.json()["model_version_id"]
            else:
                error = f"{status}: {reply.text[:200]}"
        except (requests.RequestException, ValueError, KeyError) as exc:
            status, error = 0, f"{type(exc).__name__}: {exc}"
        latency = (time.monotonic() - scheduled) * 1000.0
        with self._lock:
            self.answers.append((scheduled, status, version, latency))
            if error:
                self.errors.append(error)

    def _pace(self) -> None:
        self.began = time.monotonic()
        n = 0
        while not self._stop.is_set():
            scheduled = self.began + n / self.rate
            self._pool.submit(self._send, scheduled, self.images[n % len(self.images)])
            n += 1
            self._stop.wait(max(0.0, self.began + n / self.rate - time.monotonic()))
        self.ended = time.monotonic()

    def start(self) -> None:
        self._pacer.start()

    def stop(self) -> None:
        self._stop.set()
        self._pacer.join(timeout=5)
        self._pool.shutdown(wait=True)


def percentile(values: list[float], q: float) -> float | None:
    return round(float(np.percentile(values, q)), 2) if values else None


def wait_serving(url: str, version_id: str, agent: subprocess.Popen[bytes], log_path: Path,
                 timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    with requests.Session() as http:
        while True:
            if agent.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"agent not serving; log:\n{log_path.read_text()[-2000:]}")
            try:
                if http.get(f"{url}/healthz", timeout=2).json().get(
                        "model_version_id") == version_id:
                    return
            except (requests.RequestException, ValueError):
                pass
            time.sleep(0.1)  # polling for readiness with a deadline


def stop_agent(agent: subprocess.Popen[bytes]) -> None:
    if agent.poll() is None:
        agent.send_signal(signal.SIGTERM)
    try:
        agent.wait(timeout=10)
    except subprocess.TimeoutExpired:
        agent.kill()
        agent.wait(timeout=10)


def overlaps(answer: tuple[float, int, str | None, float], start: float, end: float) -> bool:
    """Whether the request was in flight (scheduled time to answer) at some time in
    [``start``, ``end``]."""
    return answer[0] <= end and answer[0] + answer[3] / 1000.0 >= start


def run(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    labels = [str(n) for n in range(10)]
    key = Ed25519PrivateKey.generate()
    public_b64 = base64.b64encode(key.public_key().public_bytes(
        serialization.Encoding.Raw, serialization.PublicFormat.Raw)).decode()
    packages = []
    for version in range(args.swaps + 1):
        path = work / f"v{version}.onnx"
        info = build_model(path, args.seed + version, labels)
        packages.append(Package(path.read_bytes(), labels, info, version + 1, key, public_b64))
    if len({p.sha256 for p in packages}) != len(packages):
        raise RuntimeError("two model versions have the same sha256")
    log(f"{len(packages)} model versions built, {len(packages[0].model_bytes) / 1e6:.1f} MB each")
    images = [p.read_bytes() for p in sorted((SEEDS / "heldout").glob("*/*.png"))]

    plane = ControlPlane().start()
    home = AgentHome(work / "agent-home")
    home.save_config(AgentConfig(server_url=plane.url, device_id="bench-swap",
                                 credential=CREDENTIAL, signing_public_key=public_b64,
                                 heartbeat_interval_s=1.0, name="bench-swap"))
    plane.deploy(packages[0], "d-0")
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log_path = work / "agent.log"
    load: Load | None = None
    windows: list[tuple[float, float, float]] = []  # (desired, seen by the agent, running)
    with open(log_path, "wb") as agent_log:
        agent = subprocess.Popen(
            [sys.executable, "-m", "edge_agent.cli", "run", "--home", str(home.root),
             "--port", str(port), "--threads", "1"],
            cwd=REPO, stdout=agent_log, stderr=subprocess.STDOUT)
    try:
        wait_serving(url, packages[0].version_id, agent, log_path)
        plane.wait_for(plane.running("d-0"), 30.0)
        with requests.Session() as http:
            for image in images[:20]:  # warm-up, untimed
                http.post(f"{url}/v1/predict", data=image, timeout=10).raise_for_status()
        log(f"agent serves version 1; {args.rate:g} requests/s, {args.steady_s:g} s steady, "
            f"then {args.swaps} swaps")
        load = Load(url, images, args.rate)
        load.start()
        time.sleep(args.steady_s)  # the steady phase: load at a fixed rate for a fixed time
        for index, package in enumerate(packages[1:], start=1):
            deployment = f"d-{index}"
            desired = time.monotonic()
            plane.deploy(package, deployment)
            running = plane.wait_for(plane.running(deployment), 60.0)
            seen = plane.wait_for(plane.received(deployment), 1.0)
            windows.append((desired, seen, running))
            log(f"swap {index}: version {index + 1} running {running - seen:.3f} s after the "
                f"agent received it ({running - desired:.3f} s after it became desired)")
            # load with no swap between swaps (a fixed time), longer after the last one
            time.sleep(args.after_s if index == args.swaps else args.gap_s)
        load.stop()
    finally:
        if load is not None:
            load.stop()
        stop_agent(agent)
        plane.stop()
    if load.errors:
        log(f"{len(load.errors)} failed, first: {load.errors[:3]}")

    answers = sorted(load.answers)
    swap_total = sum(running - seen for _, seen, running in windows)
    first_desired = windows[0][0]
    steady_start = max(load.began, first_desired - swap_total)
    during = [a for a in answers if any(overlaps(a, seen, end) for _, seen, end in windows)]
    # answered in [steady_start, first_desired): before any swap began
    steady = [a for a in answers if steady_start <= a[0] + a[3] / 1000.0 < first_desired]
    by_version = [sum(1 for a in answers if a[2] == p.version_id) for p in packages]
    stale = 0  # answers by a version to requests sent 0.5 s after its successor first answered
    for before, after in zip(packages, packages[1:], strict=False):
        first_new = next((a[0] for a in answers if a[2] == after.version_id), None)
        if first_new is not None:
            stale += sum(1 for a in answers if a[0] > first_new + 0.5
                         and a[2] == before.version_id)
    p99 = percentile([a[3] for a in during], 99)
    p99_steady = percentile([a[3] for a in steady], 99)
    return {
        "bench": "swap",
        "model": f"MobileNetV2, 10 classes, {SIZE}x{SIZE}, untrained (random inits), "
                 f"{len(packages[0].model_bytes) / 1e6:.1f} MB ONNX, agent --threads 1",
        "baseline": "the same load with no swap, the same length of time just before the first",
        "swaps": len(windows),
        "requests": len(during),
        "failed": sum(1 for a in during if a[1] != 200),
        "p50_ms": percentile([a[3] for a in during], 50),
        "p99_ms": p99,
        "requests_steady": len(steady),
        "failed_steady": sum(1 for a in steady if a[1] != 200),
        "p50_ms_steady": percentile([a[3] for a in steady], 50),
        "p99_ms_steady": p99_steady,
        "p99_ratio": round(p99 / p99_steady, 3) if p99 and p99_steady else None,
        "swap_s": round(swap_total / len(windows), 3),
        "swap_s_max": round(max(running - seen for _, seen, running in windows), 3),
        "desired_to_running_s": round(sum(r - d for d, _, r in windows) / len(windows), 3),
        "requests_total": len(answers),
        "failed_total": sum(1 for a in answers if a[1] != 200),
        "rate_per_s": round(len(answers) / (load.ended - load.began), 2),
        "target_rate_per_s": args.rate,
        "answered_by_version": by_version,
        "stale_answers": stale,
        "agent_exit_status": agent.returncode,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m workers.bench_swap", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rate", type=float, default=50.0, help="requests per second")
    parser.add_argument("--steady-s", type=float, default=5.0,
                        help="seconds of load before the swap")
    parser.add_argument("--swaps", type=int, default=10,
                        help="swaps, each to a new model version")
    parser.add_argument("--gap-s", type=float, default=1.0,
                        help="seconds of load between one swap's end and the next deployment")
    parser.add_argument("--after-s", type=float, default=3.0,
                        help="seconds of load after the last swap")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-swap-") as temp:
        figures = run(args, Path(temp))
    print(json.dumps(figures), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
