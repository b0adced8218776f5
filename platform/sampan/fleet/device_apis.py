"""The device API (``/api/device/v1/``, docs/contracts.md): enrollment, heartbeats, model
packages and benchmarks, for agents authenticated with ``Authorization: Device <credential>``.
The project API of the fleet is :mod:`sampan.fleet.apis`.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.http import HttpResponse, HttpResponseRedirect
from django.http.response import HttpResponseBase
from django.urls import reverse
from django.utils.translation import gettext as _
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.throttling import SimpleRateThrottle
from rest_framework.views import APIView

from sampan.core import storage
from sampan.core.errors import NotFound, TooLarge
from sampan.core.parsers import JSONParser
from sampan.fleet import benchmarks, selectors, services
from sampan.fleet import device_serializers as s
from sampan.fleet.authentication import DeviceCredentialAuthentication, IsEnrolledDevice
from sampan.fleet.downloads import ranged_file_response
from sampan.fleet.models import Device, DeviceBenchmark
from sampan.registry.signing import trusted_keys_payload


# --- device API -------------------------------------------------------------------------------


class DeviceApi(APIView):
    """A device API view: ``Authorization: Device <credential>``, no session, no CSRF."""

    authentication_classes = [DeviceCredentialAuthentication]
    permission_classes = [IsEnrolledDevice]
    parser_classes = [JSONParser]

    def get_device(self, request: Request) -> Device:
        return request.auth  # type: ignore[return-value]


class EnrollmentThrottle(SimpleRateThrottle):
    """DRF's rate throttle on enrollment, per client address (``REMOTE_ADDR``, which uvicorn's
    ``--forwarded-allow-ips`` sets behind the TLS proxy), at ``settings.SAMPAN_ENROLL_RATE``
    ("30/min" by default): enrollment needs no credential, so it is where a flood would come.
    Counted in Django's cache (Redis in production: shared by every web process)."""

    scope = "device-enroll"

    def get_rate(self) -> str:
        return str(settings.SAMPAN_ENROLL_RATE)

    def get_cache_key(self, request: Request, view: Any) -> str:
        return self.cache_format % {"scope": self.scope,
                                    "ident": request.META.get("REMOTE_ADDR") or "unknown"}


class DeviceEnrollApi(APIView):
    """Exchange a one-time enrollment token for a device credential (shown once)."""

    authentication_classes: list[Any] = []
    permission_classes = [AllowAny]
    parser_classes = [JSONParser]
    throttle_classes = [EnrollmentThrottle]

    @extend_schema(request=s.EnrollInput, responses={201: s.EnrollOutput},
                   operation_id="device_enroll", auth=[])
    def post(self, request: Request) -> Response:
        data = s.EnrollInput(data=request.data)
        data.is_valid(raise_exception=True)
        enrollment = services.device_enroll(**data.validated_data)
        trusted = trusted_keys_payload()
        body = {"device_id": enrollment.device.pk, "credential": enrollment.credential,
                "re_enrolled": enrollment.re_enrolled,
                "heartbeat_interval_s": services.heartbeat_interval_s(),
                "signing_public_key": trusted[0]["public_key"],
                "trusted_signing_keys": trusted}
        return Response(s.EnrollOutput(body).data, status=status.HTTP_201_CREATED)


class DeviceHeartbeatApi(DeviceApi):
    """Record liveness (server receive time), metrics and a deployment state report; reply with
    the desired state."""

    @extend_schema(request=s.HeartbeatInput, responses=s.HeartbeatOutput,
                   operation_id="device_heartbeat")
    def post(self, request: Request) -> Response:
        data = s.HeartbeatInput(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        report = values["deployment"]
        heartbeat = services.Heartbeat(
            device_time=values["device_time"], agent_version=values["agent_version"],
            current_model_version_id=values["current_model_version_id"],
            metrics=_plain(values["metrics"] or {}),
            deployment=services.DeploymentReport(
                deployment_id=report["deployment_id"], state=report["state"],
                error=report["error"] or "") if report else None,
            runtime=_plain(values["runtime"]) if values["runtime"] else None,
            buffered=[(sample["device_time"], _plain(sample["metrics"]))
                      for sample in values["buffered"]],
            buffered_dropped=values["buffered_dropped"])
        device = self.get_device(request)
        desired = services.device_heartbeat_record(device=device, heartbeat=heartbeat)
        # The trusted keys ride every reply, so a device trusts a rotated key before it is
        # handed anything signed with it, and drops a retired one within a heartbeat.
        body = {"heartbeat_interval_s": services.heartbeat_interval_s(),
                "desired": _desired(request, desired) if desired else None,
                "benchmarks": [_benchmark_request(request, row)
                               for row in selectors.device_open_benchmarks(device=device)],
                "trusted_signing_keys": trusted_keys_payload()}
        return Response(s.HeartbeatOutput(body).data)


def _plain(value: Any) -> Any:
    """Validated serializer data (ordered dicts) as plain JSON values."""
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_plain(item) for item in value]
    return value


def _desired(request: Request, deployment: Any) -> dict[str, Any]:
    version = deployment.model_version
    kwargs = {"version_id": version.pk}
    return {
        "deployment_id": deployment.pk,
        "model_version_id": version.pk,
        "manifest_url": request.build_absolute_uri(reverse("device:model-version-manifest",
                                                           kwargs=kwargs)),
        # with object storage the device fetches model.onnx from the bucket itself (a presigned
        # URL on another origin: the agent sends it no credential; Range resume works there)
        "artifact_url": _model_file_url(version.package_dir) or request.build_absolute_uri(
            reverse("device:model-version-artifact", kwargs=kwargs)),
        "sha256": version.model_sha256,
        "size": version.model_size,
    }


#: The OpenAPI responses of a ``model.onnx`` download on the device API.
_MODEL_FILE_RESPONSES = {
    (200, "application/octet-stream"): OpenApiTypes.BINARY,
    (206, "application/octet-stream"): OpenApiTypes.BINARY,
    302: OpenApiResponse(description=("with object storage: the presigned URL of model.onnx in "
                                      "the bucket (Range works there)")),
}
_RANGE = OpenApiParameter("Range", str, OpenApiParameter.HEADER)


def _manifest_response(package_dir: str, missing: str) -> HttpResponse:
    """``<package_dir>/manifest.json`` as stored: the bytes the registry wrote, unchanged (the
    signature covers their content). Raises NotFound with the message ``missing`` when it is
    missing."""
    try:
        data = storage.read_bytes(f"{package_dir.rstrip('/')}/manifest.json")
    except FileNotFoundError:
        raise NotFound(missing) from None
    return HttpResponse(data, content_type="application/json")


def _model_file_url(package_dir: str) -> str | None:
    """A presigned URL of ``<package_dir>/model.onnx`` in the bucket; None with local storage."""
    return storage.download_url(f"{package_dir.rstrip('/')}/model.onnx", filename="model.onnx",
                                content_type="application/octet-stream")


def _model_file_response(request: Request, package_dir: str, sha256: str,
                         missing: str) -> HttpResponseBase:
    """``<package_dir>/model.onnx``: a 302 to its presigned URL in the bucket, or the local file
    with HTTP Range (strong ETag ``"<sha256>"``, If-Range honoured). Raises NotFound with the
    message ``missing`` when the file is missing."""
    name = f"{package_dir.rstrip('/')}/model.onnx"
    url = _model_file_url(package_dir)
    if url is not None:
        return HttpResponseRedirect(url)
    path = storage.local_file(name)
    if not path.is_file():
        raise NotFound(missing)
    return ranged_file_response(path, range_header=request.headers.get("Range", ""),
                                if_range=request.headers.get("If-Range", ""),
                                etag=sha256, filename="model.onnx")


class DeviceManifestApi(DeviceApi):
    """The signed manifest of the device's desired or current model version."""

    @extend_schema(responses={(200, "application/json"): OpenApiTypes.OBJECT},
                   operation_id="device_model_version_manifest")
    def get(self, request: Request, version_id: str) -> HttpResponse:
        version = selectors.device_model_version_get(device=self.get_device(request),
                                                     version_id=version_id)
        return _manifest_response(
            version.package_dir, _("the manifest of this model version is missing on the server"))


class DeviceArtifactApi(DeviceApi):
    """``model.onnx`` of the device's desired or current model version (HTTP Range supported)."""

    @extend_schema(responses=_MODEL_FILE_RESPONSES, parameters=[_RANGE],
                   operation_id="device_model_version_artifact")
    def get(self, request: Request, version_id: str) -> HttpResponseBase:
        version = selectors.device_model_version_get(device=self.get_device(request),
                                                     version_id=version_id)
        return _model_file_response(
            request, version.package_dir, version.model_sha256,
            _("the model file of this model version is missing on the server"))


# --- device API: benchmarks -------------------------------------------------------------------


def _benchmark_request(request: Request, benchmark: DeviceBenchmark) -> dict[str, Any]:
    kwargs = {"benchmark_id": benchmark.pk}
    return {
        "benchmark_id": benchmark.pk,
        "manifest_url": request.build_absolute_uri(reverse("device:benchmark-manifest",
                                                           kwargs=kwargs)),
        "artifact_url": _model_file_url(benchmark.package_dir) or request.build_absolute_uri(
            reverse("device:benchmark-artifact", kwargs=kwargs)),
        "sha256": benchmark.model_sha256,
        "size": benchmark.model_size,
        "inputs": [request.build_absolute_uri(reverse("device:benchmark-input",
                                                      kwargs={**kwargs, "index": index}))
                   for index in range(len(benchmark.inputs))],
        "warmup": benchmark.warmup,
        "runs": benchmark.runs,
    }


class DeviceBenchmarkManifestApi(DeviceApi):
    """The signed manifest of one of the device's open benchmarks."""

    @extend_schema(responses={(200, "application/json"): OpenApiTypes.OBJECT},
                   operation_id="device_benchmark_manifest")
    def get(self, request: Request, benchmark_id: str) -> HttpResponse:
        benchmark = selectors.device_benchmark_open_get(device=self.get_device(request),
                                                        benchmark_id=benchmark_id)
        return _manifest_response(
            benchmark.package_dir, _("the manifest of this benchmark is missing on the server"))


class DeviceBenchmarkArtifactApi(DeviceApi):
    """``model.onnx`` of one of the device's open benchmarks (HTTP Range supported)."""

    @extend_schema(responses=_MODEL_FILE_RESPONSES, parameters=[_RANGE],
                   operation_id="device_benchmark_artifact")
    def get(self, request: Request, benchmark_id: str) -> HttpResponseBase:
        benchmark = selectors.device_benchmark_open_get(device=self.get_device(request),
                                                        benchmark_id=benchmark_id)
        return _model_file_response(
            request, benchmark.package_dir, benchmark.model_sha256,
            _("the model file of this benchmark is missing on the server"))


class DeviceBenchmarkInputApi(DeviceApi):
    """The ``index``-th input image (encoded bytes, as stored) of an open benchmark."""

    @extend_schema(responses={(200, "application/octet-stream"): OpenApiTypes.BINARY},
                   operation_id="device_benchmark_input")
    def get(self, request: Request, benchmark_id: str, index: int) -> HttpResponse:
        benchmark = selectors.device_benchmark_open_get(device=self.get_device(request),
                                                        benchmark_id=benchmark_id)
        if not 0 <= index < len(benchmark.inputs):
            raise NotFound(_("this benchmark has %(count)d inputs")
                           % {"count": len(benchmark.inputs)})
        try:
            data = storage.read_bytes(benchmark.inputs[index])
        except FileNotFoundError:
            raise NotFound(_("input %(index)d of this benchmark is missing on the server")
                           % {"index": index}) from None
        return HttpResponse(data, content_type="application/octet-stream")


#: Largest benchmark report body (bytes): the figures, an error of at most 4000 characters and
#: the runtime's providers fit many times over.
RESULT_MAX_BYTES = 64 * 1024


class DeviceBenchmarkResultApi(DeviceApi):
    """The agent's report on one of its benchmarks: running, then its outcome and figures."""

    @extend_schema(request=s.BenchmarkResultInput, responses=s.BenchmarkResultOutput,
                   operation_id="device_benchmark_result")
    def post(self, request: Request, benchmark_id: str) -> Response:
        # a report is a few hundred bytes: refuse a big body before parsing it
        length = request.META.get("CONTENT_LENGTH") or "0"
        if not length.isdigit() or int(length) > RESULT_MAX_BYTES:
            raise TooLarge(_("a benchmark report is at most %(limit)d bytes")
                           % {"limit": RESULT_MAX_BYTES},
                           details={"limit_bytes": RESULT_MAX_BYTES})
        data = s.BenchmarkResultInput(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        stored = benchmarks.device_benchmark_report(
            device=self.get_device(request), benchmark_id=benchmark_id,
            status=values["status"], result=_plain(values["result"]) if values["result"] else {},
            error=values["error"] or "")
        return Response(s.BenchmarkResultOutput({"status": stored.status}).data)
