"""Input and output serializers of the fleet's project API (no side effects); the device API's
are :mod:`sampan.fleet.device_serializers`."""

from __future__ import annotations

from typing import Any

from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from rest_framework import serializers

from sampan.core.stored_text import StoredTextField
from sampan.core.validation import NameField, TextField
from sampan.fleet.models import (
    AlertKind,
    AlertState,
    BenchmarkStatus,
    DeploymentState,
    DeviceStatus,
    RolloutState,
    RolloutStrategy,
)
from sampan.fleet.rollouts import ROLLED_BACK_BY_HAND
from sampan.fleet.stored_texts import (ALERT_MESSAGES, BENCHMARK_ERRORS, ROLLBACK_REASONS,
                                       ROLLOUT_NOTES, RolloutComparisonField)


class StrictCharField(serializers.CharField):
    """A CharField that refuses numbers and booleans instead of turning them into text."""

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)  # type: ignore[no-any-return]


# --- project API ------------------------------------------------------------------------------


#: a device tag: a letter or digit, then letters, digits, ".", "_", ":" or "-" (at most 50)
TAG_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,49}$"
MAX_TAGS = 20


#: largest page of the devices list (GET .../devices/?limit=)
MAX_DEVICE_PAGE = 1000


class TagField(serializers.RegexField):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(TAG_PATTERN, max_length=50, error_messages={
            "invalid": gettext_lazy("a tag is 1-50 letters, digits, '.', '_', ':' or '-', "
                                    "starting with a letter or digit")}, **kwargs)

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):  # a JSON number is not a tag (CharField would cast it)
            self.fail("invalid")
        return str(super().to_internal_value(data))


class EnrollmentTokenInput(serializers.Serializer):
    expires_in_hours = serializers.FloatField(default=24.0, min_value=0.05, max_value=24 * 30,
                                              help_text="Validity of the token (hours).")
    note = TextField(max_length=200, required=False, allow_blank=True, default="")


class EnrollmentTokenOutput(serializers.Serializer):
    id = serializers.UUIDField()
    note = serializers.CharField()
    expires_at = serializers.DateTimeField()
    used_at = serializers.DateTimeField(allow_null=True)
    device_id = serializers.UUIDField(allow_null=True)
    created_at = serializers.DateTimeField()
    created_by = serializers.CharField(source="created_by.username", allow_null=True,
                                       default=None)


class IssuedEnrollmentTokenOutput(EnrollmentTokenOutput):
    token = serializers.CharField(help_text="The secret; shown only in this response.")
    server_url = serializers.CharField(
        help_text="The platform's URL as devices reach it: SAMPAN_PUBLIC_URL, else this "
                  "request's.")
    server_url_is_local = serializers.BooleanField(
        help_text="True when server_url names this machine only (localhost, 127.0.0.1): "
                  "devices on other machines cannot reach it.")
    install_command = serializers.CharField(help_text="1. Run this on the device: the agent.")
    enroll_command = serializers.CharField(help_text="2. Run this on the device, once.")
    run_command = serializers.CharField(
        help_text="3. Run this on the device (or as a service: docs/edge.md).")


class ModelVersionRefOutput(serializers.Serializer):
    id = serializers.UUIDField()
    model_id = serializers.UUIDField()
    model_name = serializers.CharField(source="model.name")
    version = serializers.IntegerField()


class DeploymentSummaryOutput(serializers.Serializer):
    id = serializers.UUIDField()
    state = serializers.ChoiceField(choices=DeploymentState.choices)
    error = serializers.CharField()
    model_version = ModelVersionRefOutput()
    state_changed_at = serializers.DateTimeField()


class DeviceOutput(serializers.Serializer):
    id = serializers.UUIDField()
    name = serializers.CharField()
    status = serializers.ChoiceField(
        choices=DeviceStatus.choices,
        help_text="online if the last heartbeat was received within SAMPAN_DEVICE_OFFLINE_AFTER_S.")
    last_seen_at = serializers.DateTimeField(allow_null=True,
                                             help_text="Server receive time of the last heartbeat.")
    device_time = serializers.DateTimeField(allow_null=True,
                                            help_text="The device clock, as last reported.")
    agent_version = serializers.CharField()
    info = serializers.JSONField()
    tags = serializers.ListField(child=serializers.CharField())
    current_model_version = ModelVersionRefOutput(allow_null=True)
    deployment = serializers.SerializerMethodField(
        help_text="The active (desired) deployment, or null.")
    last_metrics = serializers.JSONField()
    runtime = serializers.SerializerMethodField(
        help_text="What the device last reported of its runtime: onnxruntime (version), "
                  "providers, cpu_features; {} when unknown.")
    created_at = serializers.DateTimeField()

    def get_runtime(self, device: Any) -> dict[str, Any]:
        return device.known_runtime()  # type: ignore[no-any-return]

    def get_deployment(self, device: Any) -> dict[str, Any] | None:
        active = getattr(device, "active_deployments", None)
        if not active:
            return None
        return DeploymentSummaryOutput(active[0]).data  # type: ignore[return-value]


class BenchmarkOutput(serializers.Serializer):
    id = serializers.UUIDField()
    device_id = serializers.UUIDField()
    status = serializers.ChoiceField(choices=BenchmarkStatus.choices)
    candidate = serializers.CharField()
    compression_job_id = serializers.UUIDField(allow_null=True)
    model_sha256 = serializers.CharField()
    model_size = serializers.IntegerField(help_text="bytes of model.onnx")
    warmup = serializers.IntegerField()
    runs = serializers.IntegerField()
    result = serializers.JSONField(help_text=(
        "The device's figures (p50_ms, p99_ms, mean_ms, throughput_ips, load_s, "
        "peak_memory_bytes, runs, warmup, serving_p99_ms, serving_requests, onnxruntime, "
        "providers); {} until it succeeded."))
    error = StoredTextField(templates=BENCHMARK_ERRORS)
    created_at = serializers.DateTimeField()
    delivered_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)


class BenchmarkListQuery(serializers.Serializer):
    limit = serializers.IntegerField(required=False, default=50, min_value=1, max_value=500,
                                     help_text="Newest first, at most this many.")


class DeviceListQuery(serializers.Serializer):
    status = serializers.ChoiceField(choices=DeviceStatus.choices, required=False)
    tag = TagField(required=False, help_text="Only devices with this tag.")
    model_version = serializers.UUIDField(required=False, help_text=(
        "Only devices that run this model version."))
    search = serializers.CharField(required=False, max_length=200, help_text=(
        "Only devices whose name contains this (case-insensitive)."))
    offset = serializers.IntegerField(required=False, default=0, min_value=0)
    limit = serializers.IntegerField(required=False, min_value=1, max_value=MAX_DEVICE_PAGE,
                                     help_text=("At most this many devices, by name, from "
                                                "offset (default: all of them). The total "
                                                "that match is in the X-Total-Count header."))


class TelemetryOutput(serializers.Serializer):
    received_at = serializers.DateTimeField()
    device_time = serializers.DateTimeField(allow_null=True)
    current_model_version_id = serializers.UUIDField(allow_null=True)
    metrics = serializers.JSONField(help_text="requests and errors are cumulative since the agent "
                                    "started; latency_ms p50/p95/p99; cpu_percent; memory_bytes; "
                                    "with a detection model, detections (cumulative) and "
                                    "detections_by_class (the 20 most frequent labels).")


class TelemetryQuery(serializers.Serializer):
    since = serializers.DateTimeField(required=False)
    limit = serializers.IntegerField(required=False, default=360, min_value=1, max_value=5000)


class DeviceUpdateInput(serializers.Serializer):
    # no name: a device is recognised on re-enrollment by its name and machine id
    tags = serializers.ListField(child=TagField(), max_length=MAX_TAGS, required=False,
                                 help_text="Replaces the device's tags (at most 20).")


class DeploymentInput(serializers.Serializer):
    model_version_id = serializers.UUIDField()
    device_ids = serializers.ListField(child=serializers.UUIDField(), min_length=1,
                                       max_length=1000, required=False)
    tag = TagField(required=False, help_text="Deploy to every device of the project with this "
                                             "tag (instead of device_ids).")

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if ("device_ids" in attrs) == ("tag" in attrs):
            raise serializers.ValidationError(
                {"device_ids": _("give either device_ids or a tag")})
        return attrs


class DeploymentListQuery(serializers.Serializer):
    device = serializers.UUIDField(required=False, help_text="Only this device's deployments.")
    state = serializers.ChoiceField(choices=DeploymentState.choices, required=False)
    active = serializers.BooleanField(required=False, default=False,
                                      help_text="Only active (not superseded) deployments.")
    limit = serializers.IntegerField(required=False, default=200, min_value=1, max_value=1000,
                                     help_text="Newest first, at most this many.")


class DeploymentOutput(serializers.Serializer):
    id = serializers.UUIDField()
    device_id = serializers.UUIDField()
    device_name = serializers.CharField(source="device.name")
    model_version = ModelVersionRefOutput()
    state = serializers.ChoiceField(choices=DeploymentState.choices)
    error = serializers.CharField()
    created_by = serializers.CharField(source="created_by.username", allow_null=True,
                                       default=None)
    created_at = serializers.DateTimeField()
    state_changed_at = serializers.DateTimeField()
    finished_at = serializers.DateTimeField(allow_null=True)


class AlertRuleInput(serializers.Serializer):
    name = NameField(max_length=200)
    kind = serializers.ChoiceField(choices=AlertKind.choices, help_text=(
        "device_offline: no heartbeat for threshold minutes; error_rate: failed share of "
        "requests over window_minutes above threshold (0-1); p95_latency_ms: last reported p95 "
        "above threshold ms; low_confidence: last reported mean confidence below threshold "
        "(0-1)."))
    threshold = serializers.FloatField(min_value=0)
    window_minutes = serializers.IntegerField(min_value=1, max_value=24 * 60, default=5)
    tag = TagField(required=False, allow_blank=True, default="",
                   help_text="Only devices with this tag (empty: every device).")
    webhook_url = serializers.URLField(max_length=500, required=False, allow_blank=True,
                                       default="", help_text="POSTed JSON when an alert fires "
                                                             "or resolves.")
    emails = serializers.ListField(child=serializers.EmailField(), max_length=20,
                                   required=False, default=list)
    enabled = serializers.BooleanField(required=False, default=True)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if attrs.get("kind") == AlertKind.ERROR_RATE and attrs.get("threshold", 0) > 1:
            raise serializers.ValidationError(
                {"threshold": _("an error rate is a fraction of requests, from 0 to 1")})
        if attrs.get("kind") == AlertKind.LOW_CONFIDENCE and attrs.get("threshold", 0) > 1:
            raise serializers.ValidationError(
                {"threshold": _("a confidence is a probability, from 0 to 1")})
        return attrs


class AlertRuleOutput(serializers.Serializer):
    id = serializers.UUIDField()
    name = serializers.CharField()
    kind = serializers.ChoiceField(choices=AlertKind.choices)
    threshold = serializers.FloatField()
    window_minutes = serializers.IntegerField()
    tag = serializers.CharField()
    webhook_url = serializers.CharField()
    emails = serializers.ListField(child=serializers.CharField())
    enabled = serializers.BooleanField()
    created_at = serializers.DateTimeField()


class AlertOutput(serializers.Serializer):
    id = serializers.UUIDField()
    rule_id = serializers.UUIDField()
    rule_name = serializers.CharField(source="rule.name")
    device_id = serializers.UUIDField()
    device_name = serializers.CharField(source="device.name")
    state = serializers.ChoiceField(choices=AlertState.choices)
    value = serializers.FloatField(allow_null=True)
    message = StoredTextField(templates=ALERT_MESSAGES)
    started_at = serializers.DateTimeField()
    resolved_at = serializers.DateTimeField(allow_null=True)
    notified = serializers.JSONField(help_text="Per event, each channel's outcome.")


class AlertListQuery(serializers.Serializer):
    state = serializers.ChoiceField(choices=AlertState.choices, required=False)
    limit = serializers.IntegerField(required=False, default=200, min_value=1, max_value=1000)


# --- rollouts (sampan.fleet.rollouts) ---------------------------------------------------------


class RolloutInput(serializers.Serializer):
    model_version_id = serializers.UUIDField()
    device_ids = serializers.ListField(child=serializers.UUIDField(), min_length=1,
                                       max_length=1000, required=False)
    tag = TagField(required=False, help_text="Every device of the project with this tag "
                                             "(neither tag nor device_ids: every device).")
    strategy = serializers.ChoiceField(choices=RolloutStrategy.choices,
                                       default=RolloutStrategy.CANARY, help_text=(
                                           "canary: a few devices first, observed, then the "
                                           "rest in batches; all: every device at once."))
    canary_devices = serializers.IntegerField(min_value=1, max_value=1000, required=False,
                                              help_text="Devices in the canary (default 1).")
    canary_percent = serializers.FloatField(min_value=0.1, max_value=99.9, required=False,
                                            help_text="The canary as a share of the devices, "
                                                      "in % (rounded up).")
    batch_size = serializers.IntegerField(min_value=0, max_value=1000, default=0, help_text=(
        "Devices per batch after the canary; 0 sends the rest at once."))
    observe_minutes = serializers.FloatField(min_value=0, max_value=7 * 24 * 60, default=10.0,
                                             help_text="How long each batch is observed once "
                                                       "all its devices run the version.")
    max_error_rate_increase = serializers.FloatField(
        min_value=0, max_value=1, default=0.02,
        help_text="Roll back when the new version's error rate exceeds the previous one's by "
                  "more than this (a fraction of requests).")
    max_latency_ratio = serializers.FloatField(
        min_value=1, max_value=100, default=1.5,
        help_text="Roll back when the new version's p95 latency exceeds the previous one's "
                  "times this.")
    max_confidence_drop = serializers.FloatField(
        min_value=0, max_value=1, default=0.1,
        help_text="Roll back when the new version's mean confidence is lower by more than this.")
    max_restarts = serializers.IntegerField(min_value=0, max_value=1000, default=0,
                                            help_text="Agent restarts allowed on the new "
                                                      "version.")
    min_requests = serializers.IntegerField(min_value=1, max_value=10**9, default=20, help_text=(
        "Requests the new version must have served before its error rate is judged."))

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if "device_ids" in attrs and "tag" in attrs:
            raise serializers.ValidationError(
                {"device_ids": _("give device_ids or a tag, not both")})
        if "canary_devices" in attrs and "canary_percent" in attrs:
            raise serializers.ValidationError(
                {"canary_percent": _("give canary_devices or canary_percent, not both")})
        if attrs.get("strategy") == RolloutStrategy.ALL and (
                "canary_devices" in attrs or "canary_percent" in attrs):
            raise serializers.ValidationError(
                {"strategy": _("an all-at-once rollout has no canary")})
        return attrs


class RolloutRollbackInput(serializers.Serializer):
    reason = TextField(max_length=500, required=False, default=ROLLED_BACK_BY_HAND,
                       allow_blank=False)


class RolloutDeviceOutput(serializers.Serializer):
    device_id = serializers.UUIDField()
    device_name = serializers.CharField(source="device.name")
    batch = serializers.IntegerField(help_text="0 is the canary.")
    previous_model_version = ModelVersionRefOutput(allow_null=True)
    deployment = DeploymentSummaryOutput(allow_null=True,
                                         help_text="The new version's deployment, once sent.")
    rollback = DeploymentSummaryOutput(allow_null=True, help_text=(
        "The deployment that returned the device to its previous version."))
    note = StoredTextField(templates=ROLLOUT_NOTES,
                           help_text="Why the device left the rollout, if it did.")


class RolloutOutput(serializers.Serializer):
    id = serializers.UUIDField()
    model_version = ModelVersionRefOutput()
    strategy = serializers.ChoiceField(choices=RolloutStrategy.choices)
    tag = serializers.CharField()
    state = serializers.ChoiceField(choices=RolloutState.choices)
    reason = StoredTextField(templates=ROLLBACK_REASONS, help_text="Why it was rolled back.")
    devices_total = serializers.IntegerField()
    devices_running = serializers.IntegerField(
        help_text="Devices whose new-version deployment is running.")
    canary_devices = serializers.IntegerField()
    batch_size = serializers.IntegerField()
    current_batch = serializers.IntegerField()
    batches = serializers.IntegerField()
    observe_minutes = serializers.FloatField()
    observed_since = serializers.DateTimeField(allow_null=True, help_text=(
        "When every device of the current batch ran the version: its observation started."))
    max_error_rate_increase = serializers.FloatField()
    max_latency_ratio = serializers.FloatField()
    max_confidence_drop = serializers.FloatField()
    max_restarts = serializers.IntegerField()
    min_requests = serializers.IntegerField()
    comparison = RolloutComparisonField(help_text=(
        "The last comparison: {candidate, baseline} each {devices, samples, requests, errors, "
        "error_rate, restarts, p95_ms, confidence}, regressions (sentences), at."))
    created_by = serializers.CharField(source="created_by.username", allow_null=True,
                                       default=None)
    created_at = serializers.DateTimeField()
    finished_at = serializers.DateTimeField(allow_null=True)


class RolloutSeriesPointOutput(serializers.Serializer):
    t = serializers.DateTimeField(help_text="The start of the minute.")
    side = serializers.ChoiceField(choices=["candidate", "baseline"])
    requests = serializers.IntegerField()
    error_rate = serializers.FloatField(allow_null=True)
    p95_ms = serializers.FloatField(allow_null=True)
    confidence = serializers.FloatField(allow_null=True)


class RolloutDetailOutput(RolloutOutput):
    devices = RolloutDeviceOutput(many=True)
    series = RolloutSeriesPointOutput(many=True, help_text=(
        "Per minute, the new version (candidate) and the previous versions (baseline) on the "
        "rollout's devices, for the comparison charts."))
