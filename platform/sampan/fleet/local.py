""""Use this machine as a device": one click enrolls and starts an edge agent on the host that
runs the platform, for any project (docs/edge.md, "This machine as a device").

Only where a supervisor of local agents runs: ``make run`` sets ``SAMPAN_LOCAL_AGENTS_DIR`` and
polls it (:mod:`sampan.devstack.localagents`). The web process never starts processes itself:
it issues an enrollment token and leaves a request file, ``<dir>/requests/<project id>.json``
(mode 0600: it holds the token); the supervisor enrolls an agent into ``<dir>/<project id>/``,
starts it and removes the request, or writes ``<project id>.error`` with the reason. When that
device is deleted, ``<dir>/requests/<project id>.retire`` asks the supervisor to stop the agent
and remove its home. In production (no such directory) the console shows the commands for a
device instead.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import tempfile
import time
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

from django.conf import settings
from django.utils.translation import gettext as _

from sampan.accounts.models import Project
from sampan.core.errors import Conflict
from sampan.fleet.models import Device
from sampan.fleet.services import enrollment_token_create

log = logging.getLogger(__name__)

#: how long the token of a request stays usable (the supervisor polls every 0.5 s)
REQUEST_TOKEN_TTL = timedelta(minutes=10)


class LocalAgentsUnavailable(Conflict):
    code = "local_agents_unavailable"


def local_agents_dir() -> Path | None:
    """``SAMPAN_LOCAL_AGENTS_DIR`` as a path, None when unset (production)."""
    value = str(getattr(settings, "SAMPAN_LOCAL_AGENTS_DIR", "") or "").strip()
    return Path(value) if value else None


def request_path(root: Path, project_id: Any) -> Path:
    return root / "requests" / f"{project_id}.json"


def error_path(root: Path, project_id: Any) -> Path:
    return root / "requests" / f"{project_id}.error"


def retire_path(root: Path, project_id: Any) -> Path:
    return root / "requests" / f"{project_id}.retire"


def local_device_retire(*, project_id: Any, device_id: Any) -> None:
    """After ``device_id`` was deleted: when it is the device of this machine's agent for
    ``project_id``, leave ``<dir>/requests/<project id>.retire`` (naming the device) for the
    supervisor, which stops that agent and removes its home; otherwise nothing. Before, the
    agent kept running with a dead credential (401 on every heartbeat) and make run started it
    again."""
    root = local_agents_dir()
    if root is None:
        return
    try:
        config = json.loads((root / str(project_id) / "agent.json").read_text(encoding="utf-8"))
        if str(uuid.UUID(str(config["device_id"]))) != str(device_id):
            return
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return
    target = retire_path(root, project_id)
    target.parent.mkdir(parents=True, exist_ok=True)
    # whole or not at all: the supervisor polls and deletes what it has read
    fd, temp = tempfile.mkstemp(prefix=".tmp-", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(f"{device_id}\n")
        os.replace(temp, target)
    except OSError:
        Path(temp).unlink(missing_ok=True)
        log.exception("could not ask make run to stop the agent of deleted device %s", device_id)


def local_device_name() -> str:
    """The name the local agent enrolls under: ``<host name> (this machine)``."""
    return f"{socket.gethostname()} (this machine)"[:100]


def local_device_status(*, project: Project) -> dict[str, Any]:
    """``{"available", "state", "device_id", "error"}``: ``state`` is ``unavailable`` (no
    supervisor), ``none``, ``requested`` (waiting for the supervisor, at most
    :data:`REQUEST_TOKEN_TTL`), ``failed`` (``error`` says why; a new request clears it),
    ``enrolled`` (``device_id`` names the device; its agent runs) or ``stopped`` (enrolled, but
    its agent is not running: ``error`` says why; a new request enrolls it again, the same
    device)."""
    root = local_agents_dir()
    status: dict[str, Any] = {"available": root is not None, "state": "unavailable",
                              "device_id": None, "error": None}
    if root is None:
        return status
    try:
        config = json.loads((root / str(project.pk) / "agent.json").read_text(encoding="utf-8"))
        device_id = str(uuid.UUID(str(config["device_id"])))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):  # unusable: re-enroll
        device_id = None
    try:
        error: str | None = error_path(root, project.pk).read_text(encoding="utf-8").strip()
    except OSError:
        error = None
    request = request_path(root, project.pk)
    try:
        asked_at = request.stat().st_mtime
    except OSError:
        asked_at = None
    if asked_at is not None:
        if time.time() - asked_at < REQUEST_TOKEN_TTL.total_seconds():
            return {**status, "state": "requested"}
        return {**status, "state": "failed", "error": (
            "no agent supervisor took the request up (is make run running?); ask again")}
    if device_id is not None and Device.objects.filter(project=project, pk=device_id).exists():
        if _running(root, project.pk):
            return {**status, "state": "enrolled", "device_id": device_id}
        return {**status, "state": "stopped", "device_id": device_id,
                "error": error or "its agent is not running (make run starts it)"}
    return {**status, "state": "failed" if error else "none", "error": error}


def _running(root: Path, project_id: Any) -> bool:
    """Whether the project's local agent process runs (its pid file names a live process)."""
    try:
        pid = int((root / "run" / f"{project_id}.pid").read_text(encoding="ascii").strip())
        os.kill(pid, 0)
    except PermissionError:
        return True
    except (OSError, ValueError):
        return False
    return True


def local_device_request(*, project: Project, user: Any) -> dict[str, Any]:
    """Ask the supervisor for an agent on this host for ``project``: a one-time enrollment
    token (10 min) in a request file written atomically. Does nothing new while one is
    requested or enrolled (a deleted device gets a new agent). Returns
    :func:`local_device_status`.

    Raises LocalAgentsUnavailable (409 ``local_agents_unavailable``) without a supervisor."""
    root = local_agents_dir()
    if root is None:
        raise LocalAgentsUnavailable(_(
            "this server does not run agents for its projects (only `make run` does); install "
            "the agent on the device with the commands of Add device"))
    status = local_device_status(project=project)
    if status["state"] in ("requested", "enrolled"):
        return status
    running = sum(1 for pid in (root / "run").glob("*.pid") if _running(root, pid.stem))
    if running >= settings.SAMPAN_LOCAL_AGENTS_MAX:
        raise LocalAgentsUnavailable(_(
            "this machine runs %(running)d local agents already (SAMPAN_LOCAL_AGENTS_MAX); "
            "delete a project's device or use another machine") % {"running": running})
    issued = enrollment_token_create(project=project, user=user, expires_in=REQUEST_TOKEN_TTL,
                                     note="this machine (one click)")
    target = request_path(root, project.pk)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.unlink(missing_ok=True)  # a request nobody took up (it expired)
    fd, temp = tempfile.mkstemp(prefix=".tmp-", dir=target.parent)
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump({"project_id": str(project.pk), "token": issued.secret,
                       "name": local_device_name()}, handle)
        try:
            os.link(temp, target)  # exclusive: another web process's request stands
        except FileExistsError:
            issued.token.delete()
    finally:
        Path(temp).unlink(missing_ok=True)
    error_path(root, project.pk).unlink(missing_ok=True)
    return local_device_status(project=project)
