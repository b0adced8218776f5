"""The one image decode/normalise rule of the whole platform (Pillow + numpy only).

Import, training, evaluation, the parity gate and serving all call :func:`decode_image` and
:func:`preprocess`, so that training and the device see the same pixels (docs/architecture.md).
"""

from __future__ import annotations

import io
import re
import struct
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from PIL import Image, ImageFile, ImageOps

__all__ = [
    "MAX_PIXELS",
    "ImageDecodeError",
    "Preprocessing",
    "RESIZE_MODES",
    "decode_image",
    "letterbox_size",
    "preprocess",
    "resized_pixels",
    "preprocess_batch",
    "sniff_format",
]

#: Largest accepted image, in pixels (width x height), checked from the header before decoding.
#: 40 MP covers every phone and DSLR photo in common use and bounds memory at ~120 MB of RGB.
MAX_PIXELS = 40_000_000


class ImageDecodeError(ValueError):
    """An image cannot be used. ``str(error)`` is the reason shown to users, in English;
    ``kind`` and ``params`` say it for a caller that words it in another language (the
    platform): ``empty``; ``unsupported`` (``format``); ``too_large`` (``limit``, with ``width``
    and ``height`` or ``pixels`` when known); ``corrupt`` (``format``); ``truncated``;
    ``unreadable`` (``reason``: the operating system's)."""

    def __init__(self, message: str, kind: str = "corrupt", **params: object) -> None:
        super().__init__(message)
        self.kind = kind
        self.params = params


# Our format name -> Pillow's: Pillow is only allowed to open the format the magic bytes name.
_PILLOW_FORMAT = {
    "jpeg": "JPEG",
    "png": "PNG",
    "gif": "GIF",
    "bmp": "BMP",
    "webp": "WEBP",
    "tiff": "TIFF",
}
_PREPROCESSING_KEYS = frozenset(
    ("size", "resize", "mean", "std", "colour_order", "layout", "dtype")
)


def _sniff_known(data: bytes) -> str | None:
    if data.startswith(b"\xff\xd8\xff"):
        return "jpeg"
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "png"
    if data.startswith((b"GIF87a", b"GIF89a")):
        return "gif"
    if data.startswith(b"BM") and len(data) >= 26:
        return "bmp"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "webp"
    if data.startswith((b"II*\x00", b"MM\x00*")):
        return "tiff"
    return None


def _name_unsupported(data: bytes) -> str:
    """A name for formats we recognise but do not accept, for a useful error message."""
    if data.startswith(b"%PDF"):
        return "pdf"
    if data.startswith(b"PK\x03\x04"):
        return "zip"
    if data[4:8] == b"ftyp":
        brand = data[8:12].decode("ascii", "replace").strip()
        return {"heic": "heic", "heix": "heic", "mif1": "heif", "avif": "avif"}.get(brand, brand)
    if data.startswith(b"\x00\x00\x01\x00"):
        return "ico"
    if data.lstrip()[:5].lower() in (b"<?xml", b"<svg "):
        return "svg"
    return "unknown"


def sniff_format(data: bytes) -> str:
    """Return the real image format of ``data`` from its magic bytes, ignoring any file name.

    Returns one of ``"jpeg"``, ``"png"``, ``"gif"``, ``"bmp"``, ``"webp"``, ``"tiff"``.

    Raises:
        ImageDecodeError: ``"empty file"`` or ``"unsupported format '<name>'"`` (``<name>`` is
            e.g. ``pdf``, ``heic`` or ``unknown``).
    """
    if not data:
        raise ImageDecodeError("empty file", "empty")
    fmt = _sniff_known(data)
    if fmt is None:
        name = _name_unsupported(data)
        raise ImageDecodeError(f"unsupported format '{name}'", "unsupported", format=name)
    return fmt


def _open_checked(data: bytes, fmt: str, max_pixels: int) -> Image.Image:
    """Open lazily (header only) and enforce the pixel budget before any pixel is decoded."""
    try:
        with warnings.catch_warnings():
            # Our own max_pixels check replaces Pillow's decompression bomb warning.
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            image = Image.open(io.BytesIO(data), formats=[_PILLOW_FORMAT[fmt]])
    except Image.DecompressionBombError as error:
        # Pillow refuses before its header is ours to read; its message holds the pixel count
        found = re.search(r"\((\d+) pixels\)", str(error))
        pixels = {"pixels": int(found.group(1))} if found else {}
        size = f"{pixels['pixels']} pixels; " if pixels else ""
        raise ImageDecodeError(f"image too large ({size}at most {max_pixels} pixels)",
                               "too_large", limit=max_pixels, **pixels) from error
    except (OSError, SyntaxError, ValueError, EOFError) as error:
        raise ImageDecodeError(f"corrupt {fmt} image", format=fmt) from error
    width, height = image.size
    if width <= 0 or height <= 0:
        raise ImageDecodeError(f"corrupt {fmt} image", format=fmt)
    if width * height > max_pixels:
        raise ImageDecodeError(
            f"image too large ({width}x{height} px; at most {max_pixels} pixels)",
            "too_large", limit=max_pixels, width=width, height=height)
    return image


def _load_fully(image: Image.Image, fmt: str) -> None:
    if ImageFile.LOAD_TRUNCATED_IMAGES:
        # A process-wide Pillow switch that pads truncated files with grey. The platform's rule
        # is that a truncated file is rejected, so refuse to run rather than decode differently.
        raise RuntimeError("PIL.ImageFile.LOAD_TRUNCATED_IMAGES must stay False in Sampan")
    try:
        image.load()
    except (OSError, SyntaxError, ValueError, EOFError) as error:
        if "truncated" in str(error) or isinstance(error, EOFError):
            raise ImageDecodeError("truncated image", "truncated") from error
        raise ImageDecodeError(f"corrupt {fmt} image", format=fmt) from error


def _upright(image: Image.Image) -> Image.Image:
    """``image`` turned upright by its EXIF orientation, in place: without ``in_place``
    Pillow returns a copy even when there is nothing to turn (a second 160 MB at 40 MP)."""
    try:
        ImageOps.exif_transpose(image, in_place=True)
    except (SyntaxError, ValueError, OSError, KeyError, TypeError, struct.error):
        # Malformed EXIF metadata: keep the stored orientation (docs/decisions/edge-agent.md).
        pass
    return image


def _on_white(rgba: Image.Image) -> Image.Image:
    background = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
    return Image.alpha_composite(background, rgba).convert("RGB")


def _scale_16_bit(image: Image.Image) -> Image.Image:
    """16-bit (or 32-bit integer) single channel -> 8-bit 'L' by x/257, rounded."""
    values = np.asarray(image).astype(np.float64)
    values = np.clip(values, 0, 65535) / 257.0
    return Image.fromarray(np.rint(values).astype(np.uint8), mode="L")


def _to_rgb(image: Image.Image) -> Image.Image:
    mode = image.mode
    if mode == "RGB" and "transparency" not in image.info:
        return image
    if mode in ("RGBA", "LA", "PA", "RGBa", "La") or "transparency" in image.info:
        return _on_white(image.convert("RGBA"))
    if mode.startswith("I;16") or mode == "I":
        return _scale_16_bit(image).convert("RGB")
    if mode == "F":
        values = np.clip(np.asarray(image), 0, 255)
        return Image.fromarray(np.rint(values).astype(np.uint8), mode="L").convert("RGB")
    # "1", "L", "P", "CMYK", "YCbCr", "LAB", "HSV": Pillow's conversions (grey is replicated).
    return image.convert("RGB")


def decode_image(data: bytes, *, max_pixels: int = MAX_PIXELS) -> Image.Image:
    """Decode image bytes into an upright 8-bit RGB ``PIL.Image.Image`` (mode ``"RGB"``).

    Steps: sniff the real format from magic bytes (JPEG, PNG, GIF, BMP, WEBP, TIFF; the first
    frame of animations), check width x height from the header against ``max_pixels`` before
    decoding, decode every pixel (a truncated file is rejected, never padded), apply the EXIF
    orientation, then convert: alpha and palette transparency are composited on white, 16-bit
    channels are scaled by 1/257, grayscale is replicated to three channels, CMYK is converted.
    The returned size is that of the upright image, in px.

    Raises:
        ImageDecodeError: ``"empty file"``, ``"unsupported format '<name>'"``,
            ``"image too large (...)"``, ``"truncated image"``, ``"corrupt <format> image"``.
        RuntimeError: if ``PIL.ImageFile.LOAD_TRUNCATED_IMAGES`` was switched on in this process.
    """
    fmt = sniff_format(data)
    # Pillow's context manager lets go of the source bytes only; Image.close() would also free
    # the pixels, so an image returned as decoded had to be copied first: twice its size at the
    # peak (a 40 MP image: 320 MB instead of 160 MB, RGB being 4 bytes a pixel in Pillow).
    with _open_checked(data, fmt, max_pixels) as image:
        _load_fully(image, fmt)
        try:
            return _to_rgb(_upright(image))
        except (OSError, ValueError) as error:
            raise ImageDecodeError(f"corrupt {fmt} image", format=fmt) from error


def _floats(values: Iterable[Any], name: str) -> tuple[float, float, float]:
    result = tuple(float(v) for v in values)
    if len(result) != 3:
        raise ValueError(f"preprocessing.{name} must have 3 values, got {len(result)}")
    return result


RESIZE_MODES = ("stretch", "letterbox")


@dataclass(frozen=True)
class Preprocessing:
    """How a decoded RGB image becomes a model input (the manifest's ``preprocessing`` object).

    ``size`` is (H, W) in px; ``mean`` and ``std`` are per channel (R, G, B) on 0..1 values.
    ``resize``: ``"stretch"`` (bilinear resize of the whole image to H x W, aspect ratio not
    kept; classifiers) or ``"letterbox"`` (aspect ratio kept: scaled to fit H x W, placed at the
    top-left corner, the rest filled with the mean colour, which normalises to 0; detectors, whose
    boxes map back with :func:`letterbox_size`). Only ``colour_order="RGB"``, ``layout="NCHW"``
    and ``dtype="float32"`` exist today.

    Raises:
        ValueError: on any other value, a non-positive size or a non-positive std.
    """

    size: tuple[int, int]
    mean: tuple[float, float, float] = (0.485, 0.456, 0.406)
    std: tuple[float, float, float] = (0.229, 0.224, 0.225)
    resize: str = "stretch"
    colour_order: str = "RGB"
    layout: str = "NCHW"
    dtype: str = "float32"

    def __post_init__(self) -> None:
        size = tuple(int(v) for v in self.size)
        if len(size) != 2 or min(size) <= 0:
            raise ValueError(f"preprocessing.size must be [H, W] > 0, got {list(self.size)}")
        object.__setattr__(self, "size", size)
        object.__setattr__(self, "mean", _floats(self.mean, "mean"))
        object.__setattr__(self, "std", _floats(self.std, "std"))
        if min(self.std) <= 0:
            raise ValueError("preprocessing.std must be > 0")
        if self.resize not in RESIZE_MODES:
            raise ValueError(f"preprocessing.resize {self.resize!r} is not supported")
        for name, allowed in (
            ("colour_order", "RGB"),
            ("layout", "NCHW"),
            ("dtype", "float32"),
        ):
            if getattr(self, name) != allowed:
                raise ValueError(f"preprocessing.{name} {getattr(self, name)!r} is not supported")

    def to_dict(self) -> dict[str, Any]:
        """The manifest's JSON form: ``{"size": [H, W], "resize", "mean", "std", ...}``."""
        return {
            "size": list(self.size),
            "resize": self.resize,
            "mean": list(self.mean),
            "std": list(self.std),
            "colour_order": self.colour_order,
            "layout": self.layout,
            "dtype": self.dtype,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Preprocessing:
        """Inverse of :meth:`to_dict`. Raises ValueError on a missing ``size`` or unknown key
        (an unknown key may change the pixels, so it is never silently ignored)."""
        unknown = set(data) - _PREPROCESSING_KEYS
        if unknown:
            raise ValueError(f"unknown preprocessing keys: {sorted(unknown)}")
        if "size" not in data:
            raise ValueError("preprocessing.size is required")
        return cls(**dict(data))


def letterbox_size(width: int, height: int, size: tuple[int, int]) -> tuple[int, int]:
    """(w, h) in px of a ``width`` x ``height`` image scaled to fit ``size`` = (H, W) with its
    aspect ratio kept (the longer side fills the box; each side at least 1 px). A box of the
    image maps to the model input by x * w / width, y * h / height, and back by the inverse."""
    box_h, box_w = size
    scale = min(box_w / width, box_h / height)
    return (max(1, min(box_w, round(width * scale))), max(1, min(box_h, round(height * scale))))


def resized_pixels(image: Image.Image, p: Preprocessing) -> np.ndarray:
    """RGB image -> (H, W, 3) uint8 with (H, W) = ``p.size``: the resize step of
    :func:`preprocess` alone (bilinear, Pillow ``Image.resize``; ``"letterbox"`` pads the right
    and bottom with the mean colour). Training caches these bytes and normalises them itself, so
    its pixels are exactly the device's.

    Raises:
        ValueError: if ``image.mode`` is not ``"RGB"`` (call :func:`decode_image` first).
    """
    if image.mode != "RGB":
        raise ValueError(f"preprocess needs an RGB image, got mode {image.mode!r}")
    height, width = p.size
    if p.resize == "letterbox":
        fitted = letterbox_size(image.width, image.height, p.size)
        if image.size != fitted:
            image = image.resize(fitted, Image.Resampling.BILINEAR)
        if fitted != (width, height):
            fill = tuple(int(round(255 * m)) for m in p.mean)
            canvas = Image.new("RGB", (width, height), fill)
            canvas.paste(image, (0, 0))
            image = canvas
        return np.asarray(image, dtype=np.uint8)
    if image.size != (width, height):
        image = image.resize((width, height), Image.Resampling.BILINEAR)
    return np.asarray(image, dtype=np.uint8)


def preprocess(image: Image.Image, p: Preprocessing) -> np.ndarray:
    """RGB image -> model input of shape (3, H, W) float32, with (H, W) = ``p.size``.

    Bilinear stretch resize to H x W (Pillow ``Image.resize``, which filters when shrinking),
    values / 255, then ``(x - mean) / std`` per channel.

    Raises:
        ValueError: if ``image.mode`` is not ``"RGB"`` (call :func:`decode_image` first).
    """
    pixels = resized_pixels(image, p).astype(np.float32) / np.float32(255.0)  # (H, W, 3)
    mean = np.asarray(p.mean, dtype=np.float32)
    std = np.asarray(p.std, dtype=np.float32)
    normalised = (pixels - mean) / std
    return np.ascontiguousarray(normalised.transpose(2, 0, 1), dtype=np.float32)


def preprocess_batch(images: Sequence[Image.Image], p: Preprocessing) -> np.ndarray:
    """Several RGB images -> (N, 3, H, W) float32 (each through :func:`preprocess`).

    Raises:
        ValueError: if ``images`` is empty or an image is not RGB.
    """
    if len(images) == 0:
        raise ValueError("preprocess_batch needs at least one image")
    return np.stack([preprocess(image, p) for image in images]).astype(np.float32, copy=False)
