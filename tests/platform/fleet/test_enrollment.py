"""Enrollment: one-time tokens, expiry, the enroll command, device credentials."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

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
                         "trusted_signing_keys"}
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
