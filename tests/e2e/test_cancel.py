"""Cancelling a RUNNING training job stops the real worker's training and frees the worker; the
job's websocket streams its progress and then the cancellation to a signed-in client."""

from __future__ import annotations

from typing import Any

from sampan.devstack.client import Client
from sampan.devstack.stack import Stack, wait_until
from tests.e2e.conftest import JobSocket, frozen_digits_version


def test_cancel_stops_a_running_training_job(stack: Stack, client: Client, tmp_path: Any) -> None:
    p, version = frozen_digits_version(client, "cancel", tmp_path)
    job = client.post(f"{p}/training-jobs/", {"dataset_version_id": version["id"],
                                             "budget_s": 600})
    url = f"{p}/training-jobs/{job['id']}/"
    socket = JobSocket(stack, "e2e", "e2e-password", "training", job["id"])
    assert set(socket.snapshot) == {"status", "progress", "error"}
    assert socket.snapshot["status"] in ("PENDING", "QUEUED", "RUNNING")
    # the worker's progress reaches the socket through the channel layer: fine-tune steps
    try:
        wait_until(lambda: any(e.get("progress", {}).get("phase") == "finetune"
                               and "loss" in e["progress"] for e in socket.events),
                   timeout_s=120, what="a fine-tune progress event on the websocket")
    except TimeoutError as error:
        raise AssertionError(f"{error}; the socket got {len(socket.events)} events, the last "
                             f"{socket.events[-3:]}; the job: {client.get(url)}") from None
    assert client.get(url)["status"] == "RUNNING"
    cancelled = client.post(url + "cancel/")
    assert cancelled["status"] == "CANCELLED"
    marker = f"training job {job['id']} stopped: cancelled"
    wait_until(lambda: marker in stack.log_tail("worker", 400), timeout_s=60,
               what="the worker to stop training")
    wait_until(lambda: any(e.get("status") == "CANCELLED" for e in socket.events), timeout_s=10,
               what="the cancellation on the websocket")
    socket.close()
    # nothing heard after the end (that none is ever SENT after it is the unit test's job:
    # tests/platform/core/test_progress_websocket.py)
    end = [e.get("status") == "CANCELLED" for e in socket.events].index(True)
    assert socket.events[end + 1:] == [], socket.events[end:]
    final = client.get(url)
    assert final["status"] == "CANCELLED" and final["model_version_id"] is None
    assert client.get(f"{p}/model-versions/") == []
