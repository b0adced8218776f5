"""Trying an object detection version in the control plane: the agent's answer, boxes in the
image's own pixels."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from edge_agent.runtime import DetectorSession
from tests.edge_agent.conftest import DETECTOR_ANCHORS, encoded_image, expected_pixels
from tests.fixtures.detection_models import detection_version

pytestmark = pytest.mark.django_db


def predict(api: Any, user: Any, project: Any, version: Any, data: bytes, **extra: Any) -> Any:
    return api(user).post(f"/api/v1/projects/{project.pk}/model-versions/{version.pk}/predict/",
                          {"file": SimpleUploadedFile("x.png", data), **extra},
                          format="multipart")


def test_a_detection_version_answers_as_the_agent_does(project_with_roles: dict[str, Any],
                                                       api: Any, settings: Any) -> None:
    project, viewer = project_with_roles["project"], project_with_roles["viewer"]
    version = detection_version(project)
    data = encoded_image(640, 360)
    response = predict(api, viewer, project, version, data)
    assert response.status_code == 200, response.json()
    body = response.json()
    assert set(body) == {"model_version_id", "task", "width", "height", "tiles", "detections",
                         "latency_ms"}
    assert (body["model_version_id"], body["task"]) == (str(version.pk), "object_detection")
    assert (body["width"], body["height"], body["tiles"]) == (640, 360, 1)
    assert [(d["label"], d["index"]) for d in body["detections"]] == [("person", 0), ("car", 1)]
    assert body["detections"][0]["box"] == pytest.approx([20.0, 40.0, 120.0, 200.0], abs=0.006)
    assert body["detections"][1]["box"] == pytest.approx(
        expected_pixels(DETECTOR_ANCHORS[1].box, 640, 360), abs=0.006)
    package = Path(settings.MEDIA_ROOT) / version.package_dir
    assert body["detections"] == DetectorSession(package).predict_image(data)["detections"]

    lower = predict(api, viewer, project, version, encoded_image(300, 900), score_threshold=0.15)
    assert [d["label"] for d in lower.json()["detections"]] == ["person", "car", "person"]
    assert lower.json()["detections"][2]["box"] == pytest.approx(
        expected_pixels(DETECTOR_ANCHORS[3].box, 300, 900), abs=0.006)


@pytest.mark.parametrize("value", ["1.5", "-0.2", "nan", "most"])
def test_a_bad_score_threshold_is_a_400_naming_it(project_with_roles: dict[str, Any], api: Any,
                                                  value: str) -> None:
    project = project_with_roles["project"]
    version = detection_version(project)
    response = predict(api, project_with_roles["viewer"], project, version,
                       encoded_image(64, 64), score_threshold=value)
    assert response.status_code == 400
    assert response.json()["error"]["field"] == "score_threshold"


def test_a_task_no_agent_serves_is_unavailable_naming_it(project_with_roles: dict[str, Any],
                                                         api: Any) -> None:
    project = project_with_roles["project"]
    version = detection_version(project, task="image_segmentation")
    response = predict(api, project_with_roles["editor"], project, version,
                       encoded_image(64, 64))
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "model_unavailable"
    assert "unsupported task 'image_segmentation'" in response.json()["error"]["message"]
