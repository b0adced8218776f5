"""Which detection format a zip holds, from what its files contain, and its annotations.

Every extracted file is looked at: images by their magic bytes (or an image suffix), JSON by a
leading ``{``, XML by a leading ``<``, YAML and text by their suffix. The format is COCO when a
JSON is a COCO instances file, else Pascal VOC when an XML's root is ``<annotation>``, else
YOLO when a ``.txt`` lies under ``labels/`` or beside an image of the same name, or a
``data.yaml`` / ``classes.txt`` names classes. One format per zip: the other annotation files
are listed as ignored with the reason. A zip with none of these is refused (``NO_ANNOTATIONS``).
A ``sampan.json`` (a Sampan export) gives the class order.
"""

from __future__ import annotations

import json
from pathlib import Path, PurePosixPath
from typing import Any
from xml.etree import ElementTree

from django.utils.translation import gettext_noop

from edge_agent.imaging import ImageDecodeError, sniff_format
from sampan.datasets.archives import ExtractedFile, normalise_label
from sampan.datasets.formats import common, coco, voc, yolo
from sampan.datasets.formats.common import (IMAGE_SUFFIXES, NO_ANNOTATIONS, AnnotationLimits,
                                            DetectionRead, FormatError, ImageAnnotations,
                                            ImageIndex, read_capped, split_of_path)

EXPORT_SCHEMA = "sampan.dataset-export/1"
ANNOTATION_SUFFIXES = {".json", ".xml", ".txt", ".yaml", ".yml", ".names"}
MAX_EXPORT_LABELS = 10_000
_HEAD_BYTES = 64

# What the import report says of the zip's files (stored in English, read in the request's
# language: sampan.datasets.report_texts): why a file is not used, and the warnings
NOT_IMAGE_OR_ANNOTATION = gettext_noop("not an image or an annotation file")
NOT_READABLE_JSON = gettext_noop("not readable JSON: %(error)s")
JSON_NOT_COCO = gettext_noop("JSON that is not COCO instances (needs images, annotations and "
                             "categories lists)")
XML_NOT_VOC = gettext_noop("XML that is not a Pascal VOC annotation (root element "
                           "<annotation>)")
READ_AS_COCO = gettext_noop("annotations of another format: this zip was read as COCO")
WHOLE_FILE = gettext_noop("the whole file: %(problem)s")
NOT_VOC_OR_IMAGE_SET = gettext_noop("not a Pascal VOC annotation or image set")
READ_AS_VOC = gettext_noop("annotations of another format: this zip was read as Pascal VOC")
CLASSES_NAMED_BY = gettext_noop("not used: %(file)s names the classes")
YAML_WITHOUT_NAMES = gettext_noop("YAML without class names")
LABEL_WITHOUT_IMAGE = gettext_noop("a label file with no image of the same name (looked for it "
                                   "under images/ and beside the file)")
TEXT_NOT_YOLO = gettext_noop("a text file that is not a YOLO label file (no image of the same "
                             "name)")
EXPORT_LABELS_NOT_LIST = gettext_noop("%(file)s: labels is not a list of class names; ignored")
EXPORT_LABEL_REFUSED = gettext_noop("%(file)s: %(error)s; its class order is ignored")
CLASSES_BY_ID = gettext_noop("no data.yaml or classes.txt: classes are named by their ids "
                             "(0, 1, ...)")
CLASSES_WITHOUT_BOXES = gettext_noop("classes without any box are not created: %(classes)s")


def could_hold_annotations(names: list[str]) -> bool:
    """True when one of the zip's ``names`` (members after junk and documentation are left out)
    could be an annotation file: what the upload checks before a detection import is queued
    (the worker then reads the content)."""
    return any(PurePosixPath(n).suffix.casefold() in ANNOTATION_SUFFIXES for n in names)


def _kind(name: str, local: Path) -> str:
    suffix = PurePosixPath(name).suffix.casefold()
    with open(local, "rb") as handle:
        head = handle.read(_HEAD_BYTES)
    try:
        sniff_format(head)
        return "image"
    except ImageDecodeError:
        pass
    if suffix in IMAGE_SUFFIXES:
        return "image"  # decoding rejects it by name, with the reason
    start = head.lstrip(b"\xef\xbb\xbf \t\r\n")[:1]
    if start == b"{":
        return "json"
    if start == b"<":
        return "xml"
    if suffix in (".yaml", ".yml"):
        return "yaml"
    if suffix in (".txt", ".names"):
        return "text"
    return "other"


def _depth_order(paths: list[str]) -> list[str]:
    return sorted(paths, key=lambda p: (p.count("/"), p))


def _export_source(path: str, data: dict[str, Any], read: DetectionRead) -> None:
    labels = data.get("labels")
    if not isinstance(labels, list) or len(labels) > MAX_EXPORT_LABELS \
            or not all(isinstance(label, str) for label in labels):
        read.warnings.append(EXPORT_LABELS_NOT_LIST % {"file": path})
        return
    try:
        ordered = [normalise_label(label) for label in labels]
    except ValueError as exc:
        read.warnings.append(EXPORT_LABEL_REFUSED % {"file": path, "error": exc})
        return
    read.source = {"path": path, "labels": ordered,
                   **{k: data[k] for k in ("dataset", "version", "format", "digest")
                      if isinstance(data.get(k), (str, int)) and not isinstance(data[k], bool)}}


def read_detection_archive(members: list[ExtractedFile], rejected: list[tuple[str, str]], *,
                           limits: AnnotationLimits | None = None) -> DetectionRead:
    """Read the annotations of an extracted zip (``members``: ``archives.extract_archive`` with
    ``folder_classes=False``; ``rejected``: the entries it could not extract).

    Returns a DetectionRead with an entry for EVERY image of the zip (background and
    unannotated ones have no boxes) and the classes in class order, each used by a box.
    Raises FormatError when an annotation file could not be extracted or is over its limit
    (``common.AnnotationLimits``), when a class list is unusable, and when the zip holds no
    annotations of any format (``NO_ANNOTATIONS``).
    """
    limits = limits or common.DEFAULT_LIMITS
    for name, reason in rejected:
        if PurePosixPath(name).suffix.casefold() in ANNOTATION_SUFFIXES:
            raise FormatError(f"annotation file {name!r} cannot be read: {reason}")
    local = {m.name: m.local_path for m in members}
    kinds: dict[str, list[str]] = {}
    for member in members:
        kinds.setdefault(_kind(member.name, member.local_path), []).append(member.name)
    images = kinds.get("image", [])
    read = DetectionRead(format="")
    ignored: list[tuple[str, str]] = [(n, NOT_IMAGE_OR_ANNOTATION)
                                      for n in kinds.get("other", [])]

    coco_files: list[tuple[str, dict[str, Any]]] = []
    for name in kinds.get("json", []):
        raw = read_capped(local[name], limits.max_json_bytes, name)  # FormatError is a ValueError
        try:
            data = json.loads(raw)
        except (ValueError, RecursionError) as exc:
            # json.JSONDecodeError says "Expecting ... : line 3 column 5 (char 41)"
            ignored.append((name, NOT_READABLE_JSON % {"error": str(exc)[:200]}))
            continue
        if coco.is_coco(data):
            coco_files.append((name, data))
        elif isinstance(data, dict) and data.get("schema") == EXPORT_SCHEMA \
                and read.source is None:
            _export_source(name, data, read)
        else:
            ignored.append((name, JSON_NOT_COCO))
    voc_files: list[tuple[str, ElementTree.Element]] = []
    broken_xml: list[tuple[str, str]] = []
    for name in kinds.get("xml", []):
        root, problem = voc.parse_voc_file(name, local[name], limits)
        if root is not None:
            voc_files.append((name, root))
        elif problem is not None:
            broken_xml.append((name, problem))
        else:
            ignored.append((name, XML_NOT_VOC))
    texts = {n: local[n] for n in kinds.get("text", [])}
    yamls = kinds.get("yaml", [])

    index = ImageIndex(images)
    if coco_files:
        read.format = "coco"
        classes = coco.read_coco(coco_files, index, read)
        others = [*(n for n, _ in voc_files), *(n for n, _ in broken_xml), *texts, *yamls]
        ignored.extend((n, READ_AS_COCO) for n in others)
    elif voc_files or broken_xml:
        read.format = "voc"
        lists = [(n, texts[n]) for n in texts if "ImageSets" in n.split("/")[:-1]]
        splits, used_lists = voc.image_sets(lists, limits, read)
        for name, problem in broken_xml:
            read.skip(name, WHOLE_FILE % {"problem": problem})
        classes = voc.read_voc(voc_files, index, read, splits)
        ignored.extend((n, NOT_VOC_OR_IMAGE_SET) for n in texts if n not in used_lists)
        ignored.extend((n, READ_AS_VOC) for n in yamls)
    else:
        classes = _read_yolo_zip(images, texts, yamls, local, limits, read, ignored)
    for image in images:
        read.images.setdefault(image, ImageAnnotations(split=split_of_path(image)))
    read.classes = _class_order(classes, read)
    read.ignored = ignored
    return read


def _read_yolo_zip(images: list[str], texts: dict[str, Path], yamls: list[str],
                   local: dict[str, Path], limits: AnnotationLimits, read: DetectionRead,
                   ignored: list[tuple[str, str]]) -> list[str]:
    paired = any(c in texts for image in images for c in yolo.label_candidates(image))
    class_lists = [n for n in texts if n.rpartition("/")[2].casefold() in yolo.CLASS_LIST_NAMES
                   or n.casefold().endswith(".names")]
    names: list[str] | None = None
    names_from = ""
    for name in _depth_order(yamls):
        if names is None:
            found = yolo.names_from_yaml(name, local[name], limits)
            if found is not None:
                names, names_from = found, name
                continue
        ignored.append((name, CLASSES_NAMED_BY % {"file": names_from} if names_from
                        else YAML_WITHOUT_NAMES))
    for name in _depth_order(class_lists):
        if names is None:
            names, names_from = yolo.names_from_list(name, local[name], limits), name
        else:
            ignored.append((name, CLASSES_NAMED_BY % {"file": names_from}))
    labelled = any(yolo.is_label_path(n) for n in texts)
    if not (paired or labelled or names is not None):
        # a JSON that could not be read is most likely the COCO file the person meant: name it
        # and its problem (a trailing comma, a wrong type), not "no annotation files"
        unread = [(n, r) for n, r in ignored if n.casefold().endswith(".json")]
        if unread:
            raise FormatError("no annotations could be read from this zip: " + "; ".join(
                f"{n}: {r}" for n, r in unread[:5]) + ". " + NO_ANNOTATIONS.split(". ", 1)[1])
        raise FormatError(NO_ANNOTATIONS)
    read.format = "yolo"
    if names is None:
        read.warnings.append(CLASSES_BY_ID)
    used = yolo.read_yolo(images, texts, names, limits, read)
    for name in texts:
        if name in used or name in class_lists:
            continue
        if yolo.is_label_path(name):
            read.missing_images.append({"name": name, "reason": LABEL_WITHOUT_IMAGE})
        else:
            ignored.append((name, TEXT_NOT_YOLO))
    if names is not None:
        return names
    ids = {b.label for a in read.images.values() for b in a.boxes}
    return sorted(ids, key=int)


def _class_order(classes: list[str], read: DetectionRead) -> list[str]:
    """The classes to create, in order: a Sampan export's order first, then the format's; only
    classes with at least one box (the others are named in a warning)."""
    used = {b.label for a in read.images.values() for b in a.boxes}
    ordered = list(read.source["labels"]) if read.source else []
    ordered += [c for c in classes if c not in ordered]
    ordered += sorted(used - set(ordered))
    unused = [c for c in classes if c not in used]
    if unused:
        shown = ", ".join(repr(c) for c in unused[:20]) + (", ..." if len(unused) > 20 else "")
        read.warnings.append(CLASSES_WITHOUT_BOXES % {"classes": shown})
    return [c for c in ordered if c in used]
