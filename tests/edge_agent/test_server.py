"""The local HTTP API in-process: status codes for the cases the process test does not reach."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
import requests

from edge_agent.agent import Agent
from edge_agent.home import AgentConfig, AgentHome
from edge_agent.server import make_server


@pytest.fixture
def served(tmp_path: Path, signing_key):
    home = AgentHome(tmp_path / "agent")
    config = AgentConfig("http://127.0.0.1:9", "device-1", "cred", signing_key.public_b64)
    agent = Agent(home, config)
    server = make_server(agent, "127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    host, port = server.server_address[:2]
    yield agent, f"http://{host}:{port}"
    server.shutdown()
    server.server_close()
    thread.join()


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
    assert requests.get(f"{base}/nope", timeout=5).status_code == 404
    assert requests.post(f"{base}/nope", data=b"x", timeout=5).status_code == 404
