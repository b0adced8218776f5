"""What the detection readers share: boxes as files give them, the read result, size limits,
splits from names, image references, and XML without entity expansion (stdlib only, and
Django's gettext_noop to mark the message an upload is refused with)."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any
from xml.etree import ElementTree
from xml.parsers import expat

from django.utils.translation import gettext_noop

# IMAGE_SUFFIXES is unused here but re-exported: formats/reader.py imports it from this module
from sampan.datasets.archives import IMAGE_SUFFIXES  # noqa: F401
from sampan.datasets.archives import MiB, SPLIT_FOLDERS, ArchiveError

#: a split word alone or with a year, as COCO names its folders and files (``val2017``)
_SPLIT_WORD = re.compile(r"^(train|training|val|valid|validation|test|testing)(\d{4})?$")
_NAME_SEPARATORS = re.compile(r"[_\-.\s]+")
SHOWN_CANDIDATES = 3  # an ambiguous reference names this many of the images it matches


class FormatError(ArchiveError):
    """The annotations cannot be read as a whole (an annotation file over its size limit, a class
    list that is not one, no annotations at all); the import fails with this message."""


#: English, as the import worker reports it; the upload's 400 translates it (``_(NO_ANNOTATIONS)``)
NO_ANNOTATIONS = gettext_noop(
    "an object detection dataset needs bounding boxes, and this zip holds no annotation files. "
    "Upload a zip in one of these layouts: COCO (an instances JSON with images, annotations and "
    "categories, e.g. train/_annotations.coco.json beside the images), Pascal VOC "
    "(Annotations/*.xml beside JPEGImages/) or YOLO (images/<split>/*.jpg with "
    "labels/<split>/*.txt and data.yaml naming the classes). A zip of one folder per class is "
    "for image classification datasets; plain images (not zipped) import unlabeled.")

# Why an annotation file's reference finds no image (inside the import report's reasons, stored
# in English and read in the request's language: sampan.datasets.report_texts)
NO_FILE_NAME = gettext_noop("no file name")
NOT_IN_THE_ZIP = gettext_noop("not in the zip")
MATCHES_SEVERAL = gettext_noop("matches %(count)d images in the zip (%(names)s)")
#: why an XML file is not read (a skipped annotation file's reason)
XML_REFUSED = gettext_noop("XML with a DOCTYPE or ENTITY declaration is refused (entities are "
                           "never expanded)")


@dataclass(frozen=True)
class AnnotationLimits:
    """Largest annotation file of each kind, in bytes, checked on the extracted bytes before the
    file is parsed. A COCO JSON is held in memory whole while it is read (Python objects take
    roughly ten times its size), so it has the extractor's per-file limit (64 MiB: COCO val2017's
    instances file is 25 MB); one VOC XML or YOLO label file describes one image."""

    max_json_bytes: int = 64 * MiB
    max_xml_bytes: int = 1 * MiB
    max_text_bytes: int = 4 * MiB
    max_yaml_bytes: int = 1 * MiB


DEFAULT_LIMITS = AnnotationLimits()


@dataclass(slots=True)
class SourceBox:
    """One box as its annotation file gives it, in the file's frame (the stored, not yet
    EXIF-rotated pixels): pixels, or fractions of the width and height when the image's
    annotations are ``normalised`` (YOLO). ``ref`` names it in reports
    (``labels/train/a.txt:3``, ``Annotations/a.xml object #2``, ``x.json annotation id 17``)."""

    ref: str
    label: str
    x1: float
    y1: float
    x2: float
    y2: float


@dataclass(slots=True)
class ImageAnnotations:
    """The boxes of one image of the zip. ``declared_size`` is (width, height) in px as the file
    states it (COCO, VOC), else None; ``annotated`` is False for an image no annotation file
    mentions; ``source`` names the annotation file; ``skipped`` counts the annotations of this
    image that could not be used (so an image whose boxes were all skipped is not taken for a
    background image)."""

    boxes: list[SourceBox] = field(default_factory=list)
    normalised: bool = False
    declared_size: tuple[int, int] | None = None
    split: str | None = None
    annotated: bool = False
    source: str = ""
    skipped: int = 0


@dataclass
class DetectionRead:
    """The annotations of a zip: ``format`` (``coco`` | ``voc`` | ``yolo``), ``classes`` in class
    order, ``images`` for every image of the zip (path in the zip -> its annotations), and for
    the report: ``skipped`` annotations and ``missing_images`` (``{"name", "reason"}``), files
    not used (``ignored``: (path, reason)), ``warnings`` (text) and ``source`` (the
    ``sampan.json`` of a Sampan export, else None)."""

    format: str
    classes: list[str] = field(default_factory=list)
    images: dict[str, ImageAnnotations] = field(default_factory=dict)
    skipped: list[dict[str, str]] = field(default_factory=list)
    missing_images: list[dict[str, str]] = field(default_factory=list)
    ignored: list[tuple[str, str]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    source: dict[str, Any] | None = None

    def skip(self, ref: str, reason: str) -> None:
        self.skipped.append({"name": ref, "reason": reason})


def read_capped(path: Path, limit: int, shown: str) -> bytes:
    """The bytes of the extracted annotation file ``path``; raises FormatError naming ``shown``
    when it holds more than ``limit`` bytes (its size on disk is what was really decompressed)."""
    size = path.stat().st_size
    if size > limit:
        raise FormatError(
            f"annotation file {shown!r} is {size} bytes, larger than {limit} bytes, the limit "
            "for one annotation file of its kind; split it (one file per split folder) or "
            "upload fewer images per zip")
    return path.read_bytes()


def split_word(name: str) -> str | None:
    """``train`` | ``val`` | ``test`` when ``name`` (a folder name or one token of a file name)
    is a split word (``valid``, ``Training``, ``val2017``), else None."""
    match = _SPLIT_WORD.match(name.casefold())
    return SPLIT_FOLDERS[match.group(1)] if match else None


def split_of_path(path: str) -> str | None:
    """The split named by the first folder of ``path`` that is a split word, else None."""
    for part in path.split("/")[:-1]:
        found = split_word(part)
        if found:
            return found
    return None


def split_of_file(path: str) -> str | None:
    """The split of an annotation file: a split word among the tokens of its stem
    (``instances_val2017.json``), else its folders' (``train/_annotations.coco.json``)."""
    stem = PurePosixPath(path).stem
    for token in _NAME_SEPARATORS.split(stem):
        found = split_word(token) if token else None
        if found:
            return found
    return split_of_path(path)


def parent(path: str) -> str:
    """The folder of ``path`` in the zip ("" at the root)."""
    return path.rpartition("/")[0]


class ImageIndex:
    """The images of a zip, found by the references annotation files make to them."""

    def __init__(self, paths: list[str]) -> None:
        self.paths = paths
        self._by_base: dict[str, list[str]] = {}
        self._by_folded: dict[str, list[str]] = {}
        self._by_stem: dict[str, list[str]] = {}
        for path in paths:
            base = path.rpartition("/")[2]
            self._by_base.setdefault(base, []).append(path)
            self._by_folded.setdefault(base.casefold(), []).append(path)
            self._by_stem.setdefault(PurePosixPath(base).stem, []).append(path)

    @staticmethod
    def _pick(candidates: list[str], near: tuple[str, ...]) -> tuple[str | None, str | None]:
        if len(candidates) == 1:
            return candidates[0], None
        for folder in near:
            close = [c for c in candidates if parent(c) == folder]
            if len(close) == 1:
                return close[0], None
        for folder in near:
            below = [c for c in candidates if c.startswith(folder + "/")] if folder else []
            if len(below) == 1:
                return below[0], None
        shown = ", ".join(sorted(candidates)[:SHOWN_CANDIDATES])
        more = "" if len(candidates) <= SHOWN_CANDIDATES else ", ..."
        return None, MATCHES_SEVERAL % {"count": len(candidates), "names": shown + more}

    def find(self, reference: str, *, near: tuple[str, ...] = ()) -> tuple[str | None, str | None]:
        """(path in the zip, None) of the image ``reference`` names (a file name, a relative
        path, or an absolute path of the machine that wrote it: then its last parts count), or
        (None, why not). Among several candidates the ones in the folders ``near`` win."""
        ref = unicodedata.normalize("NFC", reference.strip().replace("\\", "/"))
        while ref.startswith("./"):
            ref = ref[2:]
        ref = ref.lstrip("/")
        base = ref.rpartition("/")[2]
        if not base:
            return None, NO_FILE_NAME
        by_base = self._by_base.get(base, [])
        exact = [p for p in by_base if p == ref or p.endswith("/" + ref)]
        if exact:
            return self._pick(exact, near)
        candidates = by_base or self._by_folded.get(base.casefold(), [])
        if not candidates:
            return None, NOT_IN_THE_ZIP
        if len(candidates) > 1:  # the most trailing folders in common with the reference win
            wanted = ref.casefold().split("/")[::-1]
            shared = {c: _common_prefix(c.casefold().split("/")[::-1], wanted)
                      for c in candidates}
            best = max(shared.values())
            candidates = [c for c in candidates if shared[c] == best]
        return self._pick(candidates, near)

    def find_stem(self, stem: str, *, near: tuple[str, ...] = ()) -> tuple[str | None, str | None]:
        """The image whose file name without its suffix is ``stem`` (VOC pairs ``a.xml`` with
        ``a.jpg``), as :meth:`find`."""
        candidates = self._by_stem.get(stem, [])
        if not candidates:
            return None, NOT_IN_THE_ZIP
        return self._pick(candidates, near)


class RefusedXml(ValueError):
    """An XML file declares a DOCTYPE or entities (entity expansion is never done)."""


def parse_xml(data: bytes) -> ElementTree.Element:
    """Parse ``data`` into an ElementTree element with expat, refusing any DOCTYPE, entity
    declaration or external entity before it is expanded (the "billion laughs" and external
    entity attacks; the same handlers defusedxml sets). Raises RefusedXml, or
    ``xml.parsers.expat.ExpatError`` for XML that is not well formed."""
    builder = ElementTree.TreeBuilder()
    parser = expat.ParserCreate()

    def refuse(*_: Any) -> None:
        raise RefusedXml(XML_REFUSED)

    parser.StartDoctypeDeclHandler = refuse
    parser.EntityDeclHandler = refuse
    parser.UnparsedEntityDeclHandler = refuse
    parser.ExternalEntityRefHandler = refuse
    parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
    parser.StartElementHandler = lambda tag, attrs: builder.start(tag, attrs)
    parser.EndElementHandler = lambda tag: builder.end(tag)
    parser.CharacterDataHandler = builder.data
    parser.Parse(data, True)
    return builder.close()


def number(value: Any) -> float | None:
    """``value`` as a finite float (an int, a float, or text of one), else None; booleans are
    not numbers."""
    if isinstance(value, bool) or value is None:
        return None
    try:
        result = float(value.strip() if isinstance(value, str) else value)
    except (TypeError, ValueError):
        return None
    return result if result == result and result not in (float("inf"), float("-inf")) else None


def _common_prefix(a: list[str], b: list[str]) -> int:
    count = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        count += 1
    return count
