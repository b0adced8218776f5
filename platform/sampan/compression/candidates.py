"""A compression job's candidates and their measurements on the device
(docs/decisions/compression.md).

The worker records each candidate the engine makes (:func:`compression_candidate_record`), asks
the job's device to measure the ready ones (:func:`compression_benchmarks_request`: each stored
as a signed package), merges the device's figures as they arrive
(:func:`compression_benchmarks_sync`) and removes the packages at the end
(:func:`compression_cleanup`). :mod:`sampan.compression.services` re-exports these for the
worker.
"""

from __future__ import annotations

import logging
import shutil
from pathlib import Path
from typing import Any

from django.db import transaction

from edge_agent.text_session import manifest_inputs

from sampan.compression.models import CompressionJob
from sampan.core import storage
from sampan.core.jobs import JobStatus
from sampan.core.services import job_publish
from sampan.datasets.models import TaskType
from sampan.fleet.benchmarks import (benchmark_package_delete, benchmark_package_store,
                                     device_benchmark_cancel, device_benchmark_create,
                                     device_benchmark_expire)
from sampan.fleet.models import BENCHMARK_OPEN, BenchmarkStatus, DeviceBenchmark
from sampan.fleet.stored_texts import benchmark_incompatibilities
from sampan.registry.services import MIN_ONNXRUNTIME, PACKAGE_SCHEMA

log = logging.getLogger(__name__)

#: Timed predictions and warm-up per device benchmark; inputs: encoded held-out images.
BENCHMARK_RUNS = 200
BENCHMARK_WARMUP = 10
BENCHMARK_INPUTS = 16

def compression_candidate_record(*, job_id: Any, candidate: dict[str, Any]) -> bool:
    """Add (or replace, by ``key``) one candidate of a RUNNING job and publish it. False when
    the job is no longer RUNNING. Only the job's own worker writes ``candidates``."""
    with transaction.atomic():
        job = CompressionJob.objects.select_for_update().filter(pk=job_id).first()
        if job is None or job.status != JobStatus.RUNNING:
            return False
        rows = list(job.candidates)  # in the order made; a known key is updated in place
        index = next((i for i, c in enumerate(rows) if c.get("key") == candidate.get("key")),
                     None)
        if index is None:
            rows.append(dict(candidate))
        else:
            rows[index] = {**rows[index], **candidate}
        CompressionJob.objects.filter(pk=job_id).update(candidates=rows)
    job_publish(CompressionJob, job_id, {"status": JobStatus.RUNNING, "candidate": candidate},
                force=True)
    return True


def compression_warnings_record(*, job_id: Any, warnings: list[str]) -> None:
    CompressionJob.objects.filter(pk=job_id).update(warnings=list(warnings))


def _candidate_manifest(job: CompressionJob, candidate: dict[str, Any]) -> dict[str, Any]:
    source = job.source
    manifest = {"schema": PACKAGE_SCHEMA,
                "model": {"id": str(source.model_id), "name": source.model.name, "version": None,
                          "version_id": f"candidate-{job.pk}-{candidate['key']}"},
                "task": source.task_type, "labels": list(source.labels),
                "preprocessing": candidate.get("preprocessing") or {},
                "outputs": [{"name": "probabilities", "shape": ["N", len(source.labels)],
                             "dtype": "float32"}],
                "metrics": {}, "lineage": {"compression_job_id": str(job.pk),
                                           "candidate": candidate["key"]},
                "onnx": candidate.get("onnx") or {}, "min_onnxruntime": MIN_ONNXRUNTIME}
    if source.task_type == TaskType.TEXT_CLASSIFICATION:
        # the source's featurisation settings unchanged: the candidates take the same features
        manifest.update(text=dict(source.manifest.get("text") or {}), preprocessing={},
                        inputs=manifest_inputs())
    else:
        height, width = candidate["preprocessing"]["size"]
        manifest["inputs"] = [{"name": "input", "shape": ["N", 3, height, width],
                               "dtype": "float32"}]
    return manifest


def _text_benchmark_input(package_dir: str) -> str:
    """A device benchmark lists at least one input to download; an agent times a text model on
    its own texts (edge_agent.benchmark.BENCHMARK_TEXTS) and does not read it. The file is
    stored in the candidate's package folder, deleted with it."""
    name = f"{package_dir}/inputs/0.txt"
    storage.save_bytes(name, b"a text model is timed on the agent's own texts\n")
    return name


def compression_benchmarks_request(*, job_id: Any, candidates: list[dict[str, Any]],
                                   inputs: list[str]) -> int:
    """Store each ready candidate as a signed package and ask the job's device to measure it
    (``BENCHMARK_WARMUP`` + ``BENCHMARK_RUNS`` predictions of ``inputs``, storage names of
    held-out images). A device that cannot load one gets it as ``incompatible`` at once; the
    candidate says so. Returns the number requested."""
    job = CompressionJob.objects.select_related("source__model", "device").get(pk=job_id)
    text = job.source.task_type == TaskType.TEXT_CLASSIFICATION
    if job.device is None or not (inputs or text):
        return 0
    requested = 0
    for candidate in candidates:
        if candidate.get("status") != "ready" or not candidate.get("onnx_path"):
            continue
        package = benchmark_package_store(project=job.project,
                                          onnx_path=Path(candidate["onnx_path"]),
                                          manifest=_candidate_manifest(job, candidate))
        try:
            names = [_text_benchmark_input(package.package_dir)] if text else list(inputs)
            benchmark = device_benchmark_create(
                device=job.device, package_dir=package.package_dir, manifest=package.manifest,
                model_sha256=package.model_sha256, model_size=package.model_size,
                inputs=names, warmup=BENCHMARK_WARMUP, runs=BENCHMARK_RUNS,
                compression_job_id=job.pk, candidate=candidate["key"])
        except BaseException:
            benchmark_package_delete(package_dir=package.package_dir)
            raise
        requested += 1
        compression_candidate_record(job_id=job.pk, candidate={
            "key": candidate["key"], **_benchmark_fields(benchmark)})
    return requested


def _benchmark_fields(benchmark: DeviceBenchmark) -> dict[str, Any]:
    incompatible = benchmark.status == BenchmarkStatus.INCOMPATIBLE
    succeeded = benchmark.status == BenchmarkStatus.SUCCEEDED
    return {"benchmark": {"id": str(benchmark.pk), "status": benchmark.status,
                          "error": benchmark.error},
            "latency": dict(benchmark.result) if succeeded else None,
            "compatible": not incompatible,
            "incompatibilities": benchmark_incompatibilities(benchmark.error)
            if incompatible else []}


def compression_benchmarks_sync(*, job_id: Any) -> dict[str, Any]:
    """Copy the device's results of this job's benchmarks into its candidates. Returns
    ``{"open": number still pending or running, "device_online": bool}``."""
    job = CompressionJob.objects.select_related("device").get(pk=job_id)
    benchmarks = list(DeviceBenchmark.objects.filter(compression_job_id=job.pk))
    by_key = {c.get("key"): c for c in job.candidates}
    for benchmark in benchmarks:
        fields = _benchmark_fields(benchmark)
        current = by_key.get(benchmark.candidate, {})
        if current.get("benchmark") != fields["benchmark"]:
            compression_candidate_record(job_id=job.pk,
                                         candidate={"key": benchmark.candidate, **fields})
    return {"open": sum(b.status in BENCHMARK_OPEN for b in benchmarks),
            "device_online": bool(job.device and job.device.status == "online")}


def candidates_merge_benchmarks(job_id: Any) -> None:
    """Copy the job's benchmarks' statuses into its candidates whatever the job's state (the
    worker's :func:`compression_candidate_record` writes only while it is RUNNING)."""
    with transaction.atomic():
        job = CompressionJob.objects.select_for_update().filter(pk=job_id).first()
        if job is None:
            return
        fields = {b.candidate: _benchmark_fields(b)
                  for b in DeviceBenchmark.objects.filter(compression_job_id=job_id)}
        rows = [{**c, **fields[c.get("key")]} if c.get("key") in fields else c
                for c in job.candidates]
        CompressionJob.objects.filter(pk=job_id).update(candidates=rows)


def compression_benchmarks_expire(*, job_id: Any, reason: str) -> int:
    """Expire this job's open benchmarks with ``reason``; returns how many."""
    expired = 0
    for benchmark in DeviceBenchmark.objects.filter(compression_job_id=job_id,
                                                    status__in=BENCHMARK_OPEN):
        device_benchmark_expire(benchmark=benchmark, reason=reason)
        expired += 1
    compression_benchmarks_sync(job_id=job_id)
    return expired


def compression_cleanup(*, job_id: Any, out_dir: Path | None) -> None:
    """Remove the job's benchmark packages from the storage and its work folder on this host
    (the picked candidate, once registered, lives in its model version's package)."""
    for benchmark in DeviceBenchmark.objects.filter(compression_job_id=job_id,
                                                    status__in=BENCHMARK_OPEN):
        device_benchmark_cancel(benchmark=benchmark)
    for package_dir in set(DeviceBenchmark.objects.filter(compression_job_id=job_id)
                           .values_list("package_dir", flat=True)):
        try:
            benchmark_package_delete(package_dir=package_dir)
        except storage.StorageUnavailable:
            log.warning("could not delete benchmark package %s", package_dir)
    if out_dir is not None:
        shutil.rmtree(out_dir, ignore_errors=True)
        try:  # the job's folder, once its last attempt's is gone
            out_dir.parent.rmdir()
        except OSError:
            pass


__all__ = ["BENCHMARK_INPUTS", "BENCHMARK_RUNS", "BENCHMARK_WARMUP", "candidates_merge_benchmarks",
           "compression_benchmarks_expire", "compression_benchmarks_request",
           "compression_benchmarks_sync", "compression_candidate_record", "compression_cleanup",
           "compression_warnings_record"]
