"""Detection metrics: COCO mAP with pycocotools, per-class AP, precision-recall curves, the
serving threshold, and the error list of the error browser (numpy + pycocotools; no torch).

Definitions are COCO's (https://cocodataset.org/#detection-eval, pycocotools ``COCOeval``):
AP is the area under the interpolated precision-recall curve sampled at 101 recall points;
``map50`` is the mean over classes of AP at IoU 0.5, ``map`` the mean over IoU 0.50:0.05:0.95.
A class with no ground-truth box in the split has no AP (-1 in pycocotools) and is left out of
the means (listed with ``ap50: None``). Up to ``MAX_DETECTIONS`` detections per image count.

The error list (at the serving threshold, IoU 0.5; each prediction matched greedily by score
to the unmatched true box it overlaps most, as COCO does):
``false_positive`` (overlaps no true box by IoU >= 0.5), ``wrong_class`` (overlaps a true box
of another class that no prediction of the right class found), ``missed`` (a true box no
prediction found). A duplicate of an object already found is a ``false_positive``.
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Sequence
from typing import Any

import numpy as np

from edge_agent.detection import box_iou

__all__ = ["MAX_DETECTIONS", "ImageResult", "detection_report", "best_f1_threshold"]

MAX_DETECTIONS = 100
#: errors listed in a report at most (the rest are counted)
MAX_ERRORS = 500


class ImageResult:
    """One image: ``true`` (K, 4) xyxy px + ``true_classes`` (K,); ``boxes`` (D, 4),
    ``scores`` (D,), ``classes`` (D,) predicted (all above the evaluation's low threshold)."""

    def __init__(self, sample_id: str, width: int, height: int, true: np.ndarray,
                 true_classes: np.ndarray, boxes: np.ndarray, scores: np.ndarray,
                 classes: np.ndarray) -> None:
        self.sample_id = sample_id
        self.width, self.height = width, height
        self.true = np.asarray(true, dtype=np.float64).reshape(-1, 4)
        self.true_classes = np.asarray(true_classes, dtype=np.int64).reshape(-1)
        order = np.argsort(-np.asarray(scores, dtype=np.float64), kind="stable")
        self.boxes = np.asarray(boxes, dtype=np.float64).reshape(-1, 4)[order]
        self.scores = np.asarray(scores, dtype=np.float64).reshape(-1)[order]
        self.classes = np.asarray(classes, dtype=np.int64).reshape(-1)[order]


def _coco(results: Sequence[ImageResult], num_classes: int) -> Any:
    """A finished ``COCOeval`` (evaluate + accumulate) of ``results``; None without true boxes
    or without predictions."""
    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval

    images: list[dict[str, Any]] = []
    annotations: list[dict[str, Any]] = []
    detections: list[dict[str, Any]] = []
    for image_id, result in enumerate(results, start=1):
        images.append({"id": image_id, "width": result.width, "height": result.height})
        for box, cls in zip(result.true, result.true_classes, strict=True):
            w, h = float(box[2] - box[0]), float(box[3] - box[1])
            annotations.append({"id": len(annotations) + 1, "image_id": image_id,
                                "category_id": int(cls) + 1, "iscrowd": 0, "area": w * h,
                                "bbox": [float(box[0]), float(box[1]), w, h]})
        for box, score, cls in list(zip(result.boxes, result.scores, result.classes,
                                        strict=True))[:MAX_DETECTIONS]:
            detections.append({"image_id": image_id, "category_id": int(cls) + 1,
                               "score": float(score),
                               "bbox": [float(box[0]), float(box[1]), float(box[2] - box[0]),
                                        float(box[3] - box[1])]})
    if not annotations or not detections:
        return None
    with contextlib.redirect_stdout(io.StringIO()):  # pycocotools prints its progress
        truth = COCO()
        truth.dataset = {"images": images, "annotations": annotations,
                         "categories": [{"id": k + 1, "name": str(k)}
                                        for k in range(num_classes)]}
        truth.createIndex()
        found = truth.loadRes(detections)
        evaluation = COCOeval(truth, found, "bbox")
        evaluation.params.maxDets = [1, 10, MAX_DETECTIONS]
        evaluation.evaluate()
        evaluation.accumulate()
    return evaluation


def _ap(precision: np.ndarray) -> float | None:
    valid = precision[precision > -1]
    return float(valid.mean()) if valid.size else None


def mean_ap(results: Sequence[ImageResult], num_classes: int) -> tuple[float, float]:
    """(mAP@0.5, mAP@0.5:0.95) over the classes with true boxes; (0, 0) when nothing is found."""
    evaluation = _coco(results, num_classes)
    if evaluation is None:
        return 0.0, 0.0
    precision = evaluation.eval["precision"][:, :, :, 0, -1]  # (T, R, K): all areas, max dets
    per_class50 = [_ap(precision[0, :, k]) for k in range(precision.shape[2])]
    per_class = [_ap(precision[:, :, k]) for k in range(precision.shape[2])]
    present = [k for k in range(num_classes) if _has_truth(results, k)]
    if not present:
        return 0.0, 0.0
    return (float(np.mean([per_class50[k] or 0.0 for k in present])),
            float(np.mean([per_class[k] or 0.0 for k in present])))


def _has_truth(results: Sequence[ImageResult], k: int) -> bool:
    return any((r.true_classes == k).any() for r in results)


def _match(result: ImageResult, threshold: float, iou: float = 0.5
           ) -> tuple[list[str], np.ndarray]:
    """Outcome per kept prediction ("tp" | "false_positive" | "wrong_class") and a mask of true
    boxes found by a prediction of their class."""
    kept = result.scores >= threshold
    boxes, classes = result.boxes[kept], result.classes[kept]
    found = np.zeros(len(result.true), dtype=bool)
    outcomes: list[str] = []
    overlaps = box_iou(boxes, result.true) if len(boxes) and len(result.true) else \
        np.zeros((len(boxes), len(result.true)))
    for i in range(len(boxes)):
        same = (result.true_classes == classes[i]) & ~found & (overlaps[i] >= iou)
        if same.any():
            j = int(np.argmax(np.where(same, overlaps[i], -1.0)))
            found[j] = True
            outcomes.append("tp")
        elif ((result.true_classes != classes[i]) & (overlaps[i] >= iou)).any():
            outcomes.append("wrong_class")
        else:
            outcomes.append("false_positive")
    return outcomes, found


def best_f1_threshold(results: Sequence[ImageResult], floor: float = 0.1,
                      ceiling: float = 0.9) -> tuple[float, float]:
    """(score threshold, F1 there) maximising the F1 of all classes together at IoU 0.5 over
    thresholds 0.05 apart within [floor, ceiling]: the device's default answer. Ties go to the
    higher threshold (fewer boxes to look at)."""
    best = (0.5, -1.0)
    steps = int(round((ceiling - floor) / 0.05))
    for threshold in (round(floor + 0.05 * i, 2) for i in range(steps + 1)):
        tp = fp = fn = 0
        for result in results:
            outcomes, found = _match(result, threshold)
            tp += outcomes.count("tp")
            fp += len(outcomes) - outcomes.count("tp")
            fn += int((~found).sum())
        f1 = 2 * tp / max(1, 2 * tp + fp + fn)
        if f1 >= best[1]:
            best = (threshold, f1)
    return best


def detection_report(results: Sequence[ImageResult], labels: Sequence[str], threshold: float,
                     split: str) -> dict[str, Any]:
    """The evaluation report of a detector on one split.

    Returns ``{"task": "object_detection", "split", "n" (images), "boxes" (true boxes),
    "map50", "map", "score_threshold", "precision", "recall", "f1" (all classes together at
    ``threshold``, IoU 0.5), "per_class": [{"label", "index", "ap50", "ap", "support" (true
    boxes), "precision", "recall"}], "pr_curves": [{"label", "index", "recall": [101 points
    0..1], "precision": [...]}] (IoU 0.5; COCO's interpolated precision, None where the class
    never reaches that recall), "errors": [{"sample_id", "kind", "box" [x1, y1, x2, y2] px,
    "label", "true_label", "score"}] (at most MAX_ERRORS, worst first: highest-scoring false
    detections, then missed objects), "error_counts": {kind: n}, "predictions": [{"sample_id",
    "boxes": [[x1, y1, x2, y2, class, score], ...]}] (at ``threshold``)}``.
    """
    num_classes = len(labels)
    evaluation = _coco(results, num_classes)
    per_class: list[dict[str, Any]] = []
    curves: list[dict[str, Any]] = []
    recall_points = np.linspace(0.0, 1.0, 101)
    precision = (evaluation.eval["precision"][:, :, :, 0, -1] if evaluation is not None
                 else None)
    totals = {"tp": 0, "fp": 0, "fn": 0}
    class_counts = {k: {"tp": 0, "fp": 0, "fn": 0} for k in range(num_classes)}
    errors: list[dict[str, Any]] = []
    predictions = []
    for result in results:
        outcomes, found = _match(result, threshold)
        kept = result.scores >= threshold
        boxes, scores, classes = result.boxes[kept], result.scores[kept], result.classes[kept]
        predictions.append({"sample_id": result.sample_id, "boxes": [
            [round(float(v), 2) for v in b] + [int(c), round(float(s), 4)]
            for b, s, c in zip(boxes, scores, classes, strict=True)]})
        for i, outcome in enumerate(outcomes):
            counts = class_counts[int(classes[i])]
            if outcome == "tp":
                counts["tp"] += 1
                continue
            counts["fp"] += 1
            true_label = None
            if outcome == "wrong_class":
                overlaps = box_iou(boxes[i:i + 1], result.true)[0]
                true_label = labels[int(result.true_classes[int(np.argmax(overlaps))])]
            errors.append({"sample_id": result.sample_id, "kind": outcome,
                           "box": [round(float(v), 2) for v in boxes[i]],
                           "label": labels[int(classes[i])], "true_label": true_label,
                           "score": round(float(scores[i]), 4)})
        for j in np.nonzero(~found)[0]:
            class_counts[int(result.true_classes[j])]["fn"] += 1
            errors.append({"sample_id": result.sample_id, "kind": "missed",
                           "box": [round(float(v), 2) for v in result.true[j]],
                           "label": None, "true_label": labels[int(result.true_classes[j])],
                           "score": None})
    for k, label in enumerate(labels):
        support = int(sum((r.true_classes == k).sum() for r in results))
        counts = class_counts[k]
        for key in totals:
            totals[key] += counts[key]
        ap50 = _ap(precision[0, :, k]) if precision is not None and support else None
        ap = _ap(precision[:, :, k]) if precision is not None and support else None
        if precision is None and support:
            ap50 = ap = 0.0
        per_class.append({"label": label, "index": k, "ap50": ap50, "ap": ap,
                          "support": support,
                          "precision": counts["tp"] / max(1, counts["tp"] + counts["fp"]),
                          "recall": counts["tp"] / max(1, counts["tp"] + counts["fn"])})
        if support:
            values = (precision[0, :, k] if precision is not None
                      else np.full(101, -1.0))
            curves.append({"label": label, "index": k,
                           "recall": [round(float(r), 2) for r in recall_points],
                           "precision": [round(float(p), 4) if p > -1 else None
                                         for p in values]})
    scored = [c for c in per_class if c["support"]]
    kinds = ("false_positive", "wrong_class", "missed")
    errors.sort(key=lambda e: (e["kind"] == "missed", -(e["score"] or 0.0)))
    tp, fp, fn = totals["tp"], totals["fp"], totals["fn"]
    return {
        "task": "object_detection", "split": split, "n": len(results),
        "boxes": int(sum(len(r.true) for r in results)),
        "map50": float(np.mean([c["ap50"] or 0.0 for c in scored])) if scored else 0.0,
        "map": float(np.mean([c["ap"] or 0.0 for c in scored])) if scored else 0.0,
        "score_threshold": threshold,
        "precision": tp / max(1, tp + fp), "recall": tp / max(1, tp + fn),
        "f1": 2 * tp / max(1, 2 * tp + fp + fn),
        "per_class": per_class, "pr_curves": curves,
        "errors": errors[:MAX_ERRORS],
        "error_counts": {kind: sum(1 for e in errors if e["kind"] == kind) for kind in kinds},
        "predictions": predictions,
    }
