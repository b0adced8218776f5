"""Smaller, faster students of a trained classifier: lower input resolution and structured
channel pruning (torch-pruning), fine-tuned by knowledge distillation from the float teacher.

The student starts from the teacher's own weights (pruning keeps the channels of largest L1
norm), so a few epochs of distillation recover what the cut cost. The teacher (the training
checkpoint, the same weights as its package) labels every augmented batch as the student sees it
("online" distillation): with offline targets on un-augmented images, students over-fitted a
few hundred training images (measured: the pruned student 4-7 points below the teacher).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import torch_pruning as tp
from torch import nn
from torch.nn import functional as F

from edge_agent.imaging import Preprocessing

from ..augmentation import augment_batch
from ..data import ImageTensors, normalise
from ..models import build_classifier, classifier_head
from ..recipe import steps_per_epoch
from ..specs import TrainingCancelled
from ..training import balanced_accuracy, evaluate

__all__ = ["DistillConfig", "count_macs", "distill", "load_teacher_module", "prune",
           "student_resolution"]

#: Smallest student input size (px): MobileNetV2 downsamples 32x, so 32 px leaves a 1x1 map.
MIN_RESOLUTION = 32


def load_teacher_module(checkpoint_path: Path, n_classes: int
                        ) -> tuple[nn.Module, dict[str, Any]]:
    """The teacher as a torch module from its training checkpoint (``state_dict`` and
    ``architecture``, written by :func:`workers.ml.classification.train_image_classifier`), and
    the checkpoint's ``recipe`` ({} when absent). Raises ValueError for a checkpoint of another
    architecture or class count."""
    checkpoint = torch.load(str(checkpoint_path), map_location="cpu", weights_only=True)
    model = build_classifier(str(checkpoint.get("architecture", "mobilenet_v2")), n_classes, None)
    try:
        model.load_state_dict(checkpoint["state_dict"])
    except (KeyError, RuntimeError) as error:
        raise ValueError(f"checkpoint {checkpoint_path.name} does not fit the model: "
                         f"{str(error)[:200]}") from error
    return model.eval(), dict(checkpoint.get("recipe") or {})


def student_resolution(teacher: int, scale: float) -> int:
    """``teacher * scale`` rounded down to a multiple of 16 px, at least :data:`MIN_RESOLUTION`
    (224 * 0.7 -> 144; 96 * 0.7 -> 64). MobileNetV2's FLOPs fall with the square of the side."""
    return max(MIN_RESOLUTION, int(teacher * scale) // 16 * 16)


def count_macs(model: nn.Module, resolution: int) -> int:
    """Multiply-accumulates per image at ``resolution`` px (torch-pruning's counter)."""
    macs, _ = tp.utils.count_ops_and_params(model.eval(), torch.zeros(1, 3, resolution, resolution))
    return int(macs)


def prune(model: nn.Module, ratio: float, resolution: int) -> nn.Module:
    """Remove ``ratio`` of the channels of every prunable layer, the ones of least L1 norm
    (Li et al. 2017, "Pruning Filters for Efficient ConvNets"), with torch-pruning's dependency
    graph so residual additions and depthwise convolutions stay consistent; the classifier's
    output layer is kept; channel counts stay multiples of 8 (vector-friendly). In place;
    returns ``model``."""
    if not 0 < ratio < 1:
        raise ValueError("ratio must be in (0, 1)")
    model.eval()
    head = classifier_head(model) if hasattr(model, "classifier") else None
    pruner = tp.pruner.MagnitudePruner(
        model, torch.zeros(1, 3, resolution, resolution),
        importance=tp.importance.MagnitudeImportance(p=1), pruning_ratio=ratio,
        ignored_layers=[head] if head is not None else [], round_to=8)
    pruner.step()
    return model


@dataclass
class DistillConfig:
    """Knowledge distillation (Hinton et al. 2015): loss = ``alpha`` * T^2 * KL(teacher_T ||
    student_T) + (1 - ``alpha``) * cross-entropy with the labels, T = ``temperature``. AdamW at
    ``lr`` with a cosine decay over the planned epochs; the epoch of best validation balanced
    accuracy is kept; stops after ``patience`` epochs without improvement or at the deadline."""

    temperature: float = 2.0
    alpha: float = 0.7
    lr: float = 5e-4
    weight_decay: float = 1e-4
    batch_size: int = 32
    max_epochs: int = 80
    patience: int = 15
    seed: int = 0


def _evaluate(model: nn.Module, data: ImageTensors, preprocessing: Preprocessing
              ) -> tuple[float, float]:
    """(accuracy, balanced accuracy) of ``model`` on ``data``."""
    accuracy, _, logits = evaluate(model, data, preprocessing)
    return accuracy, balanced_accuracy(logits, data.labels)


def distill(student: nn.Module, teacher: nn.Module, train: ImageTensors, val: ImageTensors,
            teacher_preprocessing: Preprocessing, student_preprocessing: Preprocessing, *,
            transform: Any, deadline: float, config: DistillConfig,
            should_stop: Callable[[], bool] = lambda: False,
            on_epoch: Callable[[dict[str, Any]], None] = lambda _: None) -> list[dict[str, Any]]:
    """Fine-tune ``student`` towards ``teacher`` ("online" distillation: both see the same
    augmented image, ``transform`` being the teacher's training augmentation or None) until
    ``deadline`` (``time.monotonic()``), ``config.max_epochs`` or ``config.patience``.

    ``train``: uint8 images at the TEACHER's resolution; the student gets each augmented batch
    resized to its own resolution (bilinear with antialiasing, torch's match of Pillow's
    resampling). ``val``: uint8 images at the STUDENT's resolution, decoded and resized by
    ``edge_agent.imaging`` as the device will. Leaves the best epoch's weights (by validation
    balanced accuracy, then accuracy; the starting weights count as epoch 0) in ``student``.
    Returns the history: one dict per epoch (``epoch``, ``epochs``, ``loss``, ``val_accuracy``,
    ``val_balanced_accuracy``, ``elapsed_s``). Raises TrainingCancelled when ``should_stop()``."""
    started = time.monotonic()
    generator = torch.Generator().manual_seed(config.seed)
    torch.manual_seed(config.seed)
    student = student.to(memory_format=torch.channels_last)
    accuracy, balanced = _evaluate(student, val, student_preprocessing)
    best = (balanced, accuracy)
    best_state = {k: v.detach().clone() for k, v in student.state_dict().items()}
    history = [{"epoch": 0, "loss": None, "val_accuracy": round(accuracy, 4),
                "val_balanced_accuracy": round(balanced, 4), "elapsed_s": 0.0}]
    on_epoch(history[-1])
    batch = min(config.batch_size, len(train))
    epoch_steps = steps_per_epoch(len(train), batch)
    optimizer = torch.optim.AdamW(student.parameters(), lr=config.lr,
                                  weight_decay=config.weight_decay)
    teacher.eval()
    size = tuple(student_preprocessing.size)
    epochs_planned = config.max_epochs
    epoch_s = None
    since_best = 0
    for epoch in range(1, config.max_epochs + 1):
        now = time.monotonic()
        if epoch_s is not None and now + epoch_s > deadline:
            break
        epoch_started = now
        student.train()
        order = torch.randperm(len(train), generator=generator)
        total, seen = 0.0, 0
        for step in range(epoch_steps):
            if should_stop():
                raise TrainingCancelled()
            progress = ((epoch - 1) * epoch_steps + step) / max(1, epochs_planned * epoch_steps)
            for group in optimizer.param_groups:
                group["lr"] = config.lr * 0.5 * (1 + math.cos(math.pi * min(1.0, progress)))
            index = order[step * batch:(step + 1) * batch]
            inputs = normalise(augment_batch(train.images[index], transform),
                               teacher_preprocessing)
            with torch.no_grad():
                soft_targets = torch.softmax(teacher(inputs) / config.temperature, dim=1)
            if tuple(inputs.shape[-2:]) != size:
                inputs = F.interpolate(inputs, size=size, mode="bilinear", antialias=True,
                                       align_corners=False)
            logits = student(inputs.contiguous(memory_format=torch.channels_last))
            log_student = F.log_softmax(logits / config.temperature, dim=1)
            kd = F.kl_div(log_student, soft_targets, reduction="batchmean")
            loss = (config.alpha * config.temperature ** 2 * kd
                    + (1 - config.alpha) * F.cross_entropy(logits, train.labels[index]))
            optimizer.zero_grad(set_to_none=True)
            torch.autograd.backward(loss)  # what the unannotated Tensor.backward calls
            optimizer.step()
            total += float(loss.detach()) * len(index)
            seen += len(index)
        accuracy, balanced = _evaluate(student, val, student_preprocessing)
        elapsed = time.monotonic() - started
        epoch_s = time.monotonic() - epoch_started
        if epoch == 1:  # re-plan the cosine once the speed is known
            epochs_planned = max(1, min(config.max_epochs,
                                        int((deadline - epoch_started) / max(epoch_s, 1e-3))))
        history.append({"epoch": epoch, "epochs": epochs_planned,
                        "loss": round(total / max(seen, 1), 5),
                        "val_accuracy": round(accuracy, 4),
                        "val_balanced_accuracy": round(balanced, 4),
                        "elapsed_s": round(elapsed, 2)})
        on_epoch(history[-1])
        if (balanced, accuracy) > best:
            best, since_best = (balanced, accuracy), 0
            best_state = {k: v.detach().clone() for k, v in student.state_dict().items()}
        else:
            since_best += 1
            if since_best >= config.patience or epoch >= epochs_planned:
                break
    student.load_state_dict(best_state)
    return history
