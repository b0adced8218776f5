"""Heartbeats: server receive time is the truth for liveness, telemetry is recorded and bounded."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from django.utils import timezone
from rest_framework.test import APIClient

from sampan.fleet.models import Device, DeviceStatus, Telemetry
from sampan.registry.signing import (
    signing_key_retire,
    signing_key_rotate,
    trusted_keys_payload,
)


def test_last_seen_is_server_time_even_when_device_clock_is_wrong(enrolled: Any,
                                                                  heartbeat: Any) -> None:
    device, client = enrolled()
    before = timezone.now()
    response = heartbeat(client, device_time="1999-01-01T00:00:00Z", agent_version="0.2.0")
    after = timezone.now()
    assert response.status_code == 200, response.content
    assert response.json() == {"heartbeat_interval_s": 5.0, "desired": None, "benchmarks": [],
                               "trusted_signing_keys": trusted_keys_payload()}
    device.refresh_from_db()
    assert before <= device.last_seen_at <= after
    assert device.device_time == datetime(1999, 1, 1, tzinfo=UTC)
    assert device.agent_version == "0.2.0"
    assert device.status == DeviceStatus.ONLINE
    assert device.last_metrics == {"requests": 10, "errors": 1,
                                   "latency_ms": {"p50": 4.5, "p95": 9.0, "p99": 12.25},
                                   "cpu_percent": 12.5, "memory_bytes": 50_000_000}
    row = Telemetry.objects.get(device=device)
    assert row.received_at == device.last_seen_at
    assert row.device_time == datetime(1999, 1, 1, tzinfo=UTC)


def test_device_clock_in_the_future_does_not_keep_a_device_online(enrolled: Any,
                                                                  heartbeat: Any) -> None:
    device, client = enrolled()
    heartbeat(client, device_time="2100-01-01T00:00:00Z")
    device.refresh_from_db()
    assert device.status_at(device.last_seen_at + timedelta(seconds=31)) == DeviceStatus.OFFLINE


def test_status_online_offline_boundary(project: Any) -> None:
    seen = datetime(2026, 11, 29, 12, 0, 0, tzinfo=UTC)
    device = Device(project=project, name="d", credential_sha256="x" * 64, last_seen_at=seen)
    assert device.status_at(seen + timedelta(seconds=30)) == DeviceStatus.ONLINE
    assert device.status_at(seen + timedelta(seconds=30, microseconds=1)) == DeviceStatus.OFFLINE
    never = Device(project=project, name="n", credential_sha256="y" * 64)
    assert never.status_at(seen) == DeviceStatus.OFFLINE


def test_device_list_status_and_filter(owner_api: APIClient, project: Any, enrolled: Any,
                                       heartbeat: Any) -> None:
    _, fresh_client = enrolled("fresh")
    stale, stale_client = enrolled("stale")
    heartbeat(fresh_client)
    heartbeat(stale_client)
    Device.objects.filter(pk=stale.pk).update(last_seen_at=timezone.now() - timedelta(seconds=31))
    enrolled("never")
    url = f"/api/v1/projects/{project.pk}/devices/"
    body = owner_api.get(url).json()
    assert [(d["name"], d["status"]) for d in body] == [
        ("fresh", "online"), ("never", "offline"), ("stale", "offline")]
    assert body[0]["last_metrics"]["latency_ms"]["p95"] == 9.0
    assert [d["name"] for d in owner_api.get(url, {"status": "online"}).json()] == ["fresh"]
    offline = owner_api.get(url, {"status": "offline"}).json()
    assert [d["name"] for d in offline] == ["never", "stale"]


def test_invalid_heartbeat_names_the_field(enrolled: Any, heartbeat: Any) -> None:
    _, client = enrolled()
    response = heartbeat(client, metrics={"requests": -3})
    assert response.status_code == 400
    assert response.json()["error"]["field"] == "metrics"
    response = heartbeat(client, deployment={"deployment_id": str(uuid.uuid4()),
                                             "state": "superseded", "error": None})
    assert response.status_code == 400
    assert response.json()["error"]["field"] == "deployment"


def test_null_metrics_before_any_request_are_accepted(enrolled: Any, heartbeat: Any) -> None:
    device, client = enrolled()
    metrics = {"requests": 0, "errors": 0, "latency_ms": {"p50": None, "p95": None, "p99": None},
               "cpu_percent": None, "memory_bytes": None}
    assert heartbeat(client, metrics=metrics, device_time=None).status_code == 200
    device.refresh_from_db()
    assert device.last_metrics == metrics
    assert device.device_time is None


def test_telemetry_history_is_bounded_and_served_oldest_first(
        settings: Any, owner_api: APIClient, project: Any, enrolled: Any, heartbeat: Any) -> None:
    from sampan.fleet.services import telemetry_retention

    settings.SAMPAN_DEVICE_TELEMETRY_KEEP = 3
    device, client = enrolled()
    other, other_client = enrolled("other")
    for count in range(5):
        heartbeat(client, metrics={"requests": count})
        heartbeat(other_client, metrics={"requests": 100 + count})
    assert Telemetry.objects.filter(device=device).count() == 5  # nothing pruned in the beat
    assert telemetry_retention().over_bound == 0  # 5 beats in 5 minutes: the age rules bound it
    # a device that beats more than once a second (here: 300 more rows this minute) is bounded
    Telemetry.objects.bulk_create(Telemetry(device=device, received_at=timezone.now()
                                            - timedelta(seconds=1 + i / 1000),
                                            metrics={"requests": -1}) for i in range(300))
    Telemetry.objects.bulk_create(Telemetry(device=other, received_at=timezone.now()
                                            - timedelta(seconds=1 + i / 1000),
                                            metrics={"requests": -1}) for i in range(300))
    assert telemetry_retention().over_bound == 2 * 302
    assert [r.metrics["requests"] for r in Telemetry.objects.filter(device=device)] == [2, 3, 4]
    assert Telemetry.objects.filter(device=other).count() == 3

    url = f"/api/v1/projects/{project.pk}/devices/{device.pk}/telemetry/"
    series = owner_api.get(url).json()
    assert [p["metrics"]["requests"] for p in series] == [2, 3, 4]
    assert [p["metrics"]["requests"] for p in owner_api.get(url, {"limit": 2}).json()] == [3, 4]
    since = series[0]["received_at"]
    assert [p["metrics"]["requests"] for p in owner_api.get(url, {"since": since}).json()] == [3, 4]
    assert owner_api.get(url, {"limit": 0}).status_code == 400


def test_heartbeat_replies_carry_the_key_ring_through_a_rotation(enrolled: Any,
                                                                 heartbeat: Any) -> None:
    device, client = enrolled()
    (first,) = heartbeat(client).json()["trusted_signing_keys"]
    rotation = signing_key_rotate()
    rotated = heartbeat(client).json()["trusted_signing_keys"]
    assert [k["key_id"] for k in rotated] == [rotation.active.key_id, first["key_id"]]
    assert rotated[0]["public_key"] == rotation.active.public_key
    signing_key_retire(key_id=first["key_id"])
    assert heartbeat(client).json()["trusted_signing_keys"] == rotated[:1]


def test_the_latency_window_and_core_count_are_kept_and_checked(enrolled: Any,
                                                                heartbeat: Any) -> None:
    device, client = enrolled()
    metrics = {"requests": 3, "errors": 0, "latency_ms": {"p50": None, "p95": None, "p99": None},
               "latency_window_s": 60.0, "cpu_percent": 12.5, "cpu_count": 4,
               "memory_bytes": 1}
    assert heartbeat(client, metrics=metrics).status_code == 200
    device.refresh_from_db()
    assert device.last_metrics["latency_window_s"] == 60.0
    assert device.last_metrics["cpu_count"] == 4
    for bad in ({"cpu_count": 0}, {"cpu_count": "four"}, {"latency_window_s": -1}):
        response = heartbeat(client, metrics={**metrics, **bad})
        assert response.status_code == 400, bad
        assert response.json()["error"]["field"].startswith("metrics"), response.json()


def test_buffered_telemetry_lands_at_its_own_time_on_the_servers_clock(
        owner_api: APIClient, project: Any, enrolled: Any, heartbeat: Any) -> None:
    """An agent that could not reach the platform sends what it kept: one row per sample, at
    the sample's device time shifted by the device clock's offset (this device runs an hour
    behind), before the current one; the count of samples it dropped is kept."""
    device, client = enrolled()
    now = timezone.now()
    behind = timedelta(hours=1)
    device_now = now - behind
    samples = [{"device_time": (device_now - timedelta(seconds=s)).isoformat(),
                "metrics": {"requests": 40 - s, "errors": 0}} for s in (30, 20, 10)]
    response = heartbeat(client, device_time=device_now.isoformat(), buffered=samples,
                         buffered_dropped=4)
    assert response.status_code == 200, response.content
    rows = list(Telemetry.objects.filter(device=device).order_by("received_at", "pk"))
    assert [r.metrics["requests"] for r in rows[:3]] == [10, 20, 30]
    for row, ago in zip(rows[:3], (30, 20, 10), strict=True):
        assert abs((now - row.received_at).total_seconds() - ago) < 5, row.received_at
    assert rows[3].metrics["telemetry_dropped"] == 4
    listed = owner_api.get(
        f"/api/v1/projects/{project.pk}/devices/{device.pk}/telemetry/").json()
    times = [r["received_at"] for r in listed]
    assert times == sorted(times) and len(times) == 4
    device.refresh_from_db()
    assert abs((device.last_seen_at - now).total_seconds()) < 5  # liveness: receive time only


def test_a_heartbeat_carries_at_most_120_buffered_samples(enrolled: Any, heartbeat: Any) -> None:
    _, client = enrolled()
    sample = {"device_time": "2026-11-29T12:00:00Z", "metrics": {"requests": 1}}
    response = heartbeat(client, buffered=[sample] * 121)
    assert response.status_code == 400
    assert response.json()["error"]["field"].startswith("buffered")
    bad = heartbeat(client, buffered=[{"metrics": {}}])
    assert bad.status_code == 400 and "buffered" in bad.json()["error"]["field"]


def test_buffered_samples_sent_twice_are_stored_once(enrolled: Any, heartbeat: Any) -> None:
    """The platform stored a heartbeat whose reply the agent never got: the agent sends the
    same samples again with the next one."""
    device, client = enrolled()
    samples = [{"device_time": f"2026-11-29T11:59:{s:02d}Z", "metrics": {"requests": s}}
               for s in (10, 20, 30)]
    assert heartbeat(client, buffered=samples).status_code == 200
    assert heartbeat(client, buffered=samples + [
        {"device_time": "2026-11-29T11:59:40Z", "metrics": {"requests": 40}}]).status_code == 200
    buffered = Telemetry.objects.filter(device=device, device_time__lt=datetime(
        2026, 11, 29, 12, 0, tzinfo=UTC))  # the two heartbeats' own rows are at 12:00
    assert sorted(r.metrics["requests"] for r in buffered) == [10, 20, 30, 40]


def test_retention_keeps_raw_rows_a_day_then_one_a_minute_then_none(
        settings: Any, enrolled: Any) -> None:
    """Raw rows for SAMPAN_TELEMETRY_RAW_S, then the last row of each minute, deleted after
    SAMPAN_TELEMETRY_KEEP_S; the counters of the kept rows are the minute's last."""
    from sampan.fleet.services import telemetry_retention

    device, _ = enrolled()
    now = timezone.now().replace(second=30, microsecond=0)
    day = timedelta(seconds=settings.SAMPAN_TELEMETRY_RAW_S)

    def row(at: datetime, requests: int) -> None:
        Telemetry.objects.create(device=device, received_at=at, metrics={"requests": requests})

    recent = [now - timedelta(seconds=s) for s in (5, 10, 15)]  # raw: all kept
    old_minute = (now - day - timedelta(minutes=10)).replace(second=0)
    for i, second in enumerate((5, 20, 35, 50)):  # one minute, four raw rows
        row(old_minute + timedelta(seconds=second), 100 + i)
    row(old_minute + timedelta(minutes=1, seconds=5), 200)  # the next minute: one row
    for i, at in enumerate(recent):
        row(at, i)
    row(now - timedelta(seconds=settings.SAMPAN_TELEMETRY_KEEP_S + 60), 999)  # expired

    result = telemetry_retention(now=now)
    assert (result.expired, result.downsampled, result.over_bound) == (1, 3, 0)
    kept = sorted(r.metrics["requests"] for r in Telemetry.objects.filter(device=device))
    assert kept == [0, 1, 2, 103, 200]  # the raw rows, the old minute's last, the next minute
    assert telemetry_retention(now=now) == type(result)(0, 0, 0)  # a second pass: nothing


def test_the_beat_runs_retention() -> None:
    from django.conf import settings as django_settings

    from sampan.celery import app

    entry = django_settings.CELERY_BEAT_SCHEDULE["telemetry-retention"]
    assert entry["task"] == "fleet.telemetry_retention" and entry["schedule"] == 300.0
    app.loader.import_default_modules()
    assert "fleet.telemetry_retention" in app.tasks
