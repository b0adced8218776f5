"""The projects list and detail tell each caller their own role in the project."""

from __future__ import annotations

import json
from typing import Any

import pytest


@pytest.mark.parametrize("who", ["owner", "editor", "viewer"])
def test_each_member_sees_their_own_role(project_with_roles: dict[str, Any], api: Any,
                                         who: str) -> None:
    client = api(project_with_roles[who])
    project = project_with_roles["project"]

    listed = json.loads(client.get("/api/v1/projects/").content)
    detail = json.loads(client.get(f"/api/v1/projects/{project.pk}/").content)

    assert [(p["name"], p["role"]) for p in listed] == [("Project A", who)]
    assert detail["role"] == who


def test_a_project_of_several_members_is_listed_once_per_caller(
        project_with_roles: dict[str, Any], api: Any) -> None:
    from sampan.accounts.services import membership_set

    membership_set(project=project_with_roles["other"], username="viewer", role="editor")
    listed = json.loads(api(project_with_roles["viewer"]).get("/api/v1/projects/").content)

    assert [(p["name"], p["role"]) for p in listed] == [("Project A", "viewer"),
                                                        ("Project B", "editor")]


def test_the_creator_of_a_project_is_told_they_own_it(make_user: Any, api: Any) -> None:
    response = api(make_user("maker")).post("/api/v1/projects/", {"name": "New"}, format="json")

    assert response.status_code == 201
    assert json.loads(response.content)["role"] == "owner"
