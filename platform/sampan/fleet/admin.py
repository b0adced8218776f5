from django.contrib import admin

from sampan.fleet.models import Deployment, Device, DeviceBenchmark, EnrollmentToken


@admin.register(EnrollmentToken)
class EnrollmentTokenAdmin(admin.ModelAdmin):
    list_display = ["id", "project", "note", "expires_at", "used_at", "device"]
    list_filter = ["project"]
    readonly_fields = ["token_sha256"]


@admin.register(Device)
class DeviceAdmin(admin.ModelAdmin):
    list_display = ["name", "project", "last_seen_at", "agent_version", "current_model_version"]
    list_filter = ["project"]
    search_fields = ["name"]
    readonly_fields = ["credential_sha256", "last_seen_at", "device_time", "last_metrics"]


@admin.register(Deployment)
class DeploymentAdmin(admin.ModelAdmin):
    list_display = ["id", "device", "model_version", "state", "created_at", "state_changed_at"]
    list_filter = ["state", "project"]
    readonly_fields = ["state", "error", "state_changed_at", "finished_at"]


@admin.register(DeviceBenchmark)
class DeviceBenchmarkAdmin(admin.ModelAdmin):
    list_display = ["id", "device", "candidate", "status", "created_at", "finished_at"]
    list_filter = ["status", "project"]
    readonly_fields = ["status", "result", "error", "delivered_at", "finished_at"]
