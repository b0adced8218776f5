"""Trying a model version on one image in the control plane, as a device would run it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from edge_agent.runtime import ClassifierSession
from sampan.registry.services import model_version_register
from tests.fixtures import images
from tests.platform.training.test_training_services import tiny_onnx

pytestmark = pytest.mark.django_db

PREPROCESSING = {"size": [4, 4], "resize": "stretch", "mean": [0.5] * 3, "std": [0.5] * 3,
                 "colour_order": "RGB", "layout": "NCHW", "dtype": "float32"}


@pytest.fixture
def version(project_with_roles: dict[str, Any], tmp_path: Path) -> Any:
    return model_version_register(
        project=project_with_roles["project"], model_name="m",
        task_type="image_classification", labels=["cat", "dog"], preprocessing=PREPROCESSING,
        onnx_path=tiny_onnx(tmp_path / "m.onnx"), input_shape=["N", 3, 4, 4], metrics={},
        lineage={}, onnx_info={"opset": 18, "ir_version": 9}, pretrained=False)


def predict(api: Any, user: Any, project: Any, version: Any, data: bytes, **extra: Any) -> Any:
    return api(user).post(f"/api/v1/projects/{project.pk}/model-versions/{version.pk}/predict/",
                          {"file": SimpleUploadedFile("x.png", data), **extra},
                          format="multipart")


def test_a_viewer_gets_the_same_answer_as_the_package_on_a_device(
        project_with_roles: dict[str, Any], api: Any, version: Any, settings: Any) -> None:
    data = images.png_bytes((200, 30, 90), size=(12, 9))
    response = predict(api, project_with_roles["viewer"], project_with_roles["project"],
                       version, data, top_k=2)
    assert response.status_code == 200, response.json()
    body = response.json()
    package = Path(settings.MEDIA_ROOT) / version.package_dir
    expected = ClassifierSession(package).predict_image(data, top_k=2)
    assert [p["label"] for p in body["predictions"]] == [p["label"] for p in expected]
    assert body["predictions"][0]["probability"] == pytest.approx(expected[0]["probability"],
                                                                  abs=1e-6)
    assert body["model_version_id"] == str(version.pk) and body["latency_ms"] >= 0
    assert body["task"] == "image_classification"
    assert set(body) == {"model_version_id", "task", "predictions", "latency_ms"}


def test_an_undecodable_image_is_a_400_naming_the_file(project_with_roles: dict[str, Any],
                                                       api: Any, version: Any) -> None:
    response = predict(api, project_with_roles["editor"], project_with_roles["project"],
                       version, images.truncated_jpeg())
    assert response.status_code == 400
    assert response.json()["error"]["field"] == "file"
    assert "truncated" in response.json()["error"]["message"].lower()


def test_another_projects_member_cannot_try_it(project_with_roles: dict[str, Any], api: Any,
                                               version: Any) -> None:
    response = predict(api, project_with_roles["outsider"], project_with_roles["other"],
                       version, images.png_bytes())
    assert response.status_code == 404


def test_predictions_at_once_are_bounded_and_the_rest_told_when_to_retry(
        project_with_roles: dict[str, Any], api: Any, version: Any, settings: Any,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Each prediction may decode 40 megapixels (~290 MB): a web process runs
    SAMPAN_PREDICT_CONCURRENCY at once; one more waits SAMPAN_PREDICT_WAIT_S, then is a 429
    with Retry-After, and nothing stays taken afterwards."""
    import threading
    import time as clock

    from sampan.registry import inference

    settings.SAMPAN_PREDICT_CONCURRENCY, settings.SAMPAN_PREDICT_WAIT_S = 2, 0.05
    running, most = [0], [0]
    guard = threading.Lock()

    class Slow:
        task = "image_classification"

        def predict_image(self, data: bytes, top_k: int) -> list[dict[str, Any]]:
            with guard:
                running[0] += 1
                most[0] = max(most[0], running[0])
            clock.sleep(0.3)
            with guard:
                running[0] -= 1
            return []

    monkeypatch.setattr(inference, "_session", lambda version: Slow())
    outcomes: list[str] = []

    def call() -> None:
        try:
            inference.model_version_predict(version=version, data=b"x")
            outcomes.append("ok")
        except inference.TooBusy:
            outcomes.append("busy")

    threads = [threading.Thread(target=call) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert most[0] == 2 and sorted(outcomes) == ["busy"] * 6 + ["ok"] * 2

    # through the API: every slot taken -> 429 naming when to retry; free again afterwards
    slots = inference._inference_slots()
    assert slots.acquire(timeout=1) and slots.acquire(timeout=1)
    data = images.png_bytes((200, 30, 90), size=(12, 9))
    busy = predict(api, project_with_roles["viewer"], project_with_roles["project"], version,
                   data)
    slots.release()
    slots.release()
    assert busy.status_code == 429 and busy["Retry-After"] == "1"
    assert busy.json()["error"]["code"] == "busy"
    monkeypatch.undo()
    settings.SAMPAN_PREDICT_CONCURRENCY = 2
    assert predict(api, project_with_roles["viewer"], project_with_roles["project"], version,
                   data).status_code == 200


def test_a_registered_version_ships_reference_predictions_the_device_can_check(
        version: Any, tmp_path: Path) -> None:
    """The signed manifest carries the model's outputs on the reference inputs, computed at
    registration; the agent's post-swap health check accepts them for this model."""
    from edge_agent.reference import reference_check
    from edge_agent.runtime import verify_manifest
    from edge_agent.sessions import open_session
    from sampan.registry.signing import trusted_keys_payload

    manifest = version.manifest
    assert manifest["reference"]["schema"] == "sampan.reference/1"
    assert len(manifest["reference"]["cases"]) == 2
    verify_manifest(manifest, [k["public_key"] for k in trusted_keys_payload()])  # signed with it
    path = tmp_path / "copy.onnx"
    path.write_bytes(tiny_onnx(tmp_path / "again.onnx").read_bytes())
    assert reference_check(open_session(path, manifest), manifest["reference"]) is True


@pytest.mark.parametrize(("data", "english", "chinese"), [
    (b"%PDF-1.7 ...", "file: unsupported format 'pdf'",
     "file：不支持的格式 'pdf'（支持 JPEG、PNG、GIF、BMP、WebP 和 TIFF）"),
    (b"", None, None),  # an empty upload: DRF refuses the empty file before decoding
    (images.truncated_jpeg(), "file: truncated image", "file：图片不完整（文件被截断）"),
    (images.png_bytes((1, 2, 3), size=(12, 9))[:40] + b"\0" * 200, "file: corrupt png image",
     "file：png 图片已损坏"),
])
def test_why_an_image_cannot_be_used_is_said_in_the_language_asked_for(
        project_with_roles: dict[str, Any], api: Any, version: Any, data: bytes,
        english: str | None, chinese: str | None) -> None:
    project, editor = project_with_roles["project"], project_with_roles["editor"]
    said = predict(api, editor, project, version, data)
    assert said.status_code == 400 and said.json()["error"]["field"] == "file"
    if english is None:
        return
    assert said.json()["error"]["message"] == english
    url = f"/api/v1/projects/{project.pk}/model-versions/{version.pk}/predict/"
    in_chinese = api(editor).post(url, {"file": SimpleUploadedFile("x.png", data)},
                                  format="multipart", HTTP_ACCEPT_LANGUAGE="zh-CN")
    assert in_chinese.json()["error"]["message"] == chinese


def test_an_image_over_the_pixel_limit_is_said_with_its_size_in_both_languages() -> None:
    from django.utils import translation

    from edge_agent.imaging import ImageDecodeError, decode_image
    from sampan.registry.inference import image_problem

    with pytest.raises(ImageDecodeError) as caught:
        decode_image(images.png_bytes((1, 2, 3), size=(12, 9)), max_pixels=100)
    assert image_problem(caught.value) == "file: " + str(caught.value) == (
        "file: image too large (12x9 px; at most 100 pixels)")
    with translation.override("zh-hans"):
        assert image_problem(caught.value) == "file：图片太大（12x9 像素；最多 100 像素）"
    assert image_problem(ImageDecodeError("odd", "unknown_kind")) == "file: odd"
