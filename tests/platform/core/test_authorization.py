"""Authorization generated from the URL configuration: every route under
``/api/v1/projects/<project_id>/``, every method it serves, as an anonymous client, a user of
another project and a viewer. A new route is in this test the day it is added; a view that
forgets its role check is refused all the same (``sampan.core.apis.ProjectRolePermission``)."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from rest_framework.test import APIClient

from sampan.accounts.models import Role
from sampan.core.apis import SAFE_METHODS, ProjectApi
from tests.platform.core.project_routes import PROJECT_ROUTES, route_url, view_methods

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
    anonymous, outsider, viewer = APIClient(), APIClient(), APIClient()
    outsider.force_authenticate(project_with_roles["outsider"])
    viewer.force_authenticate(project_with_roles["viewer"])
    for method in view_methods(callback):
        answer = getattr(anonymous, method)(url, {}, format="json")
        assert answer.status_code in (401, 403), (method, url, answer.status_code)
        answer = getattr(outsider, method)(url, {}, format="json")
        assert answer.status_code == 404, (method, url, answer.status_code, answer.content[:200])
        needed = view.read_role if method.upper() in SAFE_METHODS else view.write_role
        if needed != Role.VIEWER:
            answer = getattr(viewer, method)(url, {}, format="json")
            assert answer.status_code == 403, (method, url, answer.status_code)


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
