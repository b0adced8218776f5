"""Personal API tokens: expiry, the list of one's own tokens with their last use, revoke, and
a token never minting a token that outlives it."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from sampan.accounts import services
from sampan.accounts.models import ApiToken

pytestmark = pytest.mark.django_db


def _bearer(secret: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    return client


def test_tokens_expire_are_listed_with_their_last_use_and_can_be_revoked(
        make_user: Any) -> None:
    ana, bob = make_user("ana"), make_user("bob")
    session = APIClient()
    session.force_authenticate(ana)
    made = session.post("/api/v1/auth/tokens/", {"name": "ci"}, format="json")
    assert made.status_code == 201, made.content
    body = made.json()
    expires = ApiToken.objects.get(pk=body["id"]).expires_at
    assert abs((expires - timezone.now()) - timedelta(days=90)) < timedelta(minutes=1)
    assert body["expires_at"] and body["token"].startswith("spn_")

    listed = session.get("/api/v1/auth/tokens/").json()
    assert [(t["name"], t["last_used_at"]) for t in listed] == [("ci", None)]
    assert "token" not in listed[0]
    assert _bearer(body["token"]).get("/api/v1/auth/me/").json()["username"] == "ana"
    assert session.get("/api/v1/auth/tokens/").json()[0]["last_used_at"] is not None

    # another user's token cannot be revoked (nor seen)
    other = services.api_token_create(user=bob, name="bob's")
    assert session.delete(f"/api/v1/auth/tokens/{other.token.pk}/").status_code == 404
    assert session.delete(f"/api/v1/auth/tokens/{body['id']}/").status_code == 204
    refused = _bearer(body["token"]).get("/api/v1/auth/me/")
    assert refused.status_code == 401 and "revoked" in refused.json()["error"]["message"]
    assert session.get("/api/v1/auth/tokens/").json() == []
    assert session.delete(f"/api/v1/auth/tokens/{body['id']}/").status_code == 404


def test_an_expired_token_is_refused_saying_so(make_user: Any) -> None:
    issued = services.api_token_create(user=make_user("ana"), name="old", expires_in_days=1)
    assert _bearer(issued.secret).get("/api/v1/auth/me/").status_code == 200
    ApiToken.objects.filter(pk=issued.token.pk).update(
        expires_at=timezone.now() - timedelta(seconds=1))
    refused = _bearer(issued.secret).get("/api/v1/auth/me/")
    assert refused.status_code == 401
    assert "expired" in refused.json()["error"]["message"]


@pytest.mark.parametrize("days", [0, -3, 366])
def test_a_life_out_of_range_is_refused_naming_the_field(make_user: Any, days: int) -> None:
    session = APIClient()
    session.force_authenticate(make_user("ana"))
    answer = session.post("/api/v1/auth/tokens/", {"name": "x", "expires_in_days": days},
                          format="json")
    assert answer.status_code == 400 and answer.json()["error"]["field"] == "expires_in_days"


def test_a_token_never_mints_a_token_that_outlives_it(make_user: Any) -> None:
    ana = make_user("ana")
    parent = services.api_token_create(user=ana, name="ten days", expires_in_days=10)
    client = _bearer(parent.secret)
    for days in (30, None):
        refused = client.post("/api/v1/auth/tokens/", {"name": "child", "expires_in_days": days},
                              format="json")
        assert refused.status_code == 400, (days, refused.content)
        assert "outlives" in refused.json()["error"]["message"]
    assert client.post("/api/v1/auth/tokens/", {"name": "child", "expires_in_days": 5},
                       format="json").status_code == 201
    forever = services.api_token_create(user=ana, name="forever", expires_in_days=None)
    assert _bearer(forever.secret).post("/api/v1/auth/tokens/",
                                        {"name": "any", "expires_in_days": None},
                                        format="json").status_code == 201


def test_an_expiring_token_cannot_create_accounts(project_with_roles: dict[str, Any]) -> None:
    """A 1-day token of an owner could create an owner account with a password of its choosing
    and so leave a never-expiring way into the project (found by a reviewer, issue 12)."""
    from rest_framework.test import APIClient

    from sampan.accounts.services import api_token_create

    owner, project = project_with_roles["owner"], project_with_roles["project"]
    body = {"username": "backdoor", "password": "Xq9!long-pass-77",
            "project_id": str(project.pk), "role": "owner"}
    short = api_token_create(user=owner, name="ci", expires_in_days=1).secret
    made = APIClient(HTTP_AUTHORIZATION=f"Bearer {short}").post("/api/v1/users/", body,
                                                                format="json")
    assert made.status_code == 403, made.json()
    assert "cannot create accounts" in made.json()["error"]["message"]
    lasting = api_token_create(user=owner, name="admin", expires_in_days=None).secret
    made = APIClient(HTTP_AUTHORIZATION=f"Bearer {lasting}").post("/api/v1/users/", body,
                                                                  format="json")
    assert made.status_code == 201, made.json()
