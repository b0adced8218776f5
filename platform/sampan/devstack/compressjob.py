"""Compression through the public REST API, measured on the stack's own agent: shared by
``make bench BENCH=compression`` (``workers.bench_compression``) and the whole-system test, so
both exercise exactly the same path.

    job = compress_for_device(client, project_path, version_id, device_id, budget_s=600)
    accuracy, n = agent_accuracy(stack, client, project_path, dataset_version_id)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import requests

from sampan.devstack.client import Client
from sampan.devstack.stack import Stack


def compress_for_device(client: Client, project_path: str, version_id: str,
                        device_id: str | None, *, budget_s: float,
                        accuracy_budget_pt: float = 1.0, methods: list[str] | None = None,
                        say: Callable[[str], None] = print) -> dict[str, Any]:
    """Create a compression job of ``version_id`` for ``device_id`` and wait for its end;
    returns the job's JSON (``project_path``: ``/api/v1/projects/<id>``)."""
    body: dict[str, Any] = {"source_model_version_id": version_id, "device_id": device_id,
                            "budget_s": budget_s, "accuracy_budget_pt": accuracy_budget_pt}
    if methods:
        body["methods"] = methods
    job = client.post(f"{project_path}/compression-jobs/", body)
    seen: dict[str, Any] = {}

    def show(current: dict[str, Any]) -> None:
        progress = current.get("progress") or {}
        key = (progress.get("phase"), progress.get("candidate"))
        if key != seen.get("key") and progress:
            seen["key"] = key
            say(f"  compression {current['status']} phase={progress.get('phase')} "
                f"candidate={progress.get('candidate')}")

    return client.wait_job(f"{project_path}/compression-jobs/{job['id']}/",
                           timeout_s=budget_s * 1.2 + 120, on_poll=show)


def held_out_samples(client: Client, project_path: str, dataset_version: dict[str, Any]
                       ) -> list[tuple[str, str]]:
    """(class label, image URL path) of every sample in the version's test split (its
    validation split when it has no test split)."""
    for split in ("test", "val"):
        rows: list[tuple[str, str]] = []
        page = 1
        while True:
            answer = client.get(f"{project_path}/datasets/{dataset_version['dataset_id']}/samples/"
                                f"?version={dataset_version['id']}&split={split}&page={page}"
                                "&page_size=200")
            for sample in answer["results"]:
                rows.append((sample["annotations"][0]["class_label"], sample["image_url"]))
            if not answer.get("next"):
                break
            page += 1
        if rows:
            return rows
    return []


def agent_accuracy(stack: Stack, client: Client, samples: list[tuple[str, str]]
                   ) -> dict[str, Any]:
    """Accuracy of the model the stack's agent serves now on ``samples`` (label, image URL path),
    each image fetched from the platform and posted to the agent's ``/v1/predict``."""
    session = requests.Session()
    correct = 0
    version = None
    for label, url in samples:
        image = client.request("GET", url)
        answer = session.post(stack.agent_url + "/v1/predict", data=image, timeout=30)
        answer.raise_for_status()
        body = answer.json()
        version = body["model_version_id"]
        correct += int(body["predictions"][0]["label"] == label)
    return {"accuracy": correct / len(samples) if samples else 0.0, "n": len(samples),
            "model_version_id": version}
