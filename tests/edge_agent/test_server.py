"""The local HTTP API in-process: status codes for the cases the process test does not reach."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import requests

from edge_agent.agent import Agent
from edge_agent.home import AgentConfig, AgentHome
from edge_agent.server import make_server
from sampan.devstack.stack import wait_until


@contextmanager
def serving(agent: Agent, api_key: str | None = None) -> Iterator[str]:
    """The agent's HTTP API on a free port, in a thread; yields its base URL."""
    server = make_server(agent, "127.0.0.1", 0, api_key=api_key)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    host, port = server.server_address[:2]
    try:
        yield f"http://{host}:{port}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def new_agent(tmp_path: Path, signing_key) -> Agent:
    home = AgentHome(tmp_path / "agent")
    config = AgentConfig("http://127.0.0.1:9", "device-1", "cred", signing_key.public_b64)
    return Agent(home, config)


@pytest.fixture
def served(tmp_path: Path, signing_key):
    agent = new_agent(tmp_path, signing_key)
    with serving(agent) as base:
        yield agent, base


def test_without_a_model_predict_is_503(served, png) -> None:
    agent, base = served
    assert requests.get(f"{base}/healthz", timeout=5).json() == {
        "status": "no_model",
        "model_version_id": None,
    }
    reply = requests.post(f"{base}/v1/predict", data=png((1, 2, 3)), timeout=5)
    assert reply.status_code == 503
    assert reply.json() == {"error": "no model is loaded yet"}
    assert agent.telemetry.snapshot()["errors"] == 1


def test_bad_requests_name_the_problem(served, png, tmp_path, package_factory) -> None:
    agent, base = served
    package = package_factory()
    directory = agent.home.model_dir(package.version_id)
    directory.mkdir(parents=True)
    (directory / "model.onnx").write_bytes(package.model_bytes)
    (directory / "manifest.json").write_text(json.dumps(package.manifest))
    agent.swap(agent.load_package(package.version_id))

    reply = requests.post(f"{base}/v1/predict?top_k=x", data=png((1, 2, 3)), timeout=5)
    assert (reply.status_code, reply.json()) == (400, {"error": "top_k must be an integer"})
    reply = requests.post(f"{base}/v1/predict?top_k=0", data=png((1, 2, 3)), timeout=5)
    assert (reply.status_code, reply.json()) == (400, {"error": "top_k must be >= 1"})
    reply = requests.post(f"{base}/v1/predict?top_k=9", data=png((0, 250, 0)), timeout=5)
    assert [p["label"] for p in reply.json()["predictions"]] == ["green", "red", "blue"]
    # the answer's top-1 probability is the heartbeat's confidence (bad requests add none)
    top1 = reply.json()["predictions"][0]["probability"]
    assert agent.telemetry.snapshot()["confidence_mean"] == pytest.approx(top1, abs=1e-4)
    assert requests.get(f"{base}/nope", timeout=5).status_code == 404
    assert requests.post(f"{base}/nope", data=b"x", timeout=5).status_code == 404


def read_until_closed(conn: socket.socket, wait_s: float) -> bytes:
    """What the server sends until it closes the connection (or resets it), or until nothing
    came for ``wait_s``."""
    conn.settimeout(wait_s)
    answer = b""
    try:
        while chunk := conn.recv(65536):
            answer += chunk
    except (TimeoutError, ConnectionResetError):
        pass
    return answer


def _raw(base: str, request: bytes, *, wait_s: float = 5.0) -> bytes:
    """Send raw bytes to the server and read until it closes the connection (or ``wait_s``)."""
    from urllib.parse import urlsplit

    url = urlsplit(base)
    with socket.create_connection((url.hostname, url.port), timeout=wait_s) as conn:
        conn.sendall(request)
        return read_until_closed(conn, wait_s)


def standalone_run_args(tmp_path: Path, signing_key) -> tuple[Any, int]:
    """``sampan-agent run``'s arguments for a standalone home (no platform, no model) on a
    free port, and that port."""
    from edge_agent.cli import build_parser

    home = AgentHome(tmp_path / "agent")
    home.ensure()
    home.save_config(AgentConfig(server_url="", device_id="d", credential="",
                                 signing_public_key=signing_key.public_b64, name="d",
                                 trusted_signing_keys=[signing_key.public_b64]))
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return build_parser().parse_args(["run", "--home", str(home.root), "--port", str(port)]), port


def _with_model(agent, package_factory) -> None:
    package = package_factory()
    directory = agent.home.model_dir(package.version_id)
    directory.mkdir(parents=True)
    (directory / "model.onnx").write_bytes(package.model_bytes)
    (directory / "manifest.json").write_text(json.dumps(package.manifest))
    agent.swap(agent.load_package(package.version_id))


@pytest.mark.parametrize("length, status", [("-5", b"400"), ("1e3", b"400"), ("0x10", b"400"),
                                            (" ", b"400"), (None, b"411")])
def test_a_bad_or_missing_content_length_never_pins_a_thread(served, length, status) -> None:
    """A negative length once made the handler read to the end of the stream (a thread held
    until the client left): every length that is not a non-negative integer is a 400 at once."""
    _, base = served
    header = b"" if length is None else f"Content-Length: {length}\r\n".encode()
    answer = _raw(base, b"POST /v1/predict HTTP/1.1\r\nHost: x\r\n" + header + b"\r\n")
    assert answer.startswith(b"HTTP/1.1 " + status), answer[:200]
    if length is not None:
        assert b"non-negative integer" in answer


def test_a_chunked_body_is_read_and_bounded(served, png, package_factory,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """HTTP/1.1 clients may stream a body in chunks (no Content-Length): it is answered as the
    same body sent at once; past MAX_BODY_BYTES it is a 413 without reading the rest; a
    malformed chunk is a 400."""
    from edge_agent import http11

    agent, base = served
    _with_model(agent, package_factory)
    image = png((0, 250, 0))
    whole = requests.post(f"{base}/v1/predict", data=image, timeout=5).json()
    chunks = b"".join(f"{len(image[i:i + 100]):x}\r\n".encode() + image[i:i + 100] + b"\r\n"
                      for i in range(0, len(image), 100))
    request = (b"POST /v1/predict HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
               b"Connection: close\r\n\r\n")
    answer = _raw(base, request + chunks + b"0\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 200"), answer[:300]
    body = json.loads(answer.split(b"\r\n\r\n", 1)[1])
    assert body["predictions"] == whole["predictions"]
    # requests sends a generator chunked, too
    streamed = requests.post(f"{base}/v1/predict", data=iter([image[:50], image[50:]]), timeout=5)
    assert streamed.status_code == 200 and streamed.json()["predictions"] == whole["predictions"]

    monkeypatch.setattr(http11, "MAX_BODY_BYTES", 1000)
    big = b"".join(b"190\r\n" + b"x" * 400 + b"\r\n" for _ in range(4))  # 1,600 bytes
    answer = _raw(base, request + big + b"0\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
    answer = _raw(base, request + b"zz\r\nabc\r\n0\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 400") and b"hexadecimal" in answer


def test_a_silent_client_is_dropped_and_connections_are_capped(
        tmp_path: Path, signing_key, monkeypatch: pytest.MonkeyPatch) -> None:
    """A client that opens a connection and sends nothing is closed after READ_TIMEOUT_S; past
    MAX_CONNECTIONS open connections the next one is answered 503 with Retry-After at once, and
    served again once one closes."""
    import socket
    import time

    import edge_agent.server as server

    monkeypatch.setattr(server, "MAX_CONNECTIONS", 2)
    monkeypatch.setattr(server._Handler, "timeout", 1.0)
    home = AgentHome(tmp_path / "agent")
    config = AgentConfig("http://127.0.0.1:9", "device-1", "cred", signing_key.public_b64)
    http = make_server(Agent(home, config), "127.0.0.1", 0)
    thread = threading.Thread(target=http.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    address = http.server_address[:2]
    base = f"http://{address[0]}:{address[1]}"
    try:
        silent = [socket.create_connection(address, timeout=5) for _ in range(2)]
        # both connections accepted and holding their slots
        wait_until(lambda: http._slots._value == 0, timeout_s=5, interval_s=0.02,
                   what="the two silent connections to take both slots")
        answer = _raw(base, b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        assert answer.startswith(b"HTTP/1.1 503") and b"Retry-After: 1" in answer
        began = time.monotonic()
        assert silent[0].recv(10) == b""  # closed by the server after its read timeout
        assert time.monotonic() - began < 3.0
        for conn in silent:
            conn.close()
        wait_until(lambda: http._slots._value == 2, timeout_s=5, interval_s=0.02,
                   what="the closed connections to free their slots")
        assert requests.get(f"{base}/healthz", timeout=5).status_code == 200
    finally:
        http.shutdown()
        http.server_close()
        thread.join()


KEY = "k" * 24


@pytest.fixture
def keyed(tmp_path: Path, signing_key, package_factory):
    agent = new_agent(tmp_path, signing_key)
    package = package_factory()
    directory = agent.home.model_dir(package.version_id)
    directory.mkdir(parents=True)
    (directory / "model.onnx").write_bytes(package.model_bytes)
    (directory / "manifest.json").write_text(json.dumps(package.manifest))
    agent.swap(agent.load_package(package.version_id))
    with serving(agent, api_key=KEY) as base:
        yield agent, base


def test_an_api_key_guards_predict_and_metrics_but_not_health(keyed, png) -> None:
    agent, base = keyed
    image = png((250, 0, 0))
    for headers in ({}, {"Authorization": "Bearer wrong-key-wrong-key"},
                    {"X-API-Key": KEY[:-1]}, {"Authorization": KEY}):
        refused = requests.post(f"{base}/v1/predict", data=image, headers=headers, timeout=5)
        assert refused.status_code == 401, headers
        assert refused.headers["WWW-Authenticate"] == "Bearer"
        assert "API key" in refused.json()["error"]
    assert requests.get(f"{base}/metrics", timeout=5).status_code == 401
    assert agent.telemetry.snapshot()["requests"] == 0  # a refused caller is not a prediction
    for headers in ({"Authorization": f"Bearer {KEY}"}, {"X-API-Key": KEY}):
        ok = requests.post(f"{base}/v1/predict", data=image, headers=headers, timeout=5)
        assert ok.status_code == 200 and ok.json()["predictions"][0]["label"] == "red"
    assert requests.get(f"{base}/metrics", headers={"X-API-Key": KEY},
                        timeout=5).status_code == 200
    assert requests.get(f"{base}/healthz", timeout=5).json()["status"] == "ok"


def test_pipelined_keep_alive_and_http_1_0(served) -> None:
    """Two requests in one write are answered in order on the same connection; an HTTP/1.0
    request without keep-alive is answered with ``Connection: close`` and the socket closed."""
    _, base = served
    answer = _raw(base, b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
                        b"GET /nope HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    first, second = answer.split(b"HTTP/1.1 ")[1:]
    assert first.startswith(b"200 OK") and b'"no_model"' in first
    assert second.startswith(b"404") and b"no such path /nope" in second
    assert b"Connection: close" in second
    answer = _raw(base, b"GET /healthz HTTP/1.0\r\n\r\n", wait_s=3.0)
    assert answer.startswith(b"HTTP/1.1 200") and b"Connection: close" in answer


def test_expect_100_continue_is_answered_before_the_body(served, png, package_factory) -> None:
    """curl sends ``Expect: 100-continue`` for bodies over 1 MiB and waits for the interim
    answer (a second, when none comes) before it sends the body."""
    import socket
    from urllib.parse import urlsplit

    agent, base = served
    _with_model(agent, package_factory)
    image = png((0, 250, 0))
    url = urlsplit(base)
    with socket.create_connection((url.hostname, url.port), timeout=5) as conn:
        conn.sendall(b"POST /v1/predict HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n"
                     + f"Content-Length: {len(image)}\r\nConnection: close\r\n\r\n".encode())
        assert conn.recv(100) == b"HTTP/1.1 100 Continue\r\n\r\n"
        conn.sendall(image)
        answer = b""
        while chunk := conn.recv(65536):
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 200")
    assert json.loads(answer.split(b"\r\n\r\n", 1)[1])["predictions"][0]["label"] == "green"


@pytest.mark.parametrize("request_bytes, status, words", [
    (b"GARBAGE\r\n\r\n", b"400", b"malformed HTTP request"),
    # request smuggling: both lengths (RFC 9112, section 6.3)
    (b"POST /v1/predict HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n"
     b"Transfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n", b"400", b"Transfer-Encoding"),
    (b"GET /v1/predict HTTP/1.1\r\nHost: x\r\n\r\n", b"405", b"answers POST only"),
    (b"POST /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n", b"405",
     b"answers GET only"),
    (b"GET /healthz HTTP/1.1\r\n\r\n", b"400", b"needs a Host header"),  # RFC 9112, 3.2
    # a body for a path that takes none: refused before it is read
    (b"POST /nope HTTP/1.1\r\nHost: x\r\nContent-Length: 30000000\r\n\r\n", b"404",
     b"no such path /nope"),
])
def test_malformed_and_misdirected_requests(served, request_bytes, status, words) -> None:
    _, base = served
    answer = _raw(base, request_bytes, wait_s=3.0)
    assert answer.startswith(b"HTTP/1.1 " + status), answer[:200]
    assert words in answer
    if status == b"405":
        assert b"\r\nAllow: " in answer


def test_oversized_headers_are_refused_and_an_upgrade_is_not_taken(
        served, monkeypatch: pytest.MonkeyPatch) -> None:
    """A header block past MAX_HEADER_BYTES is a 431 (never read on without end); a request
    asking for ``Upgrade`` is answered as HTTP/1.1 and its connection closed."""
    from edge_agent import http11

    _, base = served
    monkeypatch.setattr(http11, "MAX_HEADER_BYTES", 1000)
    huge = b"".join(f"X-Filler-{i}: {'v' * 200}\r\n".encode() for i in range(2500))  # ~540 KB
    answer = _raw(base, b"GET /healthz HTTP/1.1\r\nHost: x\r\n" + huge + b"\r\n")
    assert answer.startswith(b"HTTP/1.1 431"), answer[:200]
    answer = _raw(base, b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\n"
                        b"Upgrade: h2c\r\n\r\nPRI * HTTP/2.0\r\n", wait_s=3.0)
    assert answer.startswith(b"HTTP/1.1 200") and answer.count(b"HTTP/1.1") == 1


def test_serve_answers_until_its_stop_event_is_set(tmp_path: Path, signing_key) -> None:
    """The entry point for a service host (a Windows service's SvcStop runs on another thread
    and sets the event; signals set it under ``sampan-agent run``): ``serve`` answers until the
    event is set, then returns 0 and frees its port."""
    from edge_agent.cli import serve

    args, port = standalone_run_args(tmp_path, signing_key)
    stop = threading.Event()
    result: list[int] = []
    thread = threading.Thread(target=lambda: result.append(serve(args, stop)))
    thread.start()

    def health() -> bool:
        try:
            return requests.get(f"http://127.0.0.1:{port}/healthz", timeout=2).ok
        except requests.ConnectionError:
            return False

    try:
        wait_until(health, timeout_s=20, interval_s=0.05, what="the agent to answer")
    finally:
        stop.set()
        thread.join(timeout=10)
    assert not thread.is_alive() and result == [0]
    with socket.socket() as again:  # the listening socket is closed
        again.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        again.bind(("127.0.0.1", port))
        again.listen()
        with socket.socket() as client:
            client.settimeout(2)
            client.connect(("127.0.0.1", port))
            conn, _ = again.accept()  # ours, not the agent's
            conn.close()


def test_head_answers_the_headers_of_get(served) -> None:
    _, base = served
    head = requests.head(f"{base}/healthz", timeout=5)
    get = requests.get(f"{base}/healthz", timeout=5)
    assert head.status_code == 200 and head.content == b""
    assert head.headers["Content-Length"] == get.headers["Content-Length"]
