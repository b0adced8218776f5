"""The datasets API answers its errors in the client's language (Accept-Language; catalogue:
platform/sampan/datasets/locale/zh_Hans): a message written in place, one kept in a constant
(the stale write's 412, the detection zip without annotations) and one composed of translated
parts (an unsafe zip entry and its reason). Without the header the answer stays English."""

from __future__ import annotations

import io
import zipfile
from collections.abc import Iterator
from typing import Any

import pytest
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.utils import translation

from sampan.datasets.models import ImportJob, Sample
from sampan.datasets.services import dataset_create

pytestmark = pytest.mark.django_db

CHINESE = {"HTTP_ACCEPT_LANGUAGE": "zh-CN,zh;q=0.9,en;q=0.8"}


@pytest.fixture(autouse=True)
def _language_restored() -> Iterator[None]:
    # LocaleMiddleware leaves the request's language active in this thread after the answer:
    # the tests that run next must not read Chinese
    with translation.override(settings.LANGUAGE_CODE):
        yield


def _zip(entries: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in entries.items():
            archive.writestr(zipfile.ZipInfo(name), data)
    return buffer.getvalue()


def _import(client: Any, project: Any, dataset: Any, name: str, data: bytes,
            **headers: str) -> Any:
    return client.post(f"/api/v1/projects/{project.pk}/datasets/{dataset.pk}/imports/",
                       {"files": [SimpleUploadedFile(name, data)]}, format="multipart",
                       **headers)


def test_a_conflict_and_a_stale_write_in_chinese_and_english(
        project_with_roles: dict[str, Any], api: Any) -> None:
    project = project_with_roles["project"]
    client = api(project_with_roles["editor"])
    datasets = f"/api/v1/projects/{project.pk}/datasets/"
    assert client.post(datasets, {"name": "street"}, format="json").status_code == 201

    english = client.post(datasets, {"name": "street"}, format="json")
    assert english.status_code == 409
    assert english.json()["error"]["message"] == "a dataset named 'street' exists in this project"
    chinese = client.post(datasets, {"name": "street"}, format="json", **CHINESE)
    assert chinese.status_code == 409
    assert chinese.json()["error"] == {"code": "conflict", "field": "name",
                                       "message": "此项目中已存在名为 'street' 的数据集"}
    assert chinese["Content-Language"] == "zh-hans"

    # a message kept in a module constant (etags.LABEL_CHANGED) is translated when raised
    dataset = dataset_create(project=project, name="cats", labels=["cat"])
    sample = Sample.objects.create(dataset=dataset, content_sha256="a" * 64, file="samples/a.png",
                                   original_name="a.png", width=32, height=32)
    url = f"/api/v1/projects/{project.pk}/samples/{sample.pk}/label/"
    stale = client.put(url, {"class_label": "cat"}, format="json", HTTP_IF_MATCH='"0000"',
                       **CHINESE)
    assert stale.status_code == 412
    assert stale.json()["error"]["message"] == (
        "自您打开以来，该样本的标签已被他人修改；请重新加载查看")
    stale = client.put(url, {"class_label": "cat"}, format="json", HTTP_IF_MATCH='"0000"')
    assert stale.json()["error"]["message"].startswith("this sample's label was changed by")


def test_a_refused_zip_is_explained_in_chinese(project_with_roles: dict[str, Any],
                                               api: Any) -> None:
    project = project_with_roles["project"]
    client = api(project_with_roles["editor"])
    photos = dataset_create(project=project, name="photos")
    evil = _zip({"cat/1.png": b"x", "../escape.png": b"x"})
    refused = _import(client, project, photos, "evil.zip", evil, **CHINESE)
    assert refused.status_code == 400
    assert refused.json()["error"]["field"] == "files"
    assert refused.json()["error"]["message"] == (
        "evil.zip：不安全的条目 '../escape.png'：引用上级目录；已拒绝该压缩包")
    assert _import(client, project, photos, "evil.zip", evil).json()["error"]["message"] == (
        "evil.zip: unsafe entry '../escape.png': parent directory reference; archive rejected")

    # the detection layouts' advice (formats.common.NO_ANNOTATIONS), whole
    boxes = dataset_create(project=project, name="boxes", task_type="object_detection")
    folders = _zip({"cat/1.png": b"x", "dog/2.png": b"x"})
    refused = _import(client, project, boxes, "folders.zip", folders, **CHINESE)
    assert refused.status_code == 400
    message = refused.json()["error"]["message"]
    assert message.startswith("folders.zip：目标检测数据集需要边界框，而此 zip 中没有标注文件。")
    assert "COCO" in message and "Pascal VOC" in message and "YOLO" in message
    english = _import(client, project, boxes, "folders.zip", folders).json()["error"]["message"]
    assert english.startswith("folders.zip: an object detection dataset needs bounding boxes")
    assert ImportJob.objects.count() == 0
