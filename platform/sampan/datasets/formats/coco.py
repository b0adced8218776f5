"""COCO object detection ("instances") JSON, in and out.

In: any JSON object with ``images``, ``annotations`` and ``categories`` lists (Roboflow writes
``_annotations.coco.json`` in each split folder; COCO itself ``annotations/instances_<split>.json``
beside ``<split>/`` image folders). Every entry is checked before pycocotools indexes the rest
(``pycocotools.coco.COCO``: ``imgToAnns``, ``cats``); an annotation that cannot be used is
skipped and named by its id. Classes follow the category ids (ascending), whatever the ids are:
{1, 3, 7} are the classes 0, 1, 2. ``bbox`` is [x, y, width, height] in px; crowd regions
(``iscrowd: 1``) are not object boxes and are skipped.

Out: one file per split, the categories (ids 1..N in class order) in each, images beside it.
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Iterable
from typing import Any

from django.utils.translation import gettext_noop
from pycocotools.coco import COCO

from sampan.datasets.archives import normalise_label
from sampan.datasets.formats.common import (DetectionRead, ImageAnnotations, ImageIndex,
                                            SourceBox, number, parent, split_of_file,
                                            split_of_path)

COCO_KEYS = ("images", "annotations", "categories")

# What the import report says of a COCO file (stored in English, read in the request's language:
# sampan.datasets.report_texts): warnings, why an annotation is skipped, why an image is missing
CATEGORY_WITHOUT_ID = gettext_noop("%(file)s: categories[%(position)d] has no usable id; "
                                   "ignored")
CATEGORY_TWICE = gettext_noop("%(file)s: category id %(id)s is listed twice; the first "
                              "(%(name)r) is kept")
CATEGORY_NAME_REFUSED = gettext_noop("%(file)s: category id %(id)s: %(error)s; its annotations "
                                     "are skipped")
IMAGE_WITHOUT_ID = gettext_noop("%(file)s: images[%(position)d] has no usable id or file_name; "
                                "ignored")
IMAGE_TWICE = gettext_noop("%(file)s: image id %(id)s is listed twice (%(first)r, %(second)r); "
                           "the first is kept")
LISTED_AGAIN = gettext_noop("%(image)s is listed again in %(file)s (image id %(id)s); its first "
                            "listing is kept, these %(boxes)d box(es) are not")
NOT_AN_OBJECT = gettext_noop("not a JSON object")
IMAGE_ID_UNKNOWN = gettext_noop("image_id %(id)r is not in images")
CATEGORY_ID_UNKNOWN = gettext_noop("category_id %(id)r is not in categories")
CROWD_REGION = gettext_noop("a crowd region (iscrowd: 1), not an object box")
BBOX_NOT_XYWH = gettext_noop("bbox is not [x, y, width, height]")
BBOX_NOT_FINITE = gettext_noop("bbox %(bbox)r holds a value that is not a finite number")
BBOX_NEGATIVE = gettext_noop("bbox %(bbox)r has a negative width or height")
LISTED_BUT = gettext_noop("listed in %(file)s (image id %(id)s, %(boxes)d box(es)) but "
                          "%(problem)s")


def is_coco(data: Any) -> bool:
    """True for a JSON object with ``images``, ``annotations`` and ``categories`` lists."""
    return isinstance(data, dict) and all(isinstance(data.get(key), list) for key in COCO_KEYS)


def _key(value: Any) -> int | str | None:
    """An id as COCO files use them (an int, sometimes a string), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int) or (isinstance(value, str) and value):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def _categories(path: str, data: dict[str, Any], read: DetectionRead
                ) -> dict[int | str, str]:
    """Category id -> class name of one file; entries that cannot be used are warned about."""
    names: dict[int | str, str] = {}
    for position, category in enumerate(data["categories"]):
        cid = _key(category.get("id")) if isinstance(category, dict) else None
        if cid is None:
            read.warnings.append(CATEGORY_WITHOUT_ID % {"file": path, "position": position})
            continue
        if cid in names:
            read.warnings.append(CATEGORY_TWICE % {"file": path, "id": cid,
                                                   "name": names[cid]})
            continue
        try:
            names[cid] = normalise_label(str(category.get("name", "")))
        except ValueError as exc:
            read.warnings.append(CATEGORY_NAME_REFUSED % {"file": path, "id": cid,
                                                          "error": exc})
    return names


def _box(annotation: dict[str, Any]) -> tuple[tuple[float, float, float, float] | None, str]:
    bbox = annotation.get("bbox")
    if not isinstance(bbox, list) or len(bbox) != 4:
        return None, BBOX_NOT_XYWH
    values = [number(v) if not isinstance(v, str) else None for v in bbox]
    if any(v is None for v in values):
        return None, BBOX_NOT_FINITE % {"bbox": bbox}
    x, y, w, h = (float(v) for v in values)  # type: ignore[arg-type]
    if w < 0 or h < 0:
        return None, BBOX_NEGATIVE % {"bbox": bbox}
    return (x, y, x + w, y + h), ""


def read_coco(files: list[tuple[str, dict[str, Any]]], index: ImageIndex,
              read: DetectionRead) -> list[str]:
    """Read the COCO files ``[(path in the zip, parsed JSON)]`` into ``read`` (images, skipped
    annotations, missing images, warnings). Returns the classes in category id order (ids of
    all files together; a name used by two ids is one class)."""
    by_id: dict[tuple[int, Any], str] = {}
    for path, data in files:
        categories = _categories(path, data, read)
        for cid, name in categories.items():
            by_id.setdefault((0, cid) if isinstance(cid, int) else (1, cid), name)
        _read_file(path, data, categories, index, read)
    classes: list[str] = []
    for _, name in sorted(by_id.items(), key=lambda kv: (kv[0][0], kv[0][1])):
        if name not in classes:
            classes.append(name)
    return classes


def _read_file(path: str, data: dict[str, Any], categories: dict[int | str, str],
               index: ImageIndex, read: DetectionRead) -> None:
    images: dict[int | str, dict[str, Any]] = {}
    for position, image in enumerate(data["images"]):
        iid = _key(image.get("id")) if isinstance(image, dict) else None
        name = image.get("file_name") if isinstance(image, dict) else None
        if iid is None or not isinstance(name, str) or not name.strip():
            read.warnings.append(IMAGE_WITHOUT_ID % {"file": path, "position": position})
        elif iid in images:
            read.warnings.append(IMAGE_TWICE % {"file": path, "id": iid,
                                                "first": images[iid]["file_name"],
                                                "second": name})
        else:
            images[iid] = {"id": iid, "file_name": name, "width": image.get("width"),
                           "height": image.get("height")}
    annotations: list[dict[str, Any]] = []
    skipped: dict[int | str, int] = {}  # image id -> its annotations that were skipped
    for position, annotation in enumerate(data["annotations"]):
        if not isinstance(annotation, dict):
            read.skip(f"{path} annotations[{position}]", NOT_AN_OBJECT)
            continue
        aid = _key(annotation.get("id"))
        ref = (f"{path} annotation id {aid}" if aid is not None
               else f"{path} annotations[{position}] (no id)")
        iid, cid = _key(annotation.get("image_id")), _key(annotation.get("category_id"))
        if iid is None or iid not in images:
            read.skip(ref, IMAGE_ID_UNKNOWN % {"id": annotation.get("image_id")})
            continue
        if cid is None or cid not in categories:
            read.skip(ref, CATEGORY_ID_UNKNOWN % {"id": annotation.get("category_id")})
            skipped[iid] = skipped.get(iid, 0) + 1
            continue
        if annotation.get("iscrowd") in (1, True):
            read.skip(ref, CROWD_REGION)
            skipped[iid] = skipped.get(iid, 0) + 1
            continue
        box, problem = _box(annotation)
        if box is None:
            read.skip(ref, problem)
            skipped[iid] = skipped.get(iid, 0) + 1
            continue
        annotations.append({"id": position, "image_id": iid, "category_id": cid, "bbox": box,
                            "ref": ref})
    coco = COCO()
    coco.dataset = {"images": list(images.values()), "annotations": annotations,
                    "categories": [{"id": cid, "name": name} for cid, name in categories.items()]}
    with contextlib.redirect_stdout(io.StringIO()):  # createIndex prints its progress
        coco.createIndex()
    folder = parent(path)
    file_split = split_of_file(path)
    for iid in coco.getImgIds():
        entry = coco.imgs[iid]
        boxes = [SourceBox(a["ref"], coco.cats[a["category_id"]]["name"], *a["bbox"])
                 for a in coco.imgToAnns.get(iid, [])]
        shown = entry["file_name"]
        found, problem = index.find(shown, near=(folder, parent(folder)))
        if found is None:
            read.missing_images.append({"name": shown, "reason": LISTED_BUT % {
                "file": path, "id": iid, "boxes": len(boxes), "problem": problem}})
            continue
        if read.images.get(found, ImageAnnotations()).annotated:
            read.warnings.append(LISTED_AGAIN % {"image": found, "file": path, "id": iid,
                                                 "boxes": len(boxes)})
            continue
        width, height = number(entry["width"]), number(entry["height"])
        declared = (int(width), int(height)) if width and height and width > 0 and height > 0 \
            else None
        read.images[found] = ImageAnnotations(
            boxes=boxes, declared_size=declared, split=file_split or split_of_path(found),
            annotated=True, source=path, skipped=skipped.get(iid, 0))


# ------------------------------------------------------------------------------------ out

def coco_categories(labels: list[str]) -> list[dict[str, Any]]:
    """The ``categories`` of an export: ids 1..N in class order (COCO starts at 1)."""
    return [{"id": index + 1, "name": name, "supercategory": "none"}
            for index, name in enumerate(labels)]


def coco_json(*, labels: list[str], images: Iterable[tuple[str, int, int, list[list[float]]]],
              description: str) -> dict[str, Any]:
    """The instances JSON of one split. ``images``: (file name beside the JSON, width, height,
    boxes ``[[x1, y1, x2, y2, class_index], ...]`` in px of the upright image)."""
    out_images: list[dict[str, Any]] = []
    annotations: list[dict[str, Any]] = []
    for image_id, (file_name, width, height, boxes) in enumerate(images, start=1):
        out_images.append({"id": image_id, "file_name": file_name, "width": width,
                           "height": height})
        for x1, y1, x2, y2, class_index in boxes:
            w, h = round(x2 - x1, 3), round(y2 - y1, 3)
            annotations.append({"id": len(annotations) + 1, "image_id": image_id,
                                "category_id": int(class_index) + 1,
                                "bbox": [round(x1, 3), round(y1, 3), w, h],
                                "area": round(w * h, 3), "iscrowd": 0, "segmentation": []})
    return {"info": {"description": description}, "licenses": [], "images": out_images,
            "annotations": annotations, "categories": coco_categories(labels)}
