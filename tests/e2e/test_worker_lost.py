"""A worker killed with SIGKILL mid-training: the job is failed as "worker lost" by the reaper
within 60 s, and a second delivery of the same task does not train again."""

from __future__ import annotations

import os
import signal
import time
from typing import Any

from sampan.devstack.client import Client
from sampan.devstack.stack import Stack, wait_until
from tests.e2e.conftest import frozen_digits_version


def test_sigkill_mid_training_fails_the_job_and_redelivery_does_not_train(
        stack: Stack, client: Client, tmp_path: Any) -> None:
    p, version = frozen_digits_version(client, "kill", tmp_path)
    job = client.post(f"{p}/training-jobs/", {"dataset_version_id": version["id"],
                                             "budget_s": 600})
    url = f"{p}/training-jobs/{job['id']}/"
    wait_until(lambda: client.get(url)["status"] == "RUNNING"
               and client.get(url)["progress"].get("phase"), timeout_s=120,
               what="training to start")

    worker = stack.processes["worker"]
    os.killpg(worker.pid, signal.SIGKILL)
    worker.wait(timeout=10)
    killed_at = time.monotonic()
    final = wait_until(lambda: (j := client.get(url))["status"] != "RUNNING" and j,
                       timeout_s=60, what="the job to leave RUNNING")
    assert time.monotonic() - killed_at <= 60
    assert final["status"] == "FAILED" and final["error"].startswith("worker lost")

    # a new worker; the same task delivered again returns at once
    stack.start_worker("worker2")
    from celery import Celery

    broker = Celery("redelivery", broker=stack.env()["SAMPAN_REDIS_URL"])
    broker.send_task("training.run", args=[job["id"]], queue="training", ignore_result=True)
    wait_until(lambda: "already taken or finished" in stack.log_tail("worker2", 200),
               timeout_s=60, what="the second delivery to be refused")
    again = client.get(url)
    assert again["status"] == "FAILED" and again["attempt"] == 1
    assert again["model_version_id"] is None
