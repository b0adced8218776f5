"""A steady heartbeat body in the device API's contract format, shared by the fleet tests."""

from __future__ import annotations

import copy
from typing import Any

_STEADY: dict[str, Any] = {
    "device_time": "2026-11-29T12:00:00Z", "agent_version": "0.1.0",
    "current_model_version_id": None,
    "metrics": {"requests": 10, "errors": 1,
                "latency_ms": {"p50": 4.5, "p95": 9.0, "p99": 12.25},
                "cpu_percent": 12.5, "memory_bytes": 50_000_000},
    "deployment": None,
}


def steady_heartbeat(**fields: Any) -> dict[str, Any]:
    """A fresh copy of the steady heartbeat body; keyword arguments replace fields."""
    return {**copy.deepcopy(_STEADY), **fields}
