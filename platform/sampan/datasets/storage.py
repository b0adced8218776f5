"""Where sample images and staged uploads live on disk (under MEDIA_ROOT / DATA_DIR)."""

from __future__ import annotations

import io
import os
import tempfile
from pathlib import Path

from django.conf import settings
from PIL import Image


def media_path(relative: str) -> Path:
    """Absolute path of a MEDIA_ROOT-relative name."""
    return Path(settings.MEDIA_ROOT) / relative


def staging_root() -> Path:
    root = Path(settings.DATA_DIR) / "staging"
    root.mkdir(parents=True, exist_ok=True)
    return root


def sample_relative_path(content_sha256: str) -> str:
    """Content-addressed name of a normalised sample: ``samples/ab/<sha256>.png``."""
    return f"samples/{content_sha256[:2]}/{content_sha256}.png"


def store_normalised_image(image: Image.Image, content_sha256: str) -> str:
    """Write an upright 8-bit RGB image as lossless PNG, once per content hash.

    The write goes to a temporary file that is renamed into place, so a crash never leaves a
    half-written sample. Returns the MEDIA_ROOT-relative name.
    """
    relative = sample_relative_path(content_sha256)
    target = media_path(relative)
    if target.exists():
        return relative
    target.parent.mkdir(parents=True, exist_ok=True)
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".tmp-")
    with os.fdopen(fd, "wb") as handle:
        handle.write(buffer.getvalue())
    os.replace(tmp, target)
    return relative
