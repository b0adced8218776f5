"""Writes for training: creating, starting, reporting, finishing and cancelling training jobs.

The Celery adapter in ``workers.tasks.training`` calls ``training_job_start`` (compare-and-set
QUEUED -> RUNNING; a second delivery gets None and returns), reports progress with
``training_job_progress`` and ends with ``training_job_complete`` or ``training_job_fail``.
"""

from __future__ import annotations

import logging
import math
import shutil
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import F, OuterRef, Subquery
from django.utils.translation import gettext as _

from sampan.accounts.audit import audit_record
from sampan.accounts.models import Project
from sampan.core import storage as shared_storage
from sampan.core.stored_text import CANCELLED_BY_USER
from sampan.core.enqueue import job_enqueue_on_commit
from sampan.core.errors import ValidationFailed
from sampan.core.idempotency import IdempotencyKey, idempotency_fields
from sampan.core.jobs import JobStatus, job_heartbeat, job_transition
from sampan.core.names import display_name
from sampan.core.services import job_publish, job_queue_quota_check, job_report_progress
from sampan.core.validation import validated_name
from sampan.datasets import storage
from sampan.datasets.models import DatasetVersion, Split, TaskType
from sampan.datasets.selectors import dataset_version_pixels
from sampan.registry.models import ModelVersion
from sampan.registry.services import model_version_register
from sampan.training.budget import minimum_budget_s, minimum_budget_text
from sampan.training.models import Augmentation, EvaluationReport, ModelPreference, TrainingJob
from sampan.accounts.lifecycle import ensure_active

log = logging.getLogger(__name__)

PARITY_MAX_ABS_DIFF = 1e-4  # the export gate of the foundation issue


def training_job_create(*, project: Project, dataset_version: DatasetVersion, budget_s: float,
                        seed: int = 0, model_name: str = "",
                        augmentation: str = Augmentation.AUTO,
                        model_preference: str = ModelPreference.MORE_ACCURATE,
                        allow_flips: bool = True, user: Any = None,
                        idempotency: IdempotencyKey | None = None) -> TrainingJob:
    """Create and enqueue a training job on a frozen dataset version (``idempotency``: the
    request's key, recorded on the job: see :func:`sampan.core.idempotency.idempotent_create`).

    Raises ValidationFailed (naming the field) when the version cannot be trained: a task type
    this release cannot train yet, fewer than 2 classes, an empty train or validation split, a
    budget below :func:`sampan.training.budget.minimum_budget_s` of the version's images or
    above ``settings.SAMPAN_TRAINING_MAX_BUDGET_S`` (24 h by default), an unknown
    ``augmentation`` / ``model_preference``, or a ``model_name`` that the rule of
    ``sampan.core.names`` refuses. An empty test split is fine: the engine then reports on the
    validation split. Raises QuotaExceeded (429) when the project already has
    ``settings.SAMPAN_MAX_QUEUED_JOBS_PER_PROJECT`` training jobs waiting.
    """
    ensure_active(project=project, dataset=dataset_version.dataset, doing=_("training"))
    task = dataset_version.task_type
    if task not in (TaskType.IMAGE_CLASSIFICATION, TaskType.OBJECT_DETECTION,
                    TaskType.TEXT_CLASSIFICATION):
        raise ValidationFailed(_("training %(task)s is not available yet") % {"task": task},
                               field="dataset_version_id")
    for name, value, choices in (("augmentation", augmentation, Augmentation),
                                 ("model_preference", model_preference, ModelPreference)):
        if value not in choices.values:
            raise ValidationFailed(_("%(field)s must be one of %(choices)s; got %(value)r")
                                   % {"field": name, "choices": ", ".join(choices.values),
                                      "value": value}, field=name)
    n_images = int(dataset_version.stats.get("samples", 0))
    pixels = dataset_version_pixels(dataset_version)
    # the whole seconds users are told, so that the number said is the number enforced
    if budget_s < math.ceil(minimum_budget_s(n_images, pixels, task)):
        values = {"budget_s": budget_s, "images": n_images,
                  "minimum": minimum_budget_text(n_images, pixels, task)}
        if task == TaskType.TEXT_CLASSIFICATION:
            message = _("budget_s %(budget_s)g is too short for %(images)d texts: at least "
                        "%(minimum)s s") % values
        elif n_images and pixels / n_images >= 1e6:
            message = _("budget_s %(budget_s)g is too short for %(images)d images of "
                        "%(megapixels).1f megapixels on average: at least %(minimum)s s") % {
                **values, "megapixels": pixels / 1e6 / n_images}
        else:
            message = _("budget_s %(budget_s)g is too short for %(images)d images: at least "
                        "%(minimum)s s") % values
        raise ValidationFailed(message, field="budget_s")
    longest = settings.SAMPAN_TRAINING_MAX_BUDGET_S
    if budget_s > longest:
        raise ValidationFailed(_("budget_s %(budget_s)g is too long: at most %(longest).0f s "
                                 "(%(hours).3g h, SAMPAN_TRAINING_MAX_BUDGET_S)")
                               % {"budget_s": budget_s, "longest": longest,
                                  "hours": longest / 3600}, field="budget_s")
    if task == TaskType.OBJECT_DETECTION:
        if not dataset_version.labels:
            raise ValidationFailed(_("a detector needs at least 1 class with boxes; this "
                                     "version has none"), field="dataset_version_id")
    elif len(dataset_version.labels) < 2:
        raise ValidationFailed(_("a classifier needs at least 2 classes with labeled samples; "
                                 "this version has %(count)d")
                               % {"count": len(dataset_version.labels)},
                               field="dataset_version_id")
    splits = dataset_version.stats.get("splits", {})
    for split in (Split.TRAIN, Split.VAL):
        if not splits.get(split):
            raise ValidationFailed(
                _("the %(split)s split of this version is empty: label more samples or freeze "
                  "a version with a larger val_fraction") % {"split": split},
                field="dataset_version_id")
    # a dataset named before the name rule existed may hold what it refuses: not a model name
    name = (validated_name(model_name, field="model_name") if model_name.strip()
            else display_name(dataset_version.dataset.name))
    with transaction.atomic():
        job_queue_quota_check(TrainingJob, project, kind="training job")
        # a text job trains no image backbone: no architecture (its families are in the recipe)
        architecture = ("" if task == TaskType.TEXT_CLASSIFICATION
                        else TrainingJob._meta.get_field("architecture").default)
        job = TrainingJob.objects.create(project=project, dataset_version=dataset_version,
                                         task_type=dataset_version.task_type, model_name=name,
                                         architecture=architecture,
                                         budget_s=budget_s, seed=seed,
                                         augmentation=augmentation,
                                         model_preference=model_preference,
                                         allow_flips=bool(allow_flips),
                                         **idempotency_fields(idempotency))
        job_transition(TrainingJob, job.pk, JobStatus.QUEUED)
        audit_record(actor=user, action="training.create", project=project, target=job,
                     details={"model_name": name, "dataset_version": dataset_version.number,
                              "budget_s": budget_s})
        job_enqueue_on_commit(TrainingJob, job.pk)
    job.refresh_from_db()
    return job


def training_job_cancel(*, job: TrainingJob, user: Any = None) -> TrainingJob:
    """Cancel a job that has not finished. A RUNNING worker sees it at its next progress report.
    Audited (``training.cancel``, by ``user``) when it was cancelled now."""
    if job_transition(TrainingJob, job.pk, JobStatus.CANCELLED, error=CANCELLED_BY_USER,
                      cancel_requested=True):
        audit_record(actor=user, action="training.cancel", project=job.project, target=job,
                     details={"model_name": job.model_name})
    else:
        job.refresh_from_db()
        if job.is_terminal:
            raise ValidationFailed(_("the job already ended (%(status)s)")
                                   % {"status": job.status}, field="status")
    job_publish(TrainingJob, job.pk, {"status": JobStatus.CANCELLED}, force=True)
    job.refresh_from_db()
    return job


@dataclass
class TrainingInputs:
    """Plain inputs for the ML engine: no models, only ids, paths and numbers.

    ``train``/``val``/``test`` rows are ``(path, class index, sample id)`` for
    image_classification and ``(path, boxes, sample id)`` for object_detection, ``boxes`` being
    ``DatasetVersionItem.boxes`` (``[[x1, y1, x2, y2, class index], ...]``, px of the upright
    image; empty for a background image)."""

    job_id: str
    attempt: int
    labels: list[str]
    train: list[tuple[str, Any, str]] = field(default_factory=list)
    val: list[tuple[str, Any, str]] = field(default_factory=list)
    test: list[tuple[str, Any, str]] = field(default_factory=list)  # held out; may be empty
    task_type: str = TaskType.IMAGE_CLASSIFICATION
    budget_s: float = 60.0
    seed: int = 0
    augmentation: str = Augmentation.AUTO
    model_preference: str = ModelPreference.MORE_ACCURATE
    allow_flips: bool = True
    out_dir: Path = Path(".")


#: times one job's message may be put back behind a fairer job before it runs anyway (the
#: fairer job's own message may be lost: the reaper re-sends it, meanwhile nothing spins)
MAX_DEFERRALS = 20


def training_job_fair_next() -> str | None:
    """The id of the QUEUED training job a free worker should run next, or None when none is
    queued: the oldest job of the project served least recently (the latest start of its
    training jobs furthest in the past; a project never served first). So one project's many
    queued jobs do not starve another project's one job: the queue takes turns between projects
    (round robin by last service, as fair-share schedulers do)."""
    last_start = (TrainingJob.objects.filter(project=OuterRef("project"),
                                             started_at__isnull=False)
                  .order_by("-started_at").values("started_at")[:1])
    chosen = (TrainingJob.objects.filter(status=JobStatus.QUEUED)
              .annotate(served=Subquery(last_start))
              .order_by(F("served").asc(nulls_first=True), "created_at", "pk")
              .values_list("pk", flat=True).first())
    return None if chosen is None else str(chosen)


def training_job_defer(*, job_id: Any, deferrals: int) -> bool:
    """Put a QUEUED job's message back at the end of its queue because a fairer job waits
    (:func:`training_job_fair_next`). True when it was put back (False: no longer QUEUED, or
    deferred ``MAX_DEFERRALS`` times already: run it now)."""
    if deferrals >= MAX_DEFERRALS or not TrainingJob.objects.filter(
            pk=job_id, status=JobStatus.QUEUED).exists():
        return False
    from sampan.celery import app

    app.send_task(TrainingJob.task_name, args=[str(job_id)],
                  kwargs={"deferrals": deferrals + 1}, queue=TrainingJob.task_queue)
    return True


def training_job_start(*, job_id: Any) -> TrainingInputs | None:
    """QUEUED -> RUNNING and the job's inputs, or None when another delivery already took it."""
    if not job_transition(TrainingJob, job_id, JobStatus.RUNNING):
        return None
    job = TrainingJob.objects.select_related("dataset_version").get(pk=job_id)
    inputs = TrainingInputs(job_id=str(job.pk), attempt=job.attempt,
                            labels=list(job.dataset_version.labels), budget_s=job.budget_s,
                            seed=job.seed, augmentation=str(job.augmentation),
                            model_preference=str(job.model_preference),
                            allow_flips=bool(job.allow_flips), task_type=str(job.task_type))
    try:
        if job.task_type == TaskType.TEXT_CLASSIFICATION:
            rows = dataset_version_text_rows(job.dataset_version)
        else:
            rows = dataset_version_local_rows(
                job.dataset_version, boxes=job.task_type == TaskType.OBJECT_DETECTION)
    except (shared_storage.StorageUnavailable, FileNotFoundError) as exc:
        missing = f"sample file {exc} is missing from storage" \
            if isinstance(exc, FileNotFoundError) else str(exc)
        training_job_fail(job_id=job.pk, message=f"reading the samples failed: {missing}")
        return None
    inputs.train, inputs.val, inputs.test = rows[Split.TRAIN], rows[Split.VAL], rows[Split.TEST]
    # artifacts of each attempt live apart, so a retry never reads a half-written file. The
    # engine writes to this worker's own disk; training_job_complete puts them into the shared
    # storage (the bucket). With local storage they stay in this folder, as on one host.
    if shared_storage.is_remote():
        inputs.out_dir = Path(settings.DATA_DIR) / training_artifacts_prefix(job.pk, job.attempt)
    else:
        inputs.out_dir = Path(settings.DATA_DIR) / "jobs" / "training" / str(job.pk) / \
            f"attempt-{job.attempt}"
    inputs.out_dir.mkdir(parents=True, exist_ok=True)
    job_publish(TrainingJob, job.pk, {"status": JobStatus.RUNNING}, force=True)
    return inputs


def dataset_version_local_rows(version: DatasetVersion, *, boxes: bool = False
                               ) -> dict[str, list[tuple[str, Any, str]]]:
    """A version's images as ``{split: [(path on this host, class index, sample id), ...]}`` for
    the train, val and test splits (ordered by content hash: the same order on every host);
    with ``boxes`` the middle element is the item's boxes (``[[x1, y1, x2, y2, class], ...]``).
    Raises StorageUnavailable, FileNotFoundError (a sample file missing from storage)."""
    items = list(version.items.select_related("sample").order_by("sample__content_sha256"))
    local = _local_samples([item.sample.file for item in items])
    rows: dict[str, list[tuple[str, int, str]]] = {Split.TRAIN: [], Split.VAL: [], Split.TEST: []}
    for item in items:
        if item.split in rows:
            rows[item.split].append((str(local[item.sample.file]),
                                     list(item.boxes) if boxes else item.class_index,
                                     str(item.sample_id)))
    return rows


def dataset_version_text_rows(version: DatasetVersion) -> dict[str, list[tuple[str, Any, str]]]:
    """A text version's samples as ``{split: [(text, class index, sample id), ...]}`` for the
    train, val and test splits (ordered by content hash, as the image rows): texts are read from
    the database, whole (the engine featurises their first characters)."""
    rows: dict[str, list[tuple[str, Any, str]]] = {Split.TRAIN: [], Split.VAL: [], Split.TEST: []}
    items = (version.items.order_by("sample__content_sha256")
             .values_list("split", "sample__text", "class_index", "sample_id"))
    for split, text, class_index, sample_id in items.iterator(chunk_size=2000):
        if split in rows:
            rows[split].append((text, class_index, str(sample_id)))
    return rows


def _local_samples(names: list[str]) -> dict[str, Path]:
    """Storage name -> a path on this worker: the files themselves with local storage; copies
    in this worker's content-addressed cache (``SAMPAN_DATA_DIR/cache/samples/...``, downloaded
    once, several at a time) from the bucket."""
    unique = sorted(set(names))
    if not shared_storage.is_remote():
        return {name: storage.sample_local_file(name) for name in unique}
    with ThreadPoolExecutor(max_workers=8) as pool:
        local = dict(zip(unique, pool.map(storage.sample_local_file, unique), strict=True))
    # the cache keeps what this job uses and the most recently used of the rest
    deleted, freed = shared_storage.cache_trim(keep=set(local.values()))
    if deleted:
        log.info("download cache: %d least recently used files deleted (%d bytes)", deleted,
                 freed)
    return local


def training_artifacts_prefix(job_id: Any, attempt: int) -> str:
    """Storage folder of one attempt's artifacts: ``jobs/training/<job>/attempt-<n>``."""
    return f"jobs/training/{job_id}/attempt-{attempt}"


def training_artifacts_store(*, job_id: Any, attempt: int, out_dir: Path) -> list[str]:
    """Put every file the engine wrote in ``out_dir`` (ONNX, checkpoint, reports) into the
    shared storage under :func:`training_artifacts_prefix`, streamed. Returns the storage names;
    none with local storage (the files stay under ``SAMPAN_DATA_DIR/jobs/``). Raises
    StorageUnavailable."""
    prefix = training_artifacts_prefix(job_id, attempt)
    stored: list[str] = []
    if not shared_storage.is_remote():
        return stored
    for path in sorted(p for p in Path(out_dir).rglob("*") if p.is_file()):
        name = f"{prefix}/{path.relative_to(out_dir).as_posix()}"
        shared_storage.save_file(name, path)
        stored.append(name)
    return stored


def training_workdir_release(out_dir: Path) -> None:
    """Remove an attempt's work folder on this worker once the attempt is over, when the files
    live in the bucket (stored by :func:`training_artifacts_store`, or of an attempt that
    failed): a training host keeps no checkpoint or model of a finished job. With local storage
    the folder is where the artifacts live, and it stays."""
    if shared_storage.is_remote():
        shutil.rmtree(out_dir, ignore_errors=True)


def training_job_progress(*, job_id: Any, progress: dict[str, Any]) -> bool:
    """Store and publish progress. False when the job is no longer RUNNING (cancelled/reaped).

    An end-of-epoch event (one that carries ``val_accuracy`` and ``epoch``, or a detector's
    validation round, ``val_map50``) is also appended to ``history`` at once, so live loss and
    validation curves survive a reconnect. Only the job's own worker writes ``history`` while it
    runs.
    """
    if (progress.get("epoch") is not None and "val_accuracy" in progress) or \
            "val_map50" in progress:
        history = TrainingJob.objects.filter(pk=job_id).values_list("history", flat=True).first()
        TrainingJob.objects.filter(pk=job_id, status=JobStatus.RUNNING).update(
            history=[*(history or []), progress])
    return job_report_progress(TrainingJob, job_id, progress)


def training_job_heartbeat(*, job_id: Any) -> bool:
    """Mark a RUNNING job alive. False when it is no longer RUNNING (cancelled or reaped)."""
    return job_heartbeat(TrainingJob, job_id)


def training_job_fail(*, job_id: Any, message: str) -> None:
    if job_transition(TrainingJob, job_id, JobStatus.FAILED, error=message):
        job_publish(TrainingJob, job_id, {"status": JobStatus.FAILED, "error": message},
                    force=True)


def training_job_complete(*, job_id: Any, result: dict[str, Any]) -> ModelVersion | None:
    """Finish a RUNNING job with the engine's result: the evaluation report, then the export gate,
    then registration of the model version. A failed gate fails the job and shows the difference.

    ``result`` keys: onnx_path, out_dir (optional: the folder of artifacts to store),
    preprocessing, pretrained, weights_note, metrics, history, report,
    parity, recipe, onnx (opset, ir_version). Returns the version, or None if the job is no
    longer RUNNING. The report's ``split`` ("test" or "val"; "val" when an older engine leaves it
    out) is stored on the EvaluationReport; the metrics, test figures included when the engine
    gives them, go to the job and to the signed manifest as they are.
    """
    job = TrainingJob.objects.select_related("dataset_version", "project").get(pk=job_id)
    if job.status != JobStatus.RUNNING:
        return None
    version = job.dataset_version
    parity = result["parity"]
    report = result["report"]
    # a text engine merges class names equal after normalising (NFKC): its labels are the
    # model's output order
    labels = list(result.get("labels") or version.labels)
    EvaluationReport.objects.update_or_create(
        training_job=job, defaults={"labels": labels, "report": report,
                                    "split": report.get("split") or Split.VAL,
                                    "parity": parity})
    TrainingJob.objects.filter(pk=job.pk).update(
        pretrained=result["pretrained"], weights_note=result.get("weights_note", ""),
        history=result["history"], recipe=result["recipe"], metrics=result["metrics"])
    if not parity.get("passed"):
        if job.task_type == TaskType.OBJECT_DETECTION:
            difference = (f"{parity.get('differing')} of {parity.get('candidates')} candidate "
                          f"boxes differ, lowest IoU {parity.get('min_iou')} (limit "
                          f"{parity.get('min_iou_limit')}), "
                          f"largest score difference {parity.get('max_score_diff')} (limit "
                          f"{parity.get('max_score_diff_limit')}) over {parity.get('images')} "
                          "images")
        else:
            difference = (f"top-1 agree: {parity.get('top1_agree')}, max |Δprob| = "
                          f"{parity.get('max_abs_diff')}, limit {PARITY_MAX_ABS_DIFF}")
        training_job_fail(job_id=job.pk, message=(
            "export gate failed: torch and onnxruntime disagree on the validation images "
            f"({difference}); model not registered"))
        return None
    if result.get("out_dir"):
        # the artifacts outlive this worker's disk: into the shared storage before registering
        artifacts = training_artifacts_store(job_id=job.pk, attempt=job.attempt,
                                             out_dir=Path(result["out_dir"]))
        log.info("training job %s: %d artifacts stored under %s", job.pk, len(artifacts),
                 training_artifacts_prefix(job.pk, job.attempt))
    if job.task_type == TaskType.TEXT_CLASSIFICATION:
        input_shape: list[Any] = ["N", "L"]  # indices and weights (docs/contracts.md)
    else:
        size = result["preprocessing"]["size"]
        input_shape = ["N", 3, size[0], size[1]]
    model_version = None
    try:
        with transaction.atomic():
            model_version = model_version_register(
                project=job.project, model_name=job.model_name, task_type=job.task_type,
                labels=labels, preprocessing=result["preprocessing"],
                onnx_path=Path(result["onnx_path"]), input_shape=input_shape,
                metrics=result["metrics"], onnx_info=result["onnx"],
                pretrained=result["pretrained"],
                detection=result.get("detection"), text=result.get("text"),
                lineage={"dataset_version_id": str(version.pk),
                         "dataset_version_digest": version.digest,
                         "training_job_id": str(job.pk), "parent_model_version_id": None,
                         "recipe": result["recipe"], "pretrained": result["pretrained"]},
                dataset_version=version, training_job=job)
            succeeded = job_transition(TrainingJob, job.pk, JobStatus.SUCCEEDED,
                                       model_version=model_version,
                                       progress={**job.progress, "fraction": 1.0,
                                                 "message": "done"})
            if not succeeded:  # cancelled or reaped while registering: no version
                transaction.set_rollback(True)
            else:  # "who trained": the job's start is audited; this is its model (by the system)
                audit_record(actor=None, action="model_version.register", project=job.project,
                             target=model_version,
                             details={"model": job.model_name, "version": model_version.version,
                                      "training_job_id": str(job.pk)})
    except BaseException:
        # the outer transaction rolled back after the version was stored (an error in the
        # transition or the audit): its package must not linger without its row
        if model_version is not None:
            shared_storage.delete_tree(model_version.package_dir)
        raise
    if not succeeded:
        # the version's row was rolled back: its stored package goes with it
        shared_storage.delete_tree(model_version.package_dir)
        return None
    job_publish(TrainingJob, job.pk, {"status": JobStatus.SUCCEEDED,
                                      "model_version_id": str(model_version.pk)}, force=True)
    return model_version
