"""``make run``'s side of "use this machine as a device" (:mod:`sampan.fleet.local`).

:class:`LocalAgents` starts the agents enrolled earlier (one per project, under
``<data dir>/local-agents/<project id>/``) when ``make run`` starts, and at every
:meth:`LocalAgents.check` takes up the requests the web process left: enroll with the request's
token into that project's folder, start the agent on a free port (as a process of the stack,
which the :class:`~sampan.devstack.supervise.Supervisor` restarts if it dies), remove the
request. A failed enrollment leaves ``<project id>.error`` with the reason for the console.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from sampan.devstack.stack import Stack, free_port

_PROJECT_ID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


def _err(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


@dataclass
class LocalAgents:
    """The local agents of ``stack`` under ``root`` (``SAMPAN_LOCAL_AGENTS_DIR``)."""

    stack: Stack
    root: Path
    say: Callable[[str], None] = _err
    #: project id -> the agent's URL on this host
    urls: dict[str, str] = field(default_factory=dict)

    @staticmethod
    def process_name(project_id: str) -> str:
        return f"agent-{project_id[:8]}"

    def start_existing(self) -> None:
        """Start every agent enrolled before (a folder with an ``agent.json``)."""
        for home in sorted(self.root.iterdir()) if self.root.is_dir() else ():
            if _PROJECT_ID.match(home.name) and (home / "agent.json").is_file():
                self._start(home.name)

    def check(self) -> None:
        """Take up every request waiting in ``root/requests`` (see the module's docstring)."""
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
                                        home=self.root / project_id)
                url = self._start(project_id)
            except Exception as error:  # noqa: BLE001 - reported to the console, make run goes on
                reason = str(error).strip().splitlines()[-1] if str(error).strip() else repr(
                    error)
                (requests_dir / f"{project_id}.error").write_text(reason + "\n",
                                                                  encoding="utf-8")
                self.say(f"could not start a local agent for project {project_id}: {reason}")
            else:
                self.say(f"local agent for project {project_id} serving on {url}")
            finally:
                path.unlink(missing_ok=True)

    def _start(self, project_id: str) -> str:
        url = self.stack.start_agent(process=self.process_name(project_id),
                                     home=self.root / project_id, port=free_port())
        self.urls[project_id] = url
        return url

    def _stop(self, project_id: str) -> None:
        """Stop the project's running agent (it is enrolled again)."""
        process = self.stack.processes.pop(self.process_name(project_id), None)
        if process is not None and process.poll() is None:
            process.terminate()
            process.wait(timeout=15)
        self.urls.pop(project_id, None)
