"""The engine's plain inputs and outputs (dataclasses; no Django, no torch)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["AUGMENTATIONS", "MODEL_PREFERENCES", "SampleRef", "TrainRequest", "TrainResult",
           "TrainingCancelled"]


class TrainingCancelled(Exception):
    """``should_stop()`` returned True; nothing was exported."""


@dataclass(frozen=True)
class SampleRef:
    """One labelled image file: ``label`` is the class index into ``TrainRequest.labels``."""

    path: str
    label: int
    sample_id: str


@dataclass
class TrainRequest:
    """What to train.

    ``budget_s`` is the wall-clock budget in seconds for everything the engine does (decoding,
    training, export, parity check, evaluation). ``pretrained=None`` uses the ImageNet weights when
    they are in the torch hub cache; True asks for them (a missing file still falls back to random
    initialisation, reported in ``TrainResult.weights_note``); False never loads them.
    ``recipe`` replays a recipe recorded in a previous ``TrainResult.recipe`` (same resolution,
    steps and learning-rate schedule) instead of planning one from the budget.
    ``test`` is the held-out split: never used for model selection; when it is not empty the
    report is computed on it (``report["split"] == "test"``), else on ``val``.
    ``augmentation``: ``auto`` (chosen from the data: no flips for small or grayscale images such
    as digits and text), ``none``, ``light`` or ``strong`` (:mod:`workers.ml.augmentation`).
    ``model_preference``: ``more_accurate`` (resolution up to 224 px) or ``faster`` (at most
    128 px: ~3x fewer FLOPs on the device). ``allow_flips``: False never mirrors the images
    (text, signs: left and right matter), whatever the preset. ``device``: ``auto``, ``cpu``,
    ``cuda`` or ``cuda:N`` (:func:`workers.ml.devices.training_device`); None reads the
    worker's ``SAMPAN_TRAINING_DEVICE``, or with a ``recipe`` the recipe's kind of device
    (:func:`workers.ml.devices.replay_device`; a request's device of the other kind is refused).
    """

    train: list[SampleRef]
    val: list[SampleRef]
    labels: list[str]
    out_dir: Path
    budget_s: float
    seed: int = 0
    architecture: str = "mobilenet_v2"
    pretrained: bool | None = None
    recipe: dict[str, Any] | None = None
    test: list[SampleRef] = field(default_factory=list)
    augmentation: str = "auto"
    model_preference: str = "more_accurate"
    allow_flips: bool = True
    device: str | None = None


AUGMENTATIONS = ("auto", "none", "light", "strong")
MODEL_PREFERENCES = ("more_accurate", "faster")


@dataclass
class TrainResult:
    """What training produced. Paths are inside ``TrainRequest.out_dir``.

    ``metrics``: ``evaluated_on`` (``test`` or ``val``), ``val_accuracy`` and ``macro_f1`` (the
    exported ONNX model on the validation split), ``test_accuracy`` and ``test_macro_f1`` (on the
    test split, when there is one), ``best_epoch``, ``best_phase`` (the epoch kept).
    ``history``: one dict per evaluated epoch (``phase``, ``epoch``, ``epochs``, ``loss``,
    ``val_loss``, ``val_accuracy``, ``elapsed_s``; fine-tuning adds ``step`` and ``lr``).
    ``report``: :func:`workers.ml.evaluation.classification_report` of the exported model on the
    test split (``split: "test"``) or, without one, the validation split (``"val"``), plus
    ``validation`` (``accuracy``, ``macro_f1``, ``n``), ``imbalanced`` (largest training class >=
    3x the smallest), ``train_class_counts``, ``classes_not_evaluated`` (labels with training
    images but none in the evaluated split: the figures say nothing about them),
    ``predictions`` and ``skipped_samples``.
    ``parity``: :func:`workers.ml.export.check_parity`; the caller must refuse to register the
    model unless ``parity["passed"]``. ``recipe``: what was run (resolution and why, augmentation
    and why, learning rates, ``replans``, ``finetune_steps_done``, ``stop_reason``, timings,
    ONNX ``opset`` and ``ir_version``). ``elapsed_s``: wall-clock seconds of the whole call.
    """

    onnx_path: Path
    checkpoint_path: Path
    preprocessing: dict[str, Any]
    pretrained: bool
    weights_note: str
    metrics: dict[str, Any]
    history: list[dict[str, Any]] = field(default_factory=list)
    report: dict[str, Any] = field(default_factory=dict)
    parity: dict[str, Any] = field(default_factory=dict)
    recipe: dict[str, Any] = field(default_factory=dict)
    elapsed_s: float = 0.0
