"""Reads for resumable uploads."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

from django.conf import settings

from sampan.uploads.models import Upload


def uploads_root() -> Path:
    """``SAMPAN_DATA_DIR/uploads``: the files of resumable uploads (created when missing)."""
    root = Path(settings.DATA_DIR) / "uploads"
    root.mkdir(parents=True, exist_ok=True)
    return root


def upload_path(upload_id: Any) -> Path:
    """The file holding the bytes of upload ``upload_id``. Only the id makes the name: nothing a
    client sends (file names, metadata) reaches the file system."""
    return uploads_root() / f"{uuid.UUID(str(upload_id))}.part"


def upload_get_for(*, user: Any, upload_id: Any) -> Upload | None:
    """Upload ``upload_id`` if ``user`` owns it; None for another user's or an unknown id (the
    API answers both with the same 404, so ids of others' uploads cannot be probed)."""
    try:
        key = uuid.UUID(str(upload_id))
    except ValueError:
        return None
    return Upload.objects.filter(pk=key, owner=user).first()
