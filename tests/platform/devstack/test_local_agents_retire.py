"""Review probes of LocalAgents._retire (make run's loop must go on; only the right home goes)."""
from __future__ import annotations

import json
from pathlib import Path

from sampan.devstack.localagents import LocalAgents

PID = "0" * 8 + "-0000-4000-8000-" + "0" * 12


class _NoStack:
    processes: dict = {}

    def enroll_agent(self, *a, **k):
        raise AssertionError("enroll")

    def start_agent(self, **kwargs):
        raise AssertionError("start")


def test_a_directory_named_like_a_retire_request_does_not_stop_the_loop(tmp_path: Path) -> None:
    (tmp_path / "requests" / f"{PID}.retire").mkdir(parents=True)
    lines: list[str] = []
    LocalAgents(_NoStack(), tmp_path, say=lines.append).check()  # type: ignore[arg-type]


def test_a_retire_request_with_no_device_and_a_home_without_device_id(tmp_path: Path) -> None:
    home = tmp_path / PID
    home.mkdir()
    (home / "agent.json").write_text(json.dumps({"server_url": "x"}))
    (tmp_path / "requests").mkdir()
    (tmp_path / "requests" / f"{PID}.retire").write_text("None\n")
    LocalAgents(_NoStack(), tmp_path, say=lambda s: None).check()  # type: ignore[arg-type]
    assert home.exists()


def test_a_symlinked_home_is_not_followed(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "agent.json").write_text(json.dumps({"device_id": "d"}))
    (elsewhere / "precious").write_text("x")
    root = tmp_path / "root"
    (root / "requests").mkdir(parents=True)
    (root / PID).symlink_to(elsewhere)
    (root / "requests" / f"{PID}.retire").write_text("d\n")
    lines: list[str] = []
    LocalAgents(_NoStack(), root, say=lines.append).check()  # type: ignore[arg-type]
    assert (elsewhere / "precious").exists()


def test_a_retire_request_read_while_being_written_is_not_lost(tmp_path: Path) -> None:
    """local_device_retire writes with Path.write_text (open O_TRUNC, then write): make run's
    poll (every 0.5 s) can read it empty in between; _retire then unlinks it in `finally`, and
    the web's write lands in an unlinked inode. The retire is lost: the dead agent runs on
    (401 heartbeats) and is started again by the next make run - the bug 9b6cb34 fixed.
    (local_device_request writes its request atomically: mkstemp + link.)"""
    home = tmp_path / PID
    home.mkdir()
    (home / "agent.json").write_text(json.dumps({"device_id": "d"}))
    (tmp_path / "requests").mkdir()
    retire = tmp_path / "requests" / f"{PID}.retire"
    with retire.open("w", encoding="utf-8") as handle:  # the web process, mid write_text
        LocalAgents(_NoStack(), tmp_path, say=lambda s: None).check()  # type: ignore[arg-type]
        handle.write("d\n")
    assert retire.exists() or not home.exists()
