"""``make bench BENCH=compression``: auto-compression measured on the device, against the float
model run by onnxruntime on the same device in the same run.

For each dataset, on a real stack (``sampan.devstack.stack``: Redis, web, Celery worker, beat)
and the real local agent (``edge_agent.cli run``, 1 onnxruntime thread):

- ``digits``: the seed dataset (``seeds/mnist/train``, 400 real MNIST digits), trained 90 s like
  ``make demo`` (MobileNetV2 at 96 px).
- ``photos224``: scikit-image's ``lfw_subset`` (200 real face / non-face photo crops, Labeled
  Faces in the Wild) upscaled to 250 px so the platform trains MobileNetV2 from ImageNet weights
  at 224 px (150 s).

The dataset version splits 70/15/15; the float model is deployed to the agent, then one
compression job (default budget: 600 s, 1.0 point) measures every candidate on the agent and
registers the pick, which is deployed too. Prints the candidates side by side (fp32 first) and
one JSON line per dataset::

    {"bench": "compression", "dataset", "fp32_p50_ms", "picked": {"method", "key", "p50_ms",
     "speedup", "accuracy_drop_pt", "size_ratio"} | null, "int8_size_ratio", "job_s",
     "budget_s", "agent_accuracy": {"fp32", "picked", "n"}, "candidates": [...], "load_1m",
     "cpus"}

``speedup`` = fp32 p50 / pick p50 on the device; ``size_ratio`` and ``int8_size_ratio`` = fp32
bytes / candidate bytes; ``accuracy_drop_pt`` on the held-out test split (onnxruntime in the job;
``agent_accuracy`` is the agent's own answers on the same images). Nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from sampan.devstack.client import Client
from sampan.devstack.compressjob import agent_accuracy, compress_for_device, held_out_samples
from sampan.devstack.mainjob import deploy_and_wait, run_main_job
from sampan.devstack.stack import REPO_DIR, Stack

SEEDS = REPO_DIR / "seeds"


def write_photos(root: Path) -> Path:
    """lfw_subset's 200 crops (0-99 faces, 100-199 non-faces: its docs) as 250x250 PNGs in
    ``root/train/<class>/`` and the same files in ``root/heldout`` (the agent's check)."""
    from PIL import Image
    from skimage.data import lfw_subset

    images = np.clip(np.rint(lfw_subset() * 255), 0, 255).astype(np.uint8)
    for split in ("train", "heldout"):
        for index, pixels in enumerate(images):
            label = "face" if index < 100 else "non_face"
            path = root / split / label / f"{index:03d}.png"
            path.parent.mkdir(parents=True, exist_ok=True)
            Image.fromarray(pixels).resize((250, 250), Image.BICUBIC).save(path)
    return root


def _stop_agent(stack: Stack) -> None:
    process = stack.processes.pop("agent", None)
    if process is not None and process.poll() is None:
        process.terminate()
        process.wait(timeout=30)


def table(job: dict[str, Any]) -> str:
    candidates = job["candidates"]
    reference = next(c for c in candidates if c["key"] == "fp32")
    ref_p50 = (reference.get("latency") or {}).get("p50_ms")
    rows = [f"{'candidate':24s} {'method':9s} {'acc %':>6s} {'drop pt':>7s} {'MB':>6s} "
            f"{'size x':>6s} {'p50 ms':>7s} {'p99 ms':>7s} {'speed x':>7s}  note"]
    for c in candidates:
        latency = c.get("latency") or {}
        p50 = latency.get("p50_ms")
        drop = c.get("accuracy_drop_pt")
        note = ("PICK" if c["key"] == job["picked"] else "") + (
            f" {c['status']}: {c.get('reason')}" if c["status"] != "ready" else "") + (
            f" {c['benchmark']['status']}: {c['benchmark']['error']}"
            if c.get("benchmark") and c["benchmark"]["status"] != "succeeded" else "") + (
            " beyond budget" if c["status"] == "ready" and not c["within_budget"] else "")
        size = c.get("size_bytes") or 0
        rows.append(
            f"{c['key']:24s} {c.get('method', ''):9s} "
            f"{100 * c['accuracy'] if c.get('accuracy') is not None else float('nan'):6.2f} "
            f"{drop if drop is not None else float('nan'):7.2f} "
            f"{size / 1e6:6.2f} {reference['size_bytes'] / size if size else float('nan'):6.2f} "
            f"{p50 if p50 else float('nan'):7.3f} {latency.get('p99_ms') or float('nan'):7.3f} "
            f"{ref_p50 / p50 if p50 and ref_p50 else float('nan'):7.2f}  {note.strip()}")
    return "\n".join(rows)


def bench_dataset(stack: Stack, client: Client, name: str, recipe: dict[str, Any],
                  budget_s: float, accuracy_budget_pt: float) -> dict[str, Any]:
    _stop_agent(stack)  # each dataset's project enrolls the agent anew
    result = run_main_job(stack, client, recipe=recipe, say=lambda _: None)
    projects = client.get("/api/v1/projects/")
    rows = projects["results"] if isinstance(projects, dict) else projects
    p = "/api/v1/projects/" + next(r["id"] for r in rows if r["name"] == recipe["project"])
    source = client.get(f"{p}/model-versions/{result['model_version_id']}/")
    devices = client.get(f"{p}/devices/")
    device = (devices["results"] if isinstance(devices, dict) else devices)[0]
    version = client.get(f"{p}/dataset-versions/{source['dataset_version_id']}/")
    samples = held_out_samples(client, p, version)
    float_served = agent_accuracy(stack, client, samples)
    started = time.monotonic()
    job = compress_for_device(client, p, source["id"], device["id"], budget_s=budget_s,
                              accuracy_budget_pt=accuracy_budget_pt,
                              say=lambda line: print(line, file=sys.stderr, flush=True))
    waited_s = time.monotonic() - started
    print(f"\n{name}: {source['model_name']} v{source['version']} at "
          f"{source['manifest']['preprocessing']['size'][0]} px, job {job['status']} "
          f"{job['error']}\n{table(job)}\n{job['pick_reason']}\n", file=sys.stderr, flush=True)
    by_key = {c["key"]: c for c in job["candidates"]}
    reference = by_key.get("fp32", {})
    ref_p50 = (reference.get("latency") or {}).get("p50_ms")
    picked_served = None
    picked = None
    if job["picked"]:
        chosen = by_key[job["picked"]]
        p50 = chosen["latency"]["p50_ms"]
        picked = {"key": chosen["key"], "method": chosen["method"], "p50_ms": p50,
                  "speedup": round(ref_p50 / p50, 3) if ref_p50 else None,
                  "accuracy_drop_pt": chosen["accuracy_drop_pt"],
                  "size_ratio": round(reference["size_bytes"] / chosen["size_bytes"], 3),
                  "params": chosen.get("params")}
        deploy_and_wait(client, p, job["model_version_id"], device["id"])
        picked_served = agent_accuracy(stack, client, samples)["accuracy"]
    int8 = by_key.get("int8")
    started_at = job.get("started_at")
    finished_at = job.get("finished_at")
    job_s = None
    if started_at and finished_at:
        from datetime import datetime

        job_s = round(datetime.fromisoformat(finished_at.replace("Z", "+00:00")).timestamp()
                      - datetime.fromisoformat(started_at.replace("Z", "+00:00")).timestamp(), 1)
    return {
        "bench": "compression", "dataset": name,
        "resolution": source["manifest"]["preprocessing"]["size"][0],
        "status": job["status"],
        "fp32_p50_ms": ref_p50,
        "fp32_accuracy": reference.get("accuracy"),
        "evaluated_on": reference.get("evaluated_on"),
        "n_evaluated": len(samples),
        "picked": picked,
        "pick_reason": job["pick_reason"],
        "int8_size_ratio": round(reference["size_bytes"] / int8["size_bytes"], 3)
        if int8 and int8.get("size_bytes") else None,
        "job_s": job_s, "job_wait_s": round(waited_s, 1), "budget_s": budget_s,
        "accuracy_budget_pt": accuracy_budget_pt,
        "agent_accuracy": {"fp32": float_served["accuracy"], "picked": picked_served,
                           "n": len(samples)},
        "candidates": [{"key": c["key"], "status": c["status"],
                        "accuracy_drop_pt": c.get("accuracy_drop_pt"),
                        "p50_ms": (c.get("latency") or {}).get("p50_ms"),
                        "size_bytes": c.get("size_bytes")} for c in job["candidates"]],
        "warnings": job["warnings"],
        "measured_on": "the local agent (edge_agent.cli run, 1 onnxruntime thread)",
        "load_1m": round(os.getloadavg()[0], 2), "cpus": os.cpu_count(),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m workers.bench_compression",
                                     description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", choices=("digits", "photos224"))
    parser.add_argument("--budget-s", type=float, default=600.0)
    parser.add_argument("--accuracy-budget-pt", type=float, default=1.0)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-compression-") as folder:
        work = Path(folder)
        with Stack(data_dir=work / "stack",
                   extra_env={"SAMPAN_DEVICE_HEARTBEAT_INTERVAL_S": "2"}) as stack:
            stack.start()
            user = json.loads(stack.manage("sampan_user", "--username", "bench", "--password",
                                           "bench-password").stdout.strip().splitlines()[-1])
            client = Client(stack.url, user["token"])
            recipes = {
                "digits": {"project": "bench digits", "dataset": "digits",
                           "train_dir": "mnist/train", "heldout_dir": "mnist/heldout",
                           "budget_s": 90, "seed": 0},
                "photos224": {"project": "bench photos", "dataset": "faces",
                              "train_dir": str(write_photos(work / "photos") / "train"),
                              "heldout_dir": str(work / "photos" / "heldout"),
                              "budget_s": 150, "seed": 0},
            }
            for name, recipe in recipes.items():
                if args.only and name != args.only:
                    continue
                line = bench_dataset(stack, client, name, recipe, args.budget_s,
                                     args.accuracy_budget_pt)
                print(json.dumps(line), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
