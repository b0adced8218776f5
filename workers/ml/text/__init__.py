"""Text classification (issue 13): hashed n-gram or character features (:mod:`edge_agent.text`),
a linear, a fastText-style and a character CNN model (:mod:`.model`), training within a budget
(:mod:`.train`), ONNX export, parity gate and batch inference (:mod:`.export`). No Django."""

from .export import TextParityError, check_text_parity, export_text_onnx, parity_gate, predict_texts
from .model import FAMILIES, CharCNN, TextClassifier
from .solvers import FamilyConfig
from .train import (
    CANDIDATES,
    DEFAULT_CONFIGS,
    TextSample,
    TextTrainRequest,
    TextTrainResult,
    train_text_classifier,
)

__all__ = ["CANDIDATES", "DEFAULT_CONFIGS", "FAMILIES", "CharCNN", "FamilyConfig",
           "TextClassifier",
           "TextParityError",
           "TextSample", "TextTrainRequest", "TextTrainResult", "check_text_parity",
           "export_text_onnx", "parity_gate", "predict_texts", "train_text_classifier"]
