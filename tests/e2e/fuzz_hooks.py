"""Schemathesis hooks for the schema fuzz test (``test_schema_fuzz.py``; the config file names
this module). tus's chunks (``PATCH /api/v1/uploads/<id>/``) are
``application/offset+octet-stream``, raw bytes: sent as Schemathesis sends
``application/octet-stream``."""

from __future__ import annotations

from typing import Any

import schemathesis
from schemathesis.transport.requests import binary_serializer


@schemathesis.serializer("application/offset+octet-stream")
def offset_octet_stream(ctx: Any, value: Any) -> dict[str, Any]:
    return binary_serializer(ctx, value)
