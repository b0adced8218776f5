"""Heartbeat metrics: latency percentiles over a stated time window, CPU as a share of cores."""

from __future__ import annotations

import os

import pytest

import edge_agent.telemetry as telemetry_module
from edge_agent.telemetry import LATENCY_WINDOW_S, Telemetry


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    fake = Clock()
    monkeypatch.setattr(telemetry_module.time, "monotonic", fake)
    return fake


def test_latency_percentiles_empty_out_when_traffic_stops(clock: Clock) -> None:
    """Percentiles cover the last LATENCY_WINDOW_S seconds: after a quiet minute they are null
    (the device page showed the same p95 for minutes after the last request), while the
    cumulative counts stay."""
    telemetry = Telemetry()
    for ms in (10.0, 20.0, 30.0, 40.0):
        telemetry.record_request("ok", ms / 1000.0)
    first = telemetry.snapshot()
    assert first["latency_ms"]["p50"] == pytest.approx(25.0)
    assert first["latency_window_s"] == LATENCY_WINDOW_S == 60.0

    clock.now += LATENCY_WINDOW_S / 2
    telemetry.record_request("ok", 0.100)
    middle = telemetry.snapshot()
    assert middle["latency_ms"]["p99"] == pytest.approx(100.0, rel=0.05)  # all five count

    clock.now += LATENCY_WINDOW_S / 2 + 1  # the first four are older than the window now
    assert telemetry.snapshot()["latency_ms"] == {"p50": 100.0, "p95": 100.0, "p99": 100.0}

    clock.now += LATENCY_WINDOW_S
    quiet = telemetry.snapshot()
    assert quiet["latency_ms"] == {"p50": None, "p95": None, "p99": None}
    assert quiet["requests"] == 5 and quiet["errors"] == 0


def test_cpu_is_a_share_of_all_cores(clock: Clock, monkeypatch: pytest.MonkeyPatch) -> None:
    """2 s of CPU time in 1 s of wall time on 4 cores is 50 %, not 200 %."""
    cpu = {"t": 0.0}
    monkeypatch.setattr(telemetry_module.os, "times", lambda: (cpu["t"], 0.0, 0.0, 0.0, 0.0))
    monkeypatch.setattr(telemetry_module.os, "cpu_count", lambda: 4)
    telemetry = Telemetry()
    clock.now += 1.0
    cpu["t"] = 2.0
    metrics = telemetry.snapshot()
    assert metrics["cpu_percent"] == pytest.approx(50.0)
    assert metrics["cpu_count"] == 4


def test_the_real_snapshot_names_this_machines_cores() -> None:
    metrics = Telemetry().snapshot()
    assert metrics["cpu_count"] == os.cpu_count()
    assert 0.0 <= metrics["cpu_percent"] <= 100.0


def test_confidence_is_the_mean_of_the_windows_answers(clock: Clock) -> None:
    """Rollouts compare it between versions: the mean over the same window as the latencies,
    null once the window holds no answer."""
    telemetry = Telemetry()
    assert telemetry.snapshot()["confidence_mean"] is None
    telemetry.record_confidence(0.9)
    clock.now += LATENCY_WINDOW_S / 2
    telemetry.record_confidence(0.5)
    assert telemetry.snapshot()["confidence_mean"] == pytest.approx(0.7)
    clock.now += LATENCY_WINDOW_S / 2 + 1  # the first has left the window
    assert telemetry.snapshot()["confidence_mean"] == pytest.approx(0.5)
    clock.now += LATENCY_WINDOW_S
    assert telemetry.snapshot()["confidence_mean"] is None
