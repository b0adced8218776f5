"""``make run`` (sampan.devstack.run): the admin account is created once and its password is
never reset by a later start."""

from __future__ import annotations

from pathlib import Path

from sampan.devstack.run import ensure_admin
from sampan.devstack.stack import Stack
from tests.database import stack_database_url

CHECK = ("from django.contrib.auth import get_user_model; "
         "u = get_user_model().objects.get(username='admin'); "
         "print(u.check_password('{password}'), u.is_superuser)")


def test_a_second_start_leaves_the_admin_password(tmp_path: Path) -> None:
    stack = Stack(data_dir=tmp_path / "stack", database_url=stack_database_url())
    stack.migrate()
    first = ensure_admin(stack, "admin", "sampan-dev")
    assert first["created"] is True

    second = ensure_admin(stack, "admin", "another-default-password")

    assert second["created"] is False and second["password_set"] is False
    assert second["token"] != first["token"]
    check = stack.manage("shell", "-c", CHECK.format(password="sampan-dev"))
    assert check.stdout.strip().splitlines()[-1] == "True True"
