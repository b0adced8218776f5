"""Input and output serializers of the fleet's device API (``/api/device/v1/``,
docs/contracts.md; views in :mod:`sampan.fleet.device_apis`). No side effects."""

from __future__ import annotations

import json
from typing import Any

from django.utils.translation import gettext as _
from rest_framework import serializers

from sampan.core.parsers import MAX_JSON_INTEGER
from sampan.core.validation import NameField
from sampan.fleet.models import (
    BENCHMARK_REPORTABLE,
    REPORTABLE,
    BenchmarkStatus,
)
from sampan.fleet.heartbeat_body import MAX_LATENCY_MS, MAX_LATENCY_WINDOW_S
from sampan.fleet.serializers import StrictCharField


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


class CountField(serializers.IntegerField):
    """A count (a quoted one too, as DRF reads it): 0 to 2**53 - 1, the integers a JSON number
    holds exactly (``sampan.core.parsers.MAX_JSON_INTEGER``; RFC 8259, section 6)."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("min_value", 0)
        kwargs.setdefault("max_value", MAX_JSON_INTEGER)
        super().__init__(**kwargs)


class LatencyInput(serializers.Serializer):
    p50 = serializers.FloatField(min_value=0, max_value=MAX_LATENCY_MS, allow_null=True,
                                 required=False, default=None)
    p95 = serializers.FloatField(min_value=0, max_value=MAX_LATENCY_MS, allow_null=True,
                                 required=False, default=None)
    p99 = serializers.FloatField(min_value=0, max_value=MAX_LATENCY_MS, allow_null=True,
                                 required=False, default=None)


#: Most class labels a heartbeat's ``detections_by_class`` keeps (its most frequent ones; the
#: agent sends no more), and the longest label kept (characters).
MAX_DETECTION_CLASSES = 20
MAX_DETECTION_LABEL_CHARS = 200


class DetectionsByClassField(serializers.DictField):
    """``{"<class label>": <objects detected, cumulative>}``; the
    :data:`MAX_DETECTION_CLASSES` largest counts are kept (ties by label), labels cut to
    :data:`MAX_DETECTION_LABEL_CHARS`, so what is stored stays small whatever a device sends."""

    child = CountField()

    def to_internal_value(self, data: Any) -> dict[str, int]:
        counts: dict[str, int] = super().to_internal_value(data)
        top = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
        return {label[:MAX_DETECTION_LABEL_CHARS]: count
                for label, count in top[:MAX_DETECTION_CLASSES]}


class MetricsInput(serializers.Serializer):
    requests = CountField(allow_null=True, required=False, default=None)
    errors = CountField(allow_null=True, required=False, default=None)
    latency_ms = LatencyInput(allow_null=True, required=False, default=None)
    latency_window_s = serializers.FloatField(
        min_value=0, max_value=MAX_LATENCY_WINDOW_S, allow_null=True, required=False,
        help_text="The seconds latency_ms covers (the agent's requests of the last 60 s).")
    cpu_percent = serializers.FloatField(
        min_value=0, allow_null=True, required=False, default=None,
        help_text="The agent process's CPU use in % of all the device's cores (cpu_count).")
    cpu_count = serializers.IntegerField(min_value=1, max_value=4096, allow_null=True,
                                         required=False, help_text="The device's CPU cores.")
    memory_bytes = CountField(allow_null=True, required=False, default=None)
    confidence_mean = serializers.FloatField(
        min_value=0, max_value=1, allow_null=True, required=False,
        help_text="Mean top-1 probability (classifier) or best detection score (detector) of "
                  "the answers of the latency window; null without answers.")
    # detection models only: absent (not null) from a classifier's heartbeat
    detections = CountField(
        allow_null=True, required=False,
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
    buffered_dropped = CountField(
        required=False, default=0,
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
    peak_memory_bytes = CountField(allow_null=True, required=False, default=None)
    runs = CountField(allow_null=True, required=False, default=None)
    warmup = CountField(allow_null=True, required=False, default=None)
    serving_p99_ms = serializers.FloatField(
        min_value=0, allow_null=True, required=False, default=None,
        help_text="p99 of the device's own /v1/predict requests served during the benchmark; "
                  "null when none were")
    serving_requests = CountField(allow_null=True, required=False, default=None)
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
