"""The heartbeat fast path's parser against the serializer it stands in for: a body it takes is
stored exactly as ``HeartbeatInput`` would store it; every other body is left to the
serializer (which then accepts or rejects it with its own message)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from sampan.fleet.device_apis import _plain
from sampan.fleet.fastpath import parse
from sampan.fleet.device_serializers import HeartbeatInput

STEADY = {"device_time": "2026-11-29T12:00:00Z", "agent_version": "0.1.0",
          "current_model_version_id": None,
          "metrics": {"requests": 10, "errors": 1,
                      "latency_ms": {"p50": 4.5, "p95": 9, "p99": None},
                      "latency_window_s": 60, "cpu_percent": 12, "cpu_count": 4,
                      "memory_bytes": 50_000_000, "confidence_mean": 0.5},
          "deployment": None}


def _serializer(body: dict[str, Any]) -> dict[str, Any] | None:
    data = HeartbeatInput(data=body)
    return data.validated_data if data.is_valid() else None


@pytest.mark.parametrize("change", [
    {},
    {"metrics": None},
    {"metrics": {}},
    {"metrics": {"requests": 0}},
    {"metrics": {"latency_ms": None, "cpu_percent": 0}},
    {"metrics": {"detections": 3, "detections_by_class": None}},
    {"device_time": None, "agent_version": ""},
    {"device_time": "2026-11-29T20:00:00+08:00"},
    {"current_model_version_id": "6f1f7b1c-3f5e-4c55-9d87-0b4c3f0e2b11"},
    {"buffered": [], "buffered_dropped": 0, "runtime": None, "unknown_field": 1},
])
def test_what_the_fast_path_takes_it_stores_as_the_serializer_would(change: dict[str, Any]
                                                                      ) -> None:
    body = {**STEADY, **change}
    parsed = parse(json.dumps(body).encode())
    expected = _serializer(body)
    assert parsed is not None and expected is not None
    assert parsed.metrics == _plain(expected["metrics"] or {})
    assert json.dumps(parsed.metrics) == json.dumps(_plain(expected["metrics"] or {}))
    assert parsed.device_time == expected["device_time"]
    assert parsed.agent_version == expected["agent_version"]
    assert parsed.current_model_version_id == expected["current_model_version_id"]


def test_a_report_and_a_runtime_are_read_for_comparison_with_what_is_stored() -> None:
    """A converged agent repeats both on every beat: the fast path takes the beat only when
    they equal the stored state (HeartbeatFastPath._answer); here they are read as the
    serializer reads them."""
    body = {**STEADY, "runtime": {"onnxruntime": "1.20.0", "providers": []},
            "deployment": {"deployment_id": "6F1F7B1C-3F5E-4C55-9D87-0B4C3F0E2B11",
                           "state": "running", "error": None}}
    parsed = parse(json.dumps(body).encode())
    assert parsed is not None
    assert parsed.report == ("6f1f7b1c-3f5e-4c55-9d87-0b4c3f0e2b11", "running", "")
    assert parsed.runtime == {"onnxruntime": "1.20.0", "providers": []}


@pytest.mark.parametrize("change", [
    {"deployment": {"deployment_id": "d1", "state": "running", "error": ""}},
    {"deployment": {"deployment_id": "6f1f7b1c-3f5e-4c55-9d87-0b4c3f0e2b11",
                    "state": "superseded", "error": ""}},
    {"deployment": {"deployment_id": "6f1f7b1c-3f5e-4c55-9d87-0b4c3f0e2b11",
                    "state": "failed", "error": 7}},
    {"runtime": "1.20.0"},
    {"buffered": [{"device_time": "2026-11-29T12:00:00Z", "metrics": {}}]},
    {"buffered_dropped": 3},
    {"metrics": {"requests": -1}},
    {"metrics": {"requests": "10"}},
    {"metrics": {"requests": 1.5}},
    {"metrics": {"requests": True}},
    {"metrics": {"cpu_percent": float("nan")}},
    {"metrics": {"cpu_count": 0}},
    {"metrics": {"confidence_mean": 1.5}},
    {"metrics": {"latency_ms": {"p95": -3}}},
    {"metrics": {"latency_ms": [1, 2]}},
    {"metrics": {"detections_by_class": {"car": 3}}},
    {"metrics": []},
    {"device_time": "yesterday"},
    {"device_time": "2026-11-29T12:00:00"},
    {"agent_version": " 0.1.0"},
    {"agent_version": "v" * 65},
    {"agent_version": None},
    {"current_model_version_id": "not-a-uuid"},
    {"current_model_version_id": 7},
])
def test_anything_else_is_left_to_the_serializer(change: dict[str, Any]) -> None:
    assert parse(json.dumps({**STEADY, **change}).encode()) is None


@pytest.mark.parametrize("raw", [b"", b"[]", b"null", b"{", b"\xff\xfe", b'"text"'])
def test_bodies_that_are_not_a_json_object_are_left_to_the_serializer(raw: bytes) -> None:
    assert parse(raw) is None
