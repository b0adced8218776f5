"""The dev launcher's supervisor: a process that dies comes back; one that keeps dying is given
up on after a few quick failures, and the rest of the stack keeps running in both cases."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import pytest

from sampan.devstack.stack import Stack, wait_until
from sampan.devstack.supervise import Supervisor, describe_status
from tests.database import stack_database_url


def test_describe_status_names_the_signal() -> None:
    assert describe_status(3) == "status 3"
    assert describe_status(-9) == "status -9 (SIGKILL)"


def test_a_process_that_keeps_dying_is_given_up_after_quick_failures(tmp_path: Path) -> None:
    lines: list[str] = []
    with Stack(data_dir=tmp_path / "stack") as stack:
        stack._spawn("crasher", [sys.executable, "-c",
                                 "print('cannot start'); raise SystemExit(3)"])
        stack._spawn("steady", [sys.executable, "-c", "import time; time.sleep(60)"])
        supervisor = Supervisor(stack, say=lines.append, max_quick_failures=3,
                                initial_backoff_s=0.05)

        def gave_up() -> bool:
            supervisor.check()
            return "crasher" in supervisor.given_up

        wait_until(gave_up, timeout_s=20, what="the supervisor to give up", interval_s=0.05)
        assert sum(line.startswith("crasher exited with status 3") for line in lines) == 3
        assert sum(line.startswith("crasher restarted") for line in lines) == 2
        assert "giving up on crasher after 3 quick failures in a row" in lines[-1]
        assert "cannot start" in lines[-1]  # the tail of its log
        assert stack.processes["steady"].poll() is None
        supervisor.check()
        assert stack.processes["crasher"].poll() == 3  # not restarted any more


def test_backoff_doubles_for_quick_failures_and_resets_after_a_long_run(tmp_path: Path) -> None:
    lines: list[str] = []
    with Stack(data_dir=tmp_path / "stack") as stack:
        stack._spawn("sleeper", [sys.executable, "-c", "import time; time.sleep(60)"])
        supervisor = Supervisor(stack, say=lines.append, quick_s=1.0, initial_backoff_s=0.1)

        def kill_and_wait_restart() -> None:
            process = stack.processes["sleeper"]
            process.kill()
            process.wait()

            def restarted() -> bool:
                supervisor.check()
                return stack.processes["sleeper"] is not process

            wait_until(restarted, timeout_s=10, what="a restart", interval_s=0.02)

        wait_until(lambda: time.monotonic() - stack.started_at["sleeper"] > 1.2, timeout_s=5,
                   what="a long run", interval_s=0.05)
        kill_and_wait_restart()  # after a long run: the first failure of a series
        kill_and_wait_restart()  # at once: a quick failure, twice the backoff
        delays = [line.rsplit(" in ", 1)[1] for line in lines if "restarting it" in line]
        assert delays == ["0.1 s", "0.2 s"]
        assert lines[0].startswith("sleeper exited with status -9 (SIGKILL) after ")


@pytest.mark.integration
def test_a_killed_worker_comes_back_and_the_rest_keeps_running(tmp_path: Path) -> None:
    lines: list[str] = []
    with Stack(data_dir=tmp_path / "stack", database_url=stack_database_url()) as stack:
        stack.start()
        supervisor = Supervisor(stack, say=lines.append, initial_backoff_s=0.2)
        supervisor.check()
        killed = stack.processes["worker"]
        others = {name: p.pid for name, p in stack.processes.items() if name != "worker"}

        os.kill(killed.pid, signal.SIGKILL)

        def worker_ready_again() -> bool:
            supervisor.check()
            log = stack.log_path("worker").read_text(errors="replace")
            return stack.processes["worker"] is not killed and log.count("ready.") >= 2

        wait_until(worker_ready_again, timeout_s=60, what="the worker to come back")
        assert lines[0].startswith("worker exited with status -9 (SIGKILL) after ")
        assert lines[1] == f"worker restarted (pid {stack.processes['worker'].pid})"
        assert {name: p.pid for name, p in stack.processes.items() if name != "worker"} == others
        assert all(p.poll() is None for p in stack.processes.values())
