"""Pascal VOC XML, in and out.

In: every XML file whose root element is ``<annotation>`` (``Annotations/*.xml`` beside
``JPEGImages/``, or each XML beside its image as LabelImg writes them). The image is the one
``<filename>`` names (looked for beside the XML, in a sibling ``JPEGImages/``, then anywhere),
else the image with the XML's own name (``a.xml`` -> ``a.jpg``). ``<size>`` is optional (the
image says its size), ``<difficult>`` and the rest are optional; ``<object>`` needs ``<name>``
and ``<bndbox>`` with numeric ``xmin``, ``ymin``, ``xmax``, ``ymax`` (floats allowed), taken as
pixel coordinates as they are: no -1 offset, so a box exported by Sampan reads back the same.
Splits come from split folders or from ``ImageSets/Main/{train,val,test}.txt`` (image ids).
Classes are in natural order (``sampan.datasets.archives.sort_labels``) unless a ``sampan.json``
gives the order. XML with a DOCTYPE or entities is refused (``common.parse_xml``).

Out: ``Annotations/<stem>.xml``, ``JPEGImages/<stem>.png``, ``ImageSets/Main/<split>.txt``.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath
from xml.etree import ElementTree
from xml.parsers import expat

from django.utils.translation import gettext_noop

from sampan.datasets.archives import normalise_label, sort_labels
from sampan.datasets.formats.common import (NOT_IN_THE_ZIP, AnnotationLimits, DetectionRead,
                                            ImageAnnotations, ImageIndex, RefusedXml, SourceBox,
                                            number, parent, parse_xml, read_capped,
                                            split_of_path, split_word)

_CORNERS = ("xmin", "ymin", "xmax", "ymax")

# What the import report says of a VOC file (stored in English, read in the request's language:
# sampan.datasets.report_texts)
NO_FILENAME = gettext_noop("no <filename>")
DESCRIBED_BUT = gettext_noop("described by %(file)s (%(objects)d object(s)) but %(problem)s")
DESCRIBED_AGAIN = gettext_noop("%(image)s is described again by %(file)s; the first file is "
                               "kept")
NO_NAME = gettext_noop("no <name>")
NO_BNDBOX = gettext_noop("no <bndbox>")
BNDBOX_NOT_NUMBERS = gettext_noop("<bndbox> needs numbers xmin, ymin, xmax, ymax (%(values)s)")
CORNERS_SWAPPED = gettext_noop("xmax < xmin or ymax < ymin (%(xmin)g, %(ymin)g, %(xmax)g, "
                               "%(ymax)g)")
NOT_WELL_FORMED = gettext_noop("not well-formed XML: %(error)s")


def voc_root(data: bytes) -> ElementTree.Element | None:
    """The parsed ``<annotation>`` root of ``data``, or None when it is another XML document.
    Raises RefusedXml or ExpatError as ``parse_xml``."""
    root = parse_xml(data)
    return root if root.tag == "annotation" else None


def image_sets(lists: list[tuple[str, Path]], limits: AnnotationLimits,
               read: DetectionRead) -> tuple[dict[str, str], set[str]]:
    """Image id -> split from ``ImageSets/Main/{train,val,test}.txt`` files (``trainval`` only
    when neither ``train`` nor ``val`` is there). Returns (that map, the lists used)."""
    by_split: dict[str, tuple[str, Path]] = {}
    for path, local in lists:
        stem = PurePosixPath(path).stem.casefold()
        if stem in ("train", "val", "test", "trainval"):
            by_split.setdefault(stem, (path, local))
    if "trainval" in by_split and ("train" in by_split or "val" in by_split):
        del by_split["trainval"]
    splits: dict[str, str] = {}
    for stem, (path, local) in by_split.items():
        text = read_capped(local, limits.max_text_bytes, path).decode("utf-8", "replace")
        split = "train" if stem == "trainval" else split_word(stem) or "train"
        for line in text.splitlines():
            fields = line.split()
            if fields:
                splits.setdefault(fields[0], split)
    return splits, {path for path, _ in by_split.values()}


def read_voc(files: list[tuple[str, ElementTree.Element]], index: ImageIndex,
             read: DetectionRead, splits: dict[str, str]) -> list[str]:
    """Read the VOC roots ``[(path in the zip, <annotation>)]`` into ``read``. Returns the class
    names found, in natural order."""
    names: set[str] = set()
    for path, root in files:
        folder = parent(path)
        near = (folder, f"{parent(folder)}/JPEGImages".lstrip("/"), parent(folder))
        stem = PurePosixPath(path).stem
        found, problem = None, NO_FILENAME
        filename = (root.findtext("filename") or "").strip()
        if filename:
            found, problem = index.find(filename, near=near)
        if found is None:
            found, by_stem = index.find_stem(stem, near=near)
            problem = problem if by_stem == NOT_IN_THE_ZIP else by_stem
        boxes = _objects(path, root, read)
        if found is None:
            read.missing_images.append({"name": filename or stem, "reason": DESCRIBED_BUT % {
                "file": path, "objects": len(boxes), "problem": problem}})
            continue
        if read.images.get(found, ImageAnnotations()).annotated:
            read.warnings.append(DESCRIBED_AGAIN % {"image": found, "file": path})
            continue
        names.update(box.label for box in boxes)
        size = root.find("size")
        width = number(size.findtext("width")) if size is not None else None
        height = number(size.findtext("height")) if size is not None else None
        declared = (int(width), int(height)) if width and height and width > 0 and height > 0 \
            else None
        image_id = PurePosixPath(found).stem
        read.images[found] = ImageAnnotations(
            boxes=boxes, declared_size=declared, annotated=True, source=path,
            skipped=len(root.findall("object")) - len(boxes),
            split=split_of_path(found) or split_of_path(path) or splits.get(image_id)
            or splits.get(stem))
    return sort_labels(names)


def _objects(path: str, root: ElementTree.Element, read: DetectionRead) -> list[SourceBox]:
    boxes = []
    for number_, obj in enumerate(root.findall("object"), start=1):
        ref = f"{path} object #{number_}"
        raw_name = obj.findtext("name")
        if raw_name is None:
            read.skip(ref, NO_NAME)
            continue
        try:
            label = normalise_label(raw_name)
        except ValueError as exc:
            read.skip(ref, str(exc))
            continue
        box = obj.find("bndbox")
        if box is None:
            read.skip(ref, NO_BNDBOX)
            continue
        values = [number(box.findtext(corner)) for corner in _CORNERS]
        if any(v is None for v in values):
            shown = ", ".join(f"{c}={box.findtext(c)!r}" for c in _CORNERS)
            read.skip(ref, BNDBOX_NOT_NUMBERS % {"values": shown})
            continue
        x1, y1, x2, y2 = (float(v) for v in values)  # type: ignore[arg-type]
        if x2 < x1 or y2 < y1:
            read.skip(ref, CORNERS_SWAPPED % {"xmin": x1, "ymin": y1, "xmax": x2, "ymax": y2})
            continue
        boxes.append(SourceBox(ref, label, x1, y1, x2, y2))
    return boxes


def parse_voc_file(path: str, local: Path, limits: AnnotationLimits
                   ) -> tuple[ElementTree.Element | None, str | None]:
    """(the ``<annotation>`` root, None), (None, None) for another XML document, or
    (None, why it cannot be read). Raises FormatError above the XML size limit."""
    data = read_capped(local, limits.max_xml_bytes, path)
    try:
        return voc_root(data), None
    except RefusedXml as exc:
        return None, str(exc)
    except expat.ExpatError as exc:
        return None, NOT_WELL_FORMED % {"error": exc}


# ------------------------------------------------------------------------------------ out

def _text(parent_: ElementTree.Element, tag: str, value: object) -> ElementTree.Element:
    element = ElementTree.SubElement(parent_, tag)
    element.text = str(value)
    return element


def coordinate(value: float) -> str:
    """A coordinate as VOC text: up to 3 decimals, no trailing zeros (``12``, ``12.5``)."""
    return f"{value:.3f}".rstrip("0").rstrip(".")


def voc_xml(*, file_name: str, width: int, height: int, labels: list[str],
            boxes: list[list[float]]) -> bytes:
    """The annotation XML of one image; ``boxes`` ``[[x1, y1, x2, y2, class_index], ...]`` in px
    of the upright image, written as they are (float pixel coordinates, no +1)."""
    root = ElementTree.Element("annotation")
    _text(root, "folder", "JPEGImages")
    _text(root, "filename", file_name)
    size = ElementTree.SubElement(root, "size")
    _text(size, "width", width)
    _text(size, "height", height)
    _text(size, "depth", 3)
    _text(root, "segmented", 0)
    for x1, y1, x2, y2, class_index in boxes:
        obj = ElementTree.SubElement(root, "object")
        _text(obj, "name", labels[int(class_index)])
        _text(obj, "pose", "Unspecified")
        _text(obj, "truncated", 0)
        _text(obj, "difficult", 0)
        box = ElementTree.SubElement(obj, "bndbox")
        for tag, value in zip(_CORNERS, (x1, y1, x2, y2), strict=True):
            _text(box, tag, coordinate(value))
    ElementTree.indent(root)
    return ElementTree.tostring(root, encoding="utf-8", xml_declaration=True) + b"\n"
