"""What a training run reports and keeps as it goes: :class:`Progress` (throttled progress
events, the budget's fraction and time left, cancellation) and :class:`TrainingState` (the model
kept by the two-standard-error rule, the history, early stopping's counter)."""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from .specs import TrainingCancelled

__all__ = ["Progress", "TrainingState"]


class Progress:
    """Forwards progress dicts to ``on_progress`` at most every ``min_interval_s`` seconds
    (phase and epoch ends always pass) and turns ``should_stop()`` into TrainingCancelled.

    Every event gets ``elapsed_s`` and ``fraction`` (share of the budget spent, 0..1, never
    decreasing) and, unless the event sets it, ``eta_s`` = seconds to the end of the budget (the
    engine plans to use all of it; never increasing).
    """

    def __init__(
        self,
        on_progress: Callable[[dict[str, Any]], None],
        should_stop: Callable[[], bool],
        started: float,
        budget_s: float = math.inf,
        min_interval_s: float = 0.3,
    ) -> None:
        self._on_progress = on_progress
        self._should_stop = should_stop
        self.started = started
        self.budget_s = budget_s
        self._min_interval_s = min_interval_s
        self._last = -math.inf
        self._fraction = 0.0
        self._eta_s = math.inf
        #: Seconds still needed after training (export, parity, report).
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
        elapsed = now - self.started
        done = event.get("phase") == "done"
        if math.isfinite(self.budget_s):
            self._fraction = max(self._fraction,
                                 1.0 if done else min(0.99, elapsed / self.budget_s))
        eta = event.get("eta_s", max(0.0, self.budget_s - elapsed))
        self._eta_s = 0.0 if done else min(self._eta_s, float(eta))
        self._on_progress({**event, "elapsed_s": round(elapsed, 2),
                           "fraction": round(self._fraction, 4),
                           **({"eta_s": round(self._eta_s, 1)}
                              if math.isfinite(self._eta_s) else {})})


@dataclass
class TrainingState:
    """The model kept so far, the history, and what early stopping watches.

    Scored by validation BALANCED accuracy when the caller passes it (``score``: the mean of the
    per-class recalls, scikit-learn's ``balanced_accuracy_score``; plain accuracy on a balanced
    split): on 9 images of one class and 1 of another, an epoch that never predicts the small
    class scores 90 % accuracy but 50 % balanced accuracy, and must not be kept as "within noise"
    of a 100 % epoch (seen in review).

    Kept: the LATEST epoch whose validation score is within two standard errors of the best
    score seen (``sqrt(p (1 - p) / n)``, the binomial standard error of an accuracy measured
    on n images; at least one image), i.e. the most trained model unless it is clearly worse:
    a variant of the "one standard error rule" (Breiman et al. 1984; Hastie et al., ESL 7.10).
    On 200 validation images one image is 0.5 points: keeping the most accurate epoch, or the
    latest within ONE standard error, kept lucky epochs at a high learning rate (99.0%
    validation at epoch 3, test 97.0%) over the annealed model (test 98.0-98.8%), and keeping
    the lowest validation loss chose epochs 3-5 as well (the loss of a model trained with label
    smoothing rises as it grows confident while its accuracy still improves; measured).
    Early stopping counts epochs without a new best score AND without a new lowest loss.
    """

    best_state: dict[str, torch.Tensor] | None = None
    best_accuracy: float = -1.0  # the highest validation score seen (balanced accuracy or accuracy)
    best_loss: float = math.inf  # the lowest validation loss seen
    kept_accuracy: float = -1.0  # plain validation accuracy of the model kept
    best_epoch: int = 0  # the epoch kept
    best_phase: str = ""
    history: list[dict[str, Any]] = field(default_factory=list)
    stopped_early: bool = False
    stop_reason: str | None = None
    epochs_since_best: int = 0

    def offer(self, model: nn.Module, phase: str, epoch: int, accuracy: float, loss: float,
              n: int = 0, score: float | None = None) -> None:
        """Consider the model after an epoch evaluated on ``n`` validation images: ``accuracy``
        and mean cross-entropy ``loss`` on them, and ``score`` (the balanced accuracy; the
        accuracy when not given) that chooses the model kept."""
        score = accuracy if score is None else score
        best = max(self.best_accuracy, score)
        tolerance = max(2 * math.sqrt(best * (1 - best) / n), 1 / n) if n else 0.0
        improved = score > self.best_accuracy or loss < self.best_loss
        if score >= best - tolerance - 1e-9 or self.best_state is None:
            self.best_state = copy.deepcopy(model.state_dict())
            self.kept_accuracy = accuracy
            self.best_epoch, self.best_phase = epoch, phase
        self.best_accuracy = best
        self.best_loss = min(self.best_loss, loss)
        self.epochs_since_best = 0 if improved else self.epochs_since_best + 1
