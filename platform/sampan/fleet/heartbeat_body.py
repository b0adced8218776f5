"""The body of a steady-state heartbeat, read as the platform's serializer would read it.

:func:`parse` is the heartbeat fast path's validation (:mod:`sampan.fleet.fastpath`): it
accepts exactly what ``HeartbeatInput`` (``sampan.fleet.device_serializers``) would accept of the
plain kinds — strict UTF-8 JSON, metrics numbers in range, a deployment report of a reportable
state, an aware ``device_time`` — and gives the values as the serializer would give them (floats
as floats, defaults filled in, the serializer's field order). Anything else gives None and
Django's view decides, so the fast path never answers differently from the view.
"""

from __future__ import annotations

import json
import math
import re
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sampan.core.parsers import MAX_JSON_INTEGER, json_document_problem

__all__ = ["MAX_ERROR_CHARS", "MAX_LATENCY_MS", "MAX_LATENCY_WINDOW_S", "Parsed", "parse"]

_LONG_DIGITS = re.compile(rb"[0-9]{16}")

#: Largest latency percentile a heartbeat may report, ms (a day: no request takes longer) ...
MAX_LATENCY_MS = 86_400_000.0
#: ... and the longest window it may cover, s (the agent's is 60 s)
MAX_LATENCY_WINDOW_S = 86_400.0


def _number(value: Any, *, integer: bool, low: float | None = 0, high: float | None = None
            ) -> tuple[bool, Any]:
    """(ok, value as the serializer would give it) for a metrics number; ``ok`` False for
    anything the fast path leaves to DRF (strings, booleans, non-finite, out of range)."""
    if value is None:
        return True, None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False, None
    if isinstance(value, int) and abs(value) > MAX_JSON_INTEGER:
        return False, None  # the view's 400; math.isfinite would raise OverflowError for 10**400
    if integer and not isinstance(value, int):
        return False, None
    if not integer:
        if not math.isfinite(value):
            return False, None
        value = float(value)
    if (low is not None and value < low) or (high is not None and value > high):
        return False, None
    return True, value


#: metrics field -> (integer, low, high, has a default of None when absent)
_METRICS: dict[str, tuple[bool, float | None, float | None, bool]] = {
    "requests": (True, 0, None, True),
    "errors": (True, 0, None, True),
    "latency_window_s": (False, 0, MAX_LATENCY_WINDOW_S, False),
    "cpu_percent": (False, 0, None, True),
    "cpu_count": (True, 1, 4096, False),
    "memory_bytes": (True, 0, None, True),
    "confidence_mean": (False, 0, 1, False),
    "detections": (True, 0, None, False),
}
#: Longest error text kept (characters): a deployment report's error, in the fast path and in
#: sampan.fleet.services, and a benchmark's (sampan.fleet.benchmarks).
MAX_ERROR_CHARS = 4000


@dataclass(frozen=True)
class Parsed:
    device_time: datetime | None
    agent_version: str
    current_model_version_id: uuid.UUID | None
    metrics: dict[str, Any]
    #: the body's ``runtime`` object as sent (compared with the stored one), or None
    runtime: dict[str, Any] | None = None
    #: the deployment report as ``(deployment id, state, error)``, or None
    report: tuple[str, str, str] | None = None


_REPORTABLE = frozenset({"downloading", "verifying", "running", "failed"})


def _report(raw: Any) -> tuple[str, str, str] | None | bool:
    """The deployment report as the serializer would read it; None when absent, False when
    the serializer must decide."""
    if raw is None:
        return None
    if not isinstance(raw, dict) or not isinstance(raw.get("deployment_id"), str) \
            or raw.get("state") not in _REPORTABLE:
        return False
    error = raw.get("error", "")
    if error is None:
        error = ""
    if not isinstance(error, str) or not _utf8(error):
        return False
    try:
        deployment_id = uuid.UUID(raw["deployment_id"])
    except ValueError:
        return False
    return str(deployment_id), str(raw["state"]), error[:MAX_ERROR_CHARS]


def _utf8(text: str) -> bool:
    """False for a string the database cannot store (lone surrogates; DRF refuses them)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return "\x00" not in text


def _metrics(raw: Any) -> dict[str, Any] | None:
    """The metrics as ``MetricsInput`` validates them (defaults filled in, floats as floats), or
    None when this must be left to the serializer."""
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        return None
    result: dict[str, Any] = {}
    for name, (integer, low, high, defaulted) in _METRICS.items():
        if name in raw:
            ok, value = _number(raw[name], integer=integer, low=low, high=high)
            if not ok:
                return None
            result[name] = value
        elif defaulted:
            result[name] = None
    latency = raw.get("latency_ms")
    if latency is None:
        result["latency_ms"] = None
    elif isinstance(latency, dict):
        values = {}
        for key in ("p50", "p95", "p99"):
            ok, value = _number(latency.get(key), integer=False, high=MAX_LATENCY_MS)
            if not ok:
                return None
            values[key] = value
        result["latency_ms"] = values
    else:
        return None
    if raw.get("detections_by_class") is not None:
        return None  # its own validation (labels, counts): the serializer's
    if "detections_by_class" in raw:
        result["detections_by_class"] = None
    # the serializer's field order, so the stored JSON is the same object either way
    order = ["requests", "errors", "latency_ms", "latency_window_s", "cpu_percent", "cpu_count",
             "memory_bytes", "confidence_mean", "detections", "detections_by_class"]
    return {key: result[key] for key in order if key in result}


def parse(body: bytes) -> Parsed | None:
    """A steady-state heartbeat body as ``HeartbeatInput`` would validate it, or None when it
    is anything else (module docstring): the serializer then decides."""
    try:
        text = body.decode("utf-8")  # strictly, as DRF's parser: no BOM, no UTF-16 or -32
        data = json.loads(text) if not text.startswith("\ufeff") else None
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(data, dict):
        return None
    # a NUL or a surrogate reaches a parsed string only through a \u escape (raw ones are not
    # valid JSON or UTF-8), an integer past 2**53 - 1 only as 16+ digits: most beats skip the walk
    if (b"\\u" in body or _LONG_DIGITS.search(body)) and json_document_problem(data) is not None:
        return None  # the view's 400 (sampan.core.parsers), even for a key the view drops
    if data.get("buffered", []) != [] or not isinstance(data.get("buffered", []), list):
        return None
    dropped = data.get("buffered_dropped", 0)
    if type(dropped) is not int or dropped != 0:
        return None
    runtime = data.get("runtime")
    if runtime is not None and not (isinstance(runtime, dict) and runtime):
        return None
    report = _report(data.get("deployment"))
    if report is False:
        return None
    device_time = data.get("device_time")
    if device_time is not None:
        if not isinstance(device_time, str):
            return None
        try:
            device_time = datetime.fromisoformat(device_time)
        except ValueError:
            return None
        if device_time.tzinfo is None:
            return None  # naive: the serializer's time zone rules apply
        try:
            device_time = device_time.astimezone(UTC)
        except OverflowError:  # year 9999 at -14:00 is past datetime.max in UTC: the view's 400
            return None
    agent_version = data.get("agent_version", "")
    if agent_version is None or not isinstance(agent_version, str) or len(agent_version) > 64 \
            or agent_version != agent_version.strip() or not _utf8(agent_version):
        return None
    current = data.get("current_model_version_id")
    if current is not None:
        if not isinstance(current, str):
            return None
        try:
            current = uuid.UUID(current)
        except ValueError:
            return None
    metrics = _metrics(data.get("metrics"))
    if metrics is None:
        return None
    return Parsed(device_time, agent_version, current, metrics, runtime,
                  report)  # type: ignore[arg-type]
