"""The training recipe and how it is planned from a time budget.

The first plan is a function of the request (budget, dataset sizes, image sizes, weights) and one
measured number, the time of a training step at 96 px (measured once per process). Fine-tuning
then reads the clock: after each epoch (and once early in the first) the number of steps left is
re-planned from the measured pace so that the run ends at the budget
(:class:`workers.ml.schedule.Schedule`); every
re-plan is recorded in ``Recipe.replans`` so that a recorded recipe replays the same learning rate
at every step. Reasons and measurements: docs/decisions/training-recipe.md.
"""

from __future__ import annotations

import math
import os
from dataclasses import asdict, dataclass, field, fields
from typing import Any

__all__ = ["EARLY_REPLAN_STEP", "BudgetCosts", "Recipe", "plan_recipe", "plan_warmup_steps",
           "target_resolution"]

#: Input sizes tried, in px (square). 96 is the smallest that keeps MobileNetV2's last feature map
#: at 3x3 (stride 32); 224 is its ImageNet training size.
RESOLUTIONS = (96, 128, 160, 224)
#: ``model_preference="faster"`` caps the resolution here: ~3x fewer FLOPs than 224 px.
FASTER_MAX_RESOLUTION = 128
#: Fine-tuning epochs a larger resolution must still afford, else a smaller one is used: the
#: issue's measurements had 5 epochs at 224 px lose to 23 epochs at 160 px in 600 s.
MIN_EPOCHS_AT_RESOLUTION = 12
#: Fine-tuning epochs beyond which more time is not spent; early stopping usually ends sooner.
MAX_FINETUNE_EPOCHS = 100
#: Seconds kept for the ONNX export with the dynamo exporter (6-9 s for MobileNetV2 on the 2-core
#: CI machines), scaled by the measured slowdown of this machine against the reference step.
EXPORT_RESERVE_S = 10.0
#: The TorchScript exporter (``dynamo=False``) writes the same network in ~0.3 s; used when the
#: dynamo reserve would take more than ``MAX_EXPORT_SHARE`` of the budget. Same parity gate.
TORCHSCRIPT_EXPORT_RESERVE_S = 0.5  # measured 0.23-0.3 s
MAX_EXPORT_SHARE = 0.08
_REFERENCE_STEP_S = 0.15
#: Warm-up: a third of an epoch (at most a tenth of the run; :func:`plan_warmup_steps`). The head
#: is already fitted by the probe, so the backbone needs few steps at low rates: a whole epoch of
#: warm-up spent ~10% of a 30 s run there (digits, 3 seeds, test 98.1% with 1 epoch vs 98.7% with
#: 0.3 epoch and the EMA below; measured, docs/decisions/training-recipe.md).
WARMUP_EPOCHS = 0.3
#: ... and at least this many steps (still at most a tenth of the run): on 66 images (3 steps per
#: epoch) a third of an epoch was 1 step, and validation fell from 96 % to 17 % at the peak rate
#: (measured, docs/decisions/training-recipe.md).
MIN_WARMUP_STEPS = 10
#: Fine-tuning also re-plans after this many steps of its first epoch (when the epoch is longer):
#: the first plan's pace is the calibration's estimate, and a loaded 2-core host planned one
#: 7-step epoch (digits, 20 s) whose cosine ended inside it; the 18 steps added at the epoch's end
#: all trained at learning rate 0 and the probe was kept (val 0.82; 0.95 when the run had its
#: time). The warm-up lasts at least until the first re-plan, so the cosine starts after it.
EARLY_REPLAN_STEP = 4
#: A last batch smaller than this is dropped from the epoch (a new random order each epoch, so no
#: image is left out for good): BatchNorm in train mode normalises by the batch's own statistics,
#: and those of 2 images are noise that also enters the running averages.
MIN_LAST_BATCH = 8
#: The weight average spans about a tenth of the planned epochs, between 1 and 2 epochs: a 2-epoch
#: average still held weights from the warm-up at the end of a 9-epoch run.
EMA_SHARE, MIN_EMA_EPOCHS, MAX_EMA_EPOCHS = 0.1, 1.0, 2.0
#: Largest in-memory image cache of one training or compression run, bytes (N x 3 x H x W uint8
#: for classification; the decoded images for detection). The planner picks a resolution whose
#: cache fits; a dataset that does not fit even at the smallest is refused before anything is
#: decoded (an out-of-memory kill would look like a lost worker). ``SAMPAN_TRAINING_CACHE_BYTES``
#: in the worker's environment sets it.
MAX_CACHE_BYTES = int(os.environ.get("SAMPAN_TRAINING_CACHE_BYTES") or 2 * 1024**3)
_DECODE_S_PER_IMAGE = 0.001
_DECODE_S_PER_PIXEL = 1.5e-8
_FORWARD_SHARE = 0.3  # an eval forward pass costs ~0.3 of a training step (measured 0.25-0.3)


@dataclass
class Recipe:
    """What one training run does.

    Fine-tuning: AdamW, backbone peak rate ``lr``, head peak rate ``head_finetune_lr``, linear
    warm-up over ``warmup_steps`` then cosine decay to 0 at the (re-planned) total, label
    smoothing, augmentation preset. ``head_lr``: the Adam rate of the linear probe.
    ``finetune_steps``: first planned total; ``replans``: ``[step, total]`` changes of the total;
    ``finetune_steps_done``: steps actually run (a replay stops there too).
    """

    architecture: str = "mobilenet_v2"
    resolution: int = 96
    resolution_reason: str = ""
    resolution_why: dict[str, Any] = field(default_factory=dict)  # the reason as data (console)
    model_preference: str = "more_accurate"
    batch_size: int = 32
    head_epochs: int = 40
    head_lr: float = 3e-3
    finetune_steps: int = 0
    finetune_steps_done: int = 0
    max_finetune_epochs: int = MAX_FINETUNE_EPOCHS
    replans: list[list[int]] = field(default_factory=list)
    lr: float = 1e-3
    head_finetune_lr: float = 3e-3
    weight_decay: float = 0.02
    label_smoothing: float = 0.1
    precise_bn_images: int = 0  # off: it cost test accuracy (see training.py)
    ema_epochs: float = 2.0
    warmup_steps: int = 0
    patience: int = 5
    augmentation: str = "light"
    augmentation_flip: bool = False
    augmentation_reason: str = ""
    augmentation_why: dict[str, Any] = field(default_factory=dict)
    class_weights: list[float] | None = None
    exporter: str = "torchscript"
    pretrained: bool = True
    seed: int = 0
    threads: int = 1
    planned: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Recipe:
        """Unknown keys (e.g. measurements added to a recorded recipe) are ignored."""
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


@dataclass(frozen=True)
class BudgetCosts:
    """The inputs of the plan. ``step_s_96``: seconds of one training step, batch 32, 96 px.
    ``n_eval``: images evaluated after training (validation for parity, plus test)."""

    budget_s: float
    n_train: int
    n_val: int
    source_pixels: int  # median width x height of the images, px
    shorter_side: int  # median min(width, height) of the images, px
    step_s_96: float
    pretrained: bool
    n_test: int = 0
    model_preference: str = "more_accurate"
    spent_s: float | None = None  # seconds already spent when the plan is made


def target_resolution(shorter_side: int, max_resolution: int = RESOLUTIONS[-1]) -> int:
    """Smallest candidate >= the images' shorter side, at most ``max_resolution``: no detail is
    thrown away by the resize, and nothing is spent on pixels the images do not have."""
    allowed = [r for r in RESOLUTIONS if r <= max_resolution]
    for resolution in allowed:
        if resolution >= shorter_side:
            return resolution
    return allowed[-1]


def _step_s(costs: BudgetCosts, resolution: int, batch: int) -> float:
    return costs.step_s_96 * (resolution / 96) ** 2 * batch / 32


def _export_plan(costs: BudgetCosts) -> tuple[str, float]:
    """(exporter, seconds reserved for it)."""
    slowdown = min(3.0, max(1.0, costs.step_s_96 / _REFERENCE_STEP_S))
    dynamo_s = EXPORT_RESERVE_S * slowdown
    if dynamo_s <= MAX_EXPORT_SHARE * costs.budget_s:
        return "dynamo", dynamo_s
    return "torchscript", TORCHSCRIPT_EXPORT_RESERVE_S * slowdown


def _fixed_costs(costs: BudgetCosts, resolution: int, batch: int) -> dict[str, float]:
    """Seconds of everything but fine-tuning, estimated from the plan's inputs only."""
    n = costs.n_train + costs.n_val + costs.n_test
    forward_per_image = _step_s(costs, resolution, batch) * _FORWARD_SHARE / batch
    return {
        # weights, model, calibration: measured when the plan is made after them (the clock)
        "setup_s": costs.spent_s if costs.spent_s is not None else 1.0 + 6 * costs.step_s_96,
        "decode_s": n * (_DECODE_S_PER_IMAGE + costs.source_pixels * _DECODE_S_PER_PIXEL),
        # BatchNorm adaptation + features of train, features of val, 40 epochs of the head
        "head_s": ((2 * costs.n_train + costs.n_val) * forward_per_image + 0.5)
        if costs.pretrained else 0.0,
        "export_s": _export_plan(costs)[1],
        # parity over validation (torch + onnxruntime), test through onnxruntime, the report
        "final_s": 0.3 + (2 * costs.n_val + costs.n_test) * forward_per_image,
    }


def _resolution(costs: BudgetCosts, batch: int, steps_per_epoch: int
                ) -> tuple[int, str, dict[str, Any]]:
    """(resolution px, the reason in English, the reason as data for translation:
    ``{"code": "shorter_side" | "budget" | "smallest", "shorter_side", "target", "faster_cap",
    "budget_s", "min_epochs"}``)."""
    cap = FASTER_MAX_RESOLUTION if costs.model_preference == "faster" else RESOLUTIONS[-1]
    target = target_resolution(costs.shorter_side, cap)
    faster_cap = costs.model_preference == "faster" and target == cap
    why = {"shorter_side": costs.shorter_side, "target": target, "faster_cap": faster_cap,
           "budget_s": round(costs.budget_s), "min_epochs": MIN_EPOCHS_AT_RESOLUTION}
    why_target = (f"the images' shorter side is {costs.shorter_side} px"
                  + (" (the faster model is capped at 128 px)" if faster_cap else ""))
    n = costs.n_train + costs.n_val + costs.n_test
    for resolution in sorted((r for r in RESOLUTIONS if r <= target), reverse=True):
        fixed = sum(_fixed_costs(costs, resolution, batch).values())
        epoch_s = steps_per_epoch * _step_s(costs, resolution, batch) * (1 + _FORWARD_SHARE / 3)
        epochs = (costs.budget_s - fixed) / epoch_s if epoch_s else 0
        if n * 3 * resolution**2 > MAX_CACHE_BYTES:
            continue
        if epochs >= MIN_EPOCHS_AT_RESOLUTION or resolution == RESOLUTIONS[0]:
            if resolution == target:
                return resolution, f"{resolution} px: {why_target}", {**why, "code": "shorter_side"}
            return resolution, (f"{resolution} px: {why_target}, but {target} px would leave "
                                f"time for fewer than {MIN_EPOCHS_AT_RESOLUTION} epochs in "
                                f"{costs.budget_s:.0f} s"), {**why, "code": "budget"}
    return (RESOLUTIONS[0], f"{RESOLUTIONS[0]} px: the smallest size this network takes",
            {**why, "code": "smallest"})


def steps_per_epoch(n_train: int, batch: int) -> int:
    """Training steps in one epoch of ``n_train`` images: full batches, plus the partial last one
    when it holds at least ``MIN_LAST_BATCH`` images (or is the only one)."""
    full, rest = divmod(n_train, batch)
    return max(1, full + (1 if rest >= MIN_LAST_BATCH or full == 0 else 0))


def plan_warmup_steps(steps: int, epoch_steps: int) -> int:
    """Warm-up steps of a plan of ``steps`` fine-tuning steps, ``epoch_steps`` per epoch:
    ``WARMUP_EPOCHS`` of an epoch, at least ``MIN_WARMUP_STEPS``, at most a tenth of the run (at
    least 1 step), but never ending before the first re-plan (step ``EARLY_REPLAN_STEP``, or the
    end of a shorter first epoch), so that a re-plan always comes before the cosine starts. That
    floor wins in runs under 40 steps of epochs over 4 steps; a run no longer than its first
    re-plan is all warm-up. A plan of 5-7 steps that is not extended ends at 1.0-0.25 of the
    peak rate (docs/decisions/training-recipe.md)."""
    tenth = max(1, steps // 10)
    first_replan = min(EARLY_REPLAN_STEP, epoch_steps, steps)
    return max(first_replan,
               min(tenth, max(MIN_WARMUP_STEPS, math.ceil(WARMUP_EPOCHS * epoch_steps))))


def plan_recipe(costs: BudgetCosts, *, seed: int, threads: int, architecture: str) -> Recipe:
    """Choose resolution, the first fine-tuning plan and learning rates for ``costs.budget_s``."""
    batch = 32
    epoch_steps = steps_per_epoch(costs.n_train, batch)
    chosen, reason, why = _resolution(costs, batch, epoch_steps)
    fixed_costs = _fixed_costs(costs, chosen, batch)
    step_s = _step_s(costs, chosen, batch)
    val_s = costs.n_val * step_s * _FORWARD_SHARE / batch
    finetune_s = max(0.0, costs.budget_s - sum(fixed_costs.values()))
    epochs = min(MAX_FINETUNE_EPOCHS, int(finetune_s // (epoch_steps * step_s + val_s)))
    if epochs >= 1:
        steps = epochs * epoch_steps
    else:  # less than one epoch fits: a truncated epoch, or none when it would be a few steps
        steps = max(0, int((finetune_s - val_s) // step_s))
        steps = steps if steps >= 5 else 0
        epochs = 1 if steps else 0
    return Recipe(
        architecture=architecture,
        resolution=chosen,
        resolution_reason=reason,
        resolution_why=why,
        model_preference=costs.model_preference,
        batch_size=batch,
        head_epochs=40 if costs.pretrained else 0,
        finetune_steps=steps,
        lr=1e-3 if costs.pretrained else 3e-3,
        head_finetune_lr=3e-3,
        warmup_steps=plan_warmup_steps(steps, epoch_steps),
        ema_epochs=min(MAX_EMA_EPOCHS, max(MIN_EMA_EPOCHS, EMA_SHARE * epochs)),
        patience=max(6, math.ceil(0.25 * epochs)),
        exporter=_export_plan(costs)[0],
        pretrained=costs.pretrained,
        seed=seed,
        threads=threads,
        planned={
            **{k: round(v, 3) for k, v in fixed_costs.items()},
            "budget_s": costs.budget_s,
            "step_s_96": round(costs.step_s_96, 4),
            "step_s": round(step_s, 4),
            "val_s": round(val_s, 4),
            "finetune_s": round(finetune_s, 3),
            "epochs": epochs,
            "target_resolution": target_resolution(costs.shorter_side),
        },
    )
