"""The convergence loop in-process, against the fake control plane (real HTTP, real files)."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from edge_agent.agent import Agent
from edge_agent.client import DeviceClient
from edge_agent.deploy import Converger
from edge_agent.home import AgentConfig, AgentHome, AgentState


@pytest.fixture
def device(tmp_path: Path, control_plane, signing_key):
    credential = f"cred-{uuid.uuid4().hex}"
    control_plane.credentials[credential] = "device-1"
    home = AgentHome(tmp_path / "agent")
    config = AgentConfig(control_plane.url, "device-1", credential, signing_key.public_b64, 0.1)
    home.save_config(config)
    agent = Agent(home, config)
    client = DeviceClient(config.server_url, credential)
    yield Converger(agent, client, AgentState())
    client.close()


def model_gets(plane, version_id: str) -> list[dict[str, str]]:
    return [
        h for m, p, h in plane.requests if m == "GET" and p.endswith(f"{version_id}/model.onnx")
    ]


def test_converges_and_reports_each_step(device, control_plane, package_factory, png) -> None:
    package = package_factory()
    control_plane.deploy(package, "d1")
    device.run_once()

    assert [s for s, _ in control_plane.deployment_states("d1")] == [
        "downloading",
        "verifying",
        "running",
    ]
    agent = device.agent
    assert agent.current_version == package.version_id
    assert agent.predict(png((255, 0, 0)))["predictions"][0]["label"] == "red"
    installed = agent.home.model_dir(package.version_id)
    assert (installed / "model.onnx").read_bytes() == package.model_bytes
    state = json.loads(agent.home.state_path.read_text())
    assert state["current"] == package.version_id
    assert state["deployment"]["state"] == "running"
    assert list(agent.home.downloads_dir.iterdir()) == []

    device.run_once()  # converged: nothing more is fetched
    assert len(model_gets(control_plane, package.version_id)) == 1
    assert control_plane.heartbeats[-1]["current_model_version_id"] == package.version_id


def test_interrupted_download_resumes_with_range(
    device, control_plane, package_factory, classifier
) -> None:
    package = package_factory(model_bytes=classifier(padding_bytes=400_000))
    control_plane.deploy(package, "d1")
    control_plane.cut_next_download = 200_000
    device.run_once()

    state, error = control_plane.deployment_states("d1")[-1]
    assert state == "downloading" and "retrying" in error
    part = device.home.downloads_dir / f"{package.version_id}.part"
    kept = part.stat().st_size
    assert 0 < kept <= 200_000  # whole chunks received before the cut are kept
    assert part.read_bytes() == package.model_bytes[:kept]

    device.apply(control_plane.desired)  # the retry, without waiting for the backoff
    gets = model_gets(control_plane, package.version_id)
    assert len(gets) == 2
    assert "Range" not in gets[0]
    assert gets[1]["Range"] == f"bytes={kept}-"
    assert control_plane.deployment_states("d1")[-1] == ("running", None)
    assert device.agent.current_version == package.version_id


def test_model_that_fails_to_load_keeps_serving_the_old_one(
    device, control_plane, package_factory, png
) -> None:
    good = package_factory()
    control_plane.deploy(good, "d1")
    device.run_once()
    broken = package_factory(model_bytes=b"\x08\x07 not a model", version=2)  # signed, right hash
    control_plane.deploy(broken, "d2")
    device.run_once()

    state, error = control_plane.deployment_states("d2")[-1]
    assert state == "failed"
    assert "cannot load" in error
    assert device.agent.predict(png((0, 255, 0)))["model_version_id"] == good.version_id
    assert not device.home.model_dir(broken.version_id).exists()
    device.run_once()  # terminal: not downloaded again
    assert len(model_gets(control_plane, broken.version_id)) == 1


def test_bad_signature_is_reported_and_not_retried(
    device, control_plane, package_factory, key_factory
) -> None:
    from_elsewhere = package_factory()
    from_elsewhere.manifest["signature"]["value"] = key_factory().sign(from_elsewhere.manifest)[
        "signature"
    ]["value"]
    control_plane.deploy(from_elsewhere, "d1")
    device.run_once()
    device.run_once()

    assert control_plane.deployment_states("d1")[-1] == ("failed", "bad signature")
    assert model_gets(control_plane, from_elsewhere.version_id) == []  # nothing downloaded
    assert device.agent.current_version is None


def test_tampered_artifact_is_fetched_once_more_then_failed(
    device, control_plane, package_factory
) -> None:
    package = package_factory()
    control_plane.deploy(package, "d1")
    package.model_bytes = package.model_bytes[:-4] + b"evil"  # same size, other bytes
    device.run_once()
    assert "sha256 mismatch; downloading again" in control_plane.deployment_states("d1")[-1][1]
    device.apply(control_plane.desired)

    assert control_plane.deployment_states("d1")[-1] == (
        "failed",
        "file 'model.onnx': sha256 mismatch",
    )
    assert len(model_gets(control_plane, package.version_id)) == 2
    assert list(device.home.models_dir.iterdir()) == []


def test_network_down_backs_off_and_keeps_serving(
    device, control_plane, package_factory, png
) -> None:
    package = package_factory()
    control_plane.deploy(package, "d1")
    device.run_once()
    control_plane.down = True
    waits = [device.run_once() for _ in range(3)]

    assert waits[0] < waits[1] < waits[2]  # exponential: about 1, 2, 4 s
    assert device.agent.predict(png((0, 0, 255)))["predictions"][0]["label"] == "blue"
    control_plane.down = False
    assert device.run_once() == pytest.approx(0.1)


def test_rollback_reuses_the_kept_previous_version(device, control_plane, package_factory) -> None:
    first, second = package_factory(), package_factory(version=2)
    for deployment_id, package in (("d1", first), ("d2", second), ("d3", first)):
        control_plane.deploy(package, deployment_id)
        device.run_once()

    assert control_plane.deployment_states("d3")[-1] == ("running", None)
    assert len(model_gets(control_plane, first.version_id)) == 1  # not downloaded again
    assert (device.state.current, device.state.previous) == (first.version_id, second.version_id)
    assert sorted(p.name for p in device.home.models_dir.iterdir()) == sorted(
        [first.version_id, second.version_id]
    )


def test_restart_loads_the_current_version_from_state(device, control_plane, package_factory):
    package = package_factory()
    control_plane.deploy(package, "d1")
    device.run_once()

    restarted = Agent(device.home, device.agent.config)
    state = restarted.load_from_state(device.home.load_state())
    assert restarted.current_version == package.version_id
    assert state.current == package.version_id

    (device.home.model_dir(package.version_id) / "model.onnx").write_bytes(b"corrupted on disk")
    broken = Agent(device.home, device.agent.config)
    state = broken.load_from_state(device.home.load_state())
    assert broken.current_version is None
    assert state.current is None


def _trusted(*keys) -> list[dict[str, str]]:
    return [{"key_id": key.key_id, "public_key": key.public_b64} for key in keys]


def test_heartbeat_replies_rotate_the_trusted_keys(
    device, control_plane, signing_key, key_factory
) -> None:
    from tests.edge_agent.conftest import make_package

    new_key = key_factory()
    before = make_package(signing_key)  # signed with the enrollment key
    after = make_package(new_key)
    # a package signed with a key the device has not been told about yet is refused
    control_plane.deploy(after, "d0")
    device.run_once()
    assert control_plane.deployment_states("d0")[-1][0] == "failed"

    control_plane.trusted_signing_keys = _trusted(new_key, signing_key)
    control_plane.deploy(after, "d1")
    device.run_once()
    assert control_plane.deployment_states("d1")[-1] == ("running", None)
    saved = json.loads(device.home.config_path.read_text())
    assert saved["trusted_signing_keys"] == [new_key.public_b64, signing_key.public_b64]
    assert saved["signing_public_key"] == new_key.public_b64
    control_plane.deploy(before, "d2")
    device.run_once()
    assert control_plane.deployment_states("d2")[-1] == ("running", None)

    # the old key retired: a package it signed is refused, the running model keeps serving
    control_plane.trusted_signing_keys = _trusted(new_key)
    retired = make_package(signing_key)
    control_plane.deploy(retired, "d3")
    device.run_once()
    state, error = control_plane.deployment_states("d3")[-1]
    assert state == "failed" and f"signed by another key ('{signing_key.key_id}')" in error
    assert device.agent.current_version == before.version_id


def test_a_malformed_trusted_key_list_is_ignored(device, control_plane, key_factory) -> None:
    before = device.agent.config.trusted_keys()
    control_plane.trusted_signing_keys = [
        {"key_id": "0" * 16, "public_key": key_factory().public_b64}
    ]
    device.run_once()
    control_plane.trusted_signing_keys = []
    device.run_once()
    assert device.agent.config.trusted_keys() == before
    assert "trusted_signing_keys" not in json.loads(device.home.config_path.read_text()) or (
        json.loads(device.home.config_path.read_text())["trusted_signing_keys"] == [])


def test_backoff_doubles_to_its_cap_and_never_overflows() -> None:
    """A device offline for days keeps retrying every ~60 s: 2**1024 overflowed a float after
    ~17 h of failures and ended the agent's loop (found by mypy's review of the agent)."""
    from edge_agent.deploy import Backoff

    backoff = Backoff(initial_s=1.0, maximum_s=60.0)
    delays = [backoff.next() for _ in range(2000)]
    assert 0.8 <= delays[0] <= 1.2 and 1.6 <= delays[1] <= 2.4
    assert all(48.0 <= d <= 72.0 for d in delays[10:])
    backoff.reset()
    assert backoff.next() <= 1.2


def test_heartbeats_keep_flowing_during_a_long_download(
    device, control_plane, package_factory, png
) -> None:
    """run() applies on its own thread: while a download hangs, heartbeats (and telemetry)
    still go out at their interval and the old model keeps serving."""
    import threading

    old, new = package_factory(), package_factory()
    control_plane.deploy(old, "d1")
    device.run_once()
    assert device.agent.current_version == old.version_id
    control_plane.hold_downloads = threading.Event()
    control_plane.deploy(new, "d2")
    stop = threading.Event()
    loop = threading.Thread(target=device.run, args=(stop,), daemon=True)
    loop.start()
    try:
        control_plane.wait_for(lambda: model_gets(control_plane, new.version_id))
        held_at = len(control_plane.heartbeats)
        device.agent.predict(png((255, 0, 0)))
        # the download is stuck; 10 more heartbeats (0.1 s apart) arrive meanwhile, reporting it
        control_plane.wait_for(lambda: len(control_plane.heartbeats) >= held_at + 10,
                               timeout_s=10.0)
        assert device.applying
        assert control_plane.heartbeats[-1]["deployment"]["state"] == "downloading"
        assert control_plane.heartbeats[-1]["current_model_version_id"] == old.version_id
        assert control_plane.heartbeats[-1]["metrics"]["requests"] >= 1
        control_plane.hold_downloads.set()
        control_plane.wait_for(lambda: ("running", None)
                               in control_plane.deployment_states("d2"))
        assert device.agent.current_version == new.version_id
        control_plane.wait_for(lambda: not device.applying)  # checked at every heartbeat
    finally:
        control_plane.hold_downloads.set()
        stop.set()
        loop.join(timeout=5.0)
    assert not loop.is_alive()


def test_a_step_is_reported_at_once_not_at_the_next_interval(
    device, control_plane, package_factory
) -> None:
    """Under run(), the apply thread's steps bring the next heartbeat forward: with a 30 s
    interval, the deployment still reaches running on the control plane within seconds."""
    import threading

    control_plane.heartbeat_interval_s = 30.0
    device.interval_s = 30.0
    package = package_factory()
    control_plane.deploy(package, "d1")
    stop = threading.Event()
    loop = threading.Thread(target=device.run, args=(stop,), daemon=True)
    loop.start()
    try:
        control_plane.wait_for(lambda: ("running", None)
                               in control_plane.deployment_states("d1"), timeout_s=10.0)
    finally:
        stop.set()
        loop.join(timeout=5.0)
    assert not loop.is_alive()


def _run_in_background(device):
    import threading

    stop = threading.Event()
    loop = threading.Thread(target=device.run, args=(stop,), daemon=True)
    loop.start()
    return stop, loop


def test_a_deployment_superseded_during_its_download_is_never_swapped_in(
    device, control_plane, package_factory
) -> None:
    """v2 downloads (held); the operator deploys v3 meanwhile: v2 is abandoned (never served,
    never reported running) and v3 is installed."""
    import threading

    old, abandoned, wanted = package_factory(), package_factory(), package_factory()
    control_plane.deploy(old, "d1")
    device.run_once()
    control_plane.hold_downloads = threading.Event()
    control_plane.deploy(abandoned, "d2")
    stop, loop = _run_in_background(device)
    try:
        control_plane.wait_for(lambda: model_gets(control_plane, abandoned.version_id))
        control_plane.deploy(wanted, "d3")
        after = len(control_plane.heartbeats)
        control_plane.wait_for(lambda: len(control_plane.heartbeats) >= after + 2)
        control_plane.hold_downloads.set()
        control_plane.wait_for(lambda: ("running", None) in control_plane.deployment_states("d3"))
    finally:
        control_plane.hold_downloads.set()
        stop.set()
        loop.join(timeout=5.0)
    assert device.agent.current_version == wanted.version_id
    assert "running" not in [s for s, _ in control_plane.deployment_states("d2")]
    served = {h["current_model_version_id"] for h in control_plane.heartbeats}
    assert abandoned.version_id not in served


def test_an_unusable_desired_state_does_not_flood_the_platform(
    device, control_plane, package_factory
) -> None:
    """A desired state the agent cannot act on (a size that is not a byte count) is logged and
    ignored: heartbeats stay at their interval (a flood of early beats was possible)."""
    control_plane.heartbeat_interval_s = 0.5
    device.interval_s = 0.5
    control_plane.deploy(package_factory(), "d1", size="abc")
    stop, loop = _run_in_background(device)
    try:
        began = len(control_plane.heartbeats)
        control_plane.wait_for(lambda: len(control_plane.heartbeats) >= began + 3, timeout_s=10)
        import time

        first = time.monotonic()
        count = len(control_plane.heartbeats)
        control_plane.wait_for(lambda: len(control_plane.heartbeats) >= count + 3, timeout_s=10)
        elapsed = time.monotonic() - first
    finally:
        stop.set()
        loop.join(timeout=5.0)
    assert elapsed >= 1.0, f"3 heartbeats in {elapsed:.2f} s at a 0.5 s interval"
    assert control_plane.deployment_states("d1") == []


def test_after_stop_an_apply_left_running_neither_swaps_nor_reports(
    device, control_plane, package_factory
) -> None:
    import threading

    old, new = package_factory(), package_factory()
    control_plane.deploy(old, "d1")
    device.run_once()
    control_plane.hold_downloads = threading.Event()
    control_plane.deploy(new, "d2")
    stop, loop = _run_in_background(device)
    control_plane.wait_for(lambda: model_gets(control_plane, new.version_id))
    stop.set()
    loop.join(timeout=5.0)
    assert not loop.is_alive()
    count = len(control_plane.heartbeats)
    control_plane.hold_downloads.set()
    # the apply thread wakes with the download's next chunk and gives up: no beat, no swap
    import time

    assert device.applying
    deadline = time.monotonic() + 10.0
    while device.applying and time.monotonic() < deadline:
        threading.Event().wait(0.05)  # polling a flag with a deadline
    assert not device.applying
    assert len(control_plane.heartbeats) == count
    assert device.agent.current_version == old.version_id


def test_telemetry_is_buffered_while_the_platform_is_down_and_sent_when_it_returns(
    device, control_plane
) -> None:
    from collections import deque

    device._buffer = deque(maxlen=3)  # a small buffer: the oldest fall out, and are counted
    control_plane.down = True
    for _ in range(5):
        device.run_once()
    failed = [h for h in control_plane.heartbeats]
    assert len(failed) == 5
    control_plane.down = False
    device.run_once()
    delivered = control_plane.heartbeats[-1]
    assert [s["device_time"] for s in delivered["buffered"]] == [
        h["device_time"] for h in failed[2:]]  # the newest 3, oldest first
    assert all(set(s) == {"device_time", "metrics"} for s in delivered["buffered"])
    assert delivered["buffered_dropped"] == 2
    device.run_once()
    assert control_plane.heartbeats[-1]["buffered"] == []
    assert control_plane.heartbeats[-1]["buffered_dropped"] == 0


def test_a_refused_buffer_is_dropped_and_heartbeats_go_on(device, control_plane) -> None:
    """Samples the platform refuses (400) must not block every later heartbeat: the buffer is
    dropped (counted) and the plain heartbeat is sent again at once."""
    control_plane.down = True
    device.run_once()
    device.run_once()
    control_plane.down = False
    control_plane.refuse_buffered = True
    assert device.run_once() == 0.0  # refused with samples: again at once
    device.run_once()
    plain = control_plane.heartbeats[-1]
    assert plain["buffered"] == [] and plain["buffered_dropped"] == 2
    assert device.run_once() == pytest.approx(0.1)  # accepted: the normal interval


def _reference_of(tmp_path: Path, package) -> dict:
    from edge_agent.reference import reference_record
    from edge_agent.sessions import open_session

    path = tmp_path / "reference-model.onnx"
    path.write_bytes(package.model_bytes)
    return reference_record(open_session(path, package.manifest))


def test_a_model_failing_its_health_check_after_the_swap_is_rolled_back(
    device, control_plane, package_factory, classifier, png, tmp_path
) -> None:
    """The package's reference predictions come from another model (what a wrong or broken
    build would give on this device): the agent swaps it in, checks, goes back to the version
    it served, and reports the failure with what it did; state.json never named the bad one."""
    good = package_factory()
    good = package_factory(reference=_reference_of(tmp_path, good))
    control_plane.deploy(good, "d1")
    device.run_once()
    assert control_plane.deployment_states("d1")[-1] == ("running", None)  # its check passed

    wrong = _reference_of(tmp_path, package_factory(model_bytes=classifier(gain=3.0)))
    bad = package_factory(version=2, reference=wrong)
    control_plane.deploy(bad, "d2")
    device.run_once()
    state, error = control_plane.deployment_states("d2")[-1]
    assert state == "failed"
    assert error.startswith("health check failed after the swap: reference input 1, output 0: ")
    assert error.endswith(f"; rolled back to model version {good.version_id}")
    assert device.agent.predict(png((255, 0, 0)))["model_version_id"] == good.version_id
    assert json.loads(device.home.state_path.read_text())["current"] == good.version_id
    assert not device.home.model_dir(bad.version_id).exists()
    assert b'sampan_agent_deployments_total{result="rolled_back"} 1.0' in \
        device.agent.telemetry.exposition()
    device.run_once()  # terminal: not downloaded again
    assert len(model_gets(control_plane, bad.version_id)) == 1


def test_a_first_model_failing_its_health_check_leaves_no_model_served(
    device, control_plane, package_factory, classifier, png, tmp_path
) -> None:
    wrong = _reference_of(tmp_path, package_factory(model_bytes=classifier(gain=3.0)))
    control_plane.deploy(package_factory(reference=wrong), "d1")
    device.run_once()
    state, error = control_plane.deployment_states("d1")[-1]
    assert state == "failed" and error.endswith("; no model is served (there was none before)")
    assert device.agent.current_version is None
    assert device.agent.health()["status"] == "no_model"


def test_redeploying_the_version_already_served_reports_running(
        device, control_plane, package_factory) -> None:
    """A rollout's rollback re-sends v1 to a device that already serves v1 (its own health
    check sent it back, or it never left v1): a new deployment of the current version, nothing
    to fetch (downloading -> running in the agent's transition table)."""
    v1 = package_factory()
    control_plane.deploy(v1, "d1")
    device.run_once()
    control_plane.deploy(v1, "d2")
    device.run_once()
    device.run_once()
    assert control_plane.deployment_states("d2")[-1] == ("running", None)
    assert len(model_gets(control_plane, v1.version_id)) == 1


@pytest.mark.parametrize("reference", [
    {"schema": "sampan.reference/1", "seed": -1, "cases": [[{}]]},
    {"schema": "sampan.reference/1", "seed": 1, "cases": [[{"shape": [1, 3], "head": None}]]},
    {"schema": "sampan.reference/1", "seed": 1, "cases": [[{"shape": [1, 3], "head": ["a"],
                                                            "sum": 1, "abs_sum": 1}]]},
    {"schema": "sampan.reference/1", "seed": 1, "cases": [[]] * 1000},
])
def test_a_malformed_reference_fails_the_deployment_and_leaves_the_old_model_serving(
        device, control_plane, package_factory, reference) -> None:
    good = package_factory()
    control_plane.deploy(good, "d1")
    device.run_once()
    control_plane.deploy(package_factory(version=2, reference=reference), "d2")
    device.run_once()
    assert device.agent.current_version == good.version_id
    state, error = control_plane.deployment_states("d2")[-1]
    assert state == "failed" and error.startswith("health check failed after the swap: ")
    assert error.endswith(f"; rolled back to model version {good.version_id}")


def test_a_download_that_drips_is_cut_at_its_deadline_and_resumed(
        device, control_plane, package_factory, classifier, monkeypatch) -> None:
    """A link that sends a little now and then, never idle long enough for the read timeout,
    no longer holds the apply thread for ever: the attempt is cut at its deadline (grace + the
    bytes at a minimum rate), the bytes received are kept, and the next attempt resumes."""
    import time

    import edge_agent.client as client_module

    monkeypatch.setattr(client_module, "MIN_RATE_GRACE_S", 1.0)
    monkeypatch.setattr(client_module, "MIN_RATE_BYTES_PER_S", 1_000_000.0)
    package = package_factory(model_bytes=classifier(padding_bytes=400_000))
    control_plane.deploy(package, "d1")
    control_plane.drip_next_download = 4096  # 40 KB/s
    began = time.monotonic()
    device.run_once()
    assert time.monotonic() - began < 10
    state, error = control_plane.deployment_states("d1")[-1]
    assert state == "downloading" and error.startswith("download too slow: ")
    part = device.home.downloads_dir / f"{package.version_id}.part"
    kept = part.stat().st_size
    assert 0 < kept < len(package.model_bytes)
    device.apply(control_plane.desired)  # the retry: the rest, with Range
    assert model_gets(control_plane, package.version_id)[-1]["Range"] == f"bytes={kept}-"
    assert control_plane.deployment_states("d1")[-1] == ("running", None)
