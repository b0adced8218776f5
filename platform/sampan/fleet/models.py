"""The fleet: enrollment tokens, devices, deployments of model versions, and device telemetry.

Secrets (enrollment tokens, device credentials) are stored as their sha256 only; the secret is
shown once. Liveness is the server's receive time of the last heartbeat (docs/architecture.md,
"Model package and devices"): the device clock is recorded, never trusted.
"""

from __future__ import annotations

import hashlib
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from sampan.accounts.models import Project
from sampan.core.models import BaseModel


def secret_sha256(secret: str) -> str:
    """Hex sha256 of a secret (enrollment token or device credential), as stored."""
    return hashlib.sha256(secret.encode()).hexdigest()


class EnrollmentToken(BaseModel):
    """A one-time token that lets one device enroll into a project before ``expires_at``.

    ``used_at`` is set (compare-and-set) by the enrollment that consumes it; ``device`` is that
    device.
    """

    project = models.ForeignKey(Project, on_delete=models.CASCADE,
                                related_name="enrollment_tokens")
    token_sha256 = models.CharField(max_length=64, unique=True)
    expires_at = models.DateTimeField()
    used_at = models.DateTimeField(null=True, blank=True)
    device = models.ForeignKey("fleet.Device", null=True, blank=True, on_delete=models.SET_NULL,
                               related_name="+")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL,
                                   related_name="+")
    note = models.CharField(max_length=200, blank=True, default="")

    def __str__(self) -> str:
        return f"enrollment token {self.pk} ({self.project_id})"


class DeviceStatus(models.TextChoices):
    ONLINE = "online"
    OFFLINE = "offline"


class Device(BaseModel):
    """An enrolled edge device running the agent.

    ``last_seen_at`` is the server's receive time of the last heartbeat; ``device_time`` is the
    device's own clock as it last reported it (informational only). ``current_model_version`` is
    the model version the device reports it is serving. ``last_metrics`` is the ``metrics`` object
    of the last heartbeat (docs/contracts.md).
    """

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="devices")
    name = models.CharField(max_length=200)
    credential_sha256 = models.CharField(max_length=64, unique=True)
    tags = models.JSONField(
        default=list, blank=True,
        help_text="Group labels (e.g. line-3, canary): deploy to every device with a tag.")
    machine_id = models.CharField(
        max_length=64, blank=True, default="", db_index=True,
        help_text="The agent's app-specific machine id (hex, a hash of /etc/machine-id): with "
                  "the name, how a re-enrollment of the same device is recognised.")
    info = models.JSONField(default=dict, blank=True)
    agent_version = models.CharField(max_length=64, blank=True, default="")
    last_seen_at = models.DateTimeField(null=True, blank=True)
    device_time = models.DateTimeField(null=True, blank=True)
    current_model_version = models.ForeignKey("registry.ModelVersion", null=True, blank=True,
                                              on_delete=models.SET_NULL, related_name="+")
    last_metrics = models.JSONField(default=dict, blank=True)
    runtime = models.JSONField(
        default=dict, blank=True,
        help_text="The last heartbeat's runtime object: onnxruntime version, providers, ...")

    class Meta:
        ordering = ["name", "created_at"]

    def __str__(self) -> str:
        return self.name

    def status_at(self, now: datetime) -> str:
        """ONLINE if the last heartbeat was received at most SAMPAN_DEVICE_OFFLINE_AFTER_S ago."""
        if self.last_seen_at is None:
            return DeviceStatus.OFFLINE
        offline_after = timedelta(seconds=settings.SAMPAN_DEVICE_OFFLINE_AFTER_S)
        return (DeviceStatus.ONLINE if now - self.last_seen_at <= offline_after
                else DeviceStatus.OFFLINE)

    @property
    def status(self) -> str:
        return self.status_at(timezone.now())

    def known_runtime(self) -> dict[str, Any]:
        """What the device last said of its runtime: the heartbeat's ``runtime`` when one came
        (newer than enrollment), else ``{"onnxruntime": info["onnxruntime"]}`` from enrollment,
        else {} (unknown)."""
        if isinstance(self.runtime, dict) and self.runtime.get("onnxruntime"):
            return dict(self.runtime)
        version = (self.info or {}).get("onnxruntime") if isinstance(self.info, dict) else None
        return {"onnxruntime": version} if isinstance(version, str) and version else {}


class DeploymentState(models.TextChoices):
    PENDING = "pending"
    DOWNLOADING = "downloading"
    VERIFYING = "verifying"
    RUNNING = "running"
    FAILED = "failed"
    SUPERSEDED = "superseded"


#: States the agent may report in a heartbeat (docs/contracts.md).
REPORTABLE = frozenset({DeploymentState.DOWNLOADING, DeploymentState.VERIFYING,
                        DeploymentState.RUNNING, DeploymentState.FAILED})
_RETRYABLE_FROM = frozenset({DeploymentState.PENDING, DeploymentState.DOWNLOADING,
                             DeploymentState.VERIFYING, DeploymentState.FAILED})

#: target state -> the states it may be entered from. The agent reports its state on every
#: heartbeat, so intermediate states can be skipped (pending -> running when the device already
#: has the version) and a state can repeat; a failed deployment may be retried. A running
#: deployment only goes on to failed (the agent rolled back) or superseded. SUPERSEDED is terminal
#: and set by the server only, when a newer deployment replaces this one.
TRANSITIONS: dict[str, frozenset[str]] = {
    DeploymentState.DOWNLOADING: _RETRYABLE_FROM,
    DeploymentState.VERIFYING: _RETRYABLE_FROM,
    DeploymentState.RUNNING: _RETRYABLE_FROM | {DeploymentState.RUNNING},
    DeploymentState.FAILED: _RETRYABLE_FROM | {DeploymentState.RUNNING},
    DeploymentState.SUPERSEDED: _RETRYABLE_FROM | {DeploymentState.RUNNING},
}
TERMINAL = frozenset({DeploymentState.SUPERSEDED})


class Deployment(BaseModel):
    """One model version deployed to one device.

    At most one deployment per device is active (not superseded): it is the device's desired
    state. Creating a new one supersedes the previous. ``state`` changes only through the
    compare-and-set transitions in ``TRANSITIONS``; ``error`` is the agent's last reported reason
    (also set while a retryable failure is being retried).
    """

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="deployments")
    device = models.ForeignKey(Device, on_delete=models.CASCADE, related_name="deployments")
    model_version = models.ForeignKey("registry.ModelVersion", on_delete=models.PROTECT,
                                      related_name="deployments")
    state = models.CharField(max_length=16, choices=DeploymentState.choices,
                             default=DeploymentState.PENDING, db_index=True)
    error = models.TextField(blank=True, default="")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL,
                                   related_name="+")
    state_changed_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True,
                                       help_text="When it first reached running or failed.")

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(fields=["device"], condition=~Q(state="superseded"),
                                    name="deployment_one_active_per_device"),
        ]

    def __str__(self) -> str:
        return f"deployment {self.pk} ({self.state})"


class Telemetry(models.Model):
    """One heartbeat's report: server receive time, device clock, and the ``metrics`` object
    (``requests``, ``errors`` cumulative since the agent started; ``latency_ms`` p50/p95/p99;
    ``cpu_percent``; ``memory_bytes``). A bounded number of rows is kept per device.

    A plain auto-increment key (not BaseModel): these rows are many, small and append-only.
    """

    device = models.ForeignKey(Device, on_delete=models.CASCADE, related_name="telemetry")
    received_at = models.DateTimeField()
    device_time = models.DateTimeField(null=True, blank=True)
    metrics = models.JSONField(default=dict)
    current_model_version_id = models.UUIDField(null=True, blank=True,
                                                help_text="As reported by the device.")

    class Meta:
        ordering = ["received_at"]
        indexes = [models.Index(fields=["device", "received_at"],
                                name="telemetry_device_received")]


class BenchmarkStatus(models.TextChoices):
    PENDING = "pending"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    INCOMPATIBLE = "incompatible"
    EXPIRED = "expired"
    CANCELLED = "cancelled"


#: States a device works on (listed in its heartbeat reply, its files downloadable).
BENCHMARK_OPEN = frozenset({BenchmarkStatus.PENDING, BenchmarkStatus.RUNNING})
#: States the agent may report (docs/contracts.md, "Device API").
BENCHMARK_REPORTABLE = frozenset({BenchmarkStatus.RUNNING, BenchmarkStatus.SUCCEEDED,
                                  BenchmarkStatus.FAILED, BenchmarkStatus.INCOMPATIBLE})


class DeviceBenchmark(BaseModel):
    """One candidate model measured on one device by its agent (docs/contracts.md).

    ``package_dir`` is a storage folder holding a signed ``manifest.json`` and ``model.onnx``,
    like a registered version's package; ``inputs`` are storage names of encoded images the
    agent cycles through. ``status`` moves pending -> running -> succeeded | failed |
    incompatible as the agent reports, or pending/running -> expired | cancelled by the
    requester; every change is a compare-and-set on the status. ``compression_job_id`` and
    ``candidate`` identify the requester's candidate (no foreign key: fleet does not import
    compression).
    """

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="benchmarks")
    device = models.ForeignKey(Device, on_delete=models.CASCADE, related_name="benchmarks")
    package_dir = models.CharField(max_length=500)
    manifest = models.JSONField(default=dict)
    model_sha256 = models.CharField(max_length=64)
    model_size = models.BigIntegerField()
    inputs = models.JSONField(default=list)
    warmup = models.PositiveIntegerField(default=5)
    runs = models.PositiveIntegerField(default=50)
    status = models.CharField(max_length=16, choices=BenchmarkStatus.choices,
                              default=BenchmarkStatus.PENDING, db_index=True)
    result = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True, default="")
    compression_job_id = models.UUIDField(null=True, blank=True, db_index=True)
    candidate = models.CharField(max_length=200, blank=True, default="")
    delivered_at = models.DateTimeField(null=True, blank=True,
                                        help_text="When the device reported it running.")
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["device", "status", "created_at"],
                                name="benchmark_device_status")]

    def __str__(self) -> str:
        return f"benchmark {self.pk} ({self.status})"


class AlertKind(models.TextChoices):
    #: no heartbeat for ``threshold`` minutes
    DEVICE_OFFLINE = "device_offline"
    #: errors / requests over the last ``window_minutes`` above ``threshold`` (a fraction)
    ERROR_RATE = "error_rate"
    #: the device's reported p95 latency above ``threshold`` ms
    P95_LATENCY = "p95_latency_ms"
    #: the device's reported mean confidence (``confidence_mean``) below ``threshold`` (0-1)
    LOW_CONFIDENCE = "low_confidence"


class AlertRule(BaseModel):
    """A condition checked on each device of the project (or of one ``tag``) every minute by
    beat (``fleet.evaluate_alerts``); a device meeting it opens an :class:`Alert`, notified to
    ``webhook_url`` (POST JSON) and ``emails`` when it fires and when it resolves."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="alert_rules")
    name = models.CharField(max_length=200)
    kind = models.CharField(max_length=32, choices=AlertKind.choices)
    threshold = models.FloatField()
    window_minutes = models.PositiveIntegerField(default=5)
    tag = models.CharField(max_length=50, blank=True, default="")
    webhook_url = models.URLField(max_length=500, blank=True, default="")
    emails = models.JSONField(default=list, blank=True)
    enabled = models.BooleanField(default=True)

    class Meta:
        ordering = ["name", "created_at"]


class AlertState(models.TextChoices):
    FIRING = "firing"
    RESOLVED = "resolved"


class Alert(BaseModel):
    """One rule met by one device, from ``started_at`` until ``resolved_at`` (null: firing)."""

    rule = models.ForeignKey(AlertRule, on_delete=models.CASCADE, related_name="alerts")
    device = models.ForeignKey(Device, on_delete=models.CASCADE, related_name="alerts")
    state = models.CharField(max_length=16, choices=AlertState.choices,
                             default=AlertState.FIRING, db_index=True)
    value = models.FloatField(null=True, blank=True)
    message = models.CharField(max_length=500)
    started_at = models.DateTimeField()
    resolved_at = models.DateTimeField(null=True, blank=True)
    #: the last notification's outcome per channel ("webhook": "ok" | "error: ...")
    notified = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-started_at"]
        constraints = [
            models.UniqueConstraint(fields=["rule", "device"], condition=Q(state="firing"),
                                    name="alert_one_firing_per_rule_device"),
        ]


class RolloutStrategy(models.TextChoices):
    ALL = "all"  # every device at once
    CANARY = "canary"  # a few devices first, observed, then the rest in batches


class RolloutState(models.TextChoices):
    ROLLING = "rolling"  # a batch is being deployed or observed
    COMPLETED = "completed"  # every device runs the new version
    ROLLED_BACK = "rolled_back"  # halted; the devices it reached returned to their versions


#: target state -> the states it may be entered from (compare-and-set, as deployments)
ROLLOUT_TRANSITIONS: dict[str, frozenset[str]] = {
    RolloutState.COMPLETED: frozenset({RolloutState.ROLLING}),
    RolloutState.ROLLED_BACK: frozenset({RolloutState.ROLLING}),
}


class Rollout(BaseModel):
    """One model version rolled out to a set of devices in batches (sampan.fleet.rollouts).

    Batch 0 is the canary (``strategy`` canary) or every device (all). A batch is sent, and once
    all of its devices run the version it is observed for ``observe_minutes``: the new version on
    the devices that run it is compared with the previous version (``max_*`` thresholds); a
    regression, or a device whose deployment failed, rolls the rollout back. ``current_batch``
    is the batch sent last; ``observed_since`` when its devices all ran the version.
    """

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="rollouts")
    model_version = models.ForeignKey("registry.ModelVersion", on_delete=models.PROTECT,
                                      related_name="rollouts")
    strategy = models.CharField(max_length=16, choices=RolloutStrategy.choices)
    tag = models.CharField(max_length=50, blank=True, default="")
    canary_devices = models.PositiveIntegerField(default=0)
    batch_size = models.PositiveIntegerField(default=0, help_text="0: the rest at once.")
    observe_minutes = models.FloatField(default=10.0)
    max_error_rate_increase = models.FloatField(default=0.02)
    max_latency_ratio = models.FloatField(default=1.5)
    max_confidence_drop = models.FloatField(default=0.1)
    max_restarts = models.PositiveIntegerField(default=0)
    min_requests = models.PositiveIntegerField(default=20)
    state = models.CharField(max_length=16, choices=RolloutState.choices,
                             default=RolloutState.ROLLING, db_index=True)
    reason = models.TextField(blank=True, default="")
    current_batch = models.PositiveIntegerField(default=0)
    batches = models.PositiveIntegerField(default=1)
    observed_since = models.DateTimeField(null=True, blank=True)
    comparison = models.JSONField(default=dict, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL,
                                   related_name="+")
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"rollout {self.pk} ({self.state})"


class RolloutDevice(models.Model):
    """One device of a rollout: its batch, the version it ran before (to return to), and the
    deployments the rollout made for it (``deployment`` the new version's, ``rollback`` the
    previous version's)."""

    id = models.BigAutoField(primary_key=True)
    rollout = models.ForeignKey(Rollout, on_delete=models.CASCADE, related_name="targets")
    device = models.ForeignKey(Device, on_delete=models.CASCADE, related_name="rollout_targets")
    batch = models.PositiveIntegerField()
    previous_model_version = models.ForeignKey("registry.ModelVersion", null=True, blank=True,
                                               on_delete=models.PROTECT, related_name="+")
    deployment = models.ForeignKey(Deployment, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    rollback = models.ForeignKey(Deployment, null=True, blank=True, on_delete=models.SET_NULL,
                                 related_name="+")
    note = models.CharField(max_length=200, blank=True, default="",
                            help_text="Why the device left the rollout, if it did.")

    class Meta:
        ordering = ["batch", "id"]
        constraints = [models.UniqueConstraint(fields=["rollout", "device"],
                                               name="rollout_device_once")]
