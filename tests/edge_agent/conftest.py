"""Shared pieces for the edge agent tests: a tiny signed ONNX classifier, a tiny detector with a
fixed answer, a tiny hashed n-gram text classifier, and image bytes."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import re
import threading
import time
import uuid
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
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


def build_classifier(
    labels: list[str] = LABELS, size: int = SIZE, gain: float = 10.0, padding_bytes: int = 0,
    fail_above: float | None = None,
) -> bytes:
    """A real ONNX classifier: mean colour per channel -> linear -> Softmax.

    input (N, 3, size, size) float32 -> probabilities (N, 3) float32. With mean 0.5 / std 0.5
    preprocessing a pure red image scores highest for "red", and so on. ``padding_bytes`` adds
    an unused weight of that many bytes, for a file big enough to interrupt mid-transfer.
    ``fail_above``: the graph fails in onnxruntime (a Reshape to (-1, C + 1)) for an input whose
    mean over all values is above it: a model that breaks on bright images only (a white image
    is 1.0 after the 0.5 / 0.5 normalisation, a black one -1.0).
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
    extra = []
    if fail_above is not None:
        nodes[-1] = helper.make_node("Softmax", ["logits"], ["softmaxed"], axis=-1)
        nodes += [
            helper.make_node("ReduceMean", ["input"], ["brightness"], keepdims=0),
            helper.make_node("Greater", ["brightness", "fail_above"], ["bright"]),
            helper.make_node("Cast", ["bright"], ["extra_column"], to=TensorProto.INT64),
            helper.make_node("Unsqueeze", ["extra_column", "axis0"], ["extra_columns"]),
            helper.make_node("Add", ["classes", "extra_columns"], ["columns"]),
            helper.make_node("Concat", ["minus_one", "columns"], ["shape"], axis=0),
            helper.make_node("Reshape", ["softmaxed", "shape"], ["probabilities"]),
        ]
        extra = [numpy_helper.from_array(np.array(fail_above, dtype=np.float32), "fail_above"),
                 numpy_helper.from_array(np.array([0], dtype=np.int64), "axis0"),
                 numpy_helper.from_array(np.array([len(labels)], dtype=np.int64), "classes"),
                 numpy_helper.from_array(np.array([-1], dtype=np.int64), "minus_one")]
    graph = helper.make_graph(
        nodes,
        "tiny_classifier",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["N", 3, size, size])],
        [helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, ["N", len(labels)])],
        initializer=[
            numpy_helper.from_array(weights, "weights"),
            numpy_helper.from_array(bias, "bias"),
            numpy_helper.from_array(np.ones(padding_bytes // 4, dtype=np.float32), "padding"),
        ][: 3 if padding_bytes else 2] + extra,
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
        return {
            **body,
            "signature": {"algorithm": "ed25519", "key_id": self.key_id, "value": value},
        }


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
    key: SigningKey, model_bytes: bytes | None = None, labels: list[str] = LABELS, version: int = 1,
    reference: dict[str, Any] | None = None,
) -> ModelPackage:
    """A signed model package (contracts.md manifest) around ``model_bytes``, with
    ``reference`` predictions (edge_agent.reference) when given."""
    model_bytes = build_classifier(labels) if model_bytes is None else model_bytes
    version_id = str(uuid.uuid4())
    manifest = {
        "schema": "sampan.model-package/1",
        "model": {"id": "m-1", "name": "colours", "version": version, "version_id": version_id},
        "task": "image_classification",
        "labels": labels,
        "preprocessing": {
            "size": [SIZE, SIZE],
            "resize": "stretch",
            "mean": [0.5, 0.5, 0.5],
            "std": [0.5, 0.5, 0.5],
            "colour_order": "RGB",
            "layout": "NCHW",
            "dtype": "float32",
        },
        "inputs": [{"name": "input", "shape": ["N", 3, SIZE, SIZE], "dtype": "float32"}],
        "outputs": [{"name": "probabilities", "shape": ["N", len(labels)], "dtype": "float32"}],
        "metrics": {"val_accuracy": 1.0},
        "lineage": {"parent_model_version_id": None, "recipe": {}},
        "files": {
            "model.onnx": {
                "sha256": hashlib.sha256(model_bytes).hexdigest(),
                "size": len(model_bytes),
            }
        },
        "onnx": {"opset": 18, "ir_version": 10},
        "min_onnxruntime": "1.17.0",
        "created_at": "2026-11-29T12:00:00Z",
    }
    if reference is not None:
        manifest["reference"] = reference
    return ModelPackage(version_id, key.sign(manifest), model_bytes)


DETECTION_LABELS = ["person", "car"]
DETECTION_SIZE = 64


@dataclass(frozen=True)
class FixedBox:
    """One anchor of :func:`build_detector`: a box xyxy in model input px and its class
    scores (one per label)."""

    box: tuple[float, float, float, float]
    scores: tuple[float, ...]


#: The anchors of the default tiny detector: two objects (the second also found by a weaker,
#: overlapping anchor that NMS suppresses) and one faint object below the default threshold.
DETECTOR_ANCHORS = (
    FixedBox((2.0, 4.0, 12.0, 20.0), (0.9, 0.05)),
    FixedBox((10.0, 30.0, 20.0, 34.0), (0.1, 0.8)),
    FixedBox((10.5, 30.0, 20.0, 34.5), (0.0, 0.6)),
    FixedBox((4.0, 8.0, 8.0, 16.0), (0.2, 0.0)),
)


def build_detector(anchors: tuple[FixedBox, ...] = DETECTOR_ANCHORS,
                   size: int = DETECTION_SIZE) -> bytes:
    """A real ONNX detector with the graph signature of a Sampan detection package whose
    answer is fixed: input ``images`` (N, 3, size, size) float32 -> ``boxes`` (N, A, 4) =
    the anchors' boxes (input px) and ``scores`` (N, A, C) = their scores, for every image.
    The batch dimension follows the input (ReduceMean * 0 broadcast), so onnxruntime runs a
    real graph and nothing is special-cased."""
    boxes = np.array([[a.box for a in anchors]], dtype=np.float32)
    scores = np.array([[a.scores for a in anchors]], dtype=np.float32)
    nodes = [
        helper.make_node("ReduceMean", ["images", "all_axes"], ["mean"], keepdims=0),
        helper.make_node("Mul", ["mean", "zero"], ["nothing"]),
        helper.make_node("Unsqueeze", ["nothing", "two_axes"], ["per_image"]),
        helper.make_node("Add", ["per_image", "fixed_boxes"], ["boxes"]),
        helper.make_node("Add", ["per_image", "fixed_scores"], ["scores"]),
    ]
    graph = helper.make_graph(
        nodes,
        "fixed_detector",
        [helper.make_tensor_value_info("images", TensorProto.FLOAT, ["N", 3, size, size])],
        [helper.make_tensor_value_info("boxes", TensorProto.FLOAT, ["N", len(anchors), 4]),
         helper.make_tensor_value_info("scores", TensorProto.FLOAT,
                                       ["N", len(anchors), scores.shape[2]])],
        initializer=[
            numpy_helper.from_array(np.array([1, 2, 3], dtype=np.int64), "all_axes"),
            numpy_helper.from_array(np.array(0.0, dtype=np.float32), "zero"),
            numpy_helper.from_array(np.array([1, 2], dtype=np.int64), "two_axes"),
            numpy_helper.from_array(boxes, "fixed_boxes"),
            numpy_helper.from_array(scores, "fixed_scores"),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 10
    onnx.checker.check_model(model, full_check=True)
    return model.SerializeToString()


def make_detection_package(key: SigningKey, model_bytes: bytes | None = None,
                           labels: list[str] = DETECTION_LABELS, version: int = 1,
                           size: int = DETECTION_SIZE,
                           detection: dict[str, Any] | None = None) -> ModelPackage:
    """A signed object detection package (contracts.md, "Detection models") around
    ``model_bytes`` (default :func:`build_detector`)."""
    model_bytes = build_detector(size=size) if model_bytes is None else model_bytes
    version_id = str(uuid.uuid4())
    manifest = {
        "schema": "sampan.model-package/1",
        "model": {"id": "m-2", "name": "street", "version": version, "version_id": version_id},
        "task": "object_detection",
        "labels": labels,
        "preprocessing": {"size": [size, size], "resize": "letterbox",
                          "mean": [0.485, 0.456, 0.406], "std": [0.229, 0.224, 0.225],
                          "colour_order": "RGB", "layout": "NCHW", "dtype": "float32"},
        "detection": {"score_threshold": 0.3, "nms_iou": 0.6, "pre_nms_top_k": 1000,
                      "max_detections": 100, "tile": None, **(detection or {})},
        "inputs": [{"name": "images", "shape": ["N", 3, size, size], "dtype": "float32"}],
        "outputs": [{"name": "boxes", "shape": ["N", "A", 4], "dtype": "float32"},
                    {"name": "scores", "shape": ["N", "A", len(labels)], "dtype": "float32"}],
        "metrics": {"map_50_95": 0.5},
        "lineage": {"parent_model_version_id": None, "recipe": {}},
        "files": {"model.onnx": {"sha256": hashlib.sha256(model_bytes).hexdigest(),
                                 "size": len(model_bytes)}},
        "onnx": {"opset": 18, "ir_version": 10},
        "min_onnxruntime": "1.17.0",
        "created_at": "2026-12-01T12:00:00Z",
    }
    return ModelPackage(version_id, key.sign(manifest), model_bytes)


def expected_pixels(box: tuple[float, float, float, float], width: int, height: int,
                    size: int = DETECTION_SIZE) -> list[float]:
    """Where a box in model input px lies in a ``width`` x ``height`` image, computed here on
    its own: the letterbox scales the image by min(size / width, size / height) (sides rounded)
    into the top-left corner, so x maps back by width / fitted width, y by height / fitted
    height, clipped to the image."""
    scale = min(size / width, size / height)
    fitted_w, fitted_h = round(width * scale), round(height * scale)
    x1, y1, x2, y2 = box
    return [min(max(x1 * width / fitted_w, 0.0), width),
            min(max(y1 * height / fitted_h, 0.0), height),
            min(max(x2 * width / fitted_w, 0.0), width),
            min(max(y2 * height / fitted_h, 0.0), height)]


TEXT_LABELS = ["negative", "positive"]
#: Small featurisation settings for the tiny text models (1,024 buckets, 64 characters).
TEXT_SETTINGS = {"max_chars": 64, "char_ngrams": [1, 2], "word_ngrams": 1, "buckets": 1024,
                 "sublinear_tf": True, "normalization": "NFC", "hash": "crc32"}
#: Cue words of the tiny text model: their features vote for a class.
TEXT_CUES = {"好": 1, "great": 1, "推荐": 1, "差": 0, "terrible": 0, "died": 0}


def cue_bucket(cue: str, buckets: int = TEXT_SETTINGS["buckets"]) -> int:
    """The hash bucket of a cue as one feature, computed here by the documented rule
    (edge_agent.text): CRC-32 of ``w:`` + a Latin word, ``c:`` + a character n-gram."""
    prefix = b"w:" if cue.isascii() else b"c:"
    return zlib.crc32(prefix + cue.encode("utf-8")) % buckets


def text_table(cues: dict[str, int] = TEXT_CUES, classes: int = 2, strength: float = 3.0,
               buckets: int = TEXT_SETTINGS["buckets"], seed: int | None = None) -> np.ndarray:
    """A (buckets, classes) embedding table: each cue's bucket (:func:`cue_bucket`) adds
    ``strength`` to its class; with ``seed``, small random values everywhere first."""
    table = np.zeros((buckets, classes), dtype=np.float32)
    if seed is not None:
        table += np.random.default_rng(seed).normal(0, 0.1, table.shape).astype(np.float32)
    for cue, cls in cues.items():
        table[cue_bucket(cue, buckets), cls] += strength
    return table


def build_text_classifier(table: np.ndarray | None = None, bias: np.ndarray | None = None,
                          input_names: tuple[str, str] = ("indices", "weights"),
                          index_type: int = TensorProto.INT64) -> bytes:
    """A real ONNX text classifier with the graph of a Sampan text package: ``indices`` (N, L)
    int64, ``weights`` (N, L) float32 -> Gather of ``table`` (buckets, C) rows, times the
    weights, summed over L, plus ``bias``, Softmax -> ``probabilities`` (N, C)."""
    table = text_table() if table is None else table
    bias = np.zeros(table.shape[1], dtype=np.float32) if bias is None else bias
    indices, weights = input_names
    nodes = [
        helper.make_node("Gather", ["table", indices], ["rows"], axis=0),
        helper.make_node("Unsqueeze", [weights, "last_axis"], ["weights3"]),
        helper.make_node("Mul", ["rows", "weights3"], ["weighted"]),
        helper.make_node("ReduceSum", ["weighted", "length_axis"], ["summed"], keepdims=0),
        helper.make_node("Add", ["summed", "bias"], ["logits"]),
        helper.make_node("Softmax", ["logits"], ["probabilities"], axis=-1),
    ]
    graph = helper.make_graph(
        nodes, "tiny_text_classifier",
        [helper.make_tensor_value_info(indices, index_type, ["N", "L"]),
         helper.make_tensor_value_info(weights, TensorProto.FLOAT, ["N", "L"])],
        [helper.make_tensor_value_info("probabilities", TensorProto.FLOAT,
                                       ["N", table.shape[1]])],
        initializer=[numpy_helper.from_array(table.astype(np.float32), "table"),
                     numpy_helper.from_array(bias.astype(np.float32), "bias"),
                     numpy_helper.from_array(np.array([2], dtype=np.int64), "last_axis"),
                     numpy_helper.from_array(np.array([1], dtype=np.int64), "length_axis")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 10
    onnx.checker.check_model(model, full_check=True)
    return model.SerializeToString()


def text_manifest(labels: list[str] = TEXT_LABELS,
                  settings: dict[str, Any] = TEXT_SETTINGS) -> dict[str, Any]:
    """The task fields of a text package's manifest (docs/contracts.md, "Text models")."""
    return {"task": "text_classification", "labels": labels, "text": dict(settings),
            "preprocessing": {},
            "inputs": [{"name": "indices", "shape": ["N", "L"], "dtype": "int64"},
                       {"name": "weights", "shape": ["N", "L"], "dtype": "float32"}],
            "outputs": [{"name": "probabilities", "shape": ["N", len(labels)],
                         "dtype": "float32"}]}


def make_text_package(key: SigningKey, model_bytes: bytes | None = None,
                      labels: list[str] = TEXT_LABELS, version: int = 1,
                      settings: dict[str, Any] = TEXT_SETTINGS,
                      reference: dict[str, Any] | None = None,
                      **fields: Any) -> ModelPackage:
    """A signed text classification package around ``model_bytes`` (default
    :func:`build_text_classifier`); ``fields`` replace manifest fields (None deletes one)."""
    model_bytes = build_text_classifier() if model_bytes is None else model_bytes
    version_id = str(uuid.uuid4())
    manifest = {
        "schema": "sampan.model-package/1",
        "model": {"id": "m-3", "name": "reviews", "version": version, "version_id": version_id},
        **text_manifest(labels, settings),
        "metrics": {"val_accuracy": 0.9},
        "lineage": {"parent_model_version_id": None, "recipe": {}},
        "files": {"model.onnx": {"sha256": hashlib.sha256(model_bytes).hexdigest(),
                                 "size": len(model_bytes)}},
        "onnx": {"opset": 18, "ir_version": 10},
        "min_onnxruntime": "1.17.0",
        "created_at": "2026-12-03T12:00:00Z",
    }
    if reference is not None:
        manifest["reference"] = reference
    for name, value in fields.items():
        if value is None:
            manifest.pop(name, None)
        else:
            manifest[name] = value
    return ModelPackage(version_id, key.sign(manifest), model_bytes)


@pytest.fixture
def text_package_factory(signing_key: SigningKey) -> Callable[..., ModelPackage]:
    def factory(**kwargs: Any) -> ModelPackage:
        return make_text_package(signing_key, **kwargs)

    return factory


def encoded_image(width: int, height: int, fmt: str = "PNG") -> bytes:
    """Bytes of a ``width`` x ``height`` grey image in ``fmt``."""
    buffer = io.BytesIO()
    Image.new("RGB", (width, height), (90, 120, 150)).save(buffer, fmt)
    return buffer.getvalue()


@pytest.fixture
def detection_package_factory(signing_key: SigningKey) -> Callable[..., ModelPackage]:
    def factory(**kwargs: Any) -> ModelPackage:
        return make_detection_package(signing_key, **kwargs)

    return factory


@pytest.fixture
def signing_key() -> SigningKey:
    return new_signing_key()


@pytest.fixture
def package_factory(signing_key: SigningKey) -> Callable[..., ModelPackage]:
    def factory(**kwargs: Any) -> ModelPackage:
        return make_package(signing_key, **kwargs)

    return factory


@pytest.fixture
def png() -> Callable[[tuple[int, int, int]], bytes]:
    """``png((r, g, b)) -> bytes`` of a 32 x 24 PNG of one colour."""

    def encode(colour: tuple[int, int, int]) -> bytes:
        buffer = io.BytesIO()
        Image.new("RGB", (32, 24), colour).save(buffer, "PNG")
        return buffer.getvalue()

    return encode


@pytest.fixture
def key_factory() -> Callable[[], SigningKey]:
    return new_signing_key


@pytest.fixture
def classifier() -> Callable[..., bytes]:
    """``classifier(labels=LABELS, size=SIZE, gain=10.0) -> bytes`` of an ONNX model."""
    return build_classifier


class FakeControlPlane:
    """The device API of contracts.md, in a thread: enroll, heartbeat, manifest, model (Range).

    Every request is recorded; tests wait on the records with :meth:`wait_for` (a condition
    variable with a deadline). ``down`` makes every call answer 503; ``cut_next_download`` makes
    the next artifact response promise the whole file but send only that many bytes;
    ``hold_downloads`` (an Event) makes artifact downloads wait until it is set.
    """

    def __init__(self, signing_key: SigningKey) -> None:
        self.signing_key = signing_key
        self.tokens = {"enroll-token-1"}
        self.credentials: dict[str, str] = {}
        self.packages: dict[str, ModelPackage] = {}
        self.desired: dict[str, Any] | None = None
        self.heartbeats: list[dict[str, Any]] = []
        self.enrollments: list[dict[str, Any]] = []
        self.requests: list[tuple[str, str, dict[str, str]]] = []
        self.heartbeat_interval_s = 0.1
        #: when set, heartbeat replies carry these as ``trusted_signing_keys`` (raw JSON value)
        self.trusted_signing_keys: Any = None
        self.down = False
        self.cut_next_download: int | None = None
        #: when True, a heartbeat carrying buffered samples is answered 400
        self.refuse_buffered = False
        #: when set, artifact downloads wait (at most 30 s) until this event is set
        self.hold_downloads: threading.Event | None = None
        #: when set, the next artifact download sends its headers, then this many bytes every
        #: 0.1 s (a slow link that never trips the read timeout)
        self.drip_next_download: int | None = None
        self._changed = threading.Condition()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> FakeControlPlane:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def deploy(self, package: ModelPackage, deployment_id: str, **override: Any) -> None:
        """Make ``package`` the desired state; ``override`` replaces desired fields."""
        self.packages[package.version_id] = package
        prefix = f"/api/device/v1/model-versions/{package.version_id}/"
        desired = {
            "deployment_id": deployment_id,
            "model_version_id": package.version_id,
            "manifest_url": prefix + "manifest.json",
            "artifact_url": prefix + "model.onnx",
            "sha256": package.sha256,
            "size": len(package.model_bytes),
            **override,
        }
        with self._changed:
            self.desired = desired

    def deployment_states(self, deployment_id: str) -> list[tuple[str, str | None]]:
        """(state, error) of every heartbeat that reported ``deployment_id``, in order."""
        with self._changed:
            return [
                (h["deployment"]["state"], h["deployment"]["error"])
                for h in self.heartbeats
                if h.get("deployment") and h["deployment"]["deployment_id"] == deployment_id
            ]

    def wait_for(self, predicate: Callable[[], Any], timeout_s: float = 30.0) -> Any:
        """Wait until ``predicate()`` is truthy (checked after every request); return it."""
        deadline = time.monotonic() + timeout_s
        with self._changed:
            while True:
                value = predicate()
                if value:
                    return value
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise AssertionError(f"condition not met within {timeout_s} s")
                self._changed.wait(remaining)

    def _record(self, method: str, path: str, headers: dict[str, str], body: Any = None) -> None:
        with self._changed:
            self.requests.append((method, path, headers))
            if path.endswith("/heartbeat") and body is not None:
                self.heartbeats.append(body)
            if path.endswith("/enroll") and body is not None:
                self.enrollments.append(body)
            self._changed.notify_all()

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        plane = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass

            def _reply(
                self,
                status: int,
                body: bytes,
                headers: dict[str, str] | None = None,
                length: int | None = None,
            ) -> None:
                self.send_response(status)
                for key, value in {"Content-Type": "application/json", **(headers or {})}.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(body) if length is None else length))
                self.end_headers()
                self.wfile.write(body)

            def _drip(self, status: int, body: bytes, headers: dict[str, str],
                      step: int) -> None:
                self.send_response(status)
                for key, value in headers.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                stop = threading.Event()
                for start in range(0, len(body), step):
                    try:
                        self.wfile.write(body[start:start + step])
                        self.wfile.flush()
                    except OSError:  # the client gave up
                        return
                    if stop.wait(0.1):
                        return

            def _json(self, status: int, data: Any) -> None:
                self._reply(status, json.dumps(data).encode())

            def _device(self) -> str | None:
                auth = self.headers.get("Authorization", "")
                return plane.credentials.get(auth.removeprefix("Device "))

            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])) or b"{}")
                plane._record("POST", self.path, dict(self.headers), body)
                if plane.down:
                    return self._json(503, {"detail": "down for maintenance"})
                if self.path == "/api/device/v1/enroll":
                    if body.get("token") not in plane.tokens:
                        return self._json(401, {"detail": "invalid or used enrollment token"})
                    plane.tokens.discard(body["token"])
                    credential = f"cred-{uuid.uuid4().hex}"
                    device_id = str(uuid.uuid4())
                    plane.credentials[credential] = device_id
                    return self._json(
                        201,
                        {
                            "device_id": device_id,
                            "credential": credential,
                            "heartbeat_interval_s": plane.heartbeat_interval_s,
                            "signing_public_key": plane.signing_key.public_b64,
                        },
                    )
                if self.path == "/api/device/v1/heartbeat":
                    if not self._device():
                        return self._json(401, {"detail": "bad credential"})
                    if plane.refuse_buffered and body.get("buffered"):
                        return self._json(400, {"detail": "buffered: malformed"})
                    reply = {
                        "heartbeat_interval_s": plane.heartbeat_interval_s,
                        "desired": plane.desired,
                    }
                    if plane.trusted_signing_keys is not None:
                        reply["trusted_signing_keys"] = plane.trusted_signing_keys
                    return self._json(200, reply)
                return self._json(404, {"detail": "not found"})

            def do_GET(self) -> None:  # noqa: N802
                plane._record("GET", self.path, dict(self.headers))
                if plane.down:
                    return self._json(503, {"detail": "down for maintenance"})
                if not self._device():
                    return self._json(401, {"detail": "bad credential"})
                parts = self.path.split("/")
                package = plane.packages.get(parts[-2]) if len(parts) > 2 else None
                if package is None:
                    return self._json(404, {"detail": "not deployed to this device"})
                if parts[-1] == "manifest.json":
                    return self._json(200, package.manifest)
                data = package.model_bytes
                start = 0
                match = re.fullmatch(r"bytes=(\d+)-", self.headers.get("Range", ""))
                if match:
                    start = int(match.group(1))
                    if start >= len(data):
                        return self._reply(416, b"", {"Content-Range": f"bytes */{len(data)}"})
                headers = {"Content-Type": "application/octet-stream", "Accept-Ranges": "bytes"}
                if match:
                    headers["Content-Range"] = f"bytes {start}-{len(data) - 1}/{len(data)}"
                if plane.hold_downloads is not None:
                    plane.hold_downloads.wait(30.0)
                drip = plane.drip_next_download
                if drip is not None:
                    plane.drip_next_download = None
                    self.close_connection = True
                    return self._drip(206 if match else 200, data[start:], headers, drip)
                cut = plane.cut_next_download
                if cut is not None:
                    plane.cut_next_download = None
                    self.close_connection = True
                    return self._reply(
                        206 if match else 200,
                        data[start : start + cut],
                        headers,
                        length=len(data) - start,
                    )
                return self._reply(206 if match else 200, data[start:], headers)

        return Handler


@pytest.fixture
def control_plane(signing_key: SigningKey):
    plane = FakeControlPlane(signing_key).start()
    yield plane
    plane.stop()
