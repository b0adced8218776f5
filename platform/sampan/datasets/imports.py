"""Imports into a dataset: stage the upload (files, a zip, or a finished resumable upload), then
the imports worker reads it (ImageNet folders, or COCO / Pascal VOC / YOLO boxes into a detection
dataset), decodes and stores each image once by content, and reports what it skipped and why."""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any, NamedTuple

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile
from django.db import IntegrityError, transaction
from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop

from edge_agent.imaging import ImageDecodeError, decode_image
from sampan.core import storage as shared_storage
from sampan.core.stored_text import CANCELLED_BY_USER
from sampan.core.enqueue import job_enqueue_on_commit
from sampan.core.errors import ValidationFailed
from sampan.core.jobs import JobStatus, job_transition
from sampan.core.names import display_name
from sampan.core.services import job_publish, job_report_progress
from sampan.datasets import detection_imports, storage, text_imports
from sampan.datasets.import_undo import import_job_undo
from sampan.datasets.archives import (ArchiveError, ArchiveLimits, extract_archive,
                                      normalise_label, open_archive, plan_archive, sort_labels)
from sampan.datasets.formats.common import NO_ANNOTATIONS, ImageAnnotations
from sampan.datasets.formats.reader import could_hold_annotations
from sampan.datasets.models import (Annotation, AnnotationKind, ClassLabel, Dataset, ImportJob,
                                    Sample, TaskType)
from sampan.datasets.services import class_labels_ensure
from sampan.accounts.lifecycle import ensure_active

log = logging.getLogger(__name__)

#: seconds between heartbeats while an archive is extracted (the reaper's timeout is 45 s)
EXTRACT_HEARTBEAT_S = 5.0

# Why a file is not imported (the report's "rejected" and "duplicates"), stored in English and
# read in the request's language (sampan.datasets.report_texts). An image that cannot be decoded
# is rejected with edge_agent.imaging's own English (``str(ImageDecodeError)``, which does not
# import Django): its sentences are repeated here as msgids.
IMAGE_PROBLEMS = (
    gettext_noop("empty file"),
    gettext_noop("unsupported format '%(format)s'"),
    gettext_noop("image too large (%(width)sx%(height)s px; at most %(limit)s pixels)"),
    gettext_noop("image too large (%(pixels)s pixels; at most %(limit)s pixels)"),
    gettext_noop("image too large (at most %(limit)s pixels)"),
    gettext_noop("corrupt %(format)s image"),
    gettext_noop("truncated image"),
)
BOXES_NOT_IMPORTED = gettext_noop("%(problem)s; its %(boxes)d box(es) were not imported")
SAME_CONTENT = gettext_noop("same content as %(name)s")
SAME_CONTENT_BOXES = gettext_noop("same content as %(name)s; its %(boxes)d box(es) were not "
                                  "added again")
SAME_CONTENT_AT_ONCE = gettext_noop("same content as a file imported at the same time")
SAME_CONTENT_AT_ONCE_BOXES = gettext_noop("same content as a file imported at the same time; "
                                          "its %(boxes)d box(es) were not added again")


def _staging_dir() -> Path:
    """A fresh scratch folder of this process (never read by another one)."""
    return Path(tempfile.mkdtemp(prefix="import-", dir=storage.staging_root()))


def _save_upload(upload: UploadedFile, target: Path) -> None:
    with open(target, "wb") as handle:
        for chunk in upload.chunks():
            handle.write(chunk)


def _check_loose_label(dataset: Dataset, label: str) -> None:
    if label.strip() and dataset.task_type == TaskType.OBJECT_DETECTION:
        raise ValidationFailed(_("an object detection dataset labels boxes, not whole images: "
                                 "leave the class empty (loose images import unlabeled)"),
                               field="label")


def import_job_create(*, dataset: Dataset, files: list[UploadedFile],
                      label: str = "", options: dict[str, Any] | None = None) -> ImportJob:
    """Stage uploaded files (a zip in ImageNet-folder layout, or images) and enqueue the import.

    A zip is checked entry by entry before anything is queued: an unsafe entry (``../x``, ``/x``,
    a symlink) rejects the whole upload with a 400 naming the entry, and the staged copy is removed.
    Into an object detection dataset a zip must be COCO, Pascal VOC or YOLO
    (``sampan.datasets.formats``): one without any annotation file is a 400 naming the formats,
    and loose images take no ``label`` (a 400 on ``label``).
    Into a text classification dataset: CSV / TSV tables, ``.txt`` files, or a zip of them
    (class folders of ``.txt`` files); ``options`` says how tables are read
    (``text_imports.TextOptions``: ``text_column``, ``label_column``, ``encoding``).
    The staged files go to the shared storage under ``staging/import-<hex>/`` (the job's
    ``staging_dir``), streamed: the imports worker, on any host, reads them from there.
    """
    ensure_active(project=dataset.project, dataset=dataset, doing=_("importing"))
    if not files:
        raise ValidationFailed(_("upload at least one file"), field="files")
    _check_loose_label(dataset, label)
    if dataset.task_type == TaskType.TEXT_CLASSIFICATION:
        try:
            text_imports.check_text_upload([upload.name or "" for upload in files])
        except ArchiveError as exc:
            raise ValidationFailed(str(exc), field="files") from None
    scratch = _staging_dir()
    prefix = storage.new_staging_prefix()
    try:
        for index, upload in enumerate(files):
            suffix = Path(upload.name or "").suffix.lower()
            if suffix == ".zip":
                local = scratch / f"archive-{index:04d}.zip"
                _save_upload(upload, local)
                _check_archive(local, upload.name or local.name, dataset.task_type)
                shared_storage.save_file(f"{prefix}/archive-{index:04d}.zip", local, move=True)
            else:
                # the original name is kept beside the bytes; it never becomes a path
                shared_storage.save_stream(f"{prefix}/files/{index:06d}.bin", upload)
                shared_storage.save_bytes(f"{prefix}/files/{index:06d}.name",
                                          (upload.name or f"file-{index}").encode("utf-8"))
        with transaction.atomic():
            job = ImportJob.objects.create(project=dataset.project, dataset=dataset,
                                           staging_dir=prefix, default_label=label.strip(),
                                           options=options or {})
            job_transition(ImportJob, job.pk, JobStatus.QUEUED)
            job_enqueue_on_commit(ImportJob, job.pk)
    except BaseException:
        shared_storage.delete_tree(prefix)
        raise
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    job.refresh_from_db()
    return job


def import_job_create_from_upload(*, dataset: Dataset, user: Any, upload_id: Any,
                                  label: str = "",
                                  options: dict[str, Any] | None = None) -> ImportJob:
    """Import a complete resumable upload (``sampan.uploads``) of ``user``: a zip (by its name,
    or its first bytes when the name says nothing) is checked as in ``import_job_create``; any
    other file is one image. The upload's file MOVES into the import's staging folder in the
    shared storage (local storage: a rename, no copy of a 2 GiB file; the bucket: a streamed
    multipart upload from this web host), and the upload can be imported once.

    Raises NotFound (an unknown upload or another user's), Conflict (not complete, or already
    imported) and ValidationFailed (an unsafe or unreadable zip; the upload is kept, so nothing
    has to be sent again to find out) with ``field: "upload_id"``; StorageUnavailable when the
    bucket refuses (the upload is kept).
    """
    ensure_active(project=dataset.project, dataset=dataset, doing=_("importing"))
    from sampan.uploads.models import UploadStatus
    from sampan.uploads.selectors import upload_get_for, upload_path
    from sampan.uploads.services import upload_take

    _check_loose_label(dataset, label)
    upload = upload_get_for(user=user, upload_id=upload_id)
    shown = (upload.filename if upload and upload.filename
             else _("upload %(id)s") % {"id": upload_id})
    is_zip = False
    if upload is not None and upload.status == UploadStatus.COMPLETE:
        source = upload_path(upload.pk)
        with open(source, "rb") as handle:
            magic = handle.read(4)
        suffix = Path(upload.filename).suffix.lower()
        is_zip = suffix == ".zip" or (suffix == "" and magic in (b"PK\x03\x04", b"PK\x05\x06"))
        if dataset.task_type == TaskType.TEXT_CLASSIFICATION and not is_zip:
            try:
                text_imports.check_text_upload([upload.filename or ""])
            except ArchiveError as exc:
                raise ValidationFailed(str(exc), field="upload_id") from None
        if is_zip:
            try:
                _check_archive(source, shown, dataset.task_type)
            except ValidationFailed as exc:
                raise ValidationFailed(exc.message, field="upload_id") from None
    prefix = storage.new_staging_prefix()
    target = f"{prefix}/archive-0000.zip" if is_zip else f"{prefix}/files/000000.bin"
    try:
        with transaction.atomic():
            upload = upload_take(owner=user, upload_id=upload_id, into=target)
            if not is_zip:
                shared_storage.save_bytes(f"{prefix}/files/000000.name",
                                          (upload.filename or shown).encode("utf-8"))
            job = ImportJob.objects.create(project=dataset.project, dataset=dataset,
                                           staging_dir=prefix, default_label=label.strip(),
                                           options=options or {})
            job_transition(ImportJob, job.pk, JobStatus.QUEUED)
            job_enqueue_on_commit(ImportJob, job.pk)
    except BaseException:
        back = upload_path(upload_id) if _is_uuid(upload_id) else None
        if back is not None and not back.exists():
            # the bytes moved, the transaction did not commit: give them back to the upload
            try:
                shared_storage.download_to(target, back)
            except FileNotFoundError:
                pass
        shared_storage.delete_tree(prefix)
        raise
    job.refresh_from_db()
    return job


def _is_uuid(value: Any) -> bool:
    try:
        uuid.UUID(str(value))
    except ValueError:
        return False
    return True


def _check_archive(path: Path, shown_name: str,
                   task_type: str = TaskType.IMAGE_CLASSIFICATION) -> None:
    detection = task_type == TaskType.OBJECT_DETECTION
    try:
        with open_archive(path, _limits()) as archive:
            members, _ignored = plan_archive(archive, _limits(), folder_classes=not detection,
                                             texts=task_type == TaskType.TEXT_CLASSIFICATION)
        if detection and not could_hold_annotations([m.name for m in members]):
            raise ArchiveError(_(NO_ANNOTATIONS))  # marked in formats.common
    except ArchiveError as exc:
        raise ValidationFailed(_("%(file)s: %(reason)s") % {"file": shown_name, "reason": exc},
                               field="files") from None


def _limits() -> ArchiveLimits:
    return ArchiveLimits(max_total_bytes=settings.SAMPAN_IMPORT_MAX_BYTES)


class StagedFile(NamedTuple):
    """A file to import: its shown name, local path, class label, the archive's split, and
    (object detection zips) its annotations as the zip gives them."""

    name: str
    path: Path
    label: str | None
    split: str | None
    annotations: ImageAnnotations | None = None
    format: str = ""


def _fetch_staging(job: ImportJob, into: Path) -> Path:
    """This worker's local copy of the job's staged files (streamed from the shared storage
    into ``into``). A job staged before the shared storage (an absolute ``staging_dir`` on the
    one host) is read where it is."""
    if os.path.isabs(job.staging_dir):
        return Path(job.staging_dir)
    into.mkdir(parents=True, exist_ok=True)
    prefix = job.staging_dir.rstrip("/")
    for name in shared_storage.walk(prefix):
        relative = name[len(prefix) + 1:]
        if relative.startswith("archive-") or relative.startswith("files/"):
            shared_storage.download_to(name, into / relative)
    return into


def _staged_files(job: ImportJob, work: Path, report: dict[str, Any],
                  tally: detection_imports.DetectionTally) -> list[StagedFile]:
    """Every file to import from the staging folder.

    ``split`` is the archive's own split (train | val | test) for a zip in the split layout of
    ``sampan.datasets.archives``, else None. A zip into an object detection dataset is read by
    ``sampan.datasets.formats`` (its classes are created here, in their order); raises
    FormatError (an ArchiveError) when its annotations cannot be read.
    """
    detection = job.dataset.task_type == TaskType.OBJECT_DETECTION
    staging = _fetch_staging(job, work / "staged")
    found: list[StagedFile] = []
    beat = {"at": time.monotonic()}

    def extracting(done: int, count: int) -> None:
        # extraction before the first image: the reaper must see a heartbeat meanwhile (a large
        # archive takes minutes; the first one came after it, reaped as "worker lost")
        if time.monotonic() - beat["at"] >= EXTRACT_HEARTBEAT_S or done == count:
            beat["at"] = time.monotonic()
            job_report_progress(ImportJob, job.pk, {"fraction": 0.0, "message": (
                f"extracting the archive: {done} of {count} files")})

    for archive in sorted(staging.glob("archive-*.zip")):
        scan = extract_archive(archive, work, limits=_limits(), folder_classes=not detection,
                               on_member=extracting,
                               texts=job.dataset.task_type == TaskType.TEXT_CLASSIFICATION)
        archive.unlink()  # its members are extracted: a 2 GiB archive is not kept twice
        report["ignored"].extend({"name": n, "reason": r} for n, r in scan.ignored)
        report["rejected"].extend({"name": n, "reason": r} for n, r in scan.rejected)
        if detection:
            read = detection_imports.read_archive(scan, tally)
            # reading thousands of label files takes a while: the reaper must see a heartbeat
            job_report_progress(ImportJob, job.pk, {"fraction": 0.0, "message": (
                f"read the {read.format} annotations of {len(read.images)} images")})
            report["ignored"].extend({"name": n, "reason": r} for n, r in read.ignored)
            class_labels_ensure(dataset=job.dataset, names=read.classes)
            found.extend(StagedFile(m.name, m.local_path, None, read.images[m.name].split,
                                    read.images[m.name], read.format)
                         for m in scan.members if m.name in read.images)
            continue
        labels = scan.labels
        if labels:
            class_labels_ensure(dataset=job.dataset, names=labels)
        found.extend(StagedFile(m.path_in_zip, m.local_path, m.label, m.split)
                     for m in scan.members)
    folder = staging / "files"
    for blob in sorted(folder.glob("*.bin")) if folder.exists() else []:
        name = blob.with_suffix(".name").read_text(encoding="utf-8")
        found.append(StagedFile(name, blob, job.default_label or None, None))
    return found


def _import_one(job: ImportJob, staged: StagedFile, labels: dict[str, ClassLabel],
                tally: detection_imports.DetectionTally
                ) -> tuple[str, str | None, set[str]]:
    """Import one file. Returns ("imported" | "duplicate" | "rejected", reason, the classes it
    was given). A duplicate of a file with boxes keeps the boxes of the first one only."""
    name, path, label = staged.name, staged.path, staged.label
    data = path.read_bytes()
    boxes = len(staged.annotations.boxes) if staged.annotations is not None else 0
    try:
        image = decode_image(data)
    except ImageDecodeError as exc:  # its boxes go with it, and the report says so
        if boxes:
            return "rejected", BOXES_NOT_IMPORTED % {"problem": exc, "boxes": boxes}, set()
        return "rejected", str(exc), set()
    digest = hashlib.sha256(data).hexdigest()
    existing = Sample.objects.filter(dataset=job.dataset, content_sha256=digest).first()
    if existing is not None:
        same = SAME_CONTENT_BOXES if boxes else SAME_CONTENT
        return "duplicate", same % {"name": existing.original_name, "boxes": boxes}, set()
    placement = None
    if staged.annotations is not None:
        placement = detection_imports.place(data, image, staged.annotations, name)
    relative = storage.store_normalised_image(image, digest)
    try:
        with transaction.atomic():
            sample = _create_sample(job, digest, relative, name, image.width, image.height,
                                    label, labels)
            if placement is not None and staged.annotations is not None:
                detection_imports.boxes_create(sample, placement, labels, background=(
                    detection_imports.is_background(staged.annotations, staged.format,
                                                    placement)))
    except IntegrityError:  # another import stored the same bytes meanwhile
        at_once = SAME_CONTENT_AT_ONCE_BOXES if boxes else SAME_CONTENT_AT_ONCE
        return "duplicate", at_once % {"boxes": boxes}, set()
    if placement is not None and staged.annotations is not None:
        tally.add_image(name, staged.annotations, staged.format, placement)
        return "imported", None, {box[0] for box in placement.boxes}
    return "imported", None, {label} if label else set()


def _create_sample(job: ImportJob, digest: str, relative: str, name: str, width: int,
                   height: int, label: str | None, labels: dict[str, ClassLabel]) -> Sample:
    # a file name is shown as it came, but never with control characters (sampan.core.names)
    sample = Sample.objects.create(dataset=job.dataset, content_sha256=digest, file=relative,
                                   original_name=display_name(name)[:500], width=width,
                                   height=height, import_job=job)
    if label:
        if label not in labels:
            labels.update(class_labels_ensure(dataset=job.dataset, names=[label]))
        Annotation.objects.create(sample=sample, kind=AnnotationKind.CLASS,
                                  class_label=labels[normalise_label(label)])
    return sample


def import_job_run(*, job_id: Any) -> None:
    """Run an import job (Celery task body). Idempotent: a second delivery returns at once.

    Each file is decoded fully by the one image rule; undecodable files are rejected by name with
    the reason; the rest imports. An unsafe or oversized archive fails the job with a clear error;
    the staging folder is always removed.
    """
    if not job_transition(ImportJob, job_id, JobStatus.RUNNING):
        return
    job = ImportJob.objects.select_related("dataset").get(pk=job_id)
    report: dict[str, Any] = {"imported": 0, "duplicates": [], "ignored": [], "rejected": []}
    splits: dict[str, dict[str, int]] = {}
    tally = detection_imports.DetectionTally()
    before = set(ClassLabel.objects.filter(dataset=job.dataset).values_list("pk", flat=True))
    work = _staging_dir()
    try:
        files = _staged_files(job, work, report, tally)
        if job.dataset.task_type == TaskType.TEXT_CLASSIFICATION:
            if not _import_texts(job, files, report):
                return
            files = []
        labels = {c.name: c for c in ClassLabel.objects.filter(dataset=job.dataset)}
        reported = time.monotonic()
        for index, staged in enumerate(files, start=1):
            name, split = staged.name, staged.split
            outcome, reason, classes = _import_one(job, staged, labels, tally)
            if outcome == "imported":
                report["imported"] += 1
                if split is not None:
                    per_class = splits.setdefault(split, {})
                    for key in classes or {""}:
                        per_class[key] = per_class.get(key, 0) + 1
            elif outcome == "duplicate":
                report["duplicates"].append({"name": name, "reason": reason})
            else:
                report["rejected"].append({"name": name, "reason": reason})
            # every 25 files or every 5 s, whichever comes first: 25 photos of 12 MP take
            # ~50 s, longer than the reaper's heartbeat timeout (a reviewer's import of 36 such
            # photos was failed as "worker lost" after 25)
            if index % 25 == 0 or index == len(files) or time.monotonic() - reported >= 5.0:
                reported = time.monotonic()
                progress = {"fraction": index / max(len(files), 1), "done": index,
                            "total": len(files), "message": f"imported {index}/{len(files)}"}
                if not job_report_progress(ImportJob, job.pk, progress):
                    import_job_undo(job.pk)  # cancelled or reaped meanwhile: nothing half-done
                    return
    except ArchiveError as exc:
        _import_fail(job, str(exc), report)
        return
    except Exception as exc:
        log.exception("import %s failed", job.pk)
        undone = import_job_undo(job.pk)
        _import_fail(job, f"import failed: {exc}; the {undone['removed']} file(s) it had "
                          "imported were removed", {**report, "undone": undone})
        raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
        if os.path.isabs(job.staging_dir):
            shutil.rmtree(job.staging_dir, ignore_errors=True)
        else:
            shared_storage.delete_tree(job.staging_dir)
        # a class folder whose files were all rejected must not leave an empty class behind
        (ClassLabel.objects.filter(dataset=job.dataset).exclude(pk__in=before)
         .exclude(pk__in=Annotation.objects.values("class_label_id")).delete())
    duplicates_total = report.get("text", {}).get("duplicates", len(report["duplicates"]))
    report["counts"] = {"imported": report["imported"], "duplicates": duplicates_total,
                        "ignored": len(report["ignored"]), "rejected": len(report["rejected"])}
    if tally.formats:
        report["detection"] = tally.as_report()
    if splits:
        # the archive's own train/val/test folders (sampan.datasets.archives, split layout):
        # imported samples per split and class ("" = unlabeled; with boxes: an image counts for
        # each class it has a box of, "" = no box). Samples do not store it, and a dataset
        # version draws its own split.
        report["archive_splits"] = splits
    job_transition(ImportJob, job.pk, JobStatus.SUCCEEDED, report=report,
                   progress={"fraction": 1.0, "message": "done"})
    job_publish(ImportJob, job.pk, {"status": JobStatus.SUCCEEDED, "report": report}, force=True)


def _import_texts(job: ImportJob, files: list[StagedFile], report: dict[str, Any]) -> bool:
    """The rows of a text dataset's files (``sampan.datasets.text_imports``) into ``report``;
    False when the job was cancelled or reaped meanwhile (what it added is taken back)."""
    result = text_imports.TextImport()
    beat = {"at": time.monotonic()}

    def reading(name: str, done: int) -> None:
        # a large workbook takes a minute to read: the reaper must see a heartbeat meanwhile
        if time.monotonic() - beat["at"] >= EXTRACT_HEARTBEAT_S:
            beat["at"] = time.monotonic()
            job_report_progress(ImportJob, job.pk, {"fraction": 0.0, "message": (
                f"reading {name}: {done} rows")})

    rows = text_imports.read_rows([(f.name, f.path, f.label or job.default_label or None)
                                   for f in files], text_imports.TextOptions.from_json(
                                       job.options), result, reading)

    def heartbeat(done: int, total: int) -> bool:
        return job_report_progress(ImportJob, job.pk, {
            "fraction": done / max(total, 1), "done": done, "total": total,
            "message": f"imported {done}/{total} texts"})

    finished = text_imports.import_rows(dataset=job.dataset, job=job, rows=rows, result=result,
                                        heartbeat=heartbeat)
    if not finished:
        import_job_undo(job.pk)
        return False
    text_report = result.report()
    report["imported"] += text_report.pop("imported")
    report["duplicates"].extend(text_report.pop("duplicates"))
    report["rejected"].extend(text_report.pop("rejected"))
    report.update(text_report)
    return True


def _import_fail(job: ImportJob, message: str, report: dict[str, Any]) -> None:
    job_transition(ImportJob, job.pk, JobStatus.FAILED, error=message, report=report)
    job_publish(ImportJob, job.pk, {"status": JobStatus.FAILED, "error": message}, force=True)


def import_job_cancel(*, job: ImportJob) -> bool:
    return job_transition(ImportJob, job.pk, JobStatus.CANCELLED, error=CANCELLED_BY_USER)


__all__ = ["import_job_create", "import_job_create_from_upload", "import_job_run",
           "import_job_cancel", "sort_labels"]
