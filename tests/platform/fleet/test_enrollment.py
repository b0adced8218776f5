"""Enrollment: one-time tokens, expiry, the enroll command, device credentials."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from sampan.fleet import services
from sampan.fleet.models import Device, EnrollmentToken, secret_sha256
from sampan.registry.signing import public_key_id_of_host


def test_token_create_returns_secret_once_and_enroll_command(owner_api: APIClient,
                                                             project: Any) -> None:
    response = owner_api.post(f"/api/v1/projects/{project.pk}/enrollment-tokens/",
                        {"note": "line 3", "expires_in_hours": 2}, format="json")
    assert response.status_code == 201, response.content
    body = response.json()
    secret = body["token"]
    assert body["enroll_command"] == (
        f"sampan-agent enroll --url http://testserver --token {secret}")
    assert body["server_url"] == "http://testserver" and body["server_url_is_local"] is True
    assert body["install_command"] == 'pip install "sampan[edge]"'
    assert body["run_command"] == "sampan-agent run --host 0.0.0.0 --port 8700"
    row = EnrollmentToken.objects.get(pk=body["id"])
    assert row.token_sha256 == secret_sha256(secret)
    assert secret not in str(EnrollmentToken.objects.filter(pk=row.pk).values().first())
    remaining = row.expires_at - timezone.now()
    assert timedelta(hours=1, minutes=59) < remaining <= timedelta(hours=2)
    listed = owner_api.get(f"/api/v1/projects/{project.pk}/enrollment-tokens/").json()
    assert [t["id"] for t in listed] == [body["id"]]
    assert "token" not in listed[0]


def test_enroll_is_one_time(project: Any, owner: Any) -> None:
    issued = services.enrollment_token_create(project=project, user=owner,
                                              expires_in=timedelta(hours=1))
    client = APIClient()
    first = client.post("/api/device/v1/enroll",
                        {"token": issued.secret, "name": "cam-1", "info": {"os": "linux"}},
                        format="json")
    assert first.status_code == 201, first.content
    body = first.json()
    assert set(body) == {"device_id", "credential", "heartbeat_interval_s", "signing_public_key",
                         "trusted_signing_keys", "re_enrolled"}
    assert body["re_enrolled"] is False
    assert body["heartbeat_interval_s"] == 5.0
    assert len(body["signing_public_key"]) == 44  # base64 of 32 raw Ed25519 bytes
    # a new installation's key ring is the one key this host signs with
    assert body["trusted_signing_keys"] == [{"key_id": public_key_id_of_host(),
                                             "public_key": body["signing_public_key"]}]
    device = Device.objects.get(pk=body["device_id"])
    assert device.project == project and device.name == "cam-1"
    assert device.info == {"os": "linux"}
    assert device.credential_sha256 == secret_sha256(body["credential"])

    second = client.post("/api/device/v1/enroll", {"token": issued.secret, "name": "cam-2"},
                         format="json")
    assert second.status_code == 401
    assert "already been used" in second.json()["error"]["message"]
    assert Device.objects.count() == 1


def test_expired_token_is_refused(project: Any, owner: Any) -> None:
    issued = services.enrollment_token_create(project=project, user=owner,
                                              expires_in=timedelta(hours=1))
    EnrollmentToken.objects.filter(pk=issued.token.pk).update(
        expires_at=timezone.now() - timedelta(seconds=1))
    response = APIClient().post("/api/device/v1/enroll", {"token": issued.secret, "name": "x"},
                                format="json")
    assert response.status_code == 401
    assert response.json()["error"]["field"] == "token"
    assert "expired" in response.json()["error"]["message"]
    assert not Device.objects.exists()


def test_unknown_token_is_refused(db: Any) -> None:
    response = APIClient().post("/api/device/v1/enroll", {"token": "spe_nope", "name": "x"},
                                format="json")
    assert response.status_code == 401
    assert response.json()["error"]["message"] == "unknown enrollment token"


def test_device_api_needs_a_valid_credential(enrolled: Any, heartbeat: Any) -> None:
    enrolled()
    anonymous = APIClient()
    response = heartbeat(anonymous)
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == "Device"
    forged = APIClient()
    forged.credentials(HTTP_AUTHORIZATION="Device spd_forged")
    assert heartbeat(forged).status_code == 401


def test_user_session_does_not_open_the_device_api(owner: Any, heartbeat: Any) -> None:
    client = APIClient()
    client.force_login(owner)
    assert heartbeat(client).status_code == 401


def test_deleted_device_credential_stops_working(owner_api: APIClient, project: Any, enrolled: Any,
                                                 heartbeat: Any) -> None:
    device, client = enrolled()
    assert heartbeat(client).status_code == 200
    url = f"/api/v1/projects/{project.pk}/devices/{device.pk}/"
    assert owner_api.delete(url).status_code == 204
    assert heartbeat(client).status_code == 401


def test_a_device_info_blob_is_bounded_and_named(project: Any, owner: Any) -> None:
    """A device's ``info`` is stored and returned in every device list: 20 MB of it (accepted
    before) is refused with the field named, and the token stays unused."""
    issued = services.enrollment_token_create(project=project, user=owner,
                                              expires_in=timedelta(hours=1))
    client = APIClient()
    big = {"notes": "x" * (16 * 1024)}
    refused = client.post("/api/device/v1/enroll",
                          {"token": issued.secret, "name": "cam-1", "info": big}, format="json")
    assert refused.status_code == 400, refused.content
    error = refused.json()["error"]
    assert error["field"] == "info" and "at most 16384" in error["message"]
    assert Device.objects.count() == 0
    fits = client.post("/api/device/v1/enroll",
                       {"token": issued.secret, "name": "cam-1",
                        "info": {"notes": "x" * 1000, "os": "linux"}}, format="json")
    assert fits.status_code == 201, fits.content


def test_enrollment_is_throttled_per_address(project: Any, owner: Any, settings: Any) -> None:
    """Enrollment needs no credential: past SAMPAN_ENROLL_RATE attempts from one address (bad
    tokens count too) the next is a 429 with Retry-After, and another address is not held."""
    from django.core.cache import cache

    cache.clear()
    settings.SAMPAN_ENROLL_RATE = "3/min"
    client = APIClient()
    for _ in range(3):
        assert client.post("/api/device/v1/enroll", {"token": "guess", "name": "cam"},
                           format="json").status_code == 401
    held = client.post("/api/device/v1/enroll", {"token": "guess", "name": "cam"},
                       format="json")
    assert held.status_code == 429 and 1 <= int(held["Retry-After"]) <= 60
    assert held.json()["error"]["code"] == "throttled"
    issued = services.enrollment_token_create(project=project, user=owner,
                                              expires_in=timedelta(hours=1))
    other = client.post("/api/device/v1/enroll", {"token": issued.secret, "name": "cam"},
                        format="json", REMOTE_ADDR="10.0.0.9")
    assert other.status_code == 201, other.content
    cache.clear()


MACHINE = "0123456789abcdef0123456789abcdef"


def _enroll(project: Any, owner: Any, **body: Any) -> Any:
    issued = services.enrollment_token_create(project=project, user=owner,
                                              expires_in=timedelta(hours=1))
    return APIClient().post("/api/device/v1/enroll", {"token": issued.secret, **body},
                            format="json")


def test_re_enrolling_the_same_device_keeps_one_device_and_revokes_the_old_credential(
        project: Any, owner: Any, owner_api: APIClient, heartbeat: Any,
        model_version: Any) -> None:
    """``sampan-agent enroll --force`` on the same machine, same name: the same device (id,
    deployments) with a new credential; the old credential is a 401 from then on."""
    first = _enroll(project, owner, name="cam-1", machine_id=MACHINE, info={"os": "a"})
    assert first.status_code == 201, first.content
    old = APIClient()
    old.credentials(HTTP_AUTHORIZATION=f"Device {first.json()['credential']}")
    assert heartbeat(old).status_code == 200
    version = model_version()
    deployed = owner_api.post(f"/api/v1/projects/{project.pk}/deployments/",
                              {"model_version_id": str(version.pk),
                               "device_ids": [first.json()["device_id"]]}, format="json")
    assert deployed.status_code == 201, deployed.content

    second = _enroll(project, owner, name="cam-1", machine_id=MACHINE, info={"os": "b"},
                     re_enroll=True)
    assert second.status_code == 201, second.content
    assert second.json()["re_enrolled"] is True
    assert second.json()["device_id"] == first.json()["device_id"]
    assert Device.objects.filter(project=project).count() == 1
    device = Device.objects.get()
    assert device.info == {"os": "b"}
    assert heartbeat(old).status_code == 401
    new = APIClient()
    new.credentials(HTTP_AUTHORIZATION=f"Device {second.json()['credential']}")
    reply = heartbeat(new)
    assert reply.status_code == 200
    # the desired deployment survives the re-enrollment
    assert reply.json()["desired"]["model_version_id"] == str(version.pk)
    listed = owner_api.get(f"/api/v1/projects/{project.pk}/devices/").json()
    assert [d["id"] for d in (listed["results"] if isinstance(listed, dict) else listed)] == [
        str(device.pk)]
    actions = owner_api.get(f"/api/v1/projects/{project.pk}/audit/").json()
    actions = [e["action"] for e in (actions["results"] if isinstance(actions, dict)
                                     else actions)]
    assert "device.re_enroll" in actions and "device.enroll" in actions


def test_without_force_the_same_device_is_a_conflict_and_the_token_stays_usable(
        project: Any, owner: Any) -> None:
    """A token admits a new device; it never silently takes over one (machines cloned from one
    image share a machine id and often a host name)."""
    first = _enroll(project, owner, name="cam-1", machine_id=MACHINE)
    issued = services.enrollment_token_create(project=project, user=owner,
                                              expires_in=timedelta(hours=1))
    body = {"token": issued.secret, "name": "cam-1", "machine_id": MACHINE}
    clash = APIClient().post("/api/device/v1/enroll", body, format="json")
    assert clash.status_code == 409, clash.content
    error = clash.json()["error"]
    assert error["field"] == "name" and "--force" in error["message"]
    old = APIClient()
    old.credentials(HTTP_AUTHORIZATION=f"Device {first.json()['credential']}")
    assert old.post("/api/device/v1/heartbeat", {"metrics": {}}, format="json").status_code != 401
    renamed = APIClient().post("/api/device/v1/enroll", {**body, "name": "cam-2"}, format="json")
    assert renamed.status_code == 201  # the same token, still unused
    assert Device.objects.filter(project=project).count() == 2


def test_only_the_same_name_and_machine_id_is_a_re_enrollment(project: Any, owner: Any) -> None:
    assert _enroll(project, owner, name="cam-1", machine_id=MACHINE).status_code == 201
    # another agent on the same machine, another name: another device
    other_name = _enroll(project, owner, name="cam-2", machine_id=MACHINE, re_enroll=True)
    # the same name from another machine, or from an agent that sends no machine id
    other_machine = _enroll(project, owner, name="cam-1", machine_id="f" * 32, re_enroll=True)
    no_id = _enroll(project, owner, name="cam-1", re_enroll=True)
    for response in (other_name, other_machine, no_id):
        assert response.status_code == 201, response.content
        assert response.json()["re_enrolled"] is False
    assert Device.objects.filter(project=project).count() == 4


def test_a_device_of_another_project_is_never_re_enrolled(project: Any, owner: Any) -> None:
    from sampan.accounts.services import project_create

    elsewhere = project_create(user=owner, name="other")
    first = _enroll(elsewhere, owner, name="cam-1", machine_id=MACHINE)
    second = _enroll(project, owner, name="cam-1", machine_id=MACHINE, re_enroll=True)
    assert second.json()["re_enrolled"] is False
    assert second.json()["device_id"] != first.json()["device_id"]
    assert Device.objects.count() == 2


def test_a_malformed_machine_id_is_refused_by_name_and_the_token_stays_usable(
        project: Any, owner: Any) -> None:
    issued = services.enrollment_token_create(project=project, user=owner,
                                              expires_in=timedelta(hours=1))
    for bad in ("not-hex", "ABCDEF0123456789ABCDEF0123456789", "ab" * 40, 12):
        response = APIClient().post("/api/device/v1/enroll",
                                    {"token": issued.secret, "name": "x", "machine_id": bad},
                                    format="json")
        assert response.status_code == 400, (bad, response.content)
        assert response.json()["error"]["field"] == "machine_id"
    ok = APIClient().post("/api/device/v1/enroll",
                          {"token": issued.secret, "name": "x", "machine_id": MACHINE},
                          format="json")
    assert ok.status_code == 201


def test_the_commands_name_the_public_url_devices_use(owner_api: APIClient, project: Any,
                                                      settings: Any) -> None:
    """SAMPAN_PUBLIC_URL (e.g. the LAN address ``make run HOST=0.0.0.0`` sets) is the URL in
    the device's commands, whatever URL the browser used."""
    settings.SAMPAN_PUBLIC_URL = "http://192.168.1.20:8000"
    body = owner_api.post(f"/api/v1/projects/{project.pk}/enrollment-tokens/", {},
                          format="json").json()
    assert body["server_url"] == "http://192.168.1.20:8000"
    assert body["server_url_is_local"] is False
    assert body["enroll_command"].startswith("sampan-agent enroll --url http://192.168.1.20:8000 ")


@pytest.mark.parametrize(("url", "local"), [
    ("http://127.0.0.1:8000/", True), ("http://127.3.4.5/", True), ("http://localhost:8000", True),
    ("http://[::1]:8000", True), ("http://0.0.0.0:8000", True), ("http://[::ffff:127.0.0.1]", True),
    ("http://[0:0:0:0:0:0:0:1]:8000", True), ("http://app.localhost:8000", True),
    ("http://sampan.lan:8000", False), ("https://sampan.example.org", False),
    ("http://10.0.0.7:8000", False)])
def test_a_loopback_server_url_is_flagged(url: str, local: bool) -> None:
    commands = services.device_setup_commands(public_url="", request_url=url, secret="spe_x")
    assert commands["server_url"] == url.rstrip("/")
    assert commands["server_url_is_local"] is local
