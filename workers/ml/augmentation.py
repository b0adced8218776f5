"""Training-time augmentation presets, applied per sample to cached uint8 images.

Presets (the ranges are those the console's preview draws from):

- ``none``: the images as they are.
- ``light``: affine jitter (rotation +-10 deg, translation +-8 %, scale 0.9-1.1) and brightness /
  contrast +-20 %; plus a horizontal flip (p = 0.5) where flips keep the label.
- ``strong``: rotation +-20 deg, translation +-12 %, scale 0.8-1.2, brightness / contrast +-40 %,
  saturation +-30 %; plus the flip where flips keep the label.
- ``auto``: ``light``, with flips only for colour images whose shorter side is at least 64 px.
  Small or grayscale images are mostly digits, characters, symbols and scans, whose class a
  mirror image can change (a mirrored "2" or "Z" is no longer one); photos of objects keep theirs
  (the flip of torchvision's ImageNet reference recipe).

A user who picks ``light`` or ``strong`` also gets flips only where ``auto`` would flip: the
request names the strength, the data decides the flip (a user can pick ``none``).
The transforms are torchvision's ``transforms.v2`` (one random draw per sample, not per batch).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from PIL import Image
from torchvision.transforms import v2

from .specs import AUGMENTATIONS

__all__ = ["AugmentationChoice", "augment_batch", "build_transform", "choose_augmentation"]

#: Smallest shorter side (px) at which ``auto`` treats colour images as photos (flips allowed).
PHOTO_MIN_SIDE_PX = 64


@dataclass(frozen=True)
class AugmentationChoice:
    """The resolved preset: ``preset`` in none/light/strong, ``flip`` allowed, and why: in
    English (``reason``) and as data for translation (``why``: ``{"code": "none_requested" |
    "photos" | "grayscale" | "small" | "flips_off", "shorter_side": px}``)."""

    preset: str
    flip: bool
    reason: str
    why: dict[str, object] | None = None

    def to_dict(self) -> dict[str, object]:
        return {"preset": self.preset, "flip": self.flip, "reason": self.reason,
                "why": self.why or {}}


def _is_grayscale(image: Image.Image) -> bool:
    """True when R == G == B everywhere (decode_image replicates gray into 3 channels)."""
    small = image.convert("RGB").resize((32, 32))
    red, green, blue = small.split()
    return red.tobytes() == green.tobytes() == blue.tobytes()


def choose_augmentation(requested: str, images: Sequence[Image.Image],
                        allow_flips: bool = True,
                        sizes: Sequence[tuple[int, int]] | None = None) -> AugmentationChoice:
    """Resolve ``requested`` (auto/none/light/strong) for a sample of decoded RGB ``images``.
    ``allow_flips=False``: never flip (the user says left and right matter: text, signs, arrows,
    which the data alone cannot tell from photos of objects). ``sizes``: the images' (width,
    height) in px when ``images`` are reduced copies (their colours are what is read then).

    Raises:
        ValueError: for an unknown preset name.
    """
    if requested not in AUGMENTATIONS:
        raise ValueError(f"augmentation: unknown preset {requested!r}")
    if requested == "none":
        return AugmentationChoice("none", False, "no augmentation requested",
                                  {"code": "none_requested"})
    sides = sorted(min(size) for size in (sizes if sizes is not None else
                                          [image.size for image in images])) or [0]
    shorter = sides[len(sides) // 2]
    gray = sum(_is_grayscale(image) for image in images) * 2 > len(images)
    flip = not gray and shorter >= PHOTO_MIN_SIDE_PX
    if flip and not allow_flips:
        flip = False
        why, code = "horizontal flips turned off for this job: left and right matter", "flips_off"
    elif flip:
        why, code = f"colour images of {shorter} px: horizontal flips keep the class", "photos"
    elif gray:
        why = ("grayscale images (digits, text, scans): no flips, a mirror image can change "
               "the class")
        code = "grayscale"
    else:
        why, code = f"small images ({shorter} px, like symbols or characters): no flips", "small"
    preset = "light" if requested == "auto" else requested
    return AugmentationChoice(preset, flip, why, {"code": code, "shorter_side": shorter})


def build_transform(choice: AugmentationChoice) -> v2.Transform | None:
    """The ``transforms.v2`` pipeline of ``choice`` for one (3, H, W) uint8 image (None: none)."""
    if choice.preset == "none":
        return None
    strong = choice.preset == "strong"
    steps: list[v2.Transform] = [
        v2.RandomAffine(degrees=20 if strong else 10,
                        translate=(0.12, 0.12) if strong else (0.08, 0.08),
                        scale=(0.8, 1.2) if strong else (0.9, 1.1)),
        v2.ColorJitter(brightness=0.4 if strong else 0.2, contrast=0.4 if strong else 0.2,
                       saturation=0.3 if strong else 0.0),
    ]
    if choice.flip:
        steps.append(v2.RandomHorizontalFlip(p=0.5))
    return v2.Compose(steps)


def augment_batch(images: torch.Tensor, transform: v2.Transform | None) -> torch.Tensor:
    """(N, 3, H, W) uint8 -> (N, 3, H, W) uint8, each image with its own random draw
    (torch's global generator: seeded by the engine)."""
    if transform is None:
        return images
    return torch.stack([transform(image) for image in images])
