"""The onnxruntime session of a text classification package, and the agent's text requests.

A package with ``"task": "text_classification"`` (docs/contracts.md, "Text models") has a graph
with inputs ``indices`` (N, L) int64 and ``weights`` (N, L) float32 (hashed n-gram features,
padded with index 0 / weight 0) and output ``probabilities`` (N, C) float32, softmax inside; its
manifest's ``text`` object is the :class:`edge_agent.text.TextFeatures` that turn a text into
those features. Featurising, batching and running are :func:`edge_agent.text.classify_texts`,
the one text rule training and evaluation use too; this module only loads, checks and answers.

The agent's ``POST /v1/predict`` for a text model takes JSON ``{"text": "..."}`` or
``{"texts": ["...", ...]}``: :mod:`edge_agent.text_request` reads it (one rule for the agent and
the platform's try-it; its names are re-exported here), :meth:`TextClassifierSession.answer`
answers it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from edge_agent.runtime import (
    _ORT_ERRORS,
    MANIFEST_FILE,
    MODEL_FILE,
    ManifestError,
    ModelLoadError,
    load_onnx,
)
from edge_agent.text import (
    INPUT_NAMES,
    OUTPUT_NAME,
    TextFeatures,
    TextFeaturesError,
    classify_texts,
    featurize,
)
from edge_agent.text_request import (  # re-exported: the text request rule's home is there
    DEFAULT_TOP_K,
    MAX_TEXTS,
    TextInputError,
    TextRequestError,
    TopKError,
    WrongInputError,
    image_model_got,
    json_type,
    load_text_request,
    parse_text_body,
    parse_top_k,
    request_top_k,
    text_input,
    text_request,
)
from edge_agent.wordpiece import VOCAB_METADATA_KEY, vocab_sha256

__all__ = ["DEFAULT_TOP_K", "MAX_TEXTS", "TASK", "TextClassifierSession",
           "TextInputError", "TextRequestError", "TopKError", "VocabularyError",
           "WrongInputError", "image_model_got", "load_text_request", "parse_text_body",
           "manifest_inputs", "parse_top_k", "request_top_k", "text_input", "text_request"]

TASK = "text_classification"
#: The graph's inputs: name -> (onnxruntime type, manifest dtype).
_INPUT_TYPES = {INPUT_NAMES[0]: ("tensor(int64)", "int64"),
                INPUT_NAMES[1]: ("tensor(float)", "float32")}


def manifest_inputs(shape: list[Any] | None = None) -> list[dict[str, Any]]:
    """The package manifest's ``inputs`` of a text model: the n-gram (or WordPiece) ``indices``
    int64 and their ``weights`` float32, each of ``shape`` (default ``["N", "L"]``: texts x
    features), the graph the session's load test expects."""
    return [{"name": name, "shape": list(shape or ["N", "L"]), "dtype": dtype}
            for name, (_, dtype) in _INPUT_TYPES.items()]


class VocabularyError(ModelLoadError):
    """A WordPiece package whose graph lacks its vocabulary (``kind`` ``missing``) or carries
    another one than its manifest's ``text.vocab_sha256`` names (``mismatch``; ``params``:
    ``found``, ``expected``): the package itself is wrong, it loads on no device."""

    def __init__(self, message: str, kind: str, **params: Any) -> None:
        super().__init__(message)
        self.kind = kind
        self.params = params


def _dims(shape: Any) -> list[Any] | None:
    return list(shape) if isinstance(shape, (list, tuple)) else None


class TextClassifierSession:
    """An onnxruntime session for a text classification package (module docstring).

    Constructed as :class:`edge_agent.runtime.ClassifierSession`: ``TextClassifierSession(
    model_dir)`` reads ``model.onnx`` and ``manifest.json`` from a directory,
    ``TextClassifierSession(model_path, manifest)`` takes them separately; ``threads`` is
    onnxruntime's intra-op thread count. Predictions are thread-safe. No signature or checksum
    check here (``verify_manifest`` and ``verify_files`` come first).

    Raises:
        ManifestError: no labels; ``text`` missing or not valid featurisation settings;
            ``preprocessing`` not empty; ``inputs`` not ``indices`` (N, L) int64 and
            ``weights`` (N, L) float32; ``outputs`` not ``probabilities`` (N, C = labels).
            The message starts with the field.
        ModelLoadError: the model needs a newer onnxruntime, cannot be loaded, or its graph's
            inputs and output are not those. :class:`VocabularyError` (a ModelLoadError): a
            WordPiece graph without its vocabulary or with another one.
    """

    #: the manifest ``task`` this session serves (edge_agent.sessions picks the class by it)
    task = TASK

    def __init__(self, source: Path | str, manifest: dict[str, Any] | None = None, *,
                 threads: int = 1) -> None:
        path = Path(source)
        if manifest is None:
            manifest_path = path / MANIFEST_FILE
            try:
                manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
            except (OSError, ValueError) as error:
                raise ManifestError(f"cannot read {manifest_path}: {error}") from error
            if not isinstance(manifest, dict):
                raise ManifestError(f"{manifest_path} is not a JSON object")
            path = path / MODEL_FILE
        self.manifest: dict[str, Any] = manifest
        labels = manifest.get("labels")
        if not isinstance(labels, list) or not labels:
            raise ManifestError("manifest has no labels")
        self.labels: list[str] = [str(label) for label in labels]
        self.settings = self._text_settings(manifest)
        preprocessing = manifest.get("preprocessing")
        if preprocessing not in (None, {}):
            raise ManifestError("preprocessing: a text model has none (it must be {}), got "
                                f"{json.dumps(preprocessing, ensure_ascii=False)[:200]}")
        self._check_manifest_io(manifest)
        self._session = load_onnx(path, manifest, threads)
        self._check_signature()
        if self.settings.kind == "wordpiece":
            self.settings = self._with_vocabulary(self.settings)

    def _with_vocabulary(self, settings: TextFeatures) -> TextFeatures:
        """A WordPiece model's vocabulary comes from its graph's metadata
        (:data:`edge_agent.wordpiece.VOCAB_METADATA_KEY`) and must be the one the settings name
        by SHA-256: a text is never tokenised with another model's vocabulary
        (:class:`VocabularyError` otherwise)."""
        metadata = self._session.get_modelmeta().custom_metadata_map
        stored = metadata.get(VOCAB_METADATA_KEY)
        if not stored:
            raise VocabularyError(f"a WordPiece text model carries its vocabulary in the ONNX "
                                  f"metadata {VOCAB_METADATA_KEY!r}; this one has none",
                                  "missing", key=VOCAB_METADATA_KEY)
        vocab = stored.split("\n")
        found = vocab_sha256(vocab)
        if found != settings.vocab_sha256:
            raise VocabularyError(f"the model's vocabulary (sha256 {found[:12]}...) is not the "
                                  f"one its manifest names ({settings.vocab_sha256[:12]}...)",
                                  "mismatch", key=VOCAB_METADATA_KEY, found=found,
                                  expected=settings.vocab_sha256)
        try:
            return settings.with_vocabulary(vocab)
        except (TextFeaturesError, ValueError) as error:
            raise ModelLoadError(f"the model's vocabulary cannot be used: {error}") from error

    @staticmethod
    def _text_settings(manifest: dict[str, Any]) -> TextFeatures:
        settings = manifest.get("text")
        if settings is None:
            raise ManifestError("text: a text_classification manifest needs its featurisation "
                                "settings (edge_agent.text.TextFeatures.to_dict())")
        if not isinstance(settings, dict):
            raise ManifestError(f"text: must be an object of featurisation settings, not "
                                f"{json_type(settings)}")
        try:
            return TextFeatures.from_dict(settings)
        except (TextFeaturesError, TypeError, ValueError) as error:
            raise ManifestError(f"text: invalid featurisation settings: {error}") from error

    def _check_manifest_io(self, manifest: dict[str, Any]) -> None:
        inputs = manifest.get("inputs")
        wanted = 'indices ["N", "L"] int64 and weights ["N", "L"] float32'
        if not isinstance(inputs, list) or len(inputs) != 2 \
                or not all(isinstance(item, dict) for item in inputs):
            raise ManifestError(f"inputs: a text model takes {wanted}, got "
                                f"{json.dumps(inputs)[:200]}")
        for item, name in zip(inputs, INPUT_NAMES, strict=True):
            shape = _dims(item.get("shape"))
            if item.get("name") != name or item.get("dtype") != _INPUT_TYPES[name][1] \
                    or shape is None or len(shape) != 2:
                raise ManifestError(f"inputs: a text model takes {wanted}, got "
                                    f"{json.dumps(inputs)[:200]}")
        outputs = manifest.get("outputs")
        if outputs is None:
            return
        found = [item for item in outputs if isinstance(item, dict)
                 and item.get("name") == OUTPUT_NAME] if isinstance(outputs, list) else []
        shape = _dims(found[0].get("shape")) if found else None
        if shape is None or len(shape) != 2 or found[0].get("dtype") != "float32" or (
                isinstance(shape[1], int) and shape[1] != len(self.labels)):
            raise ManifestError(f"outputs: a text model gives {OUTPUT_NAME} [\"N\", "
                                f"{len(self.labels)}] float32 ({len(self.labels)} labels), got "
                                f"{json.dumps(outputs)[:200]}")

    def _check_signature(self) -> None:
        inputs = {item.name: item for item in self._session.get_inputs()}
        outputs = {item.name: item for item in self._session.get_outputs()}
        if set(inputs) != set(INPUT_NAMES) or OUTPUT_NAME not in outputs:
            raise ModelLoadError(
                f"a text model must have inputs {list(INPUT_NAMES)} and output {OUTPUT_NAME!r}, "
                f"has {sorted(inputs)} -> {sorted(outputs)}")
        for name, (kind, _) in _INPUT_TYPES.items():
            shape = _dims(inputs[name].shape)
            if inputs[name].type != kind or shape is None or len(shape) != 2:
                raise ModelLoadError(f"model input {name!r} is {inputs[name].type} "
                                     f"{inputs[name].shape}, not (N, L) {kind}")
        output = outputs[OUTPUT_NAME]
        shape = _dims(output.shape)
        if output.type != "tensor(float)" or shape is None or len(shape) != 2 or (
                isinstance(shape[1], int) and shape[1] != len(self.labels)):
            raise ModelLoadError(f"model output {OUTPUT_NAME!r} is {output.type} {output.shape}, "
                                 f"not (N, {len(self.labels)}) tensor(float)")

    @property
    def version_id(self) -> str | None:
        """``manifest["model"]["version_id"]``, the model version this session serves."""
        model = self.manifest.get("model") or {}
        return model.get("version_id")

    def predict_batch(self, indices: np.ndarray, weights: np.ndarray) -> np.ndarray:
        """(N, L) int64 indices and (N, L) float32 weights -> (N, C) float32 probabilities.

        Raises:
            ValueError: wrong dtypes or shapes.
            ModelLoadError: onnxruntime fails to run, or C differs from the number of labels.
        """
        if indices.dtype != np.int64 or weights.dtype != np.float32 or indices.ndim != 2 \
                or indices.shape != weights.shape:
            raise ValueError(f"expected (N, L) int64 and float32, got {indices.shape} "
                             f"{indices.dtype}, {weights.shape} {weights.dtype}")
        probabilities: np.ndarray  # onnxruntime is untyped: run() returns Any
        try:
            (probabilities,) = self._session.run(
                [OUTPUT_NAME], {INPUT_NAMES[0]: indices, INPUT_NAMES[1]: weights})
        except _ORT_ERRORS as error:
            raise ModelLoadError(f"onnxruntime failed to run the model: {error}") from error
        if probabilities.ndim != 2 or probabilities.shape != (len(indices), len(self.labels)):
            raise ModelLoadError(f"model output shape {probabilities.shape} does not match "
                                 f"(N={len(indices)}, C={len(self.labels)} labels)")
        return probabilities.astype(np.float32, copy=False)

    def self_test(self) -> None:
        """Run one input holding the first and the last hash bucket (a graph whose table has
        fewer rows than ``text.buckets`` fails here, not on a user's text; a WordPiece model:
        the vocabulary's last token between its markers) and check (1, C)
        finite probabilities summing to ~1.

        Raises:
            ModelLoadError: the model fails to run or its output is not a probability vector.
        """
        last = self.settings.buckets - 1
        if self.settings.kind == "wordpiece":  # [CLS], the last token, [SEP]
            ids = featurize("x", self.settings).indices
            last = len(self.settings.vocabulary or ()) - 1
            indices = np.array([[ids[0], last, ids[-1]]], dtype=np.int64)
        else:
            indices = np.array([[0, last]], dtype=np.int64)
        probabilities = self.predict_batch(indices, np.ones(indices.shape, dtype=np.float32))
        total = float(probabilities.sum())
        if not np.all(np.isfinite(probabilities)) or abs(total - 1.0) > 1e-3:
            raise ModelLoadError(f"model output is not a probability vector (sum {total:.4f})")

    def predict_texts(self, texts: Sequence[str], top_k: int = 5) -> list[dict[str, Any]]:
        """Texts -> per text ``{"predictions": [{"label", "index", "score"}], "truncated"}``:
        the ``top_k`` most probable classes, best first (``score`` the probability, 0..1), and
        whether the text was longer than ``text.max_chars`` (its start was classified).

        Raises:
            TextFeaturesError: a text is empty after normalisation (``params["index"]``).
            ValueError: ``top_k`` < 1, no texts.
            ModelLoadError: onnxruntime fails to run.
        """
        if top_k < 1:
            raise ValueError("top_k must be >= 1")
        found = classify_texts(texts, self.settings, self.predict_batch)
        results = []
        for row, truncated in zip(found.probabilities, found.truncated, strict=True):
            order = np.argsort(-row, kind="stable")[:top_k]
            results.append({"predictions": [{"label": self.labels[i], "index": int(i),
                                             "score": float(row[i])} for i in order],
                            "truncated": bool(truncated)})
        return results

    def answer(self, data: bytes, top_k: int | None = None) -> dict[str, Any]:
        """A ``POST /v1/predict`` body -> the answer's task fields: ``{"predictions",
        "truncated"}`` for ``{"text"}``, ``{"results": [{"predictions", "truncated"}]}`` for
        ``{"texts"}`` (in the order of the texts). ``top_k``: the query string's (None: not
        given); the body may give it too, the same or refused (:func:`request_top_k`); neither:
        :data:`DEFAULT_TOP_K`.

        Raises:
            WrongInputError: an image was sent.
            ValueError: a body :func:`text_request` refuses, a text empty after
                normalisation (named), ``top_k`` < 1; :class:`TopKError` for a body ``top_k``
                that is not valid or differs from the query string's.
            ModelLoadError: onnxruntime fails to run.
        """
        texts, batch, body_top_k = text_request(data)
        top_k = request_top_k(top_k, body_top_k)
        try:
            results = self.predict_texts(texts, top_k=top_k)
        except TextFeaturesError as error:
            if error.kind == "empty":  # nothing the model reads (a WordPiece model: no token)
                name = f'texts[{error.params.get("index")}]' if batch else "text"
                raise TextFeaturesError(f'"{name}": {error}', error.kind,
                                        **error.params) from None
            raise
        return {"results": results} if batch else results[0]
