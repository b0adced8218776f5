"""Compression of text classifiers: graph-level candidates only, each measured with onnxruntime
on held-out texts through the device's own session and featuriser
(:class:`edge_agent.text_session.TextClassifierSession`, :func:`edge_agent.text.classify_texts`).

Order (docs/decisions/compression.md, "Text classifiers"):

1. ``fp32``: the model after onnxruntime's offline graph optimisation (BASIC): the reference.
2. ``int8``: dynamic quantization (``onnxruntime.quantization.quantize_dynamic``): the n-gram
   or token embedding table of every ``Gather`` int8 (one scale per table; the table is most
   of an n-gram model's bytes and 47 of the encoder's 86 MB), the weights of every ``MatMul``
   and ``Gemm`` int8 per output channel with the activations quantized at run time; no
   ``Conv`` (a character CNN's convolutions stay float: ``ConvInteger`` is slow here).
3. ``int8-matmul``: only the ``MatMul`` and ``Gemm`` weights, the tables kept float, when the
   graph has both (a linear n-gram model has no MatMul: its only int8 candidate is ``int8``).
4. ``fp16`` when the target has a GPU execution provider.

Every candidate keeps the source's ``sampan.*`` ONNX metadata (a WordPiece model's vocabulary:
the device refuses a graph without it) and must load in the device's session (its self-test
included) to be ready. No distilled students: ``resolution`` and ``pruning`` shrink image
networks; asked for a text model they are ignored with a warning.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import onnx

from edge_agent.text import TextFeaturesError, classify_texts, featurize, normalize_label
from edge_agent.text_session import TASK, TextClassifierSession, manifest_inputs

from ..classification import available_threads
from ..evaluation import classification_report
from .common import (Clock, fp16_candidate, fp16_warning, held_out_warnings, ignore, judge,
                     never, no_progress)
from .graph import (DYNAMIC_OP_TYPES, GPU_PROVIDERS, copy_metadata, onnx_info, optimise_fp32,
                    quantize_dynamic_int8)
from .specs import Candidate, CompressionCancelled, CompressResult, TextCompressRequest

__all__ = ["NOT_FOR_TEXT", "TEXT_METHODS", "compress_text_classifier", "text_manifest"]

log = logging.getLogger(__name__)

#: The methods that make candidates of a text model.
TEXT_METHODS = ("int8", "fp16")
#: The methods that make distilled image students: ignored for a text model, with a warning.
NOT_FOR_TEXT = ("resolution", "pruning")
#: Operators of the ``int8-matmul`` variant.
MATMUL_ONLY = ("MatMul",)


def text_manifest(labels: list[str], text: dict[str, Any]) -> dict[str, Any]:
    """The package fields :class:`TextClassifierSession` reads: what a candidate is loaded with
    here, and what the worker's local measurement writes beside it."""
    return {"task": TASK, "labels": list(labels), "preprocessing": {}, "text": dict(text),
            "inputs": manifest_inputs(),
            "outputs": [{"name": "probabilities", "shape": ["N", len(labels)],
                         "dtype": "float32"}]}


@dataclass
class _Split:
    texts: list[str]
    labels: np.ndarray
    ids: list[str]

    def __len__(self) -> int:
        return len(self.texts)


class _HeldOut:
    """The validation and test texts with the model's class indices, those the model cannot be
    asked about (empty after normalisation, a class it does not have) left out and counted."""

    def __init__(self, request: TextCompressRequest, session: TextClassifierSession) -> None:
        position = {name: index for index, name in enumerate(request.labels)}
        names = request.sample_labels or request.labels
        self.left_out = 0
        self.splits: dict[str, _Split] = {}
        for name, rows in (("val", request.val), ("test", request.test)):
            texts, labels, ids = [], [], []
            for text, label, sample_id in rows:
                try:
                    index = position.get(normalize_label(names[int(label)]))
                    if index is None:
                        raise ValueError("a class the model does not have")
                    featurize(text, session.settings)
                except (IndexError, ValueError):  # TextFeaturesError is a ValueError
                    self.left_out += 1
                    continue
                texts.append(text)
                labels.append(index)
                ids.append(str(sample_id))
            self.splits[name] = _Split(texts, np.asarray(labels, dtype=np.int64), ids)


def compress_text_classifier(request: TextCompressRequest, *,
                             on_candidate: Callable[[Candidate], None] = ignore,
                             on_progress: Callable[[dict[str, Any]], None] = no_progress,
                             should_stop: Callable[[], bool] = never) -> CompressResult:
    """Make and evaluate the compression candidates of the text model ``request.onnx_path``
    within ``request.budget_s`` seconds; each ready, failed or skipped candidate is passed to
    ``on_candidate`` at once (the fp32 reference first). Files go to
    ``request.out_dir/<key>/model.onnx``.

    ``on_progress`` receives ``{"phase": "reference"|"int8"|"done", "candidate", "elapsed_s",
    "fraction"}`` (the image engine's phases).

    Raises:
        CompressionCancelled: ``should_stop()`` returned True.
        ValueError: fewer than 2 labels, no validation text the model can be asked about, or a
            source model that the device's session cannot load.
    """
    if len(request.labels) < 2:
        raise ValueError("labels: a classifier has at least 2 classes")
    clock = Clock(float(request.budget_s), should_stop, on_progress)
    out = Path(request.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    manifest = text_manifest(request.labels, request.text)
    threads = available_threads()
    budget_pt = float(request.accuracy_budget_pt)
    result = CompressResult(candidates=[])
    ignored = [m for m in NOT_FOR_TEXT if m in request.methods]
    if ignored:
        result.warnings.append(
            f"{', '.join(ignored)}: not applicable to a text model (distilled students at a "
            "lower resolution or with fewer channels are for image networks); only graph-level "
            "candidates are made")

    def add(candidate: Candidate, started: float) -> Candidate:
        candidate.elapsed_s = round(time.monotonic() - started, 2)
        result.candidates.append(candidate)
        on_candidate(candidate)
        return candidate

    # 1. the reference
    started = time.monotonic()
    clock.emit({"phase": "reference", "candidate": "fp32"})
    reference_path = out / "fp32" / "model.onnx"
    reference_path.parent.mkdir(parents=True, exist_ok=True)
    reference = Candidate(key="fp32", method="fp32", params={"graph_optimization": "basic"},
                          onnx_path=reference_path)
    try:
        optimise_fp32(Path(request.onnx_path), reference_path)
        copy_metadata(Path(request.onnx_path), reference_path)
        session = _session(reference_path, manifest, threads)
    except Exception as error:  # noqa: BLE001 - onnxruntime and the session raise their own
        raise ValueError(f"teacher: the device's session cannot load the model: {error}") \
            from error
    held_out = _HeldOut(request, session)
    splits = held_out.splits
    if not len(splits["val"]):
        raise ValueError("val: no validation text the model can be asked about")
    result.warnings.extend(held_out_warnings(len(splits["test"]), len(splits["val"]),
                                             budget_pt, unit="texts"))
    if held_out.left_out:
        result.warnings.append(
            f"{held_out.left_out} held-out texts were left out of the accuracy: empty after "
            "normalisation, or of a class the model does not have")

    def evaluate(candidate: Candidate, loaded: TextClassifierSession | None = None) -> None:
        path = candidate.onnx_path
        if path is None:
            raise ValueError(f"candidate {candidate.key}: no ONNX file to evaluate")
        copy_metadata(Path(request.onnx_path), path)
        if not candidate.onnx:
            candidate.onnx = onnx_info(path)
        _evaluate(candidate, loaded or _session(path, manifest, threads), splits,
                  request.labels, None if candidate is reference else reference, budget_pt)

    evaluate(reference, session)
    add(reference, started)
    # each further candidate costs about one evaluation of the reference plus its conversion
    evaluation_s = reference.elapsed_s

    def quantized(key: str, op_types: tuple[str, ...]) -> None:
        started = time.monotonic()
        target = out / key / "model.onnx"
        candidate = Candidate(key=key, method="int8", parent="fp32", onnx_path=target)
        if clock.left() < 1.5 * evaluation_s + 5.0:
            candidate.status, candidate.reason = "skipped", "not enough time left in the budget"
            candidate.onnx_path = None
            add(candidate, started)
            return
        clock.emit({"phase": "int8", "candidate": key})
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            candidate.params = quantize_dynamic_int8(reference_path, target, op_types=op_types)
            evaluate(candidate)
        except CompressionCancelled:
            raise
        except Exception as error:  # noqa: BLE001 - a failed candidate never ends the job
            log.exception("INT8 (%s) of the text model failed", key)
            candidate.status, candidate.reason = "failed", f"quantization failed: {error}"
        add(candidate, started)

    if "int8" in request.methods:
        quantized("int8", DYNAMIC_OP_TYPES)
        if {"MatMul", "Gather"} <= _quantizable(reference_path):
            quantized("int8-matmul", MATMUL_ONLY)
    no_fp16 = fp16_warning(tuple(request.methods), request.providers)
    if no_fp16:
        result.warnings.append(no_fp16)
    if "fp16" in request.methods and GPU_PROVIDERS & set(request.providers):
        started = time.monotonic()
        clock.check()
        add(fp16_candidate(reference, out, request.providers, evaluate), started)
    result.elapsed_s = round(clock.elapsed(), 2)
    clock.emit({"phase": "done"})
    return result


def _quantizable(path: Path) -> set[str]:
    """Which of ``MatMul`` (``Gemm`` counted as one) and ``Gather`` the graph at ``path`` has
    with a constant float weight (an initializer): what dynamic quantization can make int8."""
    graph = onnx.load(str(path)).graph
    floats = {t.name for t in graph.initializer if t.data_type == onnx.TensorProto.FLOAT}
    found = set()
    for node in graph.node:
        if node.op_type == "Gather" and node.input and node.input[0] in floats:
            found.add("Gather")
        elif node.op_type in ("MatMul", "Gemm") and len(node.input) > 1 \
                and node.input[1] in floats:
            found.add("MatMul")
    return found


def _session(path: Path, manifest: dict[str, Any], threads: int) -> TextClassifierSession:
    """The device's session of the graph at ``path`` (a WordPiece model: with the vocabulary of
    its metadata, checked against the settings), self-tested as the agent does after loading."""
    session = TextClassifierSession(path, manifest, threads=threads)
    session.self_test()
    return session


def _evaluate(candidate: Candidate, session: TextClassifierSession, splits: dict[str, _Split],
              labels: list[str], reference: Candidate | None, budget_pt: float) -> None:
    """Accuracy of ``session`` on the test texts (else validation) and on validation, through
    the device's featuriser, and the candidate's file size."""

    def probabilities(split: _Split) -> np.ndarray:
        try:
            return classify_texts(split.texts, session.settings, session.predict_batch
                                  ).probabilities
        except TextFeaturesError as error:  # left out beforehand: never expected here
            raise ValueError(f"a held-out text cannot be featurised: {error}") from error

    val = probabilities(splits["val"])
    candidate.val_accuracy = float((val.argmax(1) == splits["val"].labels).mean())
    held_out = splits["test"] if len(splits["test"]) else splits["val"]
    candidate.evaluated_on = "test" if len(splits["test"]) else "val"
    predicted = (val if held_out is splits["val"] else probabilities(held_out)).argmax(1)
    report = classification_report(held_out.labels.tolist(), predicted.tolist(), labels,
                                   held_out.ids)
    candidate.accuracy = float(report["accuracy"])
    candidate.macro_f1 = float(report["macro_f1"])
    candidate.n_evaluated = len(held_out)
    if candidate.onnx_path is not None:
        candidate.size_bytes = candidate.onnx_path.stat().st_size
    judge(candidate, reference, budget_pt)
