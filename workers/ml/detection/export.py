"""ONNX export of a detector and the torch-vs-onnxruntime parity gate on its boxes.

The graph is :class:`workers.ml.detection.model.ExportedDetector` at a fixed input size (the
image is letterboxed to it, so any image size maps back exactly): input ``images`` (N, 3, S, S),
outputs ``boxes`` (N, A, 4) and ``scores`` (N, A, C). NMS is not in the graph: torch's exporter
cannot export torchvision's batched NMS with dynamo (a data-dependent guard), and the numpy NMS of
:mod:`edge_agent.detection` runs the same on the worker and the device.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime
import torch
from torch import nn

from edge_agent.detection import (INPUT_NAME, OUTPUT_NAMES, DetectionSettings, box_iou,
                                  postprocess)

from ..export import _quiet

__all__ = ["PARITY_MIN_IOU", "PARITY_MAX_SCORE_DIFF", "check_box_parity", "export_detector"]

#: the export gate (issue 10): every detection of torch has a detection of onnxruntime of the
#: same class with IoU >= 0.99 and |score difference| <= 1e-3, and the other way round
PARITY_MIN_IOU = 0.99
PARITY_MAX_SCORE_DIFF = 1e-3


def export_detector(graph: nn.Module, onnx_path: Path, input_size: int) -> dict[str, Any]:
    """Write ``graph`` (an ExportedDetector in eval mode) as one ONNX file with a dynamic batch.

    ``torch.onnx.export(dynamo=True)``, falling back to the TorchScript exporter (opset 18)
    if it fails; the parity gate checks either. Returns ``{"exporter", "opset", "ir_version",
    "export_s", "fallback_reason"}``."""
    graph = graph.eval()
    example = torch.zeros(2, 3, input_size, input_size)  # 2: a size-1 dim is specialised
    started = time.monotonic()
    fallback_reason = None
    exporter = "dynamo"
    with torch.no_grad(), _quiet():
        try:
            torch.onnx.export(graph, (example,), str(onnx_path), dynamo=True,
                              external_data=False, input_names=[INPUT_NAME],
                              output_names=list(OUTPUT_NAMES),
                              dynamic_shapes={"images": {0: torch.export.Dim("N")}},
                              verbose=False)
        except Exception as error:  # any exporter failure: the fallback is checked by parity
            fallback_reason = f"{type(error).__name__}: {str(error)[:300]}"
            torch.onnx.export(graph, (example,), str(onnx_path), dynamo=False, opset_version=18,
                              input_names=[INPUT_NAME], output_names=list(OUTPUT_NAMES),
                              dynamic_axes={INPUT_NAME: {0: "N"}, "boxes": {0: "N"},
                                            "scores": {0: "N"}})
            exporter = "torchscript"
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


def _compare(a: tuple[np.ndarray, np.ndarray, np.ndarray],
             b: tuple[np.ndarray, np.ndarray, np.ndarray], settings: DetectionSettings
             ) -> tuple[float, float, int]:
    """(lowest IoU of a matched pair, largest score difference, detections without a partner)
    from ``a``'s side. A detection within PARITY_MAX_SCORE_DIFF of ``b``'s cut may be on one
    side only without counting as unmatched (the cut, not the graph): the score threshold, or
    ``b``'s lowest score when ``b`` holds ``settings.max_detections``."""
    boxes_a, scores_a, classes_a = a
    boxes_b, scores_b, classes_b = b
    threshold = settings.score_threshold
    if len(scores_b) >= settings.max_detections:
        threshold = max(threshold, float(scores_b.min()))
    min_iou, max_diff, unmatched = 1.0, 0.0, 0
    overlaps = box_iou(boxes_a, boxes_b) if len(boxes_a) and len(boxes_b) else \
        np.zeros((len(boxes_a), len(boxes_b)))
    if overlaps.size:
        # a zero-width or zero-height box has no IoU, even with itself: equal corners (within
        # 0.01 px) are the same box
        same = np.abs(boxes_a[:, None, :] - boxes_b[None, :, :]).max(axis=2) <= 0.01
        overlaps = np.where(same, 1.0, overlaps)
    for i in range(len(boxes_a)):
        same = classes_b == classes_a[i]
        if same.any():
            j = int(np.argmax(np.where(same, overlaps[i], -1.0)))
            if overlaps[i, j] >= PARITY_MIN_IOU:
                min_iou = min(min_iou, float(overlaps[i, j]))
                max_diff = max(max_diff, abs(float(scores_a[i]) - float(scores_b[j])))
                continue
        if abs(float(scores_a[i]) - threshold) > PARITY_MAX_SCORE_DIFF:
            unmatched += 1
    return min_iou, max_diff, unmatched


@torch.no_grad()
def check_box_parity(graph: nn.Module, onnx_path: Path, batches: list[np.ndarray],
                     settings: DetectionSettings) -> dict[str, Any]:
    """Run torch ``graph`` and the ONNX file on the same inputs (each (1, 3, S, S) float32, the
    letterboxed validation images), turn both outputs into detections with the device's
    :func:`edge_agent.detection.postprocess`, and compare them.

    Returns ``{"passed", "images", "detections" (torch's), "min_iou", "max_score_diff",
    "unmatched", "worst_image" (index of the image with the most unmatched detections, or None),
    "min_iou_limit", "max_score_diff_limit", "score_threshold"}``; passed when no detection is
    unmatched, every matched pair has IoU >= PARITY_MIN_IOU and a score difference <=
    PARITY_MAX_SCORE_DIFF. ``settings.score_threshold`` is the one the device uses."""
    graph = graph.eval()
    session = onnx_session(onnx_path)
    min_iou, max_diff, unmatched, detections = 1.0, 0.0, 0, 0
    worst, worst_count = None, 0
    for index, batch in enumerate(batches):
        torch_boxes, torch_scores = graph(torch.from_numpy(batch))
        onnx_boxes, onnx_scores = session.run(list(OUTPUT_NAMES), {INPUT_NAME: batch})
        ours = postprocess(torch_boxes[0].numpy(), torch_scores[0].numpy(), settings)
        theirs = postprocess(onnx_boxes[0], onnx_scores[0], settings)
        detections += len(ours[0])
        iou_a, diff_a, lost_a = _compare(ours, theirs, settings)
        iou_b, diff_b, lost_b = _compare(theirs, ours, settings)
        min_iou = min(min_iou, iou_a, iou_b)
        max_diff = max(max_diff, diff_a, diff_b)
        unmatched += lost_a + lost_b
        if lost_a + lost_b > worst_count:
            worst, worst_count = index, lost_a + lost_b
    passed = (unmatched == 0 and min_iou >= PARITY_MIN_IOU and max_diff <= PARITY_MAX_SCORE_DIFF)
    return {"passed": bool(passed), "images": len(batches), "detections": detections,
            "min_iou": round(min_iou, 6), "max_score_diff": float(f"{max_diff:.3g}"),
            "unmatched": unmatched, "worst_image": worst, "min_iou_limit": PARITY_MIN_IOU,
            "max_score_diff_limit": PARITY_MAX_SCORE_DIFF,
            "score_threshold": settings.score_threshold}
