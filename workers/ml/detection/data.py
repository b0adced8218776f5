"""Detection samples in memory, the input size and tiling decision, and box-aware augmentation.

Every pixel comes from ``edge_agent.imaging`` (decode, upright, letterbox), as on the device.
Images that are not tiled are kept letterboxed at the input size S (uint8, (3, S, S)) with
their boxes scaled the same way; images of a tiled run are kept at their own resolution (up to
``MAX_TILED_SIDE``) and training draws random ``tile``-pixel windows from them.

Augmentation is torchvision's ``transforms.v2``, which moves the boxes with the pixels
(``tv_tensors.BoundingBoxes``): horizontal flips (none when the user says left and right
matter), photometric distortion (SSD's, Liu et al. 2016), scale jitter (0.75-1.33 ``light``,
the default; 0.5-1.6 ``strong``) with a crop or pad back to S, and ``SanitizeBoundingBoxes``
(boxes cut below 2 px by a crop go). Training also shows mosaics (:func:`mosaic`, YOLOv4's):
four images side by side, a window of them, then the same transform.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from PIL import Image
from torchvision import tv_tensors
from torchvision.transforms import v2

from edge_agent.detection import TileSettings
from edge_agent.imaging import ImageDecodeError, Preprocessing, decode_image, letterbox_size, \
    resized_pixels

from ..specs import AUGMENTATIONS, TrainingCancelled

__all__ = ["BoxSample", "DetectionData", "Geometry", "cache_bytes", "choose_geometry",
           "load_samples", "mosaic", "training_transform"]

#: longest side kept in memory for a tiled run (px); larger images are scaled down to it
MAX_TILED_SIDE = 4096
#: smallest median object side (px at the model input) before tiling is considered
MIN_OBJECT_PX = 16.0
INPUT_SIZES = (320, 384, 448, 512)


@dataclass(frozen=True)
class BoxSample:
    """One image with its boxes: ``boxes`` rows are (x1, y1, x2, y2, class_index) in px of the
    upright image (``DatasetVersionItem.boxes``); an empty list is a background image."""

    path: str
    boxes: tuple[tuple[float, float, float, float, int], ...]
    sample_id: str


@dataclass(frozen=True)
class Geometry:
    """``input_size``: side S of the square model input (px); ``tile``: None or the tiling of
    large images; ``reason``: why, in words (shown in the recipe)."""

    input_size: int
    tile: TileSettings | None
    reason: str


@dataclass
class DetectionData:
    """Decoded samples. ``images[i]`` (3, H, W) uint8; ``boxes[i]`` (K, 4) float32 xyxy and
    ``classes[i]`` (K,) int64 in the coordinates of ``images[i]``; ``originals[i]`` the image's
    own (width, height); ``scales[i]`` image px per stored px (x, y)."""

    images: list[torch.Tensor] = field(default_factory=list)
    boxes: list[torch.Tensor] = field(default_factory=list)
    classes: list[torch.Tensor] = field(default_factory=list)
    sample_ids: list[str] = field(default_factory=list)
    originals: list[tuple[int, int]] = field(default_factory=list)
    scales: list[tuple[float, float]] = field(default_factory=list)
    skipped: list[dict[str, Any]] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.sample_ids)


def _decode(path: str) -> Image.Image:
    try:
        data = Path(path).read_bytes()
    except OSError as error:
        raise ImageDecodeError(f"cannot read file ({error.strerror})", "unreadable",
                               reason=error.strerror) from error
    return decode_image(data)


def choose_geometry(sizes: Sequence[tuple[int, int]], box_sides: Sequence[float],
                    preferred: int | None = None) -> Geometry:
    """The input size and tiling for a training set.

    ``sizes``: (width, height) of the training images; ``box_sides``: sqrt(w * h) of every
    training box, in image px. The input size is the median longer side rounded to a multiple
    of 64 within ``INPUT_SIZES`` (``preferred`` overrides). Tiling is used when the median
    object, letterboxed to that size, would be smaller than ``MIN_OBJECT_PX`` (16 px: FCOS's
    finest level has a stride of 8) and the images are larger than 1.5 tiles: the tile is then
    the input size in image px (objects at their own resolution), overlapping by 20 %.
    """
    longer = [max(w, h) for w, h in sizes] or [384]
    median_side = statistics.median(longer)
    if preferred is not None:
        size = preferred
    else:
        size = min(INPUT_SIZES, key=lambda s: (abs(s - median_side), s))
    if not box_sides:
        return Geometry(size, None, f"input {size} px (median image side {median_side:.0f} px)")
    median_box = statistics.median(box_sides)
    at_input = median_box * size / median_side
    if at_input < MIN_OBJECT_PX and median_side > 1.5 * size:
        return Geometry(size, TileSettings(size=size, overlap=0.2),
                        f"tiles of {size} px: the median object ({median_box:.0f} px) would be "
                        f"{at_input:.1f} px with the whole {median_side:.0f} px image at "
                        f"{size} px")
    return Geometry(size, None, f"input {size} px (median image side {median_side:.0f} px, "
                                f"median object {median_box:.0f} px -> {at_input:.0f} px)")


def cache_bytes(sizes: Sequence[tuple[int, int]], geometry: Geometry) -> int:
    """Bytes :func:`load_samples` keeps for images of these (width, height) px: each letterboxed
    to the input size, or (tiled) at its own size up to ``MAX_TILED_SIDE``, 3 bytes a pixel."""
    if geometry.tile is None:
        return len(sizes) * 3 * geometry.input_size ** 2
    total = 0
    for width, height in sizes:
        scale = min(1.0, MAX_TILED_SIDE / max(width, height, 1))
        total += 3 * max(1, round(width * scale)) * max(1, round(height * scale))
    return total


def load_samples(samples: Sequence[BoxSample], geometry: Geometry,
                 preprocessing: Preprocessing, num_classes: int,
                 should_stop: Callable[[], bool]) -> DetectionData:
    """Decode ``samples`` and keep them as :class:`DetectionData` for ``geometry``.

    Boxes are clipped to the image; boxes under 1 px after clipping, or with a class index
    outside 0..num_classes-1, are dropped and named in ``skipped``. An undecodable file is
    skipped as ``{"sample_id", "path", "error"}``. Raises TrainingCancelled."""
    data = DetectionData()
    for sample in samples:
        if should_stop():
            raise TrainingCancelled()
        try:
            image = _decode(sample.path)
        except ImageDecodeError as error:
            data.skipped.append({"sample_id": sample.sample_id, "path": sample.path,
                                 "error": str(error)})
            continue
        width, height = image.size
        rows = np.asarray([b[:4] for b in sample.boxes], dtype=np.float32).reshape(-1, 4)
        classes = np.asarray([int(b[4]) for b in sample.boxes], dtype=np.int64)
        rows[:, 0::2] = rows[:, 0::2].clip(0, width)
        rows[:, 1::2] = rows[:, 1::2].clip(0, height)
        good = ((rows[:, 2] - rows[:, 0] >= 1) & (rows[:, 3] - rows[:, 1] >= 1)
                & (classes >= 0) & (classes < num_classes))
        for index in np.nonzero(~good)[0]:
            data.skipped.append({"sample_id": sample.sample_id, "box": int(index),
                                 "error": "box smaller than 1 px or class out of range"})
        rows, classes = rows[good], classes[good]
        if geometry.tile is None:
            pixels = resized_pixels(image, preprocessing)
            fitted = letterbox_size(width, height, preprocessing.size)
        else:
            scale = min(1.0, MAX_TILED_SIDE / max(width, height))
            fitted = (max(1, round(width * scale)), max(1, round(height * scale)))
            shown = image if fitted == (width, height) else image.resize(
                fitted, Image.Resampling.BILINEAR)
            pixels = np.asarray(shown, dtype=np.uint8)
        sx, sy = fitted[0] / width, fitted[1] / height
        rows = rows * np.asarray([sx, sy, sx, sy], dtype=np.float32)
        data.images.append(torch.from_numpy(np.ascontiguousarray(pixels.transpose(2, 0, 1))))
        data.boxes.append(torch.from_numpy(rows))
        data.classes.append(torch.from_numpy(classes))
        data.sample_ids.append(sample.sample_id)
        data.originals.append((width, height))
        data.scales.append((1 / sx, 1 / sy))
    return data


#: box-aware augmentation strengths (``auto`` is ``light``): photometric distortion probability
#: and scale jitter range; ``none`` keeps the pixels as they are
AUGMENTATION_PRESETS = {"light": (0.5, (0.75, 1.33)), "strong": (0.8, (0.5, 1.6))}


def training_transform(input_size: int, mean: Sequence[float], flips: bool = True,
                       preset: str = "light") -> v2.Compose:
    """The box-aware augmentation of one training image (module docstring): (3, H, W) uint8
    image + ``tv_tensors.BoundingBoxes`` + labels in, the same at (3, S, S) out.
    ``flips``: False never mirrors (left and right matter); ``preset``: one of
    :data:`workers.ml.specs.AUGMENTATIONS` (:data:`AUGMENTATION_PRESETS`; ``none`` keeps the
    pixels). Raises ValueError for another preset."""
    if preset not in AUGMENTATIONS:
        raise ValueError(f"augmentation: unknown preset {preset!r}")
    fill = tuple(int(round(255 * m)) for m in mean)
    steps: list[Any] = []
    if preset != "none":
        if flips:
            steps.append(v2.RandomHorizontalFlip(0.5))
        distort, scale = AUGMENTATION_PRESETS["light" if preset == "auto" else preset]
        steps += [v2.RandomPhotometricDistort(p=distort),
                  v2.RandomAffine(degrees=0.0, scale=scale, fill=fill)]
    steps += [v2.RandomCrop(input_size, pad_if_needed=True, fill=fill),
              v2.SanitizeBoundingBoxes(min_size=2.0)]
    return v2.Compose(steps)


def random_window(data: DetectionData, index: int, tile: int, generator: torch.Generator
                  ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """A random ``tile`` x ``tile`` window of image ``index`` (whole image when smaller), its
    boxes clipped to the window (boxes keeping under 40 % of their area are dropped: a sliver of
    a tree is not a tree)."""
    return _window(data.images[index], data.boxes[index], data.classes[index], tile, generator)


def _window(image: torch.Tensor, boxes: torch.Tensor, classes: torch.Tensor, tile: int,
            generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    _, height, width = image.shape
    x0 = int(torch.randint(0, max(1, width - tile + 1), (1,), generator=generator))
    y0 = int(torch.randint(0, max(1, height - tile + 1), (1,), generator=generator))
    x1, y1 = min(width, x0 + tile), min(height, y0 + tile)
    boxes = boxes.clone()
    area = (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])
    boxes[:, 0::2] = boxes[:, 0::2].clamp(x0, x1) - x0
    boxes[:, 1::2] = boxes[:, 1::2].clamp(y0, y1) - y0
    kept = (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1]) >= 0.4 * area.clamp(min=1e-6)
    return image[:, y0:y1, x0:x1], boxes[kept], classes[kept]


def mosaic(data: DetectionData, indices: Sequence[int], size: int, fill: Sequence[int],
           generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """YOLOv4's mosaic (Bochkovskiy et al. 2020): images ``indices`` (4; letterboxed S x S, as
    :func:`load_samples` keeps them) in a 2 x 2 grid on a 2S x 2S canvas of ``fill``, and a
    random ``size`` x ``size`` window of it, which shows parts of up to four images with their
    boxes (clipped; under 40 % of a box left: dropped). Returns (3, size, size) uint8, boxes
    (K, 4) xyxy and classes (K,)."""
    indices = list(indices[:4])
    side = max(max(data.images[i].shape[1:]) for i in indices)
    canvas = torch.empty((3, 2 * side, 2 * side), dtype=torch.uint8)
    canvas[:] = torch.as_tensor(list(fill), dtype=torch.uint8)[:, None, None]
    boxes, classes = [], []
    for slot, index in enumerate(indices):
        image = data.images[index]
        x0, y0 = (slot % 2) * side, (slot // 2) * side
        canvas[:, y0:y0 + image.shape[1], x0:x0 + image.shape[2]] = image
        boxes.append(data.boxes[index] + torch.tensor([x0, y0, x0, y0], dtype=torch.float32))
        classes.append(data.classes[index])
    return _window(canvas, torch.cat(boxes), torch.cat(classes), size, generator)


def augmented(image: torch.Tensor, boxes: torch.Tensor, classes: torch.Tensor,
              transform: v2.Compose) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """Apply ``transform``; returns the (3, S, S) float image in 0..1 and the target dict that
    torchvision's detectors take (``boxes`` (K, 4) float32, ``labels`` (K,) int64)."""
    _, height, width = image.shape
    wrapped = tv_tensors.BoundingBoxes(boxes, format="XYXY", canvas_size=(height, width))
    out_image, target = transform(tv_tensors.Image(image), {"boxes": wrapped, "labels": classes})
    return (out_image.as_subclass(torch.Tensor).float() / 255.0,
            {"boxes": target["boxes"].as_subclass(torch.Tensor).float(),
             "labels": target["labels"]})


def steps_for(budget_s: float, step_s: float) -> int:
    return max(0, math.floor(budget_s / max(step_s, 1e-6)))
