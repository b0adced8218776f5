""""Use this machine as a device" (sampan.fleet.local): the web process's side, the request
file a supervisor takes up. The supervisor with a real stack and agent is in
tests/platform/devstack/test_local_agents.py."""

from __future__ import annotations

import json
import os
import stat
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from sampan.fleet import local
from sampan.fleet.models import Device, EnrollmentToken
from sampan.fleet.models import secret_sha256

pytestmark = pytest.mark.django_db


def url(project: Any) -> str:
    return f"/api/v1/projects/{project.pk}/local-device/"


def test_without_a_supervisor_it_says_so_and_issues_nothing(
        project_with_roles: dict[str, Any], api: Any, settings: Any) -> None:
    settings.SAMPAN_LOCAL_AGENTS_DIR = ""
    client = api(project_with_roles["editor"])
    assert client.get(url(project_with_roles["project"])).json() == {
        "available": False, "state": "unavailable", "device_id": None, "error": None}
    response = client.post(url(project_with_roles["project"]))
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "local_agents_unavailable"
    assert "Add device" in response.json()["error"]["message"]
    assert not EnrollmentToken.objects.exists()


def test_a_request_leaves_a_private_file_with_a_usable_token_once(
        project_with_roles: dict[str, Any], api: Any, settings: Any, tmp_path: Path) -> None:
    settings.SAMPAN_LOCAL_AGENTS_DIR = str(tmp_path)
    project = project_with_roles["project"]
    client = api(project_with_roles["editor"])
    assert client.get(url(project)).json()["state"] == "none"

    response = client.post(url(project))

    assert response.status_code == 202
    assert response.json() == {"available": True, "state": "requested", "device_id": None,
                               "error": None}
    path = tmp_path / "requests" / f"{project.pk}.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    request = json.loads(path.read_text())
    assert request["project_id"] == str(project.pk) and "(this machine)" in request["name"]
    token = EnrollmentToken.objects.get(token_sha256=secret_sha256(request["token"]))
    assert token.project == project and token.used_at is None
    # asked again while the supervisor has not taken it up: the same request, no new token
    assert client.post(url(project)).json()["state"] == "requested"
    assert EnrollmentToken.objects.count() == 1
    assert [p.name for p in (tmp_path / "requests").iterdir()] == [path.name]


def test_states_follow_the_supervisor(project_with_roles: dict[str, Any], api: Any,
                                      settings: Any, tmp_path: Path) -> None:
    settings.SAMPAN_LOCAL_AGENTS_DIR = str(tmp_path)
    project = project_with_roles["project"]
    client = api(project_with_roles["viewer"])
    requests_dir = tmp_path / "requests"
    requests_dir.mkdir()
    (requests_dir / f"{project.pk}.error").write_text("enrollment failed: token expired\n")
    assert client.get(url(project)).json() == {
        "available": True, "state": "failed", "device_id": None,
        "error": "enrollment failed: token expired"}
    # a new request clears the failure
    assert api(project_with_roles["editor"]).post(url(project)).json()["state"] == "requested"
    assert not (requests_dir / f"{project.pk}.error").exists()
    (requests_dir / f"{project.pk}.json").unlink()

    device = Device.objects.create(project=project, name="here (this machine)",
                                   credential_sha256="0" * 64)
    home = tmp_path / str(project.pk)
    home.mkdir()
    (home / "agent.json").write_text(json.dumps({"device_id": str(device.pk)}))
    # enrolled, but no agent process: stopped (a click enrolls it again, the same device)
    assert client.get(url(project)).json() == {
        "available": True, "state": "stopped", "device_id": str(device.pk),
        "error": "its agent is not running (make run starts it)"}
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / f"{project.pk}.pid").write_text(f"{os.getpid()}\n")  # alive
    assert client.get(url(project)).json()["state"] == "enrolled"
    assert client.get(url(project)).json()["device_id"] == str(device.pk)
    # the device deleted in the console: a click enrolls the agent again
    device.delete()
    assert client.get(url(project)).json()["state"] == "none"


def test_deleting_this_machines_device_asks_the_supervisor_to_retire_its_agent(
        project_with_roles: dict[str, Any], api: Any, settings: Any, tmp_path: Path,
        django_capture_on_commit_callbacks: Any) -> None:
    """Only the device the local agent's home names: another device of the project leaves
    no request; the request is written once the deletion has committed."""
    settings.SAMPAN_LOCAL_AGENTS_DIR = str(tmp_path)
    project = project_with_roles["project"]
    here, other = (Device.objects.create(project=project, name=name, credential_sha256=digest)
                   for name, digest in (("here (this machine)", "0" * 64), ("cam", "1" * 64)))
    home = tmp_path / str(project.pk)
    home.mkdir()
    (home / "agent.json").write_text(json.dumps({"device_id": str(here.pk)}))
    retire = tmp_path / "requests" / f"{project.pk}.retire"
    client = api(project_with_roles["owner"])
    devices = f"/api/v1/projects/{project.pk}/devices/"
    with django_capture_on_commit_callbacks(execute=True):
        assert client.delete(f"{devices}{other.pk}/").status_code == 204
    assert not retire.exists()
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        assert client.delete(f"{devices}{here.pk}/").status_code == 204
    assert not retire.exists()  # not before the commit
    for callback in callbacks:
        callback()
    assert retire.read_text().strip() == str(here.pk)


def test_a_request_nobody_takes_up_expires(project_with_roles: dict[str, Any], api: Any,
                                           settings: Any, tmp_path: Path) -> None:
    settings.SAMPAN_LOCAL_AGENTS_DIR = str(tmp_path)
    project = project_with_roles["project"]
    client = api(project_with_roles["editor"])
    assert client.post(url(project)).json()["state"] == "requested"
    path = tmp_path / "requests" / f"{project.pk}.json"
    old = time.time() - local.REQUEST_TOKEN_TTL.total_seconds() - 1
    os.utime(path, (old, old))
    status = client.get(url(project)).json()
    assert status["state"] == "failed" and "is make run running?" in status["error"]
    assert client.post(url(project)).json()["state"] == "requested"  # asked again
    assert EnrollmentToken.objects.count() == 2


def test_the_number_of_running_local_agents_is_capped(
        project_with_roles: dict[str, Any], api: Any, settings: Any, tmp_path: Path) -> None:
    settings.SAMPAN_LOCAL_AGENTS_DIR = str(tmp_path)
    settings.SAMPAN_LOCAL_AGENTS_MAX = 1
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / f"{uuid.uuid4()}.pid").write_text(f"{os.getpid()}\n")
    response = api(project_with_roles["editor"]).post(url(project_with_roles["project"]))
    assert response.status_code == 409 and "SAMPAN_LOCAL_AGENTS_MAX" in \
        response.json()["error"]["message"]
    # a pid file of a process that is gone does not count
    (tmp_path / "run" / f"{uuid.uuid4()}.pid").unlink(missing_ok=True)
    for pid_file in (tmp_path / "run").iterdir():
        pid_file.write_text("999999999\n")
    assert api(project_with_roles["editor"]).post(
        url(project_with_roles["project"])).status_code == 202


def test_viewers_cannot_ask_and_outsiders_see_nothing(
        project_with_roles: dict[str, Any], api: Any, settings: Any, tmp_path: Path) -> None:
    settings.SAMPAN_LOCAL_AGENTS_DIR = str(tmp_path)
    project = project_with_roles["project"]
    assert api(project_with_roles["viewer"]).post(url(project)).status_code == 403
    assert api(project_with_roles["outsider"]).get(url(project)).status_code == 404
    assert not (tmp_path / "requests").exists()
