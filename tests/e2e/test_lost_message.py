"""A training job whose queue message is lost (the broker's data gone) does not stay QUEUED
forever: beat's reaper sees that the broker no longer holds it and sends it again, and a worker
then runs it once. A message the broker still holds is never sent twice."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from typing import Any

import pytest

from sampan.devstack.client import Client
from sampan.devstack.stack import Stack, wait_until
from tests.database import stack_database_url
from tests.e2e.conftest import frozen_digits_version

REQUEUE_AFTER_S = 6
BEAT_INTERVAL_S = 15  # settings.CELERY_BEAT_SCHEDULE["reap-stale-jobs"]


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    with Stack(data_dir=tmp_path_factory.mktemp("stack"), database_url=stack_database_url(),
               extra_env={"SAMPAN_JOB_REQUEUE_AFTER_S": str(REQUEUE_AFTER_S)}) as s:
        s.start()
        yield s


def _reaper_rounds(stack: Stack) -> int:
    """Rounds of beat's reaper the default worker has finished so far."""
    return sum("core.reap_stale_jobs[" in line and "succeeded" in line
               for line in stack.log_tail("worker-default", 100_000).splitlines())


def test_a_lost_message_is_sent_again_and_the_job_runs_once(stack: Stack, client: Client,
                                                              tmp_path: Any) -> None:
    import redis

    p, version = frozen_digits_version(client, "lost", tmp_path)
    worker = stack.processes["worker"]  # the training worker goes: the message waits
    os.killpg(worker.pid, signal.SIGTERM)
    worker.wait(timeout=30)

    job = client.post(f"{p}/training-jobs/", {"dataset_version_id": version["id"],
                                             "budget_s": 600})
    url = f"{p}/training-jobs/{job['id']}/"
    broker = redis.Redis.from_url(stack.env()["SAMPAN_REDIS_URL"])
    assert broker.llen("training") == 1
    # past the wait, two rounds of the reaper end: the broker holds the message, nothing is sent
    queued = time.monotonic()
    rounds = _reaper_rounds(stack)
    wait_until(lambda: time.monotonic() - queued > REQUEUE_AFTER_S
               and _reaper_rounds(stack) >= rounds + 2, timeout_s=3 * BEAT_INTERVAL_S + 10,
               what="two rounds of the reaper past the re-send wait")
    waiting = client.get(url)
    assert waiting["status"] == "QUEUED" and not waiting["progress"].get("message"), waiting
    assert broker.llen("training") == 1

    broker.delete("training")  # the broker loses its data
    # the reaper commits the job's new wait, then sends: the message lands a moment after the
    # progress says so (CI once read the queue in between), so both are awaited together
    sent = wait_until(lambda: "no longer held" in ((j := client.get(url))["progress"]
                                                   .get("message") or "")
                      and broker.llen("training") >= 1 and j,
                      timeout_s=REQUEUE_AFTER_S + 2 * BEAT_INTERVAL_S + 10,
                      what="the reaper to send the lost message again")
    assert sent["status"] == "QUEUED"
    assert sent["progress"]["message"].startswith("sent again to the training queue")
    assert broker.llen("training") == 1  # sent once, not once per round

    stack.start_worker("worker2")
    wait_until(lambda: client.get(url)["status"] == "RUNNING", timeout_s=120,
               what="the re-sent job to start")
    cancelled = client.post(f"{url}cancel/", {})
    assert cancelled["status"] == "CANCELLED" and cancelled["attempt"] == 1
