"""``make run``'s side of "use this machine as a device" (:mod:`sampan.fleet.local`).

:class:`LocalAgents` starts the agents enrolled earlier (one per project, under
``<root>/<project id>/``) when ``make run`` starts, and at every :meth:`LocalAgents.check`
takes up the requests the web process left: enroll with the request's token into that
project's folder (``--force``: a device of this machine and name keeps its id), start the agent
on a free port as a process of the stack (the :class:`~sampan.devstack.supervise.Supervisor`
restarts it if it dies), remove the request; a ``requests/<project id>.retire`` (its device
was deleted) stops that agent and removes its home. What the web process reads back
(:func:`sampan.fleet.local.local_device_status`): ``run/<project id>.pid`` while the agent runs,
``requests/<project id>.error`` with the reason when enrolling or starting failed. A failure is
reported and make run goes on: one agent never stops the others or the platform.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from sampan.devstack.stack import Stack, free_port
from sampan.devstack.supervise import Supervisor

_PROJECT_ID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
#: a retire request that names no device is read again for this long before it is dropped
RETIRE_GRACE_S = 10.0
#: the seconds an enrollment or an agent's start may take (make run's loop waits for them)
STEP_TIMEOUT_S = 30.0


def _err(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _uuid(value: object) -> uuid.UUID | None:
    try:
        return uuid.UUID(str(value).strip())
    except ValueError:
        return None


def _reason(error: BaseException) -> str:
    """One line for the console: the last non-empty line of the error's message."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return lines[-1] if lines else type(error).__name__


@dataclass
class LocalAgents:
    """The local agents of ``stack`` under ``root`` (``SAMPAN_LOCAL_AGENTS_DIR``), restarted by
    ``supervisor`` when one dies."""

    stack: Stack
    root: Path
    supervisor: Supervisor | None = None
    say: Callable[[str], None] = _err
    #: project id -> the agent's URL on this host
    urls: dict[str, str] = field(default_factory=dict)

    @staticmethod
    def process_name(project_id: str) -> str:
        return f"agent-{project_id}"

    def start_existing(self) -> None:
        """Start every agent enrolled before (a folder with an ``agent.json``); one that does
        not start is reported (``requests/<id>.error``) and skipped; one whose device was
        deleted meanwhile is removed instead."""
        self._retire_all()
        for home in sorted(self.root.iterdir()) if self.root.is_dir() else ():
            if _PROJECT_ID.match(home.name) and (home / "agent.json").is_file():
                try:
                    self._start(home.name)
                except Exception as error:  # noqa: BLE001 - reported; make run goes on
                    self._failed(home.name, f"the agent did not start: {_reason(error)}")

    def check(self) -> None:
        """Take up every request waiting in ``root/requests`` (see the module's docstring)."""
        self._retire_all()
        requests_dir = self.root / "requests"
        for path in sorted(requests_dir.glob("*.json")) if requests_dir.is_dir() else ():
            project_id = path.stem
            if not _PROJECT_ID.match(project_id):
                path.unlink(missing_ok=True)
                continue
            try:
                request = json.loads(path.read_text(encoding="utf-8"))
                self._stop(project_id)
                self.stack.enroll_agent(str(request["token"]), name=str(request["name"]),
                                        home=self.root / project_id, force=True,
                                        timeout_s=STEP_TIMEOUT_S)
                url = self._start(project_id)
            except Exception as error:  # noqa: BLE001 - reported to the console, make run goes on
                self._failed(project_id, _reason(error))
            else:
                self.say(f"local agent for project {project_id} serving on {url}")
            finally:
                path.unlink(missing_ok=True)

    def _retire_all(self) -> None:
        requests_dir = self.root / "requests"
        for path in sorted(requests_dir.glob("*.retire")) if requests_dir.is_dir() else ():
            self._retire(path)

    def _retire(self, path: Path) -> None:
        """The device of ``path``'s project was deleted: stop its agent and remove its home,
        when the home is still that device's (a new enrollment since keeps its agent)."""
        project_id = path.stem
        keep = False
        try:
            if _PROJECT_ID.match(project_id):
                home = self.root / project_id
                device_id = _uuid(path.read_text(encoding="utf-8"))
                if device_id is None and time.time() - path.stat().st_mtime < RETIRE_GRACE_S:
                    keep = True  # being written? read it again at the next check
                    return
                try:
                    enrolled = json.loads((home / "agent.json").read_text(encoding="utf-8"))
                except (OSError, ValueError):
                    enrolled = {}
                if device_id is not None and isinstance(enrolled, dict) \
                        and _uuid(enrolled.get("device_id")) == device_id:
                    self._stop(project_id)
                    shutil.rmtree(home, ignore_errors=True)
                    (self.root / "requests" / f"{project_id}.error").unlink(missing_ok=True)
                    self.say(f"local agent for project {project_id} stopped: its device "
                             "was deleted")
        except Exception as error:  # noqa: BLE001 - reported; make run goes on
            self._failed(project_id, f"could not stop the agent of a deleted device: "
                                     f"{_reason(error)}")
        finally:
            try:
                if not keep:
                    path.unlink(missing_ok=True)
            except OSError as error:  # make run goes on
                self.say(f"could not remove {path}: {error}")

    def _failed(self, project_id: str, reason: str) -> None:
        errors = self.root / "requests"
        errors.mkdir(parents=True, exist_ok=True)
        (errors / f"{project_id}.error").write_text(reason + "\n", encoding="utf-8")
        self.say(f"local agent for project {project_id}: {reason}")

    def _pid_file(self, project_id: str) -> Path:
        return self.root / "run" / f"{project_id}.pid"

    def _start(self, project_id: str) -> str:
        name = self.process_name(project_id)
        if self.supervisor is not None:
            self.supervisor.forget(name)
        (self.root / "requests" / f"{project_id}.error").unlink(missing_ok=True)
        url = self.stack.start_agent(process=name, home=self.root / project_id,
                                     port=free_port(), timeout_s=STEP_TIMEOUT_S)
        self._pid_file(project_id).parent.mkdir(parents=True, exist_ok=True)
        self._pid_file(project_id).write_text(f"{self.stack.processes[name].pid}\n")
        self.urls[project_id] = url
        return url

    def _stop(self, project_id: str) -> None:
        """Stop the project's running agent (it is enrolled again)."""
        name = self.process_name(project_id)
        if self.supervisor is not None:
            self.supervisor.forget(name)
        process = self.stack.processes.pop(name, None)
        if process is not None and process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=10)
            except Exception:  # noqa: BLE001 - a stuck agent is killed
                process.kill()
                process.wait(timeout=5)
        self._pid_file(project_id).unlink(missing_ok=True)
        self.urls.pop(project_id, None)

