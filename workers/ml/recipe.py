"""The training recipe and how it is planned from a time budget.

The plan is a pure function of the request (budget, dataset sizes, image sizes, weights) and one
measured number, the time of a training step at 96 px (measured once per process and cached), so
two runs of the same request in one worker plan the same recipe and, with the same seed, train the
same model. Wall-clock time only enters through a guard that stops training early when a run falls
behind its plan (recorded as ``stopped_early``). Reasons and measurements:
docs/decisions/training-recipe.md.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, fields
from typing import Any

__all__ = ["BudgetCosts", "Recipe", "plan_recipe", "target_resolution"]

#: Input sizes tried, in px (square). 96 is the smallest that keeps MobileNetV2's last feature map
#: at 3x3 (stride 32); 224 is its ImageNet training size.
RESOLUTIONS = (96, 128, 160, 224)
#: Fine-tuning epochs a larger resolution must still afford, else a smaller one is used.
MIN_FINETUNE_EPOCHS = 4
#: Fine-tuning epochs beyond which more time is not spent (digits-size datasets converge earlier).
MAX_FINETUNE_EPOCHS = 30
#: Seconds kept for the ONNX export: the dynamo exporter takes 6-9 s for MobileNetV2 on the
#: 2-core CI machines (measured, docs/decisions/training-recipe.md). Scaled up when the measured
#: step time shows a slower (or busier) machine than the reference step of 0.25 s.
EXPORT_RESERVE_S = 10.0
#: The TorchScript exporter (``dynamo=False``, deprecated) writes the same network in ~0.3 s. It is
#: used when the dynamo export would take more than this share of the budget; the parity gate
#: checks the file either way.
TORCHSCRIPT_EXPORT_RESERVE_S = 1.5
MAX_EXPORT_SHARE = 0.25
_REFERENCE_STEP_S = 0.25
#: Share of the fine-tuning time actually planned; the rest absorbs step-time noise.
PLAN_MARGIN = 0.85
#: Largest in-memory tensor cache, bytes (N x 3 x H x W float32).
MAX_CACHE_BYTES = 3 * 1024**3
_DECODE_S_PER_IMAGE = 0.002
_DECODE_S_PER_PIXEL = 2e-8
_FORWARD_SHARE = 0.3  # an eval forward pass costs ~0.3 of a training step (measured 0.25-0.3)


@dataclass
class Recipe:
    """What one training run does. ``lr`` is the fine-tuning peak learning rate (SGD, momentum,
    cosine decay after a linear warm-up); ``head_lr`` the Adam rate of the linear-probe phase."""

    architecture: str = "mobilenet_v2"
    resolution: int = 96
    batch_size: int = 32
    head_epochs: int = 40
    head_lr: float = 3e-3
    finetune_epochs: int = 0
    finetune_steps: int = 0
    lr: float = 0.01
    momentum: float = 0.9
    weight_decay: float = 4e-5
    warmup_steps: int = 0
    augmentation: str = "none"
    exporter: str = "dynamo"
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
    """The inputs of the plan. ``step_s_96``: seconds of one training step, batch 32, 96 px."""

    budget_s: float
    n_train: int
    n_val: int
    source_pixels: int  # median width x height of the images, px
    shorter_side: int  # median min(width, height) of the images, px
    step_s_96: float
    pretrained: bool


def target_resolution(shorter_side: int) -> int:
    """Smallest candidate >= the images' shorter side: no detail is thrown away by the resize, and
    nothing is spent on pixels the images do not have (28 px digits -> 96, 150 px -> 160)."""
    for resolution in RESOLUTIONS:
        if resolution >= shorter_side:
            return resolution
    return RESOLUTIONS[-1]


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
    n = costs.n_train + costs.n_val
    forward_per_image = _step_s(costs, resolution, batch) * _FORWARD_SHARE / batch
    return {
        "setup_s": 1.0 + 6 * costs.step_s_96,  # weights, model, calibration with warm-up
        "decode_s": n * (_DECODE_S_PER_IMAGE + costs.source_pixels * _DECODE_S_PER_PIXEL),
        "head_s": (n * forward_per_image + 0.5) if costs.pretrained else 0.0,
        "export_s": _export_plan(costs)[1],
        # parity: torch + onnxruntime over the validation split, plus the session and report
        "final_s": 1.0 + 2 * costs.n_val * forward_per_image,
    }


def plan_recipe(costs: BudgetCosts, *, seed: int, threads: int, architecture: str) -> Recipe:
    """Choose resolution, fine-tuning epochs/steps and learning rates for ``costs.budget_s``."""
    batch = 32
    steps_per_epoch = max(1, math.ceil(costs.n_train / batch))
    chosen = RESOLUTIONS[0]
    for resolution in sorted(RESOLUTIONS, reverse=True):
        if resolution > target_resolution(costs.shorter_side):
            continue
        cache_bytes = (costs.n_train + costs.n_val) * 3 * resolution**2 * 4
        fixed = sum(_fixed_costs(costs, resolution, batch).values())
        epoch_s = steps_per_epoch * _step_s(costs, resolution, batch)
        if cache_bytes <= MAX_CACHE_BYTES and (
            costs.budget_s - fixed
        ) * PLAN_MARGIN >= MIN_FINETUNE_EPOCHS * epoch_s:
            chosen = resolution
            break
    fixed_costs = _fixed_costs(costs, chosen, batch)
    step_s = _step_s(costs, chosen, batch)
    val_s = costs.n_val * step_s * _FORWARD_SHARE / batch
    finetune_s = max(0.0, (costs.budget_s - sum(fixed_costs.values())) * PLAN_MARGIN)
    epochs = min(MAX_FINETUNE_EPOCHS, int(finetune_s // (steps_per_epoch * step_s + val_s)))
    if epochs >= 1:
        steps = epochs * steps_per_epoch
    else:  # less than one epoch fits: a truncated epoch, or none when it would be a few steps
        steps = max(0, int((finetune_s - val_s) // step_s))
        steps = steps if steps >= 5 else 0
        epochs = 1 if steps else 0
    return Recipe(
        architecture=architecture,
        resolution=chosen,
        batch_size=batch,
        head_epochs=40 if costs.pretrained else 0,
        finetune_epochs=epochs,
        finetune_steps=steps,
        # Pretrained: the backbone is already good, a small rate keeps it (Kornblith et al. 2019
        # found 0.01-ish best for SGD fine-tuning at batch 32-256); random init needs more.
        lr=0.01 if costs.pretrained else 0.05,
        # One epoch of linear warm-up (at most a quarter of the run): the first full-rate steps
        # through a freshly fitted head otherwise knock the backbone far off (measured).
        warmup_steps=min(steps // 4, steps_per_epoch),
        exporter=_export_plan(costs)[0],
        pretrained=costs.pretrained,
        seed=seed,
        threads=threads,
        planned={
            **{k: round(v, 3) for k, v in fixed_costs.items()},
            "budget_s": costs.budget_s,
            "step_s_96": round(costs.step_s_96, 4),
            "step_s": round(step_s, 4),
            "finetune_s": round(finetune_s, 3),
            "target_resolution": target_resolution(costs.shorter_side),
        },
    )
