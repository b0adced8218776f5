"""The heartbeat fast path against Django's view (DeviceHeartbeatApi), found by review: bodies
the view refuses are not taken, no heartbeat of another device is lost to one bad row or a
locked database, the reply carries the headers every response does, and every change is
signalled. The fast path runs as an ASGI app in-process, Django replaced by a stub answering
599 ("handed on")."""

from __future__ import annotations

import asyncio
import codecs
import io
import json
import threading
from typing import Any

import pytest
from django.core.handlers.asgi import ASGIRequest
from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser

from sampan.fleet import fastpath
from sampan.fleet.fastpath import HeartbeatFastPath, parse
from sampan.fleet.models import Device, Telemetry
from sampan.fleet.device_serializers import HeartbeatInput

STEADY = {"device_time": "2026-11-29T12:00:00Z", "agent_version": "0.1.0",
          "current_model_version_id": None,
          "metrics": {"requests": 10, "errors": 1, "latency_ms": None}, "deployment": None}


async def _django(scope: Any, receive: Any, send: Any) -> None:
    """Stands in for Django: a 599 says the request was handed on."""
    await send({"type": "http.response.start", "status": 599, "headers": []})
    await send({"type": "http.response.body", "body": b""})


def _app() -> HeartbeatFastPath:
    app = HeartbeatFastPath(_django)
    app.writer = threading.Thread(target=lambda: None)  # no thread: the test flushes
    app.refresh()
    return app


def _post(app: HeartbeatFastPath, credential: str, body: bytes,
          extra: list[tuple[bytes, bytes]] | None = None) -> tuple[int, dict[bytes, bytes]]:
    scope = {"type": "http", "method": "POST", "path": "/api/device/v1/heartbeat",
             "scheme": "http", "headers": [
                 (b"host", b"testserver"), (b"content-type", b"application/json"),
                 (b"authorization", f"Device {credential}".encode()), *(extra or [])]}
    messages = [{"type": "http.request", "body": body, "more_body": False}]
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return messages.pop(0) if messages else {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    asyncio.run(app(scope, receive, send))
    return sent[0]["status"], dict(sent[0]["headers"])


def _credential(client: Any) -> str:
    return client._credentials["HTTP_AUTHORIZATION"].split()[1]


def _serializer_accepts(body: dict[str, Any]) -> bool:
    return HeartbeatInput(data=body).is_valid()


# --- 1. bodies Django refuses (400) that the fast path answers 200 and stores ----------------

@pytest.mark.parametrize("change", [
    {"deployment": {}}, {"deployment": []}, {"deployment": False},
    {"runtime": {}}, {"runtime": ""},
    {"buffered": {}}, {"buffered": ""}, {"buffered": 0},
    {"buffered_dropped": False}, {"buffered_dropped": ""},
])
def test_falsy_but_invalid_fields_are_not_taken(change: dict[str, Any]) -> None:
    body = {**STEADY, **change}
    assert not _serializer_accepts(body)  # Django's view answers 400
    assert parse(json.dumps(body).encode()) is None


@pytest.mark.parametrize("raw", [
    codecs.BOM_UTF8 + json.dumps(STEADY).encode(),
    json.dumps(STEADY).encode("utf-16"),
    json.dumps(STEADY).encode("utf-32"),
])
def test_bodies_djangos_json_parser_refuses_are_not_taken(raw: bytes) -> None:
    with pytest.raises(ParseError):  # Django's view: 400
        JSONParser().parse(io.BytesIO(raw), parser_context={"encoding": "utf-8"})
    assert parse(raw) is None


def test_a_lone_surrogate_in_agent_version_is_not_taken() -> None:
    body = {**STEADY, "agent_version": "0.1\ud800"}
    assert not _serializer_accepts(body)  # DRF's CharField: ProhibitSurrogateCharacters -> 400
    assert parse(json.dumps(body).encode()) is None


# --- 2. one row the database refuses loses every device's heartbeats of the batch ------------

@pytest.mark.django_db(transaction=True)
def test_a_bad_heartbeat_does_not_lose_the_other_devices_heartbeats(enrolled: Any) -> None:
    (_, a), (good, b) = enrolled("bad-agent"), enrolled("good")
    app = _app()
    bad = {**STEADY, "agent_version": "0.1\ud800"}  # once taken (200): the batch then failed
    assert _post(app, _credential(a), json.dumps(bad).encode())[0] == 599  # Django's: a 400
    assert _post(app, _credential(b), json.dumps(STEADY).encode())[0] == 200
    app.flush()
    assert Telemetry.objects.filter(device=good).count() == 1


@pytest.mark.django_db(transaction=True)
def test_a_device_deleted_before_the_flush_does_not_lose_the_others_heartbeats(
        enrolled: Any) -> None:
    (doomed, a), (good, b) = enrolled("doomed"), enrolled("good")
    app = _app()
    assert _post(app, _credential(a), json.dumps(STEADY).encode())[0] == 200
    assert _post(app, _credential(b), json.dumps(STEADY).encode())[0] == 200
    doomed.delete()  # between the answer and the write (<= 0.2 s): the telemetry FK fails
    app.flush()
    assert Telemetry.objects.filter(device=good).count() == 1
    assert Device.objects.get(pk=good.pk).last_seen_at is not None


@pytest.mark.django_db(transaction=True)
def test_a_failed_write_is_retried_not_dropped(enrolled: Any, monkeypatch: Any) -> None:
    """Through Django a database error answers 500 and the agent keeps the sample (buffered,
    sent again); the fast path answered 200, so a batch it cannot write is simply gone."""
    from django.db import OperationalError

    (device, client) = enrolled("cam")
    app = _app()
    assert _post(app, _credential(client), json.dumps(STEADY).encode())[0] == 200
    real, calls = fastpath._write, []

    def flaky(batch: Any) -> None:
        calls.append(len(batch))
        if len(calls) == 1:
            raise OperationalError("database is locked")
        real(batch)

    monkeypatch.setattr(fastpath, "_write", flaky)
    app.flush()  # the database is locked for a moment
    app.flush()  # and back
    assert Telemetry.objects.filter(device=device).count() == 1


# --- 3. the reply: headers Django adds, the scheme behind the TLS proxy ----------------------

@pytest.mark.django_db
def test_the_reply_carries_the_request_id_like_every_response(enrolled: Any) -> None:
    _, client = enrolled("cam")
    app = _app()
    status, headers = _post(app, _credential(client), json.dumps(STEADY).encode(),
                            [(b"x-request-id", b"trace-42")])
    assert status == 200
    assert headers.get(b"x-request-id") == b"trace-42"  # docs/contracts.md: every response


@pytest.mark.parametrize("values", [[b"https,http"], [b"https", b"http"]])
def test_the_scheme_behind_the_tls_proxy_is_djangos(settings: Any,
                                                    values: list[bytes]) -> None:
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    raw = [(b"host", b"testserver")] + [(b"x-forwarded-proto", v) for v in values]
    scope = {"type": "http", "method": "POST", "path": "/x", "scheme": "http",
             "headers": raw, "query_string": b""}
    django = ASGIRequest(scope, io.BytesIO()).build_absolute_uri("/")[:-1]
    assert django == "https://testserver"
    assert fastpath._origin(scope, fastpath._headers(scope)) == django


# --- 4. a change the snapshot is not told about ----------------------------------------------

def test_a_rollback_that_withdraws_a_deployment_tells_the_fast_path(
        enrolled: Any, heartbeat: Any, owner_api: Any, project: Any, model_version: Any,
        django_capture_on_commit_callbacks: Any) -> None:
    """tests/platform/fleet/test_rollouts.py's fresh-device rollback: the unstarted deployment
    of fresh-b is superseded by QuerySet.update() (no post_save): no fleet_changed on commit,
    so the fast path keeps handing it out until the snapshot ages out (30 s)."""
    from sampan.fleet.rollouts import rollouts_advance

    v2 = model_version()
    (_, ca), (b, _) = enrolled("fresh-a"), enrolled("fresh-b")
    created = owner_api.post(f"/api/v1/projects/{project.pk}/rollouts/",
                             {"model_version_id": str(v2.pk), "strategy": "all"},
                             format="json")
    assert created.status_code == 201, created.content
    desired = heartbeat(ca).json()["desired"]
    heartbeat(ca, deployment={"deployment_id": desired["deployment_id"], "state": "failed",
                              "error": "health check failed"})
    before = fastpath.snapshot()[b.credential_sha256].desired
    assert before is not None
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        assert rollouts_advance() == {"rolled_back": 1}
    assert fastpath.snapshot()[b.credential_sha256].desired is None  # the snapshot is stale
    assert fastpath.fleet_changed in callbacks


def test_a_snapshot_read_in_chunks_pauses_between_them_and_misses_no_device(
        enrolled: Any, model_version: Any, owner_api: Any, project: Any,
        monkeypatch: Any) -> None:
    """The snapshot of 10,000 devices, read in one go every 30 s, held the interpreter from the
    event loop answering heartbeats: p99 282 ms at 1,000/s (17 ms without a refresh). It is
    read in chunks with a pause after each; every device and deployment is still in it."""
    monkeypatch.setattr(fastpath, "PACE_CHUNK_ROWS", 2)
    devices = [enrolled(f"paced-{i}")[0] for i in range(5)]
    version = model_version()
    created = owner_api.post(f"/api/v1/projects/{project.pk}/deployments/",
                             {"device_ids": [str(d.pk) for d in devices[:3]],
                              "model_version_id": str(version.pk)}, format="json")
    assert created.status_code == 201, created.content
    pauses: list[float] = []
    monkeypatch.setattr(fastpath.time, "sleep", pauses.append)  # time.sleep, for this call
    entries = fastpath.snapshot()
    monkeypatch.undo()
    assert {entries[d.credential_sha256].device_id for d in devices} == {d.pk for d in devices}
    assert [entries[d.credential_sha256].desired is not None for d in devices] == [
        True, True, True, False, False]
    assert len(pauses) == 1 + 2  # 3 deployments, 5 devices: one pause per full chunk of 2
    assert all(0 <= pause <= fastpath.PACE_MAX_PAUSE_S for pause in pauses)
