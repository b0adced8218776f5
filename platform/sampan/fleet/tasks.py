from celery import shared_task

from sampan.fleet.alerts import alerts_evaluate
from sampan.fleet.services import telemetry_retention


@shared_task(name="fleet.telemetry_retention")
def retention() -> dict[str, int]:
    """Periodic (Celery beat): telemetry past its age deleted, older than a day downsampled to
    one row per device and minute, each device bounded (sampan.fleet.services)."""
    result = telemetry_retention()
    return {"expired": result.expired, "downsampled": result.downsampled,
            "over_bound": result.over_bound}


@shared_task(name="fleet.evaluate_alerts")
def evaluate_alerts() -> dict[str, int]:
    """Periodic (Celery beat, every minute): alert rules checked on their devices
    (sampan.fleet.alerts)."""
    return alerts_evaluate()


@shared_task(name="fleet.advance_rollouts")
def advance_rollouts() -> dict[str, int]:
    """Periodic (Celery beat, every SAMPAN_ROLLOUT_INTERVAL_S): every rolling rollout checked,
    observed, advanced or rolled back (sampan.fleet.rollouts)."""
    from sampan.fleet.rollouts import rollouts_advance

    return rollouts_advance()
