"""The main job through the public REST API: project -> import -> version -> train -> report ->
model version -> enroll agent -> deploy -> predictions from the agent.

``run_main_job`` is shared by ``make demo`` (``sampan.devstack.demo``) and the integration test, so
both exercise exactly the same path. It returns a plain dict of results and per-stage seconds.
The recipe's ``task`` chooses image classification (``seeds/demo.json``: class folders, top-1
accuracy of the agent on held-out images) or object detection (``seeds/demo_detection.json``:
a Pascal VOC folder, COCO mAP@0.5 of the agent's boxes on held-out images, :func:`edge_map50`)
or text classification (``seeds/demo_text.json``: the review CSV of ``seeds/text``, whose test
rows by the seed's own split are held out: top-1 accuracy of the agent's ``{"text"}`` answers).
"""

from __future__ import annotations

import csv
import gzip
import hashlib
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
        if recipe.get("task") == "text_classification":
            upload = seed_texts_csv(SEEDS_DIR / recipe["texts"], Path(tmp) / "reviews.csv")
        else:
            upload = zip_folder(SEEDS_DIR / recipe["train_dir"], Path(tmp) / "digits.zip")
        job = client.upload(f"{p}/datasets/{dataset['id']}/imports/", [upload])
    job = client.wait_job(f"{p}/imports/{job['id']}/", timeout_s=300)
    if job["status"] != "SUCCEEDED":
        raise RuntimeError(f"import {job['status']}: {job['error']}")
    report = job["report"]
    say(f"imported {report['counts']}")
    stage("import")

    # label: the folder names are the labels (set by the import); freeze a version
    task = recipe.get("task", "image_classification")
    version = client.post(f"{p}/datasets/{dataset['id']}/versions/", {
        "seed": recipe.get("seed", 0),
        **{k: recipe[k] for k in ("val_fraction", "test_fraction") if k in recipe}})
    say(f"dataset version {version['number']}: {version['stats']['splits']} "
        f"flags={version['flags']}")

    # train with a time budget and watch progress
    budget = float(recipe.get("budget_s", 90))
    job = client.post(f"{p}/training-jobs/", {"dataset_version_id": version["id"],
                                             "budget_s": budget, "seed": recipe.get("seed", 0)})
    seen: dict[str, Any] = {}

    def show(j: dict[str, Any]) -> None:
        prog = j.get("progress") or {}
        key = (prog.get("phase"), prog.get("epoch"), prog.get("val_map50"))
        if key != seen.get("key") and prog:
            seen["key"] = key
            say(f"  training {j['status']} phase={prog.get('phase')} epoch={prog.get('epoch')} "
                f"step={prog.get('step')} loss={prog.get('loss')} "
                f"val_acc={prog.get('val_accuracy')} val_map50={prog.get('val_map50')}")

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
    if task == "object_detection":
        edge = _predict_detection(stack, SEEDS_DIR / recipe["heldout_dir"])
    elif task == "text_classification":
        edge = _predict_text(stack, SEEDS_DIR / recipe["texts"])
    else:
        edge = _predict_classification(stack, SEEDS_DIR / recipe["heldout_dir"])
    stage("predict")

    result = {
        "task": task,
        # the report is computed on the test split when the version has one (else validation)
        "report_split": evaluation["report"].get("split", "val"),
        **edge,
        "model_version": f"{model_version['model_name']} v{model_version['version']}",
        "model_version_id": model_version["id"],
        "pretrained": bool(job["pretrained"]),
        "train_wall_s": round(train_wall, 2),
        "budget_s": budget,
        "recipe": job["recipe"],
        "imported": report["counts"],
        "stages_s": stages,
    }
    if task == "object_detection":
        result.update({"report_map50": round(float(evaluation["report"]["map50"]), 4),
                       "report_map": round(float(evaluation["report"]["map"]), 4),
                       "val_map50": job["metrics"].get("val_map50"),
                       "test_map50": job["metrics"].get("test_map50")})
    else:
        result.update({"report_accuracy": round(float(evaluation["report"]["accuracy"]), 4),
                       "macro_f1": round(float(evaluation["report"]["macro_f1"]), 4)})
    if task == "text_classification":
        result.update({"val_accuracy": job["metrics"].get("val_accuracy"),
                       "test_accuracy": job["metrics"].get("test_accuracy"),
                       "family": job["recipe"].get("family")})
    return result


def seed_split(text: str) -> str:
    """The seed's own split of a text (``seeds/text/split.json``, "rule"): train, val or test."""
    bucket = int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big") % 10
    return "test" if bucket == 9 else "val" if bucket == 8 else "train"


def _seed_rows(path: Path) -> list[tuple[str, str]]:
    with gzip.open(path, "rt", encoding="utf-8", newline="") as handle:
        return [(row["text"], row["label"]) for row in csv.DictReader(handle)]


def seed_texts_csv(path: Path, target: Path) -> Path:
    """The seed's train and val rows as the CSV a person would upload (its test rows are held
    out for the agent: :func:`_predict_text`)."""
    with open(target, "w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["text", "label"])
        writer.writerows(row for row in _seed_rows(path) if seed_split(row[0]) != "test")
    return target


def _predict_text(stack: Stack, path: Path) -> dict[str, Any]:
    held = [row for row in _seed_rows(path) if seed_split(row[0]) == "test"]
    correct, latencies = 0, []
    session = requests.Session()
    for text, label in held:
        started = time.perf_counter()
        response = session.post(stack.agent_url + "/v1/predict", json={"text": text},
                                timeout=30)
        latencies.append((time.perf_counter() - started) * 1000.0)
        response.raise_for_status()
        correct += int(response.json()["predictions"][0]["label"] == label)
    return {"edge_accuracy": round(correct / len(held), 4), "edge_samples": len(held),
            "edge_latency_ms": _latency(latencies)}


def _latency(latencies: list[float]) -> dict[str, float]:
    return {"p50": round(statistics.median(latencies), 2),
            "p99": round(percentile(latencies, 99), 2)}


def _predict_classification(stack: Stack, folder: Path) -> dict[str, Any]:
    held = heldout_images(folder)
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
    return {"edge_accuracy": round(correct / len(held), 4), "edge_samples": len(held),
            "edge_latency_ms": _latency(latencies)}


def voc_boxes(xml_path: Path) -> list[tuple[str, list[float]]]:
    """(class name, [x1, y1, x2, y2]) of every object of a Pascal VOC file (trusted seed data)."""
    import xml.etree.ElementTree as ET

    root = ET.parse(xml_path).getroot()
    return [(o.findtext("name", "").strip(),
             [float(o.findtext(f"bndbox/{k}", "0")) for k in ("xmin", "ymin", "xmax", "ymax")])
            for o in root.findall("object")]


def edge_map50(truth: list[list[tuple[str, list[float]]]],
               found: list[list[dict[str, Any]]], sizes: list[tuple[int, int]]) -> float:
    """COCO mAP@0.5 (pycocotools ``COCOeval``, ``stats[1]``: 101-point interpolated AP at IoU
    0.5, up to 100 detections an image, mean over classes) of the agent's answers ``found``
    (``detections`` of ``POST /v1/predict``: label, score, box xyxy px) against ``truth``."""
    import contextlib
    import io as stdio

    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval

    names = sorted({name for boxes in truth for name, _ in boxes})
    ids = {name: i + 1 for i, name in enumerate(names)}
    images, annotations, detections = [], [], []
    rows = zip(truth, found, sizes, strict=True)
    for image_id, (boxes, answers, (width, height)) in enumerate(rows, 1):
        images.append({"id": image_id, "width": width, "height": height})
        for name, (x1, y1, x2, y2) in boxes:
            annotations.append({"id": len(annotations) + 1, "image_id": image_id,
                                "category_id": ids[name], "bbox": [x1, y1, x2 - x1, y2 - y1],
                                "area": (x2 - x1) * (y2 - y1), "iscrowd": 0})
        for answer in answers:
            if answer["label"] in ids:
                x1, y1, x2, y2 = answer["box"]
                detections.append({"image_id": image_id, "category_id": ids[answer["label"]],
                                   "bbox": [x1, y1, x2 - x1, y2 - y1], "score": answer["score"]})
    if not detections or not annotations:
        return 0.0
    with contextlib.redirect_stdout(stdio.StringIO()):
        coco = COCO()
        coco.dataset = {"images": images, "annotations": annotations,
                        "categories": [{"id": i, "name": n} for n, i in ids.items()]}
        coco.createIndex()
        evaluation = COCOeval(coco, coco.loadRes(detections), "bbox")
        evaluation.evaluate()
        evaluation.accumulate()
        evaluation.summarize()
    return float(evaluation.stats[1])


def _predict_detection(stack: Stack, folder: Path) -> dict[str, Any]:
    """Every held-out image of a VOC folder (``JPEGImages/`` + ``Annotations/``) through the
    agent with a low score threshold (the whole precision-recall curve), scored by
    :func:`edge_map50`."""
    from PIL import Image

    truth, found, sizes, latencies = [], [], [], []
    session = requests.Session()
    for path in sorted((folder / "JPEGImages").iterdir()):
        data = path.read_bytes()
        started = time.perf_counter()
        response = session.post(stack.agent_url + "/v1/predict?score_threshold=0.05", data=data,
                                timeout=60)
        latencies.append((time.perf_counter() - started) * 1000.0)
        response.raise_for_status()
        answer = response.json()
        found.append(answer["detections"])
        with Image.open(path) as image:
            sizes.append(image.size)
        truth.append(voc_boxes(folder / "Annotations" / f"{path.stem}.xml"))
    return {"edge_map50": round(edge_map50(truth, found, sizes), 4),
            "edge_samples": len(truth), "edge_boxes": sum(len(t) for t in truth),
            "edge_latency_ms": _latency(latencies)}


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
