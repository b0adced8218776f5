"""Tests for sampan.datasets.archives (pure module: runs with ``-p no:django``)."""

from __future__ import annotations

import re
import stat
import shutil
import struct
import warnings
import zipfile
from pathlib import Path

import pytest

from sampan.datasets.archives import (
    ArchiveError,
    ArchiveLimits,
    extract_archive,
    normalise_label,
    plan_archive,
    sort_labels,
)
from tests.fixtures.zips import RawEntry, raw_zip, unicode_path_extra

MiB = 1024 * 1024


def make_zip(path: Path, entries: list[tuple[str | zipfile.ZipInfo, bytes]]) -> Path:
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, data in entries:
            archive.writestr(name, data)
    return path


def summary(scan) -> list[tuple[str, str | None, str, bytes]]:
    return [(m.path_in_zip, m.label, m.name, m.local_path.read_bytes()) for m in scan.members]


def leftovers(dest: Path) -> list[Path]:
    return sorted(dest.rglob("*"))


def test_class_folders_and_root_files(tmp_path: Path) -> None:
    zip_path = make_zip(tmp_path / "a.zip", [
        ("cat/1.jpg", b"c1"), ("dog/2.PNG", b"d2"), ("loose.jpg", b"r"), ("cat/", b""),
    ])
    dest = tmp_path / "dest"
    dest.mkdir()
    scan = extract_archive(zip_path, dest)
    assert summary(scan) == [
        ("cat/1.jpg", "cat", "cat/1.jpg", b"c1"),
        ("dog/2.PNG", "dog", "dog/2.PNG", b"d2"),
        ("loose.jpg", None, "loose.jpg", b"r"),
    ]
    # Local names are generated; nothing from the archive names reaches the disk.
    assert [m.local_path.name for m in scan.members] == ["000001.jpg", "000002.png", "000003.jpg"]
    assert [m.size for m in scan.members] == [2, 2, 1]
    assert scan.directory.parent == dest
    assert scan.ignored == []
    assert scan.labels == ["cat", "dog"]


def test_single_top_folder_is_stripped(tmp_path: Path) -> None:
    zip_path = make_zip(tmp_path / "a.zip", [
        ("dataset/cat/1.jpg", b"1"), ("dataset/dog/2.jpg", b"2"), ("dataset/readme.jpg", b"3"),
    ])
    members, ignored = plan_archive(zipfile.ZipFile(zip_path))
    assert [(m.name, m.label) for m in members] == [
        ("cat/1.jpg", "cat"), ("dog/2.jpg", "dog"), ("readme.jpg", None),
    ]
    assert ignored == []


def test_single_folder_of_files_is_one_class(tmp_path: Path) -> None:
    zip_path = make_zip(tmp_path / "a.zip", [("cat/1.jpg", b"1"), ("cat/2.jpg", b"2")])
    members, _ = plan_archive(zipfile.ZipFile(zip_path))
    assert [(m.name, m.label) for m in members] == [("cat/1.jpg", "cat"), ("cat/2.jpg", "cat")]


def test_two_top_entries_are_not_stripped(tmp_path: Path) -> None:
    zip_path = make_zip(tmp_path / "a.zip", [("a/cat/1.jpg", b"1"), ("b/dog/2.jpg", b"2")])
    members, _ = plan_archive(zipfile.ZipFile(zip_path))
    assert [m.label for m in members] == ["a", "b"]


def test_nested_folders_first_level_is_the_class(tmp_path: Path) -> None:
    zip_path = make_zip(tmp_path / "a.zip", [
        ("cat/indoor/night/1.jpg", b"1"), ("dog/2.jpg", b"2"),
    ])
    members, _ = plan_archive(zipfile.ZipFile(zip_path))
    assert [(m.name, m.label) for m in members] == [
        ("cat/indoor/night/1.jpg", "cat"), ("dog/2.jpg", "dog"),
    ]


def test_macos_and_jupyter_junk_is_ignored_and_counted(tmp_path: Path) -> None:
    zip_path = make_zip(tmp_path / "a.zip", [
        ("dataset/cat/1.jpg", b"1"),
        ("__MACOSX/dataset/cat/._1.jpg", b"x"),
        ("__MACOSX/", b""),
        ("dataset/cat/._1.jpg", b"x"),
        ("dataset/.DS_Store", b"x"),
        ("dataset/dog/.ipynb_checkpoints/2-checkpoint.jpg", b"x"),
        ("dataset/dog/Thumbs.db", b"x"),
        ("dataset/.hidden/3.jpg", b"x"),
        ("dataset/dog/.secret", b"x"),
        ("dataset/dog/2.jpg", b"2"),
    ])
    dest = tmp_path / "dest"
    dest.mkdir()
    scan = extract_archive(zip_path, dest)
    assert [(m.name, m.label) for m in scan.members] == [("cat/1.jpg", "cat"), ("dog/2.jpg", "dog")]
    assert scan.ignored == [
        ("__MACOSX/dataset/cat/._1.jpg", "macOS resource fork"),
        ("dataset/cat/._1.jpg", "AppleDouble file"),
        ("dataset/.DS_Store", "macOS folder metadata"),
        ("dataset/dog/.ipynb_checkpoints/2-checkpoint.jpg", "Jupyter checkpoint"),
        ("dataset/dog/Thumbs.db", "Windows thumbnail cache"),
        ("dataset/.hidden/3.jpg", "hidden file"),
        ("dataset/dog/.secret", "hidden file"),
    ]
    assert scan.labels == ["cat", "dog"]
    assert len(list(scan.directory.iterdir())) == 2


@pytest.mark.parametrize("bad", [
    "../../x.jpg",
    "cat/../../x.jpg",
    "/abs/x.jpg",
    "C:\\x.jpg",
    "C:/x.jpg",
    "cat\\..\\..\\x.jpg",
    "cat//x.jpg",
    "./cat/x.jpg",
])
def test_unsafe_names_reject_the_whole_archive(tmp_path: Path, bad: str) -> None:
    zip_path = make_zip(tmp_path / "a.zip", [("cat/ok.jpg", b"ok"), (zipfile.ZipInfo(bad), b"x")])
    dest = tmp_path / "dest"
    dest.mkdir()
    with pytest.raises(ArchiveError) as error:
        extract_archive(zip_path, dest)
    assert repr(bad.replace("\\", "/")) in str(error.value)  # named as normalised
    assert "archive rejected" in str(error.value)
    assert isinstance(error.value, ValueError)
    assert leftovers(dest) == []


def test_symlink_entry_rejects_the_whole_archive(tmp_path: Path) -> None:
    link = zipfile.ZipInfo("cat/link.jpg")
    link.create_system = 3
    link.external_attr = (stat.S_IFLNK | 0o777) << 16
    zip_path = make_zip(tmp_path / "a.zip", [("cat/ok.jpg", b"ok"), (link, b"/etc/passwd")])
    dest = tmp_path / "dest"
    dest.mkdir()
    with pytest.raises(ArchiveError, match=r"'cat/link.jpg': symbolic link"):
        extract_archive(zip_path, dest)
    assert leftovers(dest) == []


def test_encrypted_and_duplicate_entries_are_rejected(tmp_path: Path) -> None:
    zip_path = make_zip(tmp_path / "a.zip", [("cat/locked.jpg", b"x")])
    raw = bytearray(zip_path.read_bytes())  # zipfile cannot write encrypted entries: set bit 0
    raw[raw.index(b"PK\x03\x04") + 6] |= 0x1
    raw[raw.index(b"PK\x01\x02") + 8] |= 0x1
    zip_path.write_bytes(bytes(raw))
    with pytest.raises(ArchiveError, match=r"'cat/locked.jpg': encrypted entry"):
        plan_archive(zipfile.ZipFile(zip_path))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile warns "Duplicate name"
        zip_path = make_zip(tmp_path / "b.zip", [("cat/1.jpg", b"1"), ("cat/1.jpg", b"2")])
    with pytest.raises(ArchiveError, match=r"duplicate entry 'cat/1.jpg'"):
        plan_archive(zipfile.ZipFile(zip_path))


def test_too_many_entries(tmp_path: Path) -> None:
    zip_path = make_zip(tmp_path / "a.zip", [(f"cat/{i}.jpg", b"x") for i in range(5)])
    with pytest.raises(ArchiveError, match=r"too many entries: 5 \(limit 4\)"):
        plan_archive(zipfile.ZipFile(zip_path), ArchiveLimits(max_members=4))


@pytest.fixture(scope="module")
def bomb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """200 MiB of zeros deflated to about 200 KB, after one small good member."""
    path = tmp_path_factory.mktemp("bomb") / "bomb.zip"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("cat/ok.jpg", b"ok")
        with archive.open("cat/zeros.bmp", "w", force_zip64=True) as sink:
            block = bytes(MiB)
            for _ in range(200):
                sink.write(block)
    return path


def _assert_bomb_stopped(bomb: Path, tmp_path: Path, limits: ArchiveLimits, message: str) -> None:
    dest = tmp_path / "dest"
    dest.mkdir()
    with pytest.raises(ArchiveError, match=message):
        extract_archive(bomb, dest, limits=limits)
    assert leftovers(dest) == []


def test_bomb_fixture_is_a_bomb(bomb: Path) -> None:
    assert bomb.stat().st_size < 1 * MiB
    assert zipfile.ZipFile(bomb).getinfo("cat/zeros.bmp").file_size == 200 * MiB


def test_zip_bomb_stopped_by_compression_ratio(bomb: Path, tmp_path: Path) -> None:
    _assert_bomb_stopped(bomb, tmp_path, ArchiveLimits(),
                         r"'cat/zeros.bmp' compression ratio above 100 \(possible zip bomb\)")


def test_a_member_over_the_cap_is_rejected_by_name_and_the_others_extracted(
        bomb: Path, tmp_path: Path) -> None:
    # one 2 GB file in a zip of good images failed the whole import (and cost its upload)
    dest = tmp_path / "dest"
    dest.mkdir()
    scan = extract_archive(bomb, dest, limits=ArchiveLimits(max_ratio=1e9))
    assert scan.rejected == [("cat/zeros.bmp",
                              "larger than 67108864 bytes, the limit for one file")]
    assert [m.path_in_zip for m in scan.members] == ["cat/ok.jpg"]
    assert [p.name for p in scan.directory.iterdir()] == ["000001.jpg"]  # nothing of the bomb
    shutil.rmtree(scan.directory)


def test_many_small_members_are_stopped_by_the_archive_wide_ratio(tmp_path: Path) -> None:
    # each member is 1 MiB of zeros (under the per-member ratio threshold); together 100x+
    path = tmp_path / "many.zip"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for i in range(40):
            archive.writestr(f"cats/{i:04d}.png", bytes(MiB))
    assert path.stat().st_size < 100 * 1024
    _assert_bomb_stopped(path, tmp_path, ArchiveLimits(archive_ratio_min_bytes=8 * MiB),
                         r"archive expands to more than 100 times its size \(at entry "
                         r"'cats/0008.png'; possible zip bomb\)")


def test_zip_bomb_stopped_by_total_quota(bomb: Path, tmp_path: Path) -> None:
    limits = ArchiveLimits(max_ratio=1e9, max_member_bytes=1024 * MiB, max_total_bytes=50 * MiB)
    _assert_bomb_stopped(bomb, tmp_path, limits,
                         r"expands to more than 52428800 bytes \(at entry 'cat/zeros.bmp'\)")


def test_total_quota_counts_across_members(tmp_path: Path) -> None:
    zip_path = make_zip(tmp_path / "a.zip", [(f"cat/{i}.jpg", bytes(400)) for i in range(3)])
    limits = ArchiveLimits(max_total_bytes=1000)
    _assert_bomb_stopped(zip_path, tmp_path, limits,
                         r"expands to more than 1000 bytes \(at entry 'cat/2.jpg'\)")


def test_lying_size_header_is_not_trusted(tmp_path: Path) -> None:
    """Headers claim 1,000 bytes for 5 MiB: the real bytes disagree and the entry is rejected
    (nothing of it kept), the other entries are extracted."""
    zip_path = make_zip(tmp_path / "a.zip", [("cat/zeros.bmp", bytes(5 * MiB)),
                                             ("cat/fine.png", b"png bytes")])
    raw = bytearray(zip_path.read_bytes())
    local = raw.index(b"PK\x03\x04")
    central = raw.index(b"PK\x01\x02")
    assert struct.unpack_from("<I", raw, local + 22)[0] == 5 * MiB
    struct.pack_into("<I", raw, local + 22, 1000)
    struct.pack_into("<I", raw, central + 24, 1000)
    zip_path.write_bytes(bytes(raw))
    assert zipfile.ZipFile(zip_path).getinfo("cat/zeros.bmp").file_size == 1000
    dest = tmp_path / "dest"
    dest.mkdir()
    scan = extract_archive(zip_path, dest)
    assert scan.rejected == [("cat/zeros.bmp", "damaged in the zip: Bad CRC-32 for file "
                                               "'cat/zeros.bmp'")]
    assert [(m.path_in_zip, m.local_path.read_bytes()) for m in scan.members] == [
        ("cat/fine.png", b"png bytes")]
    assert sorted(p.name for p in scan.directory.iterdir()) == ["000002.png"]
    shutil.rmtree(scan.directory)


def test_not_a_zip(tmp_path: Path) -> None:
    path = tmp_path / "a.zip"
    path.write_bytes(b"not a zip at all")
    _assert_bomb_stopped(path, tmp_path, ArchiveLimits(), r"not a readable zip archive")


def test_labels_are_normalised(tmp_path: Path) -> None:
    zip_path = make_zip(tmp_path / "a.zip", [
        ("Cat /1.jpg", b"1"), ("Cat/2.jpg", b"2"), (" Cat\t/3.jpg", b"3"),
        ("Cafe\u0301/4.jpg", b"4"), ("Caf\u00e9/5.jpg", b"5"),
    ])
    members, _ = plan_archive(zipfile.ZipFile(zip_path))
    assert [m.label for m in members] == ["Cat", "Cat", "Cat", "Caf\u00e9", "Caf\u00e9"]
    assert members[3].name == "Caf\u00e9/4.jpg"
    assert sort_labels(m.label for m in members if m.label) == ["Caf\u00e9", "Cat"]


def test_blank_class_name_is_rejected(tmp_path: Path) -> None:
    zip_path = make_zip(tmp_path / "a.zip", [("cat/1.jpg", b"1"), ("  /2.jpg", b"2")])
    with pytest.raises(ArchiveError, match=r"entry '  /2.jpg': empty class name"):
        plan_archive(zipfile.ZipFile(zip_path))


def test_normalise_label() -> None:
    assert normalise_label("Cat ") == "Cat"
    assert normalise_label("\u00a0Cat\n") == "Cat"
    assert normalise_label("Cafe\u0301") == "Caf\u00e9"
    assert normalise_label("10") == "10"
    assert normalise_label("cat") == "cat"
    with pytest.raises(ValueError, match="empty class name"):
        normalise_label(" \t")


def test_numeric_folder_names_keep_string_labels(tmp_path: Path) -> None:
    zip_path = make_zip(tmp_path / "a.zip", [
        ("10/a.png", b"a"), ("2/b.png", b"b"), ("1/c.png", b"c"), ("Cat/d.png", b"d"),
    ])
    dest = tmp_path / "dest"
    dest.mkdir()
    scan = extract_archive(zip_path, dest)
    assert [m.label for m in scan.members] == ["10", "2", "1", "Cat"]
    assert scan.labels == ["1", "2", "10", "Cat"]


def test_sort_labels_natural_order() -> None:
    assert sort_labels(["10", "Cat", "2", "1"]) == ["1", "2", "10", "Cat"]
    assert sort_labels(["img10", "img2", "img1", "Img3"]) == ["img1", "img2", "Img3", "img10"]
    assert sort_labels(["cat", "Cat", "01", "1", "dog", "cat"]) == ["01", "1", "Cat", "cat", "dog"]
    assert sort_labels([]) == []


# ---------------------------------------------------------------- zips as people make them

def plan_raw(tmp_path: Path, entries: list[RawEntry]) -> tuple[list, list]:
    path = tmp_path / "raw.zip"
    path.write_bytes(raw_zip(entries))
    return plan_archive(zipfile.ZipFile(path))


def test_chinese_windows_gbk_folder_names_without_the_utf8_flag(tmp_path: Path) -> None:
    """Windows' built-in zip on Chinese Windows writes CP936 (GBK) names and no flag."""
    entries = [RawEntry("猫/1.jpg".encode("gbk"), b"c"), RawEntry("狗/2.jpg".encode("gbk"), b"d"),
               RawEntry("猫/".encode("gbk")), RawEntry(b"readme.jpg", b"r")]
    path = tmp_path / "gbk.zip"
    path.write_bytes(raw_zip(entries))
    raw = zipfile.ZipFile(path)
    assert not any(info.flag_bits & 0x800 for info in raw.infolist())
    assert raw.namelist()[0] == "\u251c\u00bf/1.jpg"  # what zipfile reads: cp437 mojibake
    dest = tmp_path / "dest"
    dest.mkdir()

    scan = extract_archive(path, dest)

    assert [(m.path_in_zip, m.label, m.name) for m in scan.members] == [
        ("猫/1.jpg", "猫", "猫/1.jpg"), ("狗/2.jpg", "狗", "狗/2.jpg"),
        ("readme.jpg", None, "readme.jpg")]
    assert scan.labels == ["狗", "猫"]
    assert [m.local_path.read_bytes() for m in scan.members] == [b"c", b"d", b"r"]


def test_one_encoding_for_the_whole_archive(tmp_path: Path) -> None:
    """\u732b alone in GBK (C3 A8) is also valid UTF-8 ("\u00e8"): the other names decide."""
    assert "猫".encode("gbk").decode("utf-8") == "\u00e8"
    members, _ = plan_raw(tmp_path, [RawEntry("猫/1.jpg".encode("gbk"), b"1"),
                                     RawEntry("小狗/2.jpg".encode("gbk"), b"2")])
    assert [m.label for m in members] == ["猫", "小狗"]


def test_the_info_zip_unicode_path_field_names_the_entry(tmp_path: Path) -> None:
    legacy = "猫/1.jpg".encode("gbk")
    members, _ = plan_raw(tmp_path, [
        RawEntry(legacy, b"1", extra=unicode_path_extra(legacy, "猫/1.jpg")),
        # a field whose CRC does not match the stored name is stale and ignored
        RawEntry(b"dog/2.jpg", b"2", extra=unicode_path_extra(b"other", "cat/2.jpg")),
    ])
    assert [m.label for m in members] == ["猫", "dog"]


def test_western_windows_cp437_names_stay_cp437(tmp_path: Path) -> None:
    members, _ = plan_raw(tmp_path, [RawEntry("Café/1.jpg".encode("cp437"), b"1"),
                                     RawEntry("Niño/2.jpg".encode("cp437"), b"2")])
    assert [m.label for m in members] == ["Café", "Niño"]


def test_macos_nfd_utf8_names_without_the_flag_are_one_nfc_class(tmp_path: Path) -> None:
    """macOS Archive Utility: UTF-8 in decomposed form (NFD), no flag."""
    nfd = "Cafe\u0301"
    members, _ = plan_raw(tmp_path, [RawEntry(f"{nfd}/1.jpg".encode(), b"1"),
                                     RawEntry("Café/2.jpg".encode(), b"2", flags=0x800)])
    assert [m.label for m in members] == ["Caf\u00e9", "Caf\u00e9"]
    assert members[0].name == "Caf\u00e9/1.jpg"


def test_powershell_backslash_separators_are_folders(tmp_path: Path) -> None:
    """PowerShell 5.1 Compress-Archive writes ``cats\\1.jpg``."""
    members, _ = plan_raw(tmp_path, [RawEntry(b"pets\\cats\\1.jpg", b"1"),
                                     RawEntry(b"pets\\dogs\\2.jpg", b"2"),
                                     RawEntry(b"pets\\dogs\\Thumbs.db", b"x")])
    assert [(m.path_in_zip, m.name, m.label) for m in members] == [
        ("pets/cats/1.jpg", "cats/1.jpg", "cats"), ("pets/dogs/2.jpg", "dogs/2.jpg", "dogs")]


@pytest.mark.parametrize("bad, reason", [
    (b"cats\\..\\..\\evil.jpg", "parent directory reference"),
    (b"..\\evil.jpg", "parent directory reference"),
    (b"C:\\Windows\\evil.jpg", "absolute path"),
    (b"\\\\server\\share\\evil.jpg", "absolute path"),
    (b"\\evil.jpg", "absolute path"),
    (b"cats\\\\evil.jpg", "empty path component"),
])
def test_backslash_paths_are_checked_after_normalisation(tmp_path: Path, bad: bytes,
                                                          reason: str) -> None:
    path = tmp_path / "ps.zip"
    path.write_bytes(raw_zip([RawEntry(b"cats\\ok.jpg", b"ok"), RawEntry(bad, b"x")]))
    dest = tmp_path / "dest"
    dest.mkdir()
    with pytest.raises(ArchiveError) as error:
        extract_archive(path, dest)
    shown = bad.decode("ascii").replace("\\", "/")
    assert str(error.value) == f"unsafe entry {shown!r}: {reason}; archive rejected"
    assert leftovers(dest) == []


def test_names_that_collide_after_normalisation_are_duplicates(tmp_path: Path) -> None:
    with pytest.raises(ArchiveError, match=r"duplicate entry 'cats/1.jpg'"):
        plan_raw(tmp_path, [RawEntry(b"cats/1.jpg", b"1"), RawEntry(b"cats\\1.jpg", b"2")])


def test_a_nul_in_a_name_rejects_the_archive(tmp_path: Path) -> None:
    with pytest.raises(ArchiveError, match=r"NUL character in name"):
        plan_raw(tmp_path, [RawEntry(b"cats/1.jpg\x00../../x", b"1")])


def test_folder_structure_export_with_splits_and_readmes(tmp_path: Path) -> None:
    """Roboflow's "folder structure" export: README files, then train/valid/test/<class>/."""
    zip_path = make_zip(tmp_path / "a.zip", [
        ("README.dataset.txt", b"readme"), ("README.roboflow.txt", b"readme"),
        ("LICENSE", b"CC BY 4.0"),
        ("train/cat/1.jpg", b"1"), ("train/dog/2.jpg", b"2"), ("train/", b""),
        ("valid/cat/3.jpg", b"3"), ("test/dog/4.jpg", b"4"), ("Test/cat/5.jpg", b"5"),
        ("train/6.jpg", b"6"),
    ])
    dest = tmp_path / "dest"
    dest.mkdir()

    scan = extract_archive(zip_path, dest)

    assert [(m.name, m.label, m.split) for m in scan.members] == [
        ("train/cat/1.jpg", "cat", "train"), ("train/dog/2.jpg", "dog", "train"),
        ("valid/cat/3.jpg", "cat", "val"), ("test/dog/4.jpg", "dog", "test"),
        ("Test/cat/5.jpg", "cat", "test"), ("train/6.jpg", None, "train"),
    ]
    assert scan.labels == ["cat", "dog"]
    reason = "documentation or text file, not an image"
    assert scan.ignored == [("README.dataset.txt", reason), ("README.roboflow.txt", reason),
                            ("LICENSE", reason)]


def test_split_folders_inside_one_top_folder_and_val_spelling(tmp_path: Path) -> None:
    zip_path = make_zip(tmp_path / "a.zip", [
        ("flowers.v2i.folder/README.md", b"r"),
        ("flowers.v2i.folder/train/rose/1.jpg", b"1"),
        ("flowers.v2i.folder/val/tulip/2.jpg", b"2"),
        ("flowers.v2i.folder/validation/rose/3.jpg", b"3"),
    ])
    members, ignored = plan_archive(zipfile.ZipFile(zip_path))
    assert [(m.label, m.split) for m in members] == [("rose", "train"), ("tulip", "val"),
                                                     ("rose", "val")]
    assert ignored == [("flowers.v2i.folder/README.md",
                        "documentation or text file, not an image")]


def test_a_single_split_folder_is_a_split_not_a_folder_to_strip(tmp_path: Path) -> None:
    zip_path = make_zip(tmp_path / "a.zip", [("train/cat/1.jpg", b"1"), ("train/dog/2.jpg", b"2")])
    members, _ = plan_archive(zipfile.ZipFile(zip_path))
    assert [(m.label, m.split) for m in members] == [("cat", "train"), ("dog", "train")]


def test_classes_named_like_splits_stay_classes_without_sub_folders(tmp_path: Path) -> None:
    zip_path = make_zip(tmp_path / "a.zip", [("train/1.jpg", b"1"), ("test/2.jpg", b"2")])
    members, _ = plan_archive(zipfile.ZipFile(zip_path))
    assert [(m.label, m.split) for m in members] == [("train", None), ("test", None)]


def test_a_split_folder_beside_a_class_folder_is_not_the_split_layout(tmp_path: Path) -> None:
    zip_path = make_zip(tmp_path / "a.zip", [("train/cat/1.jpg", b"1"), ("dog/2.jpg", b"2")])
    members, _ = plan_archive(zipfile.ZipFile(zip_path))
    assert [(m.label, m.split) for m in members] == [("train", None), ("dog", None)]


@pytest.mark.parametrize("folder, message", [
    ("bad\u202ename", "U+202E RIGHT-TO-LEFT OVERRIDE (a format character) at position 3"),
    ("zero\u200bwidth", "U+200B ZERO WIDTH SPACE (a format character)"),
    ("tab\tinside", "U+0009 (a control character) at position 3"),
])
def test_class_folder_names_follow_the_name_rule(tmp_path: Path, folder: str,
                                                 message: str) -> None:
    zip_path = make_zip(tmp_path / "a.zip", [(f"{folder}/1.jpg", b"1")])
    with pytest.raises(ArchiveError, match=re.escape(message)):
        plan_archive(zipfile.ZipFile(zip_path))


def test_joiners_that_scripts_need_are_kept_in_class_names(tmp_path: Path) -> None:
    persian = "\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645"
    zip_path = make_zip(tmp_path / "a.zip", [(f"{persian}/1.jpg", b"1")])
    members, _ = plan_archive(zipfile.ZipFile(zip_path))
    assert members[0].label == persian


def test_a_name_flagged_utf8_that_is_not_utf8_is_an_unreadable_archive(tmp_path: Path) -> None:
    path = tmp_path / "lying.zip"
    path.write_bytes(raw_zip([RawEntry("猫/1.jpg".encode("gbk") + b"\xff", b"1", flags=0x800)]))
    dest = tmp_path / "dest"
    dest.mkdir()
    with pytest.raises(ArchiveError, match=r"^not a readable zip archive: 'utf-8' codec"):
        extract_archive(path, dest)
    assert leftovers(dest) == []


def test_a_zip_of_too_many_entries_is_refused_from_its_end_record_in_little_memory(
        tmp_path: Path) -> None:
    """zipfile.ZipFile reads the whole central directory (~500 bytes an entry) before any limit
    can be checked: the entry count and directory size come from the end record first. 120,000
    empty entries are refused with the limit named, using under 1 MB (ZipFile took 66 MB)."""
    import tracemalloc

    from sampan.datasets.archives import ArchiveError, ArchiveLimits, open_archive

    path = tmp_path / "many.zip"
    with zipfile.ZipFile(path, "w") as archive:
        for i in range(120_000):
            archive.writestr(f"{i}", b"")
    tracemalloc.start()
    try:
        with pytest.raises(ArchiveError, match=r"too many entries: 120000 \(limit 100000\)"):
            open_archive(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1_000_000, peak
    with pytest.raises(ArchiveError, match="central directory is .* bytes"):
        open_archive(path, ArchiveLimits(max_members=200_000, max_directory_bytes=1_000_000))


def test_an_end_record_claiming_millions_of_entries_is_refused_naming_the_count(
        tmp_path: Path) -> None:
    """98 bytes of zip64 end records that claim 5,000,000 entries: refused by count."""
    from sampan.datasets.archives import ArchiveError, open_archive

    record = b"PK\x06\x06" + struct.pack("<QHHIIQQQQ", 44, 45, 45, 0, 0, 5_000_000, 5_000_000,
                                         400_000_000, 0)
    locator = b"PK\x06\x07" + struct.pack("<IQI", 0, 0, 1)
    end = b"PK\x05\x06" + struct.pack("<HHHHIIH", 0, 0, 0xFFFF, 0xFFFF, 0xFFFFFFFF,
                                      0xFFFFFFFF, 0)
    path = tmp_path / "claims.zip"
    path.write_bytes(record + locator + end)
    with pytest.raises(ArchiveError, match=r"too many entries: 5000000"):
        open_archive(path)
    (tmp_path / "not.zip").write_bytes(b"just text")
    with pytest.raises(ArchiveError, match="not a readable zip archive"):
        open_archive(tmp_path / "not.zip")


def test_an_end_record_that_understates_its_entries_is_refused_by_counting_them(
        tmp_path: Path) -> None:
    """ZipFile reads the directory by its size, not by the count the end record states: a zip
    of 50 entries whose end record says 1 was read whole (a million entries cost a gigabyte of
    the web process's memory). The headers are counted, and refused past the limit."""
    from sampan.datasets.archives import ArchiveError, ArchiveLimits, open_archive

    path = tmp_path / "understated.zip"
    with zipfile.ZipFile(path, "w") as archive:
        for i in range(50):
            archive.writestr(f"cls/{i}.png", b"")
    data = bytearray(path.read_bytes())
    end = data.rfind(b"PK\x05\x06")
    data[end + 8:end + 12] = struct.pack("<HH", 1, 1)  # entries on this disk, in all: "1"
    path.write_bytes(bytes(data))
    limits = ArchiveLimits(max_members=10)
    with pytest.raises(ArchiveError, match=r"more than 10 in its central directory \(its end "
                                           r"record says 1\)"):
        open_archive(path, limits)
    with zipfile.ZipFile(path) as archive:  # what the count protects against: all 50 read
        assert len(archive.infolist()) == 50
    assert len(open_archive(path, ArchiveLimits(max_members=50)).infolist()) == 50
