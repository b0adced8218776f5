"""Fleet API: enrollment tokens, devices, telemetry, deployments, alerts and rollouts (project
API under ``/api/v1/projects/<project_id>/``). The device API (``/api/device/v1/``) is
:mod:`sampan.fleet.device_apis`.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.conf import settings
from django.utils.translation import gettext as _
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from sampan.core.apis import ProjectApi
from sampan.core.parsers import JSONParser
from sampan.fleet import local, selectors, services
from sampan.fleet import serializers as s
from sampan.fleet.models import RolloutState

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
