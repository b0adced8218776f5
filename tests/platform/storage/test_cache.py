"""The download cache of a host (files fetched from the bucket): least recently used files go
first once it holds more than SAMPAN_CACHE_MAX_BYTES, never what the running job uses."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from django.core.files.base import ContentFile

from sampan.core import storage


def _file(root: Path, name: str, size: int, mtime: float) -> Path:
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"x" * size)
    os.utime(path, (mtime, mtime))
    return path


def test_trims_least_recently_used_first_and_keeps_what_the_job_uses(tmp_path: Path) -> None:
    old = _file(tmp_path, "samples/aa/old.png", 400, 1_000)
    kept = _file(tmp_path, "samples/bb/in-use.png", 400, 2_000)
    middle = _file(tmp_path, "samples/cc/middle.png", 400, 3_000)
    new = _file(tmp_path, "packages/new.onnx", 400, 4_000)
    partial = _file(tmp_path, "samples/dd/.tmp-abc", 5_000, 500)  # a download in progress

    deleted, freed = storage.cache_trim(keep={kept}, max_bytes=900, root=tmp_path)

    assert (deleted, freed) == (2, 800)  # 1,600 bytes -> 800: old, then middle
    assert not old.exists() and not middle.exists()
    assert kept.exists() and new.exists() and partial.exists()


def test_under_the_limit_nothing_goes(tmp_path: Path) -> None:
    files = [_file(tmp_path, f"s/{i}.png", 100, 1_000 + i) for i in range(5)]
    assert storage.cache_trim(max_bytes=500, root=tmp_path) == (0, 0)
    assert all(f.exists() for f in files)
    assert storage.cache_trim(max_bytes=0, root=tmp_path / "missing") == (0, 0)


@pytest.mark.django_db
def test_a_cache_hit_counts_as_recent_use(s3: Any, settings: Any, tmp_path: Path) -> None:
    settings.DATA_DIR = tmp_path / "host"
    storage.files().save("samples/ab/one.png", ContentFile(b"1" * 300))
    storage.files().save("samples/cd/two.png", ContentFile(b"2" * 300))
    one = storage.local_file("samples/ab/one.png")  # downloaded
    two = storage.local_file("samples/cd/two.png")
    os.utime(one, (1_000, 1_000))
    os.utime(two, (2_000, 2_000))
    assert storage.local_file("samples/ab/one.png") == one  # a hit: now the most recent
    assert storage.cache_trim(max_bytes=300) == (1, 300)
    assert one.exists() and not two.exists()
    # evicted files come back from the bucket when needed again
    assert storage.local_file("samples/cd/two.png").read_bytes() == b"2" * 300

