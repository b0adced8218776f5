"""Rollouts: canary first, observed against the previous version, then the rest in batches; a
regression or a failed deployment rolls the devices it reached back, and devices outside the
canary never receive the new version. Devices speak through the real device API (heartbeats
with the agent's counters and deployment reports); beat's pass is called with a chosen clock."""

from __future__ import annotations

import time
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from sampan.fleet.models import Deployment, Rollout, RolloutState, Telemetry
from sampan.fleet.rollouts import Measurement, compare, measure, rollout_series, rollouts_advance


class Fleet:
    """Enrolled devices, each running ``v1``, whose heartbeats carry cumulative counters."""

    def __init__(self, enrolled: Any, heartbeat: Any, owner_api: APIClient, project: Any,
                 v1: Any, names: list[str]) -> None:
        self.heartbeat, self.api, self.project = heartbeat, owner_api, project
        self.devices = {name: enrolled(name) for name in names}
        self.counts = {name: [0, 0] for name in names}
        self.running: dict[str, tuple[str, str]] = {}  # name -> (deployment id, version id)
        deployed = owner_api.post(f"/api/v1/projects/{project.pk}/deployments/",
                                  {"model_version_id": str(v1.pk),
                                   "device_ids": [str(d.pk) for d, _ in self.devices.values()]},
                                  format="json")
        assert deployed.status_code == 201, deployed.content
        for name in names:
            self.beat(name, requests=0, errors=0)  # picks up and runs v1

    def beat(self, name: str, *, requests: int = 100, errors: int = 1, p95: float = 10.0,
             confidence: float | None = 0.9, fail: str | None = None) -> dict[str, Any]:
        """One heartbeat: the device applies whatever it is told to run (or reports ``fail``),
        and its counters grow by ``requests`` / ``errors``."""
        device, client = self.devices[name]
        self.counts[name][0] += requests
        self.counts[name][1] += errors
        current = self.running.get(name)
        report = None
        reply = self.heartbeat(client, current_model_version_id=current and current[1],
                               metrics=self._metrics(name, p95, confidence),
                               deployment=None).json()
        desired = reply["desired"]
        if desired and (current is None or desired["deployment_id"] != current[0]):
            if fail:
                report = {"deployment_id": desired["deployment_id"], "state": "failed",
                          "error": fail}
            else:
                self.running[name] = (desired["deployment_id"], desired["model_version_id"])
                report = {"deployment_id": desired["deployment_id"], "state": "running",
                          "error": ""}
            current = self.running.get(name)
            reply = self.heartbeat(client, current_model_version_id=current and current[1],
                                   metrics=self._metrics(name, p95, confidence),
                                   deployment=report).json()
        return reply

    def _metrics(self, name: str, p95: float, confidence: float | None) -> dict[str, Any]:
        requests, errors = self.counts[name]
        return {"requests": requests, "errors": errors,
                "latency_ms": {"p50": p95 / 2, "p95": p95, "p99": p95 * 1.2},
                "cpu_percent": 10.0, "memory_bytes": 1, "confidence_mean": confidence}

    def version_of(self, name: str) -> str | None:
        current = self.running.get(name)
        return current and current[1]

    def rollout(self, **body: Any) -> Any:
        return self.api.post(f"/api/v1/projects/{self.project.pk}/rollouts/", body,
                             format="json")

    def detail(self, rollout_id: str) -> dict[str, Any]:
        response = self.api.get(f"/api/v1/projects/{self.project.pk}/rollouts/{rollout_id}/")
        assert response.status_code == 200, response.content
        return response.json()


NAMES = ["cam-a", "cam-b", "cam-c", "cam-d", "cam-e"]


@pytest.fixture
def fleet(enrolled: Any, heartbeat: Any, owner_api: APIClient, project: Any,
          model_version: Any) -> tuple[Fleet, Any, Any]:
    v1, v2 = model_version(), model_version(b"new-onnx " * 100)
    built = Fleet(enrolled, heartbeat, owner_api, project, v1, NAMES)
    for _ in range(3):  # the previous version's record: 1 % errors, p95 10 ms, confidence 0.9
        for name in NAMES:
            built.beat(name)
    return built, v1, v2


def test_a_canary_failing_20_percent_of_requests_is_rolled_back_and_nobody_else_gets_it(
        fleet: tuple[Fleet, Any, Any]) -> None:
    devices, v1, v2 = fleet
    created = devices.rollout(model_version_id=str(v2.pk), strategy="canary", canary_devices=1,
                              observe_minutes=10, batch_size=2)
    assert created.status_code == 201, created.content
    body = created.json()
    assert (body["state"], body["batches"], body["canary_devices"]) == ("rolling", 3, 1)
    for name in NAMES:
        devices.beat(name)
    canary = [n for n in NAMES if devices.version_of(n) == str(v2.pk)]
    assert canary == ["cam-a"]  # the first device; the others still run v1
    assert rollouts_advance() == {"observing": 1}

    for _ in range(3):  # the new version fails one request in five
        devices.beat("cam-a", requests=50, errors=10)
        for name in NAMES[1:]:
            devices.beat(name)
    assert rollouts_advance(now=timezone.now() + timedelta(minutes=2)) == {"rolled_back": 1}
    detail = devices.detail(body["id"])
    assert detail["state"] == "rolled_back"
    assert detail["reason"].startswith("error rate 20.0% of 150 requests against 1.0% before")
    assert detail["comparison"]["candidate"]["error_rate"] == pytest.approx(0.2)
    canary_row = next(d for d in detail["devices"] if d["device_name"] == "cam-a")
    assert canary_row["rollback"]["model_version"]["id"] == str(v1.pk)
    assert {d["batch"] for d in detail["devices"] if d["deployment"] is None} == {1, 2}

    devices.beat("cam-a")  # the canary is told to run v1 again, and does
    assert devices.version_of("cam-a") == str(v1.pk)
    assert Deployment.objects.filter(model_version=v2).count() == 1  # only the canary's
    assert rollouts_advance(now=timezone.now() + timedelta(hours=1)) == {}
    assert all(devices.version_of(n) == str(v1.pk) for n in NAMES)
    sides = {p["side"] for p in detail["series"]}
    assert sides == {"candidate", "baseline"}


def test_a_clean_canary_goes_on_in_batches_to_completion(fleet: tuple[Fleet, Any, Any]) -> None:
    devices, v1, v2 = fleet
    body = devices.rollout(model_version_id=str(v2.pk), canary_percent=20, observe_minutes=5,
                           batch_size=2).json()
    now = timezone.now()
    order: list[list[str]] = []
    for step in range(1, 8):
        for name in NAMES:
            devices.beat(name)
        order.append([n for n in NAMES if devices.version_of(n) == str(v2.pk)])
        rollouts_advance(now=now + timedelta(minutes=6 * step))
        if Rollout.objects.get(pk=body["id"]).state != RolloutState.ROLLING:
            break
    # each batch waits one pass to be seen running, then its 5 minutes
    stages = [o for i, o in enumerate(order) if i == 0 or o != order[i - 1]]
    assert stages == [["cam-a"], ["cam-a", "cam-b", "cam-c"], NAMES]
    detail = devices.detail(body["id"])
    assert detail["state"] == "completed" and detail["devices_running"] == 5
    assert detail["comparison"]["regressions"] == []
    assert detail["comparison"]["candidate"]["devices"] == 5


def test_a_deployment_that_failed_on_a_canary_rolls_back_with_its_reason(
        fleet: tuple[Fleet, Any, Any]) -> None:
    devices, v1, v2 = fleet
    body = devices.rollout(model_version_id=str(v2.pk), canary_devices=2).json()
    devices.beat("cam-a")
    devices.beat("cam-b", fail="health check failed: output differs from the reference")
    assert rollouts_advance() == {"rolled_back": 1}
    detail = devices.detail(body["id"])
    assert detail["reason"] == ("1 device(s) could not run the new version: cam-b: health "
                                "check failed: output differs from the reference")
    devices.beat("cam-a")
    assert devices.version_of("cam-a") == str(v1.pk)


def test_a_slower_or_less_confident_version_regresses(fleet: tuple[Fleet, Any, Any]) -> None:
    devices, v1, v2 = fleet
    body = devices.rollout(model_version_id=str(v2.pk), observe_minutes=30).json()
    devices.beat("cam-a")  # takes the new version
    for _ in range(3):
        devices.beat("cam-a", p95=25.0, confidence=0.6)
    assert rollouts_advance() == {"rolled_back": 1}
    reason = devices.detail(body["id"])["reason"]
    assert "p95 latency 25.0 ms against 10.0 ms before (allowed: x1.5)" in reason
    assert "mean confidence 0.60 against 0.90 before (allowed: -0.10)" in reason


def test_rollouts_refuse_what_cannot_be_done(fleet: tuple[Fleet, Any, Any],
                                             owner_api: APIClient, project: Any) -> None:
    devices, v1, v2 = fleet
    for bad, field in (({"strategy": "all", "canary_devices": 1}, "strategy"),
                       ({"canary_devices": 1, "canary_percent": 10}, "canary_percent"),
                       ({"observe_minutes": -1}, "observe_minutes"),
                       ({"max_latency_ratio": 0.5}, "max_latency_ratio"),
                       ({"tag": "nowhere"}, "tag")):
        response = devices.rollout(model_version_id=str(v2.pk), **bad)
        assert response.status_code in (400, 404), (bad, response.content)
        assert response.json()["error"]["field"] == field, response.json()
    first = devices.rollout(model_version_id=str(v2.pk)).json()
    clash = devices.rollout(model_version_id=str(v2.pk))
    assert clash.status_code == 409
    assert clash.json()["error"]["details"]["rollouts"] == [first["id"]]

    url = f"/api/v1/projects/{project.pk}/rollouts/{first['id']}/rollback/"
    rolled = owner_api.post(url, {"reason": "wrong model"}, format="json")
    assert rolled.status_code == 200 and rolled.json()["state"] == "rolled_back"
    assert rolled.json()["reason"] == "wrong model"
    assert owner_api.post(url, {}, format="json").status_code == 409
    again = devices.rollout(model_version_id=str(v2.pk), strategy="all", observe_minutes=0)
    assert again.status_code == 201  # the devices are free again
    for name in NAMES:
        devices.beat(name)
    assert rollouts_advance() == {"completed": 1}


def test_measure_counts_restarts_and_compare_needs_enough_requests() -> None:
    rows = [("d", {"requests": 100, "errors": 0}), ("d", {"requests": 120, "errors": 5}),
            ("d", {"requests": 3, "errors": 3}), ("d", {"requests": 10, "errors": 3})]
    measured = measure(rows)
    assert (measured.requests, measured.errors, measured.restarts) == (27, 5, 1)
    rollout = Rollout(max_restarts=0, min_requests=50, max_error_rate_increase=0.02,
                      max_latency_ratio=1.5, max_confidence_drop=0.1)
    assert compare(rollout, measured, Measurement()) == [
        "the agent restarted 1 time(s) on the new version (allowed: 0)"]
    rollout.max_restarts = 1
    assert compare(rollout, measured, Measurement()) == []  # 27 requests: not judged yet


def test_a_sub_millisecond_latency_wobble_is_not_a_regression() -> None:
    rollout = Rollout(max_restarts=0, min_requests=1, max_error_rate_increase=0.02,
                      max_latency_ratio=1.5, max_confidence_drop=0.1)
    assert compare(rollout, Measurement(p95_ms=0.9), Measurement(p95_ms=0.4)) == []
    assert compare(rollout, Measurement(p95_ms=3.0), Measurement(p95_ms=0.4)) == [
        "p95 latency 3.0 ms against 0.4 ms before (allowed: x1.5)"]


# --- found by review ------------------------------------------------------------------


def test_buffered_samples_of_the_canary_do_not_count_as_baseline(fleet, heartbeat) -> None:
    """A canary on v2 loses its link for a while, then sends its buffered samples (no
    current_model_version_id on them). They are v2's numbers; the baseline must not take
    them."""
    devices, v1, v2 = fleet
    body = devices.rollout(model_version_id=str(v2.pk), canary_devices=1,
                           observe_minutes=10).json()
    for name in NAMES:
        devices.beat(name)
    assert devices.version_of("cam-a") == str(v2.pk)
    # offline: the agent keeps 10 samples, each +50 requests / +10 errors (20 %), then sends
    device, client = devices.devices["cam-a"]
    now = timezone.now()
    samples = []
    for i in range(10):
        devices.counts["cam-a"][0] += 50
        devices.counts["cam-a"][1] += 10
        samples.append({"device_time": (now - timedelta(seconds=60 - 5 * i)).isoformat(),
                        "metrics": devices._metrics("cam-a", 10.0, 0.9)})
    heartbeat(client, device_time=now.isoformat(), current_model_version_id=str(v2.pk),
              metrics=devices._metrics("cam-a", 10.0, 0.9), buffered=samples)
    rollouts_advance(now=timezone.now() + timedelta(minutes=1))
    comparison = Rollout.objects.get(pk=body["id"]).comparison
    assert comparison["baseline"]["error_rate"] < 0.02, comparison["baseline"]


def test_the_rollback_returns_a_device_to_what_it_ran_when_its_batch_was_sent(fleet) -> None:
    """cam-c (batch 1) is moved to v3 by hand while the canary is observed. The rollout then
    overwrites v3 with v2 when batch 1 is sent; a rollback must bring back v3, not v1."""
    devices, v1, v2 = fleet
    from sampan.registry.models import ModelVersion
    v3 = ModelVersion.objects.create(**{f.attname: getattr(v2, f.attname)
                                        for f in ModelVersion._meta.concrete_fields
                                        if f.attname not in ("id", "version")},
                                     version=99)
    body = devices.rollout(model_version_id=str(v2.pk), canary_devices=1,
                           observe_minutes=1).json()
    for name in NAMES:
        devices.beat(name)
    hand = devices.api.post(f"/api/v1/projects/{devices.project.pk}/deployments/",
                            {"model_version_id": str(v3.pk),
                             "device_ids": [str(devices.devices['cam-c'][0].pk)]},
                            format="json")
    assert hand.status_code == 201, hand.content
    devices.beat("cam-c")
    assert devices.version_of("cam-c") == str(v3.pk)
    devices.beat("cam-a")  # the canary serves its 100 requests
    now = timezone.now()
    rollouts_advance(now=now)
    assert rollouts_advance(now=now + timedelta(minutes=2)) == {"sent": 1}
    for name in NAMES:
        devices.beat(name)
    rolled = devices.api.post(
        f"/api/v1/projects/{devices.project.pk}/rollouts/{body['id']}/rollback/", {},
        format="json")
    assert rolled.status_code == 200
    from sampan.accounts.models import AuditEvent  # who started and who rolled back, audited
    events = {event.action: event for event in AuditEvent.objects.filter(
        project=devices.project, action__startswith="rollout.")}
    assert set(events) == {"rollout.create", "rollout.rollback"}, set(events)
    assert events["rollout.rollback"].actor_name == events["rollout.create"].actor_name != ""
    assert events["rollout.rollback"].target_id == str(v2.pk)  # the version rolled back from
    cam_c = next(d for d in rolled.json()["devices"] if d["device_name"] == "cam-c")
    assert cam_c["deployment"] is None and cam_c["rollback"] is None, cam_c  # left it on v3
    assert cam_c["note"] == "deployed to by hand during the rollout: left it"
    devices.beat("cam-c")
    assert devices.version_of("cam-c") == str(v3.pk)


def test_a_rolled_back_rollout_does_not_go_on_deploying_to_devices_without_a_model(
        enrolled, heartbeat, owner_api, project, model_version) -> None:
    """Two fresh devices (no model) in a canary of 2: one fails, the other is offline and has
    not picked its deployment up yet. After the rollback it must not still be told to run the
    version the rollout was rolled back for."""
    v2 = model_version()
    (_, ca), (_, cb) = enrolled("fresh-a"), enrolled("fresh-b")
    created = owner_api.post(f"/api/v1/projects/{project.pk}/rollouts/",
                             {"model_version_id": str(v2.pk), "strategy": "all"},
                             format="json")
    assert created.status_code == 201, created.content
    desired = heartbeat(ca).json()["desired"]
    heartbeat(ca, deployment={"deployment_id": desired["deployment_id"], "state": "failed",
                              "error": "health check failed"})
    assert rollouts_advance() == {"rolled_back": 1}
    later = heartbeat(cb).json()["desired"]  # b comes online after the rollback
    assert later is None, later


def _many_devices(project: Any, count: int, version: Any) -> list[Any]:
    import uuid as _uuid

    from sampan.fleet.models import Device
    return Device.objects.bulk_create(
        Device(project=project, name=f"d{i:04d}", credential_sha256=_uuid.uuid4().hex * 2,
               current_model_version=version) for i in range(count))


def test_canary_percent_through_the_service(project: Any, owner: Any, model_version) -> None:
    from sampan.fleet.rollouts import rollout_create
    v1, v2 = model_version(), model_version(b"x" * 10)
    _many_devices(project, 250, v1)
    rollout = rollout_create(project=project, user=owner, model_version_id=v2.pk,
                             canary_percent=64.4)
    assert rollout.canary_devices == 161  # 64.4 % of 250 = 161 exactly (float math gave 162)


def test_series_cost_with_a_big_fleet(project: Any, owner: Any, model_version) -> None:
    from sampan.fleet.rollouts import rollout_create
    v1, v2 = model_version(), model_version(b"x" * 10)
    devices = _many_devices(project, 1000, v1)
    rollout = rollout_create(project=project, user=owner, model_version_id=v2.pk,
                             canary_devices=1)
    minute = timezone.now().replace(second=0, microsecond=0) + timedelta(minutes=1)
    # 1000 devices beating every 3 s: 20 heartbeats each in one minute = MAX_ROWS
    Telemetry.objects.bulk_create(
        Telemetry(device=d, received_at=minute + timedelta(seconds=3 * k, microseconds=i),
                  metrics={"requests": k, "errors": 0, "latency_ms": {"p95": 1.0}},
                  current_model_version_id=v1.pk)
        for k in range(20) for i, d in enumerate(devices))
    start = time.monotonic()
    rollout_series(rollout, now=minute + timedelta(minutes=2))
    took = time.monotonic() - start
    assert took < 2.0, f"rollout_series took {took:.1f} s for one GET of the detail"


def test_viewers_and_strangers_cannot_create_or_roll_back(fleet, member, project) -> None:
    from rest_framework.test import APIClient
    devices, v1, v2 = fleet
    body = devices.rollout(model_version_id=str(v2.pk)).json()
    from sampan.accounts.services import user_create
    stranger = user_create(username="stranger", password="pw")
    for user, status in ((member("viewer1", "viewer"), 403), (stranger, 404)):
        client = APIClient()
        client.force_authenticate(user)
        base = f"/api/v1/projects/{project.pk}/rollouts/"
        assert client.post(base, {"model_version_id": str(v2.pk)},
                           format="json").status_code == status
        assert client.post(f"{base}{body['id']}/rollback/", {},
                           format="json").status_code == status
    assert Rollout.objects.get(pk=body["id"]).state == "rolling"


def test_a_canary_that_served_nothing_does_not_promote_the_version(fleet) -> None:
    """The canary takes v2 and then serves no request at all (idle camera, or v2 breaks its
    request path before counting): every check is skipped and the rollout goes on."""
    devices, v1, v2 = fleet
    body = devices.rollout(model_version_id=str(v2.pk), canary_devices=1,
                           observe_minutes=5).json()
    for name in NAMES:
        devices.beat(name)
    now = timezone.now()
    rollouts_advance(now=now)
    for _ in range(3):
        devices.beat("cam-a", requests=0, errors=0, confidence=None, p95=0.0)
    outcome = rollouts_advance(now=now + timedelta(minutes=6))
    comparison = Rollout.objects.get(pk=body["id"]).comparison
    assert comparison["candidate"]["requests"] == 0
    assert outcome == {"observing": 1}  # not the whole fleet on zero evidence
    assert comparison["waiting_for"] == "the canary has served 0 of the 20 requests it needs"
    for _ in range(2):  # traffic comes: 40 requests, 1 in 50 failing; then the rest follows
        devices.beat("cam-a", requests=20, errors=0)
    assert rollouts_advance(now=now + timedelta(minutes=7)) == {"sent": 1}
