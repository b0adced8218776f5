"""Object detection served by the real agent process (``python -m edge_agent.cli run``): a signed
detection package deployed over the fake control plane, images POSTed to ``/v1/predict``, boxes
checked in the ORIGINAL image's pixels, detections counted in the heartbeats."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
import requests

from tests.edge_agent.conftest import (
    DETECTOR_ANCHORS,
    ModelPackage,
    encoded_image,
    expected_pixels,
)
from tests.edge_agent.test_agent_process import enroll, free_port, running_agent


def boxes_of(body: dict) -> list[tuple[str, float, list[float]]]:
    return [(d["label"], d["score"], d["box"]) for d in body["detections"]]


def assert_boxes(found: list[float], expected: list[float]) -> None:
    assert found == pytest.approx(expected, abs=0.006)  # the agent rounds to 1/100 px


def test_a_detection_package_is_deployed_and_answers_in_image_pixels(
        tmp_path: Path, control_plane, package_factory, detection_package_factory,
        signing_key) -> None:
    home, port, log_path = tmp_path / "agent", free_port(), tmp_path / "agent.log"
    assert enroll(control_plane.url, home, "enroll-token-1").returncode == 0
    base = f"http://127.0.0.1:{port}"
    classifier = package_factory()
    control_plane.deploy(classifier, "d1")
    person, car = DETECTOR_ANCHORS[0], DETECTOR_ANCHORS[1]

    with running_agent(home, port, log_path):
        control_plane.wait_for(lambda: ("running", None) in control_plane.deployment_states("d1"))
        body = requests.post(f"{base}/v1/predict", data=encoded_image(32, 24), timeout=10).json()
        assert body["task"] == "image_classification"
        assert set(body) == {"model_version_id", "task", "predictions", "latency_ms"}
        seen = len(control_plane.heartbeats)
        control_plane.wait_for(lambda: len(control_plane.heartbeats) > seen)
        assert "detections" not in control_plane.heartbeats[-1]["metrics"]

        detector = detection_package_factory(version=2)
        control_plane.deploy(detector, "d2")
        control_plane.wait_for(lambda: ("running", None) in control_plane.deployment_states("d2"))

        landscape = requests.post(f"{base}/v1/predict", data=encoded_image(640, 360), timeout=10)
        assert landscape.status_code == 200, landscape.text
        body = landscape.json()
        assert set(body) == {"model_version_id", "task", "width", "height", "tiles",
                             "detections", "latency_ms"}
        assert (body["model_version_id"], body["task"]) == (detector.version_id,
                                                            "object_detection")
        assert (body["width"], body["height"], body["tiles"]) == (640, 360, 1)
        # the weaker car anchor overlapping the first is suppressed (IoU 0.85 > nms_iou 0.6);
        # the faint person (0.2) is under the manifest's threshold 0.3
        assert [(label, score) for label, score, _ in boxes_of(body)] == [
            ("person", pytest.approx(0.9)), ("car", pytest.approx(0.8))]
        assert body["detections"][0]["index"] == 0 and body["detections"][1]["index"] == 1
        # 640 x 360 letterboxed into 64 x 64 fills 64 x 36: x and y both scale by 10
        assert_boxes(body["detections"][0]["box"], [20.0, 40.0, 120.0, 200.0])
        assert_boxes(body["detections"][0]["box"], expected_pixels(person.box, 640, 360))
        assert_boxes(body["detections"][1]["box"], expected_pixels(car.box, 640, 360))

        portrait = requests.post(f"{base}/v1/predict", data=encoded_image(300, 900, "JPEG"),
                                 timeout=10).json()
        assert (portrait["width"], portrait["height"]) == (300, 900)
        # 300 x 900 fills 21 x 64: x scales by 300 / 21, y by 900 / 64
        assert_boxes(portrait["detections"][0]["box"],
                     [2 * 300 / 21, 4 * 900 / 64, 12 * 300 / 21, 20 * 900 / 64])
        assert_boxes(portrait["detections"][1]["box"], expected_pixels(car.box, 300, 900))

        lower = requests.post(f"{base}/v1/predict?score_threshold=0.15",
                              data=encoded_image(640, 360), timeout=10).json()
        assert [(label, score) for label, score, _ in boxes_of(lower)] == [
            ("person", pytest.approx(0.9)), ("car", pytest.approx(0.8)),
            ("person", pytest.approx(0.2))]
        assert_boxes(lower["detections"][2]["box"], expected_pixels(DETECTOR_ANCHORS[3].box,
                                                                    640, 360))
        for bad in ("1.5", "-0.1", "nan", "high"):
            reply = requests.post(f"{base}/v1/predict?score_threshold={bad}",
                                  data=encoded_image(64, 64), timeout=10)
            assert reply.status_code == 400
            assert reply.json() == {"error": "score_threshold must be a number in [0, 1]"}

        # 2 + 2 + 3 objects; the refused requests detected nothing
        metrics = control_plane.wait_for(lambda: next(
            (h["metrics"] for h in control_plane.heartbeats
             if h["metrics"].get("detections") == 7), None))
        assert metrics["detections_by_class"] == {"person": 4, "car": 3}

        # A package of a task this agent does not serve: failed with the reason, the detector
        # keeps serving.
        version_id = str(uuid.uuid4())
        unknown = ModelPackage(version_id, signing_key.sign({
            **detector.manifest, "task": "image_segmentation",
            "model": {**detector.manifest["model"], "version": 3, "version_id": version_id}}),
            detector.model_bytes)
        control_plane.deploy(unknown, "d3")
        failed = control_plane.wait_for(lambda: next(
            (e for s, e in control_plane.deployment_states("d3") if s == "failed"), None))
        assert failed == ("unsupported task 'image_segmentation': this agent serves "
                          "image_classification, object_detection, text_classification")
        again = requests.post(f"{base}/v1/predict", data=encoded_image(640, 360), timeout=10)
        assert again.json()["model_version_id"] == detector.version_id
        assert len(again.json()["detections"]) == 2
