"""The tus 1.0.0 resumable upload protocol (core + creation + termination + expiration) as a
small ASGI application at ``/api/v1/uploads/``, in front of Django.

Source: https://tus.io/protocols/resumable-upload (tus 1.0.0). Why not a library: the tus servers
for Django (django-tus, drf-tus) are Django views, and Django's ASGI handler reads a request's
whole body (to a temporary file) before any view runs and throws it away when the client goes:
a PATCH cut off after 900 MB would keep nothing. ASGI servers of tus (tuspyserver, tussi,
asgi-tus) bring FastAPI/Starlette and their own upload bookkeeping, without our users, tokens
or per-user ownership. The protocol part we need is small; here each PATCH streams straight to
the upload's file and a cut connection keeps every byte that arrived.

- ``OPTIONS`` (no authentication): ``Tus-Version``, ``Tus-Max-Size``, ``Tus-Extension``.
- ``POST /api/v1/uploads/`` with ``Upload-Length`` (required; creation-defer-length is not
  offered) and optional ``Upload-Metadata`` -> 201, ``Location: /api/v1/uploads/<id>/``.
  A length above ``SAMPAN_UPLOAD_MAX_BYTES`` -> 413 ``too_large``.
- ``HEAD /api/v1/uploads/<id>/`` -> 200 with ``Upload-Offset`` and ``Upload-Length``.
- ``PATCH /api/v1/uploads/<id>/`` (``Content-Type: application/offset+octet-stream``,
  ``Upload-Offset``): appends the body at the offset. An offset that is not the upload's current
  one (a chunk sent twice, chunks out of order) -> 409 ``offset_mismatch`` with the current
  offset (header and ``details.offset``), nothing written. One writer at a time per upload
  (``flock``): a second concurrent PATCH -> 423. Bytes past ``Upload-Length`` -> 413.
- ``DELETE /api/v1/uploads/<id>/`` -> 204, file and row gone.

Every request but OPTIONS sends ``Tus-Resumable: 1.0.0`` (else 412) and is authenticated as the
REST API is (Bearer token, or session + CSRF token); another user's upload is a 404. Errors are
the platform's JSON (``{"error": {"code", "message", "field"?, "details"?}}``), the message in
the request's language (``Accept-Language``, as Django's LocaleMiddleware would choose it:
``sampan.core.language``); HEAD answers carry no body. ``X-HTTP-Method-Override`` is honoured
for clients that cannot send PATCH or DELETE.
"""

from __future__ import annotations

import asyncio
import errno
import fcntl
import json
import logging
import os
import re
from email.utils import format_datetime
from typing import Any

from django.conf import settings
from django.utils import translation
from django.utils.translation import gettext as _

from sampan.core.body_limit import BodyTooLarge, Receive, Scope, Send, header
from sampan.core.errors import ApplicationError, Conflict, NotFound, ValidationFailed
from sampan.core.language import scope_language
from sampan.uploads import services
from sampan.uploads.auth import authenticate_scope, in_db_thread
from sampan.uploads.models import Upload
from sampan.uploads.selectors import upload_get_for, upload_path

log = logging.getLogger(__name__)

TUS_VERSION = "1.0.0"
TUS_EXTENSIONS = "creation,termination,expiration"
PREFIX = "/api/v1/uploads/"
OFFSET_CONTENT_TYPE = "application/offset+octet-stream"
# Bytes gathered from the socket before one write to disk (in a thread): bounds the memory one
# PATCH holds, whatever its size.
WRITE_BYTES = 4 * 1024 * 1024

_RESOURCE = re.compile(r"^/api/v1/uploads/([0-9a-fA-F-]{36})/?$")


class Locked(ApplicationError):
    status_code = 423
    code = "locked"


class PreconditionFailed(ApplicationError):
    status_code = 412
    code = "unsupported_version"


class ServerError(ApplicationError):
    status_code = 500
    code = "server_error"


class MethodNotAllowed(ApplicationError):
    status_code = 405
    code = "method_not_allowed"


class UnsupportedMediaType(ApplicationError):
    status_code = 415
    code = "unsupported_media_type"


def _tus_headers(extra: dict[str, str] | None = None) -> list[tuple[bytes, bytes]]:
    items = {"Tus-Resumable": TUS_VERSION, "Cache-Control": "no-store", **(extra or {})}
    return [(k.lower().encode(), v.encode("latin-1")) for k, v in items.items()]


def _expires(upload: Upload) -> str:
    return format_datetime(upload.expires_at, usegmt=True)


async def _respond(send: Send, status: int, headers: dict[str, str] | None = None,
                   body: bytes = b"", *, head: bool = False) -> None:
    extra = dict(headers or {})
    if body:
        extra["Content-Type"] = "application/json"
        extra["Content-Language"] = translation.get_language()  # its message's language
    extra["Content-Length"] = str(0 if head else len(body))
    await send({"type": "http.response.start", "status": status, "headers": _tus_headers(extra)})
    await send({"type": "http.response.body", "body": b"" if head else body})


async def _error(send: Send, exc: ApplicationError, *, head: bool = False,
                 headers: dict[str, str] | None = None) -> None:
    error: dict[str, Any] = {"code": exc.code, "message": exc.message}
    if exc.field:
        error["field"] = exc.field
    if exc.details is not None:
        error["details"] = exc.details
    if exc.status_code == 401:
        headers = {**(headers or {}), "WWW-Authenticate": "Bearer"}
    await _respond(send, exc.status_code, headers, json.dumps({"error": error}).encode(),
                   head=head)


def _int_header(scope: Scope, name: str) -> int:
    value = header(scope, name.lower().encode())
    if value is None:
        raise ValidationFailed(_("the %(header)s header is required") % {"header": name},
                               field=name)
    if not value.strip().isdigit():
        raise ValidationFailed(_("%(header)s %(value)r is not a number of bytes")
                               % {"header": name, "value": value[:40]}, field=name)
    return int(value)


def _write_all(fd: int, data: bytes | bytearray, position: int) -> None:
    view = memoryview(data)
    while view:
        written = os.pwrite(fd, view, position)
        view, position = view[written:], position + written


class TusApp:
    """The ASGI application for ``/api/v1/uploads/`` (see the module docstring)."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        # no LocaleMiddleware in front of this app: the request's language is activated here
        with translation.override(scope_language(scope)):
            await self.handle(scope, receive, send)

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        method = (header(scope, b"x-http-method-override") or scope["method"]).upper()
        head = method == "HEAD"
        match = _RESOURCE.match(scope["path"])
        collection = scope["path"].rstrip("/") == PREFIX.rstrip("/")
        try:
            if not collection and match is None:
                raise NotFound(_("no such API path: %(path)s") % {"path": scope["path"]})
            if method == "OPTIONS":
                await _respond(send, 204, {
                    "Tus-Version": TUS_VERSION, "Tus-Extension": TUS_EXTENSIONS,
                    "Tus-Max-Size": str(settings.SAMPAN_UPLOAD_MAX_BYTES)})
                return
            allowed = ("POST",) if collection else ("HEAD", "PATCH", "DELETE")
            if method not in allowed:
                raise MethodNotAllowed(_("%(method)s is not allowed here; use %(allowed)s (tus "
                                         "%(version)s)") % {"method": method,
                                                            "allowed": ", ".join(allowed),
                                                            "version": TUS_VERSION})
            if header(scope, b"tus-resumable") != TUS_VERSION:
                raise PreconditionFailed(_("send Tus-Resumable: %(version)s (the only tus "
                                           "version this server speaks)")
                                         % {"version": TUS_VERSION}, field="Tus-Resumable")
            user = await in_db_thread(authenticate_scope)(scope)
            if collection:
                await self.create(scope, send, user)
                return
            upload = await in_db_thread(upload_get_for)(user=user, upload_id=match.group(1))
            if upload is None:
                raise NotFound(_("no upload %(id)s of yours") % {"id": match.group(1)})
            if head:
                await self.head(send, upload)
            elif method == "DELETE":
                await self.delete(send, upload)
            else:
                await self.patch(scope, receive, send, upload)
        except PreconditionFailed as exc:
            await _error(send, exc, head=head, headers={"Tus-Version": TUS_VERSION})
        except _OffsetMismatch as exc:
            await _error(send, exc, head=head,
                         headers={"Upload-Offset": str(exc.details["offset"])})
        except MethodNotAllowed as exc:
            await _error(send, exc, head=head, headers={"Allow": "OPTIONS, POST" if collection
                                                        else "OPTIONS, HEAD, PATCH, DELETE"})
        except ApplicationError as exc:
            await _error(send, exc, head=head)
        except BodyTooLarge:
            raise  # sampan.core.body_limit answers it
        except Exception:
            # every byte that arrived is on disk (see _stream_to_file); the answer is JSON too
            log.exception("%s %s failed", method, scope["path"])
            await _error(send, ServerError(_("the upload could not be stored; retry")),
                         head=head)

    async def create(self, scope: Scope, send: Send, user: Any) -> None:
        length = _int_header(scope, "Upload-Length")
        metadata = services.parse_metadata(header(scope, b"upload-metadata"))
        upload = await in_db_thread(services.upload_create)(owner=user, length=length,
                                                            metadata=metadata)
        await _respond(send, 201, {"Location": f"{PREFIX}{upload.pk}/",
                                   "Upload-Expires": _expires(upload)})

    async def head(self, send: Send, upload: Upload) -> None:
        path = upload_path(upload.pk)
        offset = upload.offset if upload.status != "receiving" else (
            path.stat().st_size if path.exists() else 0)
        if upload.status == "receiving" and offset == upload.length:
            # the last bytes came in a PATCH whose end the server never saw (a crash)
            await in_db_thread(services.upload_record_progress)(upload_id=upload.pk, offset=offset)
        await _respond(send, 200, {"Upload-Offset": str(offset),
                                   "Upload-Length": str(upload.length),
                                   "Upload-Expires": _expires(upload)}, head=True)

    async def delete(self, send: Send, upload: Upload) -> None:
        fd = _open_locked(upload)
        try:
            await in_db_thread(services.upload_delete)(upload=upload)
        finally:
            os.close(fd)
        await _respond(send, 204)

    async def patch(self, scope: Scope, receive: Receive, send: Send, upload: Upload) -> None:
        content_type = (header(scope, b"content-type") or "").split(";")[0].strip().lower()
        if content_type != OFFSET_CONTENT_TYPE:
            raise UnsupportedMediaType(_("a PATCH body is Content-Type: %(content_type)s")
                                       % {"content_type": OFFSET_CONTENT_TYPE},
                                       field="Content-Type")
        claimed = _int_header(scope, "Upload-Offset")
        fd = _open_locked(upload)
        try:
            offset = os.fstat(fd).st_size
            if claimed != offset:
                raise _OffsetMismatch(claimed, offset)
            room = upload.length - offset
            declared = header(scope, b"content-length")
            if declared is not None and declared.isdigit() and int(declared) > room:
                raise services.TooLarge(_("a chunk of %(length)s bytes at offset %(offset)d")
                                        % {"length": declared, "offset": offset}, room,
                                        field="Content-Length")
            received, ended, overflow = await _stream_to_file(receive, fd, offset, room)
        finally:
            os.close(fd)  # releases the lock: the bytes are written, the file is the truth
        complete = await in_db_thread(services.upload_record_progress)(upload_id=upload.pk,
                                                              offset=offset + received)
        if overflow:
            raise services.TooLarge(_("the body past offset %(offset)d") % {"offset": offset},
                                    room, field="Upload-Length")
        if not ended:
            return  # the client went away: nothing to answer; HEAD tells it where to resume
        upload.expires_at = (await in_db_thread(Upload.objects.get)(pk=upload.pk)).expires_at
        log.debug("upload %s: %d bytes at %d (complete: %s)", upload.pk, received, offset,
                  complete)
        await _respond(send, 204, {"Upload-Offset": str(offset + received),
                                   "Upload-Expires": _expires(upload)})


class _OffsetMismatch(Conflict):
    code = "offset_mismatch"

    def __init__(self, claimed: int, offset: int) -> None:
        super().__init__(_("Upload-Offset %(claimed)d is not this upload's offset %(offset)d: "
                           "send the bytes from offset %(offset)d (HEAD tells the offset)")
                         % {"claimed": claimed, "offset": offset},
                         field="Upload-Offset", details={"offset": offset})


def _open_locked(upload: Upload) -> int:
    """The upload's file opened for writing under an exclusive ``flock``. Raises NotFound when
    the file is gone (expired or terminated meanwhile), Locked (423) while another request holds
    it (tus clients retry a 423)."""
    try:
        fd = os.open(upload_path(upload.pk), os.O_WRONLY)
    except FileNotFoundError:
        raise NotFound(_("upload %(id)s has no data any more (expired, terminated or "
                         "imported)") % {"id": upload.pk}) from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        os.close(fd)
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
            raise Locked(_("upload %(id)s is being written by another request; retry "
                           "shortly") % {"id": upload.pk}) from None
        raise
    return fd


async def _stream_to_file(receive: Receive, fd: int, offset: int, room: int
                          ) -> tuple[int, bool, bool]:
    """Append the request body at ``offset`` as it arrives, at most ``room`` bytes.

    Returns (bytes written, whether the body ended normally, whether it went past ``room``).
    Every byte that arrived is on disk when this returns or raises (a cut connection, the body
    limit of ``sampan.core.body_limit``, a cancelled task): the client resumes from there.
    """
    buffer = bytearray()
    written = 0
    ended = overflow = False
    try:
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                break
            chunk = message.get("body", b"")
            if written + len(buffer) + len(chunk) > room:
                buffer += chunk[:room - written - len(buffer)]
                overflow = True
                break
            buffer += chunk
            if len(buffer) >= WRITE_BYTES:
                data, buffer = bytes(buffer), bytearray()
                await asyncio.to_thread(_write_all, fd, data, offset + written)
                written += len(data)
            if not message.get("more_body", False):
                ended = True
                break
    finally:
        if buffer:
            _write_all(fd, buffer, offset + written)
            written += len(buffer)
    return written, ended, overflow


application = TusApp()
