"""Adversarial checks of the agent's HTTP API (edge_agent/server.py), from a review that broke
b63726f/8be5fd1: each test states what a bounded HTTP/1.1 server does, and failed on those
commits."""

from __future__ import annotations

import socket
import threading
import time

import pytest

import edge_agent.server as server
from edge_agent import http11
from edge_agent.server import make_server
from sampan.devstack.stack import wait_until
from tests.edge_agent.test_server import (_with_model, new_agent, read_until_closed,
                                         standalone_run_args)

KEY = "k" * 24


class Running:
    def __init__(self, agent, api_key=None):
        self.http = make_server(agent, "127.0.0.1", 0, api_key=api_key)
        self.thread = threading.Thread(target=self.http.serve_forever,
                                       kwargs={"poll_interval": 0.05}, daemon=True)
        self.address = self.http.server_address[:2]

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.http.shutdown()
        self.http.server_close()  # connection threads are daemons: not joined
        self.thread.join(timeout=5)


@pytest.fixture
def agent(tmp_path, signing_key, package_factory):
    agent = new_agent(tmp_path, signing_key)
    _with_model(agent, package_factory)
    return agent


def test_a_client_dribbling_its_headers_loses_its_slot(agent, monkeypatch) -> None:
    """READ_TIMEOUT_S is per recv(): one byte per (READ_TIMEOUT_S - 1) s keeps a connection and
    its slot for ever, so MAX_CONNECTIONS such clients (32 x ~1 byte/29 s) make every other
    caller a 503. Expected: a deadline for the whole header block (nginx
    client_header_timeout, Node's headersTimeout), after which the slot is free again."""
    monkeypatch.setattr(server, "MAX_CONNECTIONS", 2)
    monkeypatch.setattr(server._Handler, "timeout", 1.0)
    with Running(agent) as running:
        slow = [socket.create_connection(running.address, timeout=5) for _ in range(2)]
        for conn in slow:
            conn.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
        began = time.monotonic()
        try:
            while time.monotonic() - began < 6.0:  # 6 x READ_TIMEOUT_S
                for conn in slow:
                    try:
                        conn.sendall(b"X")
                    except OSError:
                        pass
                time.sleep(0.5)  # the attack's pace (the stimulus, not a wait)
            with socket.create_connection(running.address, timeout=5) as other:
                other.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                answer = read_until_closed(other, 2.0)
        finally:
            for conn in slow:
                conn.close()
    assert answer.startswith(b"HTTP/1.1 200"), answer[:60]


def test_chunked_trailers_are_bounded_like_headers(agent, monkeypatch) -> None:
    """Trailer fields after the last chunk are not counted against MAX_HEADER_BYTES (the count
    stopped at on_headers_complete) and httptools concatenates a field value in memory: one
    request grew the process by what it sent (measured: +100 MB for 100 MiB; +60 MB via GET
    /nope on a keyed server, whose body was read before the route was looked at: now a 404
    before the body), with quadratic copying on the way. Expected: a refusal (431 or 400)
    once the trailers pass MAX_HEADER_BYTES."""
    monkeypatch.setattr(http11, "MAX_HEADER_BYTES", 1000)
    with Running(agent) as running:
        with socket.create_connection(running.address, timeout=5) as conn:
            conn.sendall(b"POST /v1/predict HTTP/1.1\r\nHost: x\r\n"
                         b"Transfer-Encoding: chunked\r\n\r\n0\r\nX-Trailer: ")
            try:
                for _ in range(8):
                    conn.sendall(b"a" * (256 * 1024))  # 2 MiB of one trailer value
            except OSError:
                pass
            answer = read_until_closed(conn, 2.0)
    assert answer.startswith((b"HTTP/1.1 431", b"HTTP/1.1 400")), answer[:60]


def test_an_upgrade_offer_on_a_post_does_not_drop_its_body(agent, png) -> None:
    """``Connection: Upgrade`` + ``Upgrade: h2c`` (or websocket) on a POST: llhttp stops at the
    end of the headers (HttpParserUpgrade) so the body is never read, the request is answered
    as if its body were empty (400 "empty file" for a valid image) and the connection closed
    without ``Connection: close``. Expected: the upgrade ignored (RFC 9110 7.8: a server MAY
    ignore Upgrade), the body read and predicted."""
    image = png((0, 250, 0))
    with Running(agent) as running:
        with socket.create_connection(running.address, timeout=5) as conn:
            conn.sendall(b"POST /v1/predict HTTP/1.1\r\nHost: x\r\nConnection: Upgrade, "
                         b"HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQCAAAA\r\n"
                         + f"Content-Length: {len(image)}\r\n\r\n".encode() + image)
            answer = read_until_closed(conn, 3.0)
    assert answer.startswith(b"HTTP/1.1 200"), answer[:200]


@pytest.mark.parametrize("error", [RuntimeError("odd"), OSError(28, "No space left on device")])
def test_an_unexpected_error_in_predict_is_a_500(agent, png, error) -> None:
    """_predict catches NoModelError, ImageDecodeError/ValueError and ModelLoadError only:
    anything else ends the connection thread with no answer (RuntimeError/MemoryError: a
    traceback printed to stderr by socketserver, not logged; OSError: mistaken for the client
    leaving, nothing logged at all). The slot is released. Expected: a 500 with {"error"}."""
    def boom(*args, **kwargs):
        raise error

    agent.predict = boom
    image = png((1, 2, 3))
    with Running(agent) as running:
        with socket.create_connection(running.address, timeout=5) as conn:
            conn.sendall(b"POST /v1/predict HTTP/1.1\r\nHost: x\r\n"
                         + f"Content-Length: {len(image)}\r\n\r\n".encode() + image)
            answer = read_until_closed(conn, 3.0)
    assert answer.startswith(b"HTTP/1.1 500"), answer[:200]


def test_100_continue_for_a_pipelined_request_follows_the_earlier_answers(agent, png) -> None:
    """on_headers_complete sends 100 Continue from inside feed_data, before the requests that
    completed earlier in the same read are answered: the client reads B's interim answer
    ahead of A's final one (RFC 9112 9.3.2: answers in request order)."""
    image = png((0, 250, 0))
    with Running(agent) as running:
        with socket.create_connection(running.address, timeout=5) as conn:
            conn.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
                         b"POST /v1/predict HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n"
                         + f"Content-Length: {len(image)}\r\nConnection: close\r\n\r\n".encode())
            conn.settimeout(2)
            first = conn.recv(65536)  # the first bytes answered
    assert first.startswith(b"HTTP/1.1 200"), first[:60]


def test_an_http_1_0_expectation_is_ignored(agent) -> None:
    """RFC 9110 10.1.1: a 100-continue expectation in an HTTP/1.0 request MUST be ignored."""
    with Running(agent) as running:
        with socket.create_connection(running.address, timeout=5) as conn:
            conn.sendall(b"POST /v1/predict HTTP/1.0\r\nHost: x\r\nExpect: 100-continue\r\n"
                         b"Content-Length: 3\r\n\r\n")
            answer = read_until_closed(conn, 1.0)
    assert not answer.startswith(b"HTTP/1.1 100"), answer


def test_a_utf_8_api_key_is_accepted(tmp_path, signing_key, package_factory) -> None:
    """The key file is read as UTF-8, but header values are decoded latin-1 and re-encoded
    UTF-8 before compare_digest: a non-ASCII key sent as UTF-8 is always a 401 (and accepted
    only as latin-1 bytes)."""
    agent = new_agent(tmp_path, signing_key)
    key = "clé-secrète-123456"
    with Running(agent, api_key=key) as running:
        with socket.create_connection(running.address, timeout=5) as conn:
            conn.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\nX-API-Key: "
                         + key.encode() + b"\r\n\r\n")
            answer = read_until_closed(conn, 2.0)
    assert answer.startswith(b"HTTP/1.1 200"), answer[:60]


def test_serve_stops_answering_once_it_returns(tmp_path, signing_key) -> None:
    """cli.serve(args, stop) returns 0 after stop is set, but connection threads are daemons
    that server_close() does not join or close: a keep-alive connection opened before the
    stop is still answered afterwards (until it idles READ_TIMEOUT_S; for ever while it keeps
    asking). In an in-process service host (the use case of serve) the agent keeps serving
    after SvcStop returned."""
    from edge_agent.cli import serve

    args, port = standalone_run_args(tmp_path, signing_key)
    stop = threading.Event()
    result: list[int] = []
    thread = threading.Thread(target=lambda: result.append(serve(args, stop)), daemon=True)
    thread.start()
    connected: list[socket.socket] = []

    def connect() -> bool:
        try:
            connected.append(socket.create_connection(("127.0.0.1", port), timeout=5))
        except OSError:
            return False
        return True

    wait_until(connect, timeout_s=20, interval_s=0.05, what="the agent to listen")
    with connected[0] as conn:
        conn.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        assert conn.recv(1000).startswith(b"HTTP/1.1 200")
        stop.set()
        thread.join(timeout=10)
        assert result == [0]
        try:
            conn.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        except OSError:
            return
        after = read_until_closed(conn, 1.0)
    assert not after.startswith(b"HTTP/1.1 200"), after[:60]
