"""The main job through the public REST API: project -> import -> version -> train -> report ->
model version -> enroll agent -> deploy -> predictions from the agent.

``run_main_job`` is shared by ``make demo`` (``sampan.devstack.demo``) and the integration test, so
both exercise exactly the same path. It returns a plain dict of results and per-stage seconds.
"""

from __future__ import annotations

import io
import json
import statistics
import tempfile
import time
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import requests

from sampan.devstack.client import Client
from sampan.devstack.stack import REPO_DIR, Stack, wait_until

SEEDS_DIR = REPO_DIR / "seeds"


def zip_folder(folder: Path, target: Path) -> Path:
    """Zip an ImageNet-folder layout (``<class>/<file>``) as a browser upload would."""
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                archive.write(path, arcname=str(path.relative_to(folder)))
    return target


def heldout_images(folder: Path) -> list[tuple[str, Path]]:
    """(true label, path) of every image under ``folder/<label>/``."""
    return [(p.parent.name, p) for p in sorted(folder.glob("*/*")) if p.is_file()]


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of a non-empty list."""
    ordered = sorted(values)
    rank = max(1, min(len(ordered), int(-(-q * len(ordered) // 100))))
    return ordered[rank - 1]


def run_main_job(stack: Stack, client: Client, *, recipe: dict[str, Any],
                 say: Callable[[str], None] = print) -> dict[str, Any]:
    stages: dict[str, float] = {}
    mark = time.monotonic()

    def stage(name: str) -> None:
        nonlocal mark
        now = time.monotonic()
        stages[name] = round(now - mark, 2)
        mark = now
        say(f"[{name}] {stages[name]:.1f} s")

    # import: project, dataset, upload the seed zip, wait for the import job
    project = client.post("/api/v1/projects/", {"name": recipe.get("project", "Digits demo")})
    p = f"/api/v1/projects/{project['id']}"
    dataset = client.post(p + "/datasets/", {"name": recipe.get("dataset", "digits"),
                                             "task_type": recipe.get("task",
                                                                     "image_classification")})
    with tempfile.TemporaryDirectory() as tmp:
        archive = zip_folder(SEEDS_DIR / recipe["train_dir"], Path(tmp) / "digits.zip")
        job = client.upload(f"{p}/datasets/{dataset['id']}/imports/", [archive])
    job = client.wait_job(f"{p}/imports/{job['id']}/", timeout_s=300)
    if job["status"] != "SUCCEEDED":
        raise RuntimeError(f"import {job['status']}: {job['error']}")
    report = job["report"]
    say(f"imported {report['counts']}")
    stage("import")

    # label: the folder names are the labels (set by the import); freeze a version
    version = client.post(f"{p}/datasets/{dataset['id']}/versions/",
                          {"seed": recipe.get("seed", 0)})
    say(f"dataset version {version['number']}: {version['stats']['splits']} "
        f"flags={version['flags']}")

    # train with a time budget and watch progress
    budget = float(recipe.get("budget_s", 90))
    job = client.post(f"{p}/training-jobs/", {"dataset_version_id": version["id"],
                                             "budget_s": budget, "seed": recipe.get("seed", 0)})
    seen: dict[str, Any] = {}

    def show(j: dict[str, Any]) -> None:
        prog = j.get("progress") or {}
        key = (prog.get("phase"), prog.get("epoch"))
        if key != seen.get("key") and prog:
            seen["key"] = key
            say(f"  training {j['status']} phase={prog.get('phase')} epoch={prog.get('epoch')} "
                f"loss={prog.get('loss')} val_acc={prog.get('val_accuracy')}")

    job = client.wait_job(f"{p}/training-jobs/{job['id']}/", timeout_s=budget * 1.1 + 120,
                          on_poll=show)
    if job["status"] != "SUCCEEDED":
        raise RuntimeError(f"training {job['status']}: {job['error']}")
    train_wall = (_parse(job["finished_at"]) - _parse(job["started_at"]))
    evaluation = client.get(f"{p}/training-jobs/{job['id']}/report/")
    stage("train")

    # register: the job registered an immutable, signed model version; fetch and check it
    model_version = client.get(f"{p}/model-versions/{job['model_version_id']}/")
    package = client.get(f"{p}/model-versions/{model_version['id']}/package/")
    with zipfile.ZipFile(io.BytesIO(package)) as archive:
        manifest = json.loads(archive.read("manifest.json"))
    if manifest["files"]["model.onnx"]["sha256"] != model_version["model_sha256"]:
        raise RuntimeError("package manifest and registry disagree on model.onnx")
    stage("register")

    # deploy: enroll the local agent with a one-time token, deploy, wait for "running"
    token = client.post(f"{p}/enrollment-tokens/", {"note": "make demo"})
    stack.enroll_agent(token["token"])
    stack.start_agent()
    devices = client.get(f"{p}/devices/")
    device = devices["results"][0] if isinstance(devices, dict) else devices[0]
    client.post(f"{p}/deployments/", {"model_version_id": model_version["id"],
                                      "device_ids": [device["id"]]})

    def running() -> bool:
        health = requests.get(stack.agent_url + "/healthz", timeout=2).json()
        return health.get("model_version_id") == model_version["id"]

    wait_until(running, timeout_s=120, what="the agent to run the deployed model version")
    stage("deploy")

    # predict: held-out images through the agent's HTTP API
    held = heldout_images(SEEDS_DIR / recipe["heldout_dir"])
    correct, latencies = 0, []
    session = requests.Session()
    for label, path in held:
        data = path.read_bytes()
        started = time.perf_counter()
        response = session.post(stack.agent_url + "/v1/predict", data=data, timeout=30)
        latencies.append((time.perf_counter() - started) * 1000.0)
        response.raise_for_status()
        top = response.json()["predictions"][0]
        correct += int(top["label"] == label)
    stage("predict")

    return {
        # the report is computed on the test split when the version has one (else validation)
        "report_split": evaluation["report"].get("split", "val"),
        "report_accuracy": round(float(evaluation["report"]["accuracy"]), 4),
        "macro_f1": round(float(evaluation["report"]["macro_f1"]), 4),
        "edge_accuracy": round(correct / len(held), 4),
        "edge_samples": len(held),
        "edge_latency_ms": {"p50": round(statistics.median(latencies), 2),
                            "p99": round(percentile(latencies, 99), 2)},
        "model_version": f"{model_version['model_name']} v{model_version['version']}",
        "model_version_id": model_version["id"],
        "pretrained": bool(job["pretrained"]),
        "train_wall_s": round(train_wall, 2),
        "budget_s": budget,
        "recipe": job["recipe"],
        "imported": report["counts"],
        "stages_s": stages,
    }


def deploy_and_wait(client: Client, project_path: str, version_id: str, device_id: str, *,
                    timeout_s: float = 90.0) -> dict[str, Any]:
    """Deploy ``version_id`` to one device and wait until the deployment is ``running`` or
    ``failed``; returns the deployment's JSON (``project_path``: ``/api/v1/projects/<id>``).
    Raises TimeoutError (``wait_until``) when it settles in neither state in time."""
    (created,) = client.post(f"{project_path}/deployments/", {"model_version_id": version_id,
                                                              "device_ids": [device_id]})

    def settled() -> dict[str, Any] | None:
        deployment: dict[str, Any] = client.get(f"{project_path}/deployments/{created['id']}/")
        return deployment if deployment["state"] in ("running", "failed") else None

    result: dict[str, Any] = wait_until(settled, timeout_s=timeout_s,
                                        what=f"the deployment of {version_id}")
    return result


def agent_serving(stack: Stack) -> str | None:
    """The model version id the stack's agent serves now (its ``/healthz``), None without one."""
    version: str | None = requests.get(stack.agent_url + "/healthz",
                                       timeout=5).json()["model_version_id"]
    return version


def _parse(value: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
