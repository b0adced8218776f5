"""Model package verification and the ONNX classifier session (shared by platform and agent).

A model package is ``model.onnx`` + ``manifest.json`` (docs/contracts.md, "Model package"). The
manifest is signed with Ed25519 over :func:`canonical_json` of the manifest without
``"signature"``; every file it lists carries a sha256 and a size in bytes.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from edge_agent.imaging import Preprocessing, decode_image, preprocess

__all__ = [
    "ClassifierSession",
    "DetectorSession",
    "ManifestError",
    "ModelLoadError",
    "canonical_json",
    "file_sha256",
    "parse_trusted_keys",
    "public_key_id",
    "verify_files",
    "verify_manifest",
]

MODEL_FILE = "model.onnx"
MANIFEST_FILE = "manifest.json"
INPUT_NAME = "input"
OUTPUT_NAME = "probabilities"
_HASH_CHUNK = 1 << 20

# onnxruntime's Python errors derive from Exception directly; list them to catch only those.
try:
    from onnxruntime.capi import onnxruntime_pybind11_state as _ort_state

    _ORT_ERRORS: tuple[type[BaseException], ...] = tuple(
        getattr(_ort_state, name)
        for name in (
            "Fail",
            "InvalidArgument",
            "NoSuchFile",
            "NoModel",
            "EngineError",
            "RuntimeException",
            "InvalidProtobuf",
            "ModelLoaded",
            "NotImplemented",
            "InvalidGraph",
            "EPFail",
        )
        if hasattr(_ort_state, name)
    ) + (RuntimeError, ValueError, OSError)
except ImportError:  # pragma: no cover - layout of onnxruntime internals changed
    _ORT_ERRORS = (Exception,)


class ManifestError(ValueError):
    """A manifest or a file of its package fails verification. ``str(error)`` is the reason."""


class ModelLoadError(RuntimeError):
    """onnxruntime cannot load or run a model, or the graph does not match its manifest."""


def canonical_json(obj: Any) -> bytes:
    """The signed byte form of a JSON value: sorted keys, no spaces, UTF-8 (contracts.md)."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode(
        "utf-8"
    )


def _public_key_raw(public_key_b64: str) -> bytes:
    try:
        raw = base64.b64decode(public_key_b64, validate=True)
    except (binascii.Error, ValueError) as error:
        raise ManifestError("signing public key is not valid base64") from error
    if len(raw) != 32:
        raise ManifestError(f"signing public key must be 32 raw bytes, got {len(raw)}")
    return raw


def public_key_id(public_key_b64: str) -> str:
    """``key_id`` of a base64 raw Ed25519 public key: first 16 hex digits of its sha256."""
    return hashlib.sha256(_public_key_raw(public_key_b64)).hexdigest()[:16]


def verify_manifest(manifest: dict[str, Any], trusted_keys: str | Iterable[str]) -> None:
    """Check the manifest's Ed25519 signature against the key among ``trusted_keys`` (base64 raw
    32-byte public keys, or one such key) whose ``key_id`` the signature names.

    Raises:
        ManifestError: "manifest is not signed", "unsupported signature algorithm ...",
            "manifest signed by another key (...)" (none of the trusted keys), "bad signature".
    """
    trusted = {public_key_id(key): key for key in
               ([trusted_keys] if isinstance(trusted_keys, str) else trusted_keys)}
    signature = manifest.get("signature")
    if not isinstance(signature, dict) or not isinstance(signature.get("value"), str):
        raise ManifestError("manifest is not signed")
    if signature.get("algorithm") != "ed25519":
        raise ManifestError(f"unsupported signature algorithm {signature.get('algorithm')!r}")
    public_key_b64 = trusted.get(signature.get("key_id"))  # type: ignore[arg-type]
    if public_key_b64 is None:
        raise ManifestError(
            f"manifest signed by another key ({signature.get('key_id')!r}); this device trusts "
            f"{', '.join(repr(key_id) for key_id in sorted(trusted)) or 'no key'}"
        )
    try:
        value = base64.b64decode(signature["value"], validate=True)
    except (binascii.Error, ValueError) as error:
        raise ManifestError("bad signature") from error
    body = {key: item for key, item in manifest.items() if key != "signature"}
    key = Ed25519PublicKey.from_public_bytes(_public_key_raw(public_key_b64))
    try:
        key.verify(value, canonical_json(body))
    except InvalidSignature as error:
        raise ManifestError("bad signature") from error


def parse_trusted_keys(entries: Any) -> list[str]:
    """The public keys of a device API ``trusted_signing_keys`` list
    (``[{"key_id", "public_key"}, ...]``, contracts.md), each checked against its ``key_id``.

    Raises:
        ManifestError: not a non-empty list, an entry without a valid public key, or a
            ``key_id`` that is not that of its public key (names the entry).
    """
    if not isinstance(entries, list) or not entries:
        raise ManifestError("trusted_signing_keys must be a non-empty list")
    keys = []
    for index, entry in enumerate(entries):
        public = entry.get("public_key") if isinstance(entry, dict) else None
        if not isinstance(public, str):
            raise ManifestError(f"trusted_signing_keys[{index}] has no public_key")
        if public_key_id(public) != entry.get("key_id"):
            raise ManifestError(f"trusted_signing_keys[{index}]: key_id {entry.get('key_id')!r} "
                                "is not that of its public key")
        keys.append(public)
    return keys


def file_sha256(path: Path | str) -> str:
    """Hex sha256 of a file, read in 1 MiB chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(_HASH_CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


_SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


def verify_files(manifest: dict[str, Any], directory: Path | str) -> None:
    """Check size (bytes) and sha256 of every file listed in ``manifest["files"]``.

    File names must be plain names (no directories, no ``..``) inside ``directory``.

    Raises:
        ManifestError: "manifest lists no files", "file 'x': unsafe name", "file 'x': missing",
            "file 'x': size N bytes, expected M", "file 'x': sha256 mismatch".
    """
    files = manifest.get("files")
    if not isinstance(files, dict) or not files:
        raise ManifestError("manifest lists no files")
    base = Path(directory)
    for name, expected in files.items():
        if not _SAFE_NAME.match(name) or ".." in name:
            raise ManifestError(f"file {name!r}: unsafe name")
        path = base / name
        if not path.is_file():
            raise ManifestError(f"file {name!r}: missing")
        size = path.stat().st_size
        if size != expected.get("size"):
            raise ManifestError(
                f"file {name!r}: size {size} bytes, expected {expected.get('size')}"
            )
        if file_sha256(path) != expected.get("sha256"):
            raise ManifestError(f"file {name!r}: sha256 mismatch")


def _version_tuple(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", text)[:3])



def load_onnx(path: Path | str, manifest: dict[str, Any], threads: int) -> ort.InferenceSession:
    """An onnxruntime CPU session of the model at ``path`` with ``threads`` intra-op threads
    (one inter-op thread), after checking the manifest's ``min_onnxruntime``; every session
    class loads its graph here. Raises ModelLoadError (onnxruntime too old, or it cannot load
    the file)."""
    needed = str(manifest.get("min_onnxruntime") or "0")
    if _version_tuple(ort.__version__) < _version_tuple(needed):
        raise ModelLoadError(f"model needs onnxruntime >= {needed}, have {ort.__version__}")
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    try:
        return ort.InferenceSession(str(path), sess_options=options,
                                    providers=["CPUExecutionProvider"])
    except _ORT_ERRORS as error:
        raise ModelLoadError(f"onnxruntime cannot load the model: {error}") from error

class _PackageSession:
    """What every model package session shares: the manifest (read from ``source/manifest.json``
    when not given), its labels and preprocessing, the onnxruntime version check and the
    CPU session; subclasses check their task's manifest fields (:meth:`_check_manifest`) and
    graph (:meth:`_check_signature`)."""

    task = ""

    def __init__(
        self,
        source: Path | str,
        manifest: dict[str, Any] | None = None,
        *,
        threads: int = 1,
    ) -> None:
        path = Path(source)
        if manifest is None:
            manifest_path = path / MANIFEST_FILE
            try:
                manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
            except (OSError, ValueError) as error:
                raise ManifestError(f"cannot read {manifest_path}: {error}") from error
            path = path / MODEL_FILE
        self.manifest: dict[str, Any] = manifest
        self.labels: list[str] = [str(label) for label in manifest.get("labels") or []]
        if not self.labels:
            raise ManifestError("manifest has no labels")
        try:
            self.preprocessing = Preprocessing.from_dict(manifest.get("preprocessing") or {})
        except (TypeError, ValueError) as error:
            raise ManifestError(f"invalid preprocessing: {error}") from error
        self._check_manifest()
        self._session = load_onnx(path, manifest, threads)
        self._check_signature()

    def _check_manifest(self) -> None:
        """Raise ManifestError on the task's own manifest fields (none by default)."""

    def _check_signature(self) -> None:
        raise NotImplementedError

    @property
    def version_id(self) -> str | None:
        """``manifest["model"]["version_id"]``, the model version this session serves."""
        model = self.manifest.get("model") or {}
        return model.get("version_id")


class ClassifierSession(_PackageSession):
    """An onnxruntime session for an image classifier package.

    ``ClassifierSession(model_dir)`` reads ``model.onnx`` and ``manifest.json`` from a directory;
    ``ClassifierSession(model_path, manifest)`` takes them separately. ``threads`` is
    onnxruntime's intra-op thread count. Predictions are thread-safe (onnxruntime's ``run`` is).
    This class does not verify signatures or checksums: call :func:`verify_manifest` and
    :func:`verify_files` first.

    Raises:
        ModelLoadError: the model cannot be loaded, needs a newer onnxruntime, or its graph has no
            ``input`` (N, 3, H, W) / ``probabilities`` (N, C) matching the manifest.
        ManifestError: the manifest has no labels or invalid preprocessing.
    """

    #: the manifest ``task`` this session serves (edge_agent.sessions picks the class by it)
    task = "image_classification"

    def _check_signature(self) -> None:
        inputs = {item.name: item for item in self._session.get_inputs()}
        outputs = {item.name for item in self._session.get_outputs()}
        if INPUT_NAME not in inputs or OUTPUT_NAME not in outputs:
            raise ModelLoadError(
                f"model must have input {INPUT_NAME!r} and output {OUTPUT_NAME!r}, "
                f"has {sorted(inputs)} -> {sorted(outputs)}"
            )
        shape = inputs[INPUT_NAME].shape
        height, width = self.preprocessing.size
        fixed = [dim if isinstance(dim, int) else None for dim in shape]
        if len(fixed) != 4 or any(
            want is not None and got is not None and want != got
            for want, got in zip((None, 3, height, width), fixed, strict=True)
        ):
            raise ModelLoadError(
                f"model input shape {shape} does not match (N, 3, {height}, {width})"
            )

    def predict_batch(self, x: np.ndarray) -> np.ndarray:
        """(N, 3, H, W) float32 preprocessed batch -> (N, C) float32 class probabilities.

        Raises:
            ValueError: wrong dtype or shape.
            ModelLoadError: onnxruntime fails to run, or C differs from the number of labels.
        """
        height, width = self.preprocessing.size
        if x.dtype != np.float32 or x.ndim != 4 or x.shape[1:] != (3, height, width):
            raise ValueError(f"expected (N, 3, {height}, {width}) float32, got {x.shape} {x.dtype}")
        probabilities: np.ndarray  # onnxruntime is untyped: run() returns Any
        try:
            (probabilities,) = self._session.run([OUTPUT_NAME], {INPUT_NAME: x})
        except _ORT_ERRORS as error:
            raise ModelLoadError(f"onnxruntime failed to run the model: {error}") from error
        if probabilities.ndim != 2 or probabilities.shape != (x.shape[0], len(self.labels)):
            raise ModelLoadError(
                f"model output shape {probabilities.shape} does not match "
                f"(N={x.shape[0]}, C={len(self.labels)} labels)"
            )
        return probabilities.astype(np.float32, copy=False)

    def self_test(self) -> None:
        """Run one all-zero input and check the output: (1, C), finite, summing to ~1.

        Raises:
            ModelLoadError: the model fails to run or its output is not a probability vector.
        """
        height, width = self.preprocessing.size
        probabilities = self.predict_batch(np.zeros((1, 3, height, width), dtype=np.float32))
        total = float(probabilities.sum())
        if not np.all(np.isfinite(probabilities)) or abs(total - 1.0) > 1e-3:
            raise ModelLoadError(f"model output is not a probability vector (sum {total:.4f})")

    def predict_image(self, data: bytes, top_k: int = 5) -> list[dict[str, Any]]:
        """Image bytes -> the ``top_k`` classes, most probable first.

        Returns ``[{"label": str, "index": int, "probability": float in 0..1}, ...]``.

        Raises:
            ImageDecodeError: the bytes are not a usable image.
            ValueError: ``top_k`` < 1.
            ModelLoadError: onnxruntime fails to run.
        """
        if top_k < 1:
            raise ValueError("top_k must be >= 1")
        x = preprocess(decode_image(data), self.preprocessing)[np.newaxis]
        probabilities = self.predict_batch(x)[0]
        order = np.argsort(-probabilities, kind="stable")[:top_k]
        return [
            {"label": self.labels[i], "index": int(i), "probability": float(probabilities[i])}
            for i in order
        ]


class DetectorSession(_PackageSession):
    """An onnxruntime session for an object detection package (manifest ``task``
    ``object_detection``; docs/contracts.md, "Detection models").

    The graph has input ``images`` (N, 3, S, S) float32 (letterbox preprocessing) and outputs
    ``boxes`` (N, A, 4) xyxy in input pixels and ``scores`` (N, A, C); the manifest's
    ``detection`` object is :class:`edge_agent.detection.DetectionSettings`. Constructed like
    :class:`ClassifierSession`; thread-safe predictions; no signature check here.

    Raises:
        ModelLoadError: the model cannot be loaded, needs a newer onnxruntime, or its graph does
            not have that signature.
        ManifestError: no labels, invalid preprocessing (it must be ``resize: letterbox``) or
            invalid detection settings.
    """

    task = "object_detection"

    def _check_manifest(self) -> None:
        from edge_agent.detection import DetectionSettings

        try:
            self.settings = DetectionSettings.from_dict(self.manifest.get("detection") or {})
        except (TypeError, ValueError) as error:
            raise ManifestError(f"invalid detection manifest: {error}") from error
        if self.preprocessing.resize != "letterbox":
            raise ManifestError("a detection model needs preprocessing.resize 'letterbox'")

    def _check_signature(self) -> None:
        inputs = {item.name for item in self._session.get_inputs()}
        outputs = {item.name for item in self._session.get_outputs()}
        if "images" not in inputs or not {"boxes", "scores"} <= outputs:
            raise ModelLoadError(f"a detection model must have input 'images' and outputs "
                                 f"'boxes', 'scores'; has {sorted(inputs)} -> {sorted(outputs)}")

    def run_batch(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(N, 3, S, S) float32 -> (boxes (N, A, 4), scores (N, A, C)).

        Raises:
            ValueError: wrong dtype or shape.
            ModelLoadError: onnxruntime fails, or C differs from the number of labels.
        """
        height, width = self.preprocessing.size
        if x.dtype != np.float32 or x.ndim != 4 or x.shape[1:] != (3, height, width):
            raise ValueError(f"expected (N, 3, {height}, {width}) float32, got {x.shape} {x.dtype}")
        try:
            boxes, scores = self._session.run(["boxes", "scores"], {"images": x})
        except _ORT_ERRORS as error:
            raise ModelLoadError(f"onnxruntime failed to run the model: {error}") from error
        if scores.ndim != 3 or scores.shape[2] != len(self.labels) or boxes.shape[:2] != \
                scores.shape[:2]:
            raise ModelLoadError(f"model outputs {boxes.shape}, {scores.shape} do not match "
                                 f"(N, A, 4), (N, A, C={len(self.labels)})")
        return boxes, scores

    def self_test(self) -> None:
        """Run one all-zero input; the outputs must be finite and the scores within [0, 1].

        Raises:
            ModelLoadError: the model fails to run or gives impossible values.
        """
        height, width = self.preprocessing.size
        boxes, scores = self.run_batch(np.zeros((1, 3, height, width), dtype=np.float32))
        if not (np.all(np.isfinite(boxes)) and np.all(np.isfinite(scores))
                and scores.min(initial=0.0) >= 0.0 and scores.max(initial=0.0) <= 1.0 + 1e-6):
            raise ModelLoadError("model outputs are not finite boxes and scores in [0, 1]")

    def predict_image(self, data: bytes, score_threshold: float | None = None
                      ) -> dict[str, Any]:
        """Image bytes -> its detections in the image's own pixels (upright, EXIF applied).

        Returns ``{"width", "height", "tiles", "detections": [{"label", "index", "score",
        "box": [x1, y1, x2, y2]}]}``, best first; ``score_threshold`` overrides the manifest's.

        Raises:
            ImageDecodeError: the bytes are not a usable image.
            ValueError: ``score_threshold`` outside [0, 1].
            ModelLoadError: onnxruntime fails to run.
        """
        from edge_agent.detection import detect

        if score_threshold is not None and not 0.0 <= score_threshold <= 1.0:
            raise ValueError("score_threshold must be in [0, 1]")
        image = decode_image(data)
        found = detect(image, lambda x: self.run_batch(x), self.preprocessing, self.settings,
                       score_threshold)
        return {"width": image.width, "height": image.height, "tiles": found.tiles,
                "detections": [
                    {"label": self.labels[int(c)], "index": int(c), "score": float(s),
                     "box": [round(float(v), 2) for v in b]}
                    for b, s, c in zip(found.boxes, found.scores, found.classes, strict=True)]}
