"""The agent's local HTTP API: its routes, key and connection cap, on the HTTP/1.1 connections
of :mod:`edge_agent.http11` (a thread each, requests parsed by httptools).

- ``POST /v1/predict`` body = image bytes, optional ``?top_k=5`` (classification: any
  integer >= 1, :func:`edge_agent.text_session.parse_top_k`; a text body may give ``top_k``
  too, the same or refused) and
  ``?score_threshold=0.5`` (detection) -> 200, by the served model's task:
  ``{"model_version_id", "task": "image_classification", "predictions": [{"label", "index",
  "probability"}], "latency_ms"}`` or ``{"model_version_id", "task": "object_detection",
  "width", "height", "tiles", "detections": [{"label", "index", "score", "box": [x1, y1, x2,
  y2]}], "latency_ms"}`` (boxes in px of the upright image; :meth:`Agent.predict`); for a
  text model the body is JSON ``{"text": "..."}`` -> ``{"model_version_id", "task":
  "text_classification", "predictions": [{"label", "index", "score"}], "truncated",
  "latency_ms"}`` or ``{"texts": [...]}`` (at most 256) -> ``{"model_version_id", "task",
  "results": [{"predictions", "truncated"}], "latency_ms"}``
  (:mod:`edge_agent.text_session`);
  400 ``{"error"}`` for an undecodable image, a bad ``top_k`` or ``score_threshold`` (named),
  a text request that is not valid (not JSON, no ``text``, a text that
  :func:`edge_agent.text_session.text_input` refuses: not UTF-8, a lone surrogate, empty), an
  image sent to a text model or JSON to an image model (the message says what it expects),
  a ``Content-Length`` that is not a non-negative integer or any other malformed request; 411
  without a length (neither ``Content-Length`` nor ``Transfer-Encoding: chunked``); 413 for a
  body over ``http11.MAX_BODY_BYTES``, whichever way it arrives; 431 for a request line and
  headers over ``http11.MAX_HEADER_BYTES``; 503 when no model is loaded, or with
  ``Retry-After`` when :data:`MAX_CONNECTIONS` connections are open already.
- ``GET /healthz`` -> ``{"status": "ok" | "no_model", "model_version_id"}`` (always 200).
- ``GET /metrics`` -> Prometheus text format. ``HEAD`` on both: GET's headers.
- Another method on these paths: 405 with ``Allow``; another path: 404 (both before a body is
  read); an HTTP/1.1 request without ``Host``: 400; a request not in within its deadlines
  (below): 408; an unexpected error while predicting: 500, logged.

With an API key (``sampan-agent run --api-key-file``), ``/v1/predict`` and ``/metrics`` need
``Authorization: Bearer <key>`` (or ``X-API-Key: <key>``): 401 with ``WWW-Authenticate: Bearer``
otherwise, before any body is read; ``/healthz`` stays open for probes and says nothing but the
status and version.

HTTP/1.1 itself (keep-alive, pipelining, chunked bodies, 100-continue), the refusals that do
not depend on the route (400, 408, 411, 413, 431) and the deadlines and bounds (a body never
read past ``MAX_BODY_BYTES``, a request's headers within ``READ_TIMEOUT_S``): see
:mod:`edge_agent.http11`. Here: at most :data:`MAX_CONNECTIONS` connections at once (one more
is answered 503 at once), ``server_close`` ends the open ones.

Why httptools and not ``http.server`` (docs/decisions/edge-agent.md, "Parser"): the stdlib
parses headers with ``email.parser`` and writes an answer in several calls; on a 2-core machine
its ~0.4 ms of CPU per request put a 224 px MobileNetV2's p50 1.4 ms above an in-process loop.
"""

from __future__ import annotations

import hmac
import json
import logging
import math
import socket
import socketserver
import threading
from http import HTTPStatus
from typing import Any
from urllib.parse import parse_qs

from prometheus_client import CONTENT_TYPE_LATEST

from edge_agent.agent import Agent, NoModelError
from edge_agent.http11 import Connection, Refusal, Request, error_body, response
from edge_agent.imaging import ImageDecodeError
from edge_agent.runtime import ModelLoadError
from edge_agent.text_session import TopKError, parse_top_k

__all__ = ["MAX_CONNECTIONS", "AgentHTTPServer", "make_server"]

log = logging.getLogger(__name__)

#: Connections served at once (a thread each); one more is answered 503 with Retry-After.
MAX_CONNECTIONS = 32

_BUSY_BODY = b'{"error": "too many connections; retry in a second"}'
_BUSY = (b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
         b"Retry-After: 1\r\nConnection: close\r\n"
         + f"Content-Length: {len(_BUSY_BODY)}\r\n\r\n".encode() + _BUSY_BODY)
#: path -> the one method it answers
_ROUTES = {"/v1/predict": b"POST", "/healthz": b"GET", "/metrics": b"GET"}
_GUARDED = frozenset({"/v1/predict", "/metrics"})
_JSON = "application/json"


class AgentHTTPServer(socketserver.ThreadingTCPServer):
    """The listening socket and the connection threads (``serve_forever``, ``shutdown`` and
    ``server_close`` as :class:`socketserver.TCPServer`; ``server_close`` also ends every open
    connection); IPv6 when ``address``'s host has a colon."""

    daemon_threads = True
    allow_reuse_address = True  # as http.server.HTTPServer: a restart can bind again at once
    # connections the kernel completes before accept() takes them (socketserver's default is 5:
    # a burst of clients on a busy 2-core device had its SYNs dropped and waited the 1 s SYN
    # retry; uvicorn and gunicorn listen with 2048)
    request_queue_size = 128

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


class _Handler(Connection):
    """The API on one connection: the key before anything else, the route before a body."""

    server: AgentHTTPServer

    def admit(self, path: str) -> None:
        if path in _GUARDED and not self._authorized():
            raise Refusal(HTTPStatus.UNAUTHORIZED,
                          "this agent needs its API key: Authorization: Bearer <key> or "
                          "X-API-Key: <key>", [("WWW-Authenticate", "Bearer")])

    def accepts_body(self, path: str, method: bytes) -> None:
        _route(path, method)

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


    def answer(self, request: Request, close: bool = False) -> bool:
        """Answer one complete request; False when the connection is to be closed."""
        close = close or not request.keep_alive
        head = request.method == b"HEAD"
        try:
            _route(request.path, b"GET" if head else request.method)
        except Refusal as refusal:
            status, body, content_type = refusal.status, error_body(str(refusal)), _JSON
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
                status, body, content_type = HTTPStatus.INTERNAL_SERVER_ERROR, error_body(
                    f"{request.path} failed: {type(error).__name__}: {error}"), _JSON
        log.debug("%s %s %s %d", self.client_address[0], request.method.decode(), request.path,
                  status)
        answer = response(status, body, content_type, close, headers)
        self._send(answer[:len(answer) - len(body)] if head else answer)
        return not close


    def _predict(self, request: Request) -> tuple[HTTPStatus, bytes, str]:
        query = parse_qs(request.query)
        try:  # the rule the platform's try-it has too; a text body may give it as well
            top_k = parse_top_k(query["top_k"][0]) if "top_k" in query else None
        except TopKError as error:
            return HTTPStatus.BAD_REQUEST, error_body(str(error)), _JSON
        score_threshold = None
        if "score_threshold" in query:
            try:
                score_threshold = float(query["score_threshold"][0])
            except ValueError:
                score_threshold = math.nan
            if not 0.0 <= score_threshold <= 1.0:  # NaN fails too
                return (HTTPStatus.BAD_REQUEST,
                        error_body("score_threshold must be a number in [0, 1]"), _JSON)
        try:
            answer = self.server.agent.predict(request.body, top_k=top_k,
                                               score_threshold=score_threshold)
        except NoModelError as error:
            return HTTPStatus.SERVICE_UNAVAILABLE, error_body(str(error)), _JSON
        except (ImageDecodeError, ValueError) as error:
            return HTTPStatus.BAD_REQUEST, error_body(str(error)), _JSON
        except ModelLoadError as error:
            log.error("prediction failed: %s", error)
            return HTTPStatus.INTERNAL_SERVER_ERROR, error_body(str(error)), _JSON
        except Exception as error:  # noqa: BLE001 - answered 500 and logged, never a silent drop
            log.exception("prediction failed unexpectedly")
            return (HTTPStatus.INTERNAL_SERVER_ERROR,
                    error_body(f"prediction failed: {type(error).__name__}: {error}"), _JSON)
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


def make_server(agent: Agent, host: str = "127.0.0.1", port: int = 8700,
                api_key: str | None = None) -> AgentHTTPServer:
    """Bind (not yet serve) the HTTP API; port 0 picks a free port (see ``server_address``).
    ``api_key``: required of /v1/predict and /metrics callers when set.
    Raises OSError when the address cannot be bound."""
    return AgentHTTPServer((host, port), agent, api_key)
