"""The session is chosen by the manifest's task; detection answers, telemetry and benchmarks."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from edge_agent.agent import Agent
from edge_agent.benchmark import measure
from edge_agent.home import AgentConfig, AgentHome
from edge_agent.runtime import ClassifierSession, DetectorSession, ModelLoadError
from edge_agent.sessions import UnsupportedTaskError, manifest_task, open_session
from edge_agent.telemetry import MAX_CLASSES_REPORTED, Telemetry
from tests.edge_agent.conftest import DETECTOR_ANCHORS, encoded_image, expected_pixels
from tests.edge_agent.test_benchmark import package_dir


def install(home: AgentHome, package: Any) -> None:
    directory = home.model_dir(package.version_id)
    directory.mkdir(parents=True)
    (directory / "manifest.json").write_text(json.dumps(package.manifest))
    (directory / "model.onnx").write_bytes(package.model_bytes)


@pytest.fixture
def agent(tmp_path: Path, signing_key: Any) -> Agent:
    home = AgentHome(tmp_path / "agent")
    config = AgentConfig("http://control-plane", "device-1", "cred", signing_key.public_b64)
    home.save_config(config)
    return Agent(home, config)


def test_the_manifest_task_picks_the_session(tmp_path: Path, package_factory: Any,
                                             detection_package_factory: Any) -> None:
    classifier, detector = package_factory(), detection_package_factory()
    for package, kind in ((classifier, ClassifierSession), (detector, DetectorSession)):
        directory = package_dir(tmp_path / kind.__name__, package, [])
        assert type(open_session(directory)) is kind
        assert type(open_session(directory / "model.onnx", package.manifest)) is kind
    assert manifest_task({"task_type": "object_detection"}) == "object_detection"
    assert manifest_task({}) == "image_classification"  # packages before the field was read
    with pytest.raises(UnsupportedTaskError) as refused:
        manifest_task({"task": "pose_estimation"})
    assert str(refused.value) == ("unsupported task 'pose_estimation': this agent serves "
                                  "image_classification, object_detection, text_classification")


def test_a_graph_that_is_not_its_tasks_is_refused(tmp_path: Path, package_factory: Any,
                                                  detection_package_factory: Any) -> None:
    detector = detection_package_factory()
    claims_classifier = {**package_factory().manifest}
    with pytest.raises(ModelLoadError, match="must have input 'input'"):
        open_session(package_dir(tmp_path / "a", detector, []) / "model.onnx", claims_classifier)
    classifier = package_factory()
    with pytest.raises(ModelLoadError, match="input 'images' and outputs 'boxes', 'scores'"):
        open_session(package_dir(tmp_path / "b", classifier, []) / "model.onnx",
                     {**detector.manifest})


def test_the_agent_loads_and_answers_with_a_detector(agent: Agent,
                                                     detection_package_factory: Any) -> None:
    package = detection_package_factory()
    install(agent.home, package)
    agent.swap(agent.load_package(package.version_id))
    assert agent.telemetry.snapshot()["detections"] == 0  # a detector serves: counted from 0

    body = agent.predict(encoded_image(360, 640), top_k=1)  # top_k does not cut detections
    assert body["task"] == "object_detection" and (body["width"], body["height"]) == (360, 640)
    assert [d["label"] for d in body["detections"]] == ["person", "car"]
    assert body["detections"][1]["box"] == pytest.approx(
        expected_pixels(DETECTOR_ANCHORS[1].box, 360, 640), abs=0.006)
    assert len(agent.predict(encoded_image(50, 50), score_threshold=0.0)["detections"]) == 5
    with pytest.raises(ValueError, match="score_threshold"):
        agent.predict(encoded_image(50, 50), score_threshold=1.5)
    with pytest.raises(ValueError, match="top_k"):
        agent.predict(encoded_image(50, 50), top_k=0)
    metrics = agent.telemetry.snapshot()
    # threshold 0: the 0.0 scores are not above it; 0.05 and 0.1 are, each class on its own
    assert (metrics["requests"], metrics["errors"], metrics["detections"]) == (4, 2, 7)
    assert metrics["detections_by_class"] == {"person": 4, "car": 3}


def test_classification_answers_keep_their_shape(agent: Agent, package_factory: Any,
                                                 png: Any) -> None:
    package = package_factory()
    install(agent.home, package)
    agent.swap(agent.load_package(package.version_id))
    body = agent.predict(png((255, 0, 0)), top_k=2, score_threshold=0.9)
    assert set(body) == {"model_version_id", "task", "predictions", "latency_ms"}
    assert body["task"] == "image_classification"
    assert [p["label"] for p in body["predictions"]] == ["red", "green"]
    assert "detections" not in agent.telemetry.snapshot()


def test_detections_by_class_name_the_most_frequent_only() -> None:
    telemetry = Telemetry()
    telemetry.set_model("v1", "object_detection")
    labels = [f"class-{n:02d}" for n in range(30) for _ in range(n + 1)]  # class-29 most often
    telemetry.record_detections(labels)
    telemetry.record_detections(["class-00", "class-00"])  # 3 now: still among the rarest
    metrics = telemetry.snapshot()
    assert metrics["detections"] == len(labels) + 2
    assert list(metrics["detections_by_class"]) == [f"class-{n:02d}" for n in
                                                    range(29, 29 - MAX_CLASSES_REPORTED, -1)]
    assert metrics["detections_by_class"]["class-29"] == 30
    assert 'sampan_agent_detections_total{label="class-00"} 3.0' in (
        telemetry.exposition().decode())


def test_a_detection_package_is_benchmarked_like_a_classifier(
        tmp_path: Path, detection_package_factory: Any, signing_key: Any) -> None:
    package = detection_package_factory()
    images = [encoded_image(640, 360), encoded_image(300, 900, "JPEG")]
    outcome = measure(package_dir(tmp_path, package, images), warmup=1, runs=6)
    assert outcome["status"] == "succeeded", outcome
    assert set(outcome["result"]) == {"p50_ms", "p99_ms", "mean_ms", "throughput_ips", "load_s",
                                      "peak_memory_bytes", "runs", "warmup", "onnxruntime",
                                      "providers"}
    assert outcome["result"]["runs"] == 6 and outcome["result"]["p50_ms"] > 0

    other = {**package.manifest, "task": "keypoints"}
    unknown = package_dir(tmp_path / "other", type(package)(package.version_id, other,
                                                           package.model_bytes), images)
    assert measure(unknown, warmup=0, runs=1) == {
        "status": "incompatible",
        "error": "unsupported task 'keypoints': this agent serves image_classification, "
                 "object_detection, text_classification"}
