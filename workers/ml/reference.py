"""The reference a Sampan training run is measured against: a competent hand-written script.

What an engineer who knows the field writes in ~170 lines for a small image set on a CPU, not a
strawman: MobileNetV2 from the same ImageNet weights (torchvision), images decoded once into
memory (the platform's decode rule, ``edge_agent.imaging``) and resized to a size chosen for the
data (96 px for small images such as digits, 160 px for photos), light augmentation with
``torchvision.transforms.v2`` (affine jitter and brightness/contrast; horizontal flips only when
the caller says they keep the label), label smoothing 0.1, AdamW (lr 1e-3, weight decay 0.02),
one epoch of linear warm-up then cosine decay (``torch.optim.lr_scheduler.LambdaLR``) over as
many steps as the budget allows, re-planned at each epoch end from the measured pace, torch's
default thread count, denormal floats flushed, and the best epoch by validation accuracy kept.
It stops training so that its final test pass ends within ``budget_s``; it does not export.
"""

from __future__ import annotations

import copy
import math
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
from PIL import Image
from torch import nn
from torchvision.transforms import v2

from edge_agent.imaging import decode_image

from .models import build_classifier
from .specs import SampleRef, TrainRequest
from .weights import load_pretrained_state_dict

__all__ = ["train_reference"]

MEAN = torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1)
STD = torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1)


def _load(samples: list[SampleRef], size: int) -> tuple[torch.Tensor, torch.Tensor]:
    images = []
    for sample in samples:
        image = decode_image(Path(sample.path).read_bytes())
        images.append(np.asarray(image.resize((size, size), Image.Resampling.BILINEAR)))
    pixels = torch.from_numpy(np.stack(images)).permute(0, 3, 1, 2).contiguous()
    return pixels, torch.tensor([s.label for s in samples])


def _normalise(images: torch.Tensor) -> torch.Tensor:
    return ((images.float() / 255 - MEAN) / STD).contiguous(memory_format=torch.channels_last)


@torch.no_grad()
def _accuracy(model: nn.Module, images: torch.Tensor, labels: torch.Tensor) -> float:
    model.eval()
    predicted = torch.cat([model(_normalise(images[i:i + 64])).argmax(1)
                           for i in range(0, len(images), 64)])
    return float((predicted == labels).float().mean())


def train_reference(request: TrainRequest, *, flip: bool = False) -> dict[str, Any]:
    """Train within ``request.budget_s`` s on ``request.train``, keep the best epoch on
    ``request.val``, and measure top-1 accuracy on ``request.test``.

    The schedule is re-planned at every epoch end from the last epoch's measured seconds per step
    and per validation, so the run fills its budget however slow the first epoch was (the
    learning rate is a function of the planned total, so it stays warm-up then cosine).

    Returns:
        ``{"wall_s", "test_accuracy", "val_accuracy", "epochs", "best_epoch", "resolution",
        "steps", "history": [{"epoch", "val_accuracy", "elapsed_s", "planned_steps"}]}``.
    """
    started = time.monotonic()
    deadline = started + request.budget_s
    torch.manual_seed(request.seed)
    torch.set_flush_denormal(True)  # denormal floats are ~100x slower on x86 CPUs
    first = decode_image(Path(request.train[0].path).read_bytes())
    size = 96 if min(first.size) <= 64 else 160
    train_x, train_y = _load(request.train, size)
    val_x, val_y = _load(request.val, size)
    test_x, test_y = _load(request.test, size)
    state_dict, _ = load_pretrained_state_dict(request.architecture)
    model = build_classifier(request.architecture, len(request.labels), state_dict)
    model = model.to(memory_format=torch.channels_last)
    augment = v2.Compose([
        v2.RandomAffine(degrees=10, translate=(0.1, 0.1), scale=(0.9, 1.1)),
        v2.ColorJitter(brightness=0.2, contrast=0.2),
        *([v2.RandomHorizontalFlip()] if flip else []),
    ])
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.02)
    criterion = nn.CrossEntropyLoss(label_smoothing=0.1)
    batch = 32
    steps_per_epoch = math.ceil(len(train_x) / batch)
    plan = {"total": 10**9}  # re-planned at each epoch end

    def factor(step: int) -> float:  # one epoch of linear warm-up, then cosine to 0
        if step < steps_per_epoch:
            return 0.01 + 0.99 * step / steps_per_epoch
        done = (step - steps_per_epoch) / max(1, plan["total"] - steps_per_epoch)
        return 0.5 * (1 + math.cos(math.pi * min(1.0, done)))

    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, factor)
    test_reserve_s = 2.0  # the final test pass; measured from the validation passes below
    best = (-1.0, copy.deepcopy(model.state_dict()), 0)
    history = []
    step, epoch, step_s, val_s = 0, 0, 0.0, 0.0
    while step < plan["total"]:
        epoch += 1
        epoch_began, epoch_steps = time.monotonic(), 0
        model.train()
        order = torch.randperm(len(train_x))
        for start in range(0, len(order), batch):
            # stop where one more step and the validation after it would not end in time
            if step >= plan["total"] or \
                    time.monotonic() + step_s + val_s > deadline - test_reserve_s:
                break
            began = time.monotonic()
            index = order[start:start + batch]
            images = torch.stack([augment(image) for image in train_x[index]])
            loss = criterion(model(_normalise(images)), train_y[index])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            scheduler.step()
            step += 1
            epoch_steps += 1
            step_s = max(step_s, time.monotonic() - began) if step <= 2 else \
                0.9 * step_s + 0.1 * (time.monotonic() - began)
        if epoch_steps == 0:
            break
        train_s = time.monotonic() - epoch_began
        val_began = time.monotonic()
        accuracy = _accuracy(model, val_x, val_y)
        val_s = time.monotonic() - val_began
        if accuracy > best[0]:
            best = (accuracy, copy.deepcopy(model.state_dict()), epoch)
        # plan the rest from this epoch's pace: each epoch costs its steps and a validation
        test_reserve_s = 0.5 + val_s * len(test_x) / max(1, len(val_x))
        left_s = deadline - test_reserve_s - time.monotonic()
        per_step_s = train_s / epoch_steps + val_s / steps_per_epoch
        plan["total"] = step + max(0, int(left_s / per_step_s))
        history.append({"epoch": epoch, "val_accuracy": round(accuracy, 4),
                        "elapsed_s": round(time.monotonic() - started, 2),
                        "planned_steps": plan["total"]})
    model.load_state_dict(best[1])
    torch.set_flush_denormal(False)
    return {
        "wall_s": round(time.monotonic() - started, 2),
        "test_accuracy": _accuracy(model, test_x, test_y),
        "val_accuracy": best[0],
        "epochs": epoch,
        "steps": step,
        "best_epoch": best[2],
        "resolution": size,
        "history": history,
    }
