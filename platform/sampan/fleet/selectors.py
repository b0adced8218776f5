"""Reads for the fleet. Project-side lookups are scoped to a project (other projects' rows are
invisible); device-side lookups are scoped to the authenticated device."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db.models import Prefetch, Q, QuerySet
from django.utils import timezone

from sampan.core.selectors import get_or_not_found
from sampan.accounts.models import Project
from sampan.fleet.models import (
    BENCHMARK_OPEN,
    Deployment,
    DeviceBenchmark,
    DeploymentState,
    Device,
    DeviceStatus,
    EnrollmentToken,
    Rollout,
    RolloutDevice,
    Telemetry,
    secret_sha256,
)
from sampan.registry.models import ModelVersion

#: Most telemetry points one request returns.
MAX_TELEMETRY_POINTS = 5000


def _active_deployments() -> QuerySet[Deployment]:
    return (Deployment.objects.exclude(state=DeploymentState.SUPERSEDED)
            .select_related("model_version__model"))


def enrollment_token_list(*, project: Project) -> QuerySet[EnrollmentToken]:
    return project.enrollment_tokens.select_related("created_by").order_by("-created_at")


def enrollment_token_usable(*, secret: str, now: datetime | None = None) -> EnrollmentToken | None:
    """The enrollment token whose secret is ``secret`` if it is still unused and unexpired."""
    return EnrollmentToken.objects.filter(
        token_sha256=secret_sha256(secret), used_at__isnull=True,
        expires_at__gt=now or timezone.now()).first()


def device_list(*, project: Project, status: str | None = None, tag: str | None = None,
                model_version: Any = None, search: str | None = None,
                now: datetime | None = None) -> QuerySet[Device]:
    """Devices of a project by name, each with ``active_deployments`` (0 or 1 element)
    prefetched.

    ``status`` (online/offline) filters on the server receive time of the last heartbeat;
    ``tag``: only devices with that tag; ``model_version``: only devices running it;
    ``search``: a case-insensitive part of the name.
    """
    queryset = (project.devices.select_related("current_model_version__model")
                .prefetch_related(Prefetch("deployments", queryset=_active_deployments(),
                                           to_attr="active_deployments")))
    if status in DeviceStatus.values:
        since = (now or timezone.now()) - timedelta(
            seconds=settings.SAMPAN_DEVICE_OFFLINE_AFTER_S)
        online = Q(last_seen_at__gte=since)
        offline = ~online | Q(last_seen_at__isnull=True)
        queryset = queryset.filter(online if status == DeviceStatus.ONLINE else offline)
    if tag:
        queryset = queryset.filter(pk__in=devices_tagged(project=project, tag=tag))
    if model_version is not None:
        queryset = queryset.filter(current_model_version_id=model_version)
    if search:
        queryset = queryset.filter(name__icontains=search)
    return queryset.order_by("name", "created_at")


def devices_tagged(*, project: Project, tag: str) -> list[Any]:
    """Ids of the project's devices with ``tag`` (a JSON list on each row: filtered here, which
    works alike on SQLite and PostgreSQL)."""
    return [pk for pk, tags in project.devices.values_list("pk", "tags")
            if isinstance(tags, list) and tag in tags]


def device_get(*, project: Project, device_id: Any) -> Device:
    return get_or_not_found(device_list(project=project), "device", pk=device_id)


def device_telemetry(*, device: Device, since: datetime | None = None,
                     limit: int = 360) -> list[Telemetry]:
    """The newest ``limit`` telemetry rows received after ``since``, oldest first."""
    queryset = device.telemetry.all()
    if since is not None:
        queryset = queryset.filter(received_at__gt=since)
    limit = max(1, min(limit, MAX_TELEMETRY_POINTS))
    # by receive time: samples an agent buffered offline arrive later with earlier times
    return list(reversed(queryset.order_by("-received_at", "-pk")[:limit]))


def deployment_list(*, project: Project, device_id: Any = None, state: str | None = None,
                    active: bool = False) -> QuerySet[Deployment]:
    queryset = (Deployment.objects.filter(project=project)
                .select_related("device", "model_version__model", "created_by"))
    if device_id is not None:
        queryset = queryset.filter(device_id=device_id)
    if state:
        queryset = queryset.filter(state=state)
    if active:
        queryset = queryset.exclude(state=DeploymentState.SUPERSEDED)
    return queryset.order_by("-created_at", "-id")


def deployment_get(*, project: Project, deployment_id: Any) -> Deployment:
    return get_or_not_found(deployment_list(project=project), "deployment", pk=deployment_id)


def device_desired_deployment(*, device: Device) -> Deployment | None:
    """The device's active (not superseded) deployment: its desired state."""
    return _active_deployments().filter(device=device).first()


def device_model_version_get(*, device: Device, version_id: Any) -> ModelVersion:
    """A model version the device may download: that of its desired deployment, or the one it
    currently serves when it was deployed to this device once. Raises NotFound for any other
    (another device's, one never deployed to it: a device claiming a version as its current one
    in a heartbeat does not make it downloadable)."""
    deployments = Deployment.objects.filter(device=device)
    desired = deployments.exclude(state=DeploymentState.SUPERSEDED).values("model_version_id")
    allowed = Q(pk__in=desired)
    if device.current_model_version_id is not None:
        allowed |= Q(pk=device.current_model_version_id,
                     pk__in=deployments.values("model_version_id"))
    return get_or_not_found(
        ModelVersion.objects.filter(project_id=device.project_id).filter(allowed),
        "model version", pk=version_id)


#: Most open benchmarks one heartbeat reply lists.
HEARTBEAT_BENCHMARKS = 4


def device_open_benchmarks(*, device: Device) -> list[DeviceBenchmark]:
    """The device's pending and running benchmarks, oldest first, at most
    ``HEARTBEAT_BENCHMARKS`` (what its heartbeat reply lists)."""
    return list(DeviceBenchmark.objects.filter(device=device, status__in=BENCHMARK_OPEN)
                .order_by("created_at", "id")[:HEARTBEAT_BENCHMARKS])


def device_benchmark_open_get(*, device: Device, benchmark_id: Any) -> DeviceBenchmark:
    """One of the device's own open (pending or running) benchmarks; NotFound for any other
    (another device's, a finished, expired or cancelled one)."""
    return get_or_not_found(DeviceBenchmark.objects.filter(device=device,
                                                           status__in=BENCHMARK_OPEN),
                            "benchmark", pk=benchmark_id)


def device_benchmark_list(*, device: Device, limit: int = 50) -> list[DeviceBenchmark]:
    """The device's benchmarks, newest first, at most ``limit``."""
    return list(device.benchmarks.order_by("-created_at", "-id")[:max(1, min(limit, 500))])


def device_benchmark_get(*, benchmark_id: Any) -> DeviceBenchmark:
    """A benchmark by id (for its requester, which keeps the id). Raises NotFound."""
    return get_or_not_found(DeviceBenchmark.objects.select_related("device"), "benchmark",
                            pk=benchmark_id)


def rollout_list(*, project: Project) -> QuerySet[Rollout]:
    """The project's rollouts, newest first, with ``devices_total`` and ``devices_running``
    (devices whose new-version deployment runs)."""
    from django.db.models import Count

    return (Rollout.objects.filter(project=project)
            .select_related("model_version__model", "created_by")
            .annotate(devices_total=Count("targets", distinct=True),
                      devices_running=Count("targets", distinct=True, filter=Q(
                          targets__deployment__state=DeploymentState.RUNNING)))
            .order_by("-created_at"))


def rollout_get(*, project: Project, rollout_id: Any) -> Rollout:
    return get_or_not_found(rollout_list(project=project), "rollout", pk=rollout_id)


def rollout_devices(*, rollout: Rollout) -> QuerySet[RolloutDevice]:
    return (RolloutDevice.objects.filter(rollout=rollout)
            .select_related("device", "previous_model_version__model",
                            "deployment__model_version__model",
                            "rollback__model_version__model")
            .order_by("batch", "device__name"))
