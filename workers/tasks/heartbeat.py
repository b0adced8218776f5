"""The heartbeat thread every long-running job task keeps while its engine works, and the job's
hard time limit."""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

log = logging.getLogger(__name__)

HEARTBEAT_INTERVAL_S = 5.0
#: seconds an engine has to stop on its own after its job was failed for its time limit before
#: the worker process is killed (a hung step never looks at ``should_stop``)
KILL_AFTER_S = 60.0


def time_limit_s(budget_s: float) -> float:
    """A job's hard limit for ``budget_s`` seconds of budget: 1.5 x the budget + 120 s. The
    engines end within ~1.15 x their budget (the detection and classification tests assert
    1.1-1.15 x); the rest is room for a busy machine, never for a hung step."""
    return 1.5 * budget_s + 120.0


def _kill_this_process() -> None:
    # the training worker runs a solo pool (no child to kill): the worker process itself goes,
    # its supervisor (make run, compose's restart policy) starts a fresh one, and the broker
    # redelivers the unacknowledged message, which finds the job FAILED and returns at once
    os.kill(os.getpid(), signal.SIGKILL)


@contextmanager
def heartbeating(job_id: str, alive: dict[str, bool], beat: Callable[..., bool], *,
                 limit_s: float | None = None, expire: Callable[[str], None] | None = None,
                 kill: Callable[[], None] | None = None) -> Iterator[None]:
    """Refresh the job's heartbeat every ``HEARTBEAT_INTERVAL_S`` from a thread while the
    engine works, so a long step (decoding, an epoch) is never mistaken for a lost worker; a
    SIGKILL stops it too. ``beat(job_id=...)`` is the job's heartbeat service (False: no longer
    RUNNING). Sets ``alive["value"] = False`` when the job is no longer RUNNING (cancelled or
    reaped).

    Hard time limit: ``limit_s`` seconds after entry the heartbeats stop, ``expire(job_id)``
    fails the job with the reason and ``alive`` turns False, so that the engine stops at its
    next ``should_stop`` check; if the block is still running ``KILL_AFTER_S`` later (a step
    that hangs, such as an export that never returns), ``kill()`` (default: SIGKILL to this
    worker process) ends it. A job can thus never stay RUNNING behind a heartbeat that keeps
    beating."""
    from django.db import connection

    stop = threading.Event()
    started = time.monotonic()
    interval_s, kill_after_s = HEARTBEAT_INTERVAL_S, KILL_AFTER_S
    end = kill or _kill_this_process

    def loop() -> None:
        expired_at: float | None = None
        try:
            while not stop.wait(interval_s):
                now = time.monotonic()
                if limit_s is not None and now - started > limit_s:
                    if expired_at is None:
                        expired_at = now
                        alive["value"] = False
                        log.error("job %s passed its time limit of %.0f s", job_id, limit_s)
                        if expire is not None:
                            try:
                                expire(job_id)
                            except Exception:  # the database away: the kill still comes
                                log.exception("job %s: could not record its time limit", job_id)
                    elif now - expired_at > kill_after_s:
                        log.error("job %s still running %.0f s after its time limit: ending "
                                  "the worker process", job_id, kill_after_s)
                        end()
                        return
                    continue
                try:
                    if not beat(job_id=job_id):
                        alive["value"] = False
                except Exception:  # a database hiccup must not end the watchdog
                    log.exception("job %s: heartbeat failed", job_id)
        finally:
            connection.close()

    thread = threading.Thread(target=loop, name=f"heartbeat-{job_id}", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=interval_s * 2)
