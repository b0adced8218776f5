"""Fleet URLs. ``urlpatterns`` are project-scoped (included under ``api/v1/``);
``device_urlpatterns`` are the device API (included under ``api/device/v1/`` with the namespace
``device``). Device paths have no trailing slash: they are the names in docs/contracts.md."""

from django.urls import path

from sampan.fleet import apis

P = "projects/<uuid:project_id>/"
urlpatterns = [
    path(P + "enrollment-tokens/", apis.EnrollmentTokenListApi.as_view(),
         name="enrollment-tokens"),
    path(P + "devices/", apis.DeviceListApi.as_view(), name="devices"),
    path(P + "devices/<uuid:device_id>/", apis.DeviceDetailApi.as_view(), name="device-detail"),
    path(P + "devices/<uuid:device_id>/telemetry/", apis.DeviceTelemetryApi.as_view(),
         name="device-telemetry"),
    path(P + "deployments/", apis.DeploymentListApi.as_view(), name="deployments"),
    path(P + "deployments/<uuid:deployment_id>/", apis.DeploymentDetailApi.as_view(),
         name="deployment-detail"),
]

device_urlpatterns = [
    path("enroll", apis.DeviceEnrollApi.as_view(), name="enroll"),
    path("heartbeat", apis.DeviceHeartbeatApi.as_view(), name="heartbeat"),
    path("model-versions/<uuid:version_id>/manifest.json", apis.DeviceManifestApi.as_view(),
         name="model-version-manifest"),
    path("model-versions/<uuid:version_id>/model.onnx", apis.DeviceArtifactApi.as_view(),
         name="model-version-artifact"),
]
