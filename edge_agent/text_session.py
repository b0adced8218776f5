"""The onnxruntime session of a text classification package, and the agent's text requests.

A package with ``"task": "text_classification"`` (docs/contracts.md, "Text models") has a graph
with inputs ``indices`` (N, L) int64 and ``weights`` (N, L) float32 (hashed n-gram features,
padded with index 0 / weight 0) and output ``probabilities`` (N, C) float32, softmax inside; its
manifest's ``text`` object is the :class:`edge_agent.text.TextFeatures` that turn a text into
those features. Featurising, batching and running are :func:`edge_agent.text.classify_texts`,
the one text rule training and evaluation use too; this module only loads, checks and answers.

The agent's ``POST /v1/predict`` for a text model takes JSON ``{"text": "..."}`` or
``{"texts": ["...", ...]}`` (at most :data:`MAX_TEXTS`): :func:`parse_text_body` reads it,
:meth:`TextClassifierSession.answer` answers it. :class:`WrongInputError` says that an image was
sent to a text model, or JSON to an image model, and what the model being served expects.

Text input, one rule for the agent and the platform's try-it (:func:`text_input`; both call it,
so the same text gets the same answer or the same refusal on either; docs/contracts.md):

- bytes must be UTF-8 (a byte order mark allowed): bytes that are not are refused, never read
  as U+FFFD (``not_utf8``: the byte and its offset); in a JSON body the text's own bytes are
  looked at (:func:`load_text_request`), so the refusal names the field;
- a lone surrogate (JSON's ``"\\ud800"``, no character) is refused (``surrogate``);
- NUL characters (U+0000) are removed: they carry nothing in a text (UTF-16 read as bytes is
  full of them) and BERT's cleaning drops them too;
- a text with nothing but whitespace, byte order marks and NULs is refused (``empty``), an
  empty one too;
- any length is taken: the model reads its start (``text.max_chars`` characters or
  ``max_tokens`` tokens) and the answer says ``truncated``; the body's own limit (32 MiB on the
  agent and on the platform) bounds it.

``top_k``, one rule for both too (:func:`parse_top_k`, :func:`request_top_k`): from the query
string and/or a JSON body, an integer (or a string of digits) >= 1, any size (an answer lists at
most every label), absent or ``null``: :data:`DEFAULT_TOP_K`; both given and different: refused.
"""

from __future__ import annotations

import json
import re
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
from edge_agent.wordpiece import VOCAB_METADATA_KEY, vocab_sha256

__all__ = ["DEFAULT_TOP_K", "MAX_TEXTS", "TASK", "TextClassifierSession",
           "TextInputError", "TextRequestError", "TopKError", "VocabularyError",
           "WrongInputError", "image_model_got", "load_text_request", "parse_text_body",
           "parse_top_k", "request_top_k", "text_input", "text_request"]

TASK = "text_classification"
#: The classes an answer lists when the request names no ``top_k``.
DEFAULT_TOP_K = 5
#: Most texts one ``POST /v1/predict`` may carry (``{"texts": [...]}``).
MAX_TEXTS = 256
#: The graph's inputs: name -> (onnxruntime type, manifest dtype).
_INPUT_TYPES = {INPUT_NAMES[0]: ("tensor(int64)", "int64"),
                INPUT_NAMES[1]: ("tensor(float)", "float32")}
#: What a text model expects, in the errors that say it.
_EXPECTS = ('this model classifies text (text_classification): send JSON {"text": "..."} or '
            '{"texts": ["...", ...]}')
_SURROGATE = re.compile("[\ud800-\udfff]")
_JSON_TYPES = {dict: "an object", list: "an array", str: "a string", bool: "a boolean",
               int: "a number", float: "a number", type(None): "null"}


class WrongInputError(ValueError):
    """The body is not what the model being served takes: an image sent to a text model, JSON
    sent to an image model. ``str(error)`` says what it expects (the HTTP API answers 400)."""


class TextInputError(ValueError):
    """A text a text model does not take (:func:`text_input`). ``str(error)`` is the reason in
    English, naming the field (``"text"``, ``"texts[3]"``); ``kind`` (``not_string``,
    ``not_utf8``, ``surrogate``, ``empty``), ``field`` and ``params`` say it for a caller that
    words it in another language (the platform's try-it)."""

    def __init__(self, message: str, kind: str, field: str, **params: Any) -> None:
        super().__init__(message)
        self.kind = kind
        self.field = field
        self.params = params


class TextRequestError(ValueError):
    """A text request's body that is not a JSON object (:func:`load_text_request`).
    ``str(error)`` is the agent's reason in English; ``kind`` (``empty``, ``not_utf8``:
    ``byte``, ``offset``; ``not_json``: ``error``; ``too_deep``; ``not_object``: ``type``) and
    ``params`` say it for a caller that words it in another language (the platform's try-it)."""

    def __init__(self, message: str, kind: str, **params: Any) -> None:
        super().__init__(message)
        self.kind = kind
        self.params = params


class TopKError(ValueError):
    """A ``top_k`` that is not valid (:func:`parse_top_k`, :func:`request_top_k`): ``kind``
    ``not_integer``, ``below_one`` or ``conflict`` (``query``, ``body``); ``str(error)`` is the
    reason in English, the same on the agent and the platform's try-it."""

    def __init__(self, message: str, kind: str, **params: Any) -> None:
        super().__init__(message)
        self.kind = kind
        self.params = params


_TOP_K_DIGITS = re.compile(r"\s*\+?[0-9]+\s*")


def parse_top_k(value: object) -> int | None:
    """A ``top_k`` as a request gives it, by one rule on the agent and the platform's try-it,
    from the query string (a string) or a JSON body: None (absent, or JSON ``null``) -> None,
    the default; an integer or a string of decimal digits -> that integer, which must be >= 1;
    any number is taken (an answer lists at most every label).

    Raises:
        TopKError: not an integer (a boolean, a fraction, another string: ``top_k must be an
            integer``), below 1 (``top_k must be >= 1``).
    """
    if value is None:
        return None
    if isinstance(value, str) and _TOP_K_DIGITS.fullmatch(value) and len(value) <= 4000:
        value = int(value)
    elif isinstance(value, str) and re.fullmatch(r"\s*-[0-9]+\s*", value):
        raise TopKError("top_k must be >= 1", "below_one")
    if isinstance(value, bool) or not isinstance(value, int):
        raise TopKError("top_k must be an integer", "not_integer")
    if value < 1:
        raise TopKError("top_k must be >= 1", "below_one")
    return value


def request_top_k(query: int | None, body: int | None) -> int:
    """The ``top_k`` of a request that may give it in its query string and in its body (both
    read by :func:`parse_top_k`): the one given, :data:`DEFAULT_TOP_K` when neither is.

    Raises:
        TopKError: both are given and differ (``conflict``).
    """
    if query is not None and body is not None and query != body:
        raise TopKError(f"top_k is {query} in the query string and {body} in the body: give "
                        "it once", "conflict", query=query, body=body)
    found = query if query is not None else body
    return DEFAULT_TOP_K if found is None else found


class VocabularyError(ModelLoadError):
    """A WordPiece package whose graph lacks its vocabulary (``kind`` ``missing``) or carries
    another one than its manifest's ``text.vocab_sha256`` names (``mismatch``; ``params``:
    ``found``, ``expected``): the package itself is wrong, it loads on no device."""

    def __init__(self, message: str, kind: str, **params: Any) -> None:
        super().__init__(message)
        self.kind = kind
        self.params = params


#: U+DC80..U+DCFF: where ``surrogateescape`` puts a byte that is not UTF-8.
_ESCAPED_BYTE = re.compile("[\udc80-\udcff]")
#: What a text may hold and still be empty: whitespace, byte order marks and NULs.
_NOTHING = str.maketrans("", "", "\ufeff\x00")


def text_input(value: object, field: str = "text") -> str:
    """A text sent to a text model, checked and normalised by the one rule of the agent and
    the platform (module docstring, "Text input"): ``bytes`` decoded as UTF-8 (a byte order
    mark allowed), NUL characters removed. ``field`` names the text in messages.

    Raises:
        TextInputError: ``value`` is not a string nor bytes (``not_string``: ``type``); bytes
            that are not UTF-8 (``not_utf8``: ``byte``, ``offset``); a lone surrogate
            (``surrogate``: ``code``, ``index``); nothing but whitespace (``empty``).
    """
    if isinstance(value, (bytes, bytearray)):
        try:
            value = bytes(value).decode("utf-8")
        except UnicodeDecodeError as error:
            byte = value[error.start]
            raise TextInputError(f'"{field}" is not valid UTF-8 (byte 0x{byte:02x} at offset '
                                 f"{error.start})", "not_utf8", field, byte=byte,
                                 offset=error.start) from None
    if not isinstance(value, str):
        raise TextInputError(f'"{field}" must be a string, not {_json_type(value)}',
                             "not_string", field, type=_json_type(value))
    found = _SURROGATE.search(value)
    if found:
        raise TextInputError(f'"{field}" is not valid Unicode: a lone surrogate '
                             f"U+{ord(found.group()):04X} at character {found.start()}",
                             "surrogate", field, code=ord(found.group()), index=found.start())
    text = value.replace("\x00", "")
    if not text.translate(_NOTHING).strip():
        raise TextInputError(f'"{field}" is empty: nothing is left after removing whitespace',
                             "empty", field)
    return text


def _json_type(value: object) -> str:
    return _JSON_TYPES.get(type(value), type(value).__name__)


def image_model_got(task: str, data: bytes) -> WrongInputError | None:
    """For an image model (``task``) that could not decode ``data``: the error to answer
    instead when ``data`` is a JSON object or array (a text request), else None."""
    head = data[:64].lstrip()
    if not head.startswith((b"{", b"[")):
        return None
    try:
        json.loads(data)
    except (ValueError, RecursionError):  # UnicodeDecodeError included; nested too deeply
        return None
    return WrongInputError(f"this model takes an image ({task}): send the image's bytes as the "
                           "body, not JSON")


def _not_json(data: bytes, problem: TextRequestError) -> WrongInputError | TextRequestError:
    """A body a text model cannot read: an image (say so), or ``problem``."""
    from edge_agent.imaging import ImageDecodeError, sniff_format

    try:
        fmt = sniff_format(data)
    except ImageDecodeError:
        return TextRequestError(f"{problem}; {_EXPECTS}", problem.kind, **problem.params)
    return WrongInputError(f"{_EXPECTS}, not a {fmt} image")


def load_text_request(data: bytes) -> dict[str, Any]:
    """The JSON object of a text request's body (UTF-8, a byte order mark allowed). When the
    body is not UTF-8 but is JSON once its stray bytes are kept aside (``surrogateescape``), a
    string of ``text`` or ``texts`` holding them comes back as its bytes, for
    :func:`text_input` to refuse naming that field; the other keys are left as they are.

    Raises:
        WrongInputError: the body is an image.
        TextRequestError: the body is empty, not JSON (or not UTF-8 outside those strings),
            nested too deeply, not an object.
    """
    if not data:
        raise TextRequestError(f"the body is empty; {_EXPECTS}", "empty")
    escaped, problem = False, None
    try:
        decoded = data.decode("utf-8")
    except UnicodeDecodeError as error:
        problem = TextRequestError(f"the body is not UTF-8 (byte 0x{data[error.start]:02x} at "
                                   f"offset {error.start})", "not_utf8",
                                   byte=data[error.start], offset=error.start)
        decoded, escaped = data.decode("utf-8", "surrogateescape"), True
    try:
        body = json.loads(decoded.removeprefix("\ufeff"))
    except ValueError as error:
        raise _not_json(data, problem or TextRequestError(
            f"the body is not JSON ({error})", "not_json", error=str(error))) from None
    except RecursionError:  # arrays or objects nested thousands deep
        raise TextRequestError(f"the body is not JSON this agent reads (nested too deeply); "
                               f"{_EXPECTS}", "too_deep") from None
    if not isinstance(body, dict):
        raise TextRequestError(f"the body must be a JSON object, not {_json_type(body)}; "
                               f"{_EXPECTS}", "not_object", type=_json_type(body))
    if escaped:
        for key in ("text", "texts"):
            value = body.get(key)
            if isinstance(value, str):
                body[key] = _as_sent(value)
            elif isinstance(value, list):
                body[key] = [_as_sent(item) if isinstance(item, str) else item
                             for item in value]
    return body


def _as_sent(value: str) -> str | bytes:
    """A string of a body decoded with ``surrogateescape``: its bytes when it holds a byte
    that is not UTF-8 (and nothing JSON escaped as a lone surrogate outside that range)."""
    if not _ESCAPED_BYTE.search(value):
        return value
    try:
        return value.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return value


def parse_text_body(data: bytes) -> tuple[list[str], bool]:
    """The texts of a text model's request body: ``({"text": t} -> ([t], False)``, ``{"texts":
    [...]} -> (texts, True)``, each through :func:`text_input`. Other keys are ignored. A UTF-8
    byte order mark is allowed. Raises as :func:`text_request`."""
    texts, batch, _top_k = text_request(data)
    return texts, batch


def text_request(data: bytes) -> tuple[list[str], bool, int | None]:
    """A text model's request body -> ``(texts, batch, top_k)``: the texts as
    :func:`parse_text_body` reads them and the body's ``top_k`` (:func:`parse_top_k`; None
    when it gives none). Other keys are ignored. A UTF-8 byte order mark is allowed.

    Raises:
        WrongInputError: the body is an image.
        ValueError: the body is empty, not UTF-8 JSON, not an object; it has neither or both
            of ``text`` and ``texts``; ``texts`` is not a list of 1 to :data:`MAX_TEXTS`
            items. :class:`TextInputError` (a ValueError): a text :func:`text_input` refuses
            (not a string, not UTF-8, a lone surrogate, empty). The message names the field.
            :class:`TopKError` (a ValueError): the body's ``top_k`` is not valid.
    """
    body = load_text_request(data)
    top_k = parse_top_k(body.get("top_k"))
    if "text" in body and "texts" in body:
        raise ValueError('give "text" (one text) or "texts" (a list), not both')
    if "text" in body:
        texts, batch, names = [body["text"]], False, ["text"]
    elif "texts" in body:
        texts, batch = body["texts"], True
        if not isinstance(texts, list):
            raise ValueError(f'"texts" must be a list of strings, not {_json_type(texts)}')
        if not 1 <= len(texts) <= MAX_TEXTS:
            raise ValueError(f'"texts" holds {len(texts)} texts: give 1 to {MAX_TEXTS} per '
                             "request")
        names = [f"texts[{index}]" for index in range(len(texts))]
    else:
        raise ValueError(f'the body has no "text"; {_EXPECTS}')
    return ([text_input(text, name) for name, text in zip(names, texts, strict=True)], batch,
            top_k)


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
                                f"{_json_type(settings)}")
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
