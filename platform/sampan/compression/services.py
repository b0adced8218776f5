"""Writes for compression jobs (docs/decisions/compression.md).

The Celery adapter ``workers.tasks.compression`` calls :func:`compression_job_start`
(compare-and-set QUEUED -> RUNNING; a second delivery gets None), records each candidate the
engine makes (:func:`compression_candidate_record`), asks the target device to measure the ready
ones (:func:`compression_benchmarks_request`), merges the device's figures as they arrive
(:func:`compression_benchmarks_sync`) and ends with :func:`compression_job_complete`, which
registers the pick as a new model version whose parent is the source.
"""

from __future__ import annotations

import logging
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop

from sampan.accounts.audit import audit_record
from sampan.accounts.models import Project
from sampan.compression.models import METHODS, TEXT_METHODS, CompressionJob
from sampan.core import storage
from sampan.core.stored_text import CANCELLED_BY_USER
from sampan.core.enqueue import job_enqueue_on_commit
from sampan.core.errors import ValidationFailed
from sampan.core.idempotency import IdempotencyKey, idempotency_fields
from sampan.core.jobs import JobStatus, job_heartbeat, job_transition
from sampan.core.services import job_publish, job_queue_quota_check, job_report_progress
from sampan.datasets.models import Split, TaskType
from sampan.compression.candidates import (  # noqa: F401  (the worker's API, re-exported)
    BENCHMARK_INPUTS, BENCHMARK_RUNS, BENCHMARK_WARMUP, candidates_merge_benchmarks,
    compression_benchmarks_expire, compression_benchmarks_request, compression_benchmarks_sync,
    compression_candidate_record, compression_cleanup, compression_warnings_record)
from sampan.fleet.benchmarks import device_benchmark_cancel
from sampan.fleet.models import BENCHMARK_OPEN, Device, DeviceBenchmark
from sampan.registry.models import ModelVersion
from sampan.registry.selectors import model_version_file
from sampan.registry.services import model_version_register
from sampan.training.services import dataset_version_local_rows, dataset_version_text_rows
from sampan.accounts.lifecycle import ensure_active

log = logging.getLogger(__name__)

#: Default and limits of the job's wall-clock budget (seconds). 10 minutes is the issue's
#: default on 2 cores; under 2 minutes no student can be trained.
DEFAULT_BUDGET_S = 600.0
MIN_BUDGET_S = 120.0
MAX_BUDGET_S = 6 * 3600.0
MAX_ACCURACY_BUDGET_PT = 50.0
#: a job's ``error`` when its inputs cannot be read (stored in English, read in the request's
#: language: sampan.compression.stored_texts)
READING_SOURCE_FAILED = gettext_noop("reading the source model or its images failed: %(error)s")


def compression_job_create(*, project: Project, source: ModelVersion, device: Device | None,
                           accuracy_budget_pt: float = 1.0, budget_s: float = DEFAULT_BUDGET_S,
                           methods: list[str] | None = None, seed: int = 0,
                           user: Any = None,
                           idempotency: IdempotencyKey | None = None) -> CompressionJob:
    """Create and enqueue a compression job of ``source`` for ``device`` (None: measured on the
    compression worker itself). ``idempotency``: the request's key, recorded on the job
    (:func:`sampan.core.idempotency.idempotent_create`).

    Raises ValidationFailed naming the field: a source that is not an image or text classifier
    or has no dataset version to calibrate and evaluate on (``source_model_version_id``), a budget
    outside 0..50 points (``accuracy_budget_pt``) or 120 s..6 h (``budget_s``), an unknown
    method or, for a text classifier, none of ``TEXT_METHODS`` (``methods``), a device of
    another project (``device_id``). Raises QuotaExceeded (429) when the project already has
    ``settings.SAMPAN_MAX_QUEUED_JOBS_PER_PROJECT`` compression jobs waiting.
    """
    ensure_active(project=project, doing=_("compressing"))
    text = source.task_type == TaskType.TEXT_CLASSIFICATION
    if source.task_type != TaskType.IMAGE_CLASSIFICATION and not text:
        raise ValidationFailed(_("compressing %(task)s models is not available yet")
                               % {"task": source.task_type}, field="source_model_version_id")
    if source.parent_id is not None:
        parent = source.parent
        raise ValidationFailed(
            _("%(model)s is itself compressed (from v%(parent)s): compress its float parent "
              "instead") % {"model": source.label, "parent": parent.version if parent else "?"},
            field="source_model_version_id")
    if source.dataset_version_id is None:
        raise ValidationFailed(_("this model version has no dataset version: compression "
                                 "needs its texts to measure accuracy") if text else
                               _("this model version has no dataset version: compression "
                                 "needs its images to calibrate, distil and measure accuracy"),
                               field="source_model_version_id")
    if not 0 <= accuracy_budget_pt <= MAX_ACCURACY_BUDGET_PT:
        raise ValidationFailed(_("accuracy_budget_pt must be from 0 to %(limit)g points; got "
                                 "%(value)g") % {"limit": MAX_ACCURACY_BUDGET_PT,
                                                  "value": accuracy_budget_pt},
                               field="accuracy_budget_pt")
    if not MIN_BUDGET_S <= budget_s <= MAX_BUDGET_S:
        raise ValidationFailed(_("budget_s must be from %(low).0f s to %(high).0f s; got "
                                 "%(value)g") % {"low": MIN_BUDGET_S, "high": MAX_BUDGET_S,
                                                  "value": budget_s}, field="budget_s")
    # a text model's default is what applies to it; resolution and pruning asked for one are
    # accepted and ignored by the worker, which says so in the job's warnings
    default = TEXT_METHODS if text else METHODS
    chosen = list(dict.fromkeys(default if methods is None else methods))  # no duplicates
    unknown = [m for m in chosen if m not in METHODS]
    if unknown or not chosen:
        values = {"methods": ", ".join(METHODS), "unknown": ", ".join(map(str, unknown))}
        raise ValidationFailed((_("methods must be a non-empty subset of %(methods)s; unknown: "
                                  "%(unknown)s") if unknown
                                else _("methods must be a non-empty subset of %(methods)s"))
                               % values, field="methods")
    if text and not any(m in TEXT_METHODS for m in chosen):
        raise ValidationFailed(
            _("a text classifier is compressed by %(methods)s; %(asked)s make smaller image "
              "networks (a lower resolution, fewer channels) and do not apply to it")
            % {"methods": ", ".join(TEXT_METHODS), "asked": ", ".join(chosen)}, field="methods")
    if device is not None and device.project_id != project.pk:
        raise ValidationFailed(_("the device is not in this project"), field="device_id")
    with transaction.atomic():
        job_queue_quota_check(CompressionJob, project, kind="compression job")
        job = CompressionJob.objects.create(
            project=project, source=source, device=device,
            device_name=device.name if device else "", accuracy_budget_pt=accuracy_budget_pt,
            budget_s=budget_s, methods=chosen, seed=seed, created_by=user
            if getattr(user, "is_authenticated", False) else None,
            **idempotency_fields(idempotency))
        job_transition(CompressionJob, job.pk, JobStatus.QUEUED)
        audit_record(actor=user, action="compression.create", project=project, target=job,
                     details={"source": source.label, "device": job.device_name,
                              "budget_s": budget_s})
        job_enqueue_on_commit(CompressionJob, job.pk)
    job.refresh_from_db()
    return job


def compression_job_cancel(*, job: CompressionJob) -> CompressionJob:
    """Cancel a job that has not ended: its open device benchmarks are cancelled at once; a
    RUNNING worker sees it at its next progress report, removes its candidates' files and
    registers nothing. Raises ValidationFailed when the job already ended."""
    if not job_transition(CompressionJob, job.pk, JobStatus.CANCELLED,
                          error=CANCELLED_BY_USER, cancel_requested=True):
        job.refresh_from_db()
        if job.is_terminal:
            raise ValidationFailed(_("the job already ended (%(status)s)")
                                   % {"status": job.status}, field="status")
    for benchmark in DeviceBenchmark.objects.filter(compression_job_id=job.pk,
                                                    status__in=BENCHMARK_OPEN):
        device_benchmark_cancel(benchmark=benchmark)
    candidates_merge_benchmarks(job.pk)  # the job's rows say "cancelled", not "waiting"
    job_publish(CompressionJob, job.pk, {"status": JobStatus.CANCELLED}, force=True)
    job.refresh_from_db()
    return job


@dataclass
class CompressionInputs:
    """Plain inputs for the engine and the adapter: ids, paths and numbers."""

    job_id: str
    attempt: int
    labels: list[str]
    preprocessing: dict[str, Any]
    teacher_onnx: Path
    checkpoint: Path | None
    out_dir: Path
    budget_s: float
    accuracy_budget_pt: float
    methods: list[str]
    seed: int
    allow_flips: bool
    providers: list[str]
    device_id: str | None
    device_name: str = ""
    train: list[tuple[str, int, str]] = field(default_factory=list)
    val: list[tuple[str, int, str]] = field(default_factory=list)
    test: list[tuple[str, int, str]] = field(default_factory=list)
    #: (storage name, local path) of the encoded images each benchmark times (none for text:
    #: the agent times a text model on its own texts)
    benchmark_inputs: list[tuple[str, str]] = field(default_factory=list)
    task_type: str = TaskType.IMAGE_CLASSIFICATION
    #: a text model's featurisation settings (its manifest's ``text``)
    text: dict[str, Any] | None = None
    #: the dataset version's classes, which the rows' class indices index (a text model's
    #: labels are these names normalised and merged)
    dataset_labels: list[str] = field(default_factory=list)


def compression_job_start(*, job_id: Any) -> CompressionInputs | None:
    """QUEUED -> RUNNING and the job's inputs, or None when another delivery took it (or it
    failed here: the source's files or samples are missing)."""
    if not job_transition(CompressionJob, job_id, JobStatus.RUNNING):
        return None
    job = CompressionJob.objects.select_related("source__model", "source__dataset_version",
                                                "source__training_job", "device").get(pk=job_id)
    out_dir = Path(settings.DATA_DIR) / "jobs" / "compression" / str(job.pk) / \
        f"attempt-{job.attempt}"
    shutil.rmtree(out_dir, ignore_errors=True)
    out_dir.mkdir(parents=True, exist_ok=True)
    text = job.source.task_type == TaskType.TEXT_CLASSIFICATION
    try:
        teacher = model_version_file(job.source, "model.onnx")
        if text:  # texts come from the database; a text model has no checkpoint to distil
            rows, checkpoint = dataset_version_text_rows(job.source.dataset_version), None
        else:
            rows = dataset_version_local_rows(job.source.dataset_version)
            checkpoint = _checkpoint(job.source, out_dir)
    except Exception as exc:  # noqa: BLE001 - storage, missing files: the job says which
        compression_job_fail(job_id=job.pk, message=READING_SOURCE_FAILED % {"error": exc})
        return None
    training = job.source.training_job
    held_out = rows[Split.TEST] or rows[Split.VAL]
    names = {} if text else _sample_names(job.source.dataset_version,
                                          [r[2] for r in held_out][:BENCHMARK_INPUTS])
    runtime = job.device.known_runtime() if job.device else {}
    inputs = CompressionInputs(
        job_id=str(job.pk), attempt=job.attempt, labels=list(job.source.labels),
        preprocessing=dict(job.source.manifest.get("preprocessing") or {}),
        teacher_onnx=teacher, checkpoint=checkpoint, out_dir=out_dir, budget_s=job.budget_s,
        accuracy_budget_pt=job.accuracy_budget_pt, methods=list(job.methods), seed=job.seed,
        allow_flips=bool(training.allow_flips) if training else True,
        providers=list(runtime.get("providers") or ["CPUExecutionProvider"]),
        device_id=str(job.device_id) if job.device_id else None, device_name=job.device_name,
        train=rows[Split.TRAIN], val=rows[Split.VAL], test=rows[Split.TEST],
        benchmark_inputs=[(names[sid], path) for path, _index, sid in held_out[:BENCHMARK_INPUTS]
                          if sid in names],
        task_type=str(job.source.task_type),
        text=dict(job.source.manifest.get("text") or {}) if text else None,
        dataset_labels=list(job.source.dataset_version.labels))
    job_publish(CompressionJob, job.pk, {"status": JobStatus.RUNNING}, force=True)
    return inputs


def _sample_names(version: Any, sample_ids: list[str]) -> dict[str, str]:
    items = version.items.select_related("sample").filter(sample_id__in=sample_ids)
    return {str(item.sample_id): item.sample.file for item in items}


def _checkpoint(source: ModelVersion, out_dir: Path) -> Path | None:
    """The training checkpoint of ``source`` on this host (copied from the bucket into
    ``out_dir``), or None when the version has none (not trained here, or its files are gone)."""
    job = source.training_job
    if job is None or source.parent_id is not None:
        return None  # a compressed version's weights are not its training checkpoint's
    name = f"jobs/training/{job.pk}/attempt-{job.attempt}/checkpoint.pt"
    if not storage.is_remote():
        path = Path(settings.DATA_DIR) / name
        return path if path.is_file() else None
    if not storage.exists(name):
        return None
    return storage.local_file(name, cache=out_dir / "cache")


def compression_progress(*, job_id: Any, progress: dict[str, Any]) -> bool:
    """Store and publish progress. False when the job is no longer RUNNING."""
    return job_report_progress(CompressionJob, job_id, progress)


def compression_heartbeat(*, job_id: Any) -> bool:
    return job_heartbeat(CompressionJob, job_id)


def compression_job_fail(*, job_id: Any, message: str) -> None:
    if job_transition(CompressionJob, job_id, JobStatus.FAILED, error=message):
        job_publish(CompressionJob, job_id, {"status": JobStatus.FAILED, "error": message},
                    force=True)


def _method_chain(candidates: list[dict[str, Any]], key: str) -> list[str]:
    """The methods from the float model to candidate ``key``, oldest first, following
    ``parent``: ``res64-int8`` -> ``["distilled", "int8"]`` (its own ``method`` says only the
    last step)."""
    by_key = {c.get("key"): c for c in candidates}
    chain: list[str] = []
    current = by_key.get(key)
    while current is not None and current.get("method") not in (None, "fp32"):
        chain.insert(0, str(current["method"]))
        current = by_key.get(current.get("parent"))
    return chain


def compression_job_complete(*, job_id: Any, picked: str | None, reason: str,
                             onnx_path: Path | None = None) -> ModelVersion | None:
    """End a RUNNING job: with ``picked`` (a candidate key) register ``onnx_path`` as the next
    version of the source's model (parent: the source; lineage: the job, method, parameters,
    calibration; metrics: its held-out accuracy and the device's latency); without, succeed
    with ``pick_reason`` only (keep the float model). Returns the version or None."""
    job = CompressionJob.objects.select_related("source__model", "source__dataset_version",
                                                "project", "device").get(pk=job_id)
    if job.status != JobStatus.RUNNING:
        return None
    done = {**job.progress, "fraction": 1.0, "message": "done", "phase": "done"}
    if not picked:
        if job_transition(CompressionJob, job.pk, JobStatus.SUCCEEDED, picked="",
                          pick_reason=reason, progress=done):
            job_publish(CompressionJob, job.pk, {"status": JobStatus.SUCCEEDED}, force=True)
        return None
    candidate = next(c for c in job.candidates if c.get("key") == picked)
    reference = next((c for c in job.candidates if c.get("key") == "fp32"), {})
    source = job.source
    metrics: dict[str, Any] = {
        "evaluated_on": candidate.get("evaluated_on"),
        "val_accuracy": candidate.get("val_accuracy"),
        "classes_not_evaluated": list((source.metrics or {}).get("classes_not_evaluated") or []),
        "accuracy_drop_pt": candidate.get("accuracy_drop_pt"),
        "reference_accuracy": reference.get("accuracy"),
        "device_latency": candidate.get("latency"),
        "device_latency_reference": reference.get("latency"),
        "measured_on": job.device_name or "compression worker",
    }
    if candidate.get("evaluated_on") == "test":
        metrics.update(test_accuracy=candidate.get("accuracy"),
                       test_macro_f1=candidate.get("macro_f1"))
    else:
        metrics["macro_f1"] = candidate.get("macro_f1")
    version_dataset = source.dataset_version
    text = source.task_type == TaskType.TEXT_CLASSIFICATION
    if text:  # the same features as the source: its text settings unchanged
        input_shape: list[Any] = ["N", "L"]
    else:
        size = candidate["preprocessing"]["size"]
        input_shape = ["N", 3, size[0], size[1]]
    version = None
    try:
        with transaction.atomic():
            version = model_version_register(
                project=job.project, model_name=source.model.name, task_type=source.task_type,
                labels=list(source.labels),
                preprocessing={} if text else candidate["preprocessing"],
                onnx_path=Path(onnx_path or candidate["onnx_path"]),
                input_shape=input_shape, metrics=metrics,
                onnx_info=candidate.get("onnx") or {}, pretrained=source.pretrained,
                text=dict(source.manifest.get("text") or {}) if text else None,
                lineage={"dataset_version_id": str(version_dataset.pk) if version_dataset else None,
                         "dataset_version_digest": (version_dataset.digest if version_dataset
                                                    else None),
                         "training_job_id": None, "compression_job_id": str(job.pk),
                         "parent_model_version_id": str(source.pk),
                         "compressed_from": {"model_version_id": str(source.pk),
                                             "version": source.version},
                         "method": candidate.get("method"), "candidate": picked,
                         "methods": _method_chain(job.candidates, picked),
                         "params": candidate.get("params") or {},
                         "accuracy_budget_pt": job.accuracy_budget_pt},
                dataset_version=version_dataset, parent=source)
            succeeded = job_transition(CompressionJob, job.pk, JobStatus.SUCCEEDED, picked=picked,
                                       pick_reason=reason, model_version=version, progress=done)
            if not succeeded:  # cancelled or reaped while registering: no version
                transaction.set_rollback(True)
            else:
                audit_record(actor=None, action="model_version.register", project=job.project,
                             target=version,
                             details={"model": source.model.name, "version": version.version,
                                      "compression_job_id": str(job.pk), "method": picked})
    except BaseException:
        # rolled back after the version was stored: its package must not linger without a row
        if version is not None:
            storage.delete_tree(version.package_dir)
        raise
    if not succeeded:
        # the version's row was rolled back: its stored package goes with it
        storage.delete_tree(version.package_dir)
        return None
    job_publish(CompressionJob, job.pk, {"status": JobStatus.SUCCEEDED,
                                         "model_version_id": str(version.pk)}, force=True)
    return version
