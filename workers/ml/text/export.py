"""ONNX export of a text classifier, the torch-vs-onnxruntime parity gate, and batch inference
on raw texts with onnxruntime (what the device does, :func:`edge_agent.text.classify_texts`).

Graph: inputs ``indices`` (B, L) int64 and ``weights`` (B, L) float32, both dimensions dynamic;
output ``probabilities`` (B, C) float32 (softmax in the graph). Operators: Gather, Mul,
ReduceSum, Sqrt, Clip, Div, Add or Gemm, Softmax, Unsqueeze (the character CNN adds Greater,
Cast, Transpose, Pad, Conv, Relu, ReduceMax, Concat): no sparse operator and no custom one, so
any onnxruntime (and most other runtimes) can run it.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime
import torch

from edge_agent.text import (
    INPUT_NAMES,
    OUTPUT_NAME,
    TextFeatures,
    TextPredictions,
    classify_texts,
)

from ..export import PARITY_MAX_ABS_DIFF, _quiet
from .data import FeaturizedTexts
from .model import TextModel

__all__ = ["PARITY_MAX_ABS_DIFF", "TextParityError", "check_text_parity", "export_text_onnx",
           "onnx_text_session", "parity_gate", "predict_texts"]

_BATCH = 64


class TextParityError(RuntimeError):
    """The ONNX file does not compute what the torch model computes: ``parity`` holds the
    figures (:func:`check_text_parity`), the message the worst difference."""

    def __init__(self, message: str, parity: dict[str, Any]) -> None:
        super().__init__(message)
        self.parity = parity


def export_text_onnx(model: TextModel, onnx_path: Path,
                     exporter: str = "torchscript") -> dict[str, Any]:
    """Write ``model`` (softmax included) as one ONNX file (no external data).

    ``exporter="torchscript"`` (the default) uses ``torch.onnx.export(dynamo=False)`` at opset
    18, the image export's TorchScript opset: 0.5-1.1 s here, and a plain ``Gather`` per lookup;
    if it fails, the dynamo exporter takes over (2-5 s, opset 20, ``GatherND``;
    ``fallback_reason`` says why). ``"dynamo"`` uses the dynamo exporter directly. Either graph
    goes through the same parity gate.

    Returns:
        ``{"exporter", "opset", "ir_version", "export_s", "fallback_reason", "size_bytes"}``.
    """
    model = model.eval()
    # B = 2 and L = 3: torch.export specialises a size-1 dimension to a constant
    example = (torch.zeros(2, 3, dtype=torch.int64), torch.ones(2, 3))
    started = time.monotonic()
    fallback_reason = None
    with torch.no_grad(), _quiet():
        try:
            if exporter != "torchscript":
                raise _UseDynamo()
            torch.onnx.export(model, example, str(onnx_path), dynamo=False, opset_version=18,
                              input_names=list(INPUT_NAMES), output_names=[OUTPUT_NAME],
                              dynamic_axes={"indices": {0: "B", 1: "L"},
                                            "weights": {0: "B", 1: "L"},
                                            OUTPUT_NAME: {0: "B"}})
            used = "torchscript"
        except Exception as error:  # any exporter failure: the fallback is checked by parity
            if not isinstance(error, _UseDynamo):
                fallback_reason = f"{type(error).__name__}: {str(error)[:300]}"
            batch, length = torch.export.Dim("B"), torch.export.Dim("L")
            torch.onnx.export(model, example, str(onnx_path), dynamo=True, external_data=False,
                              input_names=list(INPUT_NAMES), output_names=[OUTPUT_NAME],
                              dynamic_shapes={"indices": {0: batch, 1: length},
                                              "weights": {0: batch, 1: length}},
                              verbose=False)
            used = "dynamo"
    proto = onnx.load(str(onnx_path), load_external_data=False)
    opset = next((o.version for o in proto.opset_import if o.domain in ("", "ai.onnx")), None)
    return {"exporter": used, "opset": opset, "ir_version": int(proto.ir_version),
            "export_s": round(time.monotonic() - started, 3), "fallback_reason": fallback_reason,
            "size_bytes": onnx_path.stat().st_size}


class _UseDynamo(Exception):
    pass


def onnx_text_session(onnx_path: Path, threads: int = 1) -> onnxruntime.InferenceSession:
    """An onnxruntime CPU session of a text model with ``threads`` intra-op threads (1: as a
    device serves one request)."""
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = max(1, threads)
    options.inter_op_num_threads = 1
    return onnxruntime.InferenceSession(str(onnx_path), options,
                                        providers=["CPUExecutionProvider"])


def predict_texts(session: onnxruntime.InferenceSession | Path, texts: Sequence[str],
                  features: TextFeatures, batch_size: int = _BATCH) -> TextPredictions:
    """Class probabilities of raw ``texts`` with onnxruntime: the device's computation
    (:func:`edge_agent.text.classify_texts`). ``session``: a session or the model's path."""
    if not isinstance(session, onnxruntime.InferenceSession):
        session = onnx_text_session(Path(session))
    run_session = session

    def run(indices: np.ndarray, weights: np.ndarray) -> np.ndarray:
        out = run_session.run([OUTPUT_NAME], {"indices": indices, "weights": weights})[0]
        return np.asarray(out, dtype=np.float32)

    return classify_texts(texts, features, run, batch_size)


def check_text_parity(model: TextModel, onnx_path: Path, data: FeaturizedTexts,
                      sample_ids: Sequence[str] | None = None) -> dict[str, Any]:
    """Does the ONNX file compute what the torch model computes on every text of ``data``?
    Both get the same padded batches of 64.

    Returns:
        ``{"n", "top1_agree", "n_mismatches", "mismatches" (first 20), "max_abs_diff",
        "worst" (index, sample_id, torch and onnx probabilities of the text with the largest
        difference), "tolerance", "passed"}``; ``passed`` iff n > 0, the top-1 class agrees on
        every text and max |torch probability - onnx probability| <= ``PARITY_MAX_ABS_DIFF``.
    """
    session = onnx_text_session(onnx_path, threads=max(1, torch.get_num_threads()))
    model = model.eval()
    torch_out, onnx_out = [], []
    with torch.no_grad():
        for start in range(0, len(data), _BATCH):
            indices, weights = data.padded(range(start, min(len(data), start + _BATCH)))
            torch_out.append(model(torch.from_numpy(indices), torch.from_numpy(weights)).numpy())
            onnx_out.append(np.asarray(session.run([OUTPUT_NAME], {"indices": indices,
                                                                    "weights": weights})[0]))
    n = len(data)
    if not n:
        return {"n": 0, "top1_agree": False, "n_mismatches": 0, "mismatches": [],
                "max_abs_diff": 0.0, "worst": None, "tolerance": PARITY_MAX_ABS_DIFF,
                "passed": False, "reason": "no texts to compare"}
    torch_probs, onnx_probs = np.concatenate(torch_out), np.concatenate(onnx_out)
    if torch_probs.shape != onnx_probs.shape:
        return {"n": n, "top1_agree": False, "n_mismatches": n, "mismatches": [],
                "max_abs_diff": float("inf"), "worst": None, "tolerance": PARITY_MAX_ABS_DIFF,
                "passed": False, "reason": f"output shapes differ: torch {torch_probs.shape}, "
                                           f"onnx {onnx_probs.shape}"}
    torch_top1, onnx_top1 = torch_probs.argmax(1), onnx_probs.argmax(1)
    disagree = np.flatnonzero(torch_top1 != onnx_top1)

    def sample_id(i: int) -> str | None:
        return None if sample_ids is None else str(sample_ids[i])

    difference = np.abs(torch_probs - onnx_probs).max(axis=1)
    worst = int(difference.argmax())
    max_abs_diff = float(difference[worst])
    return {
        "n": n,
        "top1_agree": bool(disagree.size == 0),
        "n_mismatches": int(disagree.size),
        "mismatches": [{"index": int(i), "sample_id": sample_id(int(i)),
                        "torch_top1": int(torch_top1[i]), "onnx_top1": int(onnx_top1[i])}
                       for i in disagree[:20]],
        "max_abs_diff": max_abs_diff,
        "worst": {"index": worst, "sample_id": sample_id(worst),
                  "torch": [round(float(p), 7) for p in torch_probs[worst]],
                  "onnx": [round(float(p), 7) for p in onnx_probs[worst]]},
        "tolerance": PARITY_MAX_ABS_DIFF,
        "passed": bool(disagree.size == 0 and max_abs_diff <= PARITY_MAX_ABS_DIFF),
    }


def parity_gate(model: TextModel, onnx_path: Path, data: FeaturizedTexts,
                sample_ids: Sequence[str] | None = None) -> dict[str, Any]:
    """:func:`check_text_parity`, raising :class:`TextParityError` (naming the worst
    difference and the texts whose top-1 class differs) unless it passed."""
    parity = check_text_parity(model, onnx_path, data, sample_ids)
    if not parity["passed"]:
        worst = parity.get("worst") or {}
        raise TextParityError(
            f"ONNX parity failed on {parity['n']} validation texts: largest |probability "
            f"difference| {parity['max_abs_diff']:.3g} (tolerance {PARITY_MAX_ABS_DIFF:g}) on "
            f"text {worst.get('sample_id') or worst.get('index')} (torch {worst.get('torch')}, "
            f"onnx {worst.get('onnx')}); top-1 differs on {parity['n_mismatches']} texts"
            + (f"; {parity['reason']}" if "reason" in parity else ""), parity)
    return parity
