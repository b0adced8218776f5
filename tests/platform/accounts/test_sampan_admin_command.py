"""``manage.py sampan_admin``: the admin from SAMPAN_ADMIN_PASSWORD, created once, never reset."""

from __future__ import annotations

import json
from io import StringIO
from typing import Any

import pytest
from django.contrib.auth import authenticate, get_user_model
from django.core.management import CommandError, call_command

VALIDATORS = [{"NAME": f"django.contrib.auth.password_validation.{name}"} for name in (
    "UserAttributeSimilarityValidator", "MinimumLengthValidator", "CommonPasswordValidator",
    "NumericPasswordValidator")]


def run(**options: Any) -> dict[str, Any]:
    out = StringIO()
    call_command("sampan_admin", stdout=out, **options)
    return json.loads(out.getvalue())


def test_creates_the_superuser_once_and_never_resets_its_password(
        db: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SAMPAN_ADMIN_PASSWORD", "first-Passw0rd-x")
    assert run() == {"username": "admin", "created": True}
    admin = get_user_model().objects.get(username="admin")
    assert admin.is_superuser and admin.is_staff

    monkeypatch.setenv("SAMPAN_ADMIN_PASSWORD", "second-Passw0rd-y")
    assert run() == {"username": "admin", "created": False}
    assert authenticate(username="admin", password="first-Passw0rd-x") is not None
    assert authenticate(username="admin", password="second-Passw0rd-y") is None


def test_an_existing_user_needs_no_password(db: Any, monkeypatch: pytest.MonkeyPatch,
                                            make_user: Any) -> None:
    make_user("ops")
    monkeypatch.delenv("SAMPAN_ADMIN_PASSWORD", raising=False)
    assert run(username="ops") == {"username": "ops", "created": False}
    assert not get_user_model().objects.get(username="ops").is_superuser  # left as it is


def test_a_missing_password_names_the_variable_and_creates_nobody(
        db: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SAMPAN_ADMIN_PASSWORD", "")
    with pytest.raises(CommandError, match="SAMPAN_ADMIN_PASSWORD is empty"):
        run()
    assert not get_user_model().objects.exists()


@pytest.mark.parametrize("password, reason", [
    ("short1", "too short"),
    ("12345678901234", "entirely numeric"),
    ("password123", "too common"),
])
def test_a_weak_password_is_refused_with_the_validators_reason(
        db: Any, monkeypatch: pytest.MonkeyPatch, settings: Any, password: str,
        reason: str) -> None:
    settings.AUTH_PASSWORD_VALIDATORS = VALIDATORS
    monkeypatch.setenv("SAMPAN_ADMIN_PASSWORD", password)
    with pytest.raises(CommandError, match=f"SAMPAN_ADMIN_PASSWORD is refused: .*{reason}"):
        run()
    assert not get_user_model().objects.exists()
