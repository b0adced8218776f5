"""Object detection zips (COCO, Pascal VOC, YOLO) into a detection dataset, through the REST API,
with the inputs that break importers: each bad input is a test with the value it must give."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import pytest

from sampan.datasets.models import ClassLabel, ImportJob, Sample
from tests.fixtures.detection import (class_names, coco_json, dataset_context, image_bytes,
                                      make_zip, run_import, stored_boxes, upload, voc_xml)

pytestmark = pytest.mark.django_db

RED, GREEN, BLUE, GREY = (200, 30, 30), (30, 200, 30), (30, 30, 200), (90, 90, 90)


@pytest.fixture
def ctx(project_with_roles: dict[str, Any], api: Any) -> dict[str, Any]:
    return dataset_context(api(project_with_roles["editor"]), project_with_roles["project"].pk)


def detection(job: dict[str, Any]) -> dict[str, Any]:
    assert job["status"] == "SUCCEEDED", job["error"]
    return job["report"]["detection"]


def skipped(job: dict[str, Any]) -> dict[str, str]:
    return {s["name"]: s["reason"] for s in detection(job)["skipped_annotations"]}


# ----------------------------------------------------------------------------------- COCO

def test_coco_per_split_files_give_boxes_classes_in_id_order_and_splits(ctx: dict[str, Any]
                                                                        ) -> None:
    # Roboflow's layout: one _annotations.coco.json per split folder, images beside it, and a
    # category 0 naming the dataset that no box uses
    categories = [{"id": 0, "name": "vehicles", "supercategory": "none"},
                  {"id": 7, "name": "6", "supercategory": "vehicles"},
                  {"id": 1, "name": "traffic light  ", "supercategory": "vehicles"},
                  {"id": 3, "name": "car", "supercategory": "vehicles"}]
    train = coco_json(
        [{"id": 1, "file_name": "a.png", "width": 64, "height": 48},
         {"id": 2, "file_name": "empty.png", "width": 64, "height": 48}],
        [{"id": 10, "image_id": 1, "category_id": 3, "bbox": [4, 5, 10, 20.5]},
         {"id": 11, "image_id": 1, "category_id": 7, "bbox": [30.25, 1, 8, 8]}],
        categories)
    valid = coco_json([{"id": 1, "file_name": "b.png", "width": 64, "height": 48}],
                      [{"id": 1, "image_id": 1, "category_id": 1, "bbox": [0, 0, 64, 48]}],
                      categories)
    job = run_import(ctx, "roboflow-coco.zip", make_zip({
        "README.roboflow.txt": "exported",
        "train/_annotations.coco.json": train, "train/a.png": image_bytes(RED),
        "train/empty.png": image_bytes(GREEN),
        "valid/_annotations.coco.json": valid, "valid/b.png": image_bytes(BLUE)}))
    report = detection(job)
    # ids {1, 3, 7} are classes 0, 1, 2 in id order; names trimmed, inner space kept, "6" text
    assert class_names(ctx) == ["traffic light", "car", "6"]
    assert stored_boxes(ctx) == {
        "train/a.png": [("6", 30.25, 1.0, 38.25, 9.0), ("car", 4.0, 5.0, 14.0, 25.5)],
        "train/empty.png": [],
        "valid/b.png": [("traffic light", 0.0, 0.0, 64.0, 48.0)]}
    assert (report["formats"], report["images"], report["boxes"], report["background_images"]) \
        == (["coco"], 3, 3, 1)
    assert report["classes"] == [{"name": "traffic light", "boxes": 1},
                                 {"name": "car", "boxes": 1}, {"name": "6", "boxes": 1}]
    assert report["skipped_annotations"] == [] and report["missing_images"] == []
    assert "classes without any box are not created: 'vehicles'" in report["warnings"]
    assert job["report"]["archive_splits"] == {"train": {"car": 1, "6": 1, "": 1},
                                               "val": {"traffic light": 1}}
    assert [i["name"] for i in job["report"]["ignored"]] == ["README.roboflow.txt"]


def test_coco_unknown_category_is_skipped_by_annotation_id_never_a_new_class(
        ctx: dict[str, Any]) -> None:
    job = run_import(ctx, "c.zip", make_zip({
        "annotations/instances_val2017.json": coco_json(
            [{"id": 5, "file_name": "x.png", "width": 64, "height": 48}],
            [{"id": 41, "image_id": 5, "category_id": 1, "bbox": [1, 1, 5, 5]},
             {"id": 42, "image_id": 5, "category_id": 333, "bbox": [2, 2, 5, 5]},
             {"id": 43, "image_id": 99, "category_id": 1, "bbox": [2, 2, 5, 5]},
             {"id": 44, "image_id": 5, "category_id": 1, "bbox": [2, 2, "5", 5]},
             {"id": 45, "image_id": 5, "category_id": 1, "bbox": [2, 2, -5, 5]},
             {"id": 46, "image_id": 5, "category_id": 1, "bbox": [2, 2, 5, 5], "iscrowd": 1}],
            [{"id": 1, "name": "cat"}]),
        "val2017/x.png": image_bytes(RED)}))
    path = "annotations/instances_val2017.json"
    assert skipped(job) == {
        f"{path} annotation id 42": "category_id 333 is not in categories",
        f"{path} annotation id 43": "image_id 99 is not in images",
        f"{path} annotation id 44": "bbox [2, 2, '5', 5] holds a value that is not a finite "
                                    "number",
        f"{path} annotation id 45": "bbox [2, 2, -5, 5] has a negative width or height",
        f"{path} annotation id 46": "a crowd region (iscrowd: 1), not an object box"}
    assert class_names(ctx) == ["cat"]
    assert stored_boxes(ctx) == {"val2017/x.png": [("cat", 1.0, 1.0, 6.0, 6.0)]}
    assert job["report"]["archive_splits"] == {"val": {"cat": 1}}  # from instances_val2017


def test_boxes_outside_the_image_are_clipped_and_those_left_without_area_dropped(
        ctx: dict[str, Any]) -> None:
    job = run_import(ctx, "clip.zip", make_zip({
        "ann.json": coco_json(
            [{"id": 1, "file_name": "a.png", "width": 64, "height": 48}],
            [{"id": 1, "image_id": 1, "category_id": 1, "bbox": [-5, -3, 15, 13]},
             {"id": 2, "image_id": 1, "category_id": 1, "bbox": [50, 40, 100, 100]},
             {"id": 3, "image_id": 1, "category_id": 1, "bbox": [70, 10, 5, 5]},
             {"id": 4, "image_id": 1, "category_id": 1, "bbox": [10, 10, 0, 5]},
             {"id": 5, "image_id": 1, "category_id": 1, "bbox": [-20, 5, 20, 5]}],
            [{"id": 1, "name": "box"}]),
        "a.png": image_bytes(RED)}))
    assert stored_boxes(ctx)["a.png"] == [("box", 0.0, 0.0, 10.0, 10.0),
                                          ("box", 50.0, 40.0, 64.0, 48.0)]
    assert skipped(job) == {
        "ann.json annotation id 3": "outside the 64x48 px image (no area left after clipping): "
                                    "box (70, 10, 75, 15) px, xyxy",
        "ann.json annotation id 4": "zero width or height: box (10, 10, 10, 15) px, xyxy",
        "ann.json annotation id 5": "outside the 64x48 px image (no area left after clipping): "
                                    "box (-20, 5, 0, 10) px, xyxy"}
    assert detection(job)["clipped_boxes"] == 2


def test_coco_xywh_and_voc_xyxy_of_the_same_boxes_store_the_same_boxes(
        project_with_roles: dict[str, Any], api: Any) -> None:
    client = api(project_with_roles["editor"])
    project = project_with_roles["project"].pk
    boxes = [("dog", (10.1, 20.2, 30.3, 40.4)), ("cat", (0, 0, 64, 48)),
             ("dog", (33.333, 1.5, 63.999, 47.25))]
    coco = dataset_context(client, project, "coco")
    run_import(coco, "c.zip", make_zip({
        "a.png": image_bytes(RED),
        "instances.json": coco_json(
            [{"id": 1, "file_name": "a.png", "width": 64, "height": 48}],
            [{"id": n, "image_id": 1, "category_id": 1 if name == "cat" else 2,
              "bbox": [x1, y1, x2 - x1, y2 - y1]} for n, (name, (x1, y1, x2, y2))
             in enumerate(boxes)],
            [{"id": 1, "name": "cat"}, {"id": 2, "name": "dog"}])}))
    voc = dataset_context(client, project, "voc")
    run_import(voc, "v.zip", make_zip({"JPEGImages/a.png": image_bytes(RED),
                                       "Annotations/a.xml": voc_xml("a.png", boxes)}))
    from_coco, from_voc = stored_boxes(coco)["a.png"], stored_boxes(voc)["JPEGImages/a.png"]
    assert from_coco == from_voc == sorted(
        (name, float(x1), float(y1), float(x2), float(y2)) for name, (x1, y1, x2, y2) in boxes)


# ------------------------------------------------------------------------------------ VOC

def test_voc_with_float_coordinates_no_difficult_no_size_and_a_class_named_6(
        ctx: dict[str, Any]) -> None:
    job = run_import(ctx, "voc.zip", make_zip({
        "VOC2012/JPEGImages/2007_000027.jpg": image_bytes(RED, (80, 60), "JPEG"),
        "VOC2012/Annotations/2007_000027.xml": voc_xml(
            "2007_000027.jpg", [("6", ("12.5", "7.25", "40.75", "59.5")),
                                (" person ", ("0", "0", "80", "60"))],
            size=None, difficult=False),
        "VOC2012/ImageSets/Main/train.txt": "2007_000027\n",
        "VOC2012/ImageSets/Main/person_train.txt": "2007_000027  1\n"}))
    assert class_names(ctx) == ["6", "person"]
    assert ClassLabel.objects.get(name="6").name == "6"
    assert stored_boxes(ctx) == {"VOC2012/JPEGImages/2007_000027.jpg": [
        ("6", 12.5, 7.25, 40.75, 59.5), ("person", 0.0, 0.0, 80.0, 60.0)]}
    assert job["report"]["archive_splits"] == {"train": {"6": 1, "person": 1}}
    assert {i["name"]: i["reason"] for i in job["report"]["ignored"]} == {
        "VOC2012/ImageSets/Main/person_train.txt": "not a Pascal VOC annotation or image set"}


def test_voc_objects_that_cannot_be_used_are_named_by_file_and_number(ctx: dict[str, Any]
                                                                      ) -> None:
    job = run_import(ctx, "voc.zip", make_zip({
        "a.png": image_bytes(RED),
        "a.xml": voc_xml("a.png", [("cat", (1, 1, 9, 9)), ("cat", ("x", 1, 9, 9)),
                                   ("cat", (9, 1, 1, 9))])
                 .replace("</annotation>", "<object><name>dog</name></object>"
                                           "<object><bndbox/></object></annotation>")}))
    assert skipped(job) == {
        "a.xml object #2": "<bndbox> needs numbers xmin, ymin, xmax, ymax (xmin='x', "
                           "ymin='1', xmax='9', ymax='9')",
        "a.xml object #3": "xmax < xmin or ymax < ymin (9, 1, 1, 9)",
        "a.xml object #4": "no <bndbox>",
        "a.xml object #5": "no <name>"}
    assert stored_boxes(ctx) == {"a.png": [("cat", 1.0, 1.0, 9.0, 9.0)]}


def test_voc_xml_with_a_doctype_or_entities_is_refused_never_expanded(ctx: dict[str, Any]
                                                                      ) -> None:
    # "billion laughs": lol8 would expand to 10^9 "lol"s
    expansions = ["&lol;" * 10] + [f"&lol{i - 1};" * 10 for i in range(1, 9)]
    laughs = ('<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">'
              + "".join(f'<!ENTITY lol{i} "{text}">' for i, text in enumerate(expansions))
              + ']><annotation><filename>a.png</filename><object><name>&lol8;</name>'
                "<bndbox><xmin>1</xmin><ymin>1</ymin><xmax>5</xmax><ymax>5</ymax></bndbox>"
                "</object></annotation>")
    external = ('<?xml version="1.0"?><!DOCTYPE a [<!ENTITY x SYSTEM "file:///etc/passwd">]>'
                "<annotation><filename>b.png</filename><object><name>&x;</name></object>"
                "</annotation>")
    job = run_import(ctx, "evil.zip", make_zip({
        "a.png": image_bytes(RED), "a.xml": laughs, "b.png": image_bytes(GREEN),
        "b.xml": external, "c.png": image_bytes(BLUE),
        "c.xml": voc_xml("c.png", [("ok", (1, 1, 5, 5))])}))
    refused = "the whole file: XML with a DOCTYPE or ENTITY declaration is refused (entities " \
              "are never expanded)"
    assert skipped(job) == {"a.xml": refused, "b.xml": refused}
    assert stored_boxes(ctx) == {"a.png": [], "b.png": [], "c.png": [("ok", 1.0, 1.0, 5.0, 5.0)]}
    assert {u["name"] for u in detection(job)["unannotated_images"]} == {"a.png", "b.png"}


# ----------------------------------------------------------------------------------- YOLO

def test_yolo_bad_lines_are_skipped_by_file_and_line_and_the_rest_imports(ctx: dict[str, Any]
                                                                          ) -> None:
    lines = "\n".join([
        "0 0.5 0.5 0.5 0.5",          # 1: fine
        "7 0.5 0.5 0.2 0.2",          # 2: class 7 of 2
        "1 0.5 0.5 0.2",              # 3: four fields
        "1 a 0.5 0.2 0.2",            # 4: not a number
        "1 1.5 0.5 0.2 0.2",          # 5: outside [0, 1]
        "",                           # 6: blank, ignored
        "1.5 0.5 0.5 0.2 0.2",        # 7: class id not whole
        "1 0.5 0.5 0.2 0.2 0.93",     # 8: six fields (a prediction with its confidence)
        "-1 0.5 0.5 0.2 0.2",         # 9: negative class
        "1 0.5 0.5 nan 0.2",          # 10: NaN
        "1 0.9995 0.5 0.2 0.2",       # 11: fine: the box is clipped at the right edge
        "1 0.1 0.1 0.3 0.1 0.3 0.4",  # 12: a polygon: its bounding box
    ])
    job = run_import(ctx, "yolo.zip", make_zip({
        "data.yaml": "path: .\ntrain: images/train\nnc: 2\nnames: ['cat', 'dog']\n",
        "images/train/a.png": image_bytes(RED, (100, 50)),
        "labels/train/a.txt": lines}))
    f = "labels/train/a.txt"
    out_of_range = "class id {} is out of range: the class names list 2 classes (ids 0 to 1)"
    assert skipped(job) == {
        f"{f}:2": out_of_range.format(7),
        f"{f}:3": "expected 5 fields (class x_center y_center width height), found 4",
        f"{f}:4": "a coordinate is not a number",
        f"{f}:5": "value 1.5 is outside [0, 1] (YOLO coordinates are fractions of the image "
                  "width and height)",
        f"{f}:7": "class id '1.5' is not a whole number",
        f"{f}:8": "expected 5 fields (class x_center y_center width height), found 6",
        f"{f}:9": out_of_range.format(-1),
        f"{f}:10": "value nan is outside [0, 1] (YOLO coordinates are fractions of the image "
                   "width and height)"}
    assert stored_boxes(ctx) == {"images/train/a.png": [
        ("cat", 25.0, 12.5, 75.0, 37.5), ("dog", 10.0, 5.0, 30.0, 20.0),
        ("dog", 89.95, 20.0, 100.0, 30.0)]}
    assert detection(job)["clipped_boxes"] == 1
    assert job["report"]["archive_splits"] == {"train": {"cat": 1, "dog": 1}}


def test_yolo_class_names_from_a_dict_from_classes_txt_or_from_ids(
        project_with_roles: dict[str, Any], api: Any) -> None:
    client = api(project_with_roles["editor"])
    project = project_with_roles["project"].pk
    files = {"images/a.png": image_bytes(RED), "labels/a.txt": "1 0.5 0.5 0.5 0.5\n"}
    as_dict = dataset_context(client, project, "dict")
    run_import(as_dict, "d.zip", make_zip({**files, "data.yaml": "names:\n  0: no\n  1: 6\n"}))
    assert class_names(as_dict) == ["6"]  # YAML 1.1 would make these False and the int 6
    listed = dataset_context(client, project, "list")
    run_import(listed, "l.zip", make_zip({**files, "classes.txt": "person\ntraffic light \n\n"}))
    assert class_names(listed) == ["traffic light"]
    by_id = dataset_context(client, project, "ids")
    job = run_import(by_id, "i.zip", make_zip(files))
    assert class_names(by_id) == ["1"]
    assert "no data.yaml or classes.txt: classes are named by their ids (0, 1, ...)" \
        in detection(job)["warnings"]


def test_a_class_list_that_is_not_one_fails_the_import_naming_it(ctx: dict[str, Any]) -> None:
    job = run_import(ctx, "y.zip", make_zip({
        "images/a.png": image_bytes(RED), "labels/a.txt": "0 0.5 0.5 0.5 0.5\n",
        "data.yaml": "names:\n  0: cat\n  2: dog\n"}))
    assert job["status"] == "FAILED"
    assert job["error"] == "data.yaml: the class ids in names must be 0 to 1, found [0, 2]"
    assert Sample.objects.count() == 0 and ClassLabel.objects.count() == 0


# --------------------------------------------------------------- background images, missing

def test_images_without_boxes_are_kept_as_background_in_every_format(
        project_with_roles: dict[str, Any], api: Any) -> None:
    client = api(project_with_roles["editor"])
    project = project_with_roles["project"].pk
    yolo = dataset_context(client, project, "yolo")
    job = run_import(yolo, "y.zip", make_zip({
        "data.yaml": "names: [cat]\n",
        "images/a.png": image_bytes(RED), "labels/a.txt": "0 0.5 0.5 0.5 0.5\n",
        "images/empty.png": image_bytes(GREEN), "labels/empty.txt": "",
        "images/nolabel.png": image_bytes(BLUE)}))  # no label file: background (Ultralytics)
    assert stored_boxes(yolo) == {"images/a.png": [("cat", 16.0, 12.0, 48.0, 36.0)],
                                  "images/empty.png": [], "images/nolabel.png": []}
    assert (detection(job)["images"], detection(job)["background_images"]) == (3, 2)
    voc = dataset_context(client, project, "voc")
    job = run_import(voc, "v.zip", make_zip({
        "a.png": image_bytes(RED), "a.xml": voc_xml("a.png", [("cat", (1, 1, 5, 5))]),
        "b.png": image_bytes(GREEN), "b.xml": voc_xml("b.png", [])}))
    assert stored_boxes(voc)["b.png"] == [] and detection(job)["background_images"] == 1
    coco = dataset_context(client, project, "coco")
    job = run_import(coco, "c.zip", make_zip({
        "a.png": image_bytes(RED), "b.png": image_bytes(GREEN),
        "c.json": coco_json([{"id": 1, "file_name": "a.png"}, {"id": 2, "file_name": "b.png"}],
                            [{"id": 1, "image_id": 1, "category_id": 1, "bbox": [1, 1, 4, 4]}],
                            [{"id": 1, "name": "cat"}])}))
    assert stored_boxes(coco) == {"a.png": [("cat", 1.0, 1.0, 5.0, 5.0)], "b.png": []}
    assert detection(job)["background_images"] == 1
    assert detection(job)["unannotated_images"] == []  # listed with no annotations: background


def test_annotations_of_images_missing_from_the_zip_are_reported_by_name(
        ctx: dict[str, Any]) -> None:
    job = run_import(ctx, "m.zip", make_zip({
        "a.png": image_bytes(RED), "stray.png": image_bytes(GREY),
        "c.json": coco_json([{"id": 1, "file_name": "a.png"}, {"id": 2, "file_name": "gone.jpg"}],
                            [{"id": 1, "image_id": 2, "category_id": 1, "bbox": [1, 1, 4, 4]}],
                            [{"id": 1, "name": "cat"}])}))
    report = detection(job)
    assert report["missing_images"] == [{"name": "gone.jpg", "reason": (
        "listed in c.json (image id 2, 1 box(es)) but not in the zip")}]
    assert report["unannotated_images"] == [{"name": "stray.png", "reason": (
        "no COCO file lists it: imported without boxes")}]
    project = ctx["base"].rsplit("/", 1)[1]
    voc = run_import(dataset_context(ctx["client"], project, "voc"), "v.zip", make_zip({
        "JPEGImages/a.png": image_bytes(BLUE), "Annotations/a.xml": voc_xml("a.png", []),
        "Annotations/x.xml": voc_xml("x.jpg", [("c", (1, 1, 2, 2))])}))
    assert detection(voc)["missing_images"] == [{"name": "x.jpg", "reason": (
        "described by Annotations/x.xml (1 object(s)) but not in the zip")}]
    yolo = run_import(dataset_context(ctx["client"], project, "yolo"),
                      "y.zip", make_zip({"images/train/a.png": image_bytes(GREEN),
                                         "labels/train/a.txt": "0 0.5 0.5 0.1 0.1\n",
                                         "labels/train/b.txt": "0 0.5 0.5 0.1 0.1\n"}))
    assert detection(yolo)["missing_images"] == [{"name": "labels/train/b.txt", "reason": (
        "a label file with no image of the same name (looked for it under images/ and beside "
        "the file)")}]


def test_duplicate_images_keep_their_boxes_once(ctx: dict[str, Any]) -> None:
    same = image_bytes(RED)
    job = run_import(ctx, "dup.zip", make_zip({
        "data.yaml": "names: [cat]\n",
        "images/a.png": same, "labels/a.txt": "0 0.5 0.5 0.5 0.5\n",
        "images/copy.png": same, "labels/copy.txt": "0 0.5 0.5 0.5 0.5\n"}))
    assert stored_boxes(ctx) == {"images/a.png": [("cat", 16.0, 12.0, 48.0, 36.0)]}
    assert job["report"]["duplicates"] == [{"name": "images/copy.png", "reason": (
        "same content as images/a.png; its 1 box(es) were not added again")}]
    assert detection(job)["boxes"] == 1



def test_an_image_that_cannot_be_read_is_rejected_with_the_count_of_its_boxes(
        ctx: dict[str, Any]) -> None:
    job = run_import(ctx, "broken.zip", make_zip({
        "data.yaml": "names: [cat]\n",
        "images/a.png": image_bytes(RED), "labels/a.txt": "0 0.5 0.5 0.5 0.5\n",
        "images/cut.png": image_bytes(RED)[:40],
        "labels/cut.txt": "0 0.5 0.5 0.5 0.5\n0 0.2 0.2 0.1 0.1\n"}))
    assert stored_boxes(ctx) == {"images/a.png": [("cat", 16.0, 12.0, 48.0, 36.0)]}
    (rejected,) = job["report"]["rejected"]
    assert rejected["name"] == "images/cut.png"
    assert rejected["reason"].endswith("; its 2 box(es) were not imported"), rejected
    assert detection(job)["boxes"] == 1

# ---------------------------------------------------------------------- refused, and safety

def test_a_class_folder_zip_is_refused_for_a_detection_dataset_naming_the_formats(
        ctx: dict[str, Any]) -> None:
    response = upload(ctx, "folders.zip", make_zip({
        "cat/1.png": image_bytes(RED), "dog/2.png": image_bytes(GREEN), "README.md": "hi"}))
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["field"] == "files"
    for words in ("folders.zip", "COCO", "Pascal VOC", "YOLO", "one folder per class"):
        assert words in error["message"]
    assert ImportJob.objects.count() == 0
    # a stray text file gets it past the upload's check of names; the import reads the content
    job = run_import(ctx, "folders.zip", make_zip({"cat/1.png": image_bytes(RED),
                                                   "notes.txt": "taken in May"}))
    assert job["status"] == "FAILED"
    assert "holds no annotation files" in job["error"] and "YOLO" in job["error"]
    assert Sample.objects.count() == 0 and ClassLabel.objects.count() == 0


def test_the_archive_safety_rules_apply_to_detection_zips(ctx: dict[str, Any]) -> None:
    response = upload(ctx, "evil.zip", make_zip({
        "images/a.png": image_bytes(RED), "labels/a.txt": "0 0.5 0.5 0.5 0.5",
        "../labels/b.txt": "0 0.5 0.5 0.5 0.5"}))
    assert response.status_code == 400
    assert "'../labels/b.txt': parent directory reference" in response.json()["error"]["message"]
    job = run_import(ctx, "junk.zip", make_zip({
        "images/a.png": image_bytes(RED), "labels/a.txt": "0 0.5 0.5 0.5 0.5",
        "__MACOSX/labels/._a.txt": "junk", "labels/.DS_Store": "junk"}))
    assert {i["name"] for i in job["report"]["ignored"]} == {"__MACOSX/labels/._a.txt",
                                                             "labels/.DS_Store"}
    assert stored_boxes(ctx) == {"images/a.png": [("0", 16.0, 12.0, 48.0, 36.0)]}


def test_an_annotation_file_over_its_size_limit_fails_before_it_is_parsed(
        ctx: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    from types import SimpleNamespace

    from sampan.datasets.formats import common, reader

    monkeypatch.setattr(common, "DEFAULT_LIMITS", common.AnnotationLimits(max_json_bytes=2000))
    parsed: list[Any] = []
    monkeypatch.setattr(reader, "json", SimpleNamespace(loads=lambda *a, **k: parsed.append(a)))
    big = coco_json([{"id": i, "file_name": f"{i}.png"} for i in range(100)], [],
                    [{"id": 1, "name": "cat"}])
    job = run_import(ctx, "big.zip", make_zip({"a.png": image_bytes(RED), "big.json": big}))
    assert job["status"] == "FAILED"
    assert job["error"] == (
        f"annotation file 'big.json' is {len(big)} bytes, larger than 2000 bytes, the limit for "
        "one annotation file of its kind; split it (one file per split folder) or upload fewer "
        "images per zip")
    assert parsed == [] and Sample.objects.count() == 0


def test_one_format_per_zip_the_others_files_are_listed_as_ignored(ctx: dict[str, Any]) -> None:
    job = run_import(ctx, "mixed.zip", make_zip({
        "a.png": image_bytes(RED),
        "a.json": coco_json([{"id": 1, "file_name": "a.png"}],
                            [{"id": 1, "image_id": 1, "category_id": 1, "bbox": [1, 1, 4, 4]}],
                            [{"id": 1, "name": "cat"}]),
        "a.xml": voc_xml("a.png", [("dog", (1, 1, 5, 5))]), "a.txt": "0 0.5 0.5 0.5 0.5",
        "other.json": '{"not": "coco"}'}))
    assert detection(job)["formats"] == ["coco"]
    assert stored_boxes(ctx) == {"a.png": [("cat", 1.0, 1.0, 5.0, 5.0)]}
    assert {i["name"]: i["reason"] for i in job["report"]["ignored"]} == {
        "a.xml": "annotations of another format: this zip was read as COCO",
        "a.txt": "annotations of another format: this zip was read as COCO",
        "other.json": "JSON that is not COCO instances (needs images, annotations and "
                      "categories lists)"}


# ------------------------------------------------------------------ plain images, EXIF

def test_plain_images_into_a_detection_dataset_import_unlabeled(ctx: dict[str, Any]) -> None:
    job = run_import(ctx, "photo.png", image_bytes(RED))
    assert job["status"] == "SUCCEEDED" and job["report"]["imported"] == 1
    assert "detection" not in job["report"]
    assert stored_boxes(ctx) == {"photo.png": []}
    response = upload(ctx, "photo2.png", image_bytes(GREEN), label="cat")
    assert response.status_code == 400 and response.json()["error"]["field"] == "label"


def test_boxes_of_an_exif_rotated_photo_turn_with_it(ctx: dict[str, Any]) -> None:
    # stored 80 x 40 with orientation 6 (rotate 90 degrees clockwise): upright 40 x 80. A box at
    # the stored top-left corner lands at the upright top-right corner.
    job = run_import(ctx, "rot.zip", make_zip({
        "rot.jpg": image_bytes(RED, (80, 40), "JPEG", orientation=6),
        "c.json": coco_json([{"id": 1, "file_name": "rot.jpg", "width": 80, "height": 40}],
                            [{"id": 1, "image_id": 1, "category_id": 1, "bbox": [0, 0, 20, 10]}],
                            [{"id": 1, "name": "cat"}])}))
    sample = Sample.objects.get()
    assert (sample.width, sample.height) == (40, 80)
    assert stored_boxes(ctx)["rot.jpg"] == [("cat", 30.0, 0.0, 40.0, 20.0)]
    assert detection(job)["warnings"] == []


def test_a_writer_that_used_the_upright_size_is_not_turned_twice(ctx: dict[str, Any]) -> None:
    run_import(ctx, "rot.zip", make_zip({
        "rot.jpg": image_bytes(RED, (80, 40), "JPEG", orientation=6),
        "c.json": coco_json([{"id": 1, "file_name": "rot.jpg", "width": 40, "height": 80}],
                            [{"id": 1, "image_id": 1, "category_id": 1, "bbox": [0, 0, 20, 10]}],
                            [{"id": 1, "name": "cat"}])}))
    assert stored_boxes(ctx)["rot.jpg"] == [("cat", 0.0, 0.0, 20.0, 10.0)]


def test_a_real_voc_file_from_deepforest_pairs_by_its_name_and_keeps_every_box(
        ctx: dict[str, Any]) -> None:
    # its <filename> is OSBS_029.tif; the zip holds OSBS_029.png (as DeepForest ships both)
    folder = Path(__file__).parents[2] / "fixtures" / "deepforest"
    job = run_import(ctx, "deepforest.zip", make_zip({
        "OSBS_029.png": image_bytes(GREY, (400, 400)),
        "OSBS_029.xml": (folder / "OSBS_029.xml").read_bytes()}))
    with open(folder / "OSBS_029.csv", newline="") as handle:
        expected = sorted(("Tree", float(r["xmin"]), float(r["ymin"]), float(r["xmax"]),
                           float(r["ymax"])) for r in csv.DictReader(handle))
    assert len(expected) == 61
    assert stored_boxes(ctx) == {"OSBS_029.png": expected}
    assert (detection(job)["formats"], detection(job)["skipped_annotations"]) == (["voc"], [])


def test_an_annotation_file_the_extractor_refused_fails_the_import_naming_it(
        ctx: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    from sampan.datasets import imports
    from sampan.datasets.archives import ArchiveLimits

    # the extractor's own per-file limit (64 MiB by default) stops a 200 MB JSON while it is
    # being decompressed: the import must fail, not go on without that file's boxes
    monkeypatch.setattr(imports, "_limits", lambda: ArchiveLimits(max_member_bytes=3000))
    big = coco_json([{"id": i, "file_name": f"{i}.png"} for i in range(100)], [],
                    [{"id": 1, "name": "cat"}])
    job = run_import(ctx, "big.zip", make_zip({"a.png": image_bytes(RED), "big.json": big}))
    assert job["status"] == "FAILED"
    assert job["error"] == ("annotation file 'big.json' cannot be read: larger than 3000 bytes, "
                            "the limit for one file")
    assert Sample.objects.count() == 0


def test_a_coco_json_that_cannot_be_read_is_named_with_its_problem(ctx: dict[str, Any]) -> None:
    """A trailing comma or a wrong type in the one annotation file: the import names that file
    and the parser's line and column (a new user's review: it said "no annotation files")."""
    good = coco_json([{"id": 1, "file_name": "q.png", "width": 64, "height": 48}],
                     [{"id": 1, "image_id": 1, "category_id": 1, "bbox": [1, 1, 10, 10]}],
                     [{"id": 1, "name": "cat"}])
    broken = good.rstrip()[:-1] + ",}"
    job = run_import(ctx, "comma.zip", make_zip({"q.png": image_bytes(RED), "ann.json": broken}))
    assert job["status"] == "FAILED"
    assert job["error"].startswith("no annotations could be read from this zip: ann.json: not "
                                   "readable JSON: Expecting property name enclosed in double "
                                   "quotes: line 1 column"), job["error"]
    assert "holds no annotation files" not in job["error"] and "COCO" in job["error"]
    job = run_import(ctx, "types.zip", make_zip({
        "q.png": image_bytes(RED),
        "ann.json": '{"images": "nope", "annotations": [], "categories": []}'}))
    assert job["status"] == "FAILED"
    assert "ann.json: JSON that is not COCO instances (needs images, annotations and " \
           "categories lists)" in job["error"]
    assert Sample.objects.count() == 0
