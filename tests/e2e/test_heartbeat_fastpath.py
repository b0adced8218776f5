"""The heartbeat fast path in the real web server (uvicorn, Redis, the stack's database):
steady-state heartbeats are answered in front of Django and written in batches; a deployment, a
deleted device and a deployment report behave as through Django's view."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from sampan.devstack.client import Client
from sampan.devstack.stack import Stack, wait_until
from tests.database import stack_database_url
from tests.e2e.test_key_rotation import REGISTER
from tests.edge_agent.conftest import build_classifier

pytestmark = pytest.mark.integration


@pytest.fixture
def stack(tmp_path: Path) -> Iterator[tuple[Stack, Client, str]]:
    with Stack(data_dir=tmp_path / "stack", database_url=stack_database_url()) as s:
        s.start(worker=False)
        user = json.loads(s.manage("sampan_user", "--username", "beater", "--password",
                                   "fast-path-e2e-secret").stdout.strip().splitlines()[-1])
        client = Client(s.url, user["token"])
        project = client.post("/api/v1/projects/", {"name": "fast"})
        yield s, client, project["id"]


def _enroll(stack: Stack, client: Client, project_id: str, name: str) -> tuple[str, str]:
    token = client.post(f"/api/v1/projects/{project_id}/enrollment-tokens/", {})["token"]
    reply = requests.post(stack.url + "/api/device/v1/enroll",
                          json={"token": token, "name": name, "info": {}}, timeout=10)
    assert reply.status_code == 201, reply.text
    return reply.json()["device_id"], reply.json()["credential"]


def _beat(stack: Stack, credential: str, **fields: Any) -> requests.Response:
    body = {"device_time": "2026-12-01T10:00:00Z", "agent_version": "0.1.0",
            "current_model_version_id": None,
            "metrics": {"requests": 7, "errors": 1, "latency_ms": {"p50": 1, "p95": 2.5,
                                                                   "p99": 3},
                        "cpu_percent": 4.0, "memory_bytes": 10, "confidence_mean": 0.75},
            "deployment": None, **fields}
    return requests.post(stack.url + "/api/device/v1/heartbeat", json=body, timeout=10,
                         headers={"Authorization": f"Device {credential}"})


def _fast(response: requests.Response) -> bool:
    return response.headers.get("x-sampan-heartbeat") == "fast"


def test_steady_heartbeats_take_the_fast_path_and_see_every_change_at_once(
        stack: tuple[Stack, Client, str], tmp_path: Path) -> None:
    s, client, project_id = stack
    p = f"/api/v1/projects/{project_id}"
    device_id, credential = _enroll(s, client, project_id, "door")
    first = wait_until(lambda: (r := _beat(s, credential)).status_code == 200 and _fast(r)
                       and r, timeout_s=10, what="a heartbeat answered by the fast path")
    assert first.json()["desired"] is None and first.json()["benchmarks"] == []
    assert first.json()["trusted_signing_keys"][0]["public_key"]

    # stored as Django's view stores it, within the write interval
    def stored() -> dict[str, Any] | None:
        device: dict[str, Any] = client.get(f"{p}/devices/{device_id}/")
        return device if device["last_metrics"].get("confidence_mean") == 0.75 else None

    device = wait_until(stored, timeout_s=5, what="the heartbeat to be written")
    assert device["status"] == "online" and device["agent_version"] == "0.1.0"
    assert device["last_metrics"]["latency_ms"] == {"p50": 1.0, "p95": 2.5, "p99": 3.0}
    telemetry = client.get(f"{p}/devices/{device_id}/telemetry/")
    assert telemetry and telemetry[-1]["metrics"]["requests"] == 7

    # a deployment reaches the very next heartbeats (the snapshot is read again)
    onnx = tmp_path / "m.onnx"
    onnx.write_bytes(build_classifier())
    params = json.dumps({"project_id": project_id, "names": ["m"], "onnx": str(onnx)})
    registered = s.manage("shell", "-c", REGISTER.format(params=params), check=False)
    version_id = json.loads(registered.stdout.strip().splitlines()[-1])[0][0]
    (deployment,) = client.post(f"{p}/deployments/", {"model_version_id": version_id,
                                                       "device_ids": [device_id]})
    told = wait_until(lambda: (r := _beat(s, credential)).json()["desired"] and _fast(r) and r,
                      timeout_s=3, what="the fast path to hand out the deployment")
    desired = told.json()["desired"]
    assert desired["deployment_id"] == deployment["id"]
    assert desired["manifest_url"] == (f"{s.url}/api/device/v1/model-versions/{version_id}/"
                                       "manifest.json")
    assert requests.get(desired["manifest_url"], timeout=10, headers={
        "Authorization": f"Device {credential}"}).status_code == 200

    # a deployment report goes through Django's view, and is recorded
    report = _beat(s, credential, current_model_version_id=version_id,
                   deployment={"deployment_id": deployment["id"], "state": "running",
                               "error": ""})
    assert report.status_code == 200 and not _fast(report)
    assert client.get(f"{p}/deployments/{deployment['id']}/")["state"] == "running"
    steady = _beat(s, credential, current_model_version_id=version_id)
    assert _fast(steady) and steady.json()["desired"]["deployment_id"] == deployment["id"]
    # a converged agent repeats its report and runtime on every beat: once stored, fast too
    runtime = {"onnxruntime": "1.32.0", "providers": ["CPUExecutionProvider"]}
    repeated = {"current_model_version_id": version_id, "runtime": runtime,
                "deployment": {"deployment_id": deployment["id"], "state": "running",
                               "error": None}}
    assert not _fast(_beat(s, credential, **repeated))  # the runtime is new: Django stores it
    wait_until(lambda: _fast(_beat(s, credential, **repeated)), timeout_s=5,
               what="the repeated report and runtime to be answered by the fast path")
    assert client.get(f"{p}/devices/{device_id}/")["runtime"]["onnxruntime"] == "1.32.0"

    # anything malformed gets Django's answer, naming the field
    bad = _beat(s, credential, metrics={"requests": -1})
    assert bad.status_code == 400 and bad.json()["error"]["field"].startswith("metrics")
    assert _beat(s, "not-a-credential").status_code == 401

    # a deleted device is refused at once, not after a cache expires
    client.request("DELETE", f"{p}/devices/{device_id}/")
    wait_until(lambda: _beat(s, credential).status_code == 401, timeout_s=2,
               what="the deleted device's credential to be refused")
