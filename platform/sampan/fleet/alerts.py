"""Alert rules on devices: evaluated every minute by beat, notified by webhook and e-mail.

Each enabled :class:`~sampan.fleet.models.AlertRule` is checked on every device of its project
(or every device with its ``tag``):

- ``device_offline``: the server received no heartbeat for ``threshold`` minutes (the value is
  the minutes since the last one; a device never seen counts from its enrollment);
- ``error_rate``: of the requests counted over the last ``window_minutes`` (the difference of the
  cumulative ``requests`` and ``errors`` between the first and last heartbeat in the window; a
  counter that went down means the agent restarted and the window starts again there), the
  share that failed is above ``threshold`` (0-1); no request in the window: not met;
- ``p95_latency_ms``: the device's last reported p95 latency is above ``threshold`` ms (null,
  as with no traffic in the agent's 60 s window: not met);
- ``low_confidence``: the device's last reported mean confidence (``confidence_mean``: top-1
  probability or best detection score over the agent's 60 s window) is *below* ``threshold``
  (0-1): the model is unsure of what it sees (new lighting, a moved camera, data drift). Null
  (no answers in the window): not met.

A device that meets a rule with no firing alert for it opens one (``firing``) and notifies; one
that no longer meets it resolves the open alert and notifies again. Notifications: a POST of
``{"alert": {...}, "rule": {...}, "device": {...}}`` JSON to ``webhook_url`` (5 s timeout, the
outcome kept on the alert), and an e-mail through Django's e-mail backend (``EMAIL_*``
settings) to ``emails``. A notification that fails never stops the evaluation.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

import requests
from django.core.mail import send_mail
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.translation import gettext_noop

from sampan.fleet.models import Alert, AlertKind, AlertRule, AlertState, Device, Telemetry

log = logging.getLogger(__name__)

#: seconds a webhook may take
WEBHOOK_TIMEOUT_S = 5.0

# An alert's ``message``, stored in English: the notifications (webhook, e-mail) send it as
# stored, the API reads it in the request's language (sampan.fleet.stored_texts).
DEVICE_OFFLINE = gettext_noop("%(device)s: no heartbeat for %(minutes).0f min (rule: "
                              "%(threshold)g min)")
ERROR_RATE = gettext_noop("%(device)s: %(rate)s of requests failed over %(window)d min (rule: "
                          "%(threshold)s)")
LOW_CONFIDENCE = gettext_noop("%(device)s: mean confidence %(confidence).2f (rule: below "
                              "%(threshold).2f)")
P95_LATENCY = gettext_noop("%(device)s: p95 latency %(latency).1f ms (rule: %(threshold)g ms)")
ALERT_MESSAGES = (DEVICE_OFFLINE, ERROR_RATE, LOW_CONFIDENCE, P95_LATENCY)


def _offline_minutes(device: Device, now: datetime) -> float:
    seen = device.last_seen_at or device.created_at
    return (now - seen).total_seconds() / 60.0


def _error_rate(device: Device, now: datetime, window_minutes: int) -> float | None:
    rows = list(Telemetry.objects.filter(device=device,
                                         received_at__gte=now - timedelta(minutes=window_minutes))
                .order_by("received_at", "pk").values_list("metrics", flat=True))
    requests_total = errors_total = 0
    previous: tuple[int, int] | None = None
    for metrics in rows:
        counts = (metrics or {}).get("requests"), (metrics or {}).get("errors")
        if not all(isinstance(c, int) for c in counts):
            continue
        current = (int(counts[0]), int(counts[1]))  # type: ignore[arg-type]
        if previous is not None:
            if current[0] >= previous[0] and current[1] >= previous[1]:
                requests_total += current[0] - previous[0]
                errors_total += current[1] - previous[1]
            # else: the agent restarted; the window goes on from this row
        previous = current
    return errors_total / requests_total if requests_total else None


def rule_value(rule: AlertRule, device: Device, now: datetime) -> float | None:
    """The rule's measured value for ``device`` (minutes, fraction, ms), or None when there is
    nothing to measure."""
    if rule.kind == AlertKind.DEVICE_OFFLINE:
        return _offline_minutes(device, now)
    if rule.kind == AlertKind.ERROR_RATE:
        return _error_rate(device, now, rule.window_minutes)
    if rule.kind == AlertKind.LOW_CONFIDENCE:
        confidence = (device.last_metrics or {}).get("confidence_mean")
        return float(confidence) if isinstance(confidence, int | float) else None
    p95 = ((device.last_metrics or {}).get("latency_ms") or {}).get("p95")
    return float(p95) if isinstance(p95, int | float) else None


def rule_met(rule: AlertRule, value: float | None) -> bool:
    """Whether ``value`` (:func:`rule_value`) meets the rule: above its threshold, or below it
    for ``low_confidence``; None never does."""
    if value is None:
        return False
    return value < rule.threshold if rule.kind == AlertKind.LOW_CONFIDENCE \
        else value > rule.threshold


def _message(rule: AlertRule, device: Device, value: float) -> str:
    if rule.kind == AlertKind.DEVICE_OFFLINE:
        return DEVICE_OFFLINE % {"device": device.name, "minutes": value,
                                 "threshold": rule.threshold}
    if rule.kind == AlertKind.ERROR_RATE:
        # percentages as Python writes them ("2.5%"): the template takes them as text
        return ERROR_RATE % {"device": device.name, "rate": f"{value:.1%}",
                             "window": rule.window_minutes, "threshold": f"{rule.threshold:.1%}"}
    if rule.kind == AlertKind.LOW_CONFIDENCE:
        return LOW_CONFIDENCE % {"device": device.name, "confidence": value,
                                 "threshold": rule.threshold}
    return P95_LATENCY % {"device": device.name, "latency": value, "threshold": rule.threshold}


def _notify(alert: Alert, event: str) -> None:
    rule, device = alert.rule, alert.device
    payload = {
        "event": event,
        "alert": {"id": str(alert.pk), "state": alert.state, "message": alert.message,
                  "value": alert.value, "started_at": alert.started_at.isoformat(),
                  "resolved_at": alert.resolved_at.isoformat() if alert.resolved_at else None},
        "rule": {"id": str(rule.pk), "name": rule.name, "kind": rule.kind,
                 "threshold": rule.threshold},
        "device": {"id": str(device.pk), "name": device.name},
        "project": {"id": str(rule.project_id)},
    }
    outcome: dict[str, str] = {}
    if rule.webhook_url:
        try:
            response = requests.post(rule.webhook_url, json=payload, timeout=WEBHOOK_TIMEOUT_S)
            outcome["webhook"] = ("ok" if response.status_code < 400
                                  else f"error: HTTP {response.status_code}")
        except requests.RequestException as error:
            outcome["webhook"] = f"error: {type(error).__name__}"
    if rule.emails:
        subject = f"[Sampan] {'Resolved' if event == 'resolved' else 'Alert'}: {alert.message}"
        try:
            send_mail(subject, f"{alert.message}\n\nRule: {rule.name}\nDevice: {device.name}\n",
                      None, list(rule.emails), fail_silently=False)
            outcome["email"] = "ok"
        except Exception as error:  # any backend error: kept on the alert, never raised
            outcome["email"] = f"error: {type(error).__name__}"
    if outcome:
        Alert.objects.filter(pk=alert.pk).update(notified={**alert.notified, event: outcome})


def alerts_evaluate(*, now: datetime | None = None) -> dict[str, int]:
    """Check every enabled rule on its devices; open and resolve alerts, notify. Returns
    ``{"fired": n, "resolved": m}``."""
    now = now or timezone.now()
    fired = resolved = 0
    for rule in AlertRule.objects.filter(enabled=True).select_related("project"):
        devices = Device.objects.filter(project_id=rule.project_id)
        open_alerts = {a.device_id: a for a in
                       Alert.objects.filter(rule=rule, state=AlertState.FIRING)
                       .select_related("rule", "device")}
        for device in devices.iterator():
            if rule.tag and rule.tag not in (device.tags or []):
                continue
            value = rule_value(rule, device, now)
            met = rule_met(rule, value)
            current = open_alerts.get(device.pk)
            if met and current is None:
                assert value is not None
                try:
                    with transaction.atomic():
                        alert = Alert.objects.create(rule=rule, device=device, value=value,
                                                     message=_message(rule, device, value),
                                                     started_at=now)
                except IntegrityError:  # another evaluation opened it meanwhile
                    continue
                fired += 1
                _notify(alert, "fired")
            elif not met and current is not None:
                if Alert.objects.filter(pk=current.pk, state=AlertState.FIRING).update(
                        state=AlertState.RESOLVED, resolved_at=now, updated_at=now):
                    current.state, current.resolved_at = AlertState.RESOLVED, now
                    resolved += 1
                    _notify(current, "resolved")
    return {"fired": fired, "resolved": resolved}

