"""Device tags (groups): set them, filter the fleet by one, deploy to every device with one."""

from __future__ import annotations

from typing import Any

from rest_framework.test import APIClient

from sampan.accounts.models import AuditEvent
from sampan.fleet.models import Deployment


def tag(owner_api: APIClient, project: Any, device: Any, tags: Any) -> Any:
    return owner_api.patch(f"/api/v1/projects/{project.pk}/devices/{device.pk}/",
                           {"tags": tags}, format="json")


def test_tags_are_set_listed_filtered_and_audited(owner_api: APIClient, project: Any,
                                                  enrolled: Any) -> None:
    one, _ = enrolled("one")
    two, _ = enrolled("two")
    response = tag(owner_api, project, one, ["line-3", "canary", "line-3"])
    assert response.status_code == 200, response.content
    assert response.json()["tags"] == ["line-3", "canary"]  # duplicates dropped, order kept
    assert tag(owner_api, project, two, ["line-3"]).json()["tags"] == ["line-3"]
    base = f"/api/v1/projects/{project.pk}/devices/"
    assert [d["name"] for d in owner_api.get(base + "?tag=line-3").json()] == ["one", "two"]
    assert [d["name"] for d in owner_api.get(base + "?tag=canary").json()] == ["one"]
    assert owner_api.get(base + "?tag=nowhere").json() == []
    event = AuditEvent.objects.filter(action="device.update").order_by("created_at").first()
    assert event is not None and event.details["tags"] == [[], ["line-3", "canary"]]


def test_bad_tags_are_refused_naming_the_field(owner_api: APIClient, project: Any,
                                               enrolled: Any) -> None:
    device, _ = enrolled()
    for bad in (["has space"], ["-leading"], ["x" * 51], ["ok"] * 21, "line-3", [""], [3]):
        response = tag(owner_api, project, device, bad)
        assert response.status_code == 400, (bad, response.content)
        assert response.json()["error"]["field"].startswith("tags"), response.json()
    device.refresh_from_db()
    assert device.tags == []
    query = owner_api.get(f"/api/v1/projects/{project.pk}/devices/?tag=a%20b")
    assert query.status_code == 400 and query.json()["error"]["field"] == "tag"


def test_a_viewer_cannot_tag(project: Any, enrolled: Any, member: Any) -> None:
    device, _ = enrolled()
    viewer = APIClient()
    viewer.force_authenticate(member("victor", "viewer"))
    assert tag(viewer, project, device, ["x"]).status_code == 403


def test_deploy_to_a_group_reaches_every_device_with_the_tag_and_no_other(
        owner_api: APIClient, project: Any, model_version: Any, enrolled: Any,
        heartbeat: Any) -> None:
    version = model_version(b"abc" * 100)
    one, one_client = enrolled("one")
    two, _ = enrolled("two")
    other, other_client = enrolled("other")
    for device in (one, two):
        tag(owner_api, project, device, ["line-3"])
    url = f"/api/v1/projects/{project.pk}/deployments/"
    response = owner_api.post(url, {"model_version_id": str(version.pk), "tag": "line-3"},
                              format="json")
    assert response.status_code == 201, response.content
    assert sorted(d["device_name"] for d in response.json()) == ["one", "two"]
    assert heartbeat(one_client).json()["desired"]["model_version_id"] == str(version.pk)
    assert heartbeat(other_client).json()["desired"] is None
    assert not Deployment.objects.filter(device=other).exists()

    missing = owner_api.post(url, {"model_version_id": str(version.pk), "tag": "nowhere"},
                             format="json")
    assert missing.status_code == 404 and missing.json()["error"]["field"] == "tag"
    both = owner_api.post(url, {"model_version_id": str(version.pk), "tag": "line-3",
                                "device_ids": [str(one.pk)]}, format="json")
    assert both.status_code == 400 and both.json()["error"]["field"] == "device_ids"
    neither = owner_api.post(url, {"model_version_id": str(version.pk)}, format="json")
    assert neither.status_code == 400
