"""Dataset version exports (COCO, Pascal VOC, YOLO, ImageNet folders) through the REST API, and
the round trip import -> version -> export -> import that must lose nothing."""

from __future__ import annotations

import hashlib
import io
import json
import os
import zipfile
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from PIL import Image

from sampan.core import storage as shared_storage
from sampan.datasets.formats.zipstream import ZipStream
from sampan.datasets.models import DatasetVersion, Sample
from tests.fixtures.detection import (class_names, coco_json, dataset_context, image_bytes,
                                      make_zip, run_import, voc_xml)

pytestmark = pytest.mark.django_db

# (name, colour, stored size (w, h), EXIF orientation, boxes (class, x1, y1, x2, y2) in px of
# the stored pixels). Every image's first box is a cat, so the version has a test split; the
# last image is a background image (no objects: an image without annotations in COCO, a VOC
# XML without objects, an empty YOLO label file).
SOURCE = [
    (f"img{i:02d}", (20 * i, 255 - 15 * i, (37 * i) % 256), (64 + 4 * i, 48 + 2 * i), None,
     [("cat", 1 + i, 2.5, 20.25 + i, 30), *([("traffic light", 30, 10, 50.5, 40.75)] * (i % 2)),
      *([("6", 0, 0, 64, 48)] * (i % 3 == 0))])
    for i in range(11)
] + [("rotated", (250, 120, 10), (80, 40), 6, [("cat", 0, 0, 20, 10), ("dog", 60, 30, 80, 40)]),
     ("empty-road", (128, 128, 120), (70, 50), None, [])]
IMAGES = len(SOURCE)  # 13, one of them a background image


def source_zip(fmt: str) -> bytes:
    """SOURCE written as ``fmt`` tools write it (not by the exporter under test)."""
    files: dict[str, bytes | str] = {}
    kind = {None: "PNG", 6: "JPEG"}
    ext = {None: "png", 6: "jpg"}
    classes = ["cat", "traffic light", "6", "dog"]
    images, annotations = [], []
    for number, (name, colour, size, orientation, boxes) in enumerate(SOURCE, start=1):
        data = image_bytes(colour, size, kind[orientation], orientation=orientation)
        file_name = f"{name}.{ext[orientation]}"
        if fmt == "coco":
            files[f"train/{file_name}"] = data
            images.append({"id": number, "file_name": file_name, "width": size[0],
                           "height": size[1]})
            annotations += [{"id": len(annotations) + 1, "image_id": number,
                             "category_id": 10 + classes.index(c),
                             "bbox": [x1, y1, x2 - x1, y2 - y1]} for c, x1, y1, x2, y2 in boxes]
        elif fmt == "voc":
            files[f"JPEGImages/{file_name}"] = data
            files[f"Annotations/{name}.xml"] = voc_xml(
                file_name, [(c, (x1, y1, x2, y2)) for c, x1, y1, x2, y2 in boxes], size=size)
        else:
            files[f"images/train/{file_name}"] = data
            w, h = size
            files[f"labels/train/{name}.txt"] = "".join(
                f"{classes.index(c)} {(x1 + x2) / 2 / w} {(y1 + y2) / 2 / h} {(x2 - x1) / w} "
                f"{(y2 - y1) / h}\n" for c, x1, y1, x2, y2 in boxes)
    if fmt == "coco":
        files["train/_annotations.coco.json"] = coco_json(
            images, annotations, [{"id": 10 + i, "name": c} for i, c in enumerate(classes)])
    if fmt == "yolo":
        files["data.yaml"] = "names: " + json.dumps(classes) + "\n"
    return make_zip(files)


@pytest.fixture
def client(project_with_roles: dict[str, Any], api: Any) -> Any:
    return api(project_with_roles["editor"])


def freeze(ctx: dict[str, Any], **fractions: float) -> dict[str, Any]:
    response = ctx["client"].post(f"{ctx['base']}/datasets/{ctx['dataset']['id']}/versions/",
                                  {"val_fraction": 0.2, "test_fraction": 0.15, **fractions},
                                  format="json")
    assert response.status_code == 201, response.json()
    return response.json()


def export(ctx: dict[str, Any], version: dict[str, Any], query: str = "") -> Any:
    return ctx["client"].get(f"{ctx['base']}/dataset-versions/{version['id']}/export/{query}")


def download(response: Any) -> bytes:
    assert response.status_code == 200, response.content
    assert response.streaming and response["Content-Type"] == "application/zip"
    return b"".join(response.streaming_content)


def stored_sha256(sample: Sample) -> str:
    return hashlib.sha256(shared_storage.read_bytes(sample.file)).hexdigest()


def background_images(dataset_id: str) -> set[str]:
    """sha256 of the stored images checked "no objects"."""
    return {stored_sha256(s) for s in Sample.objects.filter(dataset_id=dataset_id,
                                                              no_objects=True)}


def boxes_by_image(dataset_id: str) -> dict[str, list[tuple[str, float, float, float, float]]]:
    """sha256 of the stored normalised image -> its boxes, sorted."""
    found = {}
    for sample in Sample.objects.filter(dataset_id=dataset_id).prefetch_related(
            "annotations__class_label"):
        found[stored_sha256(sample)] = sorted(
            (a.class_label.name, a.x1, a.y1, a.x2, a.y2) for a in sample.annotations.all())
    return found


@pytest.mark.parametrize("fmt", ["coco", "voc", "yolo"])
def test_import_export_import_loses_nothing(client: Any, project_with_roles: dict[str, Any],
                                            fmt: str) -> None:
    project = project_with_roles["project"].pk
    first = dataset_context(client, project, "first")
    job = run_import(first, f"source-{fmt}.zip", source_zip(fmt))
    assert job["report"]["detection"]["boxes"] == sum(len(s[4]) for s in SOURCE) == 22
    assert job["report"]["detection"]["background_images"] == 1
    version = freeze(first)
    assert set(version["stats"]["splits"]) == {"train", "val", "test"}
    # the background image is in the version, with no boxes, and counted as one
    assert sum(version["stats"]["splits"].values()) == IMAGES
    assert sum(version["stats"]["background_images"].values()) == 1

    response = export(first, version, f"?format={fmt}")
    data = download(response)
    assert response["Content-Disposition"] == f'attachment; filename="first-v1-{fmt}.zip"'
    again = dataset_context(client, project, "again")
    job = run_import(again, "export.zip", data)
    assert job["status"] == "SUCCEEDED", job["error"]
    report = job["report"]
    assert report["ignored"] == [] and report["rejected"] == []
    assert report["detection"]["skipped_annotations"] == []
    assert report["detection"]["source"]["labels"] == version["labels"]

    assert report["counts"]["imported"] == IMAGES  # count in == count out
    assert report["detection"]["background_images"] == 1
    before, after = boxes_by_image(first["dataset"]["id"]), boxes_by_image(again["dataset"]["id"])
    assert sorted(after) == sorted(before)  # the same stored images, byte for byte
    assert len(after) == IMAGES
    # the background image came back as one, with no box
    assert background_images(again["dataset"]["id"]) \
        == background_images(first["dataset"]["id"])
    (background,) = background_images(again["dataset"]["id"])
    assert after[background] == []
    assert class_names(again) == version["labels"] == class_names(first)
    for image, boxes in before.items():
        assert len(after[image]) == len(boxes), image
        for (name_a, *a), (name_b, *b) in zip(boxes, after[image], strict=True):
            assert name_a == name_b \
                and max(abs(x - y) for x, y in zip(a, b, strict=True)) <= 0.5, image
    # the version's split came along: every image has a cat but the background image, which
    # counts as "" (no class)
    assert {split: per.get("cat", 0) + per.get("", 0)
            for split, per in report["archive_splits"].items()} == version["stats"]["splits"]
    assert again_version_stats(again)["background_images"] == version["stats"][
        "background_images"]


def again_version_stats(ctx: dict[str, Any]) -> dict[str, Any]:
    """The stats of a version frozen from the re-imported dataset with the same seed and
    fractions."""
    return freeze(ctx)["stats"]


def test_the_layouts_are_the_ecosystems(client: Any, project_with_roles: dict[str, Any]) -> None:
    ctx = dataset_context(client, project_with_roles["project"].pk, "layouts")
    run_import(ctx, "s.zip", source_zip("coco"))
    version = freeze(ctx)
    names = {fmt: zipfile.ZipFile(io.BytesIO(download(export(ctx, version, f"?format={fmt}"))))
             .namelist() for fmt in ("coco", "voc", "yolo")}
    splits = version["stats"]["splits"]
    coco = names["coco"]
    assert {n for n in coco if n.endswith(".json")} == {
        "train/_annotations.coco.json", "valid/_annotations.coco.json",
        "test/_annotations.coco.json", "sampan.json"}
    assert sum(n.startswith("valid/") and n.endswith(".png") for n in coco) == splits["val"]
    voc = names["voc"]
    assert sum(n.startswith("JPEGImages/") for n in voc) == IMAGES
    assert sum(n.startswith("Annotations/") and n.endswith(".xml") for n in voc) == IMAGES
    assert {n for n in voc if n.startswith("ImageSets/")} == {
        "ImageSets/Main/train.txt", "ImageSets/Main/val.txt", "ImageSets/Main/test.txt"}
    yolo = names["yolo"]
    assert "data.yaml" in yolo
    for split in ("train", "val", "test"):
        assert sum(n.startswith(f"images/{split}/") for n in yolo) == splits[split]
        assert sum(n.startswith(f"labels/{split}/") for n in yolo) == splits[split]
    archive = zipfile.ZipFile(io.BytesIO(download(export(ctx, version, "?format=yolo"))))
    assert archive.read("data.yaml").decode() == (
        "path: .\ntrain: images/train\nval: images/val\ntest: images/test\nnc: 4\nnames:\n"
        "- cat\n- traffic light\n- '6'\n- dog\n")
    png = next(n for n in archive.namelist() if n.endswith(".png"))
    assert archive.getinfo(png).compress_type == zipfile.ZIP_STORED
    # an upright image without EXIF: the rotated photo is 40 x 80 in the export
    sizes = {Image.open(io.BytesIO(archive.read(n))).size for n in archive.namelist()
             if n.startswith("images/") and "rotated" in n}
    assert sizes == {(40, 80)}


def test_a_background_image_is_written_as_each_format_writes_one(
        client: Any, project_with_roles: dict[str, Any]) -> None:
    ctx = dataset_context(client, project_with_roles["project"].pk, "background")
    run_import(ctx, "s.zip", source_zip("yolo"))
    version = freeze(ctx)
    (split,) = [k for k, n in version["stats"]["background_images"].items() if n]

    yolo = zipfile.ZipFile(io.BytesIO(download(export(ctx, version, "?format=yolo"))))
    (label,) = [n for n in yolo.namelist() if n.startswith("labels/") and "empty-road" in n]
    assert label.startswith(f"labels/{split}/") and yolo.read(label) == b""  # empty label file

    coco = zipfile.ZipFile(io.BytesIO(download(export(ctx, version, "?format=coco"))))
    folder = {"train": "train", "val": "valid", "test": "test"}[split]
    document = json.loads(coco.read(f"{folder}/_annotations.coco.json"))
    (image,) = [i for i in document["images"] if i["file_name"].startswith("empty-road")]
    assert (image["width"], image["height"]) == (70, 50)
    assert [a for a in document["annotations"] if a["image_id"] == image["id"]] == []

    voc = zipfile.ZipFile(io.BytesIO(download(export(ctx, version, "?format=voc"))))
    (xml,) = [n for n in voc.namelist() if n.startswith("Annotations/empty-road")]
    assert b"<object>" not in voc.read(xml) and b"<width>70</width>" in voc.read(xml)


def test_a_wrong_format_is_a_400_naming_format(client: Any,
                                               project_with_roles: dict[str, Any]) -> None:
    project = project_with_roles["project"].pk
    boxes = dataset_context(client, project, "boxes")
    run_import(boxes, "s.zip", source_zip("voc"))
    version = freeze(boxes)
    for query, message in [
            ("?format=imagenet", "format 'imagenet' does not fit this object_detection version: "
                                 "use coco or voc or yolo"),
            ("?format=pascal", 'format: "pascal" is not a valid choice.')]:
        response = export(boxes, version, query)
        assert response.status_code == 400
        assert response.json()["error"]["field"] == "format"
        assert response.json()["error"]["message"] == message
    assert zipfile.ZipFile(io.BytesIO(download(export(boxes, version)))).read(
        "train/_annotations.coco.json")  # no format: COCO for a detection version

    classes = dataset_context(client, project, "classes", "image_classification")
    run_import(classes, "c.zip", make_zip({"cat/a.png": image_bytes((1, 2, 3)),
                                           "dog/b.png": image_bytes((4, 5, 6))}))
    version = freeze(classes, test_fraction=0.0)
    response = export(classes, version, "?format=coco")
    assert response.status_code == 400 and response.json()["error"] == {
        "code": "invalid", "field": "format",
        "message": "format 'coco' does not fit this image_classification version: use imagenet"}


def test_project_members_can_export_others_cannot(api: Any, client: Any,
                                                  project_with_roles: dict[str, Any]) -> None:
    ctx = dataset_context(client, project_with_roles["project"].pk, "members")
    run_import(ctx, "s.zip", source_zip("yolo"))
    version = freeze(ctx)
    url = f"{ctx['base']}/dataset-versions/{version['id']}/export/?format=yolo"
    assert api(project_with_roles["viewer"]).get(url).status_code == 200
    assert api(project_with_roles["outsider"]).get(url).status_code == 404
    assert api().get(url).status_code == 401


def test_imagenet_folders_round_trip_a_classification_version(
        client: Any, project_with_roles: dict[str, Any]) -> None:
    project = project_with_roles["project"].pk
    first = dataset_context(client, project, "cls", "image_classification")
    run_import(first, "c.zip", make_zip({
        f"{label}/{i}.png": image_bytes((i * 20, n * 90, 7)) for n, label in
        enumerate(["猫", "dog", "6"]) for i in range(4)}))
    version = freeze(first, test_fraction=0.0)
    data = download(export(first, version, "?format=imagenet"))
    assert all(n.split("/")[0] in ("train", "val") for n in
               zipfile.ZipFile(io.BytesIO(data)).namelist())
    again = dataset_context(client, project, "cls-again", "image_classification")
    job = run_import(again, "e.zip", data)
    assert job["report"]["counts"] == {"imported": 12, "duplicates": 0, "ignored": 0,
                                       "rejected": 0}
    assert class_names(again) == class_names(first) == ["6", "dog", "猫"]

    def labels(dataset_id: str) -> dict[str, str]:
        return {stored_sha256(s): s.annotations.get().class_label.name
                for s in Sample.objects.filter(dataset_id=dataset_id)}
    assert labels(again["dataset"]["id"]) == labels(first["dataset"]["id"])
    assert {s: sum(p.values()) for s, p in job["report"]["archive_splits"].items()} \
        == version["stats"]["splits"]


def test_a_class_that_cannot_be_a_folder_is_named_in_the_400(
        client: Any, project_with_roles: dict[str, Any]) -> None:
    ctx = dataset_context(client, project_with_roles["project"].pk, "slash",
                          "image_classification")
    run_import(ctx, "a.png", image_bytes((1, 1, 1)))
    sample = Sample.objects.get()
    client.put(f"{ctx['base']}/samples/{sample.pk}/label/", {"class_label": "cats/dogs"},
               format="json")
    version = freeze(ctx, val_fraction=0.0, test_fraction=0.0)
    response = export(ctx, version, "?format=imagenet")
    assert response.status_code == 400 and response.json()["error"]["message"] == (
        "class 'cats/dogs' holds a path separator: it cannot be a folder of the imagenet layout")


def test_the_zip_streams_in_bounded_chunks_and_a_missing_image_is_named(
        client: Any, project_with_roles: dict[str, Any]) -> None:
    ctx = dataset_context(client, project_with_roles["project"].pk, "big")
    noise = Image.frombytes("RGB", (400, 400), os.urandom(400 * 400 * 3))
    buffer = io.BytesIO()
    noise.save(buffer, "PNG")
    run_import(ctx, "n.zip", make_zip({
        "images/noise.png": buffer.getvalue(), "labels/noise.txt": "0 0.5 0.5 0.5 0.5\n",
        "images/small.png": image_bytes((9, 9, 9)), "labels/small.txt": "0 0.5 0.5 0.5 0.5\n",
        "data.yaml": "names: [thing]\n"}))
    version = freeze(ctx, val_fraction=0.0, test_fraction=0.0)
    chunks = list(export(ctx, version, "?format=coco").streaming_content)
    assert len(buffer.getvalue()) > 400_000 and len(chunks) > 3
    assert max(len(c) for c in chunks) <= 256 * 1024 + 1024
    small = Sample.objects.get(original_name="images/small.png")
    shared_storage.delete(small.file)
    archive = zipfile.ZipFile(io.BytesIO(download(export(ctx, version, "?format=coco"))))
    assert archive.read("MISSING_IMAGES.txt").decode().endswith("\nimages/small.png\n")
    assert json.loads(archive.read("sampan.json"))["missing_images"] == ["images/small.png"]
    document = json.loads(archive.read("train/_annotations.coco.json"))
    assert [i["file_name"] for i in document["images"]] == [
        n.split("/")[1] for n in archive.namelist() if n.endswith(".png")]
    assert len(document["annotations"]) == 1


def test_under_asgi_the_chunks_are_sent_as_they_are_made(client: Any,
                                                         project_with_roles: dict[str, Any]
                                                         ) -> None:
    from django.core.handlers.asgi import ASGIRequest

    from sampan.datasets.exports import dataset_version_export, zip_download

    ctx = dataset_context(client, project_with_roles["project"].pk, "asgi")
    run_import(ctx, "s.zip", source_zip("yolo"))
    version = DatasetVersion.objects.get(pk=freeze(ctx)["id"])
    request = ASGIRequest({"type": "http", "method": "GET", "path": "/x", "headers": [],
                           "query_string": b""}, io.BytesIO())
    response = zip_download(request, dataset_version_export(version=version,
                                                            export_format="voc"))
    # an async iterator: Django would otherwise gather a synchronous one whole before sending
    assert response.is_async

    async def collect() -> list[bytes]:
        return [chunk async for chunk in response.streaming_content]

    chunks = async_to_sync(collect)()
    assert len(chunks) > 10
    assert len(zipfile.ZipFile(io.BytesIO(b"".join(chunks))).namelist()) == IMAGES * 2 + 3 + 1


def test_the_zip_stream_is_a_valid_zip_with_stored_images_and_deflated_text() -> None:
    stream = ZipStream()
    chunks = [*stream.add_file("images/a.png", io.BytesIO(b"\x89PNG" * 100_000), size=400_000),
              *stream.add_bytes("data.yaml", b"names: [a]\n" * 100), *stream.close()]
    archive = zipfile.ZipFile(io.BytesIO(b"".join(chunks)))
    assert archive.testzip() is None
    assert [(i.filename, i.compress_type) for i in archive.infolist()] == [
        ("images/a.png", zipfile.ZIP_STORED), ("data.yaml", zipfile.ZIP_DEFLATED)]
    assert max(len(c) for c in chunks) < 300_000
