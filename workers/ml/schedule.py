"""The fine-tuning learning-rate schedule and its re-planning from the clock.

Linear warm-up then cosine decay to zero at the planned total (:func:`learning_rate_factor`);
the total is re-planned from the measured pace after the first few steps and at each epoch end
(:class:`Schedule`), and
:func:`scheduled_factor` continues the cosine from the phase reached when it changes. Every
change is recorded in ``Recipe.replans`` so that a replay applies the same rate at every step.
"""

from __future__ import annotations

import math
import time

from .recipe import Recipe

__all__ = ["ANNEAL_EPOCHS", "Schedule", "learning_rate_factor", "scheduled_factor"]

#: When validation stops improving, the rest of the cosine schedule is compressed into this many
#: epochs (a run stopped outright ends at a high learning rate).
ANNEAL_EPOCHS = 2


def learning_rate_factor(step: int, total: int, warmup_steps: int) -> float:
    """Linear warm-up from 1 % to 100 % over ``warmup_steps``, then cosine decay to 0 at ``total``
    (Loshchilov & Hutter 2017, "SGDR"; Goyal et al. 2017 for the warm-up)."""
    if step < warmup_steps:
        return 0.01 + 0.99 * step / warmup_steps
    progress = min(1.0, (step - warmup_steps) / max(1, total - warmup_steps))
    return 0.5 * (1 + math.cos(math.pi * progress))


def scheduled_factor(step: int, replans: list[list[int]], warmup_steps: int) -> float:
    """:func:`learning_rate_factor` when the total changes during the run.

    ``replans`` is ``Recipe.replans`` (``[step, total]`` pairs in order; entries after ``step``
    are ignored, so a replay that holds the whole list gets the same factor at every step). At a
    re-plan the schedule does not jump: it continues along the cosine from the phase reached
    (phase 0 at the end of the warm-up, 1 at the total) to phase 1 at the new total. So finishing
    early at factor 0.5 anneals 0.5 -> 0 over the remaining steps, and a re-plan that adds steps
    slows the decay from there on. Returns the factor in [0, 1] applied to the base rates."""
    if step < warmup_steps:
        return 0.01 + 0.99 * step / warmup_steps
    phase, start, total = 0.0, warmup_steps, None
    for at, new_total in replans:
        if at > step:
            break
        if total is not None and at > start:
            phase += (1.0 - phase) * min(1.0, (at - start) / max(1, total - start))
            start = at
        total = new_total
    if total is None:
        raise ValueError("replans: the first entry must be [0, planned total]")
    phase += (1.0 - phase) * min(1.0, (step - start) / max(1, total - start))
    return 0.5 * (1 + math.cos(math.pi * phase))


class Schedule:
    """Total fine-tuning steps: planned, then re-planned from the measured pace so that training
    ends at ``deadline``: at each epoch end, and after ``recipe.EARLY_REPLAN_STEP`` steps when
    the first epoch is longer than that. Each change is recorded in
    ``recipe.replans`` as ``[step, total]``; a replayed recipe follows the recorded list and
    ignores the clock, so it applies the same learning rate at every step."""

    def __init__(self, recipe: Recipe, steps_per_epoch: int, deadline: float) -> None:
        self.recipe = recipe
        self.steps_per_epoch = steps_per_epoch
        self.deadline = deadline
        self.replay = bool(recipe.replans)
        if not self.replay:
            recipe.replans = [[0, recipe.finetune_steps]]
        self.total = recipe.replans[0][1]
        self.cap: int | None = None  # set when finishing early: re-plans never go past it

    def finish_within(self, step: int, steps: int) -> bool:
        """End the run at most ``steps`` steps after ``step`` (recorded like a re-plan).
        Returns whether that shortened the run (False: it ends that soon anyway)."""
        total = min(self.total, step + steps)
        if total == self.total:
            return False
        self.cap = self.total = total
        self.recipe.replans.append([step, total])
        return True

    def at(self, step: int) -> int:
        for when, total in self.recipe.replans:
            if when <= step:
                self.total = total
        return self.total

    def replan(self, step: int, step_s: float, eval_s: float, *, extend_only: bool = False
               ) -> None:
        """Re-plan the total from the seconds per training step and per validation (precise BN +
        evaluation, once per epoch): as many steps as fit before the deadline with their
        validations, ending mid-epoch if that is where the time runs out. At epoch ends
        ``finetune`` passes the median of the last 200 steps and of the last 3 validations, so
        one slow epoch is not taken for the machine's speed, and one re-plan cuts at most 30 % of
        the steps left (a burst of load on a shared machine cut a run from 154 planned steps to
        8, measured). ``extend_only``: the early re-plan in the first epoch, whose validation
        time is still an estimate, only ever adds steps. The per-step deadline guard still ends
        a run that really is late (``stop_reason="deadline"``)."""
        if self.replay or step_s <= 0:
            return
        if self.cap is not None:
            steps_cap = self.cap
        else:
            steps_cap = self.recipe.max_finetune_epochs * self.steps_per_epoch
        left_s = self.deadline - time.monotonic() - eval_s  # the last validation always runs
        steps_left = max(0, int(left_s / (step_s + eval_s / self.steps_per_epoch)))
        steps_left = max(steps_left, int(0.7 * (self.total - step)))
        # not a few stray steps, unless the run is still in its warm-up (cut there, it would end
        # without a cosine)
        stray = steps_left < 3 and step > self.recipe.warmup_steps
        total = step + (0 if stray else steps_left)
        total = max(step, min(total, steps_cap))
        if extend_only and total <= self.total:
            return
        if total != self.total:
            self.total = total
            self.recipe.replans.append([step, total])
