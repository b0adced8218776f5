"""Adversarial checks of the agent's HTTP API that PASS on b63726f/8be5fd1 (what held up)."""

from __future__ import annotations

import socket
import threading
from collections import Counter

import pytest
import requests

import edge_agent.server as server
from tests.edge_agent.test_server import _with_model, new_agent
from sampan.devstack.stack import wait_until
from tests.edge_agent.test_server import read_until_closed as _read
from tests.edge_agent.test_server_adversarial import KEY, Running


@pytest.fixture
def agent(tmp_path, signing_key, package_factory):
    agent = new_agent(tmp_path, signing_key)
    _with_model(agent, package_factory)
    return agent


P = b"POST /v1/predict HTTP/1.1\r\nHost: x\r\n"


@pytest.mark.parametrize("request_bytes, status", [
    (P + b"Content-Length: +3\r\n\r\nabc", b"400"),
    (P + b"Content-Length: 3\r\nContent-Length: 4\r\n\r\nabcd", b"400"),
    (P + b"Content-Length: 3\r\nContent-Length: 3\r\n\r\nabc", b"400"),
    (P + b"Content-Length: 3, 3\r\n\r\nabc", b"400"),
    (P + b"Content-Length: 99999999999999999999999\r\n\r\n", b"400"),
    # leading zeros: read as 3 bytes, answered "unsupported format"
    (P + b"Content-Length: 0003\r\n\r\nabc",
     b"400 Bad Request\r\nContent-Type: application/json\r\nContent-Length: 41"),
    (P + b"Transfer-Encoding: chunked, gzip\r\n\r\n3\r\nabc\r\n0\r\n\r\n", b"400"),
    (P + b"Transfer-Encoding: xchunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n", b"400"),
    (P + b"Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", b"400"),
    (P + b"Transfer-Encoding: identity\r\nContent-Length: 3\r\n\r\nabc", b"400"),
    (P + b"Transfer-Encoding: identity\r\n\r\nabc", b"411"),
    (P + b"Transfer-Encoding : chunked\r\n\r\n0\r\n\r\n", b"400"),
    (P + b"Transfer-Encoding: chunked\r\n\r\n3\nabc\n0\n\n", b"400"),
    (b"GET /healthz HTTP/1.1\nHost: x\n\n", b"400"),
    (b"GET /healthz HTTP/1.1\r\nHost: x\r\n folded\r\n\r\n", b"400"),
    (b"GET /healthz HTTP/1.1\r\nHost: x\r\nX: a\x00b\r\n\r\n", b"400"),
    (b"GET /he\xffalthz HTTP/1.1\r\nHost: x\r\n\r\n", b"400"),
    (b"get /healthz HTTP/1.1\r\nHost: x\r\n\r\n", b"400"),
    (b"GET /healthz HTTP/1.2\r\nHost: x\r\n\r\n", b"400"),
    (b"CONNECT x:443 HTTP/1.1\r\nHost: x\r\n\r\n", b"400"),
    (b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", b"400"),
    (b"OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n", b"404"),
    (b"GET /%68ealthz HTTP/1.1\r\nHost: x\r\n\r\n", b"404"),
    (b"POST http://x/healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n", b"405"),
    (b"GET /healthz\r\n\r\n", b"200"),  # HTTP/0.9-style line: answered, then closed
])
def test_framing_and_target_edge_cases(agent, request_bytes, status) -> None:
    with Running(agent) as running:
        with socket.create_connection(running.address, timeout=5) as conn:
            conn.sendall(request_bytes)
            answer = _read(conn, 1.0)
    assert answer.startswith(b"HTTP/1.1 " + status), answer[:200]


def test_no_100_continue_before_a_refusal_and_auth_per_request(agent, png) -> None:
    image = png((0, 250, 0))
    key = KEY.encode()
    with Running(agent, api_key=KEY) as running:
        for head, status in [(b"X-API-Key: nope\r\nContent-Length: 10\r\n", b"401"),
                             (b"X-API-Key: " + key + b"\r\nContent-Length: 99999999999\r\n",
                              b"413")]:
            with socket.create_connection(running.address, timeout=5) as conn:
                conn.sendall(P + b"Expect: 100-continue\r\n" + head + b"\r\n")
                assert _read(conn, 1.0).startswith(b"HTTP/1.1 " + status)
        with socket.create_connection(running.address, timeout=5) as conn:
            conn.sendall(P + b"X-API-Key: " + key + f"\r\nContent-Length: {len(image)}\r\n\r\n"
                         .encode() + image + b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
            answer = _read(conn, 2.0)
        assert answer.startswith(b"HTTP/1.1 200") and b"HTTP/1.1 401" in answer
        assert answer.count(b"HTTP/1.1 ") == 2


def test_refusals_reach_a_client_that_keeps_sending(agent) -> None:
    big = b"\x89PNG" + b"x" * (40 * 1024 * 1024)
    with Running(agent, api_key=KEY) as running:
        base = f"http://{running.address[0]}:{running.address[1]}"
        assert requests.post(f"{base}/v1/predict", data=big, timeout=10).status_code == 401
        assert requests.post(f"{base}/v1/predict", data=big, headers={"X-API-Key": KEY},
                             timeout=10).status_code == 413


def test_abrupt_closes_free_their_slots_and_a_pipeline_flood_ends(agent, monkeypatch) -> None:
    monkeypatch.setattr(server._Handler, "timeout", 1.0)
    with Running(agent) as running:
        for _ in range(5):
            with socket.create_connection(running.address) as conn:
                conn.sendall(P + b"Content-Length: 1000\r\n\r\nabc")
            conn = socket.create_connection(running.address)
            conn.sendall(P + b"Transfer-Encoding: chunked\r\n\r\n10\r\nabc")
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\0\0\0\0\0\0\0")
            conn.close()  # RST
        # a client pipelining without reading: the thread ends once its send times out
        flood = socket.create_connection(running.address, timeout=5)
        flood.settimeout(0.5)
        try:
            for _ in range(200):
                flood.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n" * 1000)
        except OSError:
            pass
        wait_until(lambda: running.http._slots._value == server.MAX_CONNECTIONS, timeout_s=10,
                   interval_s=0.1, what="every connection slot to be free again")
        flood.close()


def test_more_clients_than_max_connections_at_once(agent, png) -> None:
    image = png((0, 250, 0))
    with Running(agent) as running:
        base = f"http://{running.address[0]}:{running.address[1]}"
        results: list = []

        def client() -> None:
            try:
                with requests.Session() as session:
                    for _ in range(5):
                        results.append(session.post(f"{base}/v1/predict", data=image,
                                                    timeout=20).status_code)
            except requests.RequestException as error:
                results.append(type(error).__name__)

        threads = [threading.Thread(target=client) for _ in range(48)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert set(Counter(results)) <= {200, 503}, Counter(results)
