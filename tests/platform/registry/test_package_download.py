"""Model packages and files download under any Unicode model name (sampan.core.disposition)."""

from __future__ import annotations

import email
import email.policy
import io
import zipfile
from pathlib import Path
from typing import Any

import pytest

from sampan.core.disposition import ascii_fallback, content_disposition
from sampan.registry.models import RegisteredModel
from sampan.registry.services import model_version_register
from tests.platform.training.test_training_services import tiny_onnx

pytestmark = pytest.mark.django_db

PREPROCESSING = {"size": [4, 4], "resize": "stretch", "mean": [0.5] * 3, "std": [0.5] * 3,
                 "colour_order": "RGB", "layout": "NCHW", "dtype": "float32"}


def register(project: Any, name: str, tmp_path: Path) -> Any:
    return model_version_register(
        project=project, model_name=name, task_type="image_classification",
        labels=["cat", "dog"], preprocessing=PREPROCESSING,
        onnx_path=tiny_onnx(tmp_path / "m.onnx"), input_shape=["N", 3, 4, 4], metrics={},
        lineage={}, onnx_info={"opset": 18, "ir_version": 9}, pretrained=False)


def filename_of(header: str) -> str | None:
    """The file name as Python's email package reads the header (RFC 2231 / 8187; it takes the
    first of filename* and filename, and notes the second as a duplicate)."""
    message = email.message_from_string(f"Content-Disposition: {header}\n\n",
                                        policy=email.policy.default)
    return message.get_filename()


def download(api: Any, roles: dict[str, Any], version: Any) -> Any:
    project = roles["project"]
    return api(roles["viewer"]).get(
        f"/api/v1/projects/{project.pk}/model-versions/{version.pk}/package/")


def test_a_chinese_model_name_with_quotes_downloads_under_that_name(
        project_with_roles: dict[str, Any], api: Any, tmp_path: Path) -> None:
    version = register(project_with_roles["project"], '猫狗识别 "v2"', tmp_path)

    response = download(api, project_with_roles, version)

    assert response.status_code == 200
    header = response["Content-Disposition"]
    assert header == ("attachment; filename*=UTF-8''%E7%8C%AB%E7%8B%97%E8%AF%86%E5%88%AB"
                      "%20%22v2%22-v1.zip; filename=\"model-v2-v1.zip\"")
    assert header.isascii()
    assert filename_of(header) == '猫狗识别 "v2"-v1.zip'
    assert sorted(zipfile.ZipFile(io.BytesIO(response.content)).namelist()) == [
        "manifest.json", "model.onnx"]


def test_a_model_name_with_a_newline_stored_before_the_rule_still_downloads(
        project_with_roles: dict[str, Any], api: Any, tmp_path: Path) -> None:
    version = register(project_with_roles["project"], "digits", tmp_path)
    RegisteredModel.objects.filter(pk=version.model_id).update(name="line\nbreak")
    version.refresh_from_db()

    response = download(api, project_with_roles, version)

    assert response.status_code == 200
    header = response["Content-Disposition"]
    assert "\n" not in header and "\r" not in header
    assert filename_of(header) == "line\ufffdbreak-v1.zip"
    assert 'filename="line_break-v1.zip"' in header


def test_single_files_keep_their_plain_names(project_with_roles: dict[str, Any], api: Any,
                                             tmp_path: Path) -> None:
    version = register(project_with_roles["project"], "digits", tmp_path)
    project = project_with_roles["project"]
    response = api(project_with_roles["viewer"]).get(
        f"/api/v1/projects/{project.pk}/model-versions/{version.pk}/files/model.onnx")
    assert response.status_code == 200
    assert response["Content-Disposition"] == 'attachment; filename="model.onnx"'


@pytest.mark.parametrize("name, fallback, decoded", [
    ("Café-v1.zip", "Cafe-v1.zip", "Café-v1.zip"),
    ("猫狗-v3.zip", "model-v3.zip", "猫狗-v3.zip"),
    ("a/b\\c.zip", "a_b_c.zip", None),
    ('quote"back\\slash%41.zip', "quoteback_slash41.zip", 'quote"back_slash%41.zip'),
    ("\U0001f600.onnx", "model.onnx", "\U0001f600.onnx"),
])
def test_content_disposition_values(name: str, fallback: str, decoded: str | None) -> None:
    header = content_disposition(name, default="model")
    assert f'filename="{fallback}"' in header
    if decoded is None:
        assert "filename*" not in header
        assert filename_of(header) == fallback
    else:
        assert filename_of(header) == decoded
    assert ascii_fallback("", "download") == "download"


def test_registry_errors_are_answered_in_the_language_the_client_asks_for(
        project_with_roles: dict[str, Any], api: Any, tmp_path: Path) -> None:
    project = project_with_roles["project"]
    version = register(project, "cats", tmp_path)
    viewer = api(project_with_roles["viewer"])
    versions = f"/api/v1/projects/{project.pk}/model-versions/"

    chinese = viewer.get(f"{versions}{version.pk}/files/weights.bin",
                         HTTP_ACCEPT_LANGUAGE="zh-CN")
    assert chinese.status_code == 404
    assert chinese.json()["error"]["message"] == "模型包中没有文件 'weights.bin'"
    unknown = viewer.get(f"{versions}00000000-0000-0000-0000-000000000000/",
                         HTTP_ACCEPT_LANGUAGE="zh-CN")
    assert unknown.status_code == 404 and unknown.json()["error"]["message"] == "找不到模型版本"

    english = viewer.get(f"{versions}{version.pk}/files/weights.bin")
    assert english.json()["error"]["message"] == "no file 'weights.bin' in a model package"
