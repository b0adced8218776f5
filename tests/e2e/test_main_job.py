"""The main job end to end on real processes: Redis, uvicorn, a Celery worker, beat, the agent.

Not eager mode, not fakeredis: the same ``run_main_job`` that ``make demo`` runs.
"""

from __future__ import annotations

import io
import json
import zipfile
from typing import Any

import numpy as np
import requests

from edge_agent.runtime import ClassifierSession, verify_manifest
from sampan.devstack.client import Client
from sampan.devstack.mainjob import SEEDS_DIR, heldout_images, run_main_job
from sampan.devstack.stack import Stack


def test_main_job_serves_heldout_digits_through_the_agent(stack: Stack, client: Client,
                                                          tmp_path: Any) -> None:
    recipe = json.loads((SEEDS_DIR / "demo.json").read_text())
    recipe["budget_s"] = 45
    result = run_main_job(stack, client, recipe=recipe, say=lambda m: None)

    assert result["imported"]["imported"] == 400 and result["imported"]["rejected"] == 0
    assert result["train_wall_s"] <= 45 * 1.1
    assert result["edge_samples"] == 200
    # a half-length budget on a possibly busy CI machine: well above chance (0.1), below the
    # 0.95 target that `make demo` meets with its 90 s budget (see the closing notes)
    assert result["edge_accuracy"] >= 0.8, result
    assert result["report_split"] == "test", result  # the demo version has a test split
    assert result["report_accuracy"] >= 0.8, result

    # parity: the agent and a plain onnxruntime session on the signed package agree
    projects = client.get("/api/v1/projects/")
    p = f"/api/v1/projects/{projects[-1]['id']}"
    package = client.get(f"{p}/model-versions/{result['model_version_id']}/package/")
    with zipfile.ZipFile(io.BytesIO(package)) as archive:
        archive.extractall(tmp_path)
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    agent_config = json.loads((stack.agent_home / "agent.json").read_text())
    verify_manifest(manifest, agent_config["signing_public_key"])
    session = ClassifierSession(tmp_path / "model.onnx", manifest)
    worst = 0.0
    for _label, path in heldout_images(SEEDS_DIR / recipe["heldout_dir"])[:40]:
        data = path.read_bytes()
        reference = session.predict_image(data, top_k=len(manifest["labels"]))
        served = requests.post(stack.agent_url + "/v1/predict?top_k=10", data=data,
                               timeout=10).json()["predictions"]
        assert served[0]["label"] == reference[0]["label"]
        by_label = {r["label"]: r["probability"] for r in reference}
        worst = max(worst, max(abs(s["probability"] - by_label[s["label"]]) for s in served))
    assert worst <= 1e-3

    # the platform's evaluation and the agent agree on the validation images
    job_id = client.get(f"{p}/model-versions/{result['model_version_id']}/")["training_job_id"]
    evaluation = client.get(f"{p}/training-jobs/{job_id}/report/")
    labels = evaluation["labels"]
    for row in evaluation["report"]["predictions"][:30]:
        image = client.get(f"{p}/samples/{row['sample_id']}/image/")
        served = requests.post(stack.agent_url + "/v1/predict", data=image, timeout=10).json()
        assert served["predictions"][0]["label"] == labels[row["predicted"]]
        assert np.isclose(served["predictions"][0]["probability"], row["probability"],
                          atol=1e-3)

    # the device reports back: online, running the version, with request counts
    devices = client.get(f"{p}/devices/")
    device = (devices["results"] if isinstance(devices, dict) else devices)[0]
    assert device["status"] == "online"
