"""Pre-labeling: a registered model version of the dataset's task runs over the unlabeled samples
and leaves suggestions (``Suggestion``) and an uncertainty per sample, never labels.

The model runs as a device runs it: the package's session of ``edge_agent.sessions`` (the
onnxruntime session of its task, the one image rule of ``edge_agent.imaging``, a detector's
post-processing of ``edge_agent.detection``), on a worker of the ``imports`` queue
(``datasets.run_prelabel``), one image in memory at a time. Rules and numbers: docs/contracts.md,
"Assisted labeling"; the uncertainty: ``sampan.datasets.uncertainty``.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from typing import Any

from django.db import transaction
from django.db.models import Exists, OuterRef, QuerySet
from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop

from edge_agent.imaging import ImageDecodeError
from edge_agent.runtime import ManifestError, ModelLoadError
from edge_agent.sessions import ModelSession, open_session
from edge_agent.text import TextFeaturesError
from sampan.core import storage as shared_storage
from sampan.core.stored_text import CANCELLED_BY_USER
from sampan.core.enqueue import job_enqueue_on_commit
from sampan.core.errors import ApplicationError, Conflict, ValidationFailed
from sampan.core.jobs import JobStatus, job_transition
from sampan.core.services import job_publish, job_report_progress
from sampan.datasets.archives import normalise_label
from sampan.datasets.models import (Annotation, AnnotationKind, ClassLabel, Dataset, PrelabelJob,
                                    Sample, Suggestion, TaskType)
from sampan.datasets.uncertainty import (DETECTION_SCORE_FLOOR, classification_uncertainty,
                                         detection_uncertainty)
from sampan.registry.models import ModelVersion
from sampan.registry.selectors import model_version_file
from sampan.accounts.lifecycle import ensure_active

log = logging.getLogger(__name__)

ACTIVE = (JobStatus.PENDING, JobStatus.QUEUED, JobStatus.RUNNING)
#: why an image has no suggestions (the report's ``failed``, stored in English and read in the
#: request's language: sampan.datasets.report_texts; or the image's own ImageDecodeError)
IMAGE_FILE_MISSING = gettext_noop("the image file is missing from the storage")
EMPTY_TEXT = gettext_noop("the text is empty once whitespace is removed")

#: seconds between progress writes (each is also the heartbeat the reaper reads)
PROGRESS_EVERY_S = 1.0
#: images named in the report's ``failed`` list; ``counts`` has them all
MAX_LISTED = 1000
SHOWN_LABELS = 10


def unlabeled_samples(dataset: Dataset) -> QuerySet[Sample]:
    """Samples with no annotation that are not checked "no objects", oldest first (image
    classification: no class label; object detection: no box and not a background image)."""
    return (dataset.samples.annotate(labeled=Exists(Annotation.objects.filter(
        sample=OuterRef("pk")))).filter(labeled=False, no_objects=False)
        .order_by("created_at", "id"))


def shared_classes(dataset: Dataset, version: ModelVersion) -> list[str]:
    """The model's labels that are classes of ``dataset`` (names compared trimmed and NFC, as
    classes are stored), in the model's order.

    Raises ValidationFailed (``model_version_id``) when the version is of another task, or when
    no label names a class of the dataset: its suggestions could not be labels here.
    """
    if version.task_type != dataset.task_type:
        raise ValidationFailed(
            _("%(model)s is an %(model_task_type)s model and this dataset is "
              "%(dataset_task_type)s: choose a model of the dataset's task")
            % {"model": version.label, "model_task_type": version.task_type,
               "dataset_task_type": dataset.task_type}, field="model_version_id")
    classes = set(ClassLabel.objects.filter(dataset=dataset).values_list("name", flat=True))
    shared = [name for name in (_name(raw) for raw in version.labels) if name in classes]
    if shared:
        return shared
    theirs = ", ".join(repr(str(raw)) for raw in version.labels[:SHOWN_LABELS])
    ours = ", ".join(repr(n) for n in sorted(classes)[:SHOWN_LABELS]) or _("no classes yet")
    raise ValidationFailed(
        _("%(model)s knows %(theirs)s and this dataset has %(ours)s: no class in common (a "
          "suggestion is a class of the dataset, matched by name); add the classes first")
        % {"model": version.label, "theirs": theirs, "ours": ours},
        field="model_version_id")


def _name(raw: Any) -> str:
    try:
        return normalise_label(str(raw))
    except ValueError:
        return ""


def prelabel_job_create(*, dataset: Dataset, model_version: ModelVersion,
                        score_threshold: float | None = None) -> PrelabelJob:
    """Queue a pre-labeling run of ``model_version`` over the unlabeled samples of ``dataset``.

    Raises ValidationFailed on ``model_version_id`` (another task, no class in common:
    :func:`shared_classes`) and on ``score_threshold`` (given for a classifier, or outside
    [0, 1]); Conflict (409) while another run on the dataset has not ended (``details.job_id``).
    """
    ensure_active(project=dataset.project, dataset=dataset, doing=_("pre-labeling"))
    shared_classes(dataset, model_version)
    if score_threshold is not None:
        if dataset.task_type != TaskType.OBJECT_DETECTION:
            raise ValidationFailed(_("score_threshold is for object detection models: a "
                                     "classifier suggests its most probable class"),
                                   field="score_threshold")
        if not 0.0 <= score_threshold <= 1.0:
            raise ValidationFailed(_("score_threshold must be in [0, 1]"),
                                   field="score_threshold")
    with transaction.atomic():
        # one run per dataset at a time: two would write suggestions over each other
        Dataset.objects.select_for_update().filter(pk=dataset.pk).values_list("pk").first()
        running = PrelabelJob.objects.filter(dataset=dataset, status__in=ACTIVE).first()
        if running is not None:
            raise Conflict(_("a pre-labeling run of this dataset has not ended yet: wait for it "
                             "or cancel it"), details={"job_id": str(running.pk)})
        job = PrelabelJob.objects.create(project=dataset.project, dataset=dataset,
                                         model_version=model_version,
                                         score_threshold=score_threshold)
        job_transition(PrelabelJob, job.pk, JobStatus.QUEUED)
        job_enqueue_on_commit(PrelabelJob, job.pk)
    job.refresh_from_db()
    return job


def prelabel_job_cancel(*, job: PrelabelJob) -> PrelabelJob:
    """Cancel a run that has not ended; a running one stops before its next image. Suggestions
    it stored stay. Raises ValidationFailed (``status``) when it ended already."""
    if not job_transition(PrelabelJob, job.pk, JobStatus.CANCELLED, error=CANCELLED_BY_USER,
                          cancel_requested=True):
        job.refresh_from_db()
        if job.is_terminal:
            raise ValidationFailed(_("the job already ended (%(status)s)") % {"status": job.status},
                                   field="status")
    job_publish(PrelabelJob, job.pk, {"status": JobStatus.CANCELLED}, force=True)
    job.refresh_from_db()
    return job


class _Run:
    """One run's model, the dataset's classes, and its report as it grows."""

    def __init__(self, job: PrelabelJob, session: ModelSession) -> None:
        self.job = job
        self.session = session
        self.detection = job.dataset.task_type == TaskType.OBJECT_DETECTION
        self.text = job.dataset.task_type == TaskType.TEXT_CLASSIFICATION
        self.classes = {c.name: c for c in ClassLabel.objects.filter(dataset=job.dataset)}
        self.names = [_name(label) for label in session.labels]
        settings = getattr(session, "settings", None)
        self.threshold = (job.score_threshold if job.score_threshold is not None
                          else settings.score_threshold if self.detection and settings is not None
                          else None)
        self.counts: Counter[str] = Counter()
        self.other_classes: Counter[str] = Counter()
        self.failed: list[dict[str, str]] = []

    def report(self, total: int) -> dict[str, Any]:
        return {"model_version": self.job.model_version.label, "samples": total,
                "counts": dict(self.counts), "other_classes": dict(self.other_classes),
                "failed": self.failed, "score_threshold": self.threshold,
                "uncertainty": ("max(1 - |2 score - 1|) over detections" if self.detection
                                else "1 - max probability (least confidence)")}

    def predict(self, sample: Sample, data: bytes) -> tuple[list[Suggestion], float]:
        """The suggestions for one image and its uncertainty. Raises ImageDecodeError,
        ModelLoadError."""
        version = self.job.model_version
        if not self.detection:
            if self.text:  # a text model's answer names the probability "score"
                ranked = [{**p, "probability": p["score"]} for p in self.session.predict_texts(
                    [sample.text], top_k=len(self.session.labels))[0]["predictions"]]
            else:
                ranked = self.session.predict_image(data, top_k=len(self.session.labels))
            uncertainty = classification_uncertainty([p["probability"] for p in ranked])
            best = ranked[0]
            cls = self.classes.get(self.names[best["index"]])
            if cls is None:
                self.other_classes[str(best["label"])] += 1
                return [], uncertainty
            return [Suggestion(sample=sample, model_version=version, kind=AnnotationKind.CLASS,
                               class_label=cls, score=round(float(best["probability"]), 6))
                    ], uncertainty
        floor = min(DETECTION_SCORE_FLOOR, self.threshold or 0.0)
        answer = self.session.predict_image(data, score_threshold=floor)
        uncertainty = detection_uncertainty(d["score"] for d in answer["detections"])
        rows = []
        for found in answer["detections"]:
            if found["score"] <= (self.threshold or 0.0):
                continue
            cls = self.classes.get(self.names[found["index"]])
            if cls is None:
                self.other_classes[str(found["label"])] += 1
                continue
            x1, y1, x2, y2 = (float(v) for v in found["box"])
            x1, x2 = max(0.0, x1), min(float(sample.width), x2)
            y1, y2 = max(0.0, y1), min(float(sample.height), y2)
            if x1 < x2 and y1 < y2:  # a box clipped to nothing is no suggestion
                rows.append(Suggestion(sample=sample, model_version=version,
                                       kind=AnnotationKind.BOX, class_label=cls,
                                       score=round(float(found["score"]), 6),
                                       x1=x1, y1=y1, x2=x2, y2=y2))
        return rows, uncertainty

    def store(self, sample: Sample, rows: list[Suggestion], uncertainty: float) -> bool:
        """Replace the sample's suggestions and uncertainty, unless someone labeled it
        meanwhile (checked under the sample's row lock). Returns whether it stored them."""
        with transaction.atomic():
            locked = Sample.objects.select_for_update().filter(pk=sample.pk).first()
            if locked is None or locked.no_objects or \
                    Annotation.objects.filter(sample=sample).exists():
                return False
            Suggestion.objects.filter(sample=sample).delete()
            Suggestion.objects.bulk_create(rows)
            Sample.objects.filter(pk=sample.pk).update(uncertainty=uncertainty)
        return True

    def fail(self, sample: Sample, reason: str) -> None:
        self.counts["failed"] += 1
        if len(self.failed) < MAX_LISTED:
            self.failed.append({"name": sample.original_name, "reason": reason})

    def one(self, sample_id: Any) -> None:
        """Suggest for one sample. Raises ModelLoadError (the model cannot run)."""
        sample = Sample.objects.filter(pk=sample_id).first()
        if sample is None:  # deleted meanwhile
            return
        try:
            data = b"" if self.text else shared_storage.read_bytes(sample.file)
            rows, uncertainty = self.predict(sample, data)
        except TextFeaturesError:
            self.fail(sample, EMPTY_TEXT)
            return
        except FileNotFoundError:
            self.fail(sample, IMAGE_FILE_MISSING)
            return
        except ImageDecodeError as exc:
            self.fail(sample, str(exc))
            return
        if not self.store(sample, rows, uncertainty):
            self.counts["labeled_meanwhile"] += 1
            return
        self.counts["done"] += 1
        self.counts["suggestions"] += len(rows)
        self.counts["suggested_samples"] += bool(rows)


def _load(job: PrelabelJob) -> ModelSession:
    version = job.model_version
    try:
        return open_session(model_version_file(version, "model.onnx"), version.manifest)
    except (ApplicationError, ManifestError, ModelLoadError) as exc:
        message = exc.message if isinstance(exc, ApplicationError) else str(exc)
        raise ModelLoadError(f"{version.label} cannot be loaded: {message}") from None


def prelabel_job_run(*, job_id: Any) -> None:
    """Run a pre-labeling job (Celery task body). Idempotent: a second delivery returns at once.

    Goes through the samples that were unlabeled when it started, oldest first; one that was
    labeled meanwhile is left alone. For each: read the stored image, run the model, replace the
    sample's suggestions and uncertainty. An image that cannot be read or decoded is named in
    the report and the run goes on; a model that cannot be loaded or run fails the job. A
    cancel stops it before the next image; what it stored stays.
    """
    if not job_transition(PrelabelJob, job_id, JobStatus.RUNNING):
        return
    job = PrelabelJob.objects.select_related("dataset", "model_version__model").get(pk=job_id)
    try:
        run = _Run(job, _load(job))
    except ModelLoadError as exc:
        _finish(job, JobStatus.FAILED, {}, error=str(exc))
        return
    ids = list(unlabeled_samples(job.dataset).values_list("pk", flat=True))
    total = len(ids)
    reported = time.monotonic()
    for index, sample_id in enumerate(ids, start=1):
        try:
            run.one(sample_id)
        except ModelLoadError as exc:
            _finish(job, JobStatus.FAILED, run.report(total), error=str(exc))
            return
        now = time.monotonic()
        if index == total or now - reported >= PROGRESS_EVERY_S:
            reported = now
            alive = job_report_progress(PrelabelJob, job.pk, {
                "fraction": index / total, "done": index, "total": total,
                "suggestions": run.counts["suggestions"],
                "message": f"{index}/{total} images, {run.counts['suggestions']} suggestions"})
        else:  # a cheap look for a cancel between two progress writes
            alive = PrelabelJob.objects.filter(pk=job.pk, status=JobStatus.RUNNING).exists()
        if not alive:  # cancelled (or reaped) meanwhile: what was stored stays, and is told
            PrelabelJob.objects.filter(pk=job.pk).update(report=run.report(total))
            return
    _finish(job, JobStatus.SUCCEEDED, run.report(total))


def _finish(job: PrelabelJob, status: str, report: dict[str, Any], error: str = "") -> None:
    progress = {"fraction": 1.0, "message": "done"} if status == JobStatus.SUCCEEDED else None
    fields: dict[str, Any] = {"report": report, "error": error}
    if progress is not None:
        fields["progress"] = progress
    if job_transition(PrelabelJob, job.pk, status, **fields):
        job_publish(PrelabelJob, job.pk, {"status": status, "error": error, "report": report},
                    force=True)
