"""``make bench``: Sampan against named baselines, run side by side in the same run.

Benchmarks (``make bench BENCH=<name>`` runs one; each prints one JSON line per configuration
with a ``"bench"`` key, and nothing is asserted):

- ``training``: :mod:`workers.bench_training`, Sampan's training vs a competent hand-written
  torchvision script at equal data and budget, accuracy on held-out test images.
- ``serving``: a model trained by Sampan on ``seeds/mnist/train`` (30 s), served from
  ``seeds/mnist/heldout`` by the real agent process (``edge_agent.cli run``, 1 intra-op thread)
  over HTTP keep-alive vs an in-process decode + preprocess + onnxruntime loop (1 thread), and the
  bare ``session.run`` on pre-decoded tensors.
- ``compression``: :mod:`workers.bench_compression`, auto-compression measured on the real local
  agent against the float model on the same agent (digits at 96 px, photos at 224 px).
- ``detection``: :mod:`workers.bench_detection`, Sampan's detector vs Ultralytics YOLOv8n from
  scratch in the same wall-clock time on the same split of ``seeds/trees``, COCO mAP@0.5.
- ``upload``: :mod:`workers.bench_upload`, a 2 GiB resumable (tus) upload into the real web
  server, cut once and resumed, vs one multipart POST of 256 MiB: the web process's peak
  resident memory and MB/s of each.
- ``swap``: :mod:`workers.bench_swap`, 50 requests/s to the real agent process while it swaps
  to a new model version: failed requests and p99 during the swap vs the same load just before.
- ``heartbeats``: :mod:`workers.bench_heartbeats`, 10,000 simulated devices heartbeating into
  the real web server, open loop.
- ``agent``: :mod:`workers.bench_agent`, the agent process with 1 and 4 concurrent clients vs
  the same decode + onnxruntime work in-process, MobileNetV2 at 96 and 224 px.
- ``text``: :mod:`workers.bench_text`, Sampan's text classifier (120 s) vs scikit-learn's
  character TF-IDF + logistic regression on the same split of ``seeds/text``, test accuracy, and
  the featurise + onnxruntime latency of one text.
- ``text_en``: :mod:`workers.bench_text_en`, the same on English (Rotten Tomatoes snippets,
  1,000 training texts) vs word TF-IDF + logistic regression: where the pretrained sentence
  encoder competes.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import math
import os
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort
import requests
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from edge_agent.home import AgentConfig, AgentHome, AgentState
from edge_agent.imaging import Preprocessing, decode_image, preprocess
from edge_agent.runtime import canonical_json, file_sha256, public_key_id
from workers.ml.specs import SampleRef, TrainRequest

SEEDS = Path(__file__).resolve().parent.parent / "seeds" / "mnist"


def split_by_class(root: Path, seed: int, val_share: float = 0.2) -> tuple[list, list, list]:
    """``root/<label>/*`` -> (train, val, labels): per class, files ranked by
    sha256("<seed>:<file name>"), the first ``val_share`` of each class to val."""
    labels = sorted(p.name for p in root.iterdir() if p.is_dir())
    train: list[SampleRef] = []
    val: list[SampleRef] = []
    for index, label in enumerate(labels):
        files = sorted((root / label).iterdir(),
                       key=lambda p: hashlib.sha256(f"{seed}:{p.name}".encode()).hexdigest())
        n_val = max(1, round(len(files) * val_share))
        refs = [SampleRef(str(p), index, p.stem) for p in files]
        val += refs[:n_val]
        train += refs[n_val:]
    return train, val, labels


def train_for_serving(args: argparse.Namespace, work: Path) -> Any:
    from workers.ml.classification import train_image_classifier

    train, val, labels = split_by_class(SEEDS / "train", args.seed)
    return train_image_classifier(TrainRequest(train, val, labels, work / "engine",
                                               budget_s=args.budget_s, seed=args.seed))


def sign(manifest: dict[str, Any], key: Ed25519PrivateKey, public_b64: str) -> dict[str, Any]:
    """As ``sampan.registry.signing.sign_manifest``, with a throwaway key."""
    value = base64.b64encode(key.sign(canonical_json(manifest))).decode()
    return {**manifest, "signature": {"algorithm": "ed25519", "key_id": public_key_id(public_b64),
                                      "value": value}}


def populate_home(home: AgentHome, result: Any, labels: list[str], heartbeat_port: int) -> str:
    """Install ``result``'s model.onnx as the current version of an enrolled agent home."""
    key = Ed25519PrivateKey.generate()
    public_b64 = base64.b64encode(key.public_key().public_bytes(
        serialization.Encoding.Raw, serialization.PublicFormat.Raw)).decode()
    home.save_config(AgentConfig(server_url=f"http://127.0.0.1:{heartbeat_port}",
                                 device_id="bench", credential="bench",
                                 signing_public_key=public_b64, name="bench"))
    version_id = str(uuid.uuid4())
    directory = home.model_dir(version_id)
    directory.mkdir(parents=True)
    (directory / "model.onnx").write_bytes(Path(result.onnx_path).read_bytes())
    height, width = result.preprocessing["size"]
    manifest = sign({
        "schema": "sampan.model-package/1",
        "model": {"id": str(uuid.uuid4()), "name": "bench-digits", "version": 1,
                  "version_id": version_id},
        "task": "image_classification", "labels": labels, "preprocessing": result.preprocessing,
        "inputs": [{"name": "input", "shape": ["N", 3, height, width], "dtype": "float32"}],
        "outputs": [{"name": "probabilities", "shape": ["N", len(labels)], "dtype": "float32"}],
        "metrics": {k: result.metrics[k] for k in ("val_accuracy", "macro_f1")},
        "lineage": {"dataset_version_id": None, "dataset_version_digest": None,
                    "training_job_id": None, "parent_model_version_id": None,
                    "recipe": result.recipe},
        "files": {"model.onnx": {"sha256": file_sha256(directory / "model.onnx"),
                                 "size": (directory / "model.onnx").stat().st_size}},
        "onnx": {key: result.recipe.get(key) for key in ("opset", "ir_version")},
        "min_onnxruntime": "1.17.0",
        "created_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }, key, public_b64)
    (directory / "manifest.json").write_text(json.dumps(manifest, indent=2), encoding="utf-8")
    home.save_state(AgentState(current=version_id))
    return version_id


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


Contender = tuple[Callable[[Any], Any], list[Any]]


def timed_loops(contenders: dict[str, Contender], n: int, warmup: int, max_s: float,
                block: int = 50) -> dict[str, dict[str, Any]]:
    """Time each ``call(item)`` (items cycled): ``warmup`` untimed calls each, then round-robin
    blocks of ``block`` timed calls, so that load drifting on a shared machine hits all alike,
    until each has ``n`` calls or has spent ``max_s`` seconds. Returns per contender ``n``,
    ``per_s`` (calls per second of its own time) and ``p50_ms`` / ``p99_ms`` latency."""
    for call, items in contenders.values():
        for i in range(warmup):
            call(items[i % len(items)])
    latencies: dict[str, list[float]] = {name: [] for name in contenders}
    spent = dict.fromkeys(contenders, 0.0)
    while any(len(latencies[k]) < n and spent[k] < max_s for k in contenders):
        for name, (call, items) in contenders.items():
            done = latencies[name]
            if len(done) >= n or spent[name] >= max_s:
                continue
            began = time.perf_counter()
            for _ in range(min(block, n - len(done))):
                start = time.perf_counter()
                call(items[len(done) % len(items)])
                done.append(time.perf_counter() - start)
            spent[name] += time.perf_counter() - began
    return {name: {"n": len(ms), "per_s": len(ms) / spent[name],
                   "p50_ms": float(np.percentile(ms, 50)), "p99_ms": float(np.percentile(ms, 99))}
            for name, ms in ((k, np.asarray(v) * 1000.0) for k, v in latencies.items())}


def bench_serving(args: argparse.Namespace, work: Path, result: Any, labels: list[str]) -> dict:
    heldout = sorted((SEEDS / "heldout").glob("*/*.png"))
    images = [(p.read_bytes(), p.parent.name, p.name) for p in heldout]
    options = ort.SessionOptions()
    options.intra_op_num_threads, options.inter_op_num_threads = 1, 1
    session = ort.InferenceSession(str(result.onnx_path), sess_options=options,
                                   providers=["CPUExecutionProvider"])
    p = Preprocessing.from_dict(result.preprocessing)
    tensors = [preprocess(decode_image(item[0]), p)[np.newaxis] for item in images]

    def plain(item: tuple[bytes, str, str]) -> None:
        x = preprocess(decode_image(item[0]), p)[np.newaxis]
        session.run(["probabilities"], {"input": x})[0].argmax(1)

    home = AgentHome(work / "agent-home")
    version_id = populate_home(home, result, labels, heartbeat_port=free_port())
    port = free_port()
    log_path = work / "agent.log"
    figures: dict[str, Any] = {"n_heldout": len(images), "load_before": os.getloadavg()[0]}
    with open(log_path, "wb") as log:
        agent = subprocess.Popen(
            [sys.executable, "-m", "edge_agent.cli", "run", "--home", str(home.root),
             "--port", str(port), "--threads", "1"], stdout=log, stderr=subprocess.STDOUT)
    http = requests.Session()
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60.0
        while True:
            if agent.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"agent not serving; log:\n{log_path.read_text()[-2000:]}")
            try:
                health = http.get(f"{url}/healthz", timeout=2).json()
                if health.get("model_version_id") == version_id:
                    break
            except requests.RequestException:
                pass
            time.sleep(0.1)  # polling for readiness with a deadline, not synchronising on time
        server_ms: list[float] = []
        correct: dict[str, bool] = {}  # heldout file name -> top-1 label right

        def via_agent(item: tuple[bytes, str, str]) -> None:
            reply = http.post(f"{url}/v1/predict", data=item[0], timeout=10)
            reply.raise_for_status()
            body = reply.json()
            server_ms.append(body["latency_ms"])
            correct[item[2]] = body["predictions"][0]["label"] == item[1]

        bare = (lambda x: session.run(["probabilities"], {"input": x}), tensors)
        figures.update(timed_loops({"agent": (via_agent, images), "plain": (plain, images),
                                    "bare": bare}, args.requests, args.warmup, args.max_loop_s))
        figures["agent"]["server_p50_ms"] = float(np.percentile(server_ms[args.warmup:], 50))
        figures["agent"]["heldout_top1"] = sum(correct.values()) / len(correct)
        figures["agent"]["heldout_images_seen"] = len(correct)
    finally:
        http.close()
        agent.terminate()
        try:
            agent.wait(timeout=10)
        except subprocess.TimeoutExpired:
            agent.kill()
            agent.wait(timeout=10)
    figures["load_after"] = os.getloadavg()[0]
    return figures


def ratio(a: float, b: float) -> float:
    return a / b if b and not math.isnan(b) else float("nan")


def print_report(serving: dict[str, Any]) -> None:
    agent, plain, bare = serving["agent"], serving["plain"], serving["bare"]
    rows = [("Serving (1 thread, b=1)", "agent HTTP", "plain in-process", "agent/plain")]
    for key, label in (("per_s", "requests/s"), ("p50_ms", "p50 ms"), ("p99_ms", "p99 ms")):
        rows.append((label, agent[key], plain[key], ratio(agent[key], plain[key])))
    rows += [("", "bare session.run", "plain in-process", "bare/plain")]
    for key, label in (("per_s", "requests/s"), ("p50_ms", "p50 ms"), ("p99_ms", "p99 ms")):
        rows.append((label, bare[key], plain[key], ratio(bare[key], plain[key])))
    for row in rows:
        cells = [f"{c:.3f}" if isinstance(c, float) else str(c) for c in row]
        print(f"{cells[0]:<24} {cells[1]:>18} {cells[2]:>18} {cells[3]:>12}")
    print(f"agent: server-side p50 {agent['server_p50_ms']:.3f} ms, heldout top-1 "
          f"{agent['heldout_top1']:.3f} over {agent['heldout_images_seen']} of "
          f"{serving['n_heldout']} images; load average (1 min) {serving['load_before']:.2f} -> "
          f"{serving['load_after']:.2f} on {os.cpu_count()} CPUs")


def bench_serving_main(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="sampan-bench-") as temp:
        work = Path(temp)
        result = train_for_serving(args, work)
        _, _, labels = split_by_class(SEEDS / "train", args.seed)
        serving = bench_serving(args, work, result, labels)
    print_report(serving)
    print(json.dumps({"bench": "serving", "baseline": "plain in-process onnxruntime loop",
                      "agent_per_plain_throughput": ratio(serving["agent"]["per_s"],
                                                          serving["plain"]["per_s"]),
                      **serving}, sort_keys=True))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m workers.bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", choices=("training", "serving", "upload", "compression",
                                           "detection", "swap", "heartbeats", "agent",
                                           "text", "text_en"),
                        help="run one benchmark")
    parser.add_argument("--budget-s", type=float, default=30.0,
                        help="training budget of the served model, seconds")
    parser.add_argument("--requests", type=int, default=500, help="timed requests per loop")
    parser.add_argument("--warmup", type=int, default=20, help="untimed requests per loop")
    parser.add_argument("--max-loop-s", type=float, default=120.0,
                        help="cap on the timed seconds of each serving loop")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.only in (None, "training"):
        from workers import bench_training

        bench_training.main(["--seed", str(args.seed)])
    if args.only in (None, "serving"):
        bench_serving_main(args)
    if args.only in (None, "upload"):
        from workers import bench_upload

        bench_upload.main([])
    if args.only in (None, "compression"):
        from workers import bench_compression

        bench_compression.main([])
    if args.only in (None, "detection"):
        from workers import bench_detection

        bench_detection.main(["--seed", str(args.seed)])
    if args.only in (None, "swap"):
        from workers import bench_swap

        bench_swap.main([])
    if args.only in (None, "heartbeats"):
        from workers import bench_heartbeats

        bench_heartbeats.main([])
    if args.only in (None, "agent"):
        from workers import bench_agent

        bench_agent.main([])
    if args.only in (None, "text"):
        from workers import bench_text

        bench_text.main(["--seed", str(args.seed)])
    if args.only in (None, "text_en"):
        from workers import bench_text_en

        bench_text_en.main(["--seed", str(args.seed)])
    return 0


if __name__ == "__main__":
    sys.exit(main())
