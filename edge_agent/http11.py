"""HTTP/1.1 connections for the agent's local API (:mod:`edge_agent.server`): a thread per
connection (stdlib ``socketserver``), requests parsed by httptools (llhttp, the HTTP/1.1 parser
of Node.js).

Keep-alive and pipelining, HTTP/1.0, ``Expect: 100-continue`` (answered once the headers pass
the checks, after the answers to earlier requests, never for HTTP/1.0) and chunked bodies are
served; every refusal closes the connection, after reading and dropping what the client still
sends, briefly (:data:`LINGER_S`, :data:`LINGER_BYTES`). An ``Upgrade`` offer is not taken
(RFC 9110, section 7.8): its Content-Length body is read, the request answered and the
connection closed.

Refusals: 400 for anything llhttp rejects (a ``Content-Length`` that is not a non-negative
integer, both a length and chunked, ...) and an HTTP/1.1 request without ``Host``; 411 for a
POST without a length; 413 for a body over :data:`MAX_BODY_BYTES`, whichever way it arrives;
431 (400 after the headers) when what is not body passes :data:`MAX_HEADER_BYTES`; 408 when a
deadline passes.

Bounds: a request's line and headers must arrive within ``timeout`` (:data:`READ_TIMEOUT_S`)
of its first byte (for a pipelined request: of the end of the answers before it), the whole
request within :data:`REQUEST_TIMEOUT_S`, and an idle keep-alive connection is closed after
``timeout`` (a client dribbling a byte now and then cannot hold its slot); a body is never read
past :data:`MAX_BODY_BYTES`, nor the rest of a request (line, headers, chunk framing beyond the
body's own size, trailers) past :data:`MAX_HEADER_BYTES`, checked after each read of at most
256 KiB. httptools concatenates a header or trailer value in memory until it ends: hence the
second bound.
"""

from __future__ import annotations

import email.utils
import json
import socket
import socketserver
import time
from collections.abc import Iterable
from dataclasses import dataclass
from http import HTTPStatus

import httptools

__all__ = ["LINGER_BYTES", "LINGER_S", "MAX_BODY_BYTES", "MAX_HEADER_BYTES", "READ_TIMEOUT_S",
           "REQUEST_TIMEOUT_S", "Connection", "Refusal", "Request", "error_body", "http_date",
           "parser_message", "response"]

#: Largest accepted request body, in bytes (a 40 MP JPEG is well under this).
MAX_BODY_BYTES = 32 * 1024 * 1024
#: Largest request line + header fields, in bytes (nginx's large_client_header_buffers: 4 x 8k;
#: generous for an API whose longest header is a key).
MAX_HEADER_BYTES = 64 * 1024
#: Seconds a read may wait, and the time a request's line and headers have from its first byte,
#: and an idle keep-alive connection is kept (nginx's client_header_timeout, Node's
#: headersTimeout).
READ_TIMEOUT_S = 30.0
#: Seconds a whole request may take from its first byte (Node's requestTimeout): a 32 MiB body
#: at 110 KB/s.
REQUEST_TIMEOUT_S = 300.0
_RECV_BYTES = 256 * 1024
#: After a refusal, what the client still sends is read and dropped for at most this long and
#: this much, so that it can read the answer (:meth:`_Handler._linger`).
LINGER_S = 2.0
LINGER_BYTES = 4 * 1024 * 1024

_CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"
_JSON = "application/json"


class Refusal(Exception):
    """A request answered ``status`` with ``{"error": message}`` before (or instead of) reading
    its body; the connection is closed after it."""

    def __init__(self, status: int, message: str, headers: Iterable[tuple[str, str]] = ()
                 ) -> None:
        super().__init__(message)
        self.status = status
        self.headers = tuple(headers)


@dataclass(slots=True)
class Request:
    method: bytes
    path: str
    query: str
    headers: dict[str, str]
    body: bytes
    keep_alive: bool


_date: tuple[int, str] = (0, "")


def http_date() -> str:
    """RFC 9110's IMF-fixdate of now, formatted once per second."""
    global _date
    now = int(time.time())
    if _date[0] != now:
        _date = (now, email.utils.formatdate(now, usegmt=True))
    return _date[1]


def response(status: int, body: bytes, content_type: str, close: bool,
              headers: Iterable[tuple[str, str]] = ()) -> bytes:
    """Status line, headers and body as one buffer (one send: no Nagle/delayed-ACK stall)."""
    lines = [f"HTTP/1.1 {status} {HTTPStatus(status).phrase}", f"Content-Type: {content_type}",
             f"Content-Length: {len(body)}", f"Date: {http_date()}"]
    lines += [f"{name}: {value}" for name, value in headers]
    if close:
        lines.append("Connection: close")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


def parser_message(error: Exception) -> str:
    """httptools' (llhttp's) reason, in the words of this API's contract."""
    reason = str(error)
    if "Content-Length" in reason:
        return f"Content-Length must be a non-negative integer ({reason})"
    if "chunk" in reason.lower():
        return f"a chunk size is not hexadecimal or a chunk is malformed ({reason})"
    return f"malformed HTTP request ({reason})"


class Connection(socketserver.BaseRequestHandler):
    """One connection: bytes from the socket into httptools, whose callbacks collect each request
    (and refuse one early by raising :class:`Refusal`); complete requests are answered in order
    by :meth:`answer`. Subclasses give :meth:`admit` (before a length is checked: e.g. a key),
    :meth:`accepts_body` (before a body is read: e.g. the route) and :meth:`answer`.

    Deadlines (a client sending a byte now and then must not hold its slot): each read waits
    at most ``timeout`` (:data:`READ_TIMEOUT_S`); a request's line and headers must arrive
    within ``timeout`` of its first byte and the whole request within
    :data:`REQUEST_TIMEOUT_S` (else 408 and close); a connection with no request under way
    for ``timeout`` is closed."""

    request: socket.socket
    timeout = READ_TIMEOUT_S

    def setup(self) -> None:
        self.request.settimeout(self.timeout)
        # small answers go out in one send; Nagle would still hold a second segment ~40 ms
        self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._parser = httptools.HttpRequestParser(self)
        self._ready: list[Request] = []
        self._in_message = False
        self._idle_since = time.monotonic()
        self._on_message_begin()
        self._in_message = False

    # -- httptools callbacks (called from feed_data, on this thread) --------------------------

    def _on_message_begin(self) -> None:
        self._url: list[bytes] = []
        self._headers: dict[str, str] = {}
        self._body: list[bytes] = []
        self._body_size = 0
        self._in_message = True
        self._in_headers = True
        self._started = time.monotonic()
        self._continue = False
        self._upgrade_length: int | None = None
        # bytes read while this request was incomplete, from the read after the one in which it
        # began (that read's share is unknown: the bound is one read larger); what is not body
        # (request line, headers, chunk framing and extensions, trailers) is bounded
        self._fed = 0
        self._began_in_read = True

    on_message_begin = _on_message_begin

    def on_url(self, url: bytes) -> None:
        self._url.append(url)

    def on_header(self, name: bytes, value: bytes) -> None:  # trailers too
        self._headers[name.decode("latin-1").lower()] = value.decode("latin-1")

    def on_headers_complete(self) -> None:
        self._in_headers = False
        headers = self._headers
        path = self._path()
        method = self._parser.get_method()
        version = self._parser.get_http_version()
        if version == "1.1" and "host" not in headers:
            raise Refusal(HTTPStatus.BAD_REQUEST, "an HTTP/1.1 request needs a Host header")
        self.admit(path)
        chunked = "chunked" in headers.get("transfer-encoding", "").lower()
        length = headers.get("content-length")
        if method == b"POST" and length is None and not chunked:
            raise Refusal(HTTPStatus.LENGTH_REQUIRED,
                          "Content-Length (or Transfer-Encoding: chunked) is required")
        if length is not None and int(length) > MAX_BODY_BYTES:  # llhttp checked the digits
            raise Refusal(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, f"body over {MAX_BODY_BYTES} bytes")
        if chunked or (length is not None and int(length) > 0):
            # a body for nothing that takes one: refused before it is read
            self.accepts_body(path, b"GET" if method == b"HEAD" else method)
        if self._parser.should_upgrade():
            # llhttp stops at the headers of an Upgrade offer: its body is read by handle()
            # (the offer is not taken: RFC 9110, section 7.8)
            if chunked:
                raise Refusal(HTTPStatus.BAD_REQUEST,
                              "a chunked body with an Upgrade offer is not served")
            self._upgrade_length = int(length or 0)
        elif version == "1.1" and headers.get("expect", "").lower() == "100-continue":
            self._continue = True  # sent by handle(), after the answers to earlier requests

    def on_body(self, body: bytes) -> None:
        self._body_size += len(body)
        if self._body_size > MAX_BODY_BYTES:  # a chunked body (a length was checked above)
            raise Refusal(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, f"body over {MAX_BODY_BYTES} bytes")
        self._body.append(body)

    def on_message_complete(self) -> None:
        self._in_message = False
        url = httptools.parse_url(b"".join(self._url))
        self._ready.append(Request(
            self._parser.get_method(), self._path(), (url.query or b"").decode("latin-1"),
            self._headers, b"".join(self._body), self._parser.should_keep_alive()))

    def _path(self) -> str:
        try:
            url = httptools.parse_url(b"".join(self._url))
        except httptools.HttpParserInvalidURLError:
            raise Refusal(HTTPStatus.BAD_REQUEST, "malformed request target") from None
        return (url.path or b"/").decode("latin-1")

    # -- what a subclass decides ---------------------------------------------------------------

    def admit(self, path: str) -> None:
        """Raise Refusal to refuse a request from its headers (``self._headers``), first."""

    def accepts_body(self, path: str, method: bytes) -> None:
        """Raise Refusal when a body sent to ``path`` with ``method`` is not to be read."""

    def answer(self, request: Request, close: bool = False) -> bool:
        """Send the answer to ``request`` (:meth:`_send`); False when the connection is to be
        closed (``close``, or the request asked for it)."""
        raise NotImplementedError

    # -- the connection ------------------------------------------------------------------------

    def _wait_s(self) -> float:
        """Seconds the next read may wait (<= 0: a deadline has passed)."""
        now = time.monotonic()
        if not self._in_message:
            return min(self.timeout, self._idle_since + self.timeout - now)
        deadline = self._started + REQUEST_TIMEOUT_S
        if self._in_headers:
            deadline = min(deadline, self._started + self.timeout)
        return min(self.timeout, deadline - now)

    def handle(self) -> None:
        while True:
            wait_s = self._wait_s()
            if wait_s <= 0:
                self._timed_out()
                return
            self.request.settimeout(wait_s)
            try:
                data = self.request.recv(_RECV_BYTES)
            except TimeoutError:
                self._timed_out()
                return
            except OSError:  # a reset, or the server closing
                return
            if not data:
                return
            refusal: Refusal | None = None
            rest: bytes | None = None
            try:
                self._parser.feed_data(data)
            except httptools.HttpParserUpgrade as upgrade:
                rest = data[upgrade.args[0]:]
            except httptools.HttpParserCallbackError as error:
                if not isinstance(error.__context__, Refusal):
                    raise
                refusal = error.__context__
            except httptools.HttpParserError as error:
                refusal = Refusal(HTTPStatus.BAD_REQUEST, parser_message(error))
            if self._in_message and refusal is None and rest is None:
                if not self._began_in_read:
                    self._fed += len(data)
                self._began_in_read = False
                # chunk framing may be as large as the body (~7 bytes a chunk: chunks of 8+ bytes)
                if self._fed - 2 * self._body_size > MAX_HEADER_BYTES:
                    refusal = Refusal(
                        HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE if self._in_headers
                        else HTTPStatus.BAD_REQUEST,
                        f"request line, headers, chunk framing and trailers over "
                        f"{MAX_HEADER_BYTES} bytes (plus as much framing as body)")
            try:
                if rest is not None:  # an Upgrade offer: its body, then the connection ends
                    self._upgrade_body(rest)
                while self._ready:
                    request = self._ready.pop(0)
                    # an Upgrade offer is the last request llhttp completed: closed after it
                    if not self.answer(request, close=rest is not None and not self._ready):
                        return
                    self._idle_since = time.monotonic()
                    if self._in_message:  # a pipelined request's clock starts once it is read
                        self._started = self._idle_since
                if refusal is not None:
                    self._refuse(refusal)
                    return
                if self._continue and self._in_message:
                    self._continue = False
                    self._send(_CONTINUE)
            except OSError:  # the client left while we answered
                return
            if rest is not None:
                return

    def _upgrade_body(self, rest: bytes) -> None:
        """Read the Content-Length body of the Upgrade offer llhttp stopped at (the request
        was completed without it) and give it to that request."""
        length = self._upgrade_length or 0
        body = bytearray(rest[:length])
        while len(body) < length:
            wait_s = self._wait_s()
            if wait_s <= 0:
                raise TimeoutError("the body of an Upgrade offer did not arrive")
            self.request.settimeout(wait_s)
            chunk = self.request.recv(min(_RECV_BYTES, length - len(body)))
            if not chunk:
                raise ConnectionError("the client closed before its body ended")
            body += chunk
        if self._ready:
            self._ready[-1].body = bytes(body)

    def _timed_out(self) -> None:
        """A deadline passed: 408 when a request was under way, then close."""
        if self._in_message:
            try:
                self._send(response(HTTPStatus.REQUEST_TIMEOUT, error_body(
                    "the request did not arrive in time"), _JSON, True))
            except OSError:
                pass

    def _refuse(self, refusal: Refusal) -> None:
        self._send(response(refusal.status, error_body(str(refusal)), _JSON, True, refusal.headers))
        self._linger()

    def _send(self, data: bytes) -> None:
        self.request.settimeout(self.timeout)  # not what the last read's deadline left
        self.request.sendall(data)

    def _linger(self) -> None:
        """After a refusal: end our side, then read and drop what the client still sends, for
        at most :data:`LINGER_S` and :data:`LINGER_BYTES`. Closing with unread data makes the
        kernel reset the connection, and a client still writing loses the answer (nginx's
        ``lingering_close`` for the same reason)."""
        try:
            self.request.shutdown(socket.SHUT_WR)
            deadline = time.monotonic() + LINGER_S
            drained = 0
            while drained < LINGER_BYTES:
                left = deadline - time.monotonic()
                if left <= 0:
                    return
                self.request.settimeout(left)
                data = self.request.recv(_RECV_BYTES)
                if not data:
                    return
                drained += len(data)
        except OSError:
            return


def error_body(message: str) -> bytes:
    return json.dumps({"error": message}).encode()
