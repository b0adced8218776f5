"""Shared pieces for the edge agent tests: a tiny signed ONNX classifier and image bytes."""

from __future__ import annotations

import base64
import hashlib
import io
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import onnx
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from onnx import TensorProto, helper, numpy_helper
from PIL import Image

from edge_agent.runtime import canonical_json

LABELS = ["red", "green", "blue"]
SIZE = 8


def build_classifier(labels: list[str] = LABELS, size: int = SIZE, gain: float = 10.0) -> bytes:
    """A real ONNX classifier: mean colour per channel -> linear -> Softmax.

    input (N, 3, size, size) float32 -> probabilities (N, 3) float32. With mean 0.5 / std 0.5
    preprocessing a pure red image scores highest for "red", and so on.
    """
    weights = (np.eye(3, len(labels), dtype=np.float32) * gain).astype(np.float32)
    bias = np.zeros(len(labels), dtype=np.float32)
    nodes = [
        helper.make_node("GlobalAveragePool", ["input"], ["pooled"]),
        helper.make_node("Flatten", ["pooled"], ["features"], axis=1),
        helper.make_node("MatMul", ["features", "weights"], ["scores"]),
        helper.make_node("Add", ["scores", "bias"], ["logits"]),
        helper.make_node("Softmax", ["logits"], ["probabilities"], axis=-1),
    ]
    graph = helper.make_graph(
        nodes,
        "tiny_classifier",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["N", 3, size, size])],
        [helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, ["N", len(labels)])],
        initializer=[
            numpy_helper.from_array(weights, "weights"),
            numpy_helper.from_array(bias, "bias"),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 10
    onnx.checker.check_model(model)
    return model.SerializeToString()


@dataclass
class SigningKey:
    private: Ed25519PrivateKey
    public_b64: str
    key_id: str

    def sign(self, manifest: dict[str, Any]) -> dict[str, Any]:
        body = {key: value for key, value in manifest.items() if key != "signature"}
        value = base64.b64encode(self.private.sign(canonical_json(body))).decode("ascii")
        return {**body, "signature": {"algorithm": "ed25519", "key_id": self.key_id, "value": value}}


def new_signing_key() -> SigningKey:
    private = Ed25519PrivateKey.generate()
    raw = private.public_key().public_bytes(
        serialization.Encoding.Raw, serialization.PublicFormat.Raw
    )
    return SigningKey(
        private, base64.b64encode(raw).decode("ascii"), hashlib.sha256(raw).hexdigest()[:16]
    )


@dataclass
class ModelPackage:
    version_id: str
    manifest: dict[str, Any]
    model_bytes: bytes

    @property
    def sha256(self) -> str:
        return self.manifest["files"]["model.onnx"]["sha256"]


def make_package(
    key: SigningKey, model_bytes: bytes | None = None, labels: list[str] = LABELS, version: int = 1
) -> ModelPackage:
    """A signed model package (contracts.md manifest) around ``model_bytes``."""
    model_bytes = build_classifier(labels) if model_bytes is None else model_bytes
    version_id = str(uuid.uuid4())
    manifest = {
        "schema": "sampan.model-package/1",
        "model": {"id": "m-1", "name": "colours", "version": version, "version_id": version_id},
        "task": "image_classification",
        "labels": labels,
        "preprocessing": {
            "size": [SIZE, SIZE], "resize": "stretch", "mean": [0.5, 0.5, 0.5],
            "std": [0.5, 0.5, 0.5], "colour_order": "RGB", "layout": "NCHW", "dtype": "float32",
        },
        "inputs": [{"name": "input", "shape": ["N", 3, SIZE, SIZE], "dtype": "float32"}],
        "outputs": [{"name": "probabilities", "shape": ["N", len(labels)], "dtype": "float32"}],
        "metrics": {"val_accuracy": 1.0},
        "lineage": {"parent_model_version_id": None, "recipe": {}},
        "files": {
            "model.onnx": {"sha256": hashlib.sha256(model_bytes).hexdigest(), "size": len(model_bytes)}
        },
        "onnx": {"opset": 18, "ir_version": 10},
        "min_onnxruntime": "1.17.0",
        "created_at": "2026-11-29T12:00:00Z",
    }
    return ModelPackage(version_id, key.sign(manifest), model_bytes)


def image_bytes(colour: tuple[int, int, int], fmt: str = "PNG", size: tuple[int, int] = (32, 24)) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", size, colour).save(buffer, fmt)
    return buffer.getvalue()


@pytest.fixture
def signing_key() -> SigningKey:
    return new_signing_key()


@pytest.fixture
def package_factory(signing_key: SigningKey) -> Callable[..., ModelPackage]:
    def factory(**kwargs: Any) -> ModelPackage:
        return make_package(signing_key, **kwargs)

    return factory


@pytest.fixture
def key_factory() -> Callable[[], SigningKey]:
    return new_signing_key


@pytest.fixture
def classifier() -> Callable[..., bytes]:
    """``classifier(labels=LABELS, size=SIZE, gain=10.0) -> bytes`` of an ONNX model."""
    return build_classifier
