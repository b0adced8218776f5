"""What the fleet stores in English outside a request, read in the request's language.

Beat writes alerts and rollbacks, a worker and the agents write benchmarks: all in English, the
language of the notifications (an alert's webhook and e-mail send its message as stored) and of
API clients that ask for none (docs/decisions/api-messages.md, "Text stored in English"). Their
sentences are msgids marked with ``gettext_noop`` next to the code that writes them; the readers
below recognise them (``sampan.core.stored_text``) and the output serializers show them in the
request's language, names and figures unchanged. An agent's own error, a person's own rollback
reason and a text written before are shown as stored.
"""

from __future__ import annotations

from typing import Any

from django.utils.translation import gettext_noop
from rest_framework import serializers

from sampan.core.stored_text import Joined, Templates, read_text, read_texts
from sampan.fleet import alerts, benchmarks, compatibility, rollouts

#: the separator of a list of reasons in the active language (benchmarks' incompatibilities,
#: a rollback's regressions; stored as "; ")
REASONS_JOINER = gettext_noop("; ")

#: why a device cannot load a model (sampan.fleet.compatibility), one reason
INCOMPATIBILITY = Templates(*compatibility.INCOMPATIBILITIES,
                            inner={"offered": Templates(compatibility.NO_PROVIDER, other=True)})
#: an incompatible benchmark's ``error``: its reasons joined
INCOMPATIBILITIES = Joined(INCOMPATIBILITY, separator=benchmarks.REASONS_SEPARATOR,
                           joiner=REASONS_JOINER)
#: a benchmark's ``error``: its incompatibilities, or why it was closed; an agent's as stored
BENCHMARK_ERRORS = Templates(
    benchmarks.CANCELLED_BY_REQUESTER, benchmarks.EXPIRED, benchmarks.NOT_MEASURED_IN_TIME,
    benchmarks.DEVICE_WENT_OFFLINE, INCOMPATIBILITIES)
#: an alert's ``message``
ALERT_MESSAGES = Templates(*alerts.ALERT_MESSAGES)
#: one regression of a rollout's comparison
REGRESSION = Templates(*rollouts.REGRESSIONS)
_ROLLBACK_REASON = Templates(
    Joined(REGRESSION, separator=rollouts.REASONS_SEPARATOR, joiner=REASONS_JOINER),
    rollouts.DEVICES_FAILED, rollouts.ROLLED_BACK_BY_HAND,
    inner={"error": Templates(rollouts.DEPLOYMENT_FAILED, other=True)}, other=True)
#: a rollout's ``reason`` (a person's own words as they typed them)
ROLLBACK_REASONS = Templates(rollouts.DEVICES_KEPT, _ROLLBACK_REASON,
                             inner={"reason": _ROLLBACK_REASON})
#: a rollout device's ``note``
ROLLOUT_NOTES = Templates(rollouts.LEFT_BY_HAND)
#: a rollout comparison's ``waiting_for``
ROLLOUT_WAITING = Templates(rollouts.CANARY_WAITING)


def benchmark_incompatibilities(error: str) -> list[str]:
    """The reasons of an incompatible benchmark's ``error``, as stored (a reason holds the
    separator itself: "the model needs onnxruntime >= 1.17.0; the device has 1.16.3")."""
    return INCOMPATIBILITIES.split(error) or [
        reason for reason in error.split(benchmarks.REASONS_SEPARATOR) if reason]


def rollout_comparison_text(comparison: Any) -> Any:
    """A rollout's ``comparison`` with its regressions and what it waits for in the active
    language."""
    if not isinstance(comparison, dict):
        return comparison
    shown = dict(comparison)
    if "regressions" in shown:
        shown["regressions"] = read_texts(shown["regressions"], REGRESSION)
    if isinstance(shown.get("waiting_for"), str):
        shown["waiting_for"] = read_text(shown["waiting_for"], ROLLOUT_WAITING)
    return shown


class RolloutComparisonField(serializers.JSONField):
    """A rollout's last comparison, its sentences in the request's language."""

    def to_representation(self, value: Any) -> Any:
        return super().to_representation(rollout_comparison_text(value))


__all__ = ["ALERT_MESSAGES", "BENCHMARK_ERRORS", "INCOMPATIBILITIES", "INCOMPATIBILITY",
           "REASONS_JOINER", "REGRESSION", "ROLLBACK_REASONS", "ROLLOUT_NOTES", "ROLLOUT_WAITING",
           "RolloutComparisonField", "benchmark_incompatibilities", "rollout_comparison_text"]
