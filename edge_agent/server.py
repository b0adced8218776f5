"""The agent's local HTTP API: a thread per connection (stdlib ``socketserver``), requests parsed
by httptools (llhttp, the HTTP/1.1 parser of Node.js).

- ``POST /v1/predict`` body = image bytes, optional ``?top_k=5`` (classification) and
  ``?score_threshold=0.5`` (detection) -> 200, by the served model's task:
  ``{"model_version_id", "task": "image_classification", "predictions": [{"label", "index",
  "probability"}], "latency_ms"}`` or ``{"model_version_id", "task": "object_detection",
  "width", "height", "tiles", "detections": [{"label", "index", "score", "box": [x1, y1, x2,
  y2]}], "latency_ms"}`` (boxes in px of the upright image; :meth:`Agent.predict`);
  400 ``{"error"}`` for an undecodable image, a bad ``top_k`` or ``score_threshold`` (named),
  a ``Content-Length`` that is not a non-negative integer or any other malformed request; 411
  without a length (neither ``Content-Length`` nor ``Transfer-Encoding: chunked``); 413 for a
  body over :data:`MAX_BODY_BYTES`, whichever way it arrives; 431 for a request line and headers
  over :data:`MAX_HEADER_BYTES`; 503 when no model is loaded, or with ``Retry-After`` when
  :data:`MAX_CONNECTIONS` connections are open already.
- ``GET /healthz`` -> ``{"status": "ok" | "no_model", "model_version_id"}`` (always 200).
- ``GET /metrics`` -> Prometheus text format. ``HEAD`` on both: GET's headers.
- Another method on these paths: 405 with ``Allow``; another path: 404 (both before a body is
  read); an HTTP/1.1 request without ``Host``: 400; a request not in within its deadlines
  (below): 408; an unexpected error while predicting: 500, logged.

With an API key (``sampan-agent run --api-key-file``), ``/v1/predict`` and ``/metrics`` need
``Authorization: Bearer <key>`` (or ``X-API-Key: <key>``): 401 with ``WWW-Authenticate: Bearer``
otherwise, before any body is read; ``/healthz`` stays open for probes and says nothing but the
status and version.

HTTP/1.1 keep-alive and pipelining, HTTP/1.0, ``Expect: 100-continue`` (answered once the
headers pass the checks above) and chunked bodies are served; every refusal closes the
connection, since the rest of its body is not read. An ``Upgrade`` is not taken: the request is
answered and the connection closed.

Bounds (one request must not take the device down): at most :data:`MAX_CONNECTIONS` connections
are served at once (one thread each); a request's line and headers must arrive within
:data:`READ_TIMEOUT_S` of its first byte, the whole request within :data:`REQUEST_TIMEOUT_S`,
and an idle keep-alive connection is closed after :data:`READ_TIMEOUT_S` (a client dribbling a
byte now and then cannot hold its slot); a body is never read past :data:`MAX_BODY_BYTES`, nor
the rest of a request (line, headers, chunk framing, trailers) past :data:`MAX_HEADER_BYTES`
(checked after each read of at most 256 KiB); ``server_close`` ends the open connections.

Why httptools and not ``http.server`` (docs/decisions/edge-agent.md, "Parser"): the stdlib
parses headers with ``email.parser`` and writes an answer in several calls; on a 2-core machine
its ~0.4 ms of CPU per request put a 224 px MobileNetV2's p50 1.4 ms above an in-process loop.
"""

from __future__ import annotations

import email.utils
import hmac
import json
import logging
import math
import socket
import socketserver
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any
from urllib.parse import parse_qs

import httptools
from prometheus_client import CONTENT_TYPE_LATEST

from edge_agent.agent import Agent, NoModelError
from edge_agent.imaging import ImageDecodeError
from edge_agent.runtime import ModelLoadError

__all__ = ["MAX_BODY_BYTES", "MAX_CONNECTIONS", "MAX_HEADER_BYTES", "READ_TIMEOUT_S",
           "REQUEST_TIMEOUT_S", "AgentHTTPServer", "make_server"]

log = logging.getLogger(__name__)

#: Largest accepted request body, in bytes (a 40 MP JPEG is well under this).
MAX_BODY_BYTES = 32 * 1024 * 1024
#: Largest request line + header fields, in bytes (nginx's large_client_header_buffers: 4 x 8k;
#: generous for an API whose longest header is a key).
MAX_HEADER_BYTES = 64 * 1024
#: Connections served at once (a thread each); one more is answered 503 with Retry-After.
MAX_CONNECTIONS = 32
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

_BUSY_BODY = b'{"error": "too many connections; retry in a second"}'
_BUSY = (b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
         b"Retry-After: 1\r\nConnection: close\r\n"
         + f"Content-Length: {len(_BUSY_BODY)}\r\n\r\n".encode() + _BUSY_BODY)
_CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"
#: path -> the one method it answers
_ROUTES = {"/v1/predict": b"POST", "/healthz": b"GET", "/metrics": b"GET"}
_GUARDED = frozenset({"/v1/predict", "/metrics"})
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
class _Request:
    method: bytes
    path: str
    query: str
    headers: dict[str, str]
    body: bytes
    keep_alive: bool


_date: tuple[int, str] = (0, "")


def _http_date() -> str:
    """RFC 9110's IMF-fixdate of now, formatted once per second."""
    global _date
    now = int(time.time())
    if _date[0] != now:
        _date = (now, email.utils.formatdate(now, usegmt=True))
    return _date[1]


def _response(status: int, body: bytes, content_type: str, close: bool,
              headers: Iterable[tuple[str, str]] = ()) -> bytes:
    """Status line, headers and body as one buffer (one send: no Nagle/delayed-ACK stall)."""
    lines = [f"HTTP/1.1 {status} {HTTPStatus(status).phrase}", f"Content-Type: {content_type}",
             f"Content-Length: {len(body)}", f"Date: {_http_date()}"]
    lines += [f"{name}: {value}" for name, value in headers]
    if close:
        lines.append("Connection: close")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


def _parser_message(error: Exception) -> str:
    """httptools' (llhttp's) reason, in the words of this API's contract."""
    reason = str(error)
    if "Content-Length" in reason:
        return f"Content-Length must be a non-negative integer ({reason})"
    if "chunk" in reason.lower():
        return f"a chunk size is not hexadecimal or a chunk is malformed ({reason})"
    return f"malformed HTTP request ({reason})"


class AgentHTTPServer(socketserver.ThreadingTCPServer):
    """The listening socket and the connection threads (``serve_forever``, ``shutdown`` and
    ``server_close`` as :class:`socketserver.TCPServer`; ``server_close`` also ends every open
    connection); IPv6 when ``address``'s host has a colon."""

    daemon_threads = True
    allow_reuse_address = True  # as http.server.HTTPServer: a restart can bind again at once

    def __init__(self, address: tuple[str, int], agent: Agent, api_key: str | None = None) -> None:
        self.agent = agent
        self.api_key = api_key
        self._slots = threading.BoundedSemaphore(MAX_CONNECTIONS)
        self._open: set[socket.socket] = set()
        self._open_lock = threading.Lock()
        self._closed = False
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        super().__init__(address, _Handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        """A thread for the connection while fewer than MAX_CONNECTIONS are open; else a 503
        written at once and the socket closed (no thread, no read)."""
        if not self._slots.acquire(blocking=False):
            _refuse_busy(request)
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        with self._open_lock:
            if self._closed:
                self._slots.release()
                self.shutdown_request(request)
                return
            self._open.add(request)
        try:
            super().process_request_thread(request, client_address)
        finally:
            with self._open_lock:
                self._open.discard(request)
            self._slots.release()

    def server_close(self) -> None:
        """Stop listening and end every open connection (a keep-alive client is not answered
        after this returns; a prediction running finishes, its answer is not sent)."""
        super().server_close()
        with self._open_lock:
            self._closed = True
            connections = list(self._open)
        for connection in connections:
            try:
                connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def _refuse_busy(connection: socket.socket) -> None:
    """Answer 503 on the accepting thread without waiting for anything: what the client sent
    already is read and dropped before and after the answer (at most 1 MiB, never blocking), so
    that closing does not reset the connection before the client has read the 503."""
    def drain() -> None:
        for _ in range(16):
            try:
                if not connection.recv(65536, socket.MSG_DONTWAIT):
                    return
            except OSError:  # nothing more now (EAGAIN), or reset
                return

    try:
        drain()
        connection.sendall(_BUSY)
        connection.shutdown(socket.SHUT_WR)
        drain()
    except OSError:
        pass


class _Handler(socketserver.BaseRequestHandler):
    """One connection: bytes from the socket into httptools, whose callbacks collect each request
    (and refuse one early by raising :class:`Refusal`); complete requests are answered in
    order.

    Deadlines (a client sending a byte now and then must not hold its slot): each read waits
    at most ``timeout`` (:data:`READ_TIMEOUT_S`); a request's line and headers must arrive
    within ``timeout`` of its first byte and the whole request within
    :data:`REQUEST_TIMEOUT_S` (else 408 and close); a connection with no request under way
    for ``timeout`` is closed."""

    server: AgentHTTPServer
    request: socket.socket
    timeout = READ_TIMEOUT_S

    def setup(self) -> None:
        self.request.settimeout(self.timeout)
        # small answers go out in one send; Nagle would still hold a second segment ~40 ms
        self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._parser = httptools.HttpRequestParser(self)
        self._ready: list[_Request] = []
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
        if path in _GUARDED and not self._authorized():
            raise Refusal(HTTPStatus.UNAUTHORIZED,
                          "this agent needs its API key: Authorization: Bearer <key> or "
                          "X-API-Key: <key>", [("WWW-Authenticate", "Bearer")])
        chunked = "chunked" in headers.get("transfer-encoding", "").lower()
        length = headers.get("content-length")
        if method == b"POST" and length is None and not chunked:
            raise Refusal(HTTPStatus.LENGTH_REQUIRED,
                          "Content-Length (or Transfer-Encoding: chunked) is required")
        if length is not None and int(length) > MAX_BODY_BYTES:  # llhttp checked the digits
            raise Refusal(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, f"body over {MAX_BODY_BYTES} bytes")
        if chunked or (length is not None and int(length) > 0):
            # a body for nothing that takes one: refused before it is read
            _route(path, b"GET" if method == b"HEAD" else method)
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
        self._ready.append(_Request(
            self._parser.get_method(), self._path(), (url.query or b"").decode("latin-1"),
            self._headers, b"".join(self._body), self._parser.should_keep_alive()))

    def _path(self) -> str:
        try:
            url = httptools.parse_url(b"".join(self._url))
        except httptools.HttpParserInvalidURLError:
            raise Refusal(HTTPStatus.BAD_REQUEST, "malformed request target") from None
        return (url.path or b"/").decode("latin-1")

    def _authorized(self) -> bool:
        key = self.server.api_key
        if not key:
            return True
        given = self._headers.get("x-api-key") or ""
        bearer = self._headers.get("authorization") or ""
        if bearer[:7].lower() == "bearer ":
            given = given or bearer[7:].strip()
        # header bytes were decoded latin-1: back to the bytes sent, against the key's UTF-8
        return bool(given) and hmac.compare_digest(given.encode("latin-1"), key.encode())

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
                refusal = Refusal(HTTPStatus.BAD_REQUEST, _parser_message(error))
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
                    if not self._answer(request, close=rest is not None and not self._ready):
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
                self._send(_response(HTTPStatus.REQUEST_TIMEOUT, _error(
                    "the request did not arrive in time"), _JSON, True))
            except OSError:
                pass

    def _refuse(self, refusal: Refusal) -> None:
        self._send(_response(refusal.status, _error(str(refusal)), _JSON, True, refusal.headers))
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

    def _answer(self, request: _Request, close: bool = False) -> bool:
        """Answer one complete request; False when the connection is to be closed."""
        close = close or not request.keep_alive
        head = request.method == b"HEAD"
        try:
            _route(request.path, b"GET" if head else request.method)
        except Refusal as refusal:
            status, body, content_type = refusal.status, _error(str(refusal)), _JSON
            headers: tuple[tuple[str, str], ...] = refusal.headers
        else:
            headers = ()
            try:
                if request.path == "/v1/predict":
                    status, body, content_type = self._predict(request)
                elif request.path == "/healthz":
                    status, body, content_type = HTTPStatus.OK, json.dumps(
                        self.server.agent.health()).encode(), _JSON
                else:
                    status, body, content_type = (HTTPStatus.OK,
                                                  self.server.agent.telemetry.exposition(),
                                                  CONTENT_TYPE_LATEST)
            except Exception as error:  # noqa: BLE001 - a logged 500, never a silent drop
                log.exception("%s failed", request.path)
                status, body, content_type = HTTPStatus.INTERNAL_SERVER_ERROR, _error(
                    f"{request.path} failed: {type(error).__name__}: {error}"), _JSON
        log.debug("%s %s %s %d", self.client_address[0], request.method.decode(), request.path,
                  status)
        answer = _response(status, body, content_type, close, headers)
        self._send(answer[:len(answer) - len(body)] if head else answer)
        return not close

    def _predict(self, request: _Request) -> tuple[HTTPStatus, bytes, str]:
        query = parse_qs(request.query)
        try:
            top_k = int(query.get("top_k", ["5"])[0])
        except ValueError:
            return HTTPStatus.BAD_REQUEST, _error("top_k must be an integer"), _JSON
        score_threshold = None
        if "score_threshold" in query:
            try:
                score_threshold = float(query["score_threshold"][0])
            except ValueError:
                score_threshold = math.nan
            if not 0.0 <= score_threshold <= 1.0:  # NaN fails too
                return (HTTPStatus.BAD_REQUEST,
                        _error("score_threshold must be a number in [0, 1]"), _JSON)
        try:
            answer = self.server.agent.predict(request.body, top_k=top_k,
                                               score_threshold=score_threshold)
        except NoModelError as error:
            return HTTPStatus.SERVICE_UNAVAILABLE, _error(str(error)), _JSON
        except (ImageDecodeError, ValueError) as error:
            return HTTPStatus.BAD_REQUEST, _error(str(error)), _JSON
        except ModelLoadError as error:
            log.error("prediction failed: %s", error)
            return HTTPStatus.INTERNAL_SERVER_ERROR, _error(str(error)), _JSON
        except Exception as error:  # noqa: BLE001 - answered 500 and logged, never a silent drop
            log.exception("prediction failed unexpectedly")
            return (HTTPStatus.INTERNAL_SERVER_ERROR,
                    _error(f"prediction failed: {type(error).__name__}: {error}"), _JSON)
        return HTTPStatus.OK, json.dumps(answer).encode(), _JSON


def _route(path: str, method: bytes) -> None:
    """Raise Refusal 404 for an unknown path, 405 (with ``Allow``) for another method."""
    allowed = _ROUTES.get(path)
    if allowed is None:
        raise Refusal(HTTPStatus.NOT_FOUND, f"no such path {path}")
    if method != allowed:
        names = f"{allowed.decode()}, HEAD" if allowed == b"GET" else allowed.decode()
        raise Refusal(HTTPStatus.METHOD_NOT_ALLOWED, f"{path} answers {allowed.decode()} only",
                      [("Allow", names)])


def _error(message: str) -> bytes:
    return json.dumps({"error": message}).encode()


def make_server(agent: Agent, host: str = "127.0.0.1", port: int = 8700,
                api_key: str | None = None) -> AgentHTTPServer:
    """Bind (not yet serve) the HTTP API; port 0 picks a free port (see ``server_address``).
    ``api_key``: required of /v1/predict and /metrics callers when set.
    Raises OSError when the address cannot be bound."""
    return AgentHTTPServer((host, port), agent, api_key)
