"""Deployments: one click to several devices, superseding, desired state, state reports."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import IntegrityError, transaction
from rest_framework.test import APIClient

from sampan.fleet.models import Deployment, DeploymentState


def deploy(owner_api: APIClient, project: Any, version: Any, *devices: Any) -> Any:
    return owner_api.post(f"/api/v1/projects/{project.pk}/deployments/",
                    {"model_version_id": str(version.pk),
                     "device_ids": [str(d.pk) for d in devices]}, format="json")


def report(heartbeat: Any, client: APIClient, deployment_id: Any, state: str,
           error: str | None = None, current: Any = None) -> Any:
    response = heartbeat(client, current_model_version_id=str(current) if current else None,
                         deployment={"deployment_id": str(deployment_id), "state": state,
                                     "error": error})
    assert response.status_code == 200, response.content
    return response.json()


def test_deploy_to_two_devices_gives_each_its_desired_state(
        owner_api: APIClient, project: Any, owner: Any, model_version: Any, enrolled: Any,
        heartbeat: Any) -> None:
    version = model_version(b"abc" * 1000)
    one, one_client = enrolled("one")
    two, two_client = enrolled("two")
    response = deploy(owner_api, project, version, one, two)
    assert response.status_code == 201, response.content
    created = response.json()
    assert [(d["device_name"], d["state"], d["model_version"]["id"]) for d in created] == [
        ("one", "pending", str(version.pk)), ("two", "pending", str(version.pk))]
    assert created[0]["created_by"] == "alice"

    desired = heartbeat(one_client).json()["desired"]
    base = f"http://testserver/api/device/v1/model-versions/{version.pk}"
    assert desired == {"deployment_id": created[0]["id"], "model_version_id": str(version.pk),
                       "manifest_url": f"{base}/manifest.json",
                       "artifact_url": f"{base}/model.onnx",
                       "sha256": version.model_sha256, "size": 3000}
    assert heartbeat(two_client).json()["desired"]["deployment_id"] == created[1]["id"]

    listed = owner_api.get(f"/api/v1/projects/{project.pk}/deployments/").json()
    assert {d["id"] for d in listed} == {created[0]["id"], created[1]["id"]}
    detail = owner_api.get(f"/api/v1/projects/{project.pk}/deployments/{created[0]['id']}/").json()
    assert detail["device_id"] == str(one.pk)


def test_new_deployment_supersedes_the_previous(owner_api: APIClient, project: Any,
                                                model_version: Any, enrolled: Any,
                                                heartbeat: Any) -> None:
    v1, v2 = model_version(b"v1"), model_version(b"v2")
    device, client = enrolled()
    first = deploy(owner_api, project, v1, device).json()[0]
    report(heartbeat, client, first["id"], "running", current=v1.pk)
    second = deploy(owner_api, project, v2, device).json()[0]
    assert Deployment.objects.get(pk=first["id"]).state == DeploymentState.SUPERSEDED
    assert Deployment.objects.get(pk=second["id"]).state == DeploymentState.PENDING
    # A late report about the superseded deployment is ignored; the reply names the new one.
    reply = report(heartbeat, client, first["id"], "running", current=v1.pk)
    assert reply["desired"]["deployment_id"] == second["id"]
    assert Deployment.objects.get(pk=first["id"]).state == DeploymentState.SUPERSEDED
    active = owner_api.get(f"/api/v1/projects/{project.pk}/deployments/",
                     {"device": str(device.pk), "active": "true"}).json()
    assert [d["id"] for d in active] == [second["id"]]
    with pytest.raises(IntegrityError), transaction.atomic():
        Deployment.objects.create(project=project, device=device, model_version=v1)


def test_state_reports_move_the_deployment_and_the_current_model(
        owner_api: APIClient, project: Any, model_version: Any, enrolled: Any,
        heartbeat: Any) -> None:
    version = model_version()
    device, client = enrolled()
    deployment_id = deploy(owner_api, project, version, device).json()[0]["id"]
    report(heartbeat, client, deployment_id, "downloading", error="timeout (retrying)")
    row = Deployment.objects.get(pk=deployment_id)
    assert (row.state, row.error, row.finished_at) == ("downloading", "timeout (retrying)", None)
    report(heartbeat, client, deployment_id, "verifying")
    report(heartbeat, client, deployment_id, "running", current=version.pk)
    row.refresh_from_db()
    assert (row.state, row.error) == ("running", "")
    assert row.finished_at is not None
    device.refresh_from_db()
    assert device.current_model_version_id == version.pk
    # running never goes back to downloading
    report(heartbeat, client, deployment_id, "downloading", current=version.pk)
    assert Deployment.objects.get(pk=deployment_id).state == DeploymentState.RUNNING
    body = owner_api.get(f"/api/v1/projects/{project.pk}/devices/{device.pk}/").json()
    assert body["current_model_version"]["id"] == str(version.pk)
    assert body["deployment"]["state"] == "running"


def test_running_report_sets_current_model_version_even_without_the_current_id(
        owner_api: APIClient, project: Any, model_version: Any, enrolled: Any,
        heartbeat: Any) -> None:
    version = model_version()
    device, client = enrolled()
    deployment_id = deploy(owner_api, project, version, device).json()[0]["id"]
    report(heartbeat, client, deployment_id, "running", current=None)
    device.refresh_from_db()
    assert device.current_model_version_id == version.pk


def test_failed_report_keeps_the_reason_and_the_previous_model(
        owner_api: APIClient, project: Any, model_version: Any, enrolled: Any,
        heartbeat: Any) -> None:
    good, bad = model_version(b"good"), model_version(b"bad")
    device, client = enrolled()
    first = deploy(owner_api, project, good, device).json()[0]["id"]
    report(heartbeat, client, first, "running", current=good.pk)
    second = deploy(owner_api, project, bad, device).json()[0]["id"]
    reply = report(heartbeat, client, second, "failed", error="sha256 mismatch", current=good.pk)
    row = Deployment.objects.get(pk=second)
    assert (row.state, row.error) == ("failed", "sha256 mismatch")
    device.refresh_from_db()
    assert device.current_model_version_id == good.pk
    # The failed deployment stays the desired state; the agent decides whether to retry.
    assert reply["desired"]["deployment_id"] == second
    detail = owner_api.get(f"/api/v1/projects/{project.pk}/deployments/{second}/").json()
    assert (detail["state"], detail["error"]) == ("failed", "sha256 mismatch")


def test_a_device_cannot_report_another_devices_deployment(
        owner_api: APIClient, project: Any, model_version: Any, enrolled: Any,
        heartbeat: Any) -> None:
    version = model_version()
    one, _ = enrolled("one")
    _, two_client = enrolled("two")
    deployment_id = deploy(owner_api, project, version, one).json()[0]["id"]
    report(heartbeat, two_client, deployment_id, "failed", error="forged")
    row = Deployment.objects.get(pk=deployment_id)
    assert (row.state, row.error) == ("pending", "")


def test_model_version_of_another_project_is_refused(
        owner_api: APIClient, project: Any, model_version: Any, enrolled: Any) -> None:
    from sampan.accounts.services import project_create, user_create

    stranger = user_create(username="mallory", password="pw")
    foreign = model_version(target=project_create(user=stranger, name="other"))
    device, _ = enrolled()
    response = deploy(owner_api, project, foreign, device)
    assert response.status_code == 404
    assert response.json()["error"]["field"] == "model_version_id"
    assert not Deployment.objects.exists()


def test_unknown_device_is_refused_and_nothing_is_written(
        owner_api: APIClient, project: Any, model_version: Any, enrolled: Any) -> None:
    version = model_version()
    device, _ = enrolled()
    response = owner_api.post(f"/api/v1/projects/{project.pk}/deployments/",
                        {"model_version_id": str(version.pk),
                         "device_ids": [str(device.pk), "00000000-0000-0000-0000-00000000beef"]},
                        format="json")
    assert response.status_code == 404
    error = response.json()["error"]
    assert error["field"] == "device_ids"
    assert error["details"] == {"missing": ["00000000-0000-0000-0000-00000000beef"]}
    assert not Deployment.objects.exists()


def test_empty_device_list_is_a_bad_request(owner_api: APIClient, project: Any,
                                            model_version: Any) -> None:
    response = owner_api.post(f"/api/v1/projects/{project.pk}/deployments/",
                        {"model_version_id": str(model_version().pk), "device_ids": []},
                        format="json")
    assert response.status_code == 400
    assert response.json()["error"]["field"] == "device_ids"
