"""Reading samples into memory: every pixel comes from ``edge_agent.imaging``.

Each file is read and decoded once; the resized (3, H, W) uint8 pixels are kept in one
(N, 3, H, W) uint8 tensor for the whole run (a quarter of float32's memory), augmented per batch
(:mod:`workers.ml.augmentation`) and normalised by :func:`normalise`, which gives the same
float32 values as ``edge_agent.imaging.preprocess``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from PIL import Image

from edge_agent.imaging import ImageDecodeError, Preprocessing, decode_image, resized_pixels

from .recipe import MAX_CACHE_BYTES
from .specs import SampleRef, TrainingCancelled

__all__ = ["MAX_CACHE_BYTES", "DatasetTooLarge", "ImageTensors", "check_cache_fits",
           "decode_samples", "normalise", "normalised_batches", "to_tensors"]


@dataclass
class ImageTensors:
    """``images`` (N, 3, H, W) uint8, ``labels`` (N,) int64, ``sample_ids`` length N."""

    images: torch.Tensor
    labels: torch.Tensor
    sample_ids: list[str]
    skipped: list[dict[str, Any]] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.sample_ids)


class DatasetTooLarge(ValueError):
    """The images' in-memory cache would pass :data:`MAX_CACHE_BYTES` (the message names both)."""


def _size(n_bytes: float) -> str:
    return f"{n_bytes / 1e9:.1f} GB" if n_bytes >= 1e9 else f"{n_bytes / 1e6:.1f} MB"


def check_cache_fits(need_bytes: int, what: str) -> None:
    """Raise :class:`DatasetTooLarge` when ``need_bytes`` (the cache of ``what``, e.g. "1000
    images at 224 x 224 px") pass :data:`MAX_CACHE_BYTES`."""
    if need_bytes > MAX_CACHE_BYTES:
        raise DatasetTooLarge(
            f"{what} need {_size(need_bytes)} of memory, more than the {_size(MAX_CACHE_BYTES)} a "
            f"training run may hold (SAMPAN_TRAINING_CACHE_BYTES): train on a dataset version "
            f"with fewer images, or raise the limit on a worker with more memory")


def _decode(sample: SampleRef) -> Image.Image:
    try:
        data = Path(sample.path).read_bytes()
    except OSError as error:
        raise ImageDecodeError(f"cannot read file ({error.strerror})", "unreadable",
                               reason=error.strerror) from error
    return decode_image(data)


def decode_samples(
    samples: Sequence[SampleRef], should_stop: Callable[[], bool]
) -> tuple[list[tuple[SampleRef, Image.Image]], list[dict[str, Any]]]:
    """Decode ``samples``; undecodable ones are returned as ``{"sample_id", "path", "error"}``."""
    decoded: list[tuple[SampleRef, Image.Image]] = []
    skipped: list[dict[str, Any]] = []
    for sample in samples:
        if should_stop():
            raise TrainingCancelled()
        try:
            decoded.append((sample, _decode(sample)))
        except ImageDecodeError as error:
            skipped.append({"sample_id": sample.sample_id, "path": sample.path,
                            "error": str(error)})
    return decoded, skipped


def to_tensors(
    samples: Sequence[SampleRef],
    preprocessing: Preprocessing,
    should_stop: Callable[[], bool],
    already_decoded: dict[str, Image.Image] | None = None,
) -> ImageTensors:
    """Decode (unless already decoded, keyed by sample_id) and preprocess ``samples``.

    Samples that fail to decode are left out and listed in ``skipped``; the order of the rest is
    the order of ``samples`` (training's data order depends only on the seed).
    Raises DatasetTooLarge (before decoding) when their cache would pass MAX_CACHE_BYTES.
    """
    already_decoded = already_decoded or {}
    height, width = preprocessing.size
    check_cache_fits(len(samples) * 3 * height * width,
                     f"{len(samples)} images at {width} x {height} px")
    images = np.empty((len(samples), 3, height, width), dtype=np.uint8)
    labels: list[int] = []
    sample_ids: list[str] = []
    skipped: list[dict[str, Any]] = []
    for sample in samples:
        image = already_decoded.get(sample.sample_id)
        if image is None:
            decoded, failed = decode_samples([sample], should_stop)
            if failed:
                skipped.extend(failed)
                continue
            image = decoded[0][1]
        images[len(labels)] = resized_pixels(image, preprocessing).transpose(2, 0, 1)
        labels.append(int(sample.label))
        sample_ids.append(sample.sample_id)
    return ImageTensors(
        images=torch.from_numpy(images[: len(labels)].copy() if skipped else images),
        labels=torch.tensor(labels, dtype=torch.int64),
        sample_ids=sample_ids,
        skipped=skipped,
    )


def normalise(images: torch.Tensor, preprocessing: Preprocessing) -> torch.Tensor:
    """(N, 3, H, W) uint8 -> (N, 3, H, W) float32 ``(x / 255 - mean) / std``, channels_last:
    the arithmetic of ``edge_agent.imaging.preprocess`` in the same order and precision, on
    the device ``images`` are on."""
    on = images.device
    mean = torch.tensor(preprocessing.mean, dtype=torch.float32, device=on).view(1, 3, 1, 1)
    std = torch.tensor(preprocessing.std, dtype=torch.float32, device=on).view(1, 3, 1, 1)
    pixels = images.to(torch.float32) / torch.tensor(255.0, dtype=torch.float32, device=on)
    return ((pixels - mean) / std).contiguous(memory_format=torch.channels_last)


def normalised_batches(data: ImageTensors, preprocessing: Preprocessing, size: int = 64
                       ) -> Iterator[np.ndarray]:
    """:func:`normalise` ``data`` in batches of ``size``: contiguous (n, 3, H, W) float32 numpy
    arrays, as onnxruntime takes them."""
    for start in range(0, len(data), size):
        yield normalise(data.images[start : start + size], preprocessing).contiguous().numpy()
