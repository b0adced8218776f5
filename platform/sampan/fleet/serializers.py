"""Input and output serializers of the fleet's project API and device API (no side effects)."""

from __future__ import annotations

import json
from typing import Any

from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from rest_framework import serializers

from sampan.core.stored_text import StoredTextField
from sampan.core.validation import NameField, TextField
from sampan.fleet.models import (
    BENCHMARK_REPORTABLE,
    REPORTABLE,
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


# --- device API (docs/contracts.md) -----------------------------------------------------------


#: Largest ``info`` a device may enroll with, bytes of compact JSON: it is stored and returned in
#: every device list (the agent sends ~300 bytes: OS, machine, CPU count, Python, onnxruntime)
MAX_DEVICE_INFO_BYTES = 16 * 1024


class EnrollInput(serializers.Serializer):
    token = serializers.CharField(max_length=200)
    name = NameField(max_length=200)
    machine_id = serializers.RegexField(
        r"^[0-9a-f]{32,64}$", required=False, default="", allow_blank=True,
        help_text=("The agent's app-specific machine id (32-64 lowercase hex digits). A device "
                   "of the project with this name and machine id is re-enrolled when "
                   "re_enroll is true (the same device, a new credential, the old one refused "
                   "from then on), else the enrollment is a 409."))
    re_enroll = serializers.BooleanField(
        required=False, default=False,
        help_text="Replace this machine's device of the same name (sampan-agent enroll --force).")
    info = serializers.DictField(required=False, default=dict, help_text=(
        "What the device says about itself (OS, CPU, ...), at most 16 KiB of JSON."))

    def validate_info(self, value: dict[str, Any]) -> dict[str, Any]:
        size = len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode())
        if size > MAX_DEVICE_INFO_BYTES:
            raise serializers.ValidationError(
                _("info is %(size)d bytes of JSON; at most %(limit)d (it is shown with the "
                  "device in every list)") % {"size": size, "limit": MAX_DEVICE_INFO_BYTES})
        return value


class TrustedSigningKeyOutput(serializers.Serializer):
    key_id = serializers.CharField(help_text="first 16 hex digits of sha256(raw public key)")
    public_key = serializers.CharField(help_text="base64 of the raw Ed25519 public key")


class EnrollOutput(serializers.Serializer):
    device_id = serializers.UUIDField()
    credential = serializers.CharField()
    re_enrolled = serializers.BooleanField(
        help_text="True when an existing device (same name and machine id) was re-enrolled.")
    heartbeat_interval_s = serializers.FloatField()
    signing_public_key = serializers.CharField(
        help_text="base64 of the raw Ed25519 public key of the active signing key")
    trusted_signing_keys = TrustedSigningKeyOutput(
        many=True, help_text="every key whose signature the device accepts, the active first")


class LatencyInput(serializers.Serializer):
    p50 = serializers.FloatField(min_value=0, allow_null=True, required=False, default=None)
    p95 = serializers.FloatField(min_value=0, allow_null=True, required=False, default=None)
    p99 = serializers.FloatField(min_value=0, allow_null=True, required=False, default=None)


#: Most class labels a heartbeat's ``detections_by_class`` keeps (its most frequent ones; the
#: agent sends no more), and the longest label kept (characters).
MAX_DETECTION_CLASSES = 20
MAX_DETECTION_LABEL_CHARS = 200


class DetectionsByClassField(serializers.DictField):
    """``{"<class label>": <objects detected, cumulative>}``; the
    :data:`MAX_DETECTION_CLASSES` largest counts are kept (ties by label), labels cut to
    :data:`MAX_DETECTION_LABEL_CHARS`, so what is stored stays small whatever a device sends."""

    child = serializers.IntegerField(min_value=0)

    def to_internal_value(self, data: Any) -> dict[str, int]:
        counts: dict[str, int] = super().to_internal_value(data)
        top = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
        return {label[:MAX_DETECTION_LABEL_CHARS]: count
                for label, count in top[:MAX_DETECTION_CLASSES]}


class MetricsInput(serializers.Serializer):
    requests = serializers.IntegerField(min_value=0, allow_null=True, required=False, default=None)
    errors = serializers.IntegerField(min_value=0, allow_null=True, required=False, default=None)
    latency_ms = LatencyInput(allow_null=True, required=False, default=None)
    latency_window_s = serializers.FloatField(
        min_value=0, allow_null=True, required=False,
        help_text="The seconds latency_ms covers (the agent's requests of the last 60 s).")
    cpu_percent = serializers.FloatField(
        min_value=0, allow_null=True, required=False, default=None,
        help_text="The agent process's CPU use in % of all the device's cores (cpu_count).")
    cpu_count = serializers.IntegerField(min_value=1, max_value=4096, allow_null=True,
                                         required=False, help_text="The device's CPU cores.")
    memory_bytes = serializers.IntegerField(min_value=0, allow_null=True, required=False,
                                            default=None)
    confidence_mean = serializers.FloatField(
        min_value=0, max_value=1, allow_null=True, required=False,
        help_text="Mean top-1 probability (classifier) or best detection score (detector) of "
                  "the answers of the latency window; null without answers.")
    # detection models only: absent (not null) from a classifier's heartbeat
    detections = serializers.IntegerField(
        min_value=0, allow_null=True, required=False,
        help_text="Objects detected since the agent started (cumulative, like requests).")
    detections_by_class = DetectionsByClassField(
        allow_null=True, required=False,
        help_text="The same per class label: the 20 most frequent, cumulative.")


class DeploymentReportInput(serializers.Serializer):
    deployment_id = serializers.UUIDField()
    state = serializers.ChoiceField(choices=sorted(REPORTABLE))
    error = serializers.CharField(allow_null=True, allow_blank=True, required=False, default="",
                                  trim_whitespace=False)


class RuntimeInput(serializers.Serializer):
    onnxruntime = StrictCharField(max_length=64, help_text="onnxruntime.__version__")
    providers = serializers.ListField(child=serializers.CharField(max_length=100), max_length=64,
                                      required=False, default=list,
                                      help_text="onnxruntime.get_available_providers()")
    cpu_features = serializers.ListField(child=serializers.CharField(max_length=64),
                                         max_length=256, required=False)


#: most buffered samples one heartbeat may carry (the agent sends the rest in later beats)
MAX_BUFFERED_SAMPLES = 120


class BufferedSampleInput(serializers.Serializer):
    device_time = serializers.DateTimeField(help_text="The device clock when it was taken.")
    metrics = MetricsInput()


class HeartbeatInput(serializers.Serializer):
    device_time = serializers.DateTimeField(allow_null=True, required=False, default=None)
    buffered = BufferedSampleInput(
        many=True, required=False, default=list, max_length=MAX_BUFFERED_SAMPLES,
        help_text="Telemetry the agent kept while it could not reach the platform, oldest "
                  "first (at most 120 per heartbeat).")
    buffered_dropped = serializers.IntegerField(
        min_value=0, required=False, default=0,
        help_text="Samples the agent dropped (oldest first) because its buffer was full.")
    agent_version = serializers.CharField(max_length=64, allow_blank=True, required=False,
                                          default="")
    current_model_version_id = serializers.UUIDField(allow_null=True, required=False,
                                                     default=None)
    metrics = MetricsInput(required=False, allow_null=True, default=None)
    deployment = DeploymentReportInput(required=False, allow_null=True, default=None)
    runtime = RuntimeInput(required=False, allow_null=True, default=None)


class DesiredOutput(serializers.Serializer):
    deployment_id = serializers.UUIDField()
    model_version_id = serializers.UUIDField()
    manifest_url = serializers.URLField()
    artifact_url = serializers.URLField()
    sha256 = serializers.CharField()
    size = serializers.IntegerField(help_text="bytes of model.onnx")


class BenchmarkRequestOutput(serializers.Serializer):
    benchmark_id = serializers.UUIDField()
    manifest_url = serializers.URLField()
    artifact_url = serializers.URLField()
    sha256 = serializers.CharField()
    size = serializers.IntegerField(help_text="bytes of model.onnx")
    inputs = serializers.ListField(child=serializers.URLField(),
                                   help_text="URLs of the input images, cycled through")
    warmup = serializers.IntegerField()
    runs = serializers.IntegerField()


class HeartbeatOutput(serializers.Serializer):
    heartbeat_interval_s = serializers.FloatField()
    desired = DesiredOutput(allow_null=True)
    benchmarks = BenchmarkRequestOutput(
        many=True, help_text="the device's pending and running benchmarks, oldest first (<= 4)")
    trusted_signing_keys = TrustedSigningKeyOutput(
        many=True, help_text="every key whose signature the device accepts, the active first")


class BenchmarkFiguresInput(serializers.Serializer):
    p50_ms = serializers.FloatField(min_value=0, allow_null=True, required=False, default=None)
    p99_ms = serializers.FloatField(min_value=0, allow_null=True, required=False, default=None)
    mean_ms = serializers.FloatField(min_value=0, allow_null=True, required=False, default=None)
    throughput_ips = serializers.FloatField(min_value=0, allow_null=True, required=False,
                                            default=None)
    load_s = serializers.FloatField(min_value=0, allow_null=True, required=False, default=None)
    peak_memory_bytes = serializers.IntegerField(min_value=0, allow_null=True, required=False,
                                                 default=None)
    runs = serializers.IntegerField(min_value=0, allow_null=True, required=False, default=None)
    warmup = serializers.IntegerField(min_value=0, allow_null=True, required=False, default=None)
    serving_p99_ms = serializers.FloatField(
        min_value=0, allow_null=True, required=False, default=None,
        help_text="p99 of the device's own /v1/predict requests served during the benchmark; "
                  "null when none were")
    serving_requests = serializers.IntegerField(min_value=0, allow_null=True, required=False,
                                                default=None)
    onnxruntime = StrictCharField(max_length=64, allow_null=True, required=False,
                                        default=None)
    providers = serializers.ListField(child=serializers.CharField(max_length=100),
                                      max_length=64, allow_null=True, required=False,
                                      default=None)

    _REQUIRED_FOR_SUCCESS = ("p50_ms", "p99_ms", "mean_ms", "throughput_ips", "runs")


class BenchmarkResultInput(serializers.Serializer):
    status = serializers.ChoiceField(choices=sorted(BENCHMARK_REPORTABLE))
    error = StrictCharField(allow_null=True, allow_blank=True, required=False, default="",
                                  trim_whitespace=False)
    result = BenchmarkFiguresInput(allow_null=True, required=False, default=None)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if attrs["status"] == BenchmarkStatus.SUCCEEDED:
            figures = attrs.get("result") or {}
            missing = [key for key in BenchmarkFiguresInput._REQUIRED_FOR_SUCCESS
                       if figures.get(key) is None]
            if missing:
                raise serializers.ValidationError(
                    {"result": _("a succeeded benchmark needs %(fields)s")
                     % {"fields": ", ".join(missing)}})
        return attrs


class BenchmarkResultOutput(serializers.Serializer):
    status = serializers.ChoiceField(choices=BenchmarkStatus.choices,
                                     help_text="the benchmark's stored status")


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
