"""Writes for the fleet: enrollment, heartbeats, deployments.

Heartbeats are handled here, in the web process, synchronously: they never go through Celery
(docs/architecture.md, "Model package and devices"). Every deployment state change is a
compare-and-set UPDATE guarded by ``TRANSITIONS`` (models.py), never a read-check-write.
"""

from __future__ import annotations

import secrets
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from sampan.accounts.audit import audit_record
from sampan.fleet.fastpath import fleet_changed_on_commit
from sampan.accounts.models import Project
from sampan.core.errors import AuthenticationFailed, Conflict, NotFound, ValidationFailed
from sampan.core.validation import validated_name, validated_text
from sampan.fleet.compatibility import model_incompatibilities
from sampan.fleet.heartbeat_body import MAX_ERROR_CHARS
from sampan.fleet.models import (
    REPORTABLE,
    AlertRule,
    TRANSITIONS,
    Deployment,
    DeploymentState,
    Device,
    EnrollmentToken,
    Telemetry,
    secret_sha256,
)
from sampan.registry.models import ModelVersion

ENROLLMENT_TOKEN_PREFIX = "spe_"
DEVICE_CREDENTIAL_PREFIX = "spd_"
#: most devices one deployment request reaches (its rows are locked in one transaction, while
#: their heartbeats wait)
MAX_DEVICES_PER_DEPLOY = 1000


def telemetry_keep() -> int:
    """Most telemetry rows kept per device, whatever their age (``SAMPAN_DEVICE_TELEMETRY_KEEP``,
    default 100,000: a day of raw rows at one heartbeat every 5 s is 17,280, a month of
    per-minute rows 43,200); a safety bound against a device that beats too often."""
    return int(getattr(settings, "SAMPAN_DEVICE_TELEMETRY_KEEP", 100_000))


def heartbeat_interval_s() -> float:
    """Seconds between heartbeats that the platform asks of agents."""
    return float(settings.SAMPAN_DEVICE_HEARTBEAT_INTERVAL_S)


@dataclass(frozen=True)
class IssuedEnrollmentToken:
    token: EnrollmentToken
    secret: str


def enrollment_token_create(*, project: Project, user: Any, expires_in: timedelta,
                            note: str = "") -> IssuedEnrollmentToken:
    """Create a one-time enrollment token; the secret is returned once and only its sha256 is
    stored."""
    secret = ENROLLMENT_TOKEN_PREFIX + secrets.token_urlsafe(24)
    token = EnrollmentToken.objects.create(
        project=project, token_sha256=secret_sha256(secret),
        expires_at=timezone.now() + expires_in, created_by=user,
        note=validated_text(note, field="note").strip())
    audit_record(actor=user, action="enrollment_token.create", project=project, target=token,
                 details={"expires_at": token.expires_at.isoformat()})
    return IssuedEnrollmentToken(token=token, secret=secret)


#: what a device installs: the agent alone (onnxruntime, numpy, Pillow, requests,
#: cryptography, prometheus-client; no Django, no torch)
AGENT_INSTALL_COMMAND = 'pip install "sampan[edge]"'
#: the agent's local API on every interface of the device, on its default port
AGENT_RUN_COMMAND = "sampan-agent run --host 0.0.0.0 --port 8700"
_LOOPBACK_HOSTS = frozenset({"localhost", "testserver"})


def device_setup_commands(*, public_url: str, request_url: str, secret: str) -> dict[str, Any]:
    """The console's "add a device" commands for a device on another machine.

    ``server_url`` is ``public_url`` (``SAMPAN_PUBLIC_URL``) when set, else ``request_url``
    (the URL the browser reached the platform at), without a trailing slash.
    ``server_url_is_local`` is True when its host is a loopback name or address (127.0.0.0/8,
    ::1, localhost): a device on another machine cannot reach it, and the console says how to
    fix that (``make run HOST=0.0.0.0`` or ``SAMPAN_PUBLIC_URL``).
    """
    import ipaddress
    import shlex
    from urllib.parse import urlsplit

    server_url = (public_url or request_url).rstrip("/")
    host = (urlsplit(server_url).hostname or "").lower()
    try:
        address = ipaddress.ip_address(host)
        mapped = getattr(address, "ipv4_mapped", None)
        local = (mapped or address).is_loopback or (mapped or address).is_unspecified
    except ValueError:  # a name, not an address
        local = host in _LOOPBACK_HOSTS or host.endswith(".localhost")
    return {"server_url": server_url, "server_url_is_local": local,
            "install_command": AGENT_INSTALL_COMMAND,
            "enroll_command": f"sampan-agent enroll --url {shlex.quote(server_url)} "
                              f"--token {shlex.quote(secret)}",
            "run_command": AGENT_RUN_COMMAND}


@dataclass(frozen=True)
class Enrollment:
    device: Device
    credential: str
    #: an existing device (same project, name and machine id) got the new credential
    re_enrolled: bool = False


def device_enroll(*, token: str, name: str, info: dict[str, Any], machine_id: str = "",
                  re_enroll: bool = False) -> Enrollment:
    """Consume the one-time enrollment ``token`` and create a device with a new credential.

    The credential is returned once; only its sha256 is stored. Raises AuthenticationFailed (401,
    field ``token``) for an unknown, used or expired token. The token is claimed with a
    compare-and-set UPDATE inside the transaction, so two concurrent enrollments with one token
    create one device.
    Re-enrollment (``sampan-agent enroll --force`` sends ``re_enroll``): when the token's
    project has a device with this ``name`` and this non-empty ``machine_id``, that device is
    kept (its id, deployments, telemetry) and gets the new credential and ``info``; its old
    credential is refused from then on. Its row is locked, so two concurrent re-enrollments
    leave one device. Without ``re_enroll`` such a device is a Conflict (409, field ``name``):
    a token admits a new device and never silently takes over one (machines cloned from one
    disk image share a machine id and often a host name); the token stays usable.
    A ``name`` that the rule of ``sampan.core.names`` refuses is a ValidationFailed (field
    ``name``), checked before the token is looked at, so the token stays usable.
    """
    name = validated_name(name, field="name")
    now = timezone.now()
    with transaction.atomic():
        row = EnrollmentToken.objects.filter(token_sha256=secret_sha256(token)).first()
        if row is None:
            raise AuthenticationFailed(_("unknown enrollment token"), field="token")
        if row.used_at is not None:
            raise AuthenticationFailed(_("this enrollment token has already been used; create a "
                                         "new one in the console"), field="token")
        if row.expires_at <= now:
            raise AuthenticationFailed(_("this enrollment token expired at %(expires_at)s; "
                                         "create a new one in the console")
                                       % {"expires_at": row.expires_at.isoformat()},
                                       field="token")
        credential = DEVICE_CREDENTIAL_PREFIX + secrets.token_urlsafe(32)
        existing = (Device.objects.select_for_update()
                    .filter(project_id=row.project_id, name=name, machine_id=machine_id)
                    .order_by("created_at").first() if machine_id else None)
        if existing is not None and not re_enroll:
            raise Conflict(_(
                "a device named %(name)r on this machine is already enrolled in this project: "
                "run 'sampan-agent enroll --force' to enroll it again (its old credential stops "
                "working), or give this one another --name") % {"name": name}, field="name")
        if existing is not None:
            existing.credential_sha256 = secret_sha256(credential)
            existing.info = info
            existing.save(update_fields=["credential_sha256", "info", "updated_at"])
            device = existing
        else:
            device = Device.objects.create(project_id=row.project_id, name=name, info=info,
                                           machine_id=machine_id,
                                           credential_sha256=secret_sha256(credential))
        claimed = EnrollmentToken.objects.filter(pk=row.pk, used_at__isnull=True).update(
            used_at=now, device=device, updated_at=now)
        if not claimed:  # another enrollment won the race; the atomic block drops our device
            raise AuthenticationFailed(_("this enrollment token has already been used; create a "
                                         "new one in the console"), field="token")
        # the device acts (no user): the token it used says who let it in
        audit_record(actor=None, action="device.re_enroll" if existing else "device.enroll",
                     project=row.project, target=device,
                     details={"name": name, "enrollment_token": str(row.pk)})
    return Enrollment(device=device, credential=credential, re_enrolled=existing is not None)


@dataclass(frozen=True)
class DeploymentReport:
    """The heartbeat's ``deployment`` object: the agent's state of one deployment."""

    deployment_id: uuid.UUID
    state: str
    error: str = ""


@dataclass(frozen=True)
class Heartbeat:
    """A parsed heartbeat (docs/contracts.md). ``metrics`` keeps the contract's keys only."""

    device_time: datetime | None = None
    agent_version: str = ""
    current_model_version_id: uuid.UUID | None = None
    metrics: dict[str, Any] = field(default_factory=dict)
    deployment: DeploymentReport | None = None
    #: ``{"onnxruntime", "providers", "cpu_features"?}``; None keeps what was stored before.
    runtime: dict[str, Any] | None = None
    #: telemetry kept while the platform was unreachable: ``(device_time, metrics)``, oldest
    #: first; and how many samples the agent dropped from its full buffer
    buffered: list[tuple[datetime, dict[str, Any]]] = field(default_factory=list)
    buffered_dropped: int = 0


def deployment_state_report(*, device: Device, report: DeploymentReport,
                            now: datetime | None = None) -> bool:
    """Apply the agent's report of one of its own deployments.

    Returns True when the state changed. A report of the state the deployment already has
    only refreshes ``error``. A report that ``TRANSITIONS`` does not allow (the deployment was
    superseded meanwhile, or running -> downloading) and a report about a deployment of another
    device are ignored: the heartbeat's desired state tells the agent what to do instead.
    """
    if report.state not in REPORTABLE:
        raise ValueError(f"agents cannot report state {report.state!r}")
    now = now or timezone.now()
    error = (report.error or "")[:MAX_ERROR_CHARS]
    mine = Deployment.objects.filter(pk=report.deployment_id, device=device)
    allowed = TRANSITIONS[report.state]
    values: dict[str, Any] = {"state": report.state, "error": error, "state_changed_at": now,
                              "updated_at": now}
    if report.state in {DeploymentState.RUNNING, DeploymentState.FAILED}:
        values["finished_at"] = now
    if mine.filter(state__in=allowed - {report.state}).update(**values):
        fleet_changed_on_commit()  # the heartbeat fast path compares reports with the state
        return True
    if report.state in allowed:
        if mine.filter(state=report.state).exclude(error=error).update(error=error,
                                                                        updated_at=now):
            fleet_changed_on_commit()
    return False


def device_heartbeat_record(*, device: Device, heartbeat: Heartbeat) -> Deployment | None:
    """Record a heartbeat received now and return the device's desired deployment (or None).

    ``last_seen_at`` is the server's clock at receipt; the device clock is stored as reported.
    The device's current model version is the one it reports serving (if it belongs to the
    project), or the model version of a deployment it reports running. One telemetry row is
    added and the oldest beyond ``telemetry_keep()`` are deleted. A ``runtime`` replaces the
    stored one.
    """
    from sampan.fleet.selectors import device_desired_deployment

    received_at = timezone.now()
    with transaction.atomic():
        current_id = None
        if heartbeat.current_model_version_id is not None:
            current_id = (ModelVersion.objects
                          .filter(pk=heartbeat.current_model_version_id,
                                  project_id=device.project_id)
                          .values_list("pk", flat=True).first())
        if heartbeat.deployment is not None:
            deployment_state_report(device=device, report=heartbeat.deployment, now=received_at)
            if heartbeat.deployment.state == DeploymentState.RUNNING:
                running = (Deployment.objects
                           .filter(pk=heartbeat.deployment.deployment_id, device=device,
                                   state=DeploymentState.RUNNING)
                           .values_list("model_version_id", flat=True).first())
                current_id = running or current_id
        values: dict[str, Any] = {}
        if heartbeat.runtime is not None:
            if heartbeat.runtime != device.runtime:
                fleet_changed_on_commit()  # the fast path takes beats repeating the stored one
            values["runtime"] = device.runtime = heartbeat.runtime
        Device.objects.filter(pk=device.pk).update(
            last_seen_at=received_at, device_time=heartbeat.device_time,
            agent_version=heartbeat.agent_version, current_model_version_id=current_id,
            last_metrics=heartbeat.metrics, updated_at=received_at, **values)
        if heartbeat.buffered:
            # a heartbeat stored whose reply the agent missed is sent again with its samples:
            # those already here (same device time) are not stored twice
            times = [taken for taken, _ in heartbeat.buffered]
            stored = set(Telemetry.objects.filter(
                device=device, device_time__gte=min(times), device_time__lte=max(times))
                .values_list("device_time", flat=True))
            Telemetry.objects.bulk_create(
                Telemetry(device=device, received_at=_buffered_at(taken, heartbeat, received_at),
                          device_time=taken, metrics=metrics)
                for taken, metrics in heartbeat.buffered if taken not in stored)
        metrics = heartbeat.metrics
        if heartbeat.buffered_dropped:
            metrics = {**metrics, "telemetry_dropped": heartbeat.buffered_dropped}
        Telemetry.objects.create(
            device=device, received_at=received_at, device_time=heartbeat.device_time,
            metrics=metrics,
            current_model_version_id=heartbeat.current_model_version_id)
        # retention (age, downsampling, the per-device bound) is beat's telemetry_retention:
        # nothing is counted or deleted on the heartbeat's hot path
    device.last_seen_at, device.device_time = received_at, heartbeat.device_time
    device.agent_version, device.current_model_version_id = heartbeat.agent_version, current_id
    device.last_metrics = heartbeat.metrics
    return device_desired_deployment(device=device)


def _buffered_at(taken: datetime, heartbeat: Heartbeat, received_at: datetime) -> datetime:
    """When a buffered sample happened on the server's clock: its device time shifted by the
    device clock's offset, measured on this heartbeat (``received_at - device_time``); never
    later than ``received_at``. Without the heartbeat's device time: ``received_at``."""
    if heartbeat.device_time is None:
        return received_at
    return min(received_at, taken + (received_at - heartbeat.device_time))


@dataclass(frozen=True)
class RetentionResult:
    expired: int  # rows older than SAMPAN_TELEMETRY_KEEP_S, deleted
    downsampled: int  # raw rows folded into their minute's last row
    over_bound: int  # rows beyond a device's telemetry_keep(), deleted


def telemetry_retention(*, now: datetime | None = None) -> RetentionResult:
    """Telemetry retention, run by beat every 5 minutes (``fleet.telemetry_retention``):

    - rows received more than ``SAMPAN_TELEMETRY_KEEP_S`` ago (30 days) are deleted;
    - rows older than ``SAMPAN_TELEMETRY_RAW_S`` (a day) are downsampled to one per device and
      minute: the minute's last row is kept (the counters are cumulative, so the last one is
      the minute's total; its percentiles are its last report). Only the hour before the raw
      cut-off is looked at on each run (beat runs every 5 minutes), so a pass costs that hour;
    - a device that sent more than one heartbeat a second over the last 5 minutes keeps at most
      ``telemetry_keep()`` rows (the newest); the age rules bound the others.
    """
    now = now or timezone.now()
    expired, _ = Telemetry.objects.filter(
        received_at__lt=now - timedelta(seconds=settings.SAMPAN_TELEMETRY_KEEP_S)).delete()
    raw_cut = now - timedelta(seconds=settings.SAMPAN_TELEMETRY_RAW_S)
    window = Telemetry.objects.filter(received_at__lt=raw_cut,
                                      received_at__gte=raw_cut - timedelta(hours=1))
    folded: list[int] = []
    last: dict[tuple[Any, datetime], int] = {}
    for pk, device_id, received in (window.order_by("device_id", "received_at", "pk")
                                    .values_list("pk", "device_id", "received_at")
                                    .iterator(chunk_size=5000)):
        minute = (device_id, received.replace(second=0, microsecond=0))
        if minute in last:
            folded.append(last[minute])
        last[minute] = pk
    for start in range(0, len(folded), 1000):
        Telemetry.objects.filter(pk__in=folded[start:start + 1000]).delete()
    over = 0
    keep = telemetry_keep()
    # the age rules bound a device beating at most once a second (a day raw at 1/s is 86,400
    # rows); only one that beat faster over the last 5 minutes is counted against the bound
    recent = now - timedelta(seconds=300)
    for device_id in (Device.objects.filter(last_seen_at__gte=recent)
                      .values_list("pk", flat=True).iterator()):
        if Telemetry.objects.filter(device_id=device_id, received_at__gte=recent).count() <= 300:
            continue
        cut = list(Telemetry.objects.filter(device_id=device_id)
                   .order_by("-received_at", "-pk").values_list("received_at", flat=True)
                   [keep:keep + 1])
        if cut:
            deleted, _ = Telemetry.objects.filter(device_id=device_id,
                                                  received_at__lte=cut[0]).delete()
            over += deleted
    return RetentionResult(expired=expired, downsampled=len(folded), over_bound=over)


def device_update(*, device: Device, user: Any, tags: list[str] | None = None) -> Device:
    """Replace a device's tags (duplicates dropped, order kept); audited."""
    changes: dict[str, Any] = {}
    if tags is not None:
        tags = list(dict.fromkeys(tags))
        if tags != device.tags:
            changes["tags"] = [device.tags, tags]
            device.tags = tags
    if changes:
        with transaction.atomic():
            device.save(update_fields=["tags", "updated_at"])
            audit_record(actor=user, action="device.update", project=device.project,
                         target=device, details=changes)
    return device


def devices_locked_for(*, project: Project, version: ModelVersion,
                       wanted: Sequence[uuid.UUID]) -> dict[uuid.UUID, Device]:
    """The ``wanted`` devices of ``project`` by id, their rows locked (inside a transaction:
    concurrent deploys to one device are serialised), every one able to run ``version``.

    Raises NotFound (field ``device_ids``, ``details.missing``) for devices outside the project
    and ValidationFailed (field ``device_ids``, ``details.incompatible``: device id -> reasons)
    for devices whose reported runtime cannot load the version
    (:func:`sampan.fleet.compatibility.model_incompatibilities`)."""
    devices = {d.pk: d for d in Device.objects.select_for_update()
               .filter(project=project, pk__in=wanted)}
    missing = [str(pk) for pk in wanted if pk not in devices]
    if missing:
        raise NotFound(_("device not found in this project: %(devices)s")
                       % {"devices": ", ".join(missing)},
                       field="device_ids", details={"missing": missing})
    incompatible = {str(pk): reasons for pk in wanted
                    if (reasons := model_incompatibilities(version.manifest,
                                                           devices[pk].known_runtime()))}
    if incompatible:
        names = "; ".join(_("%(device)s: %(reasons)s")
                          % {"device": devices[uuid.UUID(pk)].name, "reasons": ", ".join(reasons)}
                          for pk, reasons in incompatible.items())
        raise ValidationFailed(
            _("model version %(version)s cannot run on %(count)d device(s): %(devices)s")
            % {"version": version.version, "count": len(incompatible), "devices": names},
            field="device_ids", details={"incompatible": incompatible})
    return devices


def deployment_create(*, project: Project, user: Any, model_version_id: Any,
                      device_ids: Sequence[Any] | None = None,
                      tag: str | None = None) -> list[Deployment]:
    """Deploy one model version to one or several devices of ``project`` (one click), given by
    id or as every device with ``tag`` (a group; NotFound, field ``tag``, when none has it).

    Each device's active deployment is superseded and a new pending one becomes its desired
    state; deploying the version a device already runs is allowed (a redeploy, e.g. to retry a
    failed one). Returns the new deployments in the order of ``device_ids`` (duplicates dropped).

    Raises NotFound (field ``model_version_id``) for a model version outside the project,
    NotFound (field ``device_ids``, ``details.missing``) for devices outside it, and
    ValidationFailed (field ``device_ids``, ``details.incompatible``: device id -> reasons) for
    devices whose reported runtime cannot load the version
    (:func:`sampan.fleet.compatibility.model_incompatibilities`); nothing is written then, and
    every device keeps its current deployment.
    """
    from sampan.fleet.selectors import devices_tagged

    version = ModelVersion.objects.filter(pk=model_version_id, project=project).first()
    if version is None:
        raise NotFound(_("model version not found in this project"), field="model_version_id")
    if tag is not None:
        device_ids = devices_tagged(project=project, tag=tag)
        if not device_ids:
            raise NotFound(_("no device of this project has the tag %(tag)r") % {"tag": tag},
                           field="tag")
        if len(device_ids) > MAX_DEVICES_PER_DEPLOY:
            raise ValidationFailed(
                _("%(devices)d devices have the tag %(tag)r; one deployment reaches at most "
                  "%(limit)d: tag smaller groups")
                % {"devices": len(device_ids), "tag": tag, "limit": MAX_DEVICES_PER_DEPLOY},
                field="tag",
                details={"devices": len(device_ids), "limit": MAX_DEVICES_PER_DEPLOY})
    wanted = list(dict.fromkeys(uuid.UUID(str(pk)) for pk in device_ids or []))
    now = timezone.now()
    with transaction.atomic():
        devices = devices_locked_for(project=project, version=version, wanted=wanted)
        (Deployment.objects
         .filter(device_id__in=wanted, state__in=TRANSITIONS[DeploymentState.SUPERSEDED])
         .update(state=DeploymentState.SUPERSEDED, state_changed_at=now, updated_at=now))
        created = [Deployment.objects.create(project=project, device=devices[pk],
                                             model_version=version, created_by=user,
                                             state_changed_at=now)
                   for pk in wanted]
        audit_record(actor=user, action="deployment.create", project=project, target=version,
                     details={"model_version": version.label,
                              "devices": [devices[pk].name for pk in wanted]})
    return created


def device_delete(*, device: Device, user: Any = None) -> None:
    """Decommission a device: its credential stops working at once; its deployments and
    telemetry are deleted with it; when it was this machine's agent ("use this machine as a
    device"), make run stops that agent and removes its home (:func:`sampan.fleet.local.
    local_device_retire`).

    The device's row is locked (SELECT ... FOR UPDATE) before Django collects what refers to
    it: a heartbeat written meanwhile (the fast path's batches, every 0.2 s) waits, and then
    fails alone on the missing device. Without the lock, on PostgreSQL, telemetry inserted
    between the collection and the device's DELETE broke the foreign key: a 500. Audited
    (``device.delete``, by ``user``, with the model it ran)."""
    from sampan.fleet.local import local_device_retire

    project_id, device_id = device.project_id, device.pk
    with transaction.atomic():
        list(Device.objects.select_for_update().filter(pk=device.pk).values_list("pk"))
        running = (device.deployments.exclude(state="superseded")
                   .select_related("model_version__model").order_by("-created_at").first())
        audit_record(actor=user, action="device.delete", project=device.project, target=device,
                     details={"name": device.name, "model_version": (
                         running.model_version.label if running is not None else None)})
        device.delete()
        # this machine's agent for the project, if it was this device: make run stops it
        transaction.on_commit(lambda: local_device_retire(project_id=project_id,
                                                          device_id=device_id))


def alert_rule_save(*, project: Project, user: Any, values: dict[str, Any],
                    rule: AlertRule | None = None) -> AlertRule:
    """Create a rule, or replace an existing one's settings (its alerts stay); audited."""
    with transaction.atomic():
        if rule is None:
            rule = AlertRule.objects.create(project=project, **values)
            action = "alert_rule.create"
        else:
            for key, value in values.items():
                setattr(rule, key, value)
            rule.save()
            action = "alert_rule.update"
        audit_record(actor=user, action=action, project=project, target=rule,
                     details={"name": rule.name, "kind": rule.kind,
                              "threshold": rule.threshold})
    return rule


def alert_rule_delete(*, rule: AlertRule, user: Any) -> None:
    """Delete a rule with its alert history; audited."""
    with transaction.atomic():
        audit_record(actor=user, action="alert_rule.delete", project=rule.project, target=rule,
                     details={"name": rule.name})
        rule.delete()
