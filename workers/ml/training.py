"""The two training phases: a linear probe on cached backbone features, then fine-tuning.

Linear probe first, then fine-tune (LP-FT, Kumar et al. 2022, "Fine-Tuning can Distort Pretrained
Features"): a trained head makes the first fine-tuning steps change the backbone less than a random
head would, and the probe alone is already a usable model if the budget ends early.
"""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from .data import ImageTensors
from .models import pooled_features
from .recipe import Recipe
from .specs import TrainingCancelled

__all__ = ["Progress", "TrainingState", "calibrate_step_s", "finetune", "train_head"]

_EVAL_BATCH = 64
_CALIBRATION_CACHE: dict[tuple[str, int, int], float] = {}


class Progress:
    """Forwards progress dicts to ``on_progress`` at most every ``min_interval_s`` seconds
    (phase and epoch ends always pass) and turns ``should_stop()`` into TrainingCancelled."""

    def __init__(
        self,
        on_progress: Callable[[dict[str, Any]], None],
        should_stop: Callable[[], bool],
        started: float,
        min_interval_s: float = 0.3,
    ) -> None:
        self._on_progress = on_progress
        self._should_stop = should_stop
        self.started = started
        self._min_interval_s = min_interval_s
        self._last = -math.inf
        #: Seconds still needed after the current phase (export, parity, report): added to eta_s.
        self.tail_s = 0.0

    def elapsed_s(self) -> float:
        return time.monotonic() - self.started

    def check(self) -> None:
        if self._should_stop():
            raise TrainingCancelled()

    def emit(self, event: dict[str, Any], *, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self._last < self._min_interval_s:
            return
        self._last = now
        self._on_progress({**event, "elapsed_s": round(now - self.started, 2)})


@dataclass
class TrainingState:
    """Best model so far (by validation accuracy, then lower validation loss) and the history."""

    best_state: dict[str, torch.Tensor] | None = None
    best_accuracy: float = -1.0
    best_loss: float = math.inf
    best_epoch: int = 0
    best_phase: str = ""
    history: list[dict[str, Any]] = field(default_factory=list)
    stopped_early: bool = False

    def offer(self, model: nn.Module, phase: str, epoch: int, accuracy: float, loss: float) -> None:
        if (accuracy, -loss) > (self.best_accuracy, -self.best_loss):
            self.best_state = copy.deepcopy(model.state_dict())
            self.best_accuracy, self.best_loss = accuracy, loss
            self.best_epoch, self.best_phase = epoch, phase


def _channels_last(images: torch.Tensor) -> torch.Tensor:
    return images.contiguous(memory_format=torch.channels_last)


def calibrate_step_s(model: nn.Module, num_classes: int, threads: int) -> float:
    """Seconds of one SGD step (batch 32, 96 px, channels_last), median of 3 after 2 warm-up steps.

    Cached per process so that repeated runs plan the same recipe. The model's parameters and
    buffers are restored afterwards (the steps use a throwaway optimizer-free backward).
    """
    key = (type(model).__name__, num_classes, threads)
    if key in _CALIBRATION_CACHE:
        return _CALIBRATION_CACHE[key]
    saved = copy.deepcopy(model.state_dict())
    generator = torch.Generator().manual_seed(0)
    images = _channels_last(torch.randn(32, 3, 96, 96, generator=generator))
    labels = torch.randint(0, num_classes, (32,), generator=generator)
    model.train()
    timings = []
    for _ in range(5):
        started = time.perf_counter()
        model.zero_grad(set_to_none=True)
        nn.functional.cross_entropy(model(images), labels).backward()
        timings.append(time.perf_counter() - started)
    model.zero_grad(set_to_none=True)
    model.load_state_dict(saved)
    step_s = sorted(timings[2:])[1]  # two warm-up steps: oneDNN builds its kernels
    _CALIBRATION_CACHE[key] = step_s
    return step_s


@torch.no_grad()
def evaluate(model: nn.Module, data: ImageTensors) -> tuple[float, float, torch.Tensor]:
    """(accuracy, mean cross-entropy, logits (N, C)) in eval mode."""
    model.eval()
    logits = torch.cat(
        [
            model(_channels_last(data.images[i : i + _EVAL_BATCH]))
            for i in range(0, len(data), _EVAL_BATCH)
        ]
    )
    loss = float(nn.functional.cross_entropy(logits, data.labels))
    accuracy = float((logits.argmax(1) == data.labels).float().mean())
    return accuracy, loss, logits


@torch.no_grad()
def _features(model: nn.Module, data: ImageTensors, progress: Progress) -> torch.Tensor:
    model.eval()
    chunks = []
    for i in range(0, len(data), _EVAL_BATCH):
        progress.check()
        chunks.append(pooled_features(model, _channels_last(data.images[i : i + _EVAL_BATCH])))
        progress.emit({"phase": "features", "step": i // _EVAL_BATCH + 1})
    return torch.cat(chunks)


def train_head(
    model: nn.Module,
    train: ImageTensors,
    val: ImageTensors,
    recipe: Recipe,
    state: TrainingState,
    progress: Progress,
) -> None:
    """Linear probe: backbone frozen (eval mode), features computed once, head trained on them.

    Only ``model.classifier[1]`` changes (Adam, ``recipe.head_lr``, ``recipe.head_epochs``
    epochs; dropout is skipped because the features are fixed).
    """
    head: nn.Linear = model.classifier[1]
    train_features = _features(model, train, progress)
    val_features = _features(model, val, progress)
    optimizer = torch.optim.Adam(head.parameters(), lr=recipe.head_lr, weight_decay=1e-4)
    generator = torch.Generator().manual_seed(recipe.seed)
    for epoch in range(1, recipe.head_epochs + 1):
        progress.check()
        order = torch.randperm(len(train), generator=generator)
        total = 0.0
        for start in range(0, len(order), recipe.batch_size):
            index = order[start : start + recipe.batch_size]
            loss = nn.functional.cross_entropy(head(train_features[index]), train.labels[index])
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            total += loss.item() * len(index)
        progress.emit(
            {"phase": "head", "epoch": epoch, "epochs": recipe.head_epochs,
             "loss": round(total / len(train), 4)}
        )
    with torch.no_grad():
        logits = head(val_features)
        val_loss = float(nn.functional.cross_entropy(logits, val.labels))
        accuracy = float((logits.argmax(1) == val.labels).float().mean())
    state.offer(model, "head", recipe.head_epochs, accuracy, val_loss)
    entry = {"phase": "head", "epoch": recipe.head_epochs, "epochs": recipe.head_epochs,
             "loss": round(total / len(train), 4), "val_loss": round(val_loss, 4),
             "val_accuracy": round(accuracy, 4), "elapsed_s": round(progress.elapsed_s(), 2)}
    state.history.append(entry)
    progress.emit(entry, force=True)


def _learning_rate(recipe: Recipe, step: int, total: int) -> float:
    """Linear warm-up to ``recipe.lr``, then cosine decay to 0 (Loshchilov & Hutter 2017)."""
    if step < recipe.warmup_steps:
        return recipe.lr * (step + 1) / recipe.warmup_steps
    progress = (step - recipe.warmup_steps) / max(1, total - recipe.warmup_steps)
    return recipe.lr * 0.5 * (1 + math.cos(math.pi * progress))


def finetune(
    model: nn.Module,
    train: ImageTensors,
    val: ImageTensors,
    recipe: Recipe,
    state: TrainingState,
    progress: Progress,
    deadline: float,
) -> None:
    """Train every layer (SGD, momentum, cosine schedule) for ``recipe.finetune_steps`` steps,
    evaluating on ``val`` after each epoch. Stops early (``state.stopped_early``) when the next
    step would pass ``deadline`` (``time.monotonic()`` seconds)."""
    steps_per_epoch = math.ceil(len(train) / recipe.batch_size)
    total = min(recipe.finetune_steps, recipe.finetune_epochs * steps_per_epoch)
    if total <= 0:
        return
    decay, no_decay = [], []
    for name, parameter in model.named_parameters():
        # No weight decay on BatchNorm scales and biases (standard torchvision reference recipe).
        (no_decay if parameter.ndim <= 1 else decay).append(parameter)
    optimizer = torch.optim.SGD(
        [{"params": decay, "weight_decay": recipe.weight_decay},
         {"params": no_decay, "weight_decay": 0.0}],
        lr=recipe.lr, momentum=recipe.momentum, nesterov=True,
    )
    generator = torch.Generator().manual_seed(recipe.seed + 1)
    step = 0
    step_times: list[float] = []
    epochs = math.ceil(total / steps_per_epoch)
    for epoch in range(1, epochs + 1):
        model.train()
        order = torch.randperm(len(train), generator=generator)
        running, seen = 0.0, 0
        for start in range(0, len(order), recipe.batch_size):
            if step >= total:
                break
            progress.check()
            average = sum(step_times[-20:]) / max(1, len(step_times[-20:]))
            if step_times and time.monotonic() + average > deadline:
                state.stopped_early = True
                break
            began = time.monotonic()
            for group in optimizer.param_groups:
                group["lr"] = _learning_rate(recipe, step, total)
            index = order[start : start + recipe.batch_size]
            loss = nn.functional.cross_entropy(
                model(_channels_last(train.images[index])), train.labels[index]
            )
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            step += 1
            running += loss.item() * len(index)
            seen += len(index)
            step_times.append(time.monotonic() - began)
            progress.emit({
                "phase": "finetune", "epoch": epoch, "epochs": epochs, "step": step,
                "steps": total, "loss": round(running / seen, 4),
                "eta_s": round(
                    (total - step) * sum(step_times[-20:]) / len(step_times[-20:])
                    + progress.tail_s, 1
                ),
            })
        if seen == 0:
            break
        accuracy, val_loss, _ = evaluate(model, val)
        state.offer(model, "finetune", epoch, accuracy, val_loss)
        entry = {"phase": "finetune", "epoch": epoch, "epochs": epochs, "step": step,
                 "loss": round(running / seen, 4), "val_loss": round(val_loss, 4),
                 "val_accuracy": round(accuracy, 4), "elapsed_s": round(progress.elapsed_s(), 2)}
        state.history.append(entry)
        progress.emit(entry, force=True)
        if state.stopped_early:
            break
