"""The project side of the fleet: roles and project isolation."""

from __future__ import annotations

from typing import Any

import pytest

from sampan.accounts.models import Role
from sampan.accounts.services import project_create, user_create
from sampan.fleet.models import Deployment, EnrollmentToken
from sampan.fleet.services import deployment_create


def test_viewer_reads_but_cannot_create_tokens_or_deployments(
        api: Any, project: Any, member: Any, model_version: Any, enrolled: Any) -> None:
    viewer = api(member("victor", Role.VIEWER))
    device, _ = enrolled()
    base = f"/api/v1/projects/{project.pk}"
    response = viewer.post(f"{base}/enrollment-tokens/", {}, format="json")
    assert response.status_code == 403
    assert EnrollmentToken.objects.count() == 1  # the one the fixture used to enroll
    response = viewer.post(f"{base}/deployments/",
                           {"model_version_id": str(model_version().pk),
                            "device_ids": [str(device.pk)]}, format="json")
    assert response.status_code == 403
    assert not Deployment.objects.exists()
    assert viewer.delete(f"{base}/devices/{device.pk}/").status_code == 403
    assert [d["id"] for d in viewer.get(f"{base}/devices/").json()] == [str(device.pk)]
    assert viewer.get(f"{base}/devices/{device.pk}/telemetry/").status_code == 200


def test_editor_creates_tokens_and_deployments(api: Any, project: Any, member: Any,
                                               model_version: Any, enrolled: Any) -> None:
    editor = api(member("edith", Role.EDITOR))
    device, _ = enrolled()
    base = f"/api/v1/projects/{project.pk}"
    assert editor.post(f"{base}/enrollment-tokens/", {}, format="json").status_code == 201
    response = editor.post(f"{base}/deployments/", {"model_version_id": str(model_version().pk),
                                                    "device_ids": [str(device.pk)]},
                           format="json")
    assert response.status_code == 201
    assert response.json()[0]["created_by"] == "edith"


def test_another_projects_member_gets_404(api: Any, project: Any, owner: Any,
                                          model_version: Any, enrolled: Any) -> None:
    device, _ = enrolled()
    [deployment] = deployment_create(project=project, user=owner,
                                     model_version_id=model_version().pk,
                                     device_ids=[device.pk])
    stranger = user_create(username="mallory", password="pw")
    own = project_create(user=stranger, name="Mallory's")
    mallory = api(stranger)
    base = f"/api/v1/projects/{project.pk}"
    for path in ["/devices/", f"/devices/{device.pk}/", f"/devices/{device.pk}/telemetry/",
                 "/deployments/", f"/deployments/{deployment.pk}/", "/enrollment-tokens/"]:
        assert mallory.get(base + path).status_code == 404, path
    # Through her own project, the other project's rows are not found either.
    mine = f"/api/v1/projects/{own.pk}"
    assert mallory.get(f"{mine}/devices/").json() == []
    assert mallory.get(f"{mine}/devices/{device.pk}/").status_code == 404
    assert mallory.get(f"{mine}/deployments/{deployment.pk}/").status_code == 404
    assert mallory.get(f"{mine}/deployments/").json() == []
    response = mallory.post(f"{mine}/deployments/", {
        "model_version_id": str(deployment.model_version_id), "device_ids": [str(device.pk)]},
        format="json")
    assert response.status_code == 404
    assert Deployment.objects.count() == 1


def test_anonymous_is_refused(api: Any, project: Any) -> None:
    assert api().get(f"/api/v1/projects/{project.pk}/devices/").status_code == 401


@pytest.mark.parametrize(("path", "params", "field"), [
    ("deployments/", {"device": "not-a-uuid"}, "device"),
    ("deployments/", {"state": "sleeping"}, "state"),
    ("deployments/", {"limit": "many"}, "limit"),
    ("devices/", {"status": "asleep"}, "status"),
])
def test_malformed_filter_is_400_naming_the_parameter(owner_api: Any, project: Any, path: str,
                                                      params: dict[str, str], field: str) -> None:
    response = owner_api.get(f"/api/v1/projects/{project.pk}/{path}", params)
    assert response.status_code == 400
    assert response.json()["error"]["field"] == field


def test_deployment_list_filters(owner_api: Any, project: Any, owner: Any, model_version: Any,
                                 enrolled: Any) -> None:
    v1, v2 = model_version(b"1"), model_version(b"2")
    one, _ = enrolled("one")
    two, _ = enrolled("two")
    [first] = deployment_create(project=project, user=owner, model_version_id=v1.pk,
                                device_ids=[one.pk])
    [newest] = deployment_create(project=project, user=owner, model_version_id=v2.pk,
                                 device_ids=[one.pk])
    [other] = deployment_create(project=project, user=owner, model_version_id=v1.pk,
                                device_ids=[two.pk])
    url = f"/api/v1/projects/{project.pk}/deployments/"
    assert [d["state"] for d in owner_api.get(url, {"device": str(one.pk)}).json()] == [
        "pending", "superseded"]
    assert [d["id"] for d in owner_api.get(url, {"state": "superseded"}).json()] == [
        str(first.pk)]
    active = {d["id"] for d in owner_api.get(url, {"active": "true"}).json()}
    assert active == {str(newest.pk), str(other.pk)}
    assert [d["id"] for d in owner_api.get(url, {"limit": 1}).json()] == [str(other.pk)]
