"""Review probes of edge_agent/server.py after "Agent HTTP API, review mend" (63d8718).
A stub agent (predict/health/telemetry) keeps them fast; each test states the expected answer."""
from __future__ import annotations

import socket
import threading
import time

import pytest

import edge_agent.server as S
from tests.edge_agent.test_server import read_until_closed


class _Telemetry:
    def exposition(self) -> bytes:
        return b"# x\n"


class _Stub:
    telemetry = _Telemetry()
    delay = 0.0

    def health(self):
        return {"status": "ok", "model_version_id": "m"}

    def predict(self, body, top_k=5, score_threshold=None):
        time.sleep(self.delay)  # a slow prediction (the stimulus)
        return {"n": len(body)}


@pytest.fixture
def served():
    agent = _Stub()
    http = S.make_server(agent, "127.0.0.1", 0)  # type: ignore[arg-type]
    thread = threading.Thread(target=http.serve_forever, kwargs={"poll_interval": 0.05},
                              daemon=True)
    thread.start()
    yield http, agent
    http.shutdown()
    http.server_close()


def test_a_pipelined_request_sent_in_time_is_not_408_behind_slow_predictions(served, monkeypatch):
    """The 4th request's head is sent with the 3 predictions (it began in the same read) and
    completed 0.2 s later; its header clock (_started) runs while the server predicts."""
    http, agent = served
    monkeypatch.setattr(S._Handler, "timeout", 2.0)  # READ_TIMEOUT_S scaled down
    agent.delay = 1.0
    with socket.create_connection(http.server_address[:2]) as conn:
        conn.sendall(b"POST /v1/predict HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\nx" * 3
                     + b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
        time.sleep(0.2)  # the rest in a later read (the stimulus, not a wait)
        conn.sendall(b"Connection: close\r\n\r\n")
        answer = read_until_closed(conn, 8)
    assert answer.count(b"HTTP/1.1 200") == 4, answer[-200:]


def test_an_upgrade_offer_pipelined_after_a_request_is_answered(served):
    http, _ = served
    with socket.create_connection(http.server_address[:2]) as conn:
        conn.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
                     b"GET /healthz HTTP/1.1\r\nHost: x\r\nUpgrade: foo\r\nConnection: upgrade"
                     b"\r\n\r\n")
        answer = read_until_closed(conn, 2)
    assert answer.count(b"HTTP/1.1 200") == 2, answer


def test_head_with_a_body_is_not_refused_as_a_method_its_allow_names(served):
    http, _ = served
    with socket.create_connection(http.server_address[:2]) as conn:
        conn.sendall(b"HEAD /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\nx")
        answer = read_until_closed(conn, 2)
    assert not answer.startswith(b"HTTP/1.1 405"), answer


@pytest.mark.parametrize("chunk, total", [(1024, 32 << 20), (256, 8 << 20)])
def test_a_chunked_upload_in_small_chunks_is_served(served, chunk, total):
    """Chunk framing counts against MAX_HEADER_BYTES (64 KiB): ~7 bytes a chunk, so a body
    under MAX_BODY_BYTES in 1 KiB chunks is 431 once the headers came in their own read."""
    http, _ = served
    with socket.create_connection(http.server_address[:2]) as conn:
        conn.sendall(b"POST /v1/predict HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
                     b"Connection: close\r\n\r\n")
        time.sleep(0.2)  # the rest in a later read (the stimulus, not a wait)
        piece = b"%x\r\n" % chunk + b"a" * chunk + b"\r\n"

        def write():
            try:
                for _ in range(total // chunk):
                    conn.sendall(piece)
                conn.sendall(b"0\r\n\r\n")
            except OSError:
                pass
        threading.Thread(target=write, daemon=True).start()
        answer = read_until_closed(conn, 20)
    assert answer.startswith(b"HTTP/1.1 200"), answer[:120]


def test_an_error_outside_predict_is_answered_500(served, monkeypatch):
    http, agent = served
    monkeypatch.setattr(agent, "health", lambda: 1 / 0, raising=False)
    with socket.create_connection(http.server_address[:2]) as conn:
        conn.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        answer = read_until_closed(conn, 2)
    assert answer.startswith(b"HTTP/1.1 500"), answer
