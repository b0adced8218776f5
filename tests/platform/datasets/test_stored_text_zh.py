"""What the datasets app stores in English outside a request (an import's report, a version's
flags, a pre-labeling run's failed images) is shown in the request's language: each text is
made the real way (an import run by its task body, a version frozen, a pre-labeling run), then
read through the API in Chinese (zh-hans) and without a language (English, as stored). Names,
numbers and codes stay as they are (sampan.datasets.report_texts)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.utils import translation

from sampan.core import storage
from sampan.datasets.models import ImportJob
from sampan.datasets.versions import dataset_version_create
from tests.fixtures import images
from tests.fixtures.detection import coco_json, dataset_context, image_bytes, make_zip, upload
from tests.platform.datasets.test_prelabel import classifier_version, import_images, run
from tests.platform.datasets.test_versions_and_labels import make_samples

pytestmark = pytest.mark.django_db

CHINESE = {"HTTP_ACCEPT_LANGUAGE": "zh-hans"}
RED, GREEN, BLUE = (200, 30, 30), (30, 200, 30), (30, 30, 200)


def _run(ctx: dict[str, Any], name: str, data: bytes) -> str:
    """Upload and run an import (its task body, in English as a worker runs it); its job id."""
    from sampan.datasets.imports import import_job_run

    response = upload(ctx, name, data)
    assert response.status_code == 202, response.json()
    with translation.override("en"):
        import_job_run(job_id=response.json()["id"])
    return str(response.json()["id"])


def _job(ctx: dict[str, Any], job_id: str, **headers: str) -> dict[str, Any]:
    response = ctx["client"].get(f"{ctx['base']}/imports/{job_id}/", **headers)
    assert response.status_code == 200, response.content
    return response.json()


def _reasons(entries: list[dict[str, str]]) -> dict[str, str]:
    return {entry["name"]: entry["reason"] for entry in entries}


def test_an_import_reports_why_files_were_skipped_in_the_language_asked_for(
        project_with_roles: dict[str, Any], api: Any) -> None:
    ctx = dataset_context(api(project_with_roles["editor"]), project_with_roles["project"].pk,
                          "pets", "image_classification")
    png = images.png_bytes()
    archive = make_zip({
        "cats/a.png": png, "cats/again.png": png, "dogs/b.png": images.png_bytes((1, 2, 3)),
        "dogs/empty.png": b"", "dogs/broken.jpg": images.truncated_jpeg(),
        "__MACOSX/cats/._a.png": b"\x00\x05\x16\x07junk", "cats/._a.png": b"\x00\x05\x16\x07",
        "README.md": "about", "cats/.hidden.png": png})
    job_id = _run(ctx, "pets.zip", archive)
    stored = ImportJob.objects.get(pk=job_id).report
    assert _reasons(stored["rejected"])["dogs/empty.png"] == "empty file"  # stored in English

    english = _job(ctx, job_id)["report"]
    assert _reasons(english["ignored"]) == {
        "__MACOSX/cats/._a.png": "macOS resource fork", "cats/._a.png": "AppleDouble file",
        "README.md": "documentation or text file, not an image",
        "cats/.hidden.png": "hidden file"}
    assert _reasons(english["rejected"]) == {"dogs/empty.png": "empty file",
                                             "dogs/broken.jpg": "truncated image"}
    assert _reasons(english["duplicates"]) == {"cats/again.png": "same content as cats/a.png"}

    chinese = _job(ctx, job_id, **CHINESE)["report"]
    assert _reasons(chinese["ignored"]) == {
        "__MACOSX/cats/._a.png": "macOS 资源分支文件", "cats/._a.png": "AppleDouble 文件",
        "README.md": "文档或文本文件，不是图像", "cats/.hidden.png": "隐藏文件"}
    assert _reasons(chinese["rejected"]) == {"dogs/empty.png": "空文件",
                                             "dogs/broken.jpg": "图像不完整（被截断）"}
    assert _reasons(chinese["duplicates"]) == {"cats/again.png": "与 cats/a.png 内容相同"}
    assert chinese["counts"] == english["counts"] == {"imported": 2, "duplicates": 1,
                                                      "ignored": 4, "rejected": 2}


def test_a_coco_import_reports_its_skipped_missing_and_unannotated_images_in_chinese(
        project_with_roles: dict[str, Any], api: Any) -> None:
    ctx = dataset_context(api(project_with_roles["editor"]), project_with_roles["project"].pk)
    path = "annotations/instances_val2017.json"
    job_id = _run(ctx, "coco.zip", make_zip({
        path: coco_json(
            [{"id": 1, "file_name": "a.png", "width": 64, "height": 48},
             {"id": 2, "file_name": "gone.png", "width": 64, "height": 48},
             {"id": 3, "file_name": "a.png", "width": 64, "height": 48}],
            [{"id": 10, "image_id": 1, "category_id": 1, "bbox": [1, 1, 5, 5]},
             {"id": 11, "image_id": 1, "category_id": 333, "bbox": [2, 2, 5, 5]},
             {"id": 12, "image_id": 1, "category_id": 1, "bbox": [70, 10, 5, 5]},
             {"id": 13, "image_id": 2, "category_id": 1, "bbox": [1, 1, 5, 5]},
             {"id": 14, "image_id": 1, "category_id": 1, "bbox": [2, 2, 5, 5], "iscrowd": 1}],
            [{"id": 1, "name": "cat"}, {"id": 2, "name": "owl"}]),
        "val2017/a.png": image_bytes(RED), "val2017/b.png": image_bytes(GREEN)}))

    english = _job(ctx, job_id)["report"]["detection"]
    chinese = _job(ctx, job_id, **CHINESE)["report"]["detection"]
    assert _reasons(english["skipped_annotations"]) == {
        f"{path} annotation id 11": "category_id 333 is not in categories",
        f"{path} annotation id 12": "outside the 64x48 px image (no area left after clipping): "
                                    "box (70, 10, 75, 15) px, xyxy",
        f"{path} annotation id 14": "a crowd region (iscrowd: 1), not an object box"}
    assert _reasons(chinese["skipped_annotations"]) == {
        f"{path} annotation id 11": "category_id 333 不在 categories 中",
        f"{path} annotation id 12": "在 64x48 像素的图像之外（裁剪后面积为零）："
                                    "框 (70, 10, 75, 15) 像素，xyxy",
        f"{path} annotation id 14": "人群区域（iscrowd: 1），不是目标框"}
    assert _reasons(english["missing_images"]) == {
        "gone.png": f"listed in {path} (image id 2, 1 box(es)) but not in the zip"}
    assert _reasons(chinese["missing_images"]) == {
        "gone.png": f"列于 {path}（图像 id 2，1 个框），但不在 zip 中"}
    assert _reasons(english["unannotated_images"]) == {
        "val2017/b.png": "no COCO file lists it: imported without boxes"}
    assert _reasons(chinese["unannotated_images"]) == {
        "val2017/b.png": "没有 COCO 文件列出它：已导入，无框"}
    assert english["warnings"] == [
        f"val2017/a.png is listed again in {path} (image id 3); its first listing is kept, "
        "these 0 box(es) are not",
        "classes without any box are not created: 'owl'"]
    assert chinese["warnings"] == [
        f"val2017/a.png 在 {path} 中再次出现（图像 id 3）；保留其第一次出现，这里的 0 个框未保留",
        "没有任何框的类别不会创建：'owl'"]
    assert chinese["totals"] == english["totals"]


def test_a_yolo_import_names_its_bad_lines_and_an_unreadable_image_with_its_boxes_in_chinese(
        project_with_roles: dict[str, Any], api: Any) -> None:
    ctx = dataset_context(api(project_with_roles["editor"]), project_with_roles["project"].pk)
    job_id = _run(ctx, "yolo.zip", make_zip({
        "data.yaml": "names: [cat, dog]\n",
        "images/train/a.png": image_bytes(RED), "labels/train/a.txt": "0 0.5 0.5 0.2 0.2\n"
                                                                      "7 0.5 0.5 0.2 0.2\n"
                                                                      "0 0.5 0.5 1.5 0.2\n",
        "images/train/b.png": image_bytes(BLUE)[:60], "labels/train/b.txt": "1 0.5 0.5 0.2 0.2\n"
                                                                            "0 0.1 0.1 0.1 0.1\n",
        "labels/train/c.txt": "0 0.5 0.5 0.2 0.2\n"}))

    english = _job(ctx, job_id)["report"]
    chinese = _job(ctx, job_id, **CHINESE)["report"]
    assert _reasons(english["detection"]["skipped_annotations"]) == {
        "labels/train/a.txt:2": "class id 7 is out of range: the class names list 2 classes "
                                "(ids 0 to 1)",
        "labels/train/a.txt:3": "value 1.5 is outside [0, 1] (YOLO coordinates are fractions "
                                "of the image width and height)"}
    assert _reasons(chinese["detection"]["skipped_annotations"]) == {
        "labels/train/a.txt:2": "类别 id 7 超出范围：类别名称列出了 2 个类别（id 0 到 1）",
        "labels/train/a.txt:3": "值 1.5 超出 [0, 1]（YOLO 坐标是图像宽度和高度的比例）"}
    assert _reasons(english["rejected"]) == {
        "images/train/b.png": "truncated image; its 2 box(es) were not imported"}
    assert _reasons(chinese["rejected"]) == {
        "images/train/b.png": "图像不完整（被截断）；其 2 个框未导入"}
    assert _reasons(chinese["detection"]["missing_images"]) == {
        "labels/train/c.txt": "没有同名图像的标签文件（已在 images/ 下和该文件旁查找）"}


def test_a_versions_flags_read_in_chinese_with_their_classes_and_counts(
        project_with_roles: dict[str, Any], api: Any) -> None:
    from sampan.datasets.services import dataset_create

    project = project_with_roles["project"]
    dataset = dataset_create(project=project, name="tiny")
    make_samples(dataset, {"cat": 5, "dog": 3, "fox": 2, "owl": 1})
    with translation.override("zh-hans"):  # frozen by a Chinese request: stored in English
        version = dataset_version_create(dataset=dataset, seed=0)
    assert version.flags[1]["message"] == ("class 'owl' has 1 sample(s): too few to appear in "
                                           "validation")
    client = api(project_with_roles["viewer"])
    url = f"/api/v1/projects/{project.pk}/dataset-versions/{version.pk}/"
    english = client.get(url).json()["flags"]
    assert english == version.flags
    chinese = client.get(url, **CHINESE).json()["flags"]
    assert [(f["code"], f.get("class")) for f in chinese] == [
        ("no_test_split", None), ("class_too_small", "owl"), ("class_imbalance", None)]
    assert chinese[0]["message"] == ("没有任何类别达到测试集所需的 10 个已标注样本"
                                     "（最多的有 5 个）：此版本只有训练集和验证集，"
                                     "训练在验证集上报告结果")
    assert chinese[1]["message"] == "类别 'owl' 有 1 个样本：太少，无法出现在验证集中"
    assert chinese[2]["message"].startswith(
        "类别不均衡：'cat' 有 5 个样本，'owl' 只有 1 个（5.0 倍）")
    assert chinese[2]["message"].endswith("或标注更多 'owl' 样本")
    assert chinese[2]["ratio"] == 5.0
    listed = client.get(f"/api/v1/projects/{project.pk}/datasets/{dataset.pk}/versions/",
                        **CHINESE).json()
    rows = listed["results"] if isinstance(listed, dict) else listed
    assert rows[0]["flags"] == chinese


def test_a_class_without_a_test_split_is_flagged_in_chinese(
        project_with_roles: dict[str, Any], api: Any) -> None:
    from sampan.datasets.services import dataset_create

    project = project_with_roles["project"]
    dataset = dataset_create(project=project, name="three")
    make_samples(dataset, {"a": 20, "b": 10, "c": 9})
    version = dataset_version_create(dataset=dataset, seed=0)
    url = f"/api/v1/projects/{project.pk}/dataset-versions/{version.pk}/"
    chinese = api(project_with_roles["viewer"]).get(url, **CHINESE).json()["flags"]
    assert chinese == [{"code": "no_test_split_for_class", "class_index": 2, "class": "c",
                        "message": "类别 'c' 有 9 个样本：太少，无法划分测试集（需要 10 个）；"
                                   "它不计入测试报告"}]


def test_a_prelabel_runs_failed_image_reads_in_chinese(project_with_roles: dict[str, Any],
                                                       api: Any, tmp_path: Path) -> None:
    client = api(project_with_roles["editor"])
    ctx = dataset_context(client, project_with_roles["project"].pk, "paints",
                          "image_classification")
    client.post(f"{ctx['base']}/datasets/{ctx['dataset']['id']}/class-labels/",
                {"names": ["red", "green", "blue"]}, format="json")
    samples = import_images(ctx, {"grey.png": image_bytes((128, 128, 128), (8, 8)),
                                  "red.png": image_bytes((255, 0, 0), (8, 8))})
    storage.delete(samples["grey.png"].file)
    version = classifier_version(project_with_roles["project"], tmp_path)
    with translation.override("en"):
        job = run(ctx, version)
    assert job["report"]["failed"] == [{"name": "grey.png",
                                        "reason": "the image file is missing from the storage"}]
    chinese = client.get(f"{ctx['base']}/prelabel-jobs/{job['id']}/", **CHINESE).json()
    assert chinese["report"]["failed"] == [{"name": "grey.png", "reason": "存储中缺少该图像文件"}]
    assert chinese["report"]["counts"] == job["report"]["counts"]


def test_a_report_written_before_is_shown_as_stored(project_with_roles: dict[str, Any],
                                                    api: Any) -> None:
    ctx = dataset_context(api(project_with_roles["editor"]), project_with_roles["project"].pk,
                          "old", "image_classification")
    job_id = _run(ctx, "one.zip", make_zip({"cats/a.png": images.png_bytes()}))
    old = {"imported": 1, "duplicates": [], "rejected": [{"name": "x.png",
                                                          "reason": "an older sentence"}],
           "ignored": [{"name": "y", "reason": "hidden file"}, "not an object"],
           "counts": {"imported": 1, "duplicates": 0, "ignored": 1, "rejected": 1}}
    ImportJob.objects.filter(pk=job_id).update(report=old)
    shown = _job(ctx, job_id, **CHINESE)["report"]
    assert shown["rejected"] == old["rejected"]
    assert shown["ignored"] == [{"name": "y", "reason": "隐藏文件"}, "not an object"]
    assert _job(ctx, job_id)["report"] == old


def test_a_file_over_the_size_limit_for_one_file_is_named_with_the_limit(
        project_with_roles: dict[str, Any], api: Any, monkeypatch: Any) -> None:
    from sampan.datasets import imports
    from sampan.datasets.archives import ArchiveLimits

    ctx = dataset_context(api(project_with_roles["editor"]), project_with_roles["project"].pk,
                          "big", "image_classification")
    monkeypatch.setattr(imports, "_limits", lambda: ArchiveLimits(max_member_bytes=1000))
    job_id = _run(ctx, "big.zip", make_zip({"cats/big.png": image_bytes(RED) + b"\x00" * 2000,
                                            "cats/a.png": images.png_bytes()}))
    assert _reasons(_job(ctx, job_id)["report"]["rejected"]) == {
        "cats/big.png": "larger than 1000 bytes, the limit for one file"}
    assert _reasons(_job(ctx, job_id, **CHINESE)["report"]["rejected"]) == {
        "cats/big.png": "大于 1000 字节（单个文件的上限）"}
