"""Which body limit applies to which request (``sampan.core.body_limit`` enforces it), bytes:

- ``PATCH /api/v1/uploads/<id>/`` (a resumable upload's chunk): ``SAMPAN_UPLOAD_MAX_BYTES``
  (default 2 GiB; the tus app also refuses bytes past the upload's own length);
- ``POST /api/v1/projects/<id>/datasets/<id>/imports/`` (the single-request multipart import):
  ``SAMPAN_MULTIPART_MAX_BYTES`` (default 1 GiB; larger files go through resumable uploads);
- any other request: ``SAMPAN_REQUEST_MAX_BYTES`` (default 64 MiB).
"""

from __future__ import annotations

import re
from typing import Any

from django.conf import settings

from sampan.core.body_limit import header

_UPLOAD_CHUNK = re.compile(r"^/api/v1/uploads/[0-9a-fA-F-]{36}/?$")
_MULTIPART_IMPORT = re.compile(r"^/api/v1/projects/[0-9a-fA-F-]{36}/datasets/[0-9a-fA-F-]{36}"
                               r"/imports/?$")


def request_body_limit(scope: Any) -> int:
    """The body limit of the HTTP request of ``scope``, bytes (see the module docstring)."""
    method = (header(scope, b"x-http-method-override") or scope["method"]).upper()
    path = scope["path"]
    if method == "PATCH" and _UPLOAD_CHUNK.match(path):
        return int(settings.SAMPAN_UPLOAD_MAX_BYTES)
    if method == "POST" and _MULTIPART_IMPORT.match(path):
        return int(settings.SAMPAN_MULTIPART_MAX_BYTES)
    return int(settings.SAMPAN_REQUEST_MAX_BYTES)
