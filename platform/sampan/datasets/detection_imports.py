"""Zips into object detection datasets: their annotations (``sampan.datasets.formats``) become
box annotations of the stored samples, and the import report says what happened to each.

The report's ``detection`` part (docs/contracts.md, "Detection dataset formats"): ``formats``
read, ``images`` imported from zips, ``boxes`` stored, ``background_images`` (imported as
"checked: no objects", :func:`is_background`), ``classes`` ([{"name", "boxes"}] in class
order), ``clipped_boxes``, and the lists ``skipped_annotations``, ``missing_images``,
``unannotated_images`` ({"name", "reason"}), ``warnings`` (text), ``source`` (the
``sampan.json`` of a Sampan export, or null).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from django.utils.translation import gettext_noop
from PIL import Image

from sampan.datasets.archives import ArchiveScan
from sampan.datasets.formats.common import DetectionRead, ImageAnnotations
from sampan.datasets.formats.geometry import Placement, image_frame, place_boxes
from sampan.datasets.formats.reader import read_detection_archive
from sampan.datasets.models import Annotation, AnnotationKind, ClassLabel, Sample

#: entries kept in each list of the report; the totals count them all
MAX_LISTED = 50_000

# why an image of a COCO or VOC zip has no boxes (stored in English, read in the request's
# language: sampan.datasets.report_texts)
NOT_IN_COCO = gettext_noop("no COCO file lists it: imported without boxes")
NOT_IN_VOC = gettext_noop("no VOC XML describes it: imported without boxes")


class DetectionTally:
    """The ``detection`` part of one import's report, added up over its zips and images."""

    def __init__(self) -> None:
        self.formats: list[str] = []
        self.images = 0
        self.boxes = 0
        self.background = 0
        self.clipped = 0
        self.per_class: Counter[str] = Counter()
        self.classes: list[str] = []
        self.lists: dict[str, list[dict[str, str]]] = {
            "skipped_annotations": [], "missing_images": [], "unannotated_images": []}
        self.totals: Counter[str] = Counter()
        self.warnings: list[str] = []
        self.source: dict[str, Any] | None = None

    def note(self, kind: str, name: str, reason: str) -> None:
        """Add ``{"name", "reason"}`` to the list ``kind``."""
        self.totals[kind] += 1
        if len(self.lists[kind]) < MAX_LISTED:
            self.lists[kind].append({"name": name, "reason": reason})

    def add_read(self, read: DetectionRead) -> None:
        self.formats.append(read.format)
        for entry in read.skipped:
            self.note("skipped_annotations", entry["name"], entry["reason"])
        for entry in read.missing_images:
            self.note("missing_images", entry["name"], entry["reason"])
        self.warnings.extend(read.warnings)
        self.classes += [c for c in read.classes if c not in self.classes]
        self.source = self.source or read.source

    def add_image(self, name: str, annotations: ImageAnnotations, fmt: str,
                  placement: Placement) -> None:
        """Count one imported image and its placed boxes."""
        self.images += 1
        self.boxes += len(placement.boxes)
        self.clipped += placement.clipped
        self.per_class.update(label for label, *_ in placement.boxes)
        if is_background(annotations, fmt, placement):
            self.background += 1
        for ref, reason in placement.skipped:
            self.note("skipped_annotations", ref, reason)
        if placement.warning:
            self.warnings.append(placement.warning)
        if not annotations.annotated and fmt in ("coco", "voc"):
            self.note("unannotated_images", name, NOT_IN_COCO if fmt == "coco" else NOT_IN_VOC)

    def as_report(self) -> dict[str, Any]:
        report: dict[str, Any] = {
            "formats": self.formats, "images": self.images, "boxes": self.boxes,
            "background_images": self.background, "clipped_boxes": self.clipped,
            "classes": [{"name": c, "boxes": self.per_class[c]} for c in self.classes
                        if self.per_class[c]],
            **self.lists, "warnings": self.warnings, "source": self.source}
        report["totals"] = {kind: self.totals[kind] for kind in self.lists}
        return report


def read_archive(scan: ArchiveScan, tally: DetectionTally) -> DetectionRead:
    """The annotations of an extracted zip, added to ``tally``. Raises FormatError (an
    ArchiveError: the import fails with its message)."""
    read = read_detection_archive(scan.members, scan.rejected)
    tally.add_read(read)
    return read


def place(data: bytes, image: Image.Image, annotations: ImageAnnotations, shown: str
          ) -> Placement:
    """The boxes of the decoded ``image`` (``decode_image(data)``, upright) in its pixels."""
    return place_boxes(annotations, image_frame(data, image.size), shown)


def is_background(annotations: ImageAnnotations, fmt: str, placement: Placement) -> bool:
    """Whether the zip says the image holds no object: its annotation file lists it with no box
    (a COCO image without annotations, a VOC XML without objects, an empty YOLO label file), or
    it is a YOLO image without a label file (Ultralytics reads those as background images). An
    image no COCO or VOC file mentions is not checked by anyone, and one whose boxes were all
    skipped did have objects: neither is a background image."""
    if annotations.boxes or annotations.skipped or placement.boxes or placement.skipped:
        return False
    return annotations.annotated or fmt == "yolo"


def boxes_create(sample: Sample, placement: Placement, labels: dict[str, ClassLabel], *,
                 background: bool = False) -> int:
    """Store the placed boxes of ``sample`` (inside the caller's transaction); ``labels`` holds
    every class they name; ``background`` (:func:`is_background`) marks the sample "checked: no
    objects". Returns how many boxes were stored."""
    if background:
        Sample.objects.filter(pk=sample.pk).update(no_objects=True)
        sample.no_objects = True
    Annotation.objects.bulk_create([
        Annotation(sample=sample, kind=AnnotationKind.BOX, class_label=labels[label],
                   x1=x1, y1=y1, x2=x2, y2=y2)
        for label, x1, y1, x2, y2 in placement.boxes])
    return len(placement.boxes)
