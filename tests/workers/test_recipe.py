"""The planner: resolution for the data and the budget, the faster preference, the schedule."""

import pytest

from workers.ml.recipe import BudgetCosts, plan_recipe
from workers.ml.schedule import learning_rate_factor, scheduled_factor


def _costs(**kwargs):
    values = {"budget_s": 60.0, "n_train": 600, "n_val": 200, "n_test": 500,
              "source_pixels": 28 * 28, "shorter_side": 28, "step_s_96": 0.15,
              "pretrained": True}
    values.update(kwargs)
    return BudgetCosts(**values)


def _plan(**kwargs):
    return plan_recipe(_costs(**kwargs), seed=0, threads=2, architecture="mobilenet_v2")


def test_tiny_digits_get_96_px_and_say_why():
    recipe = _plan()
    assert recipe.resolution == 96
    assert "28 px" in recipe.resolution_reason
    assert recipe.resolution_why["code"] == "shorter_side"
    assert recipe.resolution_why["shorter_side"] == 28
    assert recipe.finetune_steps > 0 and recipe.warmup_steps >= 1


def test_warm_up_is_a_third_of_an_epoch_and_at_least_10_steps_and_the_average_a_tenth_of_the_run():
    short = _plan(budget_s=30.0)  # ~8 epochs of 19 steps at 0.15 s
    assert 1 <= short.warmup_steps <= 10  # at most a tenth of the run
    assert short.ema_epochs == 1.0  # a tenth of 8 epochs, clamped to one
    longer = _plan(budget_s=600.0)
    assert longer.warmup_steps == 10 and longer.ema_epochs == 2.0  # max(10, ceil(0.3 * 19))
    many = _plan(budget_s=600.0, n_train=6400, n_val=600)  # 200 steps per epoch
    assert many.warmup_steps == 60  # a third of an epoch
    tiny = _plan(budget_s=60.0, n_train=66, n_val=23)  # 2 full batches and 2 images
    assert tiny.warmup_steps == 10  # a third of an epoch would be 1 step


def test_a_last_batch_of_a_few_images_is_left_out_of_the_epoch():
    from workers.ml.recipe import steps_per_epoch
    assert steps_per_epoch(66, 32) == 2  # 32 + 32, the last 2 left out (a new order each epoch)
    assert steps_per_epoch(72, 32) == 3  # 32 + 32 + 8
    assert steps_per_epoch(5, 32) == 1  # the only batch is kept, however small
    assert steps_per_epoch(64, 32) == 2
    middle = _plan(budget_s=90.0)
    planned = middle.planned["epochs"]
    assert middle.ema_epochs == pytest.approx(min(2.0, max(1.0, planned / 10)))


def test_large_photos_get_the_largest_size_the_budget_affords_and_say_which():
    # 4,000 px photos: 224 px is the target, but 1,400 images leave too few epochs in 600 s
    recipe = _plan(budget_s=600.0, n_train=1400, n_val=300, n_test=300,
                   source_pixels=4000 * 3000, shorter_side=3000)
    # 2,000 images x 12 MP take ~360 s to decode; at 160 px fewer than 12 epochs fit either
    assert recipe.resolution == 128 and recipe.planned["decode_s"] == pytest.approx(362.0)
    assert "224 px would leave time for fewer than 12 epochs in 600 s" in recipe.resolution_reason
    assert recipe.resolution_why == {"code": "budget", "shorter_side": 3000, "target": 224,
                                     "faster_cap": False, "budget_s": 600, "min_epochs": 12}
    generous = _plan(budget_s=6000.0, n_train=1400, n_val=300, n_test=300,
                     source_pixels=4000 * 3000, shorter_side=3000)
    assert generous.resolution == 224


def test_faster_preference_caps_the_resolution():
    recipe = _plan(budget_s=6000.0, shorter_side=300, source_pixels=300 * 300,
                   model_preference="faster")
    assert recipe.resolution == 128
    assert "faster" in recipe.resolution_reason and recipe.resolution_why["faster_cap"] is True


def test_budget_shorter_than_the_fixed_costs_plans_no_finetuning():
    recipe = _plan(budget_s=8.0)
    assert recipe.finetune_steps == 0


@pytest.mark.parametrize(("step", "expected"), [(0, 0.01), (10, 0.505), (20, 1.0), (120, 0.0)])
def test_learning_rate_warms_up_then_decays_to_zero(step, expected):
    assert learning_rate_factor(step, 120, 20) == pytest.approx(expected, abs=1e-3)


def test_one_slow_epoch_cuts_at_most_30_percent_of_the_steps_left():
    import time

    from workers.ml.recipe import Recipe
    from workers.ml.schedule import Schedule

    recipe = Recipe(finetune_steps=154)
    # 10 s left, a burst of load made the median look like 2 s a step
    schedule = Schedule(recipe, steps_per_epoch=2, deadline=time.monotonic() + 10.0)
    schedule.replan(2, step_s=2.0, eval_s=1.0)
    assert schedule.at(2) == 2 + int(0.7 * 152)  # not 2 + 3
    assert recipe.replans == [[0, 154], [2, 108]]


def test_replan_uses_the_time_left_when_the_machine_is_faster_than_planned():
    import time

    from workers.ml.recipe import Recipe
    from workers.ml.schedule import Schedule

    recipe = Recipe(finetune_steps=40)
    schedule = Schedule(recipe, steps_per_epoch=10, deadline=time.monotonic() + 20.0)
    schedule.replan(10, step_s=0.1, eval_s=0.5)  # (20 - 0.5) / (0.1 + 0.05) = ~130 steps
    assert 120 <= schedule.at(10) - 10 <= 130


def test_finishing_early_compresses_the_schedule_and_later_replans_never_extend_it():
    import time

    from workers.ml.recipe import Recipe
    from workers.ml.schedule import ANNEAL_EPOCHS, Schedule

    recipe = Recipe(finetune_steps=400)
    schedule = Schedule(recipe, steps_per_epoch=10, deadline=time.monotonic() + 60.0)
    schedule.finish_within(200, ANNEAL_EPOCHS * 10)
    assert schedule.at(200) == 220 and recipe.replans[-1] == [200, 220]
    schedule.replan(210, step_s=0.01, eval_s=0.01)  # plenty of time left: still ends at 220
    assert schedule.at(210) == 220
    # the learning rate anneals from where it was (no jump) to zero at the new end
    before = scheduled_factor(199, [[0, 400]], 3)
    assert scheduled_factor(200, recipe.replans, 3) == pytest.approx(before, abs=0.01)
    assert scheduled_factor(220, recipe.replans, 3) == pytest.approx(0.0)


def test_one_planned_total_is_plain_warm_up_and_cosine():
    for step in (0, 10, 20, 70, 119, 120, 130):
        assert scheduled_factor(step, [[0, 120]], 20) == pytest.approx(
            learning_rate_factor(step, 120, 20))


@pytest.mark.parametrize("replans", [
    [[0, 400], [200, 220]],             # finishing early at half the schedule
    [[0, 100], [30, 160], [60, 150]],   # re-plans that add, then remove steps
    [[0, 100], [5, 90]],                # a re-plan during the warm-up
])
def test_a_replan_never_makes_the_learning_rate_jump_and_it_ends_at_zero(replans):
    total = replans[-1][1]
    factors = [scheduled_factor(step, replans, 10) for step in range(total + 1)]
    assert max(abs(a - b) for a, b in zip(factors, factors[1:], strict=False)) < 0.1
    # decays after warm-up
    assert all(b <= a + 1e-9 for a, b in zip(factors[10:], factors[11:], strict=False))
    assert factors[-1] == pytest.approx(0.0)
    # a replay reading the whole list gets the same factor at every step
    assert factors == [scheduled_factor(step, replans, 10) for step in range(total + 1)]


def test_a_replay_with_later_replans_in_its_list_sees_only_those_already_made():
    assert scheduled_factor(100, [[0, 400], [200, 220]], 3) == pytest.approx(
        scheduled_factor(100, [[0, 400]], 3))


def test_the_kept_model_is_the_latest_within_two_standard_errors_not_a_lucky_epoch():
    import torch

    from workers.ml.state import TrainingState

    model = torch.nn.Linear(2, 2)
    state = TrainingState()
    # 200 validation images: at 99% two standard errors are 1.4 points
    history = [(1, 0.95, 0.30), (3, 0.99, 0.20), (8, 0.975, 0.25), (9, 0.98, 0.26),
               (10, 0.96, 0.3)]
    for epoch, accuracy, loss in history:
        with torch.no_grad():
            model.bias.fill_(epoch)
        state.offer(model, "finetune", epoch, accuracy, loss, 200)
    # not 3, and not 10 (clearly worse)
    assert state.best_epoch == 9 and state.kept_accuracy == 0.98
    assert float(state.best_state["bias"][0]) == 9.0
    assert state.best_accuracy == 0.99 and state.epochs_since_best == 3


def test_on_imbalanced_validation_an_epoch_that_ignores_the_small_class_is_not_kept():
    import torch

    from workers.ml.state import TrainingState
    from workers.ml.training import balanced_accuracy

    # 9 images of class 0 and 1 of class 1 (a 60/6 version's validation split, seen in review)
    labels = torch.tensor([0] * 9 + [1])
    perfect = torch.nn.functional.one_hot(labels, 2).float()
    majority = torch.nn.functional.one_hot(torch.zeros(10, dtype=torch.long), 2).float()
    assert balanced_accuracy(perfect, labels) == 1.0
    assert balanced_accuracy(majority, labels) == 0.5  # plain accuracy 0.9: "within one image"
    assert balanced_accuracy(majority[:0], labels[:0]) == 0.0

    model = torch.nn.Linear(2, 2)
    state = TrainingState()
    for epoch, logits in ((1, perfect), (2, majority)):
        with torch.no_grad():
            model.bias.fill_(epoch)
        accuracy = float((logits.argmax(1) == labels).float().mean())
        state.offer(model, "finetune", epoch, accuracy, 0.1, 10, balanced_accuracy(logits, labels))
    assert state.best_epoch == 1 and state.kept_accuracy == 1.0
    # scored by plain accuracy, epoch 2 (90 %) was within one image of 100 % and kept
    plain = TrainingState()
    plain.offer(model, "finetune", 1, 1.0, 0.1, 10)
    plain.offer(model, "finetune", 2, 0.9, 0.1, 10)
    assert plain.best_epoch == 2


@pytest.mark.parametrize("first_plan", [5, 6, 7])
def test_a_first_plan_that_underestimated_the_machine_is_replanned_before_its_cosine(first_plan):
    # A first plan of one epoch or less (the planner's 5-7 steps) on a machine that fits many more:
    # re-planned only at the first epoch's end, its cosine had already reached 0 and the rest of
    # the run trained at learning rate 0 (measured on a loaded host: 18 of 25 steps). Now it is
    # re-planned after EARLY_REPLAN_STEP steps, still in the warm-up, so the whole cosine spans
    # the new total; a replay of the recipe applies the same rates.
    import time

    import torch
    from torch import nn

    from edge_agent.imaging import Preprocessing
    from workers.ml.data import ImageTensors
    from workers.ml.recipe import EARLY_REPLAN_STEP, Recipe, plan_warmup_steps
    from workers.ml.state import Progress, TrainingState
    from workers.ml.training import finetune

    images = torch.randint(0, 256, (7 * 8, 3, 8, 8), dtype=torch.uint8,
                           generator=torch.Generator().manual_seed(0))
    data = ImageTensors(images, torch.arange(7 * 8) % 2, [str(i) for i in range(7 * 8)])

    def run(recipe):
        torch.manual_seed(0)
        model = nn.Sequential(nn.Flatten(), nn.Linear(3 * 8 * 8, 2))
        state = TrainingState()
        finetune(model, data, data, recipe, state,
                 Progress(lambda e: None, lambda: False, time.monotonic()),
                 time.monotonic() + 60.0, Preprocessing(size=(8, 8)), None, None)
        return [entry["lr"] / recipe.lr for entry in state.history], model

    recipe = Recipe(finetune_steps=first_plan, batch_size=8, ema_epochs=0.0,
                    label_smoothing=0.0, max_finetune_epochs=3,
                    warmup_steps=plan_warmup_steps(first_plan, 7))
    assert recipe.warmup_steps == EARLY_REPLAN_STEP
    rates, model = run(recipe)
    assert recipe.replans[:2] == [[0, first_plan], [EARLY_REPLAN_STEP, 21]], recipe.replans
    assert recipe.finetune_steps_done == 21
    # each epoch ends on the cosine of 21 steps: ~0.97, ~0.45, 0 (before: 0.07-0.15, then 0)
    assert rates[0] > 0.8 and rates[1] > 0.3, rates
    replay = Recipe(**{**recipe.__dict__, "replans": [list(r) for r in recipe.replans]})
    replayed_rates, replayed = run(replay)
    assert replayed_rates == rates
    assert all(torch.equal(a, b) for a, b in zip(model.state_dict().values(),
                                                 replayed.state_dict().values(), strict=True))


def test_the_early_replan_only_adds_steps():
    # At step 4 of a 5-step plan, a machine as fast as planned has 1 step left, which a re-plan
    # would drop ("not a few stray steps"); the early re-plan, before any validation was timed,
    # leaves the plan as it is and the deadline guard ends a run that really is late.
    import time

    from workers.ml.recipe import Recipe
    from workers.ml.schedule import Schedule

    recipe = Recipe(finetune_steps=5)
    schedule = Schedule(recipe, steps_per_epoch=7, deadline=time.monotonic() + 0.05)
    schedule.replan(4, step_s=0.05, eval_s=0.0, extend_only=True)
    assert schedule.at(4) == 5 and recipe.replans == [[0, 5]]
    schedule.replan(4, step_s=0.05, eval_s=0.0)  # an epoch-end re-plan does cut
    assert schedule.at(4) == 4
    longer = Recipe(finetune_steps=5)
    schedule = Schedule(longer, steps_per_epoch=7, deadline=time.monotonic() + 60.0)
    schedule.replan(4, step_s=0.05, eval_s=0.0, extend_only=True)
    assert schedule.at(4) == 7 * longer.max_finetune_epochs  # extended (to the epochs cap)


@pytest.mark.parametrize(("steps", "epoch_steps", "expected"), [
    (0, 7, 1), (3, 7, 3), (4, 7, 4), (5, 7, 4), (39, 7, 4),  # the first re-plan at step 4
    (40, 7, 4), (50, 7, 5), (100, 19, 10), (1000, 19, 10),  # a tenth of the run, at most 10
    (1000, 200, 60),  # a third of an epoch
    (10, 2, 2), (10, 3, 3), (30, 2, 3),  # epochs of <= 4 steps: the first re-plan ends one
])
def test_the_warm_up_lasts_until_the_first_replan(steps, epoch_steps, expected):
    from workers.ml.recipe import plan_warmup_steps

    assert plan_warmup_steps(steps, epoch_steps) == expected


def test_an_epoch_end_replan_in_the_warm_up_keeps_its_few_steps():
    # Epochs of 3 steps, a warm-up of 3: at the first epoch's end 2 steps still fit. Cut as
    # "stray", the run ended inside its warm-up (rates 0.01, 0.34, 0.67, no cosine); kept, the
    # cosine runs over them.
    import time

    from workers.ml.recipe import Recipe
    from workers.ml.schedule import Schedule

    recipe = Recipe(finetune_steps=6, warmup_steps=3)
    schedule = Schedule(recipe, steps_per_epoch=3, deadline=time.monotonic() + 0.25)
    schedule.replan(3, step_s=0.1, eval_s=0.0)  # 0.25 s left: 2 steps
    assert recipe.replans == [[0, 6], [3, 5]]
    assert scheduled_factor(4, recipe.replans, 3) == pytest.approx(0.5)
    after = Recipe(finetune_steps=8, warmup_steps=3)  # past the warm-up, 2 steps are stray
    schedule = Schedule(after, steps_per_epoch=3, deadline=time.monotonic() + 0.25)
    schedule.replan(6, step_s=0.1, eval_s=0.0)
    assert after.replans == [[0, 8], [6, 6]]


def test_before_any_validation_its_time_is_the_plans_scaled_by_the_misjudged_step_time():
    from workers.ml.training import validation_estimate

    planned = {"step_s": 0.1, "val_s": 0.5}
    assert validation_estimate([], [], planned) == 0.5  # nothing timed yet
    # steps took 0.3 s, not 0.1 (the first, 1.0 s, allocates and is left out): 3x the plan
    assert validation_estimate([], [1.0, 0.3, 0.3, 0.2], planned) == pytest.approx(1.5)
    assert validation_estimate([0.7, 0.9, 0.8, 2.0], [1.0, 0.3], planned) == 0.9  # timed
    assert validation_estimate([], [1.0, 0.3], {}) == 0.0  # no estimate in the plan
