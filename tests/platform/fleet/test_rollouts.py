"""Rollouts: canary first, observed against the previous version, then the rest in batches; a
regression or a failed deployment rolls the devices it reached back, and devices outside the
canary never receive the new version. Devices speak through the real device API (heartbeats
with the agent's counters and deployment reports); beat's pass is called with a chosen clock."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from sampan.fleet.models import Deployment, Rollout, RolloutState
from sampan.fleet.rollouts import Measurement, compare, measure, rollouts_advance


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
