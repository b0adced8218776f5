"""``manage.py sampan_user``: a token for an existing user never changes its password by surprise,
and a password it sets passes Django's password validators."""

from __future__ import annotations

import json
from io import StringIO
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command

from sampan.accounts.models import ApiToken

pytestmark = pytest.mark.django_db


def _run(*args: str) -> tuple[dict[str, Any], str]:
    out, err = StringIO(), StringIO()
    call_command("sampan_user", *args, stdout=out, stderr=err)
    return json.loads(out.getvalue().strip().splitlines()[-1]), err.getvalue()


def test_a_new_user_is_created_with_its_password_and_a_token() -> None:
    result, _ = _run("--username", "ana", "--password", "first-long-secret", "--superuser")
    assert result["created"] is True and result["password_set"] is True
    user = get_user_model().objects.get(username="ana")
    assert user.check_password("first-long-secret") and user.is_superuser
    assert ApiToken.objects.get(user=user).token_sha256 == ApiToken.digest(result["token"])


def test_a_token_for_an_existing_user_leaves_its_password() -> None:
    _run("--username", "ana", "--password", "first-long-secret")
    result, err = _run("--username", "ana", "--password", "second-long-secret")
    assert result["created"] is False and result["password_set"] is False
    user = get_user_model().objects.get(username="ana")
    assert user.check_password("first-long-secret")
    assert not user.check_password("second-long-secret")
    assert "password was left unchanged (--set-password changes it)" in err
    assert ApiToken.objects.filter(user=user).count() == 2
    # no password at all is fine for an existing user
    assert _run("--username", "ana")[0]["created"] is False


def test_replace_token_revokes_the_earlier_tokens_of_that_name_only() -> None:
    first, _ = _run("--username", "ana", "--password", "first-long-secret", "--token-name",
                    "make-run", "--replace-token")
    other, _ = _run("--username", "ana", "--token-name", "ci")
    second, _ = _run("--username", "ana", "--token-name", "make-run", "--replace-token")
    assert (first["revoked"], second["revoked"]) == (0, 1)
    live = ApiToken.objects.filter(revoked_at__isnull=True)
    assert sorted(t.token_sha256 for t in live) == sorted(
        ApiToken.digest(r["token"]) for r in (other, second))
    # the revoked token no longer opens the API; the new one does
    from rest_framework.test import APIClient
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {first['token']}")
    assert client.get("/api/v1/auth/me/").status_code == 401
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {second['token']}")
    assert client.get("/api/v1/auth/me/").status_code == 200


def test_set_password_changes_an_existing_users_password() -> None:
    _run("--username", "ana", "--password", "first-long-secret")
    result, _ = _run("--username", "ana", "--password", "second-long-secret", "--set-password")
    assert result["password_set"] is True
    assert get_user_model().objects.get(username="ana").check_password("second-long-secret")


@pytest.mark.parametrize(("password", "reason"), [
    ("short1", "too short. It must contain at least 8 characters"),
    ("password", "too common"),
    ("4815162342", "entirely numeric"),
    ("ana-lovelace", "too similar to the username"),
])
def test_a_password_the_validators_refuse_names_the_option_and_writes_nothing(
        password: str, reason: str) -> None:
    with pytest.raises(CommandError, match=f"--password: .*{reason}"):
        _run("--username", "ana-lovelace", "--password", password)
    assert not get_user_model().objects.filter(username="ana-lovelace").exists()
    assert ApiToken.objects.count() == 0


def test_set_password_with_a_weak_password_keeps_the_old_one() -> None:
    _run("--username", "ana", "--password", "first-long-secret")
    with pytest.raises(CommandError, match="--password: This password is too short"):
        _run("--username", "ana", "--password", "short", "--set-password")
    assert get_user_model().objects.get(username="ana").check_password("first-long-secret")


def test_a_new_user_needs_a_password_and_set_password_needs_one() -> None:
    with pytest.raises(CommandError, match="user 'bob' does not exist: give --password"):
        _run("--username", "bob")
    with pytest.raises(CommandError, match="--set-password needs --password"):
        _run("--username", "bob", "--set-password")
    assert not get_user_model().objects.filter(username="bob").exists()
