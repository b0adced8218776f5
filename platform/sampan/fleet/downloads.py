"""Serving a file with single-range HTTP Range support (RFC 9110 section 14).

Django 5.2's FileResponse ignores ``Range``; the agent resumes interrupted model downloads with
``Range: bytes=<offset>-`` (edge_agent.client.DeviceClient.download), so it is handled here.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from django.http import HttpResponse, JsonResponse, StreamingHttpResponse
from django.utils.translation import gettext as _

from sampan.core.disposition import content_disposition
from sampan.core.errors import error_payload

CHUNK_BYTES = 256 * 1024
_RANGE = re.compile(r"^bytes=(\d*)-(\d*)$")


class Unsatisfiable(Exception):
    """The range lies outside the file (answered with 416)."""


def parse_range(header: str, size: int) -> tuple[int, int] | None:
    """The inclusive byte range ``(first, last)`` that ``header`` asks of a ``size``-byte file.

    Returns None when the whole file should be sent: no header, a header we do not understand,
    or several ranges (a server may ignore Range, RFC 9110 14.2). Raises Unsatisfiable when the
    range starts at or past the end, or is an empty suffix.
    """
    match = _RANGE.match(header.strip().replace(" ", ""))
    if match is None:
        return None
    first_text, last_text = match.groups()
    if not first_text and not last_text:
        return None
    if not first_text:  # suffix range: the last N bytes
        suffix = int(last_text)
        if suffix == 0 or size == 0:
            raise Unsatisfiable
        return max(0, size - suffix), size - 1
    first = int(first_text)
    if last_text and int(last_text) < first:
        return None  # syntactically invalid: ignore the header
    if first >= size:
        raise Unsatisfiable
    last = int(last_text) if last_text else size - 1
    return first, min(last, size - 1)


def _read(path: Path, first: int, length: int) -> Iterator[bytes]:
    with open(path, "rb") as handle:
        handle.seek(first)
        remaining = length
        while remaining > 0:
            data = handle.read(min(CHUNK_BYTES, remaining))
            if not data:
                return
            remaining -= len(data)
            yield data


def ranged_file_response(path: Path, *, range_header: str, etag: str, filename: str,
                         if_range: str = "",
                         content_type: str = "application/octet-stream") -> HttpResponse:
    """200 with the whole file, 206 with one byte range, or 416 for an unsatisfiable range.

    ``etag`` (without quotes) is sent as a strong ETag; an ``If-Range`` that does not match it
    turns a range request into a full one.
    """
    size = path.stat().st_size
    quoted = f'"{etag}"'
    try:
        wanted = parse_range(range_header, size) if range_header else None
    except Unsatisfiable:
        response = JsonResponse(error_payload(
            "range_not_satisfiable",
            _("the range %(range)r lies outside the %(size)d bytes of the file")
            % {"range": range_header, "size": size}, "Range", {"size": size}), status=416)
        response["Content-Range"] = f"bytes */{size}"
        response["Accept-Ranges"] = "bytes"
        return response
    if wanted is not None and if_range and if_range.strip() != quoted:
        wanted = None
    first, last = wanted if wanted is not None else (0, size - 1)
    length = max(0, last - first + 1)
    response = StreamingHttpResponse(_read(path, first, length), content_type=content_type,
                                     status=206 if wanted is not None else 200)
    response["Content-Length"] = str(length)
    response["Accept-Ranges"] = "bytes"
    response["ETag"] = quoted
    response["Content-Disposition"] = content_disposition(filename)
    if wanted is not None:
        response["Content-Range"] = f"bytes {first}-{last}/{size}"
    return response
