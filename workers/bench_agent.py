"""``make bench BENCH=agent``: the real agent process against the same work done in-process.

For a MobileNetV2 at 96 px (digits from ``seeds/mnist/heldout``, PNG) and at 224 px (photos
from ``seeds/trees``, 400 px JPEG) — torchvision's architecture, 10 classes, random weights
(speed only), exported by :func:`workers.ml.export.export_onnx` as training exports — each with
1 and 4 concurrent clients:

- **agent**: ``sampan-agent run --threads 1`` (a standalone home: no platform, no heartbeats),
  each client a thread of this process with its own keep-alive connection (a lean load
  generator: :class:`ViaAgent`), ``POST /v1/predict`` with the image bytes, the JSON answer
  parsed;
- **plain** (the baseline): as many threads of this process, each decoding, preprocessing and
  running the same images through one shared onnxruntime session with 1 intra-op thread (the
  agent's code path without HTTP: :func:`edge_agent.imaging.decode_image`,
  :func:`~edge_agent.imaging.preprocess`, ``session.run``).

Both run in alternating rounds of ``--round-s`` seconds (load drifting on a shared machine hits
both alike); throughput is completed requests per second of each side's own rounds, latency
percentiles over all its requests. One JSON line ``{"bench": "agent", "clients": 4,
"ratio_96", "ratio_224", "p50_overhead_ms_1_client", "p99_ms_224", ...}`` where ``ratio_*`` is
agent / plain requests per second with 4 clients and ``p50_overhead_ms_1_client`` the larger of
the two sizes' agent p50 minus plain p50 with 1 client. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import base64
import http.client
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from edge_agent.home import AgentConfig, AgentHome, AgentState
from edge_agent.imaging import Preprocessing, decode_image, preprocess
from edge_agent.runtime import file_sha256

REPO = Path(__file__).resolve().parents[1]
SIZES = {96: sorted((REPO / "seeds" / "mnist" / "heldout").glob("*/*.png")),
         224: sorted((REPO / "seeds" / "trees").glob("*/JPEGImages/*.jpg"))}
LABELS = [str(i) for i in range(10)]


def log(message: str) -> None:
    print(f"[bench agent] {message}", file=sys.stderr, flush=True)


def export_model(path: Path, size: int) -> dict[str, Any]:
    """MobileNetV2 (10 classes, seed 0) + softmax as ONNX at ``size`` px; returns the
    manifest's preprocessing."""
    import torch
    from torchvision.models import mobilenet_v2

    from workers.ml.export import export_onnx

    torch.manual_seed(0)
    export_onnx(mobilenet_v2(num_classes=len(LABELS)).eval(), path, (size, size))
    return {"size": [size, size], "resize": "stretch", "mean": [0.485, 0.456, 0.406],
            "std": [0.229, 0.224, 0.225], "colour_order": "RGB", "layout": "NCHW",
            "dtype": "float32"}


def standalone_home(root: Path, model: Path, preprocessing: dict[str, Any], size: int) -> str:
    """An agent home serving ``model`` with no platform (as ``sampan-agent install-model``
    leaves one), signed with a throwaway key. Returns the version id."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from workers.bench import sign

    key = Ed25519PrivateKey.generate()
    public_b64 = base64.b64encode(key.public_key().public_bytes(
        serialization.Encoding.Raw, serialization.PublicFormat.Raw)).decode()
    home = AgentHome(root)
    home.ensure()
    home.save_config(AgentConfig(server_url="", device_id="bench", credential="",
                                 signing_public_key=public_b64, name="bench",
                                 trusted_signing_keys=[public_b64]))
    version_id = str(uuid.uuid4())
    directory = home.model_dir(version_id)
    directory.mkdir(parents=True)
    (directory / "model.onnx").write_bytes(model.read_bytes())
    manifest = sign({
        "schema": "sampan.model-package/1",
        "model": {"id": str(uuid.uuid4()), "name": f"bench-{size}", "version": 1,
                  "version_id": version_id},
        "task": "image_classification", "labels": LABELS, "preprocessing": preprocessing,
        "inputs": [{"name": "input", "shape": ["N", 3, size, size], "dtype": "float32"}],
        "outputs": [{"name": "probabilities", "shape": ["N", len(LABELS)], "dtype": "float32"}],
        "files": {"model.onnx": {"sha256": file_sha256(directory / "model.onnx"),
                                 "size": (directory / "model.onnx").stat().st_size}},
        "min_onnxruntime": "1.17.0",
        "created_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }, key, public_b64)
    (directory / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    home.save_state(AgentState(current=version_id))
    return version_id


def run_round(work: Any, images: list[bytes], clients: int, seconds: float
              ) -> tuple[int, float, list[float]]:
    """``clients`` threads calling ``work(client, image)`` (images cycled) for ``seconds``;
    returns (completed calls, elapsed s, latencies in ms)."""
    latencies: list[list[float]] = [[] for _ in range(clients)]
    stop = threading.Event()
    start = threading.Barrier(clients + 1)

    def client(index: int) -> None:
        state = work.setup() if hasattr(work, "setup") else None
        position = index * 7
        start.wait()
        while not stop.is_set():
            image = images[position % len(images)]
            position += 1
            began = time.perf_counter()
            work(state, image)
            latencies[index].append((time.perf_counter() - began) * 1000.0)
        if hasattr(work, "teardown"):
            work.teardown(state)

    threads = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(clients)]
    for thread in threads:
        thread.start()
    start.wait()
    began = time.perf_counter()
    time.sleep(seconds)  # the measured window: the clients run until it ends
    stop.set()
    for thread in threads:
        thread.join(timeout=30)
    elapsed = time.perf_counter() - began
    flat = [ms for per in latencies for ms in per]
    return len(flat), elapsed, flat


class _Answer:
    """httptools callbacks collecting one HTTP response."""

    def __init__(self) -> None:
        self.body: list[bytes] = []
        self.done = False

    def on_body(self, body: bytes) -> None:
        self.body.append(body)

    def on_message_complete(self) -> None:
        self.done = True


class ViaAgent:
    """One keep-alive connection per client, as a load generator keeps it (wrk, hey): each
    request's bytes built once, the answer parsed by httptools (the agent's own C parser) and
    its JSON decoded, as a client would. ``http.client`` cost ~0.25 ms of CPU per request on
    this machine's own cores, charged to the agent's side (measured)."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.requests: dict[int, bytes] = {}

    def setup(self) -> socket.socket:
        connection = socket.create_connection(("127.0.0.1", self.port), timeout=30)
        connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return connection

    def teardown(self, connection: socket.socket) -> None:
        connection.close()

    def __call__(self, connection: socket.socket, image: bytes) -> None:
        import httptools

        request = self.requests.get(id(image))
        if request is None:
            request = (b"POST /v1/predict HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                       b"Content-Type: application/octet-stream\r\n"
                       + f"Content-Length: {len(image)}\r\n\r\n".encode() + image)
            self.requests[id(image)] = request
        connection.sendall(request)
        answer = _Answer()
        parser = httptools.HttpResponseParser(answer)
        while not answer.done:
            data = connection.recv(65536)
            if not data:
                raise RuntimeError("the agent closed the connection")
            parser.feed_data(data)
        body = b"".join(answer.body)
        if parser.get_status_code() != 200:
            raise RuntimeError(f"agent answered {parser.get_status_code()}: {body[:200]!r}")
        json.loads(body)["predictions"][0]["label"]


class InProcess:
    """The agent's work without HTTP: decode, preprocess, one shared session (1 thread)."""

    def __init__(self, model: Path, preprocessing: dict[str, Any]) -> None:
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads, options.inter_op_num_threads = 1, 1
        self.session = ort.InferenceSession(str(model), sess_options=options,
                                            providers=["CPUExecutionProvider"])
        self.preprocessing = Preprocessing.from_dict(preprocessing)

    def __call__(self, state: None, image: bytes) -> None:
        x = preprocess(decode_image(image), self.preprocessing)[np.newaxis]
        probabilities = self.session.run(["probabilities"], {"input": x})[0][0]
        LABELS[int(probabilities.argmax())]


def wait_ready(port: int, version_id: str, process: subprocess.Popen[bytes], log_path: Path
               ) -> None:
    deadline = time.monotonic() + 60.0
    while True:
        if process.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"agent not serving; log:\n{log_path.read_text()[-2000:]}")
        try:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            connection.request("GET", "/healthz")
            if json.loads(connection.getresponse().read()).get("model_version_id") == version_id:
                connection.close()
                return
            connection.close()
        except (OSError, ValueError):
            pass
        time.sleep(0.1)  # polling for readiness with a deadline


def measure(size: int, work_dir: Path, args: argparse.Namespace) -> dict[str, Any]:
    from workers.bench import free_port

    images = [path.read_bytes() for path in SIZES[size]]
    model = work_dir / f"mobilenet_v2_{size}.onnx"
    preprocessing = export_model(model, size)
    version_id = standalone_home(work_dir / f"home-{size}", model, preprocessing, size)
    port = free_port()
    log_path = work_dir / f"agent-{size}.log"
    with open(log_path, "wb") as agent_log:
        process = subprocess.Popen(
            [sys.executable, "-m", "edge_agent.cli", "run", "--home",
             str(work_dir / f"home-{size}"), "--port", str(port), "--threads", "1"],
            cwd=REPO, stdout=agent_log, stderr=subprocess.STDOUT)
    figures: dict[str, Any] = {"images": len(images)}
    try:
        wait_ready(port, version_id, process, log_path)
        sides = {"agent": ViaAgent(port), "plain": InProcess(model, preprocessing)}
        for clients in (1, 4):
            totals = {name: [0, 0.0, []] for name in sides}
            for work in sides.values():  # warm-up, not counted
                run_round(work, images, clients, 1.0)
            for _ in range(args.rounds):
                for name, work in sides.items():
                    done, elapsed, latencies = run_round(work, images, clients, args.round_s)
                    totals[name][0] += done
                    totals[name][1] += elapsed
                    totals[name][2].extend(latencies)
            for name, (done, elapsed, latencies) in totals.items():
                figures[f"{name}_{clients}"] = {
                    "per_s": round(done / elapsed, 2),
                    "p50_ms": round(float(np.percentile(latencies, 50)), 3),
                    "p99_ms": round(float(np.percentile(latencies, 99)), 3), "n": done}
            log(f"{size} px, {clients} client(s): agent {figures[f'agent_{clients}']}, "
                f"plain {figures[f'plain_{clients}']}")
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m workers.bench_agent", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--round-s", type=float, default=4.0)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="sampan-bench-agent-") as temp:
        results = {size: measure(size, Path(temp), args) for size in SIZES}

    def ratio(size: int) -> float:
        return round(results[size]["agent_4"]["per_s"] / results[size]["plain_4"]["per_s"], 3)

    overhead = {size: round(results[size]["agent_1"]["p50_ms"]
                            - results[size]["plain_1"]["p50_ms"], 3) for size in SIZES}
    print(json.dumps({
        "bench": "agent", "clients": 4,
        "baseline": "in-process decode + preprocess + onnxruntime (1 intra-op thread), "
                    "as many threads as clients",
        "ratio_96": ratio(96), "ratio_224": ratio(224),
        "p50_overhead_ms_1_client": max(overhead.values()),
        "p50_overhead_ms_1_client_by_size": overhead,
        "p99_ms_224": results[224]["agent_4"]["p99_ms"],
        "details": results, "cpus": os.cpu_count(),
        "load_before": round(load_before, 2), "load_after": round(os.getloadavg()[0], 2)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
