"""The two training phases: a linear probe on cached backbone features, then fine-tuning.

Linear probe first, then fine-tune (LP-FT, Kumar et al. 2022, "Fine-Tuning can Distort Pretrained
Features"): a trained head makes the first fine-tuning steps change the backbone less than a random
head would, and the probe alone is already a usable model if the budget ends early.

BatchNorm: before the probe, the BatchNorm statistics are re-estimated on the training images
(AdaBN, Li et al. 2016, "Revisiting Batch Normalization For Practical Domain Adaptation"). The
head is then fitted on the features that fine-tuning's train-mode BatchNorm also produces (batch
statistics of target images), instead of ImageNet statistics that do not describe, say, white
digits on black upscaled from 28 px: without it, a probe head scoring loss 0.02 in eval mode
scored 9.9 in train mode and the first fine-tuning epoch fell to chance (measured, issue 7).
With AdaBN the same head scores 0.05 in train mode at batch 32 (measured on the digits).

Validation in the first epochs dipped from 81% to 53-67% although the training loss kept
falling (measured): BatchNorm's running averages lag behind weights that move fast early in
fine-tuning. Two fixes were measured, both removing the dip: re-estimating the statistics before
each validation ("precise BN", Wu & Johnson 2021; ``recipe.precise_bn_images``, ~6% of the time)
and validating an exponential moving average of the weights and buffers (:func:`_ema`), which
moves slowly enough for its statistics to keep up (epochs 1-3: 84%, 89%, 95%). The EMA is used;
precise BN stays available in the recipe and is off by default.

In short runs the EMA spans one epoch (``ema_epochs`` is a tenth of the run, at least 1) and
its warm-up follows the weights closely, so the dip comes back near the peak rate (measured on
the digits): with 20 train images a class and 20-40 s budgets, an early epoch at 0.27-0.62 after
a probe at 0.82, recovering to 0.95-0.98; with 60 a class at 60 s, the first epoch at 0.64-0.80.
Precise BN on 64 images removed it (0.79-0.87) but the kept model's statistics then come from 64
images: test accuracy 0.981 vs 0.989 on the digits at 60 s (3 seeds, 500 test images) and 0.994
vs 1.0 on lfw_faces (where precise BN's runs fitted 17 % fewer steps). So it stays off. The
model kept is the latest epoch within two standard errors of the best (:class:`TrainingState`):
an epoch that dipped further than that below the best is never kept.
"""

from __future__ import annotations

import copy
import math
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import nn

from edge_agent.imaging import Preprocessing

from .augmentation import augment_batch
from .data import ImageTensors, normalise
from .models import classifier_head, feature_extractor, pooled_features
from .recipe import EARLY_REPLAN_STEP, Recipe, steps_per_epoch
from .schedule import ANNEAL_EPOCHS, Schedule, scheduled_factor
from .state import Progress, TrainingState

__all__ = ["Progress", "TrainingState", "adapt_batchnorm", "balanced_accuracy", "calibrate_step_s",
           "evaluate", "finetune", "train_head", "validation_estimate"]

_EVAL_BATCH = 64


def _device(model: nn.Module) -> torch.device:
    """Where ``model``'s weights are (the CPU, or the GPU :mod:`workers.ml.devices` chose):
    batches are made on the CPU and moved there."""
    return next(model.parameters()).device


def _time_steps(model: nn.Module, images: torch.Tensor, labels: torch.Tensor, threads: int,
                tick: Callable[[], Any], steps: int) -> list[float]:
    torch.set_num_threads(threads)
    timings = []
    for _ in range(steps):
        tick()
        started = time.perf_counter()
        model.zero_grad(set_to_none=True)
        # what the unannotated Tensor.backward calls (mypy strict: no untyped calls)
        torch.autograd.backward(nn.functional.cross_entropy(model(images), labels))
        if images.is_cuda:  # a GPU runs behind the Python that queues its work
            torch.cuda.synchronize(images.device)
        timings.append(time.perf_counter() - started)
    return timings


def calibrate_step_s(model: nn.Module, num_classes: int, max_threads: int,
                     tick: Callable[[], Any] = lambda: None) -> tuple[float, int]:
    """(seconds of one training step at batch 32, 96 px, channels_last; the thread count that
    gave it). On a GPU (the model's device): ``max_threads``, and the median of 2 GPU steps
    after 1 warm-up (the threads serve the CPU's side, which this step leaves out). On the CPU:
    times 1 thread first (1 warm-up step, in which oneDNN builds its kernels, then
    the median of 2), then, on a multi-core machine, ``max_threads``: one probe step at batch 8
    first, and if even that takes longer than a whole single-thread step the count is dropped at
    once; else the median of 2 steps at batch 32. The faster count is kept. On an idle 2-core
    machine 2 threads are ~1.5x faster, while with other processes busy 2 OpenMP threads
    spin-waiting on each other were 5-20x slower than 1 (measured: timing 5 such steps took 39 s
    of a 20 s budget). The count is measured, never guessed from the load average. Leaves torch
    set to the chosen count and the model's state as it was."""
    saved = copy.deepcopy(model.state_dict())
    generator = torch.Generator().manual_seed(0)
    device = _device(model)
    images = torch.randn(32, 3, 96, 96, generator=generator).to(device).contiguous(
        memory_format=torch.channels_last)
    labels = torch.randint(0, num_classes, (32,), generator=generator).to(device)
    model.train()
    if device.type != "cpu":
        # on a GPU the threads serve the CPU's side (augmentation, decoding), which this step
        # does not include: all of them, and the GPU's step time (1 warm-up, in which cuDNN
        # times its algorithms, then the median of 2)
        timings = {max_threads: statistics.median(
            _time_steps(model, images, labels, max_threads, tick, 3)[1:])}
    else:
        single = statistics.median(_time_steps(model, images, labels, 1, tick, 3)[1:])
        timings = {1: single}
        if max_threads > 1:
            probe = _time_steps(model, images[:8], labels[:8], max_threads, tick, 1)[0]
            if probe <= single:
                timings[max_threads] = statistics.median(
                    _time_steps(model, images, labels, max_threads, tick, 2))
    model.zero_grad(set_to_none=True)
    model.load_state_dict(saved)
    threads = min(timings, key=lambda n: timings[n] / (1.1 if n > 1 else 1.0))
    torch.set_num_threads(threads)
    return timings[threads], threads


def balanced_accuracy(logits: torch.Tensor, labels: torch.Tensor) -> float:
    """Mean of the per-class recalls over the classes present in ``labels`` (scikit-learn's
    ``balanced_accuracy_score``): ``logits`` (N, C), ``labels`` (N,). Equals the accuracy when
    every class has the same number of images; 0.0 for no images."""
    if len(labels) == 0:
        return 0.0
    correct = (logits.argmax(1) == labels).to(torch.float64)
    classes = torch.unique(labels)
    recalls = [correct[labels == c].mean() for c in classes]
    return float(torch.stack(recalls).mean())


@torch.no_grad()
def evaluate(model: nn.Module, data: ImageTensors, preprocessing: Preprocessing
             ) -> tuple[float, float, torch.Tensor]:
    """(accuracy, mean cross-entropy, logits (N, C) on the CPU) in eval mode, no
    augmentation, the model where it is."""
    model.eval()
    device = _device(model)
    logits = torch.cat([
        model(normalise(data.images[i : i + _EVAL_BATCH].to(device), preprocessing)).cpu()
        for i in range(0, len(data), _EVAL_BATCH)
    ])
    loss = float(nn.functional.cross_entropy(logits, data.labels))
    accuracy = float((logits.argmax(1) == data.labels).float().mean())
    return accuracy, loss, logits


def _subset(data: ImageTensors, n: int, generator: torch.Generator) -> ImageTensors:
    if n >= len(data):
        return data
    index = torch.randperm(len(data), generator=generator)[:n]
    return ImageTensors(data.images[index], data.labels[index],
                        [data.sample_ids[i] for i in index.tolist()])


@torch.no_grad()
def adapt_batchnorm(model: nn.Module, train: ImageTensors, preprocessing: Preprocessing,
                    progress: Progress, emit: bool = True) -> None:
    """Replace every BatchNorm's running mean/variance by the training images' (AdaBN): a
    cumulative average over one pass in train mode (``momentum=None``), weights unchanged."""
    norms = [m for m in model.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)]
    momenta = [m.momentum for m in norms]
    for m in norms:
        m.reset_running_stats()
        m.momentum = None
    model.train()
    features = feature_extractor(model)
    device = _device(model)
    for i in range(0, len(train), _EVAL_BATCH):
        progress.check()
        features(normalise(train.images[i : i + _EVAL_BATCH].to(device), preprocessing))
        if emit:
            progress.emit({"phase": "features", "step": i // _EVAL_BATCH + 1})
    for m, momentum in zip(norms, momenta, strict=True):
        m.momentum = momentum
    model.eval()


@torch.no_grad()
def _features(model: nn.Module, data: ImageTensors, preprocessing: Preprocessing,
              progress: Progress) -> torch.Tensor:
    """Pooled backbone features (N, 1280) of every image, on the model's device."""
    model.eval()
    device = _device(model)
    chunks = []
    for i in range(0, len(data), _EVAL_BATCH):
        progress.check()
        chunks.append(pooled_features(model, normalise(
            data.images[i : i + _EVAL_BATCH].to(device), preprocessing)))
        progress.emit({"phase": "features", "step": i // _EVAL_BATCH + 1})
    return torch.cat(chunks)


def _loss(recipe: Recipe, class_weights: torch.Tensor | None) -> nn.CrossEntropyLoss:
    return nn.CrossEntropyLoss(weight=class_weights, label_smoothing=recipe.label_smoothing)


def train_head(model: nn.Module, train: ImageTensors, val: ImageTensors, recipe: Recipe,
               state: TrainingState, progress: Progress, preprocessing: Preprocessing,
               class_weights: torch.Tensor | None, deadline: float | None = None) -> None:
    """Linear probe: backbone frozen, features computed once (BatchNorm adapted first), and
    ``model.classifier[1]`` trained on them (Adam, ``recipe.head_lr``, ``recipe.head_epochs``).

    With a ``deadline`` (``time.monotonic()`` s; None in a replay, which follows the recipe) the
    head stops after the epoch during which the deadline passed, and ``recipe.head_epochs``
    becomes the number of epochs done, so a replay repeats exactly that."""
    head = classifier_head(model)
    adapt_batchnorm(model, train, preprocessing, progress)
    train_features = _features(model, train, preprocessing, progress)
    val_features = _features(model, val, preprocessing, progress)
    optimizer = torch.optim.Adam(head.parameters(), lr=recipe.head_lr, weight_decay=1e-4)
    criterion = _loss(recipe, class_weights)
    generator = torch.Generator().manual_seed(recipe.seed)
    train_labels = train.labels.to(train_features.device)
    total = 0.0
    for epoch in range(1, recipe.head_epochs + 1):
        progress.check()
        order = torch.randperm(len(train), generator=generator)
        total = 0.0
        for start in range(0, len(order), recipe.batch_size):
            index = order[start : start + recipe.batch_size].to(train_features.device)
            loss = criterion(head(train_features[index]), train_labels[index])
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            total += loss.item() * len(index)
        progress.emit({"phase": "head", "epoch": epoch, "epochs": recipe.head_epochs,
                       "loss": round(total / len(train), 4)})
        if deadline is not None and time.monotonic() > deadline and epoch < recipe.head_epochs:
            recipe.head_epochs = epoch
            break
    with torch.no_grad():
        logits = head(val_features).cpu()
        val_loss = float(nn.functional.cross_entropy(logits, val.labels))
        accuracy = float((logits.argmax(1) == val.labels).float().mean())
    balanced = balanced_accuracy(logits, val.labels)
    state.offer(model, "head", recipe.head_epochs, accuracy, val_loss, len(val), balanced)
    entry = {"phase": "head", "epoch": recipe.head_epochs, "epochs": recipe.head_epochs,
             "loss": round(total / len(train), 4), "val_loss": round(val_loss, 4),
             "val_accuracy": round(accuracy, 4), "val_balanced_accuracy": round(balanced, 4),
             "elapsed_s": round(progress.elapsed_s(), 2)}
    state.history.append(entry)
    progress.emit(entry, force=True)


def _optimizer(model: nn.Module, recipe: Recipe) -> torch.optim.Optimizer:
    """AdamW with discriminative learning rates (Howard & Ruder 2018, ULMFiT): the pretrained
    backbone at ``recipe.lr``, the new head at ``recipe.head_finetune_lr``; no weight decay on
    BatchNorm parameters and biases (torchvision's reference recipes)."""
    groups: dict[tuple[bool, bool], list[nn.Parameter]] = {}
    for name, parameter in model.named_parameters():
        groups.setdefault((name.startswith("classifier"), parameter.ndim <= 1), []).append(
            parameter)
    param_groups = [
        {"params": params, "base_lr": recipe.head_finetune_lr if is_head else recipe.lr,
         "weight_decay": 0.0 if no_decay else recipe.weight_decay}
        for (is_head, no_decay), params in sorted(groups.items())
    ]
    return torch.optim.AdamW(param_groups, lr=recipe.lr)


def _ema(model: nn.Module, recipe: Recipe, steps_per_epoch: int
         ) -> torch.optim.swa_utils.AveragedModel | None:
    """An exponential moving average of the weights (and BatchNorm buffers) over about
    ``recipe.ema_epochs`` epochs of steps (Polyak & Juditsky 1992; torchvision's classification
    reference uses one): it is what gets validated, kept and exported."""
    if recipe.ema_epochs <= 0:
        return None
    decay = 1.0 - 1.0 / max(1.0, recipe.ema_epochs * steps_per_epoch)

    @torch.no_grad()
    def average(averaged: Sequence[torch.Tensor], current: Sequence[torch.Tensor],
                num_averaged: torch.Tensor | int) -> None:
        # The decay warms up with the number of updates n, min(decay, (1 + n) / (10 + n)) as in
        # TensorFlow's ExponentialMovingAverage: a 4-epoch run otherwise averaged in the early,
        # worse weights (test 94.8% vs 97.2% without, measured on a busy machine).
        n = int(num_averaged)
        weight = 1.0 - min(decay, (1.0 + n) / (10.0 + n))
        floats = [(a, c) for a, c in zip(averaged, current, strict=True)
                  if a.is_floating_point()]
        if floats:
            torch._foreach_lerp_([a for a, _ in floats], [c for _, c in floats], weight)
        for a, c in zip(averaged, current, strict=True):
            if not a.is_floating_point():  # counters such as BatchNorm's num_batches_tracked
                a.copy_(c)

    return torch.optim.swa_utils.AveragedModel(model, multi_avg_fn=average, use_buffers=True)


def validation_estimate(eval_times: Sequence[float], step_times: Sequence[float],
                        planned: dict[str, Any]) -> float:
    """Seconds one validation is expected to take: the median of the last 3 timed (``eval_times``),
    or before any, the plan's ``planned["val_s"]`` scaled by how far its ``planned["step_s"]``
    misjudged the steps timed so far (``step_times``, the first left out: it allocates). 0 when
    the plan has no estimate."""
    if eval_times:
        return statistics.median(eval_times[-3:])
    estimate = float(planned.get("val_s", 0.0))
    planned_step_s = float(planned.get("step_s", 0.0))
    if len(step_times) > 1 and planned_step_s > 0:
        estimate *= statistics.median(step_times[1:]) / planned_step_s
    return estimate


def finetune(model: nn.Module, train: ImageTensors, val: ImageTensors, recipe: Recipe,
             state: TrainingState, progress: Progress, deadline: float,
             preprocessing: Preprocessing, transform: Any,
             class_weights: torch.Tensor | None) -> None:
    """Train every layer with augmentation and label smoothing until the (re-planned) number of
    steps is done, validation stops improving for ``recipe.patience`` epochs, or ``deadline``
    (``time.monotonic()`` s) is near. Validation after each epoch; the best epoch is kept."""
    epoch_steps = steps_per_epoch(len(train), recipe.batch_size)
    if recipe.finetune_steps <= 0:
        state.stop_reason = "no_finetune_time"
        return
    schedule = Schedule(recipe, epoch_steps, deadline)
    optimizer = _optimizer(model, recipe)
    criterion = _loss(recipe, class_weights)
    generator = torch.Generator().manual_seed(recipe.seed + 1)
    ema = _ema(model, recipe, epoch_steps)
    evaluated = ema.module if ema is not None else model
    device = _device(model)
    step, epoch = 0, 0
    step_times: list[float] = []
    eval_times: list[float] = []
    def end(at_step: int) -> int:  # a replay also stops where the recorded run stopped
        total = schedule.at(at_step)
        return min(total, recipe.finetune_steps_done) if schedule.replay else total

    while step < end(step):
        epoch += 1
        model.train()
        order = torch.randperm(len(train), generator=generator)
        running, seen = 0.0, 0
        # a last batch of fewer than MIN_LAST_BATCH images is left out of this epoch
        for start in range(0, epoch_steps * recipe.batch_size, recipe.batch_size):
            total = schedule.at(step)
            if step >= end(step):
                break
            progress.check()
            # late: one more step and the validation that follows it would end after the
            # deadline (before the first step and validation, the plan's estimates of both)
            step_est = (sum(step_times[-20:]) / len(step_times[-20:]) if step_times
                        else float(recipe.planned.get("step_s", 0.0)))
            eval_est = validation_estimate(eval_times, step_times, recipe.planned)
            if not schedule.replay and time.monotonic() + step_est + eval_est > deadline:
                # a few steps short of the plan, at a rate near zero, is a run that finished
                # (a reviewer's run stopped at step 143 of 144 was labelled "time limit")
                if total - step > max(2, 0.05 * total):
                    state.stopped_early, state.stop_reason = True, "deadline"
                break
            began = time.monotonic()
            factor = scheduled_factor(step, recipe.replans, recipe.warmup_steps)
            for group in optimizer.param_groups:
                group["lr"] = group["base_lr"] * factor
            index = order[start : start + recipe.batch_size]
            # augmented on the CPU (uint8), moved as uint8 (a quarter of the bytes of floats)
            images = normalise(augment_batch(train.images[index], transform).to(device),
                               preprocessing)
            loss = criterion(model(images), train.labels[index].to(device))
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            if ema is not None:
                ema.update_parameters(model)
            step += 1
            running += loss.item() * len(index)
            seen += len(index)
            step_times.append(time.monotonic() - began)
            if epoch == 1 and step == EARLY_REPLAN_STEP < epoch_steps:
                # the first plan's pace came from a calibration; measured (the first step left
                # out: it allocates), it may allow many more steps; it never cuts here, before
                # any validation was timed
                schedule.replan(step, statistics.median(step_times[1:]), eval_est,
                                extend_only=True)
                total = schedule.at(step)
            progress.emit({"phase": "finetune", "epoch": epoch,
                           "epochs": math.ceil(total / epoch_steps), "step": step,
                           "steps": total, "loss": round(running / seen, 4)})
        if seen == 0:
            break
        eval_began = time.monotonic()
        if recipe.precise_bn_images:
            adapt_batchnorm(evaluated, _subset(train, recipe.precise_bn_images, generator),
                            preprocessing, progress, emit=False)
        accuracy, val_loss, logits = evaluate(evaluated, val, preprocessing)
        balanced = balanced_accuracy(logits, val.labels)
        state.offer(evaluated, "finetune", epoch, accuracy, val_loss, len(val), balanced)
        eval_times.append(time.monotonic() - eval_began)
        schedule.replan(step, statistics.median(step_times[-200:]),
                        statistics.median(eval_times[-3:]))
        # early stopping only in the second half of the plan: before that the learning rate is
        # high and validation noisy; and never in the last tenth, where little time is saved.
        # Decided before the epoch's entry, so that the entry names the total a replay also sees.
        planned_epochs = schedule.at(step) / epoch_steps
        if (not schedule.replay and state.stop_reason is None
                and state.epochs_since_best >= recipe.patience
                and 0.5 * planned_epochs <= epoch <= 0.9 * planned_epochs
                and schedule.finish_within(step, ANNEAL_EPOCHS * epoch_steps)):
            # finish early, but annealed: the rest of the schedule ends within ANNEAL_EPOCHS
            # epochs instead of stopping at a high learning rate
            state.stopped_early, state.stop_reason = True, "no_improvement"
        entry = {"phase": "finetune", "epoch": epoch,
                 "epochs": math.ceil(schedule.at(step) / epoch_steps), "step": step,
                 "loss": round(running / seen, 4), "val_loss": round(val_loss, 4),
                 "val_accuracy": round(accuracy, 4),
                 "val_balanced_accuracy": round(balanced, 4), "lr": round(recipe.lr * factor, 7),
                 "elapsed_s": round(progress.elapsed_s(), 2)}
        state.history.append(entry)
        progress.emit(entry, force=True)
        if state.stop_reason == "deadline":
            break
    if not schedule.replay:
        recipe.finetune_steps_done = step
        if step == 0:
            state.stop_reason = "no_finetune_time"
