"""Cancelling a RUNNING training job stops the real worker's training and frees the worker."""

from __future__ import annotations

from typing import Any

from sampan.devstack.client import Client
from sampan.devstack.stack import Stack, wait_until
from tests.e2e.conftest import frozen_digits_version


def test_cancel_stops_a_running_training_job(stack: Stack, client: Client, tmp_path: Any) -> None:
    p, version = frozen_digits_version(client, "cancel", tmp_path)
    job = client.post(f"{p}/training-jobs/", {"dataset_version_id": version["id"],
                                             "budget_s": 600})
    url = f"{p}/training-jobs/{job['id']}/"
    wait_until(lambda: (j := client.get(url))["status"] == "RUNNING" and j["progress"],
               timeout_s=120, what="training to start")
    cancelled = client.post(url + "cancel/")
    assert cancelled["status"] == "CANCELLED"
    marker = f"training job {job['id']} stopped: cancelled"
    wait_until(lambda: marker in stack.log_tail("worker", 400), timeout_s=60,
               what="the worker to stop training")
    final = client.get(url)
    assert final["status"] == "CANCELLED" and final["model_version_id"] is None
    assert client.get(f"{p}/model-versions/") == []
