"""Object detection after the graph: thresholds, non-maximum suppression, boxes back to the
image's pixels, and tiling of large images (numpy only; shared by the worker and the agent).

A detection model package (docs/contracts.md, "Detection models") has an ONNX graph with input
``images`` (N, 3, S, S) float32 (:class:`edge_agent.imaging.Preprocessing` with
``resize="letterbox"``) and outputs ``boxes`` (N, A, 4) xyxy in input pixels and ``scores``
(N, A, C) in [0, 1]; its manifest's ``detection`` object holds the :class:`DetectionSettings`.
Worker and agent both turn those outputs into detections with :func:`postprocess` and map them
back with :func:`to_image_pixels`, so that what the worker measured is what the device returns.

Tiling (``DetectionSettings.tile``): an image whose longer side exceeds ``tile.size`` * 1.5 is
cut into ``tile.size``-pixel squares overlapping by ``tile.overlap`` (:func:`tile_windows`),
each square is letterboxed and detected on its own, the boxes are shifted to the image's pixels,
the boxes that reach into another tile are merged by class-wise NMS at ``nms_iou``, then boxes
cut by an inner tile border are dropped where a larger box from another tile covers them
(:func:`merge_tiles`). This is the "slicing aided hyper inference" scheme of Akyon et al. 2022
(SAHI) without its full-image pass.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = [
    "DetectionSettings",
    "TileSettings",
    "box_iou",
    "paired_box_iou",
    "merge_tiles",
    "nms",
    "postprocess",
    "tile_windows",
    "to_image_pixels",
]

INPUT_NAME = "images"
#: boxes narrower or lower than this, in image px after clipping, are dropped (found in the
#: letterbox's padding: a 600 x 300 image answered a box (190, 300, 260, 300))
MIN_BOX_PX = 1.0
OUTPUT_NAMES = ("boxes", "scores")


@dataclass(frozen=True)
class TileSettings:
    """``size``: side of a tile in image px; ``overlap``: share of a side two neighbours have in
    common (0 <= overlap < 0.9). Raises ValueError on other values."""

    size: int
    overlap: float = 0.2

    def __post_init__(self) -> None:
        if int(self.size) < 32:
            raise ValueError(f"detection.tile.size must be >= 32 px, got {self.size}")
        if not 0.0 <= float(self.overlap) < 0.9:
            raise ValueError(f"detection.tile.overlap must be in [0, 0.9), got {self.overlap}")


@dataclass(frozen=True)
class DetectionSettings:
    """The manifest's ``detection`` object.

    ``score_threshold``: detections below it are dropped (0..1; the device's default answer;
    evaluation uses a low one to draw the whole precision-recall curve). ``nms_iou``: a box whose
    IoU with a higher-scoring box of the same class exceeds it is suppressed. ``pre_nms_top_k``:
    candidates kept before NMS, by score. ``max_detections``: per image (per tile when tiled).
    ``tile``: None, or how large images are tiled (module docstring).
    Raises ValueError on out-of-range values or unknown keys (:meth:`from_dict`).
    """

    score_threshold: float = 0.3
    nms_iou: float = 0.6
    pre_nms_top_k: int = 1000
    max_detections: int = 300
    tile: TileSettings | None = None

    def __post_init__(self) -> None:
        if not 0.0 <= self.score_threshold <= 1.0:
            raise ValueError(f"detection.score_threshold must be in [0, 1], got "
                             f"{self.score_threshold}")
        if not 0.0 < self.nms_iou <= 1.0:
            raise ValueError(f"detection.nms_iou must be in (0, 1], got {self.nms_iou}")
        if self.pre_nms_top_k < 1 or self.max_detections < 1:
            raise ValueError("detection.pre_nms_top_k and max_detections must be >= 1")

    def to_dict(self) -> dict[str, Any]:
        return {"score_threshold": self.score_threshold, "nms_iou": self.nms_iou,
                "pre_nms_top_k": self.pre_nms_top_k, "max_detections": self.max_detections,
                "tile": (None if self.tile is None else
                         {"size": self.tile.size, "overlap": self.tile.overlap})}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> DetectionSettings:
        unknown = set(data) - {"score_threshold", "nms_iou", "pre_nms_top_k", "max_detections",
                               "tile"}
        if unknown:
            raise ValueError(f"unknown detection keys: {sorted(unknown)}")
        tile = data.get("tile")
        try:
            return cls(score_threshold=float(data.get("score_threshold", 0.3)),
                       nms_iou=float(data.get("nms_iou", 0.6)),
                       pre_nms_top_k=int(data.get("pre_nms_top_k", 1000)),
                       max_detections=int(data.get("max_detections", 300)),
                       tile=None if tile is None else TileSettings(
                           size=int(tile["size"]), overlap=float(tile.get("overlap", 0.2))))
        except (TypeError, KeyError) as exc:
            raise ValueError(f"detection settings are malformed: {exc}") from None


def _iou(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """IoU of xyxy boxes ``a`` (..., 4) and ``b`` (..., 4), broadcast; 0 where both have no
    area."""
    def area(x: np.ndarray) -> np.ndarray:
        areas: np.ndarray = np.prod(np.clip(x[..., 2:] - x[..., :2], 0, None), axis=-1)
        return areas  # annotated: np.prod(..., axis=...) is Any in numpy's stubs

    inter = np.prod(np.clip(np.minimum(a[..., 2:], b[..., 2:])
                            - np.maximum(a[..., :2], b[..., :2]), 0, None), axis=-1)
    union = area(a) + area(b) - inter
    return np.where(union > 0, inter / np.where(union > 0, union, 1.0), 0.0)


def box_iou(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Intersection over union of every pair: ``a`` (N, 4), ``b`` (M, 4) xyxy -> (N, M)."""
    a = np.asarray(a, dtype=np.float64).reshape(-1, 4)
    b = np.asarray(b, dtype=np.float64).reshape(-1, 4)
    return _iou(a[:, None, :], b[None, :, :])


def paired_box_iou(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Intersection over union of the boxes of each row: ``a``, ``b`` (K, 4) xyxy -> (K,)."""
    return _iou(np.asarray(a, dtype=np.float64).reshape(-1, 4),
                np.asarray(b, dtype=np.float64).reshape(-1, 4))


NMS_BLOCK = 128  # rows of the IoU matrix computed at once: 128 x N float64, ~1 MB at N = 1000


def nms(boxes: np.ndarray, scores: np.ndarray, iou_threshold: float) -> np.ndarray:
    """Greedy non-maximum suppression, torchvision's ``ops.nms`` rule: in order of decreasing
    score (ties: lower index first), keep a box and drop every later box whose IoU with it is
    greater than ``iou_threshold``. ``boxes`` (N, 4) xyxy, ``scores`` (N,) -> kept indices (K,)
    int64 in decreasing score order.

    The IoUs are computed a block of ``NMS_BLOCK`` rows at a time against every later box, and
    the greedy pass reads them: one Python step per candidate instead of an IoU per kept box
    (1,000 barely overlapping candidates, as an untrained detector gives: ~120 ms -> ~15 ms)."""
    order = np.argsort(-np.asarray(scores, dtype=np.float64), kind="stable")
    ranked = np.asarray(boxes, dtype=np.float64).reshape(-1, 4)[order]
    x0, y0, x1, y1 = (np.ascontiguousarray(ranked[:, k]) for k in range(4))
    area = np.clip(x1 - x0, 0, None) * np.clip(y1 - y0, 0, None)
    count = len(ranked)
    removed = np.zeros(count, dtype=bool)
    keep: list[int] = []
    for start in range(0, count, NMS_BLOCK):
        stop = min(start + NMS_BLOCK, count)
        if removed[start:stop].all():
            continue
        # rows: this block's boxes; columns: every box from the block's first on (the same
        # arithmetic as box_iou, spelt out per coordinate: ~6x faster on 128 x 1,000)
        r, c = slice(start, stop), slice(start, None)
        width = np.minimum(x1[r, None], x1[None, c]) - np.maximum(x0[r, None], x0[None, c])
        height = np.minimum(y1[r, None], y1[None, c]) - np.maximum(y0[r, None], y0[None, c])
        inter = np.clip(width, 0, None, out=width) * np.clip(height, 0, None, out=height)
        union = area[r, None] + area[None, c] - inter
        iou = np.divide(inter, union, out=np.zeros_like(inter), where=union > 0)
        overlaps = iou > iou_threshold
        for row in range(stop - start):
            if removed[start + row]:
                continue
            keep.append(int(order[start + row]))
            removed[start:] |= overlaps[row]  # earlier boxes are decided already
    return np.asarray(keep, dtype=np.int64)


def batched_nms(boxes: np.ndarray, scores: np.ndarray, classes: np.ndarray,
                iou_threshold: float) -> np.ndarray:
    """:func:`nms` within each class (torchvision's ``batched_nms``): kept indices (K,) in
    decreasing score order."""
    if len(boxes) == 0:
        return np.zeros(0, dtype=np.int64)
    # offsets put every class in its own region of the plane, as torchvision does
    offset = (np.asarray(boxes, dtype=np.float64).max() + 1.0) * np.asarray(classes, np.float64)
    return nms(np.asarray(boxes, dtype=np.float64) + offset[:, None], scores, iou_threshold)


def postprocess(boxes: np.ndarray, scores: np.ndarray, settings: DetectionSettings,
                score_threshold: float | None = None
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One image's graph outputs -> (boxes (K, 4) xyxy input px, scores (K,), class indices
    (K,) int64), best first.

    ``boxes`` (A, 4), ``scores`` (A, C). Every (position, class) pair whose score passes
    ``score_threshold`` (default ``settings.score_threshold``) is a candidate; the
    ``settings.pre_nms_top_k`` best go through class-wise NMS at ``settings.nms_iou``; the first
    ``settings.max_detections`` are kept."""
    threshold = settings.score_threshold if score_threshold is None else score_threshold
    scores = np.asarray(scores, dtype=np.float32)
    positions, classes = np.nonzero(scores > threshold)
    values = scores[positions, classes]
    if values.size > settings.pre_nms_top_k:
        top = np.argsort(-values, kind="stable")[:settings.pre_nms_top_k]
        positions, classes, values = positions[top], classes[top], values[top]
    candidates = np.asarray(boxes, dtype=np.float32)[positions]
    keep = batched_nms(candidates, values, classes, settings.nms_iou)[:settings.max_detections]
    return candidates[keep], values[keep], classes[keep].astype(np.int64)


def to_image_pixels(boxes: np.ndarray, width: int, height: int, fitted: tuple[int, int]
                    ) -> np.ndarray:
    """Boxes in letterboxed input px -> px of the ``width`` x ``height`` image, clipped to it.
    ``fitted``: the (w, h) the image was scaled to (:func:`edge_agent.imaging.letterbox_size`)."""
    out = np.asarray(boxes, dtype=np.float64).reshape(-1, 4).copy()
    out[:, 0::2] *= width / fitted[0]
    out[:, 1::2] *= height / fitted[1]
    out[:, 0::2] = np.clip(out[:, 0::2], 0, width)
    out[:, 1::2] = np.clip(out[:, 1::2], 0, height)
    return out


def _starts(length: int, size: int, step: int) -> list[int]:
    if length <= size:
        return [0]
    count = math.ceil((length - size) / step) + 1
    # spread evenly so the last tile ends at the border (no thin sliver tile)
    return [round(i * (length - size) / (count - 1)) for i in range(count)]


def tile_windows(width: int, height: int, tile: TileSettings) -> list[tuple[int, int, int, int]]:
    """Windows (x0, y0, x1, y1) in image px covering a ``width`` x ``height`` image with squares
    of ``tile.size`` overlapping by at least ``tile.overlap`` of a side; one window (the whole
    image) when its longer side is at most 1.5 ``tile.size`` (a tile would not add detail)."""
    if max(width, height) <= 1.5 * tile.size:
        return [(0, 0, width, height)]
    step = max(1, int(tile.size * (1.0 - tile.overlap)))
    return [(x, y, min(width, x + tile.size), min(height, y + tile.size))
            for y in _starts(height, tile.size, step) for x in _starts(width, tile.size, step)]


def merge_tiles(parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]],
                windows: list[tuple[int, int, int, int]], width: int, height: int,
                settings: DetectionSettings) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Detections of each window (boxes already in image px) -> one image's detections.

    1. The boxes that reach into another tile's window, and every box of a window that is not
       square (letterboxed with padding: clipped to the window after its NMS), go through
       class-wise NMS at ``settings.nms_iou`` (an object seen whole by two overlapping tiles is
       kept once, the higher score); any other box only met its tile's NMS, which it passed,
       so the result is that of one NMS over the union.
    2. A box that touches an inner tile border (within 2 px; the image's own border does not
       count) is a possibly cut object: it is dropped when a box of the same class from another
       tile covers at least 60 % of it (intersection over the cut box's area), since a
       neighbouring tile, which overlaps by ``tile.overlap``, saw it larger.
    Returns (boxes (K, 4), scores (K,), classes (K,)) best first."""
    if not parts:
        return np.zeros((0, 4)), np.zeros(0, np.float32), np.zeros(0, np.int64)
    boxes = np.concatenate([p[0].reshape(-1, 4) for p in parts]).astype(np.float64)
    scores = np.concatenate([p[1] for p in parts]).astype(np.float32)
    classes = np.concatenate([p[2] for p in parts]).astype(np.int64)
    origin = np.concatenate([np.full(len(p[1]), i) for i, p in enumerate(parts)])
    # only a box reaching into another tile's window can meet a box of that tile; the rest met
    # NMS in their own tile already (30 tiles x 300 boxes through one NMS took ~2 s an image).
    # A window that is not square was letterboxed with padding: its boxes were clipped to it
    # after its NMS, which can raise their IoU (review), so all of them go through it again.
    shared = np.zeros(len(boxes), dtype=bool)
    for i, (x0, y0, x1, y1) in enumerate(windows):
        shared |= ((origin != i) & (boxes[:, 0] < x1) & (boxes[:, 2] > x0)
                   & (boxes[:, 1] < y1) & (boxes[:, 3] > y0))
        if x1 - x0 != y1 - y0:
            shared |= origin == i
    candidates = np.nonzero(shared)[0]
    kept = np.concatenate([np.nonzero(~shared)[0], candidates[
        batched_nms(boxes[candidates], scores[candidates], classes[candidates], settings.nms_iou)]])
    kept = np.sort(kept)  # best first, ties in input order, as batched_nms returns them
    keep = kept[np.argsort(-scores[kept].astype(np.float64), kind="stable")]
    boxes, scores, classes, origin = boxes[keep], scores[keep], classes[keep], origin[keep]
    cut = np.zeros(len(boxes), dtype=bool)
    for i, (x0, y0, x1, y1) in enumerate(windows):
        mine = origin == i
        near = np.zeros(len(boxes), dtype=bool)
        if x0 > 0:
            near |= boxes[:, 0] <= x0 + 2
        if y0 > 0:
            near |= boxes[:, 1] <= y0 + 2
        if x1 < width:
            near |= boxes[:, 2] >= x1 - 2
        if y1 < height:
            near |= boxes[:, 3] >= y1 - 2
        cut |= mine & near
    drop = np.zeros(len(boxes), dtype=bool)
    for j in np.nonzero(cut)[0]:
        others = (origin != origin[j]) & (classes == classes[j]) & ~drop
        if not others.any():
            continue
        b = boxes[j]
        area = max((b[2] - b[0]) * (b[3] - b[1]), 1e-9)
        lt = np.maximum(b[:2], boxes[others, :2])
        rb = np.minimum(b[2:], boxes[others, 2:])
        inter = np.prod(np.clip(rb - lt, 0, None), axis=1)
        if (inter / area).max() >= 0.6:
            drop[j] = True
    kept = ~drop
    return boxes[kept], scores[kept], classes[kept]


@dataclass
class Detections:
    """One image's detections in its own pixels: ``boxes`` (K, 4) xyxy, ``scores`` (K,),
    ``classes`` (K,) indices into the model's labels; ``tiles``: windows run (1 = no tiling)."""

    boxes: np.ndarray
    scores: np.ndarray
    classes: np.ndarray
    tiles: int = 1
    extra: dict[str, Any] = field(default_factory=dict)


def detect(image: Any, run: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]],
           preprocessing: Any, settings: DetectionSettings,
           score_threshold: float | None = None) -> Detections:
    """Detect objects in an RGB PIL ``image`` (upright, :func:`edge_agent.imaging.decode_image`).

    ``run``: (1, 3, S, S) float32 batch -> (boxes (1, A, 4), scores (1, A, C)) (an onnxruntime
    session, or the torch module on the worker). ``preprocessing``: the manifest's letterbox
    :class:`edge_agent.imaging.Preprocessing`. Tiles when ``settings.tile`` says so (module
    docstring). Boxes come back in the image's pixels, clipped to it; a box left under
    ``MIN_BOX_PX`` wide or high by the clipping (it lay in the letterbox's padding) is dropped."""
    from edge_agent.imaging import letterbox_size, preprocess

    width, height = image.size
    windows = ([(0, 0, width, height)] if settings.tile is None
               else tile_windows(width, height, settings.tile))
    parts = []
    for x0, y0, x1, y1 in windows:
        crop = image if (x0, y0, x1, y1) == (0, 0, width, height) else image.crop((x0, y0, x1, y1))
        batch = preprocess(crop, preprocessing)[None]
        boxes, scores = run(batch)
        found = postprocess(boxes[0], scores[0], settings, score_threshold)
        fitted = letterbox_size(crop.width, crop.height, preprocessing.size)
        pixels = to_image_pixels(found[0], crop.width, crop.height, fitted)
        # a box in the letterbox's padding is clipped to nothing: not an object of the image
        inside = ((pixels[:, 2] - pixels[:, 0]) >= MIN_BOX_PX) & \
            ((pixels[:, 3] - pixels[:, 1]) >= MIN_BOX_PX)
        pixels = pixels[inside]
        pixels[:, 0::2] += x0
        pixels[:, 1::2] += y0
        parts.append((pixels, found[1][inside], found[2][inside]))
    if len(windows) == 1:
        boxes, scores, classes = parts[0]
        return Detections(boxes, scores, classes, tiles=1)
    boxes, scores, classes = merge_tiles(parts, windows, width, height, settings)
    return Detections(boxes, scores, classes, tiles=len(windows))
