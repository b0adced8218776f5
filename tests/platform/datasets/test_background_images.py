"""Background images of object detection datasets: a sample checked "no objects" (by a person,
or by the annotation file it was imported with) is labeled, enters versions with no boxes, is
counted and split, and is told apart from an unlabeled sample."""

from __future__ import annotations

from typing import Any

import pytest

from sampan.datasets.models import DatasetVersionItem, Sample
from sampan.datasets.services import dataset_create, sample_boxes_set
from sampan.datasets.versions import dataset_version_create
from tests.fixtures.detection import (coco_json, dataset_context, image_bytes, make_zip,
                                      run_import, voc_xml)

pytestmark = pytest.mark.django_db


def _street(project: Any, boxed: int, background: int, unlabeled: int = 0) -> Any:
    dataset = dataset_create(project=project, name="street", task_type="object_detection",
                             labels=["car"])
    for i in range(boxed + background + unlabeled):
        sample = Sample.objects.create(dataset=dataset, content_sha256=f"{i:064d}",
                                       file=f"samples/{i}.png", original_name=f"{i}.png",
                                       width=64, height=48)
        if i < boxed:
            sample_boxes_set(sample=sample, boxes=[{"x1": 1, "y1": 1, "x2": 9, "y2": 9,
                                                    "class_label": "car"}])
        elif i < boxed + background:
            sample_boxes_set(sample=sample, boxes=[], no_objects=True)
    return dataset


def test_a_version_holds_background_images_with_no_boxes_split_and_counted(
        project_with_roles: dict[str, Any]) -> None:
    dataset = _street(project_with_roles["project"], boxed=20, background=10, unlabeled=5)
    version = dataset_version_create(dataset=dataset, val_fraction=0.2, test_fraction=0.1)
    items = DatasetVersionItem.objects.filter(version=version)
    assert items.count() == 30  # the 5 unlabeled samples are not in it
    background = [item for item in items if not item.boxes]
    assert len(background) == 10 and all(item.class_index is None for item in background)
    # split like a class of their own: round(10 * 0.2) val, round(10 * 0.1) test
    assert version.stats["background_images"] == {"train": 7, "val": 2, "test": 1}
    # the 20 cars: round(20 * 0.2) val, round(20 * 0.1) test
    assert version.stats["classes"] == {"car": {"train": 14, "val": 4, "test": 2}}
    assert version.stats["splits"] == {"train": 14 + 7, "val": 4 + 2, "test": 2 + 1}
    # no flag speaks of the background images as if they were a class
    assert all("class_index" not in flag or flag["class"] == "car" for flag in version.flags)
    assert version.labels == ["car"]


def test_one_background_image_does_not_crash_the_split(project_with_roles: dict[str, Any]
                                                      ) -> None:
    dataset = _street(project_with_roles["project"], boxed=3, background=1)
    version = dataset_version_create(dataset=dataset)
    assert version.stats["background_images"] == {"train": 1}
    assert version.stats["samples"] == 4


def test_background_images_alone_are_not_a_version(project_with_roles: dict[str, Any]) -> None:
    from sampan.core.errors import ValidationFailed

    dataset = _street(project_with_roles["project"], boxed=0, background=3)
    with pytest.raises(ValidationFailed) as raised:
        dataset_version_create(dataset=dataset)
    assert raised.value.message.startswith("no boxes: every labeled sample is a background")


def test_the_mark_is_set_through_the_api_cleared_by_a_box_and_changes_the_etag(
        project_with_roles: dict[str, Any], api: Any) -> None:
    project = project_with_roles["project"]
    client = api(project_with_roles["editor"])
    dataset = _street(project, boxed=0, background=0, unlabeled=1)
    sample = dataset.samples.get()
    url = f"/api/v1/projects/{project.pk}/samples/{sample.pk}/boxes/"
    first = client.get(f"/api/v1/projects/{project.pk}/samples/{sample.pk}/").json()
    assert first["no_objects"] is False

    marked = client.put(url, {"boxes": [], "no_objects": True}, format="json",
                        HTTP_IF_MATCH=f'"{first["etag"]}"')
    assert marked.status_code == 200, marked.json()
    assert marked.json()["no_objects"] is True and marked.json()["annotations"] == []
    assert marked.json()["etag"] != first["etag"]
    assert marked["ETag"] == f'"{marked.json()["etag"]}"'

    # a copy read before the mark cannot overwrite it unseen
    stale = client.put(url, {"boxes": [{"x1": 1, "y1": 1, "x2": 5, "y2": 5,
                                        "class_label": "car"}]}, format="json",
                       HTTP_IF_MATCH=f'"{first["etag"]}"')
    assert stale.status_code == 412 and stale.json()["error"]["field"] == "If-Match"
    sample.refresh_from_db()
    assert sample.no_objects is True

    boxed = client.put(url, {"boxes": [{"x1": 1, "y1": 1, "x2": 5, "y2": 5,
                                        "class_label": "car"}]}, format="json",
                       HTTP_IF_MATCH=f'"{marked.json()["etag"]}"')
    assert boxed.status_code == 200 and boxed.json()["no_objects"] is False
    sample.refresh_from_db()
    assert sample.no_objects is False

    both = client.put(url, {"boxes": [{"x1": 1, "y1": 1, "x2": 5, "y2": 5,
                                       "class_label": "car"}], "no_objects": True},
                      format="json")
    assert both.status_code == 400 and both.json()["error"]["field"] == "no_objects"


def test_the_sample_list_tells_unlabeled_from_no_objects(project_with_roles: dict[str, Any],
                                                         api: Any) -> None:
    project = project_with_roles["project"]
    dataset = _street(project, boxed=2, background=3, unlabeled=4)
    url = f"/api/v1/projects/{project.pk}/datasets/{dataset.pk}/samples/"
    client = api(project_with_roles["viewer"])
    unlabeled = client.get(url, {"unlabeled": "true"}).json()
    no_objects = client.get(url, {"no_objects": "true"}).json()
    assert [row["original_name"] for row in unlabeled["results"]] == [
        "5.png", "6.png", "7.png", "8.png"]
    assert [row["original_name"] for row in no_objects["results"]] == ["2.png", "3.png", "4.png"]
    assert all(row["no_objects"] for row in no_objects["results"])


def test_imports_mark_background_images_and_nothing_else(project_with_roles: dict[str, Any],
                                                         api: Any) -> None:
    client = api(project_with_roles["editor"])
    project = project_with_roles["project"].pk
    red, green, blue, grey = (200, 0, 0), (0, 200, 0), (0, 0, 200), (90, 90, 90)

    def marked(ctx: dict[str, Any]) -> dict[str, bool]:
        return dict(Sample.objects.filter(dataset_id=ctx["dataset"]["id"])
                    .values_list("original_name", "no_objects"))

    yolo = dataset_context(client, project, "yolo")
    job = run_import(yolo, "y.zip", make_zip({
        "data.yaml": "names: [cat]\n",
        "images/a.png": image_bytes(red), "labels/a.txt": "0 0.5 0.5 0.5 0.5\n",
        "images/empty.png": image_bytes(green), "labels/empty.txt": "",
        "images/nolabel.png": image_bytes(blue),
        # its only box is wholly outside the image: skipped, so it had an object
        "images/skipped.png": image_bytes(grey), "labels/skipped.txt": "0 1.5 1.5 0.2 0.2\n"}))
    assert marked(yolo) == {"images/a.png": False, "images/empty.png": True,
                            "images/nolabel.png": True, "images/skipped.png": False}
    assert job["report"]["detection"]["background_images"] == 2

    coco = dataset_context(client, project, "coco")
    job = run_import(coco, "c.zip", make_zip({
        "a.png": image_bytes(red), "b.png": image_bytes(green), "stray.png": image_bytes(blue),
        "d.png": image_bytes(grey),
        "c.json": coco_json([{"id": 1, "file_name": "a.png"}, {"id": 2, "file_name": "b.png"},
                             {"id": 4, "file_name": "d.png"}],
                            [{"id": 1, "image_id": 1, "category_id": 1, "bbox": [1, 1, 4, 4]},
                             {"id": 2, "image_id": 4, "category_id": 9, "bbox": [1, 1, 4, 4]}],
                            [{"id": 1, "name": "cat"}])}))
    # stray.png is in no COCO file: nobody checked it, it is unlabeled, not a background image;
    # d.png's one annotation names no category: skipped, but d.png had an object
    assert marked(coco) == {"a.png": False, "b.png": True, "stray.png": False, "d.png": False}
    assert job["report"]["detection"]["background_images"] == 1

    voc = dataset_context(client, project, "voc")
    run_import(voc, "v.zip", make_zip({
        "a.png": image_bytes(red), "a.xml": voc_xml("a.png", [("cat", (1, 1, 5, 5))]),
        "b.png": image_bytes(green), "b.xml": voc_xml("b.png", []),
        # xmax < xmin: skipped, but c.png had an object
        "c.png": image_bytes(blue), "c.xml": voc_xml("c.png", [("cat", (9, 1, 5, 5))])}))
    assert marked(voc) == {"a.png": False, "b.png": True, "c.png": False}
