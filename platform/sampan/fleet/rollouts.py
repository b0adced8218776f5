"""Rollouts: one model version deployed to a set of devices in batches, observed, and rolled
back automatically when the new version does worse than the one it replaces.

A rollout (:class:`~sampan.fleet.models.Rollout`) splits its devices into batches: with the
``canary`` strategy batch 0 is the canary (``canary_devices`` devices, or ``canary_percent`` of
them, at least one, and never every device of a fleet of two or more), the rest follow in
batches of ``batch_size`` (0: all at once); with ``all`` there is one batch. Beat calls
:func:`rollouts_advance` every ``SAMPAN_ROLLOUT_INTERVAL_S`` seconds; for each rolling rollout:

1. a sent deployment that failed (the agent could not download, verify or load the version, or
   its health check failed and it went back) halts the rollout and rolls it back;
2. once every device of the current batch runs the version, the batch is observed for
   ``observe_minutes``: the new version, on every device of the rollout that runs it, is compared
   with the previous version (:func:`compare`) on every pass; a regression rolls back;
3. after a clean observation the next batch is sent, or the rollout is completed. The canary
   must also have served ``min_requests`` requests on the new version: an idle canary keeps the
   rollout observing (``comparison.waiting_for`` says so) rather than promote on no evidence.

A batch is sent with each device's previous version read then (what it runs at that moment);
a device someone deployed to by hand since the rollout started leaves it (``note``) and keeps
what it was given. Rolling back (:func:`rollout_rollback`, also by hand) sends every device the
rollout reached its previous version again; a device that ran no model before has a deployment
it has not started withdrawn, and keeps the new version if it already runs it (nothing to
return to; the reason says so); devices of later batches never receive the new version.
Telemetry an agent buffered while offline carries no version and counts on neither side.

The comparison (what Kayenta-style canary analysis does with fewer statistics): the
"candidate" is the telemetry of the rollout's devices that run the new version, since their
deployment reached ``running``; the "baseline" is the telemetry of the rollout's devices running
any other version, from ``observe_minutes`` before the rollout started until now (the canaries
before their swap and the devices still waiting, side by side in time). Each side gives:
requests and errors (differences of the agent's cumulative counters between consecutive
heartbeats of one device; a counter going down is an agent restart, counted), the median of the
reported p95 latencies, and the mean of the reported mean top-1 confidence (a candidate
heartbeat whose ``latency_window_s`` began before the swap adds its counters but not its p95 and
confidence: its window mixes both versions). A regression is: more than ``max_restarts``
restarts; with at least ``min_requests`` candidate requests, an error rate above the baseline's
by more than ``max_error_rate_increase``; a median p95 above ``max_latency_ratio`` times the
baseline's and more than ``LATENCY_SLACK_MS`` above it; a mean confidence below the baseline's
by more than ``max_confidence_drop``. A side without the data a check needs skips that check.
"""

from __future__ import annotations

import logging
import math
import statistics
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop

from sampan.accounts.audit import audit_record
from sampan.accounts.models import Project
from sampan.core.errors import Conflict, NotFound, ValidationFailed
from sampan.fleet.fastpath import fleet_changed_on_commit
from sampan.fleet.models import (ROLLOUT_TRANSITIONS, TRANSITIONS, Deployment,
                                 DeploymentState, Device, Rollout, RolloutDevice, RolloutState,
                                 RolloutStrategy, Telemetry)
from sampan.registry.models import ModelVersion

log = logging.getLogger(__name__)

__all__ = ["Measurement", "compare", "rollout_create", "rollout_rollback", "rollouts_advance"]

#: telemetry rows one side of a comparison reads at most (newest kept)
MAX_ROWS = 20_000
#: a p95 regression must also be this many ms slower: a 0.5 ms model measured at 0.8 ms is
#: scheduling noise, not a regression (the ratio alone flags it)
LATENCY_SLACK_MS = 2.0

# What a rollout stores in English (beat writes most of it, outside any request), read in the
# request's language (sampan.fleet.stored_texts): the regressions of a comparison (joined by
# REASONS_SEPARATOR into a rollback's ``reason``), the other reasons, a device's ``note``.
AGENT_RESTARTED = gettext_noop("the agent restarted %(restarts)d time(s) on the new version "
                               "(allowed: %(allowed)d)")
ERROR_RATE_UP = gettext_noop("error rate %(rate)s of %(requests)d requests against %(before)s "
                             "before (allowed: +%(allowed)s)")
LATENCY_UP = gettext_noop("p95 latency %(p95).1f ms against %(before).1f ms before (allowed: "
                          "x%(allowed)g)")
CONFIDENCE_DOWN = gettext_noop("mean confidence %(confidence).2f against %(before).2f before "
                               "(allowed: -%(allowed).2f)")
REGRESSIONS = (AGENT_RESTARTED, ERROR_RATE_UP, LATENCY_UP, CONFIDENCE_DOWN)
REASONS_SEPARATOR = "; "
DEVICES_FAILED = gettext_noop("%(failed)d device(s) could not run the new version: %(device)s: "
                              "%(error)s")
DEPLOYMENT_FAILED = gettext_noop("deployment failed")
ROLLED_BACK_BY_HAND = gettext_noop("rolled back by hand")
DEVICES_KEPT = gettext_noop("%(reason)s; %(kept)d device(s) ran no model before and keep this "
                            "one")
LEFT_BY_HAND = gettext_noop("deployed to by hand during the rollout: left it")
CANARY_WAITING = gettext_noop("the canary has served %(requests)d of the %(needed)d requests it "
                              "needs")


@dataclass
class Measurement:
    """One side of a comparison. ``error_rate`` None without requests; ``p95_ms`` and
    ``confidence`` None without reports."""

    devices: int = 0
    samples: int = 0
    requests: int = 0
    errors: int = 0
    restarts: int = 0
    p95_ms: float | None = None
    confidence: float | None = None

    @property
    def error_rate(self) -> float | None:
        return self.errors / self.requests if self.requests else None

    def as_dict(self) -> dict[str, Any]:
        return {"devices": self.devices, "samples": self.samples, "requests": self.requests,
                "errors": self.errors, "error_rate": self.error_rate,
                "restarts": self.restarts, "p95_ms": self.p95_ms,
                "confidence": self.confidence}


def measure(rows: Iterable[tuple[Any, dict[str, Any]] | tuple[Any, dict[str, Any], bool]]
            ) -> Measurement:
    """A :class:`Measurement` of ``(device_id, metrics)`` or ``(device_id, metrics,
    windowed)`` rows in time order per device; a row with ``windowed`` False adds its counters
    but not its p95 and confidence (they cover a window that began before the swap)."""
    result = Measurement()
    last: dict[Any, tuple[int, int]] = {}
    p95s: list[float] = []
    confidences: list[float] = []
    devices = set()
    for row in rows:
        device_id, metrics = row[0], row[1]
        windowed = row[2] if len(row) > 2 else True  # type: ignore[misc]
        metrics = metrics if isinstance(metrics, dict) else {}
        result.samples += 1
        devices.add(device_id)
        counts = metrics.get("requests"), metrics.get("errors")
        if all(isinstance(c, int) for c in counts):
            current = (int(counts[0]), int(counts[1]))  # type: ignore[arg-type]
            previous = last.get(device_id)
            if previous is not None:
                if current[0] >= previous[0] and current[1] >= previous[1]:
                    result.requests += current[0] - previous[0]
                    result.errors += current[1] - previous[1]
                else:  # the counters started again: the agent restarted
                    result.restarts += 1
            last[device_id] = current
        if not windowed:
            continue
        p95 = (metrics.get("latency_ms") or {}).get("p95") if isinstance(
            metrics.get("latency_ms"), dict) else None
        if isinstance(p95, int | float) and math.isfinite(p95):
            p95s.append(float(p95))
        confidence = metrics.get("confidence_mean")
        if isinstance(confidence, int | float) and math.isfinite(confidence):
            confidences.append(float(confidence))
    result.devices = len(devices)
    result.p95_ms = round(statistics.median(p95s), 3) if p95s else None
    result.confidence = round(statistics.fmean(confidences), 4) if confidences else None
    return result


def compare(rollout: Rollout, candidate: Measurement, baseline: Measurement) -> list[str]:
    """The regressions of ``candidate`` (the new version) against ``baseline`` under the
    rollout's thresholds (module docstring); empty when none."""
    found = []
    if candidate.restarts > rollout.max_restarts:
        found.append(AGENT_RESTARTED % {"restarts": candidate.restarts,
                                        "allowed": rollout.max_restarts})
    rate = candidate.error_rate
    if rate is not None and candidate.requests >= rollout.min_requests:
        before = baseline.error_rate or 0.0
        if rate - before > rollout.max_error_rate_increase:
            # percentages as Python writes them ("2.5%"): the template takes them as text
            found.append(ERROR_RATE_UP % {
                "rate": f"{rate:.1%}", "requests": candidate.requests, "before": f"{before:.1%}",
                "allowed": f"{rollout.max_error_rate_increase:.1%}"})
    if candidate.p95_ms is not None and baseline.p95_ms:
        if candidate.p95_ms > rollout.max_latency_ratio * baseline.p95_ms \
                and candidate.p95_ms - baseline.p95_ms > LATENCY_SLACK_MS:
            found.append(LATENCY_UP % {"p95": candidate.p95_ms, "before": baseline.p95_ms,
                                       "allowed": rollout.max_latency_ratio})
    if candidate.confidence is not None and baseline.confidence is not None:
        if baseline.confidence - candidate.confidence > rollout.max_confidence_drop:
            found.append(CONFIDENCE_DOWN % {"confidence": candidate.confidence,
                                            "before": baseline.confidence,
                                            "allowed": rollout.max_confidence_drop})
    return found


def _rows(query: Q, swapped_at: dict[Any, datetime] | None = None
          ) -> list[tuple[Any, dict[str, Any], bool]]:
    """Telemetry rows of ``query`` as :func:`measure` reads them, the newest ``MAX_ROWS`` in
    time order. ``swapped_at``: device -> when it began running the new version; only its rows
    from then on are kept, and those whose ``latency_window_s`` began before that are not
    ``windowed`` (they mix both versions)."""
    rows = list(Telemetry.objects.filter(query).order_by("-received_at", "-pk")
                .values_list("device_id", "received_at", "metrics")[:MAX_ROWS])
    rows.reverse()
    result = []
    for device_id, received_at, metrics in rows:
        windowed = True
        if swapped_at is not None:
            if received_at < swapped_at[device_id]:
                continue
            seconds = metrics.get("latency_window_s") if isinstance(metrics, dict) else None
            seconds = seconds if isinstance(seconds, int | float) else 0.0
            windowed = received_at - timedelta(seconds=seconds) > swapped_at[device_id]
        result.append((device_id, metrics, windowed))
    return result


def measurements(rollout: Rollout, now: datetime) -> tuple[Measurement, Measurement]:
    """(candidate, baseline) of ``rollout`` at ``now`` (module docstring)."""
    version = rollout.model_version_id
    targets = list(RolloutDevice.objects.filter(rollout=rollout)
                   .select_related("deployment"))
    swapped_at = {}
    for target in targets:
        deployment = target.deployment
        if deployment is not None and deployment.finished_at is not None \
                and deployment.state == DeploymentState.RUNNING:
            swapped_at[target.device_id] = deployment.finished_at
    candidate = Measurement()
    if swapped_at:
        candidate = measure(_rows(Q(device_id__in=list(swapped_at),
                                    received_at__gte=min(swapped_at.values()),
                                    current_model_version_id=version), swapped_at))
    since = rollout.created_at - timedelta(minutes=rollout.observe_minutes)
    # rows without a version (samples an agent buffered while offline) belong to neither side
    baseline = measure(_rows(Q(device_id__in=[t.device_id for t in targets],
                               received_at__gte=since, received_at__lte=now,
                               current_model_version_id__isnull=False)
                             & ~Q(current_model_version_id=version)))
    return candidate, baseline


def _batches(count: int, strategy: str, canary: int, batch_size: int) -> list[int]:
    """The batch index of each of ``count`` devices, in order."""
    if strategy == RolloutStrategy.ALL or count == 0:
        return [0] * count
    canary = min(max(1, canary), count - 1) if count > 1 else 1
    rest = count - canary
    size = batch_size or rest or 1
    return [0] * canary + [1 + i // size for i in range(rest)]


def rollout_create(*, project: Project, user: Any, model_version_id: Any,
                   device_ids: Sequence[Any] | None = None, tag: str | None = None,
                   strategy: str = RolloutStrategy.CANARY, canary_devices: int | None = None,
                   canary_percent: float | None = None, batch_size: int = 0,
                   observe_minutes: float = 10.0, **thresholds: Any) -> Rollout:
    """Start a rollout of one model version to devices given by id, by ``tag``, or (neither)
    every device of the project, and send its first batch.

    ``canary_devices`` or ``canary_percent`` (0-100) size the canary (default: 1 device);
    ``thresholds``: the :class:`Rollout` fields ``max_error_rate_increase``,
    ``max_latency_ratio``, ``max_confidence_drop``, ``max_restarts``, ``min_requests``.

    Raises NotFound (``model_version_id``, ``device_ids`` with ``details.missing``, ``tag``),
    ValidationFailed (``device_ids``: no device, more than the deploy limit, or devices that
    cannot run the version, ``details.incompatible``), Conflict (``device_ids``, ``details.
    rollouts``) when a device is in another rolling rollout. Nothing is written then.
    """
    from sampan.fleet.selectors import devices_tagged
    from sampan.fleet.services import MAX_DEVICES_PER_DEPLOY, devices_locked_for

    version = ModelVersion.objects.filter(pk=model_version_id, project=project).first()
    if version is None:
        raise NotFound(_("model version not found in this project"), field="model_version_id")
    if tag:
        device_ids = devices_tagged(project=project, tag=tag)
        if not device_ids:
            raise NotFound(_("no device of this project has the tag %(tag)r") % {"tag": tag},
                           field="tag")
    elif device_ids is None:
        device_ids = list(Device.objects.filter(project=project).order_by("created_at")
                          .values_list("pk", flat=True))
    wanted = list(dict.fromkeys(uuid.UUID(str(pk)) for pk in device_ids))
    if not wanted:
        raise ValidationFailed(_("this project has no device to roll out to"),
                               field="device_ids")
    if len(wanted) > MAX_DEVICES_PER_DEPLOY:
        raise ValidationFailed(_("%(devices)d devices; one rollout reaches at most %(limit)d")
                               % {"devices": len(wanted), "limit": MAX_DEVICES_PER_DEPLOY},
                               field="device_ids",
                               details={"devices": len(wanted), "limit": MAX_DEVICES_PER_DEPLOY})
    with transaction.atomic():
        devices = devices_locked_for(project=project, version=version, wanted=wanted)
        busy = sorted({str(r) for r in RolloutDevice.objects.filter(
            device_id__in=wanted, rollout__state=RolloutState.ROLLING)
            .values_list("rollout_id", flat=True)})
        if busy:
            raise Conflict(_("some of these devices are in a rollout that is still rolling: "
                             "wait for it or roll it back"), field="device_ids",
                           details={"rollouts": busy})
        if canary_devices is None:
            # exact: 64.4 % of 250 is 161, where float arithmetic gives 161.00000000000003
            canary_devices = (math.ceil(Fraction(len(wanted)) * Fraction(str(canary_percent))
                                        / 100) if canary_percent is not None else 1)
        order = _batches(len(wanted), strategy, canary_devices, batch_size)
        rollout = Rollout.objects.create(
            project=project, model_version=version, strategy=strategy, tag=tag or "",
            canary_devices=order.count(0) if strategy == RolloutStrategy.CANARY else 0,
            batch_size=batch_size, observe_minutes=observe_minutes, batches=max(order) + 1,
            created_by=user, **thresholds)
        RolloutDevice.objects.bulk_create([
            RolloutDevice(rollout=rollout, device=devices[pk], batch=batch,
                          previous_model_version_id=devices[pk].current_model_version_id)
            for pk, batch in zip(wanted, order, strict=True)])
        audit_record(actor=user, action="rollout.create", project=project, target=version,
                     details={"model_version": version.label, "strategy": strategy,
                              "devices": len(wanted), "batches": rollout.batches})
        _send_batch(rollout, 0, user)
    return rollout


def _send_batch(rollout: Rollout, batch: int, user: Any) -> None:
    """Deploy to batch ``batch``. Each device's previous version is what it runs now; a device
    deployed to by hand since the rollout started leaves it (``note``) and keeps that."""
    from sampan.fleet.services import deployment_create

    targets = list(RolloutDevice.objects.filter(rollout=rollout, batch=batch)
                   .select_related("device"))
    by_hand = set(Deployment.objects.filter(
        device_id__in=[t.device_id for t in targets], created_at__gt=rollout.created_at)
        .exclude(state=DeploymentState.SUPERSEDED).values_list("device_id", flat=True))
    sending = [t for t in targets if t.device_id not in by_hand]
    for target in targets:
        if target.device_id in by_hand:
            target.note = LEFT_BY_HAND
        else:
            target.previous_model_version_id = target.device.current_model_version_id
    created = deployment_create(project=rollout.project, user=user,
                                model_version_id=rollout.model_version_id,
                                device_ids=[t.device_id for t in sending]) if sending else []
    by_device = {d.device_id: d for d in created}
    for target in sending:
        target.deployment = by_device[target.device_id]
    RolloutDevice.objects.bulk_update(targets, ["deployment", "previous_model_version", "note"])
    Rollout.objects.filter(pk=rollout.pk).update(current_batch=batch, observed_since=None,
                                                 updated_at=timezone.now())
    rollout.current_batch, rollout.observed_since = batch, None


def rollout_rollback(*, rollout: Rollout, user: Any, reason: str) -> bool:
    """Halt ``rollout`` and send every device it reached its previous version (module
    docstring). Returns False when it was no longer rolling (nothing done)."""
    from sampan.fleet.services import deployment_create

    now = timezone.now()
    with transaction.atomic():
        if not Rollout.objects.filter(pk=rollout.pk, state__in=ROLLOUT_TRANSITIONS[
                RolloutState.ROLLED_BACK]).update(state=RolloutState.ROLLED_BACK, reason=reason,
                                                  finished_at=now, updated_at=now):
            return False
        reached = [t for t in RolloutDevice.objects.filter(rollout=rollout)
                   .select_related("deployment")
                   if t.deployment is not None
                   and t.deployment.state != DeploymentState.SUPERSEDED]
        fresh = [t for t in reached if t.previous_model_version_id is None]
        # a device that ran no model before: a deployment it has not started is withdrawn (it
        # then runs nothing, as before); one it runs already is kept (nothing to return to)
        withdrawn = Deployment.objects.filter(
            pk__in=[t.deployment_id for t in fresh],
            state__in=TRANSITIONS[DeploymentState.SUPERSEDED] - {DeploymentState.RUNNING}
        ).update(state=DeploymentState.SUPERSEDED, state_changed_at=now, updated_at=now)
        kept = len(fresh) - withdrawn
        if withdrawn:
            fleet_changed_on_commit()  # an update(): no signal tells the heartbeat fast path
        by_version: dict[Any, list[RolloutDevice]] = {}
        for target in reached:
            if target.previous_model_version_id is not None:
                by_version.setdefault(target.previous_model_version_id, []).append(target)
        for version_id, targets in by_version.items():
            created = deployment_create(project=rollout.project, user=user,
                                        model_version_id=version_id,
                                        device_ids=[t.device_id for t in targets])
            by_device = {d.device_id: d for d in created}
            for target in targets:
                target.rollback = by_device[target.device_id]
            RolloutDevice.objects.bulk_update(targets, ["rollback"])
        if kept:
            Rollout.objects.filter(pk=rollout.pk).update(
                reason=DEVICES_KEPT % {"reason": reason, "kept": kept})
        audit_record(actor=user, action="rollout.rollback", project=rollout.project,
                     target=rollout.model_version, details={"reason": reason,
                                                            "devices": len(reached)})
    log.warning("rolled back %s: %s", rollout, reason)
    return True


def _advance(rollout: Rollout, now: datetime) -> str:
    sent = list(RolloutDevice.objects.filter(rollout=rollout, batch__lte=rollout.current_batch)
                .select_related("deployment", "device"))
    failed = [t for t in sent if t.deployment is not None
              and t.deployment.state == DeploymentState.FAILED]
    if failed:
        first = failed[0]
        rollout_rollback(rollout=rollout, user=None, reason=DEVICES_FAILED % {
            "failed": len(failed), "device": first.device.name,
            "error": first.deployment.error or DEPLOYMENT_FAILED})  # type: ignore[union-attr]
        return "rolled_back"
    candidate, baseline = measurements(rollout, now)
    regressions = compare(rollout, candidate, baseline)
    comparison = {"candidate": candidate.as_dict(), "baseline": baseline.as_dict(),
                  "regressions": regressions, "at": now.isoformat()}
    Rollout.objects.filter(pk=rollout.pk).update(comparison=comparison, updated_at=now)
    if regressions:
        rollout_rollback(rollout=rollout, user=None, reason=REASONS_SEPARATOR.join(regressions))
        return "rolled_back"
    # a device deployed to by someone else since has left the rollout
    waiting = [t for t in sent if t.deployment is not None
               and t.deployment.state not in (DeploymentState.RUNNING,
                                              DeploymentState.SUPERSEDED)]
    if waiting:
        return "waiting"
    if rollout.observed_since is None:
        Rollout.objects.filter(pk=rollout.pk).update(observed_since=now)
        rollout.observed_since = now
    if now - rollout.observed_since < timedelta(minutes=rollout.observe_minutes):
        return "observing"
    if rollout.strategy == RolloutStrategy.CANARY and rollout.current_batch == 0 \
            and candidate.requests < rollout.min_requests:
        # the rest of the fleet gets the version on evidence only: an idle canary (or one
        # whose requests never get counted) keeps the rollout observing until it has served
        # min_requests, or someone rolls it back
        Rollout.objects.filter(pk=rollout.pk).update(comparison={
            **comparison, "waiting_for": CANARY_WAITING % {"requests": candidate.requests,
                                                           "needed": rollout.min_requests}})
        return "observing"
    if rollout.current_batch + 1 < rollout.batches:
        _send_batch(rollout, rollout.current_batch + 1, rollout.created_by)
        return "sent"
    Rollout.objects.filter(pk=rollout.pk, state__in=ROLLOUT_TRANSITIONS[
        RolloutState.COMPLETED]).update(state=RolloutState.COMPLETED, finished_at=now,
                                        updated_at=now)
    return "completed"


def rollouts_advance(*, now: datetime | None = None) -> dict[str, int]:
    """One pass over every rolling rollout (module docstring); returns how many ended in each
    outcome (``waiting``, ``observing``, ``sent``, ``completed``, ``rolled_back``). A rollout
    whose pass raises is logged and left for the next pass."""
    outcomes: dict[str, int] = {}
    for pk in Rollout.objects.filter(state=RolloutState.ROLLING).values_list("pk", flat=True):
        try:
            with transaction.atomic():
                rollout = (Rollout.objects.select_for_update(skip_locked=True)
                           .filter(pk=pk, state=RolloutState.ROLLING)
                           .select_related("project").first())
                if rollout is None:
                    continue
                outcome = _advance(rollout, now or timezone.now())
        except Exception:
            log.exception("rollout %s: the pass failed", pk)
            outcome = "error"
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
    return outcomes


def rollout_series(rollout: Rollout, *, now: datetime | None = None) -> list[dict[str, Any]]:
    """Per minute, the ``candidate`` (new version) and ``baseline`` (any other version) of the
    rollout's devices, from ``observe_minutes`` before it started until it finished (or
    ``now``): ``{"t", "side", "requests", "error_rate", "p95_ms", "confidence"}`` as
    :func:`measure` computes them over that minute's heartbeats (a device's counter deltas
    count in the minute of the later heartbeat), oldest first."""
    end = rollout.finished_at or now or timezone.now()
    since = rollout.created_at - timedelta(minutes=rollout.observe_minutes)
    devices = list(RolloutDevice.objects.filter(rollout=rollout).values_list("device_id",
                                                                             flat=True))
    rows = list(Telemetry.objects.filter(device_id__in=devices, received_at__gte=since,
                                         received_at__lte=end)
                .order_by("-received_at", "-pk")
                .values_list("device_id", "received_at", "current_model_version_id",
                             "metrics")[:MAX_ROWS])
    rows.reverse()
    buckets: dict[tuple[datetime, str], list[tuple[Any, dict[str, Any]]]] = {}
    seen: dict[tuple[datetime, str], set[Any]] = {}
    previous: dict[Any, dict[str, Any]] = {}
    for device_id, received_at, version_id, metrics in rows:
        if version_id is None:
            continue  # buffered while offline: the version is not known
        side = "candidate" if version_id == rollout.model_version_id else "baseline"
        minute = received_at.replace(second=0, microsecond=0)
        bucket = buckets.setdefault((minute, side), [])
        devices_in = seen.setdefault((minute, side), set())
        if device_id in previous and device_id not in devices_in:
            # the counters' starting point: the device's heartbeat before this minute
            bucket.append((device_id, {k: v for k, v in previous[device_id].items()
                                       if k in ("requests", "errors")}))
        bucket.append((device_id, metrics))
        devices_in.add(device_id)
        previous[device_id] = metrics if isinstance(metrics, dict) else {}
    series = []
    for (minute, side), bucket in sorted(buckets.items(), key=lambda item: item[0]):
        measured = measure(bucket)
        series.append({"t": minute, "side": side, "requests": measured.requests,
                       "error_rate": measured.error_rate, "p95_ms": measured.p95_ms,
                       "confidence": measured.confidence})
    return series
