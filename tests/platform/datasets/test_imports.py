"""Imports through the REST API, with the inputs that broke other platforms."""

from __future__ import annotations

import io
import struct
import zipfile
from pathlib import Path
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from PIL import Image

from sampan.datasets.models import ImportJob, Sample
from sampan.datasets.imports import import_job_run
from sampan.datasets.storage import sample_local_file
from tests.fixtures import images
from tests.fixtures.zips import RawEntry, raw_zip

pytestmark = pytest.mark.django_db


def make_zip(entries: dict[str, bytes], *, symlinks: tuple[str, ...] = ()) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in entries.items():
            archive.writestr(name, data)
        for name in symlinks:
            info = zipfile.ZipInfo(name)
            info.external_attr = (0o120777 << 16)
            archive.writestr(info, "/etc/passwd")
    return buffer.getvalue()


@pytest.fixture
def ctx(project_with_roles: dict[str, Any], api: Any) -> dict[str, Any]:
    client = api(project_with_roles["editor"])
    project = project_with_roles["project"]
    base = f"/api/v1/projects/{project.pk}"
    dataset = client.post(f"{base}/datasets/", {"name": "d"}, format="json").json()
    return {"client": client, "base": base, "dataset": dataset}


def upload(ctx: dict[str, Any], name: str, data: bytes, **extra: str) -> Any:
    return ctx["client"].post(f"{ctx['base']}/datasets/{ctx['dataset']['id']}/imports/",
                              {"files": [SimpleUploadedFile(name, data)], **extra},
                              format="multipart")


def run_import(ctx: dict[str, Any], name: str, data: bytes, **extra: str) -> dict[str, Any]:
    response = upload(ctx, name, data, **extra)
    assert response.status_code == 202, response.json()
    import_job_run(job_id=response.json()["id"])  # the Celery task body, run here
    return ctx["client"].get(f"{ctx['base']}/imports/{response.json()['id']}/").json()


def test_macos_zip_junk_is_ignored_and_counted_never_a_class(ctx: dict[str, Any]) -> None:
    png = images.png_bytes()
    job = run_import(ctx, "mac.zip", make_zip({
        "cats/a.png": png,
        "dogs/b.png": images.png_bytes((1, 2, 3)),
        "__MACOSX/cats/._a.png": b"\x00\x05\x16\x07junk",
        "cats/._a.png": b"\x00\x05\x16\x07junk",
        ".DS_Store": b"junk",
        "cats/.DS_Store": b"junk",
        ".ipynb_checkpoints/x-checkpoint.png": png,
    }))
    assert job["status"] == "SUCCEEDED"
    assert job["report"]["counts"] == {"imported": 2, "duplicates": 0, "ignored": 5,
                                       "rejected": 0}
    dataset = ctx["client"].get(f"{ctx['base']}/datasets/{ctx['dataset']['id']}/").json()
    assert [c["name"] for c in dataset["class_labels"]] == ["cats", "dogs"]


@pytest.mark.parametrize("bad", ["../../x.png", "/abs/x.png", "cats/../../x.png"])
def test_path_traversal_rejects_the_whole_archive_naming_the_entry(ctx: dict[str, Any],
                                                                   bad: str, tmp_path: Path
                                                                   ) -> None:
    response = upload(ctx, "evil.zip", make_zip({"cats/a.png": images.png_bytes(),
                                                  bad: images.png_bytes()}))
    assert response.status_code == 400
    assert bad in response.json()["error"]["message"]
    assert ImportJob.objects.count() == 0 and Sample.objects.count() == 0
    assert not (tmp_path / "x.png").exists()


def test_symlink_entry_rejects_the_archive(ctx: dict[str, Any]) -> None:
    response = upload(ctx, "link.zip", make_zip({"cats/a.png": images.png_bytes()},
                                                symlinks=("cats/link.png",)))
    assert response.status_code == 400
    assert "cats/link.png" in response.json()["error"]["message"]
    assert Sample.objects.count() == 0


def test_zip_bomb_is_stopped_while_extracting_and_cleaned_up(ctx: dict[str, Any],
                                                             settings: Any) -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        with archive.open("zeros/bomb.png", "w") as member:
            chunk = b"\x00" * (1024 * 1024)
            for _ in range(200):
                member.write(chunk)
        archive.writestr("zeros/ok.png", images.png_bytes())
    data = buffer.getvalue()
    assert len(data) < 400 * 1024  # 200 MiB of zeros in a few hundred KB
    job = run_import(ctx, "bomb.zip", data)
    assert job["status"] == "FAILED"
    assert "bomb.png" in job["error"]
    assert Sample.objects.count() == 0
    staging = Path(settings.DATA_DIR) / "staging"
    assert list(staging.iterdir()) == []  # temporary files removed


def test_exif_orientation_6_is_stored_upright(ctx: dict[str, Any]) -> None:
    job = run_import(ctx, "rot.zip", make_zip({"a/rot.jpg": images.jpeg_exif_orientation_6()}))
    assert job["report"]["counts"]["imported"] == 1
    sample = Sample.objects.get()
    assert (sample.width, sample.height) == (20, 40)
    with Image.open(sample_local_file(sample.file)) as stored:
        assert stored.size == (20, 40) and stored.mode == "RGB"


def test_colour_modes_become_8bit_rgb_and_transparency_goes_white(ctx: dict[str, Any]) -> None:
    palette = Image.new("P", (4, 4), 0)
    palette.putpalette([255, 0, 0] * 256)
    palette.info["transparency"] = 0
    buffer = io.BytesIO()
    palette.save(buffer, "PNG", transparency=0)
    job = run_import(ctx, "modes.zip", make_zip({
        "m/cmyk.jpg": images.cmyk_jpeg(), "m/rgba.png": images.rgba_png(),
        "m/palette.png": buffer.getvalue(),
        "m/gray.png": images.png_bytes((77, 77, 77), mode="L")}))
    assert job["report"]["counts"]["imported"] == 4
    pixels = {}
    for sample in Sample.objects.all():
        with Image.open(sample_local_file(sample.file)) as stored:
            assert stored.mode == "RGB"
            pixels[sample.original_name] = stored.getpixel((1, 1))
    assert pixels["m/rgba.png"] == (255, 255, 255)
    assert pixels["m/palette.png"] == (255, 255, 255)
    assert pixels["m/gray.png"] == (77, 77, 77)


def test_truncated_jpeg_is_rejected_by_name_and_the_rest_imports(ctx: dict[str, Any]) -> None:
    job = run_import(ctx, "t.zip", make_zip({"a/ok.png": images.png_bytes(),
                                             "a/broken.jpg": images.truncated_jpeg()}))
    assert job["status"] == "SUCCEEDED"
    assert job["report"]["counts"]["imported"] == 1
    assert [r["name"] for r in job["report"]["rejected"]] == ["a/broken.jpg"]
    assert "truncated" in job["report"]["rejected"][0]["reason"].lower()


def test_a_zip_entry_with_a_bad_crc_is_rejected_by_name_and_the_rest_imports(
        ctx: dict[str, Any]) -> None:
    data = bytearray(make_zip({"c/0.png": images.png_bytes((1, 0, 0)),
                               "c/1.png": images.png_bytes((2, 0, 0)),
                               "c/2.png": images.png_bytes((3, 0, 0))}))
    # flip one byte inside the first entry's compressed data
    start = data.index(b"PK\x03\x04")
    name_len, extra_len = struct.unpack_from("<HH", data, start + 26)
    data[start + 30 + name_len + extra_len + 20] ^= 0xFF
    job = run_import(ctx, "crc.zip", bytes(data))
    assert job["status"] == "SUCCEEDED", job
    assert job["report"]["counts"]["imported"] == 2
    (rejected,) = job["report"]["rejected"]
    assert rejected["name"] == "c/0.png"
    assert rejected["reason"].startswith("damaged in the zip: ")  # a broken stream or bad CRC


def test_labels_are_normalised_and_ordered(ctx: dict[str, Any]) -> None:
    colours = iter(range(1, 50))
    entries = {f"{folder}/{i}.png": images.png_bytes((next(colours), 0, 0))
               for folder in ("10", "2", "1", "Cat", "Cat ", "Cafe\u0301") for i in range(2)}
    job = run_import(ctx, "labels.zip", make_zip(entries))
    assert job["report"]["counts"]["imported"] == 12
    dataset = ctx["client"].get(f"{ctx['base']}/datasets/{ctx['dataset']['id']}/").json()
    assert [c["name"] for c in dataset["class_labels"]] == ["1", "2", "10", "Café", "Cat"]
    assert [c["position"] for c in dataset["class_labels"]] == [0, 1, 2, 3, 4]


def test_loose_files_import_with_the_given_label(ctx: dict[str, Any]) -> None:
    job = run_import(ctx, "photo.png", images.png_bytes(), label=" dog ")
    assert job["report"]["counts"]["imported"] == 1
    sample = ctx["client"].get(
        f"{ctx['base']}/datasets/{ctx['dataset']['id']}/samples/").json()["results"][0]
    assert sample["original_name"] == "photo.png"
    assert [a["class_label"] for a in sample["annotations"]] == ["dog"]


def test_duplicate_content_is_stored_once(ctx: dict[str, Any]) -> None:
    png = images.png_bytes()
    job = run_import(ctx, "dup.zip", make_zip({"a/1.png": png, "a/2.png": png}))
    assert job["report"]["counts"]["imported"] == 1
    assert job["report"]["counts"]["duplicates"] == 1


@pytest.mark.parametrize("body", [[None, None], "upload_id", 7])
def test_a_json_body_that_is_not_an_object_is_a_400(ctx: dict[str, Any], body: Any) -> None:
    response = ctx["client"].post(f"{ctx['base']}/datasets/{ctx['dataset']['id']}/imports/",
                                  body, format="json")
    assert response.status_code == 400
    assert response.json()["error"]["field"] == "upload_id"


def test_not_a_zip_is_a_clear_400(ctx: dict[str, Any]) -> None:
    response = upload(ctx, "fake.zip", b"this is not a zip")
    assert response.status_code == 400
    assert "fake.zip" in response.json()["error"]["message"]


def test_a_class_whose_files_are_all_rejected_leaves_no_empty_class(ctx: dict[str, Any]) -> None:
    job = run_import(ctx, "mixed.zip", make_zip({"good/a.png": images.png_bytes(),
                                                 "junk/readme.txt": b"not an image",
                                                 "junk/fake.png": b"not a png either"}))
    assert job["report"]["counts"]["rejected"] == 1
    assert job["report"]["ignored"] == [{"name": "junk/readme.txt",
                                         "reason": "documentation or text file, not an image"}]
    dataset = ctx["client"].get(f"{ctx['base']}/datasets/{ctx['dataset']['id']}/").json()
    assert [c["name"] for c in dataset["class_labels"]] == ["good"]


@pytest.mark.parametrize("folder, reason", [("a" * 201, "at most 200"),
                                            ("ctl\x01", "contains U+0001 (a control character) "
                                                        "at position 3"),
                                            ("bidi\u202e", "U+202E RIGHT-TO-LEFT OVERRIDE")])
def test_bad_class_folder_names_reject_the_archive(ctx: dict[str, Any], folder: str,
                                                   reason: str) -> None:
    response = upload(ctx, "names.zip", make_zip({f"{folder}/a.png": images.png_bytes()}))
    assert response.status_code == 400 and reason in response.json()["error"]["message"]


def test_the_same_bytes_imported_twice_at_once_are_duplicates_not_a_failure(
        ctx: dict[str, Any]) -> None:
    from sampan.datasets import imports

    data = make_zip({"a/1.png": images.png_bytes()})
    first = upload(ctx, "one.zip", data).json()
    second = upload(ctx, "two.zip", data).json()
    real = imports.storage.store_normalised_image
    raced = {"done": False}

    def racing(image: Any, digest: str) -> str:
        # the other import stores the same content between our duplicate check and our insert
        if not raced["done"]:
            raced["done"] = True
            import_job_run(job_id=first["id"])
        return real(image, digest)

    imports.storage.store_normalised_image = racing
    try:
        import_job_run(job_id=second["id"])
    finally:
        imports.storage.store_normalised_image = real
    assert raced["done"]
    report = ctx["client"].get(f"{ctx['base']}/imports/{second['id']}/").json()
    assert report["status"] == "SUCCEEDED"
    assert report["report"]["counts"] == {"imported": 0, "duplicates": 1, "ignored": 0,
                                          "rejected": 0}
    assert Sample.objects.count() == 1


def test_an_empty_loose_file_is_rejected_by_name_and_the_others_import(
        ctx: dict[str, Any]) -> None:
    files = [SimpleUploadedFile("a.png", images.png_bytes((1, 2, 3))),
             SimpleUploadedFile("empty.png", b""),
             SimpleUploadedFile("b.png", images.png_bytes((3, 2, 1)))]
    response = ctx["client"].post(f"{ctx['base']}/datasets/{ctx['dataset']['id']}/imports/",
                                  {"files": files, "label": "x"}, format="multipart")
    assert response.status_code == 202, response.json()
    import_job_run(job_id=response.json()["id"])
    job = ctx["client"].get(f"{ctx['base']}/imports/{response.json()['id']}/").json()
    assert job["report"]["counts"]["imported"] == 2
    assert job["report"]["rejected"] == [{"name": "empty.png", "reason": "empty file"}]


# ---------------------------------------------------------------- zips as people make them

def class_names(ctx: dict[str, Any]) -> list[str]:
    dataset = ctx["client"].get(f"{ctx['base']}/datasets/{ctx['dataset']['id']}/").json()
    return [c["name"] for c in dataset["class_labels"]]


def test_a_zip_from_chinese_windows_gives_classes_in_chinese(ctx: dict[str, Any]) -> None:
    data = raw_zip([RawEntry("猫/1.png".encode("gbk"), images.png_bytes((1, 0, 0))),
                    RawEntry("狗/2.png".encode("gbk"), images.png_bytes((2, 0, 0)))])
    job = run_import(ctx, "宠物.zip", data)
    assert job["status"] == "SUCCEEDED" and job["report"]["counts"]["imported"] == 2
    assert class_names(ctx) == ["狗", "猫"]
    names = set(Sample.objects.values_list("original_name", flat=True))
    assert names == {"猫/1.png", "狗/2.png"}


def test_a_zip_from_macos_gives_one_nfc_class(ctx: dict[str, Any]) -> None:
    data = raw_zip([RawEntry("Cafe\u0301/1.png".encode("utf-8"), images.png_bytes((1, 0, 0))),
                    RawEntry("Cafe\u0301/2.png".encode("utf-8"), images.png_bytes((2, 0, 0)))])
    job = run_import(ctx, "mac.zip", data)
    assert job["report"]["counts"]["imported"] == 2
    assert class_names(ctx) == ["Caf\u00e9"]


def test_a_zip_from_powershell_compress_archive(ctx: dict[str, Any]) -> None:
    data = raw_zip([RawEntry(b"cats\\1.png", images.png_bytes((1, 0, 0))),
                    RawEntry(b"dogs\\2.png", images.png_bytes((2, 0, 0)))])
    job = run_import(ctx, "ps.zip", data)
    assert job["report"]["counts"]["imported"] == 2
    assert class_names(ctx) == ["cats", "dogs"]


def test_a_powershell_zip_climbing_out_is_refused_before_anything_is_queued(
        ctx: dict[str, Any]) -> None:
    data = raw_zip([RawEntry(b"cats\\1.png", images.png_bytes()),
                    RawEntry(b"cats\\..\\..\\evil.png", images.png_bytes((9, 9, 9)))])
    response = upload(ctx, "ps.zip", data)
    assert response.status_code == 400
    assert response.json()["error"] == {
        "code": "invalid", "field": "files",
        "message": "ps.zip: unsafe entry 'cats/../../evil.png': parent directory reference; "
                   "archive rejected"}
    assert ImportJob.objects.count() == 0


def test_a_folder_structure_export_keeps_its_split_and_ignores_readmes(ctx: dict[str, Any]
                                                                        ) -> None:
    colours = iter(range(1, 50))
    data = make_zip({
        "README.dataset.txt": b"Exported from Roboflow", "README.roboflow.txt": b"readme",
        **{f"train/{c}/{i}.png": images.png_bytes((next(colours), 0, 0))
           for c in ("cat", "dog") for i in range(3)},
        "valid/cat/a.png": images.png_bytes((100, 0, 0)),
        "test/dog/b.png": images.png_bytes((101, 0, 0)),
        "test/c.png": images.png_bytes((102, 0, 0)),
    })
    job = run_import(ctx, "roboflow.zip", data)
    assert job["status"] == "SUCCEEDED"
    assert class_names(ctx) == ["cat", "dog"]
    report = job["report"]
    assert report["counts"] == {"imported": 9, "duplicates": 0, "ignored": 2, "rejected": 0}
    assert [i["name"] for i in report["ignored"]] == ["README.dataset.txt", "README.roboflow.txt"]
    assert report["archive_splits"] == {"train": {"cat": 3, "dog": 3}, "val": {"cat": 1},
                                        "test": {"dog": 1, "": 1}}


def test_file_names_with_control_characters_are_stored_displayable(ctx: dict[str, Any]) -> None:
    job = run_import(ctx, "c.zip", make_zip({"cats/evil\u202egnp.png": images.png_bytes()}))
    assert job["report"]["counts"]["imported"] == 1
    assert Sample.objects.get().original_name == "cats/evil\ufffdgnp.png"


def test_the_job_heartbeats_while_its_archive_is_extracted(ctx: dict[str, Any],
                                                           monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    """Extraction comes before the first image: a large archive took longer than the reaper's
    heartbeat timeout and the job was reaped as "worker lost" mid-import. The job now reports
    while it extracts, before any image is imported."""
    from sampan.datasets import imports

    seen: list[str] = []
    report = imports.job_report_progress

    def recorded(model: Any, pk: Any, progress: dict[str, Any]) -> bool:
        seen.append(str(progress.get("message", "")))
        return report(model, pk, progress)

    monkeypatch.setattr(imports, "job_report_progress", recorded)
    monkeypatch.setattr(imports, "EXTRACT_HEARTBEAT_S", 0.0)
    entries = {f"cat/{i}.png": images.png_bytes((i * 30, 0, 0)) for i in range(5)}
    job = run_import(ctx, "d.zip", make_zip(entries))
    assert job["status"] == "SUCCEEDED" and job["report"]["imported"] == 5
    extracting = [m for m in seen if m.startswith("extracting the archive")]
    assert extracting[-1] == "extracting the archive: 5 of 5 files" and len(extracting) == 5
    assert seen.index(extracting[-1]) < next(i for i, m in enumerate(seen)
                                             if not m.startswith("extracting"))
