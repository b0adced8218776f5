"""YOLO (Ultralytics / Darknet) text labels, in and out.

In: the label file of ``images/<...>/a.jpg`` is ``labels/<...>/a.txt`` (the last ``images``
folder becomes ``labels``, as Ultralytics' ``img2label_paths``), else ``a.txt`` beside the image
(Darknet). One box per line: ``class x_center y_center width height``, fractions of the image's
width and height in [0, 1] (a polygon line ``class x1 y1 x2 y2 ...`` gives its bounding box, as
Ultralytics reads segment labels). Class names: ``names`` in ``data.yaml`` (a list, or a map of
id to name), else ``classes.txt`` / ``obj.names`` (one per line); without either, classes are
named by their ids. An empty label file, and an image without one, is a background image.
A line that cannot be used is skipped and named ``<label file>:<line>``.

Out: ``images/<split>/x.png``, ``labels/<split>/x.txt``, ``data.yaml``.
"""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath
from typing import Any

import yaml
from django.utils.translation import gettext_noop

from sampan.datasets.archives import normalise_label
from sampan.datasets.formats.common import (AnnotationLimits, DetectionRead, FormatError,
                                            ImageAnnotations, SourceBox, read_capped,
                                            split_of_path)

#: how far outside [0, 1] a fraction may be before the line is refused (rounding by writers:
#: 1e-3 of a 640 px image is 0.64 px); boxes inside the margin are clipped to the image
TOLERANCE = 1e-3
CLASS_LIST_NAMES = {"classes.txt", "obj.names", "classes.names"}

# Why a label file or line is skipped (the import report's, stored in English, read in the
# request's language: sampan.datasets.report_texts)
NOT_UTF8 = gettext_noop("not UTF-8 text; the whole file is skipped")
FIELD_COUNT = gettext_noop("expected 5 fields (class x_center y_center width height), found "
                           "%(count)d")
CLASS_ID_NOT_WHOLE = gettext_noop("class id %(id)r is not a whole number")
CLASS_ID_OUT_OF_RANGE = gettext_noop("class id %(id)d is out of range: the class names list "
                                     "%(count)d classes (ids 0 to %(last)d)")
CLASS_ID_WITHOUT_CLASSES = gettext_noop("class id %(id)d is out of range: the class names list "
                                        "no class")
COORDINATE_NOT_NUMBER = gettext_noop("a coordinate is not a number")
VALUE_OUTSIDE = gettext_noop("value %(value)g is outside [0, 1] (YOLO coordinates are fractions "
                             "of the image width and height)")
NEGATIVE_SIZE = gettext_noop("negative width or height (%(width)g, %(height)g)")


class _NamesLoader(yaml.SafeLoader):
    """YAML's safe loader resolving decimal integers only: ``names: [no, yes, 1.5, null]`` are
    the class names "no", "yes", "1.5" and "null" (YAML 1.1 would read False, True, a float and
    None), ``{0: person}`` keeps its integer keys, and an unquoted ``6`` becomes the name "6"."""


# decimal integers only (YAML 1.1 also reads 0x1F, 0o17 and 1:20 as integers)
_NamesLoader.yaml_implicit_resolvers = {}
_NamesLoader.add_implicit_resolver("tag:yaml.org,2002:int", re.compile(r"^[-+]?[0-9]+$"),
                                   list("-+0123456789"))


def label_candidates(image: str) -> list[str]:
    """Where the label file of ``image`` (a path in the zip) can be: ``labels/`` for the last
    ``images/`` folder, then beside the image."""
    stem = str(PurePosixPath(image).with_suffix(".txt"))
    found = []
    parts = stem.split("/")
    for position in range(len(parts) - 2, -1, -1):
        if parts[position] == "images":
            found.append("/".join(parts[:position] + ["labels"] + parts[position + 1:]))
            break
    found.append(stem)
    return found


def _names_value(value: Any, shown: str) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise FormatError(f"{shown} is not a class name: {value!r}")
    try:
        return normalise_label(str(value))
    except ValueError as exc:
        raise FormatError(f"{shown}: {exc}") from None


def names_from_yaml(path: str, local: Path, limits: AnnotationLimits) -> list[str] | None:
    """Class names in id order from a ``data.yaml``; None when it has no ``names``. Raises
    FormatError for names that are not a list or an {id: name} map of ids 0..n-1."""
    data = read_capped(local, limits.max_yaml_bytes, path)
    try:
        loaded = yaml.load(data, Loader=_NamesLoader)  # noqa: S506 (a safe loader)
    except yaml.YAMLError as exc:
        raise FormatError(f"{path}: not readable YAML: {exc}") from None
    if not isinstance(loaded, dict) or "names" not in loaded:
        return None
    names = loaded["names"]
    if isinstance(names, list):
        return [_names_value(v, f"{path}: names[{i}]") for i, v in enumerate(names)]
    if isinstance(names, dict):
        ids: dict[int, str] = {}
        for key, value in names.items():
            cid = key if isinstance(key, int) and not isinstance(key, bool) else \
                int(key) if isinstance(key, str) and key.strip().isdigit() else None
            if cid is None:
                raise FormatError(f"{path}: names has the key {key!r}, not a class id")
            ids[cid] = _names_value(value, f"{path}: names[{cid}]")
        if sorted(ids) != list(range(len(ids))):
            raise FormatError(f"{path}: the class ids in names must be 0 to {len(ids) - 1}, "
                              f"found {sorted(ids)}")
        return [ids[i] for i in range(len(ids))]
    raise FormatError(f"{path}: names must be a list or a map of class id to name")


def names_from_list(path: str, local: Path, limits: AnnotationLimits) -> list[str]:
    """Class names from ``classes.txt`` / ``obj.names``: line n is class n-1; blank lines at
    the end are dropped, one in between is an error (every later id would shift)."""
    text = read_capped(local, limits.max_text_bytes, path).decode("utf-8-sig", "replace")
    lines = text.splitlines()
    while lines and not lines[-1].strip():
        lines.pop()
    return [_names_value(line, f"{path}:{number}") for number, line in enumerate(lines, 1)]


def read_label_file(path: str, local: Path, names: list[str] | None, limits: AnnotationLimits,
                    read: DetectionRead) -> list[SourceBox]:
    """The boxes of one label file (fractions, xyxy). Lines that cannot be used are skipped
    into ``read`` as ``<path>:<line>`` with the reason. ``names`` None: classes are named by
    their ids."""
    raw = read_capped(local, limits.max_text_bytes, path)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        read.skip(path, NOT_UTF8)
        return []
    boxes = []
    for line_number, line in enumerate(text.splitlines(), start=1):
        fields = line.split()
        if not fields:
            continue
        ref = f"{path}:{line_number}"
        box, problem = _line_box(fields, names)
        if box is None:
            read.skip(ref, problem)
        else:
            boxes.append(SourceBox(ref, *box))
    return boxes


def _line_box(fields: list[str], names: list[str] | None
              ) -> tuple[tuple[str, float, float, float, float] | None, str]:
    polygon = len(fields) >= 7 and len(fields) % 2 == 1
    if len(fields) != 5 and not polygon:
        return None, FIELD_COUNT % {"count": len(fields)}
    try:
        as_float = float(fields[0])
    except ValueError:
        as_float = float("nan")
    if not as_float.is_integer():
        return None, CLASS_ID_NOT_WHOLE % {"id": fields[0]}
    class_id = int(as_float)
    if class_id < 0 or (names is not None and class_id >= len(names)):
        if names:
            return None, CLASS_ID_OUT_OF_RANGE % {"id": class_id, "count": len(names),
                                                  "last": len(names) - 1}
        return None, CLASS_ID_WITHOUT_CLASSES % {"id": class_id}
    label = names[class_id] if names is not None else str(class_id)
    try:
        values = [float(v) for v in fields[1:]]
    except ValueError:
        return None, COORDINATE_NOT_NUMBER
    for value in values:
        if not -TOLERANCE <= value <= 1 + TOLERANCE:  # NaN fails both
            return None, VALUE_OUTSIDE % {"value": value}
    if polygon:
        xs, ys = values[0::2], values[1::2]
        return (label, min(xs), min(ys), max(xs), max(ys)), ""
    xc, yc, w, h = values
    if w < 0 or h < 0:
        return None, NEGATIVE_SIZE % {"width": w, "height": h}
    return (label, xc - w / 2, yc - h / 2, xc + w / 2, yc + h / 2), ""


def read_yolo(images: list[str], texts: dict[str, Path], names: list[str] | None,
              limits: AnnotationLimits, read: DetectionRead) -> set[str]:
    """Pair every image with its label file and read it into ``read``; an image without one is
    a background image. Returns the label files used."""
    used: set[str] = set()
    for image in images:
        label = next((c for c in label_candidates(image) if c in texts), None)
        boxes: list[SourceBox] = []
        skipped_before = len(read.skipped)
        if label is not None:
            used.add(label)
            boxes = read_label_file(label, texts[label], names, limits, read)
        read.images[image] = ImageAnnotations(
            boxes=boxes, normalised=True, split=split_of_path(image),
            annotated=label is not None, source=label or "",
            skipped=len(read.skipped) - skipped_before)
    return used


def is_label_path(path: str) -> bool:
    """A ``.txt`` under a ``labels`` folder: a YOLO label file whatever else is in the zip."""
    return path.endswith(".txt") and "labels" in path.split("/")[:-1]


# ------------------------------------------------------------------------------------ out

def yolo_lines(*, width: int, height: int, boxes: list[list[float]]) -> bytes:
    """The label file of one image: ``class x_center y_center width height`` per box, fractions
    with 6 decimals (0.04 px on a 40,000 px side)."""
    lines = []
    for x1, y1, x2, y2, class_index in boxes:
        lines.append(f"{int(class_index)} {(x1 + x2) / 2 / width:.6f} "
                     f"{(y1 + y2) / 2 / height:.6f} {(x2 - x1) / width:.6f} "
                     f"{(y2 - y1) / height:.6f}")
    return ("\n".join(lines) + "\n").encode() if lines else b""


def data_yaml(*, labels: list[str], splits: list[str]) -> bytes:
    """``data.yaml`` as Ultralytics reads it: ``path``, one image folder per split, ``nc``,
    ``names`` (a list; every name quoted where YAML would read it as another type)."""
    folders = {"train": "images/train", "val": "images/val", "test": "images/test"}
    document: dict[str, Any] = {"path": "."}
    for split in ("train", "val", "test"):
        if split in splits:
            document[split] = folders[split]
    document["nc"] = len(labels)
    document["names"] = list(labels)
    return yaml.safe_dump(document, allow_unicode=True, sort_keys=False).encode("utf-8")
