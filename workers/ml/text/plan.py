"""The text trainer's budget planner: how many Adam steps or L-BFGS iterations each candidate
gets within the seconds a job has, from the per-unit costs that calibration measured
(:func:`workers.ml.text.solvers.calibrate`). Used by
:func:`workers.ml.text.train.train_text_classifier`, which plans a fill candidate again when
its turn comes."""

from __future__ import annotations

import math
from typing import Any

from . import reasons
from .solvers import LBFGS_CHUNK, MAX_VALIDATIONS, FamilyConfig, steps_per_epoch

__all__ = ["FILL_FAMILIES", "cost_s", "minimum_units", "plan_candidates", "plan_fill",
           "target_units"]

#: Families planned after all the others, with the time they leave (the most expensive per
#: step: :func:`plan_candidates`).
FILL_FAMILIES = ("charcnn",)


def target_units(config: FamilyConfig, n_train: int) -> int:
    """Adam: the steps planned when the budget allows: ``epochs``, but at least ``min_steps``
    (a few hundred texts are a handful of steps an epoch: 5 epochs of 320 texts, 25 Adam steps
    at 0.01, left a toy set at 67 % test accuracy). L-BFGS: iterations per ``C``."""
    if config.solver == "lbfgs":
        return config.max_iter
    return max(config.epochs * steps_per_epoch(n_train, config.batch_size), config.min_steps)


def cost_s(config: FamilyConfig, units: float, n_train: int, costs: tuple[float, float]
           ) -> float:
    """Seconds of ``units`` (Adam steps; L-BFGS iterations per ``C``) with their validations."""
    unit_s, eval_s = costs
    if config.solver == "lbfgs":
        # an iteration is ~1 loss-and-gradient (up to 1.25 with the line search)
        return len(config.l2_c) * (units * 1.1 * unit_s + eval_s)
    per_epoch = steps_per_epoch(n_train, config.batch_size)
    return units * unit_s + min(MAX_VALIDATIONS, math.ceil(units / per_epoch)) * eval_s


def minimum_units(config: FamilyConfig, n_train: int) -> float:
    """The fewest units worth fitting: one epoch of Adam; two L-BFGS calls per ``C``."""
    if config.solver == "lbfgs":
        return 2.0 * LBFGS_CHUNK
    return float(steps_per_epoch(n_train, config.batch_size))


def plan_candidates(configs: dict[str, FamilyConfig], costs: dict[str, tuple[float, float]],
                    n_train: int, available_s: float) -> dict[str, dict[str, Any]]:
    """What each candidate does within ``available_s`` seconds (``costs``: per candidate,
    seconds per unit and per validation, from calibration).

    The candidates of :data:`FILL_FAMILIES` (``charcnn``) are planned last, with what the
    others leave: each its target when that fits, else scaled to the time left when that is
    at least its minimum (one epoch), else skipped with the seconds it lacked. The others
    (:func:`_plan_priority`) as if the fill candidates were not there; when only fill
    candidates are asked for, they are planned by that rule instead.
    """
    priority = {n: c for n, c in configs.items() if c.family not in FILL_FAMILIES}
    fill = [n for n in configs if n not in priority]
    if not priority:
        return _plan_priority(configs, costs, n_train, available_s)
    plan = _plan_priority(priority, costs, n_train, available_s)
    left = available_s - sum(
        cost_s(priority[n], float(plan[n].get("planned_steps") or plan[n].get("max_iter") or 0),
               n_train, costs[n]) for n in priority if "skipped" not in plan[n])
    for n in fill:
        plan[n] = plan_fill(configs[n], costs[n], n_train, left)
        if "skipped" not in plan[n]:
            left -= cost_s(configs[n], float(plan[n]["planned_steps"]), n_train, costs[n])
    return plan


def plan_fill(config: FamilyConfig, costs: tuple[float, float], n_train: int, left_s: float
              ) -> dict[str, Any]:
    """A fill candidate's plan (:func:`plan_candidates`) with ``left_s`` seconds: its target
    when that fits; else the most steps whose cost, validations included, fits, when that is
    at least its minimum (one epoch); else skipped, saying how much time it lacked.
    :func:`.train.train_text_classifier` plans it again when its turn comes, with the time the
    others really left."""
    target = float(target_units(config, n_train))
    need = cost_s(config, target, n_train, costs)
    minimum = cost_s(config, minimum_units(config, n_train), n_train, costs)
    per_epoch = steps_per_epoch(n_train, config.batch_size)
    if need <= left_s:
        steps, reason = int(target), reasons.PLAN_ALL_FIT
    elif minimum <= left_s:
        unit_s, eval_s = costs
        validations = min(MAX_VALIDATIONS, math.ceil(target * left_s / need / per_epoch))
        steps = int((left_s - validations * eval_s) / max(unit_s, 1e-9))
        reason = reasons.PLAN_FILL_SHORTENED
    else:
        return {"skipped": reasons.FILL_NO_TIME % {"left": max(0.0, left_s),
                                                   "minimum": minimum}}
    steps = max(10, steps)
    return {"reason": reason, "planned_steps": steps,
            "planned_epochs": round(steps / per_epoch, 3)}


def _plan_priority(configs: dict[str, FamilyConfig], costs: dict[str, tuple[float, float]],
                   n_train: int, available_s: float) -> dict[str, dict[str, Any]]:
    """Every candidate its target (:func:`target_units`) when they all fit; else the first keeps its
    target (``linear``: cheap, and the winner on the data measured) and the others, in order,
    share what is left in proportion to their targets, each getting at least its minimum
    (:func:`minimum_units`) or being skipped; when even the first does not fit, it alone runs,
    scaled to the time (at least 10 steps)."""
    names = list(configs)
    target = {n: float(target_units(configs[n], n_train)) for n in names}
    need = {n: cost_s(configs[n], target[n], n_train, costs[n]) for n in names}
    units: dict[str, float] = {}
    plan: dict[str, dict[str, Any]] = {}
    if sum(need.values()) <= available_s:
        units = dict(target)
        reason = reasons.PLAN_ALL_FIT
    else:
        first, rest = names[0], names[1:]
        left = available_s - need[first]
        if left <= 0:
            units[first] = target[first] * max(0.0, available_s) / need[first]
            reason = reasons.PLAN_ONLY_FIRST % {"first": first}
        else:
            units[first] = target[first]
            reason = reasons.PLAN_AFTER_FIRST % {"first": first}
        chosen = [n for n in rest if left > 0]
        while chosen:
            factor = left / sum(need[n] for n in chosen)
            short = [n for n in chosen if target[n] * factor < minimum_units(configs[n], n_train)]
            if not short:
                units.update({n: target[n] * min(1.0, factor) for n in chosen})
                break
            chosen.remove(short[-1])  # the last in priority goes first
        for n in rest:
            if n not in units:
                plan[n] = {"skipped": reasons.MINIMUM_AFTER_FIRST % {"first": first}}
    for n, count in units.items():
        entry: dict[str, Any] = {"reason": reason}
        if configs[n].solver == "lbfgs":
            entry["max_iter"] = max(LBFGS_CHUNK, int(round(count)))
        else:
            per_epoch = steps_per_epoch(n_train, configs[n].batch_size)
            entry["planned_steps"] = max(10, int(round(count)))
            entry["planned_epochs"] = round(entry["planned_steps"] / per_epoch, 3)
        plan[n] = entry
    return plan
