"""Signing in: personal API tokens (``Authorization: Bearer``) and session login."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest
from rest_framework.test import APIClient


def _error(response: Any) -> dict[str, Any]:
    return json.loads(response.content)["error"]


def test_api_token_secret_is_returned_once_and_only_its_hash_is_stored(make_user: Any,
                                                                       api: Any) -> None:
    from sampan.accounts.models import ApiToken

    user = make_user("ana")

    response = api(user).post("/api/v1/auth/tokens/", {"name": "ci"}, format="json")

    assert response.status_code == 201
    body = response.json()
    assert body["name"] == "ci"
    assert body["token"].startswith("spn_") and len(body["token"]) > 40
    assert body["prefix"] == body["token"][:12]
    stored = ApiToken.objects.get(pk=body["id"])
    assert stored.token_sha256 == hashlib.sha256(body["token"].encode()).hexdigest()
    assert body["token"] not in {str(v) for v in ApiToken.objects.values_list(
        "name", "prefix", "token_sha256").get(pk=body["id"])}
    listed = api(user).get("/api/v1/auth/tokens/").json()  # the list never shows the secret
    assert [t["prefix"] for t in listed] == [body["prefix"]] and "token" not in listed[0]
    assert body["token"] not in str(listed)


def test_bearer_token_authenticates_the_user(make_user: Any, api: Any) -> None:
    from sampan.accounts.models import ApiToken
    from sampan.accounts.services import project_create

    user = make_user("ana")
    project_create(user=user, name="Shelves")
    secret = api(user).post("/api/v1/auth/tokens/", {"name": "ci"}, format="json").json()["token"]
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")

    me = client.get("/api/v1/auth/me/")
    projects = client.get("/api/v1/projects/")

    assert (me.status_code, me.json()["username"]) == (200, "ana")
    assert [p["name"] for p in projects.json()] == ["Shelves"]
    assert ApiToken.objects.get(user=user).last_used_at is not None


def test_wrong_bearer_token_is_401(make_user: Any, api: Any) -> None:
    user = make_user("ana")
    secret = api(user).post("/api/v1/auth/tokens/", {"name": "ci"}, format="json").json()["token"]
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}x")

    response = client.get("/api/v1/auth/me/")

    assert response.status_code == 401
    assert response["WWW-Authenticate"] == "Bearer"
    assert _error(response) == {"code": "authentication_failed",
                                "message": "invalid or revoked API token"}


def test_revoked_token_is_401(make_user: Any, api: Any) -> None:
    from django.utils import timezone

    from sampan.accounts.models import ApiToken

    user = make_user("ana")
    secret = api(user).post("/api/v1/auth/tokens/", {"name": "ci"}, format="json").json()["token"]
    ApiToken.objects.filter(user=user).update(revoked_at=timezone.now())
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")

    assert client.get("/api/v1/auth/me/").status_code == 401


def test_anonymous_requests_are_401(db: Any) -> None:
    client = APIClient()

    for path in ("/api/v1/auth/me/", "/api/v1/projects/"):
        response = client.get(path)
        assert response.status_code == 401, path
        assert _error(response)["code"] == "not_authenticated"
    assert client.post("/api/v1/auth/tokens/", {"name": "x"}, format="json").status_code == 401


def test_session_login_then_requests_as_the_user(make_user: Any) -> None:
    make_user("ana")
    client = APIClient()

    login = client.post("/api/v1/auth/login/", {"username": "ana", "password": "pw"},
                        format="json")
    me = client.get("/api/v1/auth/me/")

    assert (login.status_code, login.json()["username"]) == (200, "ana")
    assert "sessionid" in client.cookies and "csrftoken" in client.cookies
    assert (me.status_code, me.json()["username"]) == (200, "ana")


def test_session_login_with_a_wrong_password_is_401_with_a_message(make_user: Any) -> None:
    make_user("ana")
    client = APIClient()

    response = client.post("/api/v1/auth/login/", {"username": "ana", "password": "nope"},
                           format="json")

    assert response.status_code == 401
    assert _error(response) == {"code": "authentication_failed",
                                "message": "wrong username or password"}
    assert "sessionid" not in client.cookies
    assert client.get("/api/v1/auth/me/").status_code == 401


def test_session_login_without_a_password_is_400_naming_the_field(db: Any) -> None:
    response = APIClient().post("/api/v1/auth/login/", {"username": "ana"}, format="json")

    assert response.status_code == 400
    assert _error(response)["field"] == "password"


def test_session_writes_need_the_csrf_token(make_user: Any) -> None:
    make_user("ana")
    client = APIClient(enforce_csrf_checks=True)
    client.post("/api/v1/auth/login/", {"username": "ana", "password": "pw"}, format="json")

    without = client.post("/api/v1/projects/", {"name": "Shelves"}, format="json")
    with_token = client.post("/api/v1/projects/", {"name": "Shelves"}, format="json",
                             HTTP_X_CSRFTOKEN=client.cookies["csrftoken"].value)

    assert without.status_code == 403
    assert "CSRF" in _error(without)["message"]
    assert (with_token.status_code, with_token.json()["name"]) == (201, "Shelves")


def test_logout_ends_the_session(make_user: Any) -> None:
    make_user("ana")
    client = APIClient()
    client.post("/api/v1/auth/login/", {"username": "ana", "password": "pw"}, format="json")

    response = client.post("/api/v1/auth/logout/")

    assert response.status_code == 204
    assert client.get("/api/v1/auth/me/").status_code == 401


def test_failed_sign_ins_are_refused_for_a_while_past_the_limit(
        make_user: Any, settings: Any) -> None:
    from django.core.cache import cache

    cache.clear()
    client = APIClient()
    settings.SAMPAN_LOGIN_MAX_FAILURES = 3
    make_user("ana")
    wrong = {"username": "ana", "password": "nope"}
    codes = [client.post("/api/v1/auth/login/", wrong, format="json").status_code
             for _ in range(3)]
    assert codes == [401, 401, 401]
    refused = client.post("/api/v1/auth/login/", {"username": "ANA ", "password":
                                                  "pw"}, format="json")
    assert refused.status_code == 429  # the right password too, and the name as typed
    body = _error(refused)
    assert body["code"] == "too_many_attempts" and body["field"] == "username"
    assert 1 <= body["details"]["retry_after_s"] <= 900
    assert refused["Retry-After"] == str(body["details"]["retry_after_s"])
    # another account is not locked by ana's failures (the address limit is 5x)
    make_user("bo")
    ok = client.post("/api/v1/auth/login/", {"username": "bo", "password": "pw"},
                     format="json")
    assert ok.status_code == 200
    cache.clear()  # the window passed
    assert client.post("/api/v1/auth/login/", {"username": "ana", "password":
                                                "pw"},
                       format="json").status_code == 200


def test_the_address_limit_covers_every_username_and_the_window_ends(
        make_user: Any, settings: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """5x the per-user limit from one address, spread over many names, locks the address out
    for every name; once the window has passed (time moved on) sign-ins work again."""
    import time as real_time

    settings.SAMPAN_LOGIN_MAX_FAILURES = 2
    settings.SAMPAN_LOGIN_WINDOW_S = 60
    make_user("ana")
    client = APIClient()
    codes = [client.post("/api/v1/auth/login/", {"username": f"guess{i}", "password": "x"},
                         format="json").status_code for i in range(10)]
    assert codes == [401] * 10  # no single name reached 2
    locked = client.post("/api/v1/auth/login/", {"username": "ana", "password": "pw"},
                         format="json")
    assert locked.status_code == 429 and 1 <= _error(locked)["details"]["retry_after_s"] <= 60
    later = real_time.time() + 61
    monkeypatch.setattr(real_time, "time", lambda: later)  # the cache's expiry reads it too
    assert client.post("/api/v1/auth/login/", {"username": "ana", "password": "pw"},
                       format="json").status_code == 200


def test_concurrent_failures_are_all_counted(settings: Any) -> None:
    """Each failure is one atomic increment: 8 threads x 25 failures count 200."""
    import threading

    from django.core.cache import cache

    from sampan.accounts import login_limits

    settings.SAMPAN_LOGIN_MAX_FAILURES = 1000
    barrier = threading.Barrier(8)

    def fail() -> None:
        barrier.wait()
        for _ in range(25):
            login_limits.failed("ana", "10.0.0.9")

    threads = [threading.Thread(target=fail) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    user_key, address_key = (key for key, _limit in login_limits._keys("ana", "10.0.0.9"))
    assert (cache.get(user_key), cache.get(address_key)) == (200, 200)
