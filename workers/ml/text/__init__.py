"""Text classification (issue 13): hashed n-gram features (:mod:`edge_agent.text`), a linear
and a fastText-style model (:mod:`.model`), training within a budget (:mod:`.train`), ONNX
export, parity gate and batch inference (:mod:`.export`). No Django."""

from .export import TextParityError, check_text_parity, export_text_onnx, parity_gate, predict_texts
from .model import FAMILIES, TextClassifier
from .solvers import FamilyConfig
from .train import (
    CANDIDATES,
    DEFAULT_CONFIGS,
    TextSample,
    TextTrainRequest,
    TextTrainResult,
    train_text_classifier,
)

__all__ = ["CANDIDATES", "DEFAULT_CONFIGS", "FAMILIES", "FamilyConfig", "TextClassifier",
           "TextParityError",
           "TextSample", "TextTrainRequest", "TextTrainResult", "check_text_parity",
           "export_text_onnx", "parity_gate", "predict_texts", "train_text_classifier"]
