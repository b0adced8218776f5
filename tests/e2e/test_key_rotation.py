"""Rotating the model-signing key with a real agent process running (docs/deploy.md).

A real web server and a real ``sampan-agent`` process; model versions are registered (and so
signed) by separate ``manage.py`` processes, as a worker host would. A package signed before the
rotation and one signed after it both install; after the old key is retired, a package it signed
is refused and the agent keeps serving what it runs.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sampan.devstack.client import Client
from sampan.devstack.mainjob import agent_serving, deploy_and_wait
from sampan.devstack.stack import Stack, wait_until
from tests.database import stack_database_url
from tests.edge_agent.conftest import build_classifier

pytestmark = pytest.mark.integration

REGISTER = """
import json
from pathlib import Path
from sampan.accounts.models import Project
from sampan.registry.services import model_version_register
params = json.loads({params!r})
project = Project.objects.get(pk=params["project_id"])
signed = []
for name in params["names"]:
    version = model_version_register(
        project=project, model_name=name, task_type="image_classification",
        labels=["red", "green", "blue"], onnx_path=Path(params["onnx"]),
        preprocessing={{"size": [8, 8], "resize": "stretch", "mean": [0.5, 0.5, 0.5],
                       "std": [0.5, 0.5, 0.5], "colour_order": "RGB", "layout": "NCHW",
                       "dtype": "float32"}},
        input_shape=["N", 3, 8, 8], metrics={{}}, lineage={{}},
        onnx_info={{"opset": 18, "ir_version": 10}}, pretrained=False)
    signed.append([str(version.pk), version.manifest["signature"]["key_id"]])
print(json.dumps(signed))
"""


@pytest.fixture
def running(tmp_path: Path) -> Iterator[tuple[Stack, Client, str]]:
    with Stack(data_dir=tmp_path / "stack", database_url=stack_database_url(),
               extra_env={"SAMPAN_DEVICE_HEARTBEAT_INTERVAL_S": "1"}) as stack:
        stack.start(worker=False)
        user = json.loads(stack.manage("sampan_user", "--username", "rotator", "--password",
                                       "rotation-e2e-secret").stdout.strip().splitlines()[-1])
        client = Client(stack.url, user["token"])
        project = client.post("/api/v1/projects/", {"name": "rotation"})
        token = client.post(f"/api/v1/projects/{project['id']}/enrollment-tokens/", {})
        stack.enroll_agent(token["token"])
        stack.start_agent()
        yield stack, client, project["id"]


def _register(stack: Stack, project_id: str, names: list[str], onnx: Path) -> list[list[str]]:
    params = json.dumps({"project_id": project_id, "names": names, "onnx": str(onnx)})
    result = stack.manage("shell", "-c", REGISTER.format(params=params), check=False)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def _signing_key(stack: Stack, *args: str) -> Any:
    result = stack.manage("sampan_signing_key", *args, check=False)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def _trusted_by_agent(stack: Stack) -> list[str]:
    return json.loads((stack.agent_home / "agent.json").read_text())["trusted_signing_keys"]


def test_rotate_then_retire_with_a_running_agent(running: tuple[Stack, Client, str],
                                                 tmp_path: Path) -> None:
    stack, client, project_id = running
    p = f"/api/v1/projects/{project_id}"
    (device,) = client.get(f"{p}/devices/")

    def deploy(version_id: str) -> dict[str, Any]:
        return deploy_and_wait(client, p, version_id, device["id"], timeout_s=60)

    def serving() -> str | None:
        return agent_serving(stack)

    onnx = tmp_path / "model.onnx"
    onnx.write_bytes(build_classifier())
    (a, a_id), (b, b_id), (c, c_id) = _register(stack, project_id, ["a", "b", "c"], onnx)
    assert a_id == b_id == c_id  # all signed with the first key
    old_key = a_id
    assert deploy(a)["state"] == "running" and serving() == a

    rotated = _signing_key(stack, "rotate")
    assert rotated["previous"] == old_key
    new_key = rotated["active"]
    ((d, d_id),) = _register(stack, project_id, ["d"], onnx)
    assert d_id == new_key  # the signer process picked up the rotated key file

    # signed before the rotation, installed after it
    assert deploy(b)["state"] == "running" and serving() == b
    # signed after the rotation: the agent learnt the new key from a heartbeat
    assert deploy(d)["state"] == "running" and serving() == d
    assert len(_trusted_by_agent(stack)) == 2

    assert _signing_key(stack, "retire", old_key) == {"retired": old_key,
                                                      "signed_model_versions": 3}
    wait_until(lambda: len(_trusted_by_agent(stack)) == 1, timeout_s=30,
               what="the agent to drop the retired key")
    refused = deploy(c)
    assert refused["state"] == "failed"
    assert f"manifest signed by another key ('{old_key}'); this device trusts '{new_key}'" in (
        refused["error"])
    assert serving() == d  # still serving the version it runs
