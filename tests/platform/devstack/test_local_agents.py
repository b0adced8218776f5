""""Use this machine as a device" with the real parts: a stack whose web process leaves the
request, make run's LocalAgents taking it up (enroll, start, supervise), the agent heartbeating
into the project, started again on the next make run, and a failure reported to the console."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
import requests

from sampan.devstack.client import Client
from sampan.devstack.localagents import LocalAgents
from sampan.devstack.stack import Stack, wait_until
from sampan.devstack.supervise import Supervisor
from tests.database import stack_database_url


@pytest.mark.integration
def test_one_click_enrolls_and_starts_an_agent_for_the_project(tmp_path: Path) -> None:
    root = tmp_path / "local-agents"
    lines: list[str] = []
    with Stack(data_dir=tmp_path / "stack", database_url=stack_database_url(),
               extra_env={"SAMPAN_LOCAL_AGENTS_DIR": str(root),
                          "SAMPAN_DEVICE_HEARTBEAT_INTERVAL_S": "1"}) as stack:
        stack.start(worker=False)
        user = json.loads(stack.manage("sampan_user", "--username", "u", "--password",
                                       "u-password-1").stdout.strip().splitlines()[-1])
        client = Client(stack.url, user["token"])
        project = client.post("/api/v1/projects/", {"name": "Here"})
        local = f"/api/v1/projects/{project['id']}/local-device/"
        assert client.get(local)["state"] == "none"

        assert client.post(local)["state"] == "requested"
        supervisor = Supervisor(stack, say=lines.append)
        agents = LocalAgents(stack, root, supervisor, say=lines.append)
        agents.check()

        status = client.get(local)
        assert status["state"] == "enrolled", (status, lines)
        assert lines == [f"local agent for project {project['id']} serving on "
                         f"{agents.urls[project['id']]}"]
        assert not any((root / "requests").iterdir())  # the token is gone from disk

        def online() -> bool:
            device = client.get(f"/api/v1/projects/{project['id']}/devices/"
                                f"{status['device_id']}/")
            return device["status"] == "online"

        wait_until(online, timeout_s=30, what="the local agent's first heartbeat")
        assert requests.get(agents.urls[project["id"]] + "/healthz", timeout=5).ok

        # its agent killed: "stopped", until the supervisor has started it again
        name = LocalAgents.process_name(project["id"])
        stack.processes[name].kill()
        stack.processes[name].wait(timeout=20)
        assert client.get(local)["state"] == "stopped"
        supervisor.given_up.add(name)  # as after five quick crashes
        # a click now enrolls it again (the same device) and supervises the new process
        assert client.post(local)["state"] == "requested"
        agents.check()
        assert client.get(local) == {**status, "state": "enrolled"}, lines
        assert name not in supervisor.given_up

        # the next make run starts it again: the same device, no new enrollment
        process = stack.processes.pop(name)
        process.terminate()
        process.wait(timeout=20)
        again = LocalAgents(stack, root, say=lines.append)
        again.start_existing()
        assert requests.get(again.urls[project["id"]] + "/healthz", timeout=5).ok
        devices = client.get(f"/api/v1/projects/{project['id']}/devices/")
        assert [d["id"] for d in devices] == [status["device_id"]]

        # a request whose token no longer works: the reason reaches the console
        other = client.post("/api/v1/projects/", {"name": "Elsewhere"})
        requests_dir = root / "requests"
        (requests_dir / f"{other['id']}.json").write_text(json.dumps(
            {"project_id": other["id"], "token": "sdt_not-a-token", "name": "x"}))
        again.check()
        failed = client.get(f"/api/v1/projects/{other['id']}/local-device/")
        assert failed["state"] == "failed" and "enrollment failed" in failed["error"], failed
        assert not (requests_dir / f"{other['id']}.json").exists()

        # a home whose agent cannot start (a broken agent.json) is reported at once, and the
        # other agents start: make run goes on
        broken = root / other["id"]
        broken.mkdir()
        (broken / "agent.json").write_text('{"device_id": "x"}')
        began = time.monotonic()
        third = LocalAgents(stack, root, say=lines.append)
        stack.processes.pop(name).terminate()
        third.start_existing()
        assert time.monotonic() - began < 20
        assert project["id"] in third.urls and other["id"] not in third.urls
        reported = client.get(f"/api/v1/projects/{other['id']}/local-device/")
        assert "the agent did not start" in (reported["error"] or ""), reported

        # the device deleted in the console: the next check stops its agent and removes its
        # home (before, it heartbeat with a dead credential and make run started it again)
        process = stack.processes[name]
        client.request("DELETE", f"/api/v1/projects/{project['id']}/devices/"
                                 f"{status['device_id']}/")
        third.check()
        assert process.wait(timeout=20) is not None and name not in stack.processes
        assert not (root / project["id"]).exists()
        assert f"local agent for project {project['id']} stopped: its device was deleted" \
            in lines
        assert client.get(local)["state"] == "none"
        assert not list((root / "requests").glob("*.retire"))


class _NoStack:
    """A stack with no processes that fails the test if an agent is started."""

    processes: dict[str, object] = {}

    def start_agent(self, **kwargs: object) -> str:
        raise AssertionError(f"an agent was started: {kwargs}")


def test_at_start_a_home_whose_device_was_deleted_is_removed_not_started(
        tmp_path: Path) -> None:
    """The device deleted while make run was stopped: the next start removes that home instead
    of starting its agent; a retire request for an older device (the home enrolled again
    since) leaves the home alone."""
    project_id = "0" * 8 + "-0000-4000-8000-" + "0" * 12
    old, new = "1" * 8 + "-0000-4000-8000-" + "0" * 12, "2" * 8 + "-0000-4000-8000-" + "0" * 12
    home = tmp_path / project_id
    home.mkdir()
    (home / "agent.json").write_text(json.dumps({"device_id": new}))
    (tmp_path / "requests").mkdir()
    retire = tmp_path / "requests" / f"{project_id}.retire"
    retire.write_text(f"{old}\n")
    lines: list[str] = []
    agents = LocalAgents(_NoStack(), tmp_path, say=lines.append)  # type: ignore[arg-type]
    agents.check()
    assert home.exists() and not retire.exists() and lines == []

    (home / "agent.json").write_text(json.dumps({"device_id": old}))
    retire.write_text(f"{old}\n")
    agents.start_existing()
    assert not home.exists() and not retire.exists()
    assert lines == [f"local agent for project {project_id} stopped: its device was deleted"]
