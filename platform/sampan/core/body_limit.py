"""An ASGI middleware in front of everything HTTP: every request body has a size limit, answered
with a 413 JSON error BEFORE the body is read.

- A declared ``Content-Length`` above the limit is refused at once: not one byte of the body is
  read, and the connection is closed (``Connection: close``) so the client stops sending.
- A body without ``Content-Length`` (``Transfer-Encoding: chunked``) is counted as it streams in;
  the request is refused as soon as the count passes the limit, with no more of it read. The
  application below sees the body end (``BodyTooLarge`` raised from its ``receive``) and never
  gets the part past the limit.

The limit depends on the request (``limit_for``): see ``sampan.uploads.limits`` for the platform's
table (resumable upload chunks, multipart imports, everything else). Errors use the platform's
format: ``{"error": {"code": "too_large", "message", "details": {"limit_bytes"}}}``, with the
message in the request's language (``sampan.core.language``: this runs before Django's
LocaleMiddleware).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from django.utils import translation
from django.utils.translation import gettext as _

from sampan.core.language import scope_language

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
AsgiApp = Callable[[Scope, Receive, Send], Awaitable[None]]


class BodyTooLarge(Exception):
    """Raised from ``receive`` once a streamed body passes ``limit`` bytes."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"request body larger than {limit} bytes")
        self.limit = limit


def header(scope: Scope, name: bytes) -> str | None:
    """The first value of request header ``name`` (lower-case bytes), decoded as latin-1."""
    for key, value in scope.get("headers", ()):
        if key.lower() == name:
            return bytes(value).decode("latin-1")
    return None


def too_large_body(limit: int, what: str | None = None) -> bytes:
    """The 413 body; ``what`` (translated) is too large, by default the request body."""
    return json.dumps({"error": {
        "code": "too_large",
        "message": _("%(what)s is too large: the limit is %(limit)d bytes")
        % {"what": what or _("request body"), "limit": limit},
        "details": {"limit_bytes": limit}}}).encode()


async def send_json(send: Send, status: int, body: bytes,
                    headers: list[tuple[bytes, bytes]] | None = None, *, close: bool = False
                    ) -> None:
    """A whole JSON response; ``close`` asks the server to drop the connection after it (the
    client may still be sending a body that nobody will read)."""
    # the language its message is in (what LocaleMiddleware says of Django's answers)
    extra = [(b"content-language", translation.get_language().encode()), *(headers or [])]
    if close:
        extra.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": [
        (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
        *extra]})
    await send({"type": "http.response.body", "body": body})


class BodyLimitMiddleware:
    """Refuse request bodies larger than ``limit_for(scope)`` bytes with a 413 (see the module).

    A ``Content-Length`` that is not a non-negative integer is a 400 (``field: "Content-Length"``).
    """

    def __init__(self, app: AsgiApp, limit_for: Callable[[Scope], int]) -> None:
        self.app = app
        self.limit_for = limit_for

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.limit_for(scope)
        declared = header(scope, b"content-length")
        if declared is not None:
            if not declared.strip().isdigit():
                with translation.override(scope_language(scope)):
                    message = (_("Content-Length %(value)r is not a number of bytes")
                               % {"value": declared[:40]})
                await send_json(send, 400, json.dumps({"error": {
                    "code": "invalid", "field": "Content-Length", "message": message}}
                ).encode(), close=True)
                return
            if int(declared) > limit:
                with translation.override(scope_language(scope)):
                    body = too_large_body(limit)
                await send_json(send, 413, body, close=True)
                return
        received = 0
        started = False

        async def counted_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise BodyTooLarge(limit)
            return message

        async def tracked_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, counted_receive, tracked_send)
        except BodyTooLarge as exc:
            if not started:
                with translation.override(scope_language(scope)):
                    body = too_large_body(exc.limit)
                await send_json(send, 413, body, close=True)
