"""Fleet API: enrollment tokens, devices, telemetry and deployments (project API under
``/api/v1/projects/<project_id>/``), and the device API (``/api/device/v1/``, docs/contracts.md).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.conf import settings
from django.http import HttpResponse, HttpResponseRedirect
from django.http.response import HttpResponseBase
from django.urls import reverse
from django.utils.translation import gettext as _
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.throttling import SimpleRateThrottle
from rest_framework.views import APIView

from sampan.core import storage
from sampan.core.apis import ProjectApi
from sampan.core.errors import NotFound, TooLarge
from sampan.core.parsers import JSONParser
from sampan.fleet import benchmarks, local, selectors, services
from sampan.fleet import serializers as s
from sampan.fleet.authentication import DeviceCredentialAuthentication, IsEnrolledDevice
from sampan.fleet.downloads import ranged_file_response
from sampan.fleet.models import Device, DeviceBenchmark, RolloutState
from sampan.registry.signing import trusted_keys_payload

# --- project API ------------------------------------------------------------------------------


class EnrollmentTokenListApi(ProjectApi):
    parser_classes = [JSONParser]

    @extend_schema(responses=s.EnrollmentTokenOutput(many=True),
                   operation_id="enrollment_tokens_list")
    def get(self, request: Request, project_id: str) -> Response:
        tokens = selectors.enrollment_token_list(project=self.get_project(request))
        return Response(s.EnrollmentTokenOutput(tokens, many=True).data)

    @extend_schema(request=s.EnrollmentTokenInput, responses={201: s.IssuedEnrollmentTokenOutput},
                   operation_id="enrollment_tokens_create")
    def post(self, request: Request, project_id: str) -> Response:
        project = self.get_project(request)
        data = s.EnrollmentTokenInput(data=request.data)
        data.is_valid(raise_exception=True)
        issued = services.enrollment_token_create(
            project=project, user=request.user, note=data.validated_data["note"],
            expires_in=timedelta(hours=data.validated_data["expires_in_hours"]))
        body = {**s.EnrollmentTokenOutput(issued.token).data, "token": issued.secret,
                **services.device_setup_commands(
                    public_url=settings.SAMPAN_PUBLIC_URL,
                    request_url=request.build_absolute_uri("/"), secret=issued.secret)}
        return Response(body, status=status.HTTP_201_CREATED)


class DeviceListApi(ProjectApi):
    @extend_schema(parameters=[s.DeviceListQuery], responses=s.DeviceOutput(many=True),
                   operation_id="devices_list", description=(
                       "The project's devices by name; with limit/offset one page of them, the "
                       "number that match in the X-Total-Count header."))
    def get(self, request: Request, project_id: str) -> Response:
        project = self.get_project(request)
        query = s.DeviceListQuery(data=request.query_params)
        query.is_valid(raise_exception=True)
        params = query.validated_data
        devices = selectors.device_list(project=project, status=params.get("status"),
                                        tag=params.get("tag"),
                                        model_version=params.get("model_version"),
                                        search=params.get("search"))
        total = devices.count()
        if "limit" in params or params["offset"]:
            end = params["offset"] + params["limit"] if "limit" in params else None
            devices = devices[params["offset"]:end]
        response = Response(s.DeviceOutput(devices, many=True).data)
        response["X-Total-Count"] = str(total)
        return response


class DeviceDetailApi(ProjectApi):
    @extend_schema(responses=s.DeviceOutput, operation_id="devices_retrieve")
    def get(self, request: Request, project_id: str, device_id: str) -> Response:
        device = selectors.device_get(project=self.get_project(request), device_id=device_id)
        return Response(s.DeviceOutput(device).data)

    @extend_schema(request=s.DeviceUpdateInput, responses=s.DeviceOutput,
                   operation_id="devices_update")
    def patch(self, request: Request, project_id: str, device_id: str) -> Response:
        project = self.get_project(request)
        device = selectors.device_get(project=project, device_id=device_id)
        data = s.DeviceUpdateInput(data=request.data)
        data.is_valid(raise_exception=True)
        services.device_update(device=device, user=request.user, **data.validated_data)
        return Response(s.DeviceOutput(selectors.device_get(project=project,
                                                            device_id=device_id)).data)

    @extend_schema(responses={204: None}, operation_id="devices_delete")
    def delete(self, request: Request, project_id: str, device_id: str) -> Response:
        device = selectors.device_get(project=self.get_project(request), device_id=device_id)
        services.device_delete(device=device, user=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)


class DeviceTelemetryApi(ProjectApi):
    @extend_schema(parameters=[s.TelemetryQuery], responses=s.TelemetryOutput(many=True),
                   operation_id="devices_telemetry")
    def get(self, request: Request, project_id: str, device_id: str) -> Response:
        device = selectors.device_get(project=self.get_project(request), device_id=device_id)
        query = s.TelemetryQuery(data=request.query_params)
        query.is_valid(raise_exception=True)
        rows = selectors.device_telemetry(device=device, since=query.validated_data.get("since"),
                                          limit=query.validated_data["limit"])
        return Response(s.TelemetryOutput(rows, many=True).data)


class DeviceBenchmarkListApi(ProjectApi):
    @extend_schema(parameters=[s.BenchmarkListQuery], responses=s.BenchmarkOutput(many=True),
                   operation_id="devices_benchmarks")
    def get(self, request: Request, project_id: str, device_id: str) -> Response:
        device = selectors.device_get(project=self.get_project(request), device_id=device_id)
        query = s.BenchmarkListQuery(data=request.query_params)
        query.is_valid(raise_exception=True)
        rows = selectors.device_benchmark_list(device=device, limit=query.validated_data["limit"])
        return Response(s.BenchmarkOutput(rows, many=True).data)


class DeploymentListApi(ProjectApi):
    parser_classes = [JSONParser]

    @extend_schema(parameters=[s.DeploymentListQuery], responses=s.DeploymentOutput(many=True),
                   operation_id="deployments_list")
    def get(self, request: Request, project_id: str) -> Response:
        project = self.get_project(request)
        query = s.DeploymentListQuery(data=request.query_params)
        query.is_valid(raise_exception=True)
        params = query.validated_data
        device_id = None
        if "device" in params:
            device_id = selectors.device_get(project=project, device_id=params["device"]).pk
        deployments = selectors.deployment_list(
            project=project, device_id=device_id, state=params.get("state"),
            active=params["active"])[:params["limit"]]
        return Response(s.DeploymentOutput(deployments, many=True).data)

    @extend_schema(request=s.DeploymentInput, responses={201: s.DeploymentOutput(many=True)},
                   operation_id="deployments_create")
    def post(self, request: Request, project_id: str) -> Response:
        project = self.get_project(request)
        data = s.DeploymentInput(data=request.data)
        data.is_valid(raise_exception=True)
        created = services.deployment_create(project=project, user=request.user,
                                             **data.validated_data)
        deployments = [selectors.deployment_get(project=project, deployment_id=d.pk)
                       for d in created]
        return Response(s.DeploymentOutput(deployments, many=True).data,
                        status=status.HTTP_201_CREATED)


class DeploymentDetailApi(ProjectApi):
    @extend_schema(responses=s.DeploymentOutput, operation_id="deployments_retrieve")
    def get(self, request: Request, project_id: str, deployment_id: str) -> Response:
        deployment = selectors.deployment_get(project=self.get_project(request),
                                              deployment_id=deployment_id)
        return Response(s.DeploymentOutput(deployment).data)


class AlertRuleListApi(ProjectApi):
    parser_classes = [JSONParser]

    @extend_schema(responses=s.AlertRuleOutput(many=True), operation_id="alert_rules_list")
    def get(self, request: Request, project_id: str) -> Response:
        project = self.get_project(request)
        return Response(s.AlertRuleOutput(project.alert_rules.all(), many=True).data)

    @extend_schema(request=s.AlertRuleInput, responses={201: s.AlertRuleOutput},
                   operation_id="alert_rules_create")
    def post(self, request: Request, project_id: str) -> Response:
        project = self.get_project(request)
        data = s.AlertRuleInput(data=request.data)
        data.is_valid(raise_exception=True)
        rule = services.alert_rule_save(project=project, user=request.user,
                                        values=data.validated_data)
        return Response(s.AlertRuleOutput(rule).data, status=status.HTTP_201_CREATED)


class AlertRuleDetailApi(ProjectApi):
    parser_classes = [JSONParser]

    def _rule(self, request: Request, rule_id: str) -> Any:
        from sampan.core.selectors import get_or_not_found

        return get_or_not_found(self.get_project(request).alert_rules.all(), "alert rule",
                                pk=rule_id)

    @extend_schema(request=s.AlertRuleInput, responses=s.AlertRuleOutput,
                   operation_id="alert_rules_update")
    def put(self, request: Request, project_id: str, rule_id: str) -> Response:
        rule = self._rule(request, rule_id)
        data = s.AlertRuleInput(data=request.data)
        data.is_valid(raise_exception=True)
        rule = services.alert_rule_save(project=rule.project, user=request.user,
                                        values=data.validated_data, rule=rule)
        return Response(s.AlertRuleOutput(rule).data)

    @extend_schema(responses={204: None}, operation_id="alert_rules_delete")
    def delete(self, request: Request, project_id: str, rule_id: str) -> Response:
        rule = self._rule(request, rule_id)
        services.alert_rule_delete(rule=rule, user=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)


class AlertListApi(ProjectApi):
    @extend_schema(parameters=[s.AlertListQuery], responses=s.AlertOutput(many=True),
                   operation_id="alerts_list")
    def get(self, request: Request, project_id: str) -> Response:
        from sampan.fleet.models import Alert

        project = self.get_project(request)
        query = s.AlertListQuery(data=request.query_params)
        query.is_valid(raise_exception=True)
        alerts = (Alert.objects.filter(rule__project=project).select_related("rule", "device")
                  .order_by("-started_at", "-id"))
        if "state" in query.validated_data:
            alerts = alerts.filter(state=query.validated_data["state"])
        return Response(s.AlertOutput(alerts[:query.validated_data["limit"]], many=True).data)


class RolloutListApi(ProjectApi):
    parser_classes = [JSONParser]

    @extend_schema(responses=s.RolloutOutput(many=True), operation_id="rollouts_list")
    def get(self, request: Request, project_id: str) -> Response:
        rollouts = selectors.rollout_list(project=self.get_project(request))[:200]
        return Response(s.RolloutOutput(rollouts, many=True).data)

    @extend_schema(request=s.RolloutInput, responses={201: s.RolloutOutput},
                   operation_id="rollouts_create")
    def post(self, request: Request, project_id: str) -> Response:
        from sampan.fleet.rollouts import rollout_create

        project = self.get_project(request)
        data = s.RolloutInput(data=request.data)
        data.is_valid(raise_exception=True)
        rollout = rollout_create(project=project, user=request.user, **data.validated_data)
        rollout = selectors.rollout_get(project=project, rollout_id=rollout.pk)
        return Response(s.RolloutOutput(rollout).data, status=status.HTTP_201_CREATED)


def _rollout_detail(project: Any, rollout_id: Any) -> dict[str, Any]:
    from sampan.fleet.rollouts import rollout_series

    rollout = selectors.rollout_get(project=project, rollout_id=rollout_id)
    rollout.devices = selectors.rollout_devices(rollout=rollout)
    rollout.series = rollout_series(rollout)
    return s.RolloutDetailOutput(rollout).data


class RolloutDetailApi(ProjectApi):
    @extend_schema(responses=s.RolloutDetailOutput, operation_id="rollouts_retrieve")
    def get(self, request: Request, project_id: str, rollout_id: str) -> Response:
        return Response(_rollout_detail(self.get_project(request), rollout_id))


class RolloutRollbackApi(ProjectApi):
    parser_classes = [JSONParser]

    @extend_schema(request=s.RolloutRollbackInput, responses=s.RolloutDetailOutput,
                   operation_id="rollouts_rollback")
    def post(self, request: Request, project_id: str, rollout_id: str) -> Response:
        """Halt a rolling rollout and return the devices it reached to their previous versions;
        409 when it is no longer rolling."""
        from sampan.core.errors import Conflict
        from sampan.fleet.rollouts import rollout_rollback

        project = self.get_project(request)
        rollout = selectors.rollout_get(project=project, rollout_id=rollout_id)
        data = s.RolloutRollbackInput(data=request.data)
        data.is_valid(raise_exception=True)
        if not rollout_rollback(rollout=rollout, user=request.user,
                                reason=data.validated_data["reason"]):
            messages = {
                RolloutState.COMPLETED: _("this rollout is completed: only a rolling one can be "
                                          "rolled back"),
                RolloutState.ROLLED_BACK: _("this rollout is rolled back: only a rolling one can "
                                            "be rolled back")}
            message = messages.get(rollout.state) or _(
                "this rollout is %(state)s: only a rolling one can be rolled back") % {
                    "state": rollout.state.replace("_", " ")}
            raise Conflict(message, field="state")
        return Response(_rollout_detail(project, rollout_id))


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


class LocalDeviceOutput(serializers.Serializer):
    available = serializers.BooleanField(
        help_text="whether this server runs agents for its projects (make run)")
    state = serializers.ChoiceField(choices=["unavailable", "none", "requested", "failed",
                                             "enrolled", "stopped"])
    device_id = serializers.UUIDField(allow_null=True)
    error = serializers.CharField(allow_null=True)


class LocalDeviceApi(ProjectApi):
    """"Use this machine as a device" (sampan.fleet.local)."""

    @extend_schema(responses=LocalDeviceOutput, operation_id="local_device_get")
    def get(self, request: Request, project_id: str) -> Response:
        project = self.get_project(request)
        return Response(LocalDeviceOutput(local.local_device_status(project=project)).data)

    @extend_schema(request=None, responses={202: LocalDeviceOutput},
                   operation_id="local_device_request")
    def post(self, request: Request, project_id: str) -> Response:
        """Enroll and start an agent on the platform's own host for this project (only under
        ``make run``: 409 ``local_agents_unavailable`` elsewhere). Answers at once; the device
        appears once the agent has enrolled (``state`` becomes ``enrolled``)."""
        project = self.get_project(request)
        status_ = local.local_device_request(project=project, user=request.user)
        return Response(LocalDeviceOutput(status_).data, status=status.HTTP_202_ACCEPTED)
