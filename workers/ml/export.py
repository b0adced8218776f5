"""ONNX export with softmax in the graph, and the torch-vs-onnxruntime parity gate."""

from __future__ import annotations

import contextlib
import io
import logging
import time
import warnings
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime
import torch
from torch import nn

from .models import SoftmaxClassifier

__all__ = ["PARITY_MAX_ABS_DIFF", "check_parity", "compare_with_onnx", "export_onnx",
           "onnx_info", "onnx_probabilities"]

#: Largest allowed |torch probability - onnxruntime probability|. fp32 kernels of two runtimes
#: differ by ~1e-7..1e-6 on softmax outputs; 1e-4 leaves room for that and still catches a wrong
#: graph, wrong weights or wrong preprocessing.
PARITY_MAX_ABS_DIFF = 1e-4
_BATCH = 64


def _as_probability_model(model: nn.Module) -> nn.Module:
    wrapped = model if isinstance(model, SoftmaxClassifier) else SoftmaxClassifier(model)
    return wrapped.to(memory_format=torch.contiguous_format).eval()


class _UseTorchScript(Exception):
    pass


def export_onnx(
    model: nn.Module, onnx_path: Path, size: tuple[int, int], exporter: str = "dynamo"
) -> dict[str, Any]:
    """Write ``model`` + softmax as one ONNX file (no external data).

    Graph: input ``input`` (N, 3, H, W) float32 with a dynamic batch N, output ``probabilities``
    (N, C) float32. ``exporter="dynamo"`` uses ``torch.onnx.export(dynamo=True)`` (the supported
    exporter; 6-9 s for MobileNetV2 here) and falls back to the TorchScript exporter if it fails;
    ``"torchscript"`` uses ``dynamo=False`` (deprecated, opset 18, ~0.3 s) directly.

    Returns:
        ``{"exporter": "dynamo"|"torchscript", "opset", "ir_version", "export_s",
        "fallback_reason"}``.
    """
    wrapped = _as_probability_model(model)
    height, width = size
    # Batch 2, not 1: torch.export specialises a size-1 dimension to a constant.
    example = torch.zeros(2, 3, height, width)
    started = time.monotonic()
    fallback_reason = None
    with torch.no_grad(), _quiet():
        try:
            if exporter != "dynamo":
                raise _UseTorchScript()
            torch.onnx.export(
                wrapped,
                (example,),
                str(onnx_path),
                dynamo=True,
                external_data=False,
                input_names=["input"],
                output_names=["probabilities"],
                dynamic_shapes={"input": {0: torch.export.Dim("N")}},
                verbose=False,
            )
            exporter = "dynamo"
        except Exception as error:  # any exporter failure: the fallback is checked by parity
            if not isinstance(error, _UseTorchScript):
                fallback_reason = f"{type(error).__name__}: {str(error)[:300]}"
            torch.onnx.export(
                wrapped,
                (example,),
                str(onnx_path),
                dynamo=False,
                opset_version=18,
                input_names=["input"],
                output_names=["probabilities"],
                dynamic_axes={"input": {0: "N"}, "probabilities": {0: "N"}},
            )
            exporter = "torchscript"
    proto = onnx.load(str(onnx_path), load_external_data=False)
    opset = next((o.version for o in proto.opset_import if o.domain in ("", "ai.onnx")), None)
    return {
        "exporter": exporter,
        "opset": opset,
        "ir_version": int(proto.ir_version),
        "export_s": round(time.monotonic() - started, 3),
        "fallback_reason": fallback_reason,
    }


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """The exporters print progress and deprecation warnings; keep worker logs readable."""
    onnx_logger = logging.getLogger("torch.onnx")
    level = onnx_logger.level
    onnx_logger.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
            warnings.simplefilter("ignore")
            yield
    finally:
        onnx_logger.setLevel(level)


def _as_numpy(images: torch.Tensor | np.ndarray) -> np.ndarray:
    if isinstance(images, torch.Tensor):
        images = images.detach().cpu().numpy()
    return np.ascontiguousarray(images, dtype=np.float32)


def compare_with_onnx(
    model: nn.Module,
    onnx_path: Path,
    images: torch.Tensor | np.ndarray,
    sample_ids: Sequence[str] | None = None,
) -> tuple[dict[str, Any], np.ndarray]:
    """:func:`check_parity` that also returns the onnxruntime probabilities (N, C) float32."""
    pixels = _as_numpy(images)
    wrapped = _as_probability_model(model)
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = max(1, torch.get_num_threads())
    session = onnxruntime.InferenceSession(
        str(onnx_path), options, providers=["CPUExecutionProvider"]
    )
    torch_out, onnx_out = [], []
    with torch.no_grad():
        for start in range(0, len(pixels), _BATCH):
            batch = pixels[start : start + _BATCH]
            torch_out.append(wrapped(torch.from_numpy(batch)).numpy())
            onnx_out.append(session.run(["probabilities"], {"input": batch})[0])
    n = len(pixels)
    torch_probs = np.concatenate(torch_out) if n else np.zeros((0, 0), np.float32)
    onnx_probs = np.concatenate(onnx_out) if n else np.zeros((0, 0), np.float32)
    if torch_probs.shape != onnx_probs.shape:
        return {
            "n": n,
            "top1_agree": False,
            "mismatches": [],
            "max_abs_diff": float("inf"),
            "passed": False,
            "reason": f"output shapes differ: torch {torch_probs.shape}, onnx {onnx_probs.shape}",
        }, onnx_probs
    torch_top1 = torch_probs.argmax(axis=1) if n else np.zeros(0, np.int64)
    onnx_top1 = onnx_probs.argmax(axis=1) if n else np.zeros(0, np.int64)
    disagree = np.flatnonzero(torch_top1 != onnx_top1)
    mismatches = [
        {
            "index": int(i),
            "sample_id": None if sample_ids is None else str(sample_ids[i]),
            "torch_top1": int(torch_top1[i]),
            "onnx_top1": int(onnx_top1[i]),
            "torch_probability": float(torch_probs[i, torch_top1[i]]),
            "onnx_probability": float(onnx_probs[i, onnx_top1[i]]),
        }
        for i in disagree[:20]
    ]
    max_abs_diff = float(np.abs(torch_probs - onnx_probs).max()) if n else 0.0
    top1_agree = disagree.size == 0
    return {
        "n": n,
        "top1_agree": bool(top1_agree),
        "n_mismatches": int(disagree.size),
        "mismatches": mismatches,
        "max_abs_diff": max_abs_diff,
        "tolerance": PARITY_MAX_ABS_DIFF,
        "passed": bool(n > 0 and top1_agree and max_abs_diff <= PARITY_MAX_ABS_DIFF),
    }, onnx_probs


def check_parity(
    model: nn.Module,
    onnx_path: Path,
    images: torch.Tensor | np.ndarray,
    sample_ids: Sequence[str] | None = None,
) -> dict[str, Any]:
    """Export gate: does the ONNX file compute what the torch model computes on ``images``?

    ``model`` gives logits (or is a :class:`SoftmaxClassifier`); ``images`` are preprocessed
    (N, 3, H, W) float32. Both run on every image in eval mode.

    Returns:
        ``{"n", "top1_agree", "n_mismatches", "mismatches" (first 20: index, sample_id,
        torch_top1, onnx_top1 and their probabilities), "max_abs_diff", "tolerance", "passed"}``.
        ``passed`` iff n > 0, the top-1 class agrees on every image and
        max |torch probability - onnx probability| <= :data:`PARITY_MAX_ABS_DIFF`.
    """
    return compare_with_onnx(model, onnx_path, images, sample_ids)[0]


def onnx_probabilities(onnx_path: Path, batches: Iterable[np.ndarray]) -> np.ndarray:
    """onnxruntime's ``probabilities`` (N, C) float32 for preprocessed (n, 3, H, W) float32
    batches, as a device computes them (CPU provider, this process's torch thread count)."""
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = max(1, torch.get_num_threads())
    session = onnxruntime.InferenceSession(str(onnx_path), options,
                                           providers=["CPUExecutionProvider"])
    out = [session.run(["probabilities"], {"input": _as_numpy(batch)})[0] for batch in batches]
    return np.concatenate(out) if out else np.zeros((0, 0), np.float32)


def onnx_info(path: Path, providers: Sequence[str] = ("CPUExecutionProvider",)
              ) -> dict[str, Any]:
    """What a runtime needs to load ``path``: ``{"opset": int (ai.onnx), "opsets": {domain:
    version}, "ir_version", "operators": sorted "domain:OpType" (ai.onnx for the default
    domain), "execution_providers": list}`` (the manifest's ``onnx`` object, docs/contracts.md)."""
    proto = onnx.load(str(path), load_external_data=False)
    opsets = {(o.domain or "ai.onnx"): int(o.version) for o in proto.opset_import}
    operators = sorted({f"{node.domain or 'ai.onnx'}:{node.op_type}" for node in proto.graph.node})
    return {"opset": opsets.get("ai.onnx"), "opsets": opsets, "ir_version": int(proto.ir_version),
            "operators": operators, "execution_providers": list(providers)}
