"""A small tus 1.0.0 client for scripts, tests and the upload benchmark (stdlib ``http.client``:
each PATCH streams from a file with a real ``Content-Length``, and can be cut off on purpose).

The console uses tus-js-client; this one exists to drive the server from Python, including the
cases a good client avoids (a chunk sent twice, out of order, a connection cut mid-body).
"""

from __future__ import annotations

import base64
import http.client
import json
import select
import time
from dataclasses import dataclass
from typing import Any, BinaryIO
from urllib.parse import urlsplit

BLOCK_BYTES = 1024 * 1024


class TusError(RuntimeError):
    """A tus request answered with an unexpected status; ``body`` is the JSON error (or text)."""

    def __init__(self, method: str, path: str, status: int, headers: dict[str, str],
                 body: Any) -> None:
        super().__init__(f"{method} {path} -> {status}: {body}")
        self.status, self.headers, self.body = status, headers, body


@dataclass
class TusClient:
    """Talks to ``<base_url>/api/v1/uploads/`` with a Bearer ``token`` (None: no credentials)."""

    base_url: str
    token: str | None = None
    timeout_s: float = 120.0

    def _connection(self) -> http.client.HTTPConnection:
        parts = urlsplit(self.base_url)
        return http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port or 80,
                                          timeout=self.timeout_s)

    def _headers(self, extra: dict[str, str]) -> dict[str, str]:
        headers = {"Tus-Resumable": "1.0.0", **extra}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        return headers

    def request(self, method: str, path: str, headers: dict[str, str] | None = None,
                body: bytes = b"") -> tuple[int, dict[str, str], Any]:
        """One request with the tus headers: (status, headers with lower-case names, JSON body
        or None)."""
        conn = self._connection()
        try:
            conn.request(method, path, body=body, headers=self._headers(headers or {}))
            response = conn.getresponse()
            raw = response.read()
            return (response.status, {k.lower(): v for k, v in response.getheaders()},
                    json.loads(raw) if raw and method != "HEAD" else None)
        finally:
            conn.close()

    def create(self, length: int, filename: str = "", filetype: str = "") -> str:
        """POST a new upload of ``length`` bytes; returns its path (``/api/v1/uploads/<id>/``)."""
        metadata = ",".join(f"{key} {base64.b64encode(value.encode()).decode()}"
                            for key, value in (("filename", filename), ("filetype", filetype))
                            if value)
        status, headers, body = self.request("POST", "/api/v1/uploads/", {
            "Upload-Length": str(length), **({"Upload-Metadata": metadata} if metadata else {})})
        if status != 201:
            raise TusError("POST", "/api/v1/uploads/", status, headers, body)
        return headers["location"]

    def offset(self, path: str) -> int:
        """HEAD: the bytes the server holds."""
        status, headers, _ = self.request("HEAD", path)
        if status != 200:
            raise TusError("HEAD", path, status, headers, None)
        return int(headers["upload-offset"])

    def patch(self, path: str, offset: int, source: BinaryIO, length: int, *,
              cut_after: int | None = None) -> int | None:
        """PATCH ``length`` bytes read from ``source`` (at its current position) to the upload at
        ``offset``, streamed in 1 MiB blocks with ``Content-Length: length``. Returns the new
        offset. With ``cut_after``, the connection is closed after that many body bytes, as a
        network cut would: returns None (raises TusError if the server had already refused the
        request, e.g. 423 or 409, before the cut)."""
        conn = self._connection()
        try:
            conn.putrequest("PATCH", path, skip_accept_encoding=True)
            for key, value in self._headers({
                    "Upload-Offset": str(offset), "Content-Length": str(length),
                    "Content-Type": "application/offset+octet-stream"}).items():
                conn.putheader(key, value)
            conn.endheaders()
            sent = 0
            limit = length if cut_after is None else min(cut_after, length)
            try:
                while sent < limit:
                    block = source.read(min(BLOCK_BYTES, limit - sent))
                    if not block:
                        raise ValueError(f"the source ended after {sent} of {limit} bytes")
                    conn.send(block)
                    sent += len(block)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the server answered before the body ended (a 409, a 413): read it
            if cut_after is not None and not (
                    conn.sock is not None and select.select([conn.sock], [], [], 0)[0]):
                return None  # cut: nothing answered yet (a refusal would have been by now)
            response = conn.getresponse()
            raw = response.read()
            headers = {k.lower(): v for k, v in response.getheaders()}
            if response.status != 204:
                raise TusError("PATCH", path, response.status, headers,
                               json.loads(raw) if raw else None)
            return int(headers["upload-offset"])
        finally:
            conn.close()

    def upload(self, source: BinaryIO, length: int, *, filename: str = "",
               chunk_bytes: int = 64 * 1024 * 1024, cuts: tuple[int, ...] = ()) -> str:
        """Upload ``length`` bytes of ``source`` (a seekable file) as tus-js-client would: create,
        then PATCH chunks of ``chunk_bytes``, each from the offset the server reports. ``cuts``:
        absolute byte positions at which the connection is cut once mid-chunk; after each cut
        the client asks the server (HEAD) where to resume. A 409 or 423 (the server still
        finishing the cut request) is retried from a fresh HEAD, as tus-js-client does, for at
        most ``timeout_s``. Returns the upload's path."""
        path = self.create(length, filename)
        pending = sorted(cuts)
        offset = 0
        deadline = time.monotonic() + self.timeout_s
        while offset < length:
            size = min(chunk_bytes, length - offset)
            source.seek(offset)
            try:
                if pending and offset < pending[0] < offset + size:
                    self.patch(path, offset, source, size, cut_after=pending[0] - offset)
                    pending.pop(0)
                    offset = self.offset(path)
                    continue
                new_offset = self.patch(path, offset, source, size)
            except TusError as error:
                if error.status not in (409, 423) or time.monotonic() > deadline:
                    raise
                time.sleep(0.05)  # a retry delay, as tus-js-client's retryDelays
                offset = self.offset(path)
                continue
            assert new_offset is not None
            offset = new_offset
            deadline = time.monotonic() + self.timeout_s
        return path
