"""Celery adapter for compression: ids in, the engine and the device's measurements in the
middle, the pick registered out (docs/decisions/compression.md).

1. The engine (:func:`workers.ml.compression.compress_classifier`; a text classifier's:
   :func:`workers.ml.compression.compress_text_classifier`) makes and evaluates the
   candidates within the job's budget less the time kept for measuring them; each is recorded
   on the job as it is made.
2. Each ready candidate is measured where it will run: on the job's device by the agent
   (a signed package it verifies, timed through its decode + preprocess + session path), or,
   without a device, on this worker by the same code in a child process. Device measurements
   start once the engine is done, so a device on the worker's own machine is not measured
   while the worker trains.
3. The pick (:func:`workers.ml.compression.pick`) is registered as a new model version.
"""

from __future__ import annotations

import json
import logging
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from celery import shared_task

from sampan.compression import selectors, services
from sampan.core.stored_text import (COMPRESSION_FAILED, COMPRESSION_TIME_LIMIT,
                                     REGISTERING_PICK_FAILED)
from workers.ml.compression import (CompressionCancelled, CompressRequest, Teacher,
                                    TextCompressRequest, compress_classifier,
                                    compress_text_classifier, pick)
from workers.ml.compression.pick import TEXT_TIE_SHARE, TIE_SHARE
from workers.ml.compression.text import text_manifest
from workers.ml.specs import SampleRef
from workers.tasks.heartbeat import heartbeating, time_limit_s

log = logging.getLogger(__name__)

#: Seconds of the budget kept for measuring the candidates on the device: a heartbeat or two
#: before the agent hears of them, then download + load + warm-up + timed runs of each (~2-5 s
#: for MobileNetV2 at 224 px on 2 cores), and registration.
MEASURE_RESERVE_S = 60.0
MEASURE_RESERVE_SHARE = 0.15
#: A device last seen longer ago than its offline threshold ends the wait after this grace.
OFFLINE_GRACE_S = 10.0
POLL_S = 1.0
#: A local measurement (no device) that takes longer than this is killed.
LOCAL_TIMEOUT_S = 120.0


def measure_reserve_s(budget_s: float) -> float:
    return max(MEASURE_RESERVE_S, MEASURE_RESERVE_SHARE * budget_s)


@shared_task(name="compression.run", acks_late=True)
def run_compression(compression_job_id: str) -> None:
    """Compress, measure, pick, register. Idempotent: a second delivery returns at once."""
    started = time.monotonic()
    inputs = services.compression_job_start(job_id=compression_job_id)
    if inputs is None:
        log.info("compression job %s already taken or finished", compression_job_id)
        return
    alive = {"value": True}
    job_id = compression_job_id
    try:
        def on_progress(progress: dict[str, Any]) -> None:
            alive["value"] = services.compression_progress(job_id=job_id, progress=progress)

        def on_candidate(candidate: Any) -> None:
            alive["value"] = services.compression_candidate_record(
                job_id=job_id, candidate={**candidate.to_dict(), "latency": None,
                                          "compatible": True, "benchmark": None})

        def refs(rows: list[tuple[str, int, str]]) -> list[SampleRef]:
            return [SampleRef(path=p, label=c, sample_id=i) for p, c, i in rows]

        deadline = started + inputs.budget_s
        engine_s = max(30.0, deadline - time.monotonic() - measure_reserve_s(inputs.budget_s))
        if inputs.text is not None:  # a text classifier: graph-level candidates of its own
            text_request = TextCompressRequest(
                onnx_path=Path(inputs.teacher_onnx), text=inputs.text, labels=inputs.labels,
                sample_labels=inputs.dataset_labels, train=inputs.train, val=inputs.val,
                test=inputs.test, out_dir=inputs.out_dir / "candidates", budget_s=engine_s,
                accuracy_budget_pt=inputs.accuracy_budget_pt, providers=inputs.providers,
                methods=tuple(inputs.methods))

            def engine(**callbacks: Any) -> Any:
                return compress_text_classifier(text_request, **callbacks)
        else:
            request = CompressRequest(
                teacher=Teacher(onnx_path=Path(inputs.teacher_onnx),
                                preprocessing=inputs.preprocessing, labels=inputs.labels,
                                checkpoint_path=inputs.checkpoint),
                train=refs(inputs.train), val=refs(inputs.val), test=refs(inputs.test),
                out_dir=inputs.out_dir / "candidates", budget_s=engine_s,
                accuracy_budget_pt=inputs.accuracy_budget_pt, providers=inputs.providers,
                methods=tuple(inputs.methods), seed=inputs.seed, allow_flips=inputs.allow_flips)

            def engine(**callbacks: Any) -> Any:
                return compress_classifier(request, **callbacks)
        limit_s = time_limit_s(inputs.budget_s)

        def expire(expired_id: str) -> None:
            services.compression_job_fail(job_id=expired_id, message=COMPRESSION_TIME_LIMIT % {
                "limit": limit_s, "budget": inputs.budget_s})

        with heartbeating(job_id, alive, services.compression_heartbeat, limit_s=limit_s,
                          expire=expire):
            try:
                result = engine(on_candidate=on_candidate, on_progress=on_progress,
                                should_stop=lambda: not alive["value"])
                services.compression_warnings_record(job_id=job_id, warnings=result.warnings)
                ready = [c.to_dict() for c in result.candidates if c.status == "ready"]
                on_progress({"phase": "measure", "fraction": 0.9,
                             "message": f"measuring {len(ready)} candidates"})
                if inputs.device_id:
                    _measure_on_device(job_id, inputs, ready, deadline, alive)
                else:
                    _measure_here(job_id, inputs, ready, alive)
            except CompressionCancelled:
                log.info("compression job %s stopped: cancelled or reaped", job_id)
                return
            except Exception as exc:
                log.exception("compression job %s failed", job_id)
                services.compression_job_fail(job_id=job_id,
                                              message=COMPRESSION_FAILED % {"reason": exc})
                return
        candidates = selectors.compression_job_candidates(job_id=job_id)
        unmeasured = [f"{c['key']} ({(c.get('benchmark') or {}).get('error') or 'no result'})"
                      for c in candidates if c.get("status") == "ready"
                      and c.get("compatible", True) and not c.get("latency")]
        if unmeasured:
            services.compression_warnings_record(job_id=job_id, warnings=[
                *result.warnings, f"not measured: {'; '.join(unmeasured)}"])
        text = inputs.text is not None
        key, reason = pick(candidates, measured_on=inputs.device_name or
                           "the compression worker", unit="texts" if text else "images",
                           tie_share=TEXT_TIE_SHARE if text else TIE_SHARE)
        try:
            services.compression_job_complete(job_id=job_id, picked=key, reason=reason)
        except Exception as exc:  # storing or registering (the bucket, the database)
            log.exception("compression job %s could not register its pick", job_id)
            services.compression_job_fail(job_id=job_id,
                                          message=REGISTERING_PICK_FAILED % {"reason": exc})
    finally:
        services.compression_cleanup(job_id=job_id, out_dir=inputs.out_dir)


def _measure_on_device(job_id: str, inputs: Any, ready: list[dict[str, Any]], deadline: float,
                       alive: dict[str, bool]) -> None:
    """Ask the device to measure every ready candidate, then wait for its results until the
    job's deadline; a device that goes offline ends the wait. What is not measured by then is
    expired and named on the job."""
    services.compression_benchmarks_request(job_id=job_id, candidates=ready,
                                            inputs=[name for name, _ in inputs.benchmark_inputs])
    offline_since: float | None = None
    stop = threading.Event()
    while True:
        state = services.compression_benchmarks_sync(job_id=job_id)
        if not state["open"]:
            return
        if not alive["value"]:
            raise CompressionCancelled()
        now = time.monotonic()
        if now >= deadline - 2.0:
            services.compression_benchmarks_expire(
                job_id=job_id, reason="not measured within the job's time budget")
            return
        if not state["device_online"]:
            offline_since = offline_since or now
            if now - offline_since >= OFFLINE_GRACE_S:
                services.compression_benchmarks_expire(
                    job_id=job_id, reason="the device went offline before measuring it")
                return
        else:
            offline_since = None
        stop.wait(POLL_S)


def _measure_here(job_id: str, inputs: Any, ready: list[dict[str, Any]],
                  alive: dict[str, bool]) -> None:
    """No device: each candidate measured on this worker by the agent's own measuring code
    (``python -m edge_agent.benchmark``, a child process at low priority; a text model is timed
    on the agent's own texts)."""
    images = [Path(path) for _, path in inputs.benchmark_inputs]
    for candidate in ready:
        if not alive["value"]:
            raise CompressionCancelled()
        outcome = _measure_locally(Path(candidate["onnx_path"]), candidate, inputs, images)
        succeeded = outcome.get("status") == "succeeded"
        alive["value"] = services.compression_candidate_record(job_id=job_id, candidate={
            "key": candidate["key"],
            "benchmark": {"id": None, "status": outcome.get("status"),
                          "error": outcome.get("error") or ""},
            "latency": outcome.get("result") if succeeded else None,
            "compatible": outcome.get("status") != "incompatible",
            "incompatibilities": [outcome.get("error")]
            if outcome.get("status") == "incompatible" else []})


def _measure_locally(onnx_path: Path, candidate: dict[str, Any], inputs: Any,
                     images: list[Path]) -> dict[str, Any]:
    from sampan.compression.services import BENCHMARK_RUNS, BENCHMARK_WARMUP

    with tempfile.TemporaryDirectory(prefix="measure-", dir=inputs.out_dir) as folder:
        directory = Path(folder)
        # what the measuring code's session reads of a package (a text model: its task, text
        # settings and inputs; the vocabulary of a WordPiece model is in the graph)
        manifest = text_manifest(inputs.labels, inputs.text) if inputs.text is not None else {
            "labels": inputs.labels, "preprocessing": candidate["preprocessing"]}
        (directory / "manifest.json").write_text(json.dumps(manifest))
        shutil.copyfile(onnx_path, directory / "model.onnx")
        (directory / "inputs").mkdir()
        for index, image in enumerate(images):
            shutil.copyfile(image, directory / "inputs" / str(index))
        try:
            completed = subprocess.run(
                [sys.executable, "-m", "edge_agent.benchmark", str(directory),
                 "--warmup", str(BENCHMARK_WARMUP), "--runs", str(BENCHMARK_RUNS)],
                capture_output=True, text=True, timeout=LOCAL_TIMEOUT_S, check=False)
        except subprocess.TimeoutExpired:
            return {"status": "failed", "error": f"measuring took over {LOCAL_TIMEOUT_S:.0f} s"}
    lines = [line for line in completed.stdout.splitlines() if line.strip()]
    try:
        return dict(json.loads(lines[-1]))
    except (IndexError, ValueError):
        return {"status": "failed",
                "error": f"the measuring process ended without a result: "
                         f"{completed.stderr.strip()[-300:]}"}
