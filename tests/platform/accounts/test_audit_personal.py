"""A person's own security log: the events of no project (API tokens created and revoked,
sign-ins and failed tries of the password, accounts created) are read by the person they
belong to at ``GET /api/v1/auth/me/audit/`` and nobody else; staff read every event at
``GET /api/v1/audit/``, filtered by action, project and actor."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from sampan.accounts import services
from sampan.accounts.models import AuditEvent

pytestmark = pytest.mark.django_db

MINE = "/api/v1/auth/me/audit/"
ALL = "/api/v1/audit/"


def _actions(response: Any) -> list[str]:
    assert response.status_code == 200, response.content
    return [event["action"] for event in response.json()["results"]]


def test_token_events_are_in_their_owners_log_only(make_user: Any, api: Any) -> None:
    ana, bob = make_user("ana"), make_user("bob")
    project = services.project_create(user=ana, name="P")
    made = api(ana).post("/api/v1/auth/tokens/", {"name": "ci"}, format="json")
    assert made.status_code == 201, made.content
    token_id = made.json()["id"]
    assert api(ana).delete(f"/api/v1/auth/tokens/{token_id}/").status_code == 204

    log = api(ana).get(MINE).json()
    assert log["count"] == 2
    assert [(e["action"], e["actor"], e["target_type"], e["target_id"], e["details"]["name"])
            for e in log["results"]] == [
        ("token.revoke", "ana", "ApiToken", token_id, "ci"),
        ("token.create", "ana", "ApiToken", token_id, "ci")]  # newest first
    # the project event (project.create) stays in the project's log, the tokens out of it
    assert "project.create" not in _actions(api(ana).get(MINE))
    project_log = _actions(api(ana).get(f"/api/v1/projects/{project.pk}/audit/"))
    assert project_log == ["project.create"]
    assert _actions(api(bob).get(MINE)) == []

    assert _actions(api(ana).get(MINE, {"action": "token.create"})) == ["token.create"]
    assert _actions(api(ana).get(MINE, {"action": "token."})) == ["token.revoke",
                                                                   "token.create"]
    page = api(ana).get(MINE, {"page_size": 1, "page": 2}).json()
    assert (page["count"], [e["action"] for e in page["results"]]) == (2, ["token.create"])


def test_sign_ins_and_failed_tries_are_in_the_accounts_log(make_user: Any, api: Any,
                                                          settings: Any) -> None:
    settings.SAMPAN_LOGIN_MAX_FAILURES = 2
    ana, bob = make_user("ana"), make_user("bob")
    client = APIClient()
    wrong = {"username": "ana", "password": "nope"}
    codes = [client.post("/api/v1/auth/login/", wrong, format="json").status_code
             for _ in range(3)]
    assert codes == [401, 401, 429]
    # a refused attempt (429) writes nothing: a username's failures a window bound the rows
    failed = api(ana).get(MINE, {"action": "login.failed"}).json()["results"]
    assert [(e["actor"], e["target_id"], e["details"]) for e in failed] == [
        ("", str(ana.pk), {"address": "127.0.0.1"})] * 2
    before = AuditEvent.objects.count()
    assert client.post("/api/v1/auth/login/", {"username": "nobody", "password": "x"},
                       format="json").status_code == 401
    assert AuditEvent.objects.count() == before  # no account, no event

    assert client.post("/api/v1/auth/login/", {"username": "bob", "password": "pw"},
                       format="json").status_code == 200
    assert _actions(api(bob).get(MINE)) == ["login.succeeded"]
    assert _actions(api(ana).get(MINE)) == ["login.failed", "login.failed"]


def test_an_account_created_shows_in_both_logs(make_user: Any, api: Any) -> None:
    admin = make_user("admin")
    admin.is_staff = True
    admin.save()
    made = api(admin).post("/api/v1/users/", {"username": "carol"}, format="json")
    assert made.status_code == 201, made.content
    from django.contrib.auth import get_user_model

    carol = get_user_model().objects.get(username="carol")
    for user in (admin, carol):
        log = api(user).get(MINE).json()["results"]
        assert [(e["action"], e["actor"], e["target_id"]) for e in log] == [
            ("user.create", "admin", str(carol.pk))]


def test_staff_read_every_event_filtered(make_user: Any, api: Any) -> None:
    admin, ana, bob = make_user("admin"), make_user("ana"), make_user("bob")
    admin.is_staff = True
    admin.save()
    p1 = services.project_create(user=ana, name="P1")
    p2 = services.project_create(user=bob, name="P2")
    services.membership_set(project=p1, username="bob", role="viewer", actor=ana)
    issued = services.api_token_create(user=bob, name="ci")
    services.api_token_revoke(user=bob, token_id=issued.token.pk)

    staff = api(admin)
    everything = staff.get(ALL).json()
    assert everything["count"] == 5
    assert [e["action"] for e in everything["results"]] == [
        "token.revoke", "token.create", "member.set", "project.create", "project.create"]
    assert _actions(staff.get(ALL, {"project": str(p1.pk)})) == ["member.set",
                                                                 "project.create"]
    assert _actions(staff.get(ALL, {"project": str(p2.pk)})) == ["project.create"]
    assert _actions(staff.get(ALL, {"actor": "bob"})) == ["token.revoke", "token.create",
                                                          "project.create"]
    assert _actions(staff.get(ALL, {"actor": "ana", "action": "member.set"})) == ["member.set"]
    assert _actions(staff.get(ALL, {"action": "token."})) == ["token.revoke", "token.create"]
    assert _actions(staff.get(ALL, {"actor": "nobody"})) == []
    bad = staff.get(ALL, {"project": "not-a-uuid"})
    assert (bad.status_code, bad.json()["error"]["field"]) == (400, "project")
    assert staff.get(ALL, {"page": 9}).status_code == 404


def test_others_get_403_and_anonymous_401(make_user: Any, api: Any) -> None:
    ana = make_user("ana")
    services.api_token_create(user=ana, name="ci")
    refused = api(ana).get(ALL)
    assert refused.status_code == 403
    assert refused.json()["error"]["code"] == "forbidden"
    for path in (ALL, MINE):
        response = APIClient().get(path)
        assert response.status_code == 401, path
        assert "results" not in response.json()
