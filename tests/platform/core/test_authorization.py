"""Authorization generated from the URL configuration: every route under
``/api/v1/projects/<project_id>/``, every method it serves, as an anonymous client, a user of
another project and every member whose role is below the one the view declares for the method
(``read_role`` / ``write_role``: a viewer where an editor is needed, a viewer and an editor where
an owner is). A new route is in this test the day it is added; a view that
forgets its role check is refused all the same (``sampan.core.apis.ProjectRolePermission``)."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from rest_framework.test import APIClient

from sampan.accounts.models import ROLE_RANK, Role
from sampan.core.apis import SAFE_METHODS, ProjectApi
from tests.platform.core.project_routes import (PROJECT_ROUTES, route_parameters, route_url,
                                               view_methods)

pytestmark = pytest.mark.django_db


def _url(route: str, project_id: Any) -> str:
    """The route with the project's id, a fresh UUID for any other id and "x" for the rest."""
    def fill(converter: str, name: str, segment: str) -> str:
        if name == "project_id":
            return str(project_id)
        return str(uuid.uuid4()) if converter == "uuid" else "x"
    return route_url(route, fill)


def test_every_project_route_is_a_project_api_view() -> None:
    assert len(PROJECT_ROUTES) >= 40  # the suite sees the routes (not an empty loop)
    strays = [route for route, callback in PROJECT_ROUTES
              if not issubclass(getattr(callback, "view_class", object), ProjectApi)]
    assert strays == []


@pytest.mark.parametrize("route, callback", PROJECT_ROUTES,
                         ids=[route for route, _ in PROJECT_ROUTES])
def test_no_project_route_serves_a_stranger_or_a_role_too_low(
        route: str, callback: Any, project_with_roles: dict[str, Any]) -> None:
    project = project_with_roles["project"]
    url = _url(route, project.pk)
    view = callback.view_class
    anonymous, outsider = APIClient(), APIClient()
    outsider.force_authenticate(project_with_roles["outsider"])
    members = {}
    for role in (Role.VIEWER, Role.EDITOR):
        members[role] = APIClient()
        members[role].force_authenticate(project_with_roles[role.value])
    for method in view_methods(callback):
        answer = getattr(anonymous, method)(url, {}, format="json")
        assert answer.status_code in (401, 403), (method, url, answer.status_code)
        answer = getattr(outsider, method)(url, {}, format="json")
        assert answer.status_code == 404, (method, url, answer.status_code, answer.content[:200])
        needed = Role(view.read_role if method.upper() in SAFE_METHODS else view.write_role)
        for role, client in members.items():
            if ROLE_RANK[role] < ROLE_RANK[needed]:
                answer = getattr(client, method)(url, {}, format="json")
                assert answer.status_code == 403, (role, method, url, answer.status_code)


def test_the_routes_cover_every_role_a_view_can_ask_for() -> None:
    """The generated test reaches all three needs (not only the viewer's): an owner-only write,
    an owner-only read, an editor's write and a viewer's write exist among the routes."""
    needs = set()
    for _, callback in PROJECT_ROUTES:
        view = callback.view_class
        for method in view_methods(callback):
            safe = method.upper() in SAFE_METHODS
            needs.add(("read" if safe else "write",
                       Role(view.read_role if safe else view.write_role)))
    assert {("write", Role.OWNER), ("read", Role.OWNER), ("write", Role.EDITOR),
            ("write", Role.VIEWER), ("read", Role.VIEWER)} <= needs


@pytest.mark.parametrize("route, callback",
                         [(r, c) for r, c in PROJECT_ROUTES if not any(
                             n != "project_id" for _, n in route_parameters(r))
                          and "get" in view_methods(c)],
                         ids=lambda value: value if isinstance(value, str) else "")
def test_a_member_with_the_role_a_list_needs_reads_it(
        route: str, callback: Any, project_with_roles: dict[str, Any]) -> None:
    """The other side of the check: the role a view declares for reading is enough (a view
    that asked for more than it declares would refuse its own members)."""
    view = callback.view_class
    client = APIClient()
    client.force_authenticate(project_with_roles[Role(view.read_role).value])
    answer = client.get(_url(route, project_with_roles["project"].pk))
    assert answer.status_code not in (401, 403, 404), (route, answer.status_code,
                                                       answer.content[:200])


def test_a_view_that_forgets_its_role_check_is_refused_all_the_same(
        project_with_roles: dict[str, Any], settings: Any) -> None:
    settings.ROOT_URLCONF = "tests.platform.core.forgetful_urls"
    url = f"/api/v1/projects/{project_with_roles['project'].pk}/forgetful/"
    clients = {}
    for name in ("outsider", "viewer", "editor"):
        clients[name] = APIClient()
        clients[name].force_authenticate(project_with_roles[name])
    assert clients["outsider"].get(url).status_code == 404
    assert clients["viewer"].get(url).json() == {"secret": "project data"}
    assert clients["viewer"].post(url, {}, format="json").status_code == 403
    assert clients["editor"].post(url, {}, format="json").json() == {"written": True}
