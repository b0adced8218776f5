"""Which body limit applies to which request (``sampan.core.body_limit`` enforces it), bytes:

- ``PATCH /api/v1/uploads/<id>/`` (a resumable upload's chunk): ``SAMPAN_UPLOAD_MAX_BYTES``
  (default 2 GiB; the tus app also refuses bytes past the upload's own length);
- ``POST /api/v1/projects/<id>/datasets/<id>/imports/`` (the single-request multipart import):
  ``SAMPAN_MULTIPART_MAX_BYTES`` (default 1 GiB; larger files go through resumable uploads);
- a JSON body (``Content-Type: application/json`` or ``...+json``): ``SAMPAN_JSON_MAX_BYTES``
  (default 4 MiB: parsing JSON costs ~20 bytes of memory per byte, so 64 MiB of ``[{},{},...]``
  took 1.5 GB of the web process; the largest JSON a console sends, a bulk label of 50,000
  samples, is ~2 MB);
- device enrollment (``/api/device/v1/enroll``, before any credential):
  ``SAMPAN_ANONYMOUS_MAX_BYTES`` (default 1 MiB; the device ``info`` it stores is at most 16 KiB);
- any other request: ``SAMPAN_REQUEST_MAX_BYTES`` (default 64 MiB).
"""

from __future__ import annotations

import re
from typing import Any

from django.conf import settings

from sampan.core.body_limit import header

_UPLOAD_CHUNK = re.compile(r"^/api/v1/uploads/[0-9a-fA-F-]{36}/?$")
_ENROLL = re.compile(r"^/api/device/v1/enroll/?$")
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
    limit = int(settings.SAMPAN_REQUEST_MAX_BYTES)
    if _ENROLL.match(path):
        limit = min(limit, int(settings.SAMPAN_ANONYMOUS_MAX_BYTES))
    media_type = (header(scope, b"content-type") or "").split(";")[0].strip().lower()
    if media_type == "application/json" or media_type.endswith("+json"):
        limit = min(limit, int(settings.SAMPAN_JSON_MAX_BYTES))
    return limit
