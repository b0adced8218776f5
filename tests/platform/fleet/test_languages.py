"""The fleet's error messages in the client's language (Accept-Language; English by default):
the catalogue is platform/sampan/fleet/locale/zh_Hans (tests/platform/core/test_translations.py
checks that every message is in it)."""

from __future__ import annotations

from typing import Any

from rest_framework.test import APIClient


def test_a_deploy_to_a_tag_nobody_has_answers_in_the_language_asked_for(
        owner_api: APIClient, project: Any, model_version: Any) -> None:
    url = f"/api/v1/projects/{project.pk}/deployments/"
    body = {"model_version_id": str(model_version().pk), "tag": "nowhere"}

    english = owner_api.post(url, body, format="json")
    assert english.status_code == 404
    assert english.json()["error"]["message"] == "no device of this project has the tag 'nowhere'"

    chinese = owner_api.post(url, body, format="json", HTTP_ACCEPT_LANGUAGE="zh-CN")
    assert chinese.status_code == 404
    error = chinese.json()["error"]
    assert error["code"] == "not_found" and error["field"] == "tag"
    assert error["message"] == "此项目中没有带标签 'nowhere' 的设备"
    assert chinese["Content-Language"] == "zh-hans"

    # a serializer's own check (device_ids and tag together) is translated as well
    both = owner_api.post(url, {**body, "device_ids": [str(project.pk)]}, format="json",
                          HTTP_ACCEPT_LANGUAGE="zh-CN,zh;q=0.9,en;q=0.8")
    assert both.status_code == 400 and both.json()["error"]["field"] == "device_ids"
    assert "请指定 device_ids 或 tag 之一" in both.json()["error"]["message"], both.json()


def test_an_incompatible_device_is_explained_in_chinese_with_its_reasons(
        owner_api: APIClient, project: Any, model_version: Any, enrolled: Any,
        heartbeat: Any) -> None:
    old, old_client = enrolled("old-camera")
    heartbeat(old_client, runtime={"onnxruntime": "1.16.3", "providers": ["CPUExecutionProvider"]})
    demanding = model_version(b"needs a newer runtime")
    demanding.manifest = {**demanding.manifest, "min_onnxruntime": "1.17.0"}
    demanding.save()
    url = f"/api/v1/projects/{project.pk}/deployments/"
    body = {"model_version_id": str(demanding.pk), "device_ids": [str(old.pk)]}

    chinese = owner_api.post(url, body, format="json", HTTP_ACCEPT_LANGUAGE="zh-CN")
    assert chinese.status_code == 400
    assert chinese.json()["error"]["message"] == (
        "模型版本 1 无法在 1 台设备上运行：old-camera：模型需要 onnxruntime >= 1.17.0；"
        "设备上的版本为 1.16.3")

    english = owner_api.post(url, body, format="json")  # no Accept-Language: English
    assert english.json()["error"]["message"] == (
        "model version 1 cannot run on 1 device(s): old-camera: the model needs onnxruntime "
        ">= 1.17.0; the device has 1.16.3")
