"""The agent's local HTTP API (stdlib ``ThreadingHTTPServer``, one thread per request).

- ``POST /v1/predict`` body = image bytes, optional ``?top_k=5`` (classification) and
  ``?score_threshold=0.5`` (detection) -> 200, by the served model's task:
  ``{"model_version_id", "task": "image_classification", "predictions": [{"label", "index",
  "probability"}], "latency_ms"}`` or ``{"model_version_id", "task": "object_detection",
  "width", "height", "tiles", "detections": [{"label", "index", "score", "box": [x1, y1, x2,
  y2]}], "latency_ms"}`` (boxes in px of the upright image; :meth:`Agent.predict`);
  400 ``{"error"}`` for an undecodable image, a bad ``top_k`` or ``score_threshold`` (named),
  or a ``Content-Length`` that is not a non-negative integer; 411 without a length (neither
  ``Content-Length`` nor ``Transfer-Encoding: chunked``); 413 for a body over
  :data:`MAX_BODY_BYTES`, whichever way it arrives; 503 when no model is loaded, or with
  ``Retry-After`` when :data:`MAX_CONNECTIONS` connections are open already.
- ``GET /healthz`` -> ``{"status": "ok" | "no_model", "model_version_id"}`` (always 200).
- ``GET /metrics`` -> Prometheus text format.

With an API key (``sampan-agent run --api-key-file``), ``/v1/predict`` and ``/metrics`` need
``Authorization: Bearer <key>`` (or ``X-API-Key: <key>``): 401 with ``WWW-Authenticate: Bearer``
otherwise, before any body is read; ``/healthz`` stays open for probes and says nothing but the
status and version.

Bounds (one request must not take the device down): at most :data:`MAX_CONNECTIONS` connections
are served at once (one thread each), a socket that sends nothing for :data:`READ_TIMEOUT_S` is
closed, and a body is never read past :data:`MAX_BODY_BYTES`.
"""

from __future__ import annotations

import hmac
import json
import logging
import math
from http import HTTPStatus
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from prometheus_client import CONTENT_TYPE_LATEST

from edge_agent.agent import Agent, NoModelError
from edge_agent.imaging import ImageDecodeError
from edge_agent.runtime import ModelLoadError

__all__ = ["MAX_BODY_BYTES", "MAX_CONNECTIONS", "READ_TIMEOUT_S", "AgentHTTPServer",
           "make_server"]

log = logging.getLogger(__name__)

#: Largest accepted request body, in bytes (a 40 MP JPEG is well under this).
MAX_BODY_BYTES = 32 * 1024 * 1024
#: Connections served at once (a thread each); one more is answered 503 with Retry-After.
MAX_CONNECTIONS = 32
#: Seconds a socket may stay silent while a request is read (a slow or stalled client).
READ_TIMEOUT_S = 30.0

_BUSY_BODY = b'{"error": "too many connections; retry in a second"}'
_BUSY = (b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
         b"Retry-After: 1\r\nConnection: close\r\n"
         + f"Content-Length: {len(_BUSY_BODY)}\r\n\r\n".encode() + _BUSY_BODY)


class BodyError(Exception):
    """A request body that cannot be read: ``status`` and the message to answer."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class AgentHTTPServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], agent: Agent, api_key: str | None = None) -> None:
        self.agent = agent
        self.api_key = api_key
        self._slots = threading.BoundedSemaphore(MAX_CONNECTIONS)
        super().__init__(address, _Handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        """A thread for the connection while fewer than MAX_CONNECTIONS are open; else a 503
        written at once and the socket closed (no thread, no read)."""
        if not self._slots.acquire(blocking=False):
            try:
                request.sendall(_BUSY)
            except OSError:
                pass
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()


class _Handler(BaseHTTPRequestHandler):
    server: AgentHTTPServer
    protocol_version = "HTTP/1.1"
    timeout = READ_TIMEOUT_S  # socketserver sets it on the connection: reads cannot pin a thread
    # headers and body go out in two writes; with Nagle on, the client's delayed ACK holds the
    # second one ~40 ms (measured: p50 47 ms -> 2.4 ms at batch 1)
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        log.debug("%s %s", self.address_string(), format % args)

    def _send(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _json(self, status: int, data: dict[str, Any]) -> None:
        self._send(status, json.dumps(data).encode("utf-8"), "application/json")

    def _authorized(self) -> bool:
        """True without an API key, or when the request carries it; else answers 401."""
        key = self.server.api_key
        if not key:
            return True
        given = self.headers.get("X-API-Key") or ""
        bearer = self.headers.get("Authorization") or ""
        if bearer[:7].lower() == "bearer ":
            given = given or bearer[7:].strip()
        if given and hmac.compare_digest(given.encode(), key.encode()):
            return True
        self.close_connection = True  # the body (if any) is not read
        body = json.dumps({"error": "this agent needs its API key: Authorization: Bearer "
                                    "<key> or X-API-Key: <key>"}).encode()
        self.send_response(HTTPStatus.UNAUTHORIZED)
        self.send_header("WWW-Authenticate", "Bearer")
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        return False

    def do_GET(self) -> None:  # noqa: N802 - stdlib name
        path = urlsplit(self.path).path
        if path == "/healthz":
            self._json(HTTPStatus.OK, self.server.agent.health())
        elif path == "/metrics" and not self._authorized():
            return
        elif path == "/metrics":
            self._send(HTTPStatus.OK, self.server.agent.telemetry.exposition(), CONTENT_TYPE_LATEST)
        else:
            self._json(HTTPStatus.NOT_FOUND, {"error": f"no such path {path}"})

    def do_POST(self) -> None:  # noqa: N802 - stdlib name
        url = urlsplit(self.path)
        if url.path == "/v1/predict" and not self._authorized():
            return
        if url.path != "/v1/predict":
            self._drain()
            self._json(HTTPStatus.NOT_FOUND, {"error": f"no such path {url.path}"})
            return
        try:
            data = self._body()
        except BodyError as error:
            self.close_connection = True
            self._json(error.status, {"error": str(error)})
            return
        except (TimeoutError, ConnectionError):
            self.close_connection = True
            return
        query = parse_qs(url.query)
        try:
            top_k = int(query.get("top_k", ["5"])[0])
        except ValueError:
            self._json(HTTPStatus.BAD_REQUEST, {"error": "top_k must be an integer"})
            return
        score_threshold = None
        if "score_threshold" in query:
            try:
                score_threshold = float(query["score_threshold"][0])
            except ValueError:
                score_threshold = math.nan
            if not 0.0 <= score_threshold <= 1.0:  # NaN fails too
                self._json(HTTPStatus.BAD_REQUEST,
                           {"error": "score_threshold must be a number in [0, 1]"})
                return
        try:
            self._json(HTTPStatus.OK, self.server.agent.predict(
                data, top_k=top_k, score_threshold=score_threshold))
        except NoModelError as error:
            self._json(HTTPStatus.SERVICE_UNAVAILABLE, {"error": str(error)})
        except (ImageDecodeError, ValueError) as error:
            self._json(HTTPStatus.BAD_REQUEST, {"error": str(error)})
        except ModelLoadError as error:
            log.error("prediction failed: %s", error)
            self._json(HTTPStatus.INTERNAL_SERVER_ERROR, {"error": str(error)})

    def _body(self) -> bytes:
        """The request body, by ``Content-Length`` or ``Transfer-Encoding: chunked`` (RFC 9112,
        section 7.1; trailers are read and dropped). Raises BodyError (400 a malformed length
        or chunk, 411 no length, 413 past MAX_BODY_BYTES: nothing more is read)."""
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            return self._chunked()
        raw = self.headers.get("Content-Length")
        if raw is None:
            raise BodyError(HTTPStatus.LENGTH_REQUIRED,
                            "Content-Length (or Transfer-Encoding: chunked) is required")
        if not raw.strip().isdigit():  # "-5", "1e3", "0x10", " ": never a read of that length
            raise BodyError(HTTPStatus.BAD_REQUEST,
                            f"Content-Length must be a non-negative integer, got {raw[:40]!r}")
        length = int(raw)
        if length > MAX_BODY_BYTES:
            raise BodyError(HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
                            f"body over {MAX_BODY_BYTES} bytes")
        data = self.rfile.read(length)
        if len(data) < length:
            raise ConnectionError("the client closed before its body ended")
        return data

    def _chunked(self) -> bytes:
        parts: list[bytes] = []
        total = 0
        while True:
            line = self.rfile.readline(1026)
            if not line.endswith(b"\n"):
                raise BodyError(HTTPStatus.BAD_REQUEST, "a chunk size line is malformed")
            size_text = line.split(b";", 1)[0].strip()
            try:
                size = int(size_text, 16)
            except ValueError:
                raise BodyError(HTTPStatus.BAD_REQUEST,
                                f"a chunk size is not hexadecimal: {size_text[:20]!r}") from None
            if size < 0 or size_text.startswith((b"-", b"+", b"0x", b"0X")):
                raise BodyError(HTTPStatus.BAD_REQUEST, "a chunk size is malformed")
            if size == 0:
                break
            total += size
            if total > MAX_BODY_BYTES:
                raise BodyError(HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
                                f"body over {MAX_BODY_BYTES} bytes")
            chunk = self.rfile.read(size)
            if len(chunk) < size or self.rfile.read(2) != b"\r\n":
                raise BodyError(HTTPStatus.BAD_REQUEST, "a chunk is shorter than its size")
            parts.append(chunk)
        for _ in range(64):  # trailer fields, up to the empty line
            line = self.rfile.readline(8192)
            if line in (b"\r\n", b"\n", b""):
                break
        else:
            raise BodyError(HTTPStatus.BAD_REQUEST, "too many trailer fields")
        return b"".join(parts)

    def _drain(self) -> None:
        """Read and drop a body we do not answer (a 404), when it is small enough; else close."""
        try:
            self._body()
        except (TimeoutError, BodyError, ConnectionError):
            self.close_connection = True


def make_server(agent: Agent, host: str = "127.0.0.1", port: int = 8700,
                api_key: str | None = None) -> AgentHTTPServer:
    """Bind (not yet serve) the HTTP API; port 0 picks a free port (see ``server_address``).
    ``api_key``: required of /v1/predict and /metrics callers when set."""
    return AgentHTTPServer((host, port), agent, api_key)
