"""Object detection end to end on real processes (Redis, uvicorn, a Celery worker, the agent):
the VOC seed zip -> version -> detector trained within its budget -> report -> signed package ->
one-click deploy -> boxes from the agent in the images' own pixels. The same ``run_main_job``
that ``make demo TASK=detection`` runs."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path
from typing import Any

import pytest
import requests
from PIL import Image

from edge_agent.runtime import DetectorSession, verify_manifest
from sampan.devstack.client import Client
from sampan.devstack.mainjob import SEEDS_DIR, run_main_job
from sampan.devstack.stack import Stack


def test_detection_job_serves_boxes_through_the_agent(stack: Stack, client: Client,
                                                      tmp_path: Path) -> None:
    recipe = json.loads((SEEDS_DIR / "demo_detection.json").read_text())
    recipe["budget_s"] = 90  # the floor for 39 images is 61 s; make demo trains 300 s
    result = run_main_job(stack, client, recipe=recipe, say=lambda m: None)

    assert result["task"] == "object_detection"
    assert result["imported"]["imported"] == 39 and result["imported"]["rejected"] == 0
    assert result["train_wall_s"] <= 90 * 1.1 + 5, result["recipe"]
    assert result["report_split"] == "test"
    assert result["edge_samples"] == 8 and result["edge_boxes"] == 191
    # a short budget on a busy machine: the detector must find trees, not match make demo
    assert result["edge_map50"] > 0.0, result
    assert result["recipe"]["input_size"] == 384 and result["recipe"]["tile"] is None

    # the agent and a plain session on the signed package return the same boxes
    project = client.get("/api/v1/projects/")[-1]
    p = f"/api/v1/projects/{project['id']}"
    package = client.get(f"{p}/model-versions/{result['model_version_id']}/package/")
    with zipfile.ZipFile(io.BytesIO(package)) as archive:
        archive.extractall(tmp_path)
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    agent_config = json.loads((stack.agent_home / "agent.json").read_text())
    verify_manifest(manifest, agent_config["signing_public_key"])
    assert manifest["task"] == "object_detection" and manifest["labels"] == ["Tree"]
    session = DetectorSession(tmp_path / "model.onnx", manifest)
    image_path = sorted((SEEDS_DIR / "trees" / "heldout" / "JPEGImages").iterdir())[0]
    # a size other than the tiles': the answer must be in this image's own pixels
    with Image.open(image_path) as image:
        buffer = io.BytesIO()
        image.resize((600, 300)).save(buffer, format="PNG")
    for data, size in ((image_path.read_bytes(), (400, 400)), (buffer.getvalue(), (600, 300))):
        reference = session.predict_image(data, score_threshold=0.1)
        served = requests.post(stack.agent_url + "/v1/predict?score_threshold=0.1", data=data,
                               timeout=30).json()
        assert served["task"] == "object_detection"
        assert (served["width"], served["height"]) == size
        assert len(served["detections"]) == len(reference["detections"])
        for ours, theirs in zip(served["detections"], reference["detections"], strict=True):
            assert ours["label"] == theirs["label"]
            assert ours["score"] == pytest.approx(theirs["score"], abs=1e-4)
            assert ours["box"] == pytest.approx(theirs["box"], abs=0.05)
            x1, y1, x2, y2 = ours["box"]
            assert 0 <= x1 < x2 <= size[0] and 0 <= y1 < y2 <= size[1]

    # the report the console shows: mAP figures, curves and errors on the test split
    job_id = client.get(f"{p}/model-versions/{result['model_version_id']}/")["training_job_id"]
    report: dict[str, Any] = client.get(f"{p}/training-jobs/{job_id}/report/")["report"]
    assert report["task"] == "object_detection" and report["split"] == "test"
    assert 0.0 <= report["map"] <= report["map50"] <= 1.0
    assert report["per_class"][0]["label"] == "Tree" and report["per_class"][0]["support"] > 0
    assert len(report["pr_curves"][0]["recall"]) == 101
