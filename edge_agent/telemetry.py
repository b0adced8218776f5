"""Request metrics for heartbeats and the Prometheus ``/metrics`` page (private registry).

Heartbeat ``requests`` and ``errors`` are cumulative counts since the agent process started (a
lost heartbeat loses nothing; the control plane takes differences). Latency percentiles are over
the successful requests of the last :data:`LATENCY_WINDOW_S` seconds (at most :data:`WINDOW` of
them), so they empty out (null) when traffic stops instead of repeating old values; the heartbeat
states the window (``latency_window_s``). ``cpu_percent`` is the process's CPU time over wall
time in % of all the device's cores (``cpu_count``, 0-100).

While a detection model serves (or has served since the agent started), ``detections`` counts
the objects its answers held, cumulative like ``requests``, and ``detections_by_class`` the
same per class label: the :data:`MAX_CLASSES_REPORTED` most frequent, so a heartbeat stays small
whatever the model's classes. Classification agents send neither key.

A text model's request is one request whatever the number of texts it carries (its latency is
the whole batch's); each text is one answer for ``confidence_mean`` (its top-1 score).
"""

from __future__ import annotations

import os
import threading
import time
from collections import Counter as Tally
from collections import deque
from typing import Any

import numpy as np
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

__all__ = ["MAX_CLASSES_REPORTED", "Telemetry", "memory_bytes"]

#: Most recent successful requests kept for the latency percentiles.
WINDOW = 1024
#: The latency percentiles cover the requests of the last this many seconds.
LATENCY_WINDOW_S = 60.0
#: Most class labels a heartbeat's ``detections_by_class`` names (the most frequent ones).
MAX_CLASSES_REPORTED = 20
_LATENCY_BUCKETS_S = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)


def memory_bytes() -> int | None:
    """Resident set size of this process in bytes, from ``/proc/self/statm`` (Linux)."""
    try:
        with open("/proc/self/statm", encoding="ascii") as handle:
            resident_pages = int(handle.read().split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return resident_pages * os.sysconf("SC_PAGE_SIZE")


class Telemetry:
    """Thread-safe counters and a latency window; ``OUTCOMES`` label the request counter."""

    OUTCOMES = ("ok", "bad_request", "no_model", "error")

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self._requests = Counter(
            "sampan_agent_requests",
            "Prediction requests by outcome.",
            ["outcome"],
            registry=self.registry,
        )
        self._latency = Histogram(
            "sampan_agent_request_latency_seconds",
            "Prediction latency (decode to reply).",
            buckets=_LATENCY_BUCKETS_S,
            registry=self.registry,
        )
        self._model = Gauge(
            "sampan_agent_model_info",
            "1 for the model version being served.",
            ["model_version_id"],
            registry=self.registry,
        )
        self._deployments = Counter(
            "sampan_agent_deployments",
            "Finished deployment attempts by result.",
            ["result"],
            registry=self.registry,
        )
        self._heartbeats = Counter(
            "sampan_agent_heartbeats",
            "Heartbeats sent, by result.",
            ["result"],
            registry=self.registry,
        )
        self._detected = Counter(
            "sampan_agent_detections",
            "Objects detected, by class label (detection models).",
            ["label"],
            registry=self.registry,
        )
        for outcome in self.OUTCOMES:
            self._requests.labels(outcome)
        self._lock = threading.Lock()
        self._window: deque[tuple[float, float]] = deque(maxlen=WINDOW)  # (monotonic s, ms)
        self._served = 0  # successful requests ever appended to the window
        self._count = 0
        self._errors = 0
        self._detections: int | None = None  # None until a detection model served
        self._by_class: Tally[str] = Tally()
        # (monotonic s, top-1 probability or best detection score) of the answers
        self._confidence: deque[tuple[float, float]] = deque(maxlen=WINDOW)
        self._cpu_mark = (time.monotonic(), sum(os.times()[:2]))

    def record_request(self, outcome: str, latency_s: float) -> None:
        """One prediction request; ``outcome`` is one of :attr:`OUTCOMES`, latency in s."""
        self._requests.labels(outcome).inc()
        if outcome == "ok":
            self._latency.observe(latency_s)
        with self._lock:
            self._count += 1
            if outcome != "ok":
                self._errors += 1
            else:
                self._window.append((time.monotonic(), latency_s * 1000.0))
                self._served += 1

    def mark(self) -> int:
        """A point in the stream of successful requests, for :meth:`latencies_since`."""
        with self._lock:
            return self._served

    def latencies_since(self, mark: int) -> list[float]:
        """Latencies (ms) of the successful requests recorded after ``mark``, oldest first; the
        newest :data:`WINDOW` of them when more came."""
        with self._lock:
            count = min(self._served - mark, len(self._window))
            return ([ms for _, ms in list(self._window)[len(self._window) - count:]]
                    if count > 0 else [])

    def record_confidence(self, score: float) -> None:
        """The confidence of one answer (0-1): a classifier's top-1 probability, a detector's
        best detection score (an answer without detections records nothing), a text model's
        top-1 score (one per text of a batch)."""
        with self._lock:
            self._confidence.append((time.monotonic(), float(score)))

    def record_heartbeat(self, ok: bool) -> None:
        self._heartbeats.labels("ok" if ok else "error").inc()

    def record_deployment(self, result: str) -> None:
        self._deployments.labels(result).inc()

    def set_model(self, version_id: str | None, task: str | None = None) -> None:
        """The model version now served; a detection model starts the ``detections`` count."""
        self._model.clear()
        if version_id:
            self._model.labels(version_id).set(1)
        if task == "object_detection":
            with self._lock:
                if self._detections is None:
                    self._detections = 0

    def record_detections(self, labels: list[str]) -> None:
        """The class labels of one detection answer's objects (one entry per object)."""
        for label in labels:
            self._detected.labels(label).inc()
        with self._lock:
            self._detections = (self._detections or 0) + len(labels)
            self._by_class.update(labels)

    def _cpu_percent(self) -> float:
        """Process CPU time / wall time since the previous call, in % of all cores (0-100)."""
        now, cpu = time.monotonic(), sum(os.times()[:2])
        with self._lock:
            then, cpu_then = self._cpu_mark
            self._cpu_mark = (now, cpu)
        elapsed = now - then
        cores = os.cpu_count() or 1
        return round(100.0 * (cpu - cpu_then) / elapsed / cores, 2) if elapsed > 0 else 0.0

    def snapshot(self) -> dict[str, Any]:
        """The heartbeat ``metrics`` object; percentiles in ms over the last
        :data:`LATENCY_WINDOW_S` seconds, null when no request succeeded in it."""
        since = time.monotonic() - LATENCY_WINDOW_S
        with self._lock:
            window = np.fromiter((ms for t, ms in self._window if t >= since),
                                 dtype=np.float64)
            confidences = [c for t, c in self._confidence if t >= since]
            count, errors = self._count, self._errors
            detections = self._detections
            # most frequent first, ties by label, so consecutive heartbeats name the same ones
            by_class = sorted(self._by_class.items(), key=lambda item: (-item[1], item[0]))
        if window.size:
            p50, p95, p99 = (round(float(v), 3) for v in np.percentile(window, [50, 95, 99]))
            latency: dict[str, float | None] = {"p50": p50, "p95": p95, "p99": p99}
        else:
            latency = {"p50": None, "p95": None, "p99": None}
        snapshot: dict[str, Any] = {
            "requests": count,
            "errors": errors,
            "latency_ms": latency,
            "latency_window_s": LATENCY_WINDOW_S,
            "cpu_percent": self._cpu_percent(),
            "cpu_count": os.cpu_count(),
            "memory_bytes": memory_bytes(),
            # the mean confidence of the answers of the same window; rollouts compare it
            "confidence_mean": (round(float(np.mean(confidences)), 4) if confidences
                                else None),
        }
        if detections is not None:
            snapshot["detections"] = detections
            snapshot["detections_by_class"] = dict(by_class[:MAX_CLASSES_REPORTED])
        return snapshot

    def exposition(self) -> bytes:
        """Prometheus text format of the private registry."""
        return generate_latest(self.registry)
