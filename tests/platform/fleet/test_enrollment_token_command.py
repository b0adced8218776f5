"""``manage.py sampan_enrollment_token``: a one-time token for a project, printed or in a file."""

from __future__ import annotations

import json
import stat
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from sampan.accounts.models import Project
from sampan.fleet.services import device_enroll


def run(**options: Any) -> dict[str, Any]:
    out = StringIO()
    call_command("sampan_enrollment_token", stdout=out, **options)
    return json.loads(out.getvalue())


def test_prints_a_token_that_enrolls_one_device_in_the_owners_project(
        db: Any, make_user: Any) -> None:
    make_user("ops")
    printed = run(project="Edge", owner="ops")
    project = Project.objects.get(name="Edge")
    assert printed["project_id"] == str(project.pk)
    assert project.memberships.get().user.username == "ops"
    device = device_enroll(token=printed["token"], name="cam-1", info={}).device
    assert device.project_id == project.pk
    again = run(project="Edge", owner="ops")  # the same project, a new token
    assert again["project_id"] == printed["project_id"] and again["token"] != printed["token"]


def test_a_file_keeps_its_token_while_unused_and_gets_a_new_one_once_used(
        db: Any, make_user: Any, tmp_path: Path) -> None:
    make_user("ops")
    path = tmp_path / "enroll" / "token"
    first = run(project="Edge", owner="ops", file=path)
    assert first["reused"] is False and "token" not in first
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    token = path.read_text().strip()
    assert run(project="Edge", owner="ops", file=path)["reused"] is True
    assert path.read_text().strip() == token

    device_enroll(token=token, name="cam-1", info={})
    assert run(project="Edge", owner="ops", file=path)["reused"] is False
    assert path.read_text().strip() != token
    assert [p.name for p in path.parent.iterdir()] == ["token"]  # no temporary file left


def test_a_file_with_a_token_from_nowhere_is_replaced(db: Any, make_user: Any,
                                                      tmp_path: Path) -> None:
    make_user("ops")
    path = tmp_path / "token"
    path.write_text("spe_not-a-token-of-this-platform\n")
    assert run(project="Edge", owner="ops", file=path)["reused"] is False
    assert path.read_text().strip() != "spe_not-a-token-of-this-platform"


@pytest.mark.parametrize("options, message", [
    ({"project": "Edge", "owner": "nobody"}, "--owner: no user named 'nobody'"),
    ({"project": "  ", "owner": "ops"}, "--project must not be empty"),
    ({"project": "Edge", "owner": "ops", "expires_hours": 0}, "--expires-hours must be above 0"),
    ({"project": "Edge", "owner": "ops", "expires_hours": 1000}, "at most 168"),
    ({"project": "x\ny", "owner": "ops"}, "--project: name: contains U\\+000A"),
])
def test_bad_options_name_the_option_and_create_nothing(db: Any, make_user: Any,
                                                        options: dict[str, Any],
                                                        message: str) -> None:
    make_user("ops")
    with pytest.raises(CommandError, match=message):
        run(**options)
    assert not Project.objects.exists()
