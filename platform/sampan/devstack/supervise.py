"""Keep the dev stack running: restart a process of a :class:`Stack` that dies.

``make run`` polls :meth:`Supervisor.check`; a process that exited is started again with the same
command after a backoff (``initial_backoff_s``, doubling per quick failure, capped), with a log
line naming it and its exit status. A process that dies within ``quick_s`` of its start again
and again is given up after ``max_quick_failures`` such failures in a row (its log's last lines
are printed); the other processes keep running either way. In compose, restart policies do this.
"""

from __future__ import annotations

import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from sampan.devstack.stack import Stack


def _err(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def describe_status(code: int) -> str:
    """``3`` -> "status 3"; ``-9`` -> "status -9 (SIGKILL)" (Popen's form of a signal death)."""
    if code < 0:
        try:
            return f"status {code} ({signal.Signals(-code).name})"
        except ValueError:
            pass
    return f"status {code}"


@dataclass
class Supervisor:
    """Restarts dead processes of ``stack``; times in seconds (``time.monotonic``)."""

    stack: Stack
    say: Callable[[str], None] = _err
    quick_s: float = 30.0
    max_quick_failures: int = 5
    initial_backoff_s: float = 1.0
    max_backoff_s: float = 30.0
    given_up: set[str] = field(default_factory=set)
    _failures: dict[str, int] = field(default_factory=dict)
    _restart_at: dict[str, float] = field(default_factory=dict)

    def forget(self, name: str) -> None:
        """Drop what is known of process ``name`` (failures, a pending restart, giving up):
        its owner stopped it, or starts a new process under that name."""
        self.given_up.discard(name)
        self._failures.pop(name, None)
        self._restart_at.pop(name, None)

    def check(self) -> None:
        """One pass over the processes: notice deaths, restart those whose backoff is over. A
        restart that fails is reported and counted as a quick failure; it never ends the
        pass."""
        now = time.monotonic()
        for name, process in list(self.stack.processes.items()):
            if name in self.given_up:
                continue
            if name in self._restart_at:
                if now >= self._restart_at[name]:
                    del self._restart_at[name]
                    try:
                        restarted = self.stack.restart(name)
                    except Exception as error:  # noqa: BLE001 - one process never stops the rest
                        self.say(f"{name} could not be restarted: {error}")
                        self.given_up.add(name)
                        continue
                    self.say(f"{name} restarted (pid {restarted.pid})")
                continue
            code = process.poll()
            if code is None:
                continue
            ran_s = now - self.stack.started_at.get(name, now)
            failures = self._failures.get(name, 0) + 1 if ran_s < self.quick_s else 1
            self._failures[name] = failures
            status = describe_status(code)
            if failures >= self.max_quick_failures:
                self.given_up.add(name)
                self.say(f"{name} exited with {status}; giving up on {name} after {failures} "
                         f"quick failures in a row (see {self.stack.log_path(name)}):\n"
                         f"{self.stack.log_tail(name)}")
                continue
            delay = min(self.max_backoff_s, self.initial_backoff_s * 2 ** (failures - 1))
            self._restart_at[name] = now + delay
            self.say(f"{name} exited with {status} after {ran_s:.0f} s; restarting it in "
                     f"{delay:.1f} s")
