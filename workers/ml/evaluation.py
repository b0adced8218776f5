"""Classification metrics for the evaluation report (numpy only).

Definitions follow scikit-learn's ``precision_recall_fscore_support`` and ``confusion_matrix``
(https://scikit-learn.org/stable/modules/model_evaluation.html#precision-recall-and-f-measures)
with ``zero_division=0``: for class k, with TP/FP/FN counted one-vs-rest,

    precision_k = TP / (TP + FP)      recall_k = TP / (TP + FN)
    F1_k = 2 * precision_k * recall_k / (precision_k + recall_k)

and any 0/0 is 0. ``macro_f1`` is the unweighted mean of F1_k over the classes that occur in
the split or in the predictions (sklearn ``average="macro"`` with its default ``labels``, the
union of ``y_true`` and ``y_pred``): a class left out of a test split on purpose (too few
samples) does not count as an F1 of 0, while a class predicted but absent still lowers it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["classification_report"]


def _safe_divide(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    out = np.zeros_like(numerator, dtype=np.float64)
    np.divide(numerator, denominator, out=out, where=denominator != 0)
    return out


def classification_report(
    y_true: Sequence[int],
    y_pred: Sequence[int],
    labels: Sequence[str],
    sample_ids: Sequence[str],
    probabilities: Sequence[float] | None = None,
) -> dict[str, Any]:
    """Evaluation report of a single-label classifier on one split.

    Args:
        y_true, y_pred: class indices (0..C-1), length N.
        labels: class label names in index order, length C.
        sample_ids: one id per sample, length N (used to list the misclassified samples).
        probabilities: optional, the predicted class's probability per sample (0..1), length N.

    Returns:
        ``{"n", "accuracy", "macro_f1", "per_class": [{"label", "index", "precision", "recall",
        "f1", "support"}], "confusion_matrix": C x C list (rows = true class, columns = predicted
        class, as sklearn), "misclassified": [{"sample_id", "true", "predicted", "probability"}]}``
        where ``true``/``predicted`` are label names and ``probability`` is None when not given.
        An empty split gives accuracy and macro_f1 0.0.

    Raises:
        ValueError: on lengths that differ or an index outside 0..C-1.
    """
    true = np.asarray(y_true, dtype=np.int64).reshape(-1)
    pred = np.asarray(y_pred, dtype=np.int64).reshape(-1)
    n_classes = len(labels)
    if len(true) != len(pred) or len(true) != len(sample_ids):
        raise ValueError("y_true, y_pred and sample_ids must have the same length")
    if probabilities is not None and len(probabilities) != len(true):
        raise ValueError("probabilities must have one value per sample")
    for name, values in (("y_true", true), ("y_pred", pred)):
        if values.size and (values.min() < 0 or values.max() >= n_classes):
            raise ValueError(f"{name} has a class index outside 0..{n_classes - 1}")

    confusion = np.zeros((n_classes, n_classes), dtype=np.int64)
    np.add.at(confusion, (true, pred), 1)
    tp = np.diag(confusion).astype(np.float64)
    support = confusion.sum(axis=1).astype(np.float64)  # row sums: samples of each true class
    predicted = confusion.sum(axis=0).astype(np.float64)  # column sums: predictions per class
    precision = _safe_divide(tp, predicted)
    recall = _safe_divide(tp, support)
    f1 = _safe_divide(2 * precision * recall, precision + recall)

    present = (support > 0) | (predicted > 0)
    misclassified = [
        {
            "sample_id": str(sample_ids[i]),
            "true": labels[int(true[i])],
            "predicted": labels[int(pred[i])],
            "probability": None if probabilities is None else float(probabilities[i]),
        }
        for i in map(int, np.flatnonzero(true != pred))
    ]
    n = int(len(true))
    return {
        "n": n,
        "accuracy": float(tp.sum() / n) if n else 0.0,
        "macro_f1": float(f1[present].mean()) if present.any() else 0.0,
        "classes_in_split": int((support > 0).sum()),
        "per_class": [
            {
                "label": labels[k],
                "index": k,
                "precision": float(precision[k]),
                "recall": float(recall[k]),
                "f1": float(f1[k]),
                "support": int(support[k]),
            }
            for k in range(n_classes)
        ],
        "confusion_matrix": confusion.tolist(),
        "misclassified": misclassified,
    }
