"""ONNX export of a detector and the torch-vs-onnxruntime parity gate on its boxes.

The graph is :class:`workers.ml.detection.model.ExportedDetector` at a fixed input size (the
image is letterboxed to it, so any image size maps back exactly): input ``images`` (N, 3, S, S),
outputs ``boxes`` (N, A, 4) and ``scores`` (N, A, C). NMS is not in the graph: torch's exporter
cannot export torchvision's batched NMS with dynamo (a data-dependent guard), and the numpy NMS of
:mod:`edge_agent.detection` runs the same on the worker and the device.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime
import torch
from torch import nn

from edge_agent.detection import (INPUT_NAME, OUTPUT_NAMES, DetectionSettings, paired_box_iou,
                                  postprocess)

from ..export import _quiet

__all__ = ["PARITY_MIN_IOU", "PARITY_MAX_SCORE_DIFF", "Runner", "check_box_parity", "compare_boxes",
           "export_detector", "torch_runner"]

#: the export gate (issue 10): torch's and onnxruntime's boxes match with IoU >= 0.99 and their
#: scores within 1e-3 (compared cell by cell, :func:`check_box_parity`)
PARITY_MIN_IOU = 0.99
PARITY_MAX_SCORE_DIFF = 1e-3


def export_detector(graph: nn.Module, onnx_path: Path, input_size: int) -> dict[str, Any]:
    """Write ``graph`` (an ExportedDetector in eval mode) as one ONNX file with a dynamic batch.

    The TorchScript exporter (``dynamo=False``, opset 18), falling back to
    ``torch.onnx.export(dynamo=True)`` if it fails; the parity gate checks either. TorchScript
    is deprecated but took 1.4 s for the FCOS graph where dynamo took 15-34 s on a slow 2-core
    host, which broke the training budget (docs/decisions/detection.md, "Exporter").
    Returns ``{"exporter", "opset", "ir_version", "export_s", "fallback_reason"}``."""
    graph = graph.eval()
    example = torch.zeros(2, 3, input_size, input_size)  # 2: a size-1 dim is specialised
    started = time.monotonic()
    fallback_reason = None
    exporter = "torchscript"
    with torch.no_grad(), _quiet():
        try:
            torch.onnx.export(graph, (example,), str(onnx_path), dynamo=False, opset_version=18,
                              input_names=[INPUT_NAME], output_names=list(OUTPUT_NAMES),
                              dynamic_axes={INPUT_NAME: {0: "N"}, "boxes": {0: "N"},
                                            "scores": {0: "N"}})
        except Exception as error:  # any exporter failure: the fallback is checked by parity
            fallback_reason = f"{type(error).__name__}: {str(error)[:300]}"
            torch.onnx.export(graph, (example,), str(onnx_path), dynamo=True,
                              external_data=False, input_names=[INPUT_NAME],
                              output_names=list(OUTPUT_NAMES),
                              dynamic_shapes={"images": {0: torch.export.Dim("N")}},
                              verbose=False)
            exporter = "dynamo"
    proto = onnx.load(str(onnx_path), load_external_data=False)
    opset = next((o.version for o in proto.opset_import if o.domain in ("", "ai.onnx")), None)
    return {"exporter": exporter, "opset": opset, "ir_version": int(proto.ir_version),
            "export_s": round(time.monotonic() - started, 3), "fallback_reason": fallback_reason}


def onnx_session(onnx_path: Path, threads: int = 1) -> onnxruntime.InferenceSession:
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    return onnxruntime.InferenceSession(str(onnx_path), options,
                                        providers=["CPUExecutionProvider"])


def _cell_iou(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """IoU of the boxes of the same cells: ``a``, ``b`` (K, 4) -> (K,). Two boxes with equal
    corners (within 0.01 px) have IoU 1 even when they have no area (IoU is undefined there)."""
    return np.where(np.abs(a - b).max(axis=1) <= 0.01, 1.0, paired_box_iou(a, b))


#: a detector as the device calls it: a (1, 3, S, S) float32 batch in, (1, A, 4) boxes and
#: (1, A, C) scores out (numpy)
Runner = Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]


def compare_boxes(run: Runner, other: Runner, batches: list[np.ndarray],
                  settings: DetectionSettings, min_iou_limit: float = PARITY_MIN_IOU,
                  max_score_diff_limit: float = PARITY_MAX_SCORE_DIFF) -> dict[str, Any]:
    """Run two implementations of one detector on the same inputs (each (1, 3, S, S) float32)
    and compare their candidate boxes cell by cell (:func:`check_box_parity` says why cells
    and not detections). A candidate is a cell whose score for some class reaches
    ``settings.score_threshold`` on either side; it differs when its boxes' IoU is under
    ``min_iou_limit`` or a class score differs by more than ``max_score_diff_limit``.

    Returns ``{"passed", "images", "candidates", "differing", "min_iou", "max_score_diff",
    "worst_image" (index of the image with the most differing candidates, or None),
    "detections", "detections_onnx" (after the device's NMS: ``run``'s and ``other``'s),
    "min_iou_limit", "max_score_diff_limit", "score_threshold"}``."""
    threshold = settings.score_threshold
    min_iou, max_diff, differing, candidates = 1.0, 0.0, 0, 0
    detections = detections_other = 0
    worst, worst_count = None, 0
    for index, batch in enumerate(batches):
        boxes, scores = (t[0] for t in run(batch))
        other_boxes, other_scores = (t[0] for t in other(batch))
        cells = (scores.max(axis=1) >= threshold) | (other_scores.max(axis=1) >= threshold)
        candidates += int(cells.sum())
        if cells.any():
            iou = _cell_iou(boxes[cells].astype(np.float64),
                            other_boxes[cells].astype(np.float64))
            diff = np.abs(scores[cells] - other_scores[cells]).max(axis=1)
            min_iou = min(min_iou, float(iou.min()))
            max_diff = max(max_diff, float(diff.max()))
            bad = int(((iou < min_iou_limit) | (diff > max_score_diff_limit)).sum())
            differing += bad
            if bad > worst_count:
                worst, worst_count = index, bad
        detections += len(postprocess(boxes, scores, settings)[0])
        detections_other += len(postprocess(other_boxes, other_scores, settings)[0])
    return {"passed": differing == 0, "images": len(batches), "candidates": candidates,
            "differing": differing, "min_iou": round(min_iou, 6),
            "max_score_diff": float(f"{max_diff:.3g}"), "worst_image": worst,
            "detections": detections, "detections_onnx": detections_other,
            "min_iou_limit": min_iou_limit, "max_score_diff_limit": max_score_diff_limit,
            "score_threshold": threshold}


def torch_runner(graph: nn.Module, device: torch.device | None = None) -> Runner:
    """``graph`` (an :class:`~workers.ml.detection.model.ExportedDetector`, on ``device``,
    default the CPU) as a :data:`Runner`, without gradients."""
    @torch.no_grad()
    def run(batch: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        boxes, scores = graph(torch.from_numpy(batch).to(device or "cpu"))
        return boxes.cpu().numpy(), scores.cpu().numpy()
    return run


def check_box_parity(graph: nn.Module, onnx_path: Path, batches: list[np.ndarray],
                     settings: DetectionSettings) -> dict[str, Any]:
    """Run torch ``graph`` (on the CPU) and the ONNX file on the same inputs (each
    (1, 3, S, S) float32, the letterboxed validation images or their tiles) and compare their
    candidate boxes (:func:`compare_boxes`).

    A candidate is a cell whose score for some class reaches ``settings.score_threshold`` (the
    device's) on either side: every detection the device can return comes from one. Each
    candidate's box must have IoU >= PARITY_MIN_IOU with the other side's box of the same cell
    and its class scores must differ by at most PARITY_MAX_SCORE_DIFF. Cells are compared one to
    one, before NMS: an undertrained model has many overlapping boxes whose scores tie within
    1e-7, and greedy NMS then keeps one box of a tie on one side and another on the other
    (95 "unmatched" detections with IoU 1.0 and score differences of 3.6e-7 failed a correct
    export when detections were compared after NMS, seen in review). The detections after the
    device's NMS are counted for the record (``detections``, ``detections_onnx``).

    Returns :func:`compare_boxes`'s dict."""
    session = onnx_session(onnx_path)

    def run_onnx(batch: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        boxes, scores = session.run(list(OUTPUT_NAMES), {INPUT_NAME: batch})
        return boxes, scores

    return compare_boxes(torch_runner(graph.eval()), run_onnx, batches, settings)
