"""A dataset version as a zip in the layout each ecosystem writes (no Django but its gettext_noop,
which marks the reasons ``folder_name_problem`` gives for translation).

- ``coco`` (Roboflow's layout): ``<split>/_annotations.coco.json`` with the split's images beside
  it; split folders ``train``, ``valid``, ``test``;
- ``voc``: ``JPEGImages/<name>.png``, ``Annotations/<name>.xml``,
  ``ImageSets/Main/<split>.txt`` (split ``train``, ``val``, ``test``);
- ``yolo`` (Ultralytics' layout): ``images/<split>/<name>.png``, ``labels/<split>/<name>.txt``,
  ``data.yaml``;
- ``imagenet`` (classification): ``<split>/<class>/<name>.png`` (what
  ``sampan.datasets.archives`` reads as the split layout).
- ``csv`` (text classification): one ``<dataset>-v<n>.csv``, UTF-8 with a byte-order mark (so
  that Excel shows Chinese), columns ``text,label,split`` (what the text import reads back):
  ``sampan.datasets.text_export``.

Images are the stored, upright, EXIF-free PNGs, so coordinates need no turn on the way back in.
Detection exports carry ``sampan.json`` (``EXPORT_SCHEMA``: dataset, version, digest, format,
labels in class order) that the importer uses for the class order. An image whose stored file is
missing is left out and named in ``MISSING_IMAGES.txt`` (and ``sampan.json``). Images go first,
then annotation files, so the annotations describe exactly the images written.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import IO

from django.utils.translation import gettext_noop

from sampan.datasets.formats import coco, voc, yolo
from sampan.datasets.formats.reader import EXPORT_SCHEMA
from sampan.datasets.formats.zipstream import ZipStream

FORMATS_BY_TASK = {"image_classification": ("imagenet",),
                   "object_detection": ("coco", "voc", "yolo"),
                   "text_classification": ("csv",)}
ALL_FORMATS = ("coco", "voc", "yolo", "imagenet", "csv")
SPLITS = ("train", "val", "test")
COCO_FOLDERS = {"train": "train", "val": "valid", "test": "test"}
ANNOTATIONS_FILE = "_annotations.coco.json"
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")

#: opens a stored sample by its storage name: (readable binary file, size in bytes or None);
#: raises FileNotFoundError when it is missing
Opener = Callable[[str], tuple[IO[bytes], int | None]]


@dataclass(frozen=True)
class ExportItem:
    """One sample of the version: ``storage_name`` of its stored PNG, size in px (upright),
    ``split``, and its frozen labels (``class_index`` or ``boxes`` [[x1, y1, x2, y2,
    class_index], ...] in px)."""

    storage_name: str
    original_name: str
    content_sha256: str
    width: int
    height: int
    split: str
    class_index: int | None = None
    boxes: list[list[float]] = field(default_factory=list)


@dataclass(frozen=True)
class ExportInfo:
    dataset: str
    version: int
    task_type: str
    labels: list[str]
    digest: str
    format: str


def folder_name_problem(label: str) -> str | None:
    """Why the class ``label`` cannot be a folder of an ImageNet-layout zip (English, marked for
    translation: ``gettext(problem)`` says it in the request's language), or None."""
    if "/" in label or "\\" in label:
        return gettext_noop("holds a path separator")
    if label.startswith("."):
        return gettext_noop("starts with a dot (a hidden folder, ignored by unzip tools and "
                            "importers)")
    if label.casefold() in ("__macosx", "thumbs.db", "desktop.ini"):
        return gettext_noop("is a name operating systems use for their own files")
    return None


def file_names(items: list[ExportItem]) -> list[str]:
    """A file name per item, unique in the export: ``<stem of its original name, ASCII>-<first
    8 hex of its sha256>.png`` (the full hash where 8 would collide)."""
    names: list[str] = []
    taken: set[str] = set()
    for item in items:
        stem = PurePosixPath(item.original_name.replace("\\", "/")).stem
        stem = _UNSAFE.sub("_", stem).strip("._-")[:60] or "image"
        name = f"{stem}-{item.content_sha256[:8]}.png"
        if name.casefold() in taken:
            name = f"{stem}-{item.content_sha256}.png"
        taken.add(name.casefold())
        names.append(name)
    return names


def export_chunks(info: ExportInfo, items: list[ExportItem], open_image: Opener
                  ) -> Iterator[bytes]:
    """The bytes of the export zip, chunk by chunk (module docstring). Raises ValueError for a
    format that ``FORMATS_BY_TASK`` does not allow for ``info.task_type`` (check first: once
    the first chunk is out, an error can only cut the download short)."""
    if info.format not in FORMATS_BY_TASK.get(info.task_type, ()):
        raise ValueError(f"format {info.format!r} does not fit a {info.task_type} version")
    names = file_names(items)
    stream = ZipStream()
    written: list[tuple[ExportItem, str]] = []
    missing: list[str] = []
    for item, name in zip(items, names, strict=True):
        try:
            handle, size = open_image(item.storage_name)
        except FileNotFoundError:
            missing.append(item.original_name)
            continue
        with handle:
            yield from stream.add_file(_image_path(info, item, name), handle, size=size)
        written.append((item, name))
    for path, data in _annotation_files(info, written):
        yield from stream.add_bytes(path, data)
    if missing:
        yield from stream.add_bytes("MISSING_IMAGES.txt", (
            "These samples' image files were missing from the storage and are not in this "
            "export:\n" + "\n".join(missing) + "\n").encode())
    if info.task_type == "object_detection":
        yield from stream.add_bytes("sampan.json", _manifest(info, written, missing))
    yield from stream.close()


def _image_path(info: ExportInfo, item: ExportItem, name: str) -> str:
    if info.format == "coco":
        return f"{COCO_FOLDERS[item.split]}/{name}"
    if info.format == "voc":
        return f"JPEGImages/{name}"
    if info.format == "yolo":
        return f"images/{item.split}/{name}"
    return f"{item.split}/{info.labels[item.class_index or 0]}/{name}"


def _annotation_files(info: ExportInfo, written: list[tuple[ExportItem, str]]
                      ) -> Iterator[tuple[str, bytes]]:
    by_split = {split: [(i, n) for i, n in written if i.split == split] for split in SPLITS}
    present = [split for split in SPLITS if by_split[split]]
    description = f"{info.dataset} v{info.version}"
    if info.format == "coco":
        for split in present:
            document = coco.coco_json(labels=info.labels, description=description, images=(
                (name, item.width, item.height, item.boxes) for item, name in by_split[split]))
            yield (f"{COCO_FOLDERS[split]}/{ANNOTATIONS_FILE}",
                   json.dumps(document, ensure_ascii=False, indent=1).encode("utf-8"))
    elif info.format == "voc":
        for item, name in written:
            yield (f"Annotations/{PurePosixPath(name).stem}.xml",
                   voc.voc_xml(file_name=name, width=item.width, height=item.height,
                               labels=info.labels, boxes=item.boxes))
        for split in present:
            yield (f"ImageSets/Main/{split}.txt",
                   "".join(f"{PurePosixPath(n).stem}\n" for _, n in by_split[split]).encode())
    elif info.format == "yolo":
        for item, name in written:
            yield (f"labels/{item.split}/{PurePosixPath(name).stem}.txt",
                   yolo.yolo_lines(width=item.width, height=item.height, boxes=item.boxes))
        yield "data.yaml", yolo.data_yaml(labels=info.labels, splits=present)


def _manifest(info: ExportInfo, written: list[tuple[ExportItem, str]], missing: list[str]
              ) -> bytes:
    splits = {split: sum(1 for item, _ in written if item.split == split) for split in SPLITS}
    return json.dumps({
        "schema": EXPORT_SCHEMA, "format": info.format, "task_type": info.task_type,
        "dataset": info.dataset, "version": info.version, "digest": info.digest,
        "labels": info.labels, "images": splits, "missing_images": missing,
    }, ensure_ascii=False, indent=1).encode("utf-8")
