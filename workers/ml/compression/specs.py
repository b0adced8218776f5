"""The compression engine's plain inputs and outputs (dataclasses; no Django, no torch)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..specs import SampleRef

__all__ = ["Candidate", "CompressRequest", "CompressResult", "CompressionCancelled", "Teacher",
           "TextCompressRequest"]


class CompressionCancelled(Exception):
    """``should_stop()`` returned True; the candidates made so far are in the out folder."""


@dataclass
class Teacher:
    """The float model to compress: its package's ``model.onnx`` (input ``input`` (N, 3, H, W)
    float32, output ``probabilities`` (N, C)), the manifest's ``preprocessing`` and ``labels``,
    and the training checkpoint (``checkpoint.pt``: ``state_dict``, ``architecture``) when there
    is one. Without a checkpoint no student can be made: only graph-level candidates (fp32,
    INT8)."""

    onnx_path: Path
    preprocessing: dict[str, Any]
    labels: list[str]
    checkpoint_path: Path | None = None


@dataclass
class CompressRequest:
    """What to compress and within what.

    ``budget_s``: wall-clock seconds for the engine (making and evaluating candidates);
    ``accuracy_budget_pt``: the largest accuracy drop (percentage points, on the held-out test
    split, else validation) a candidate may have to be picked. ``train`` images calibrate INT8 and
    train students; ``val`` selects a student's epoch; ``test`` is only ever evaluated.
    ``providers``: the target's onnxruntime execution providers (FP16 only where one is a GPU).
    ``methods``: the candidate families to try, a subset of ``("int8", "resolution", "pruning",
    "fp16")``; the fp32 reference is always made.
    """

    teacher: Teacher
    train: list[SampleRef]
    val: list[SampleRef]
    out_dir: Path
    test: list[SampleRef] = field(default_factory=list)
    budget_s: float = 540.0
    accuracy_budget_pt: float = 1.0
    providers: list[str] = field(default_factory=lambda: ["CPUExecutionProvider"])
    methods: tuple[str, ...] = ("int8", "resolution", "pruning", "fp16")
    seed: int = 0
    allow_flips: bool = True


@dataclass
class TextCompressRequest:
    """A text classifier to compress (docs/decisions/compression.md, "Text classifiers").

    ``onnx_path``: the package's ``model.onnx`` (inputs ``indices``, ``weights``; output
    ``probabilities``; a WordPiece model's vocabulary in its ``sampan.wordpiece_vocab``
    metadata); ``text``: the manifest's ``text`` featurisation settings; ``labels``: the model's
    classes in output order. ``train``, ``val``, ``test``: ``(text, class index, sample id)``
    with the index into ``sample_labels`` (the dataset version's classes; a class is the
    model's class of the same :func:`edge_agent.text.normalize_label` name). ``val`` and
    ``test`` measure accuracy (``test``, else ``val``, as for images); ``train`` is not used
    by the graph-level candidates. ``methods``: as :class:`CompressRequest`'s; ``int8`` and
    ``fp16`` apply to text, ``resolution`` and ``pruning`` are ignored with a warning.
    """

    onnx_path: Path
    text: dict[str, Any]
    labels: list[str]
    val: list[tuple[str, int, str]]
    out_dir: Path
    sample_labels: list[str] = field(default_factory=list)
    train: list[tuple[str, int, str]] = field(default_factory=list)
    test: list[tuple[str, int, str]] = field(default_factory=list)
    budget_s: float = 540.0
    accuracy_budget_pt: float = 1.0
    providers: list[str] = field(default_factory=lambda: ["CPUExecutionProvider"])
    methods: tuple[str, ...] = ("int8", "fp16")


@dataclass
class Candidate:
    """One compressed variant, ready (``status == "ready"``) or not (``failed``/``skipped`` with
    ``reason``).

    ``key``: short unique name (``fp32``, ``int8``, ``res64``, ``pruned50``, ``pruned50-int8``);
    ``method``: ``fp32`` | ``int8`` | ``distilled`` | ``fp16``; ``params``: how it was made
    (resolution, pruning ratio, calibration method and images, epochs, ...); ``parent``: the key it
    was derived from (None: the teacher). ``accuracy`` (0..1) is on ``evaluated_on`` ("test" or
    "val"), ``val_accuracy`` always on validation; ``accuracy_drop_pt`` = reference accuracy -
    this one, in points (negative: better), ``val_accuracy_drop_pt`` the same on validation;
    ``within_budget``: both at most the request's budget. ``size_bytes``: of model.onnx.
    ``macs``: multiply-accumulates per image (students and the reference; None when unknown).
    ``onnx``: ``opset``, ``ir_version``, ``operators`` (sorted ``domain:op``),
    ``execution_providers``.
    """

    key: str
    method: str
    params: dict[str, Any] = field(default_factory=dict)
    parent: str | None = None
    status: str = "ready"
    reason: str = ""
    onnx_path: Path | None = None
    preprocessing: dict[str, Any] = field(default_factory=dict)
    size_bytes: int = 0
    macs: int | None = None
    accuracy: float | None = None
    val_accuracy: float | None = None
    macro_f1: float | None = None
    evaluated_on: str = "test"
    n_evaluated: int = 0
    accuracy_drop_pt: float | None = None
    val_accuracy_drop_pt: float | None = None
    within_budget: bool = False
    onnx: dict[str, Any] = field(default_factory=dict)
    history: list[dict[str, Any]] = field(default_factory=list)
    elapsed_s: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (the path as a string)."""
        data = dict(self.__dict__)
        data["onnx_path"] = str(self.onnx_path) if self.onnx_path else None
        return data


@dataclass
class CompressResult:
    """Every candidate in the order made (the fp32 reference first), the ``warnings`` the user
    should see (a calibration set too small, one class only, no checkpoint, ...), and
    ``elapsed_s``."""

    candidates: list[Candidate]
    warnings: list[str] = field(default_factory=list)
    elapsed_s: float = 0.0

    def get(self, key: str) -> Candidate | None:
        return next((c for c in self.candidates if c.key == key), None)
