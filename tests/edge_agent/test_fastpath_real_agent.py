"""The heartbeat fast path takes the heartbeats a real, converged agent sends (its runtime and
its running report on every beat): the speed-up reaches real fleets, not only the bench."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

from edge_agent.agent import Agent
from edge_agent.client import DeviceClient
from edge_agent.deploy import Converger
from edge_agent.home import AgentConfig, AgentHome, AgentState
from sampan.fleet.fastpath import parse


def test_a_converged_agents_steady_heartbeat_is_one_the_fast_path_takes(
        tmp_path: Path, control_plane, signing_key, package_factory) -> None:
    credential = f"cred-{uuid.uuid4().hex}"
    control_plane.credentials[credential] = "device-1"
    home = AgentHome(tmp_path / "agent")
    config = AgentConfig(control_plane.url, "device-1", credential, signing_key.public_b64, 0.1)
    home.save_config(config)
    client = DeviceClient(config.server_url, credential)
    try:
        device = Converger(Agent(home, config), client, AgentState())
        device.run_once()  # not deployed yet: nothing to report
        idle = control_plane.heartbeats[-1]
        control_plane.deploy(package_factory(), str(uuid.uuid4()))  # the platform's ids
        device.run_once()
        device.run_once()
        device.run_once()  # converged, running: the steady state of a real fleet
        steady = control_plane.heartbeats[-1]
    finally:
        client.close()
    # every beat carries "runtime" (and, once deployed, the deployment report "running"):
    # parse() takes them; _answer then compares both with what is stored
    assert parse(json.dumps(idle).encode()) is not None, sorted(idle)
    assert parse(json.dumps(steady).encode()) is not None, (steady.get("runtime"),
                                                            steady.get("deployment"))
