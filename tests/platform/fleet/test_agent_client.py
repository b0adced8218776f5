"""The real edge agent HTTP client (edge_agent.client) against a live server: enroll, heartbeat,
manifest, and a resumed Range download. Catches drift between the two sides of contracts.md."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from edge_agent.client import DeviceClient, TerminalError, enroll
from sampan.fleet import services
from sampan.fleet.models import Deployment, DeploymentState

CONTENT = bytes(range(251)) * 300  # 75300 bytes


@pytest.mark.integration
def test_agent_client_enrolls_heartbeats_and_resumes_a_download(
        live_server: Any, project: Any, owner: Any, model_version: Any, tmp_path: Path) -> None:
    issued = services.enrollment_token_create(project=project, user=owner,
                                              expires_in=timedelta(minutes=5))
    reply = enroll(live_server.url, issued.secret, "pi-5", {"arch": "aarch64"})
    with pytest.raises(TerminalError, match="HTTP 401"):
        enroll(live_server.url, issued.secret, "pi-5-again", {})
    client = DeviceClient(live_server.url, reply["credential"])
    try:
        version = model_version(CONTENT)
        [deployment] = services.deployment_create(project=project, user=owner,
                                                  model_version_id=version.pk,
                                                  device_ids=[reply["device_id"]])
        beat = client.heartbeat({"device_time": "2026-11-29T12:00:00Z", "agent_version": "0.1.0",
                                 "current_model_version_id": None, "metrics": {},
                                 "deployment": None})
        desired = beat["desired"]
        assert desired["artifact_url"].startswith(live_server.url + "/api/device/v1/")
        manifest = client.get_json(desired["manifest_url"], "manifest")
        assert manifest["model"]["version_id"] == str(version.pk)

        part = tmp_path / "model.onnx.part"
        # An interrupted earlier attempt, marked so that a resume (206) is told apart from a
        # restart (200 rewrites the file from byte 0).
        part.write_bytes(b"\0" * 30000)
        client.download(desired["artifact_url"], part, desired["size"])
        assert part.read_bytes() == b"\0" * 30000 + CONTENT[30000:]

        client.heartbeat({"current_model_version_id": str(version.pk), "metrics": {},
                          "deployment": {"deployment_id": desired["deployment_id"],
                                         "state": "running", "error": None}})
        assert Deployment.objects.get(pk=deployment.pk).state == DeploymentState.RUNNING
    finally:
        client.close()
