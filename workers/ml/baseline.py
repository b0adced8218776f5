"""A plain, hand-written torchvision fine-tuning loop: the benchmark's point of comparison.

What a tutorial does (torchvision "Transfer learning" tutorial style): per-epoch decoding through a
Dataset/DataLoader, standard transforms (resize to 96 px, ToTensor, ImageNet Normalize), fixed
learning rate and epoch count, no feature cache, no budget planning, last epoch kept. It stops
when ``budget_s`` runs out so that both get the same time; it does not export. Images are decoded
by ``edge_agent.imaging.decode_image`` (the platform's decode rule) and then go through the
torchvision transforms.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset
from torchvision import transforms

from edge_agent.imaging import decode_image

from .models import build_classifier
from .specs import SampleRef, TrainRequest
from .weights import load_pretrained_state_dict

__all__ = ["train_baseline"]

RESOLUTION = 96
EPOCHS = 10
LR = 0.01


class _Files(Dataset):
    def __init__(self, samples: list[SampleRef]) -> None:
        self.samples = samples
        self.transform = transforms.Compose([
            transforms.Resize((RESOLUTION, RESOLUTION)),
            transforms.ToTensor(),
            transforms.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225]),
        ])

    def __len__(self) -> int:
        return len(self.samples)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        sample = self.samples[index]
        image = decode_image(Path(sample.path).read_bytes())
        return self.transform(image), sample.label


def train_baseline(request: TrainRequest) -> dict[str, Any]:
    """Fine-tune MobileNetV2 for ``EPOCHS`` epochs at ``LR`` (SGD, momentum 0.9) or until
    ``request.budget_s`` seconds have passed, then measure top-1 accuracy on ``request.val``.

    Returns:
        ``{"wall_s", "val_accuracy", "epochs_done", "epochs_planned", "pretrained"}``.
    """
    started = time.monotonic()
    deadline = started + request.budget_s
    torch.manual_seed(request.seed)
    state_dict = None
    if request.pretrained is not False:
        state_dict, _ = load_pretrained_state_dict(request.architecture)
    model = build_classifier(request.architecture, len(request.labels), state_dict)
    generator = torch.Generator().manual_seed(request.seed)
    train_loader = DataLoader(
        _Files(request.train), batch_size=32, shuffle=True, generator=generator
    )
    optimizer = torch.optim.SGD(model.parameters(), lr=LR, momentum=0.9)
    epochs_done = 0
    for _ in range(EPOCHS):
        model.train()
        for images, labels in train_loader:
            if time.monotonic() >= deadline:
                break
            loss = nn.functional.cross_entropy(model(images), labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        else:
            epochs_done += 1
            continue
        break
    model.eval()
    correct = 0
    with torch.no_grad():
        for images, labels in DataLoader(_Files(request.val), batch_size=64):
            correct += int((model(images).argmax(1) == labels).sum())
    return {
        "wall_s": round(time.monotonic() - started, 2),
        "val_accuracy": correct / len(request.val),
        "epochs_done": epochs_done,
        "epochs_planned": EPOCHS,
        "pretrained": state_dict is not None,
    }
