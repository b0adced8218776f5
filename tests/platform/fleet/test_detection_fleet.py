"""Object detection versions in the fleet: compatibility, one-click deploy, the detections a
heartbeat counts, and a real agent process serving a deployed detector."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import requests
from rest_framework.test import APIClient

from sampan.devstack.stack import wait_until
from sampan.fleet import services
from sampan.fleet.compatibility import model_incompatibilities
from sampan.fleet.models import Deployment, DeploymentState, Device, Telemetry
from tests.edge_agent.conftest import encoded_image
from tests.edge_agent.test_agent_process import enroll, free_port, running_agent
from tests.fixtures.detection_models import detection_version


def deploy(owner_api: APIClient, project: Any, version: Any, *devices: Any) -> Any:
    return owner_api.post(f"/api/v1/projects/{project.pk}/deployments/",
                          {"model_version_id": str(version.pk),
                           "device_ids": [str(d.pk) for d in devices]}, format="json")


@pytest.mark.django_db
def test_detection_packages_are_judged_by_opset_ir_and_providers(project: Any) -> None:
    manifest = detection_version(project).manifest
    assert model_incompatibilities(manifest, {"onnxruntime": "1.20.1",
                                              "providers": ["CPUExecutionProvider"]}) == []
    old = model_incompatibilities(manifest, {"onnxruntime": "1.16.3"})
    # opset 18 is within 1.16's 19; IR version 10 is past its 9
    assert [reason.split(";")[0] for reason in old] == [
        "the model needs onnxruntime >= 1.17.0", "the model has ONNX IR version 10"]
    gpu = detection_version(project, onnx={"opset": 18, "ir_version": 10,
                                           "execution_providers": ["CUDAExecutionProvider"]})
    assert model_incompatibilities(gpu.manifest, {"onnxruntime": "1.20.1",
                                                  "providers": ["CPUExecutionProvider"]}) == [
        "the model needs the execution provider(s) CUDAExecutionProvider; the device offers "
        "CPUExecutionProvider"]


@pytest.mark.django_db
def test_one_click_deploys_a_detection_version(owner_api: APIClient, project: Any,
                                               enrolled: Any, heartbeat: Any) -> None:
    version = detection_version(project)
    device, client = enrolled()
    heartbeat(client, runtime={"onnxruntime": "1.20.1", "providers": ["CPUExecutionProvider"]})
    response = deploy(owner_api, project, version, device)
    assert response.status_code == 201, response.content
    desired = heartbeat(client).json()["desired"]
    assert (desired["model_version_id"], desired["sha256"]) == (str(version.pk),
                                                                version.model_sha256)
    manifest = client.get(f"/api/device/v1/model-versions/{version.pk}/manifest.json")
    assert manifest.status_code == 200
    served = json.loads(b"".join(manifest.streaming_content) if manifest.streaming
                        else manifest.content)
    assert served["task"] == "object_detection" and served["detection"]["nms_iou"] == 0.6
    assert served == version.manifest

    old, old_client = enrolled("old")
    heartbeat(old_client, runtime={"onnxruntime": "1.16.0"})
    refused = deploy(owner_api, project, version, old)
    assert refused.status_code == 400
    assert refused.json()["error"]["field"] == "device_ids"
    assert list(refused.json()["error"]["details"]["incompatible"]) == [str(old.pk)]


@pytest.mark.django_db
def test_heartbeats_store_the_detections_counted(enrolled: Any, heartbeat: Any) -> None:
    device, client = enrolled()
    metrics = {"requests": 3, "errors": 0, "latency_ms": {"p50": 9.0, "p95": 12.0, "p99": 13.0},
               "cpu_percent": 40.0, "memory_bytes": 90_000_000, "detections": 47,
               "detections_by_class": {f"class-{n:02d}": n for n in range(25)}}
    assert heartbeat(client, metrics=metrics).status_code == 200
    device.refresh_from_db()
    stored = device.last_metrics
    assert stored["detections"] == 47
    # a device that sends more than 20 classes: the 20 largest counts are kept
    assert stored["detections_by_class"] == {f"class-{n:02d}": n for n in range(24, 4, -1)}
    assert Telemetry.objects.get(device=device).metrics == stored

    for bad in ({"detections": -1}, {"detections": "many"},
                {"detections_by_class": {"car": -2}}, {"detections_by_class": ["car"]}):
        response = heartbeat(client, metrics={**metrics, **bad})
        assert response.status_code == 400, bad
        assert response.json()["error"]["field"] == "metrics"


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_a_real_agent_runs_a_deployed_detector_and_reports_its_detections(
        live_server: Any, settings: Any, project: Any, owner: Any, tmp_path: Path) -> None:
    settings.SAMPAN_DEVICE_HEARTBEAT_INTERVAL_S = 0.3
    issued = services.enrollment_token_create(project=project, user=owner,
                                              expires_in=timedelta(minutes=5))
    home, port = tmp_path / "agent", free_port()
    result = enroll(live_server.url, home, issued.secret)
    assert result.returncode == 0, result.stderr
    device = Device.objects.get(pk=json.loads((home / "agent.json").read_text())["device_id"])
    version = detection_version(project)
    owner_api = APIClient()
    owner_api.force_authenticate(owner)
    created = deploy(owner_api, project, version, device)
    assert created.status_code == 201, created.content
    deployment_id = created.json()[0]["id"]

    with running_agent(home, port, tmp_path / "agent.log"):
        wait_until(lambda: Deployment.objects.get(pk=deployment_id).state
                   == DeploymentState.RUNNING, timeout_s=60, what="the deployment to run")
        body = requests.post(f"http://127.0.0.1:{port}/v1/predict",
                             data=encoded_image(640, 360), timeout=10).json()
        assert body["model_version_id"] == str(version.pk)
        assert [(d["label"], d["box"]) for d in body["detections"]] == [
            ("person", [20.0, 40.0, 120.0, 200.0]), ("car", [100.0, 300.0, 200.0, 340.0])]
        wait_until(lambda: Telemetry.objects.filter(device=device,
                                                    metrics__detections=2).exists(),
                   timeout_s=30, what="a heartbeat counting the 2 detections")
    device.refresh_from_db()
    assert device.current_model_version_id == version.pk
    row = Telemetry.objects.filter(device=device, metrics__detections=2).first()
    assert row is not None and row.metrics["detections_by_class"] == {"car": 1, "person": 1}
