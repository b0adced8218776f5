"""Where sample images and import staging live: storage names in the shared storage
(``sampan.core.storage``: MEDIA_ROOT in dev, the bucket with ``SAMPAN_STORAGE=s3``), and this
host's own scratch folder (``SAMPAN_DATA_DIR/staging``) for work files no other process reads.
"""

from __future__ import annotations

import io
import uuid
from pathlib import Path

from django.conf import settings
from PIL import Image

from sampan.core import storage as shared


def staging_root() -> Path:
    """``SAMPAN_DATA_DIR/staging``: this process's scratch folder (created when missing)."""
    root = Path(settings.DATA_DIR) / "staging"
    root.mkdir(parents=True, exist_ok=True)
    return root


def new_staging_prefix() -> str:
    """A fresh storage folder for one import's staged uploads: ``staging/import-<hex>``."""
    return f"staging/import-{uuid.uuid4().hex}"


def sample_relative_path(content_sha256: str) -> str:
    """Content-addressed storage name of a normalised sample: ``samples/ab/<sha256>.png``."""
    return f"samples/{content_sha256[:2]}/{content_sha256}.png"


def store_normalised_image(image: Image.Image, content_sha256: str) -> str:
    """Store an upright 8-bit RGB image as lossless PNG, once per content hash.

    Local storage writes a temporary file renamed into place, so a crash never leaves a
    half-written sample; the bucket stores an object whole or not at all. Returns the storage
    name. Raises ``sampan.core.storage.StorageUnavailable``.
    """
    relative = sample_relative_path(content_sha256)
    if shared.exists(relative):
        return relative
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    shared.save_bytes(relative, buffer.getvalue())
    return relative


def sample_local_file(name: str) -> Path:
    """A path on this host holding the sample ``name`` (the file itself with local storage, a
    cached copy under ``SAMPAN_DATA_DIR/cache`` from the bucket)."""
    return shared.local_file(name)
