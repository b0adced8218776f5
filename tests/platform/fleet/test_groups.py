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


def test_the_device_list_pages_and_filters_for_a_big_fleet(owner_api: APIClient, project: Any,
                                                          enrolled: Any, heartbeat: Any,
                                                          model_version: Any) -> None:
    """The console's fleet table asks one page at a time (by name) with the total in
    X-Total-Count, filtered by name, status, tag and model version."""
    import hashlib

    from sampan.fleet.models import Device

    Device.objects.bulk_create(
        Device(project=project, name=f"cam-{i:03d}",
               credential_sha256=hashlib.sha256(f"c{i}".encode()).hexdigest(),
               tags=["line-3"] if i % 10 == 0 else []) for i in range(120))
    version = model_version()
    Device.objects.filter(name__in=["cam-007", "cam-100"]).update(current_model_version=version)
    base = f"/api/v1/projects/{project.pk}/devices/"
    page = owner_api.get(base, {"limit": 25, "offset": 50})
    assert page.status_code == 200 and page["X-Total-Count"] == "120"
    assert [d["name"] for d in page.json()] == [f"cam-{i:03d}" for i in range(50, 75)]
    assert len(owner_api.get(base).json()) == 120  # no limit: all of them, as before
    tagged = owner_api.get(base, {"tag": "line-3", "limit": 5})
    assert tagged["X-Total-Count"] == "12" and len(tagged.json()) == 5
    running = owner_api.get(base, {"model_version": str(version.pk)})
    assert [d["name"] for d in running.json()] == ["cam-007", "cam-100"]
    found = owner_api.get(base, {"search": "CAM-11"})
    assert found["X-Total-Count"] == "10"
    assert owner_api.get(base, {"status": "online"})["X-Total-Count"] == "0"
    for bad in ({"limit": 0}, {"limit": 5000}, {"offset": -1}, {"model_version": "x"}):
        response = owner_api.get(base, bad)
        assert response.status_code == 400, bad
        assert response.json()["error"]["field"] == next(iter(bad))
