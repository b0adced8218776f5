"""The heartbeat thread every long-running job task keeps while its engine works."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

HEARTBEAT_INTERVAL_S = 5.0


@contextmanager
def heartbeating(job_id: str, alive: dict[str, bool], beat: Callable[..., bool]
                ) -> Iterator[None]:
    """Refresh the job's heartbeat every few seconds from a thread while the engine works, so a
    long step (decoding, an epoch) is never mistaken for a lost worker; a SIGKILL stops it too.
    ``beat(job_id=...)`` is the job's heartbeat service (False: no longer RUNNING). Sets
    ``alive["value"] = False`` when the job is no longer RUNNING (cancelled or reaped)."""
    from django.db import connection

    stop = threading.Event()

    def loop() -> None:
        try:
            while not stop.wait(HEARTBEAT_INTERVAL_S):
                if not beat(job_id=job_id):
                    alive["value"] = False
        finally:
            connection.close()

    thread = threading.Thread(target=loop, name=f"heartbeat-{job_id}", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=HEARTBEAT_INTERVAL_S * 2)
