"""GET /api/v1/auth/csrf/ gives a browser its CSRF cookie; session writes need it back."""

from __future__ import annotations

from typing import Any

from django.test import Client


def test_csrf_endpoint_sets_the_cookie_for_anonymous_browsers(db: Any) -> None:
    client = Client(enforce_csrf_checks=True)

    response = client.get("/api/v1/auth/csrf/")

    assert response.status_code == 200
    cookie = response.cookies["csrftoken"].value
    assert len(cookie) == 32
    assert response.json()["csrf_token"]  # a masked form of the same secret


def test_session_write_needs_the_csrf_header_from_the_cookie(make_user: Any) -> None:
    make_user("ana")
    client = Client(enforce_csrf_checks=True)
    client.get("/api/v1/auth/csrf/")
    login = client.post("/api/v1/auth/login/", {"username": "ana", "password": "pw"},
                        content_type="application/json")
    assert login.status_code == 200

    refused = client.post("/api/v1/projects/", {"name": "P"}, content_type="application/json")
    token = client.cookies["csrftoken"].value  # rotated by login
    accepted = client.post("/api/v1/projects/", {"name": "P"}, content_type="application/json",
                           HTTP_X_CSRFTOKEN=token)

    assert refused.status_code == 403
    assert "CSRF" in refused.json()["error"]["message"]
    assert accepted.status_code == 201
    assert accepted.json()["name"] == "P"
