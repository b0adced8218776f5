"""Network construction: torchvision MobileNetV2 with a new classification head."""

from __future__ import annotations

from typing import Any, cast

import torch
from torch import nn
from torchvision.models import mobilenet_v2

__all__ = ["SoftmaxClassifier", "build_classifier", "classifier_head", "feature_extractor",
           "pooled_features"]


def build_classifier(architecture: str, num_classes: int,
                     state_dict: dict[str, Any] | None) -> nn.Module:
    """MobileNetV2 (Sandler et al. 2018) for ``num_classes`` classes.

    With ``state_dict`` (ImageNet weights) every layer but the last linear layer starts from it;
    the new head ``classifier[1]`` is ``Linear(1280, num_classes)`` with PyTorch's default init.

    Raises:
        ValueError: for an architecture other than ``"mobilenet_v2"`` or fewer than 2 classes.
    """
    if architecture != "mobilenet_v2":
        raise ValueError(f"unsupported architecture {architecture!r}")
    if num_classes < 2:
        raise ValueError("a classifier needs at least 2 classes")
    model = mobilenet_v2()
    if state_dict is not None:
        model.load_state_dict(state_dict)
    in_features = model.classifier[1].in_features
    model.classifier[1] = nn.Linear(in_features, num_classes)
    return cast(nn.Module, model)  # torchvision is untyped: mobilenet_v2() is Any


def feature_extractor(model: nn.Module) -> nn.Module:
    """``model.features``, MobileNetV2's backbone (N, 3, H, W) -> (N, 1280, h, w).

    Raises:
        TypeError: ``model`` has no ``features`` submodule.
    """
    features = getattr(model, "features", None)
    if not isinstance(features, nn.Module):
        raise TypeError(f"{type(model).__name__} has no 'features' module (not a MobileNetV2)")
    return features


def classifier_head(model: nn.Module) -> nn.Linear:
    """``model.classifier[1]``, the linear layer that :func:`build_classifier` replaces.

    Raises:
        TypeError: ``model`` has no such layer.
    """
    classifier = getattr(model, "classifier", None)
    head = classifier[1] if isinstance(classifier, nn.Sequential) and len(classifier) > 1 else None
    if not isinstance(head, nn.Linear):
        raise TypeError(f"{type(model).__name__} has no linear 'classifier[1]' (not a "
                        "MobileNetV2 classifier)")
    return head


def pooled_features(model: nn.Module, images: torch.Tensor) -> torch.Tensor:
    """Backbone output before the head: (N, 3, H, W) -> (N, 1280), as MobileNetV2.forward."""
    features = feature_extractor(model)(images)
    return torch.flatten(nn.functional.adaptive_avg_pool2d(features, 1), 1)


class SoftmaxClassifier(nn.Module):
    """``model`` followed by softmax over classes: (N, 3, H, W) -> probabilities (N, C)."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, input: torch.Tensor) -> torch.Tensor:  # noqa: A002 - the ONNX input name
        return torch.softmax(self.model(input), dim=1)
