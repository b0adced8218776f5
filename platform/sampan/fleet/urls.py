"""Fleet URLs. ``urlpatterns`` are project-scoped (included under ``api/v1/``);
``device_urlpatterns`` are the device API (included under ``api/device/v1/`` with the namespace
``device``). Device paths have no trailing slash: they are the names in docs/contracts.md."""

from django.urls import path

from sampan.fleet import apis, device_apis

P = "projects/<uuid:project_id>/"
urlpatterns = [
    path(P + "enrollment-tokens/", apis.EnrollmentTokenListApi.as_view(),
         name="enrollment-tokens"),
    path(P + "devices/", apis.DeviceListApi.as_view(), name="devices"),
    path(P + "local-device/", apis.LocalDeviceApi.as_view(), name="local-device"),
    path(P + "devices/<uuid:device_id>/", apis.DeviceDetailApi.as_view(), name="device-detail"),
    path(P + "devices/<uuid:device_id>/telemetry/", apis.DeviceTelemetryApi.as_view(),
         name="device-telemetry"),
    path(P + "devices/<uuid:device_id>/benchmarks/", apis.DeviceBenchmarkListApi.as_view(),
         name="device-benchmarks"),
    path(P + "deployments/", apis.DeploymentListApi.as_view(), name="deployments"),
    path(P + "deployments/<uuid:deployment_id>/", apis.DeploymentDetailApi.as_view(),
         name="deployment-detail"),
    path(P + "alert-rules/", apis.AlertRuleListApi.as_view(), name="alert-rules"),
    path(P + "alert-rules/<uuid:rule_id>/", apis.AlertRuleDetailApi.as_view(),
         name="alert-rule-detail"),
    path(P + "alerts/", apis.AlertListApi.as_view(), name="alerts"),
    path(P + "rollouts/", apis.RolloutListApi.as_view(), name="rollouts"),
    path(P + "rollouts/<uuid:rollout_id>/", apis.RolloutDetailApi.as_view(),
         name="rollout-detail"),
    path(P + "rollouts/<uuid:rollout_id>/rollback/", apis.RolloutRollbackApi.as_view(),
         name="rollout-rollback"),
]

device_urlpatterns = [
    path("enroll", device_apis.DeviceEnrollApi.as_view(), name="enroll"),
    path("heartbeat", device_apis.DeviceHeartbeatApi.as_view(), name="heartbeat"),
    path("model-versions/<uuid:version_id>/manifest.json", device_apis.DeviceManifestApi.as_view(),
         name="model-version-manifest"),
    path("model-versions/<uuid:version_id>/model.onnx", device_apis.DeviceArtifactApi.as_view(),
         name="model-version-artifact"),
    path("benchmarks/<uuid:benchmark_id>/manifest.json",
         device_apis.DeviceBenchmarkManifestApi.as_view(), name="benchmark-manifest"),
    path("benchmarks/<uuid:benchmark_id>/model.onnx",
         device_apis.DeviceBenchmarkArtifactApi.as_view(), name="benchmark-artifact"),
    path("benchmarks/<uuid:benchmark_id>/inputs/<int:index>",
         device_apis.DeviceBenchmarkInputApi.as_view(), name="benchmark-input"),
    path("benchmarks/<uuid:benchmark_id>/result", device_apis.DeviceBenchmarkResultApi.as_view(),
         name="benchmark-result"),
]
