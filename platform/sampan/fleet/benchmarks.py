"""Writes for on-device benchmarks: a candidate model measured by a device's agent.

A requester (the compression job) stores a signed package (:func:`benchmark_package_store`),
then asks one device to measure it (:func:`device_benchmark_create`). The device learns of it in
its next heartbeat reply, downloads the package and the input images over the device API, and
reports ``running`` then ``succeeded`` / ``failed`` / ``incompatible`` with its figures
(:func:`device_benchmark_report`). The requester may expire or cancel it while it is open.
Every status change is a compare-and-set UPDATE on the status (docs/contracts.md).
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db.models import DateTimeField, F, Value
from django.db.models.functions import Coalesce
from django.utils import timezone, translation
from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop

from edge_agent.runtime import file_sha256
from sampan.fleet.fastpath import fleet_changed_on_commit
from sampan.accounts.models import Project
from sampan.core import storage
from sampan.core.errors import NotFound, ValidationFailed
from sampan.fleet.compatibility import model_incompatibilities
from sampan.fleet.heartbeat_body import MAX_ERROR_CHARS
from sampan.fleet.models import (
    BENCHMARK_OPEN,
    BENCHMARK_REPORTABLE,
    BenchmarkStatus,
    Device,
    DeviceBenchmark,
)
from sampan.registry.signing import sign_manifest

MAX_INPUTS = 16
MAX_RUNS = 1000
MAX_WARMUP = 100
_SHA256 = re.compile(r"^[0-9a-f]{64}$")

# A benchmark's ``error`` is stored in English, as an agent reports its own and as a worker asks
# for it, and read in the request's language (sampan.fleet.stored_texts): the sentences the
# platform writes. The compression worker expires what its device did not measure with the last
# two (workers/tasks/compression.py; repeated here as msgids).
CANCELLED_BY_REQUESTER = gettext_noop("cancelled by the requester")
EXPIRED = gettext_noop("expired")
NOT_MEASURED_IN_TIME = gettext_noop("not measured within the job's time budget")
DEVICE_WENT_OFFLINE = gettext_noop("the device went offline before measuring it")
#: what joins a benchmark's incompatibilities in its ``error``
REASONS_SEPARATOR = "; "


@dataclass(frozen=True)
class BenchmarkPackage:
    """A stored benchmark package: what :func:`device_benchmark_create` takes."""

    package_dir: str
    manifest: dict[str, Any]
    model_sha256: str
    model_size: int


def benchmark_package_store(*, project: Project, onnx_path: Path,
                            manifest: dict[str, Any]) -> BenchmarkPackage:
    """Store ``onnx_path`` and its signed manifest under ``benchmarks/<project>/<uuid>/``.

    ``manifest`` holds the package fields (docs/contracts.md, "Model package": ``schema``,
    ``model``, ``task``, ``labels``, ``preprocessing``, ``inputs``, ``outputs``, ``onnx``,
    ``min_onnxruntime``, ...); ``files`` is filled in here and the whole is signed with the
    platform's key (``sampan.registry.signing.sign_manifest``). Delete it with
    :func:`benchmark_package_delete` when no benchmark needs it any more.
    Raises SigningKeyError, StorageUnavailable.
    """
    sha256, size = file_sha256(onnx_path), Path(onnx_path).stat().st_size
    signed = sign_manifest({**manifest,
                            "files": {"model.onnx": {"sha256": sha256, "size": size}}})
    package_dir = f"benchmarks/{project.pk}/{uuid.uuid4()}"
    scratch = Path(settings.DATA_DIR) / "staging"
    scratch.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix="benchmark-", dir=scratch))
    try:
        storage.save_file(f"{package_dir}/model.onnx", Path(onnx_path))
        (staging / "manifest.json").write_text(json.dumps(signed, indent=2, ensure_ascii=False),
                                               encoding="utf-8")
        storage.save_file(f"{package_dir}/manifest.json", staging / "manifest.json")
    except BaseException:
        storage.delete_tree(package_dir)
        raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return BenchmarkPackage(package_dir=package_dir, manifest=signed, model_sha256=sha256,
                            model_size=size)


def benchmark_package_delete(*, package_dir: str) -> None:
    """Delete a stored benchmark package (its folder in the storage)."""
    storage.delete_tree(package_dir)


def _check_int(value: Any, field: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ValidationFailed(_("%(field)s must be an integer from %(low)d to %(high)d")
                               % {"field": field, "low": low, "high": high}, field=field)
    return value


def device_benchmark_create(*, device: Device, package_dir: str, manifest: dict[str, Any],
                            model_sha256: str, model_size: int, inputs: list[str],
                            warmup: int = 5, runs: int = 50,
                            compression_job_id: Any = None,
                            candidate: str = "") -> DeviceBenchmark:
    """Ask ``device`` to measure the package in ``package_dir`` (signed ``manifest``).

    ``inputs``: 1 to 16 storage names of encoded images; ``warmup`` 0..100 and ``runs``
    1..1000 timed predictions. A device whose runtime cannot load the model
    (:func:`sampan.fleet.compatibility.model_incompatibilities` of its
    :meth:`~sampan.fleet.models.Device.known_runtime`) gets a benchmark created directly in
    status ``incompatible`` with the reasons in ``error``, never delivered.

    Raises ValidationFailed naming the field (``runs``, ``warmup``, ``inputs``,
    ``model_sha256``, ``model_size``, ``manifest``, ``package_dir``, ``compression_job_id``).
    """
    runs = _check_int(runs, "runs", 1, MAX_RUNS)
    warmup = _check_int(warmup, "warmup", 0, MAX_WARMUP)
    if (not isinstance(inputs, list) or not 1 <= len(inputs) <= MAX_INPUTS
            or not all(isinstance(name, str) and name for name in inputs)):
        raise ValidationFailed(_("inputs must be a list of 1 to %(limit)d storage names")
                               % {"limit": MAX_INPUTS}, field="inputs")
    if not isinstance(package_dir, str) or not package_dir.strip("/"):
        raise ValidationFailed(_("package_dir must name a storage folder"), field="package_dir")
    if not isinstance(manifest, dict) or "signature" not in manifest:
        raise ValidationFailed(_("manifest must be the signed manifest"), field="manifest")
    if not isinstance(model_sha256, str) or not _SHA256.match(model_sha256):
        raise ValidationFailed(_("model_sha256 must be 64 lowercase hex digits"),
                               field="model_sha256")
    model_size = _check_int(model_size, "model_size", 1, 1 << 62)
    entry = (manifest.get("files") or {}).get("model.onnx") or {}
    if entry.get("sha256") != model_sha256 or entry.get("size") != model_size:
        raise ValidationFailed(_("model_sha256 and model_size must be those the manifest lists "
                                 "for model.onnx"), field="model_sha256")
    try:
        job_id = uuid.UUID(str(compression_job_id)) if compression_job_id else None
    except ValueError:
        raise ValidationFailed(_("compression_job_id must be a UUID"),
                               field="compression_job_id") from None
    with translation.override("en"):  # stored in English whoever asks (module constants)
        reasons = model_incompatibilities(manifest, device.known_runtime())
    now = timezone.now()
    return DeviceBenchmark.objects.create(
        project_id=device.project_id, device=device, package_dir=package_dir.rstrip("/"),
        manifest=manifest, model_sha256=model_sha256, model_size=model_size,
        inputs=list(inputs), warmup=warmup, runs=runs,
        compression_job_id=job_id,
        candidate=str(candidate)[:200],
        status=BenchmarkStatus.INCOMPATIBLE if reasons else BenchmarkStatus.PENDING,
        error=REASONS_SEPARATOR.join(reasons)[:MAX_ERROR_CHARS],
        finished_at=now if reasons else None)


def _close(benchmark: DeviceBenchmark, status: str, error: str) -> DeviceBenchmark:
    now = timezone.now()
    if DeviceBenchmark.objects.filter(pk=benchmark.pk, status__in=BENCHMARK_OPEN).update(
            status=status, error=error[:MAX_ERROR_CHARS], finished_at=now, updated_at=now):
        fleet_changed_on_commit()  # no longer open: its device's heartbeats go fast again
    benchmark.refresh_from_db()
    return benchmark


def device_benchmark_cancel(*, benchmark: DeviceBenchmark) -> DeviceBenchmark:
    """pending/running -> cancelled (a finished one stays as it is). Returns it as stored."""
    return _close(benchmark, BenchmarkStatus.CANCELLED, CANCELLED_BY_REQUESTER)


def device_benchmark_expire(*, benchmark: DeviceBenchmark, reason: str) -> DeviceBenchmark:
    """pending/running -> expired with ``reason`` in ``error`` (a finished one stays as it is).
    Returns it as stored."""
    return _close(benchmark, BenchmarkStatus.EXPIRED, reason or EXPIRED)


def device_benchmark_report(*, device: Device, benchmark_id: Any, status: str,
                            result: dict[str, Any] | None, error: str | None) -> DeviceBenchmark:
    """Apply the agent's report on one of ``device``'s own benchmarks; returns it as stored.

    ``running`` moves pending -> running (sets ``delivered_at``); ``succeeded``, ``failed``
    and ``incompatible`` move pending/running there (set ``result``, ``error``,
    ``finished_at``). A report on a benchmark that is no longer open (expired, cancelled,
    already finished) changes nothing. Raises NotFound for another device's or an unknown
    benchmark, ValueError for a status agents cannot report.
    """
    if status not in BENCHMARK_REPORTABLE:
        raise ValueError(f"agents cannot report benchmark status {status!r}")
    try:
        key = uuid.UUID(str(benchmark_id))
    except ValueError:
        raise NotFound(_("benchmark not found")) from None
    mine = DeviceBenchmark.objects.filter(pk=key, device=device)
    now = timezone.now()
    if status == BenchmarkStatus.RUNNING:
        mine.filter(status=BenchmarkStatus.PENDING).update(
            status=status, delivered_at=now, updated_at=now)
    elif mine.filter(status__in=BENCHMARK_OPEN).update(
            status=status, result=result or {}, error=(error or "")[:MAX_ERROR_CHARS],
            delivered_at=Coalesce(F("delivered_at"), Value(now, output_field=DateTimeField())),
            finished_at=now, updated_at=now):
        fleet_changed_on_commit()
    row = mine.first()
    if row is None:
        raise NotFound(_("benchmark not found"))
    return row
