"""What the datasets app stores in English outside a request, read in the request's language.

The imports worker writes an import's report (why each file was skipped, the detection part's
skipped annotations, missing images and warnings), the pre-labeling worker its failed images,
and a frozen version its flags, all in English (docs/decisions/api-messages.md, "Text stored in
English"). Their sentences are msgids marked with ``gettext_noop`` next to the code that writes
them; the readers below recognise them (``sampan.core.stored_text``) and the output serializers
show them in the request's language, with the same names, numbers and file names inside. A text
of another form (a report written before, an image's reason the agent worded otherwise) is
shown as stored; ``code``, ``name`` and the counts never change with the language.
"""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from sampan.core.stored_text import Templates, read_entries, read_texts
from sampan.datasets import (archives, detection_imports, imports, prelabel, text_imports,
                             versions)
from sampan.datasets.formats import coco, common, geometry, reader, text_table, voc, yolo

#: what an image that cannot be decoded is rejected with (edge_agent.imaging's English)
IMAGE_PROBLEMS = Templates(*imports.IMAGE_PROBLEMS)

# why a name is no name (sampan.core.names, whose catalogue translates them; not marked here)
_NAME_KINDS = Templates("a control character", "a format character", "a lone surrogate",
                        "a line separator", "a paragraph separator", "a refused character")
_NAME_PROBLEMS = Templates(
    "must not be empty", "contains %(character)s at position %(position)d",
    "is %(length)d characters long (at most %(limit)d)",
    inner={"character": Templates("%(character)s (%(kind)s)", inner={"kind": _NAME_KINDS},
                                  other=True)},
    other=True)
#: why a folder or category name is no class name
CLASS_NAME_PROBLEMS = Templates(archives.EMPTY_CLASS_NAME, archives.CLASS_NAME_REFUSED,
                                inner={"reason": _NAME_PROBLEMS})

#: the report's ``rejected``: files that could not be read or decoded
REJECTED = Templates(imports.BOXES_NOT_IMPORTED, IMAGE_PROBLEMS, archives.MEMBER_TOO_LARGE,
                     archives.DAMAGED_IN_ZIP, *text_table.ROW_TEMPLATES,
                     *text_table.FILE_TEMPLATES, text_imports.NOT_A_TEXT_FILE,
                     inner={"problem": IMAGE_PROBLEMS})
#: the report's ``duplicates`` (the longer sentences first: "same content as %(name)s" reads
#: every one of them)
DUPLICATES = Templates(imports.SAME_CONTENT_AT_ONCE_BOXES, imports.SAME_CONTENT_AT_ONCE,
                       imports.SAME_CONTENT_BOXES, imports.SAME_CONTENT,
                       text_imports.SAME_TEXT_OTHER_LABEL, text_imports.SAME_TEXT)
#: the report's ``ignored``: junk, documentation, files of no format read
IGNORED = Templates(*archives.SKIP_REASONS, reader.NOT_IMAGE_OR_ANNOTATION,
                    reader.NOT_READABLE_JSON, reader.JSON_NOT_COCO, reader.XML_NOT_VOC,
                    reader.READ_AS_COCO, reader.NOT_VOC_OR_IMAGE_SET, reader.READ_AS_VOC,
                    reader.CLASSES_NAMED_BY, reader.YAML_WITHOUT_NAMES, reader.TEXT_NOT_YOLO)
#: the detection part's ``skipped_annotations``
SKIPPED_ANNOTATIONS = Templates(
    yolo.NOT_UTF8, yolo.FIELD_COUNT, yolo.CLASS_ID_NOT_WHOLE, yolo.CLASS_ID_OUT_OF_RANGE,
    yolo.CLASS_ID_WITHOUT_CLASSES, yolo.COORDINATE_NOT_NUMBER, yolo.VALUE_OUTSIDE,
    yolo.NEGATIVE_SIZE, coco.NOT_AN_OBJECT, coco.IMAGE_ID_UNKNOWN, coco.CATEGORY_ID_UNKNOWN,
    coco.CROWD_REGION, coco.BBOX_NOT_XYWH, coco.BBOX_NOT_FINITE, coco.BBOX_NEGATIVE,
    voc.NO_NAME, voc.NO_BNDBOX, voc.BNDBOX_NOT_NUMBERS, voc.CORNERS_SWAPPED, reader.WHOLE_FILE,
    geometry.ZERO_SIZE_BOX, geometry.BOX_OUTSIDE, geometry.BOX_TOO_NARROW, CLASS_NAME_PROBLEMS,
    inner={"problem": Templates(common.XML_REFUSED, voc.NOT_WELL_FORMED, other=True)})
#: the detection part's ``missing_images``
MISSING_IMAGES = Templates(
    coco.LISTED_BUT, voc.DESCRIBED_BUT, reader.LABEL_WITHOUT_IMAGE,
    inner={"problem": Templates(common.NO_FILE_NAME, common.NOT_IN_THE_ZIP,
                                common.MATCHES_SEVERAL, voc.NO_FILENAME, other=True)})
#: the detection part's ``unannotated_images``
UNANNOTATED_IMAGES = Templates(detection_imports.NOT_IN_COCO, detection_imports.NOT_IN_VOC)
#: the detection part's ``warnings``
DETECTION_WARNINGS = Templates(
    coco.CATEGORY_WITHOUT_ID, coco.CATEGORY_TWICE, coco.CATEGORY_NAME_REFUSED,
    coco.IMAGE_WITHOUT_ID, coco.IMAGE_TWICE, coco.LISTED_AGAIN, voc.DESCRIBED_AGAIN,
    reader.EXPORT_LABELS_NOT_LIST, reader.EXPORT_LABEL_REFUSED, reader.CLASSES_BY_ID,
    reader.CLASSES_WITHOUT_BOXES, geometry.SIZE_DIFFERS,
    inner={"error": Templates(CLASS_NAME_PROBLEMS, other=True)})
#: a pre-labeling report's ``failed``
PRELABEL_FAILURES = Templates(prelabel.IMAGE_FILE_MISSING, prelabel.EMPTY_TEXT, IMAGE_PROBLEMS)
#: a dataset version's flags' ``message``
VERSION_FLAGS = Templates(*versions.FLAG_MESSAGES)

_REPORT_LISTS = {"duplicates": DUPLICATES, "ignored": IGNORED, "rejected": REJECTED}
_DETECTION_LISTS = {"skipped_annotations": SKIPPED_ANNOTATIONS,
                    "missing_images": MISSING_IMAGES, "unannotated_images": UNANNOTATED_IMAGES}


def import_report_text(report: Any) -> Any:
    """An import job's ``report`` with every reason and warning in the active language."""
    if not isinstance(report, dict):
        return report
    shown = {**report, **{key: read_entries(report[key], reader_)
                          for key, reader_ in _REPORT_LISTS.items() if key in report}}
    detection = report.get("detection")
    if isinstance(detection, dict):
        shown["detection"] = {
            **detection,
            **{key: read_entries(detection[key], reader_)
               for key, reader_ in _DETECTION_LISTS.items() if key in detection},
            **({"warnings": read_texts(detection["warnings"], DETECTION_WARNINGS)}
               if "warnings" in detection else {})}
    return shown


def prelabel_report_text(report: Any) -> Any:
    """A pre-labeling job's ``report`` with its failed images' reasons in the active language."""
    if not isinstance(report, dict) or "failed" not in report:
        return report
    return {**report, "failed": read_entries(report["failed"], PRELABEL_FAILURES)}


def version_flags_text(flags: Any) -> Any:
    """A dataset version's ``flags`` with each ``message`` in the active language."""
    return read_entries(flags, VERSION_FLAGS, key="message")


class ImportReportField(serializers.JSONField):
    """An import job's report, its reasons and warnings in the request's language."""

    def to_representation(self, value: Any) -> Any:
        return super().to_representation(import_report_text(value))


class PrelabelReportField(serializers.JSONField):
    """A pre-labeling job's report, its failed images' reasons in the request's language."""

    def to_representation(self, value: Any) -> Any:
        return super().to_representation(prelabel_report_text(value))


class VersionFlagsField(serializers.JSONField):
    """A dataset version's flags, each ``message`` in the request's language."""

    def to_representation(self, value: Any) -> Any:
        return super().to_representation(version_flags_text(value))


__all__ = ["CLASS_NAME_PROBLEMS", "DETECTION_WARNINGS", "DUPLICATES", "IGNORED",
           "IMAGE_PROBLEMS", "ImportReportField", "MISSING_IMAGES", "PRELABEL_FAILURES",
           "PrelabelReportField", "REJECTED", "SKIPPED_ANNOTATIONS", "UNANNOTATED_IMAGES",
           "VERSION_FLAGS", "VersionFlagsField", "import_report_text", "prelabel_report_text",
           "version_flags_text"]
