"""A canary rollout with three real agent processes, the real web server, beat and a worker.

Version 2 is a classifier that fails in onnxruntime on bright images: with one request in five
bright, its canary fails 20 % of its requests while the devices on version 1 fail none. The
rollout halts within its observation window, the canary goes back to version 1, and the two
other devices never receive version 2.
"""

from __future__ import annotations

import io
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from PIL import Image

from sampan.devstack.client import Client
from sampan.devstack.stack import Stack, free_port, wait_until
from tests.database import stack_database_url
from tests.e2e.test_key_rotation import REGISTER
from tests.edge_agent.conftest import build_classifier

pytestmark = pytest.mark.integration

NAMES = ["gate-1", "gate-2", "gate-3"]
OBSERVE_MINUTES = 2.0


def _png(colour: tuple[int, int, int]) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (16, 16), colour).save(buffer, "PNG")
    return buffer.getvalue()


@pytest.fixture
def fleet(tmp_path: Path) -> Iterator[tuple[Stack, Client, str, dict[str, str]]]:
    with Stack(data_dir=tmp_path / "stack", database_url=stack_database_url(),
               extra_env={"SAMPAN_DEVICE_HEARTBEAT_INTERVAL_S": "1",
                          "SAMPAN_ROLLOUT_INTERVAL_S": "2"}) as stack:
        stack.start(worker=False)
        stack.start_beat()
        stack.start_worker("worker-default", queues="default", pool="threads", concurrency=2,
                           app="sampan.celery")
        user = json.loads(stack.manage("sampan_user", "--username", "roller", "--password",
                                       "rollout-e2e-secret").stdout.strip().splitlines()[-1])
        client = Client(stack.url, user["token"])
        project = client.post("/api/v1/projects/", {"name": "rollout"})
        urls = {}
        for name in NAMES:
            token = client.post(f"/api/v1/projects/{project['id']}/enrollment-tokens/", {})
            home = tmp_path / "agents" / name
            stack.enroll_agent(token["token"], name=name, home=home)
            urls[name] = stack.start_agent(process=f"agent-{name}", home=home, port=free_port())
        yield stack, client, project["id"], urls


def _register(stack: Stack, project_id: str, name: str, onnx: Path) -> str:
    params = json.dumps({"project_id": project_id, "names": [name], "onnx": str(onnx)})
    result = stack.manage("shell", "-c", REGISTER.format(params=params), check=False)
    assert result.returncode == 0, result.stderr
    return str(json.loads(result.stdout.strip().splitlines()[-1])[0][0])


def _serving(url: str) -> str | None:
    return requests.get(url + "/healthz", timeout=5).json()["model_version_id"]  # type: ignore


class Traffic:
    """Each agent gets ~10 requests/s, one in five a white image (version 2 fails on those)."""

    def __init__(self, urls: dict[str, str]) -> None:
        self.urls, self.stop = urls, threading.Event()
        self.answers: dict[str, dict[int, int]] = {name: {} for name in urls}
        self.threads = [threading.Thread(target=self._send, args=(name,), daemon=True)
                        for name in urls]
        self.images = [_png((120, 10, 10)), _png((10, 120, 10)), _png((10, 10, 120)),
                       _png((90, 90, 10)), _png((255, 255, 255))]

    def _send(self, name: str) -> None:
        session, count = requests.Session(), 0
        while not self.stop.wait(0.1):
            image = self.images[count % len(self.images)]
            count += 1
            try:
                status = session.post(self.urls[name] + "/v1/predict", data=image,
                                      timeout=5).status_code
            except requests.RequestException:
                status = 0
            self.answers[name][status] = self.answers[name].get(status, 0) + 1

    def __enter__(self) -> Traffic:
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(timeout=10)


def test_a_canary_failing_a_fifth_of_its_requests_is_rolled_back_in_its_window(
        fleet: tuple[Stack, Client, str, dict[str, str]], tmp_path: Path) -> None:
    stack, client, project_id, urls = fleet
    p = f"/api/v1/projects/{project_id}"
    good, bad = tmp_path / "good.onnx", tmp_path / "bad.onnx"
    good.write_bytes(build_classifier())
    bad.write_bytes(build_classifier(fail_above=0.5))
    v1 = _register(stack, project_id, "gates", good)
    v2 = _register(stack, project_id, "gates", bad)
    devices = {d["name"]: d["id"] for d in client.get(f"{p}/devices/")}
    client.post(f"{p}/deployments/", {"model_version_id": v1,
                                      "device_ids": [devices[n] for n in NAMES]})
    wait_until(lambda: all(_serving(urls[n]) == v1 for n in NAMES), timeout_s=60,
               what="every agent to serve version 1")

    with Traffic(urls) as traffic:
        wait_until(lambda: all(sum(a.values()) >= 20 for a in traffic.answers.values()),
                   timeout_s=30, what="traffic on version 1")
        rollout = client.post(f"{p}/rollouts/", {
            "model_version_id": v2, "device_ids": [devices[n] for n in NAMES],
            "strategy": "canary", "canary_devices": 1, "observe_minutes": OBSERVE_MINUTES,
            "min_requests": 20, "max_latency_ratio": 100})
        assert (rollout["state"], rollout["batches"]) == ("rolling", 2)
        canary = NAMES[0]  # the first device given is the canary
        wait_until(lambda: _serving(urls[canary]) == v2, timeout_s=30,
                   what="the canary to serve version 2")
        swapped = stack.log_tail(f"agent-{canary}", 100_000).count("serving model version")

        def rolled_back() -> dict[str, Any] | None:
            detail: dict[str, Any] = client.get(f"{p}/rollouts/{rollout['id']}/")
            return detail if detail["state"] != "rolling" else None

        # within the observation window (which starts once the canary runs the version)
        done = wait_until(rolled_back, timeout_s=OBSERVE_MINUTES * 60,
                          what="the rollout to halt")
        assert done["state"] == "rolled_back", done
        assert done["reason"].startswith("error rate "), done["reason"]
        candidate = done["comparison"]["candidate"]
        assert 0.1 <= candidate["error_rate"] <= 0.3 and candidate["requests"] >= 20, candidate
        assert done["comparison"]["baseline"]["error_rate"] == 0.0
        wait_until(lambda: _serving(urls[canary]) == v1, timeout_s=30,
                   what="the canary to serve version 1 again")
        assert stack.log_tail(f"agent-{canary}", 100_000).count("serving model version") > swapped

    assert traffic.answers[canary].get(500, 0) > 0  # the bad version's failures, seen by clients
    for name in NAMES[1:]:
        assert set(traffic.answers[name]) == {200}, (name, traffic.answers[name])
        deployed = client.get(f"{p}/deployments/?device={devices[name]}")
        assert {d["model_version"]["id"] for d in deployed} == {v1}  # never version 2
    rows = {row["device_name"]: row for row in done["devices"]}
    assert rows[canary]["rollback"]["model_version"]["id"] == v1
    assert rows["gate-2"]["deployment"] is None and rows["gate-3"]["deployment"] is None
