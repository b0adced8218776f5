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


def test_a_sign_in_posted_by_another_site_is_refused(make_user: Any, settings: Any) -> None:
    """Login CSRF: a page of another site posting a form of the attacker's credentials must not
    sign the visitor's browser in; the console (same origin), a trusted origin and a script
    (no Origin) sign in."""
    make_user("ana")
    form = {"username": "ana", "password": "pw"}
    for origin in ("https://evil.example", "null", "http://testserver.evil.example",
                   "http://testserver:8080"):
        client = Client(enforce_csrf_checks=True)
        refused = client.post("/api/v1/auth/login/", form, HTTP_ORIGIN=origin)  # an HTML form
        assert refused.status_code == 403, (origin, refused.content)
        error = refused.json()["error"]
        assert error["field"] == "Origin" and origin in error["message"]
        assert "sessionid" not in client.cookies
    settings.CSRF_TRUSTED_ORIGINS = ["https://*.example.org", "http://console.local:5173"]
    for origin in ("http://testserver", "https://sampan.example.org", "http://console.local:5173",
                   None):
        client = Client(enforce_csrf_checks=True)
        extra = {} if origin is None else {"HTTP_ORIGIN": origin}
        signed_in = client.post("/api/v1/auth/login/", form, content_type="application/json",
                                **extra)
        assert signed_in.status_code == 200, (origin, signed_in.content)
        assert client.cookies["sessionid"].value
