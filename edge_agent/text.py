"""The one text featurisation rule of the whole platform (stdlib + numpy only).

Training, evaluation, the parity gate and serving all call :func:`featurize` with the model's
:class:`TextFeatures`, so that training and the device see the same features (as
:mod:`edge_agent.imaging` is for pixels; docs/decisions/text-classification.md).

A text becomes a bag of hashed n-grams:

1. **Normalised** (:func:`normalize_text`): byte order marks removed, Unicode NFC (or NFKC when
   the settings say so), case folded, every run of whitespace (Unicode's, the ideographic space
   U+3000 included) made one space, stripped.
2. **Truncated** to ``max_chars`` characters (a 1 MB text is featurised by its first
   ``max_chars``; :class:`TextFeaturesOutput` says it was truncated). The text itself is kept
   whole by whoever stores it.
3. **N-grams**: character n-grams of every length in ``char_ngrams`` over the whole normalised
   text (Chinese has no spaces: its words are in the character 1-3-grams), plus word unigrams
   and, when ``word_ngrams`` is 2, bigrams of the runs of Latin letters and digits (English;
   two words make a bigram when only spaces or ASCII punctuation stand between them, not when
   a Chinese phrase does).
4. **Hashed** into ``buckets`` by CRC-32 (``zlib.crc32``, the same value on every platform and
   Python version; never Python's salted ``hash()``) of the UTF-8 bytes of a kind prefix and the
   n-gram: ``c:`` + a character n-gram, ``w:`` + a word, ``b:`` + two words joined by one space;
   bucket = crc32 % buckets.
5. **Weighted**: sublinear term frequency ``1 + ln(count)`` per bucket (Salton & Buckley 1988;
   scikit-learn's ``sublinear_tf``). The model's learned per-bucket scale (IDF, optionally times
   a naive-Bayes ratio) and the L2 normalisation are applied by the model itself, inside its ONNX
   graph (:func:`scale_and_normalize` is the same arithmetic in numpy), so a model package needs
   nothing but these settings and its ``model.onnx``.

The output of one text is ``indices`` (L,) int64, ascending and unique, and ``weights`` (L,)
float32; :func:`pad_batch` stacks texts into (B, Lmax) arrays padded with index 0 and weight 0
(a weight of 0 adds nothing to any bucket).

That is ``kind="ngrams"`` (the default). ``kind="chars"`` is the input of a character-level
model (the ``charcnn`` family): steps 1 and 2 alike, then the text's characters **in order**,
each hashed alone as CRC-32 of ``s:`` + its UTF-8 bytes, modulo ``buckets``; ``indices`` (L,) in
text order (repeats kept, so not sorted nor unique) and ``weights`` 1.0 for each, so the
padding's weight 0 is the model's mask. ``char_ngrams``, ``word_ngrams`` and ``sublinear_tf``
are ignored by this kind (still validated, and stored as given).

``kind="wordpiece"`` is the input of the pretrained sentence encoder (the ``encoder`` family,
:mod:`workers.ml.text.encoder`): the text as it is (BERT's own cleaning, lower-casing and
accent removal, :mod:`edge_agent.wordpiece`), ``indices`` its WordPiece ids ``[CLS] ... [SEP]``
(at most ``max_tokens``) and ``weights`` 1.0 each, the attention mask. The vocabulary is not in
the settings (only ``vocab_sha256``): it travels in the model's ONNX metadata and is given by
:meth:`TextFeatures.with_vocabulary`.
"""

from __future__ import annotations

import re
import unicodedata
import zlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import numpy as np

from edge_agent.wordpiece import WordPiece, vocab_sha256

__all__ = [
    "HASH",
    "INPUT_NAMES",
    "KINDS",
    "OUTPUT_NAME",
    "TextFeatures",
    "TextFeaturesError",
    "TextFeaturesOutput",
    "TextPredictions",
    "classify_texts",
    "featurize",
    "featurize_batch",
    "idf",
    "merge_labels",
    "normalize_label",
    "normalize_text",
    "pad_batch",
    "prepare_text",
    "scale_and_normalize",
]

#: The hash function's name in the settings (a future one would be a new name, never a change).
HASH = "crc32"
#: Kind prefixes of the hashed n-grams (part of the hash input: "ab" as characters and "ab" as a
#: word land in different buckets).
CHAR_PREFIX, WORD_PREFIX, BIGRAM_PREFIX = b"c:", b"w:", b"b:"
#: Prefix of one character of a ``kind="chars"`` sequence (not a ``c:`` 1-gram: another hash).
SEQUENCE_PREFIX = b"s:"
_SEQUENCE_SEED = zlib.crc32(SEQUENCE_PREFIX)
#: ``TextFeatures.kind``: a bag of hashed n-grams (linear, fastText) or the characters in order
#: (a character-level model).
KINDS = ("ngrams", "chars", "wordpiece")
_CHAR_SEED, _WORD_SEED, _BIGRAM_SEED = (zlib.crc32(p) for p in (CHAR_PREFIX, WORD_PREFIX,
                                                                BIGRAM_PREFIX))
#: Runs of Latin letters (basic, Latin-1 and Latin Extended-A/B, after case folding) and ASCII
#: digits: the "words" of English and other Latin-script text.
_WORD = re.compile("[0-9a-z\u00df-\u00f6\u00f8-\u00ff\u0100-\u024f]+")
#: Raw characters looked at, per character of ``max_chars``, before normalising: bounds the work
#: on a huge input (a text of 100 MB is not normalised whole to keep its first 4,096 characters).
_RAW_PER_CHAR = 16
_NORMALIZATIONS = ("NFC", "NFKC")
#: A UTF-16 surrogate code point on its own (a Python str may hold one; UTF-8 cannot encode it).
_SURROGATE = re.compile("[\ud800-\udfff]")
_KEYS = frozenset(("max_chars", "char_ngrams", "word_ngrams", "buckets", "sublinear_tf",
                   "normalization", "hash", "kind", "max_tokens", "vocab_sha256"))
#: WordPiece tokenizers built from vocabularies (a few models at a time), by (sha256, length).
_TOKENIZERS: dict[tuple[str, int], WordPiece] = {}
_HEX64 = re.compile("[0-9a-f]{64}")


class TextFeaturesError(ValueError):
    """A text cannot be featurised, or settings are invalid. ``str(error)`` is the reason in
    English; ``kind`` and ``params`` say it for a caller that words it in another language:
    ``empty`` (nothing left after normalisation), ``not_text`` (``type``), ``settings``
    (``field``, ``value``)."""

    def __init__(self, message: str, kind: str, **params: object) -> None:
        super().__init__(message)
        self.kind = kind
        self.params = params


def _settings_error(field: str, value: object, rule: str) -> TextFeaturesError:
    return TextFeaturesError(f"text features: {field} {rule}, got {value!r}", "settings",
                             field=field, value=value)


@dataclass(frozen=True)
class TextFeatures:
    """How a text becomes hashed n-gram features (module docstring); stored in the model package
    as :meth:`to_dict` (JSON) and read back by :meth:`from_dict`.

    ``max_chars``: characters of the normalised text featurised (>= 1). ``char_ngrams``:
    (shortest, longest) character n-gram, 1 <= shortest <= longest <= 8. ``word_ngrams``: 0 (no
    word features), 1 (Latin words) or 2 (words and word bigrams). ``buckets``: hash buckets,
    2 .. 2**24. ``sublinear_tf``: ``1 + ln(count)`` instead of the count. ``normalization``:
    ``NFC`` or ``NFKC``. ``hash``: ``crc32``. ``kind``: ``ngrams`` (the bag of hashed n-grams)
    or ``chars`` (the characters in order, hashed one by one: ``char_ngrams``, ``word_ngrams``
    and ``sublinear_tf`` are then ignored, but still validated). Raises
    :class:`TextFeaturesError` on other values.
    """

    max_chars: int = 4096
    char_ngrams: tuple[int, int] = (1, 3)
    word_ngrams: int = 2
    buckets: int = 2**18
    sublinear_tf: bool = True
    normalization: str = "NFC"
    hash: str = HASH
    kind: str = "ngrams"
    #: ``wordpiece``: ids per text, [CLS] and [SEP] included (3 .. 512, BERT's positions)
    max_tokens: int = 128
    #: ``wordpiece``: SHA-256 of the vocabulary (:func:`edge_agent.wordpiece.vocab_sha256`)
    vocab_sha256: str = ""
    #: ``wordpiece``: the vocabulary itself, never serialised (it travels in the model's ONNX
    #: metadata); set by :meth:`with_vocabulary`
    vocabulary: tuple[str, ...] | None = field(default=None, compare=False, repr=False)

    def with_vocabulary(self, vocabulary: Sequence[str]) -> TextFeatures:
        """These ``wordpiece`` settings with their vocabulary (token strings in id order).

        Raises:
            TextFeaturesError: not ``wordpiece`` settings, or the vocabulary's SHA-256 is not
                ``vocab_sha256`` (``field`` ``vocabulary``).
        """
        if self.kind != "wordpiece":
            raise _settings_error("kind", self.kind, "must be wordpiece to take a vocabulary")
        found = vocab_sha256(vocabulary)
        if found != self.vocab_sha256:
            raise _settings_error("vocabulary", found[:12],
                                  f"must have the sha256 {self.vocab_sha256[:12]}...")
        return replace(self, vocabulary=tuple(vocabulary))

    def __post_init__(self) -> None:
        if isinstance(self.max_chars, bool) or not isinstance(self.max_chars, int) \
                or self.max_chars < 1:
            raise _settings_error("max_chars", self.max_chars, "must be an integer >= 1")
        pair = tuple(self.char_ngrams) if isinstance(self.char_ngrams, (tuple, list)) else ()
        if len(pair) != 2 or not all(isinstance(n, int) and not isinstance(n, bool)
                                     for n in pair) or not 1 <= pair[0] <= pair[1] <= 8:
            raise _settings_error("char_ngrams", self.char_ngrams,
                                  "must be [shortest, longest] with 1 <= shortest <= longest <= 8")
        object.__setattr__(self, "char_ngrams", (int(pair[0]), int(pair[1])))
        if self.word_ngrams not in (0, 1, 2) or isinstance(self.word_ngrams, bool):
            raise _settings_error("word_ngrams", self.word_ngrams, "must be 0, 1 or 2")
        if isinstance(self.buckets, bool) or not isinstance(self.buckets, int) \
                or not 2 <= self.buckets <= 2**24:
            raise _settings_error("buckets", self.buckets, "must be an integer in 2 .. 2**24")
        if not isinstance(self.sublinear_tf, bool):
            raise _settings_error("sublinear_tf", self.sublinear_tf, "must be true or false")
        if self.normalization not in _NORMALIZATIONS:
            raise _settings_error("normalization", self.normalization, "must be NFC or NFKC")
        if self.hash != HASH:
            raise _settings_error("hash", self.hash, "must be crc32")
        if self.kind not in KINDS:
            raise _settings_error("kind", self.kind, "must be ngrams, chars or wordpiece")
        if self.kind == "wordpiece":
            if isinstance(self.max_tokens, bool) or not isinstance(self.max_tokens, int) \
                    or not 3 <= self.max_tokens <= 512:
                raise _settings_error("max_tokens", self.max_tokens,
                                      "must be an integer in 3 .. 512")
            if not isinstance(self.vocab_sha256, str) or not _HEX64.fullmatch(self.vocab_sha256):
                raise _settings_error("vocab_sha256", self.vocab_sha256,
                                      "must be 64 lowercase hex digits")

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: ``{"max_chars", "char_ngrams": [lo, hi], "word_ngrams", "buckets",
        "sublinear_tf", "normalization", "hash"}``, plus ``"kind"`` when it is not ``ngrams``
        (so the settings of every n-gram model, older packages' included, stay as they were)."""
        out = {"max_chars": self.max_chars, "char_ngrams": list(self.char_ngrams),
               "word_ngrams": self.word_ngrams, "buckets": self.buckets,
               "sublinear_tf": self.sublinear_tf, "normalization": self.normalization,
               "hash": self.hash}
        if self.kind != "ngrams":
            out["kind"] = self.kind
        if self.kind == "wordpiece":
            out.update(max_tokens=self.max_tokens, vocab_sha256=self.vocab_sha256)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TextFeatures:
        """The inverse of :meth:`to_dict`; raises :class:`TextFeaturesError` on unknown keys or
        invalid values (missing keys take the defaults: no ``kind`` is ``ngrams``)."""
        unknown = sorted(set(data) - _KEYS)
        if unknown:
            raise _settings_error(unknown[0], data[unknown[0]], "is not a setting")
        values = dict(data)
        if "char_ngrams" in values and isinstance(values["char_ngrams"], list):
            values["char_ngrams"] = tuple(values["char_ngrams"])
        return cls(**values)


@dataclass(frozen=True)
class TextFeaturesOutput:
    """One text's features: ``indices`` (L,) int64 and ``weights`` (L,) float32. ``ngrams``:
    indices ascending and unique, weights the term frequencies (sublinear when the settings say
    so); ``chars``: one index per character in text order, weights 1.0. ``truncated``: the
    normalised text was longer than ``max_chars`` (its first ``max_chars`` were used);
    ``chars``: characters featurised."""

    indices: np.ndarray
    weights: np.ndarray
    truncated: bool
    chars: int


def normalize_text(text: str, normalization: str = "NFC") -> str:
    """Byte order marks removed, lone surrogates (U+D800..U+DFFF: no UTF-8 encoding; JSON's
    ``"\\ud800"`` decodes to one) made U+FFFD, ``normalization`` (NFC or NFKC), case folded,
    whitespace runs made one space, stripped."""
    if normalization not in _NORMALIZATIONS:
        raise _settings_error("normalization", normalization, "must be NFC or NFKC")
    form: Literal["NFC", "NFKC"] = "NFKC" if normalization == "NFKC" else "NFC"
    text = _SURROGATE.sub("\ufffd", text.replace("\ufeff", ""))
    text = unicodedata.normalize(form, text)
    return " ".join(text.casefold().split())


def _tokenizer(settings: TextFeatures) -> WordPiece:
    if settings.vocabulary is None:
        raise _settings_error("vocabulary", None, "must be given to wordpiece settings "
                              "(TextFeatures.with_vocabulary: it is in the model's metadata)")
    key = (settings.vocab_sha256, settings.max_tokens)
    tokenizer = _TOKENIZERS.get(key)
    if tokenizer is None:
        if len(_TOKENIZERS) >= 4:
            _TOKENIZERS.clear()
        tokenizer = _TOKENIZERS[key] = WordPiece(settings.vocabulary, settings.max_tokens)
    return tokenizer


def prepare_text(text: str, settings: TextFeatures) -> tuple[str, bool]:
    """(the normalised text truncated to ``max_chars``, whether it was truncated): what
    :func:`featurize` takes its n-grams from. Empty when nothing is left of ``text``.
    ``wordpiece`` settings: byte order marks and lone surrogates removed and the text trimmed
    only (BERT's own cleaning and lower-casing follow in :mod:`edge_agent.wordpiece`); empty
    when it has no token; truncated when its tokens pass ``max_tokens``."""
    if settings.kind == "wordpiece":
        cleaned = _SURROGATE.sub("\ufffd", text.replace("\ufeff", ""))
        ids, cut = _tokenizer(settings).encode(cleaned)
        return (cleaned.strip() if len(ids) > 2 else ""), cut
    limit = settings.max_chars
    raw_limit = limit * _RAW_PER_CHAR
    raw = text[:raw_limit]
    normalized = normalize_text(raw, settings.normalization)
    # a cut raw text may end inside a run of whitespace or a combining sequence: it is longer
    # than what is kept unless the normalised cut is shorter than max_chars (then, a rare text
    # of mostly whitespace, the cut's normalisation is used as it is and said truncated)
    truncated = len(normalized) > limit or len(text) > raw_limit
    return normalized[:limit], truncated


def _hashes(text: str, settings: TextFeatures) -> list[int]:
    crc32 = zlib.crc32
    out: list[int] = []
    low, high = settings.char_ngrams
    n = len(text)
    if text.isascii():
        data = text.encode("ascii")
        for k in range(low, min(high, n) + 1):
            out += [crc32(data[i : i + k], _CHAR_SEED) for i in range(n - k + 1)]
    else:
        encoded = [c.encode("utf-8") for c in text]
        for k in range(low, min(high, n) + 1):
            if k == 1:
                out += [crc32(c, _CHAR_SEED) for c in encoded]
            else:
                out += [crc32(b"".join(encoded[i : i + k]), _CHAR_SEED)
                        for i in range(n - k + 1)]
    if settings.word_ngrams:
        previous, previous_end = b"", -1
        for match in _WORD.finditer(text):
            word = match.group().encode("utf-8")
            out.append(crc32(word, _WORD_SEED))
            # a bigram joins two words with only spaces or ASCII punctuation between them (not
            # two English words on either side of a Chinese phrase)
            if settings.word_ngrams == 2 and previous_end >= 0 \
                    and text[previous_end : match.start()].isascii():
                out.append(crc32(previous + b" " + word, _BIGRAM_SEED))
            previous, previous_end = word, match.end()
    return out


def _sequence(text: str, buckets: int) -> np.ndarray:
    """``kind="chars"``: each character's bucket, in text order."""
    crc32, seed = zlib.crc32, _SEQUENCE_SEED
    if text.isascii():
        data = text.encode("ascii")
        hashes = [crc32(data[i : i + 1], seed) for i in range(len(data))]
    else:
        hashes = [crc32(c.encode("utf-8"), seed) for c in text]
    return np.asarray(hashes, dtype=np.int64) % buckets


def featurize(text: str, settings: TextFeatures) -> TextFeaturesOutput:
    """One text's features (module docstring): hashed n-grams, or its characters in order when
    ``settings.kind`` is ``chars``, or its WordPiece ids when it is ``wordpiece``.

    Raises:
        TextFeaturesError: ``text`` is not a str (``not_text``), or nothing is left of it after
            normalisation (``empty``: an empty or whitespace-only text).
    """
    if not isinstance(text, str):
        raise TextFeaturesError(f"text must be a string, got {type(text).__name__}", "not_text",
                                type=type(text).__name__)
    if settings.kind == "wordpiece":
        ids, cut = _tokenizer(settings).encode(_SURROGATE.sub("\ufffd", text))
        if len(ids) <= 2:
            raise TextFeaturesError("empty text: nothing is left after removing whitespace",
                                    "empty")
        return TextFeaturesOutput(np.asarray(ids, dtype=np.int64),
                                  np.ones(len(ids), dtype=np.float32), cut, len(text))
    normalized, truncated = prepare_text(text, settings)
    if not normalized:
        raise TextFeaturesError("empty text: nothing is left after removing whitespace",
                                "empty")
    if settings.kind == "chars":
        sequence = _sequence(normalized, settings.buckets)
        return TextFeaturesOutput(sequence, np.ones(len(sequence), dtype=np.float32), truncated,
                                  len(normalized))
    hashes = np.asarray(_hashes(normalized, settings), dtype=np.int64)
    indices, counts = np.unique(hashes % settings.buckets, return_counts=True)
    weights = counts.astype(np.float32)
    if settings.sublinear_tf:
        weights = (1.0 + np.log(weights)).astype(np.float32)
    return TextFeaturesOutput(indices.astype(np.int64), weights, truncated, len(normalized))


def featurize_batch(texts: Iterable[str], settings: TextFeatures
                    ) -> tuple[np.ndarray, np.ndarray, list[bool]]:
    """:func:`featurize` every text and :func:`pad_batch` them: ``(indices (B, Lmax) int64,
    weights (B, Lmax) float32, truncated per text)``."""
    outputs = [featurize(text, settings) for text in texts]
    indices, weights = pad_batch([(o.indices, o.weights) for o in outputs])
    return indices, weights, [o.truncated for o in outputs]


def pad_batch(features: Sequence[tuple[np.ndarray, np.ndarray]]
              ) -> tuple[np.ndarray, np.ndarray]:
    """Stack (indices, weights) pairs into (B, Lmax) int64 and float32 arrays, padded with index
    0 and weight 0 (Lmax >= 1). Raises ValueError for an empty batch."""
    if not features:
        raise ValueError("pad_batch: no texts")
    width = max(1, max(len(indices) for indices, _ in features))
    indices_out = np.zeros((len(features), width), dtype=np.int64)
    weights_out = np.zeros((len(features), width), dtype=np.float32)
    for row, (indices, weights) in enumerate(features):
        indices_out[row, : len(indices)] = indices
        weights_out[row, : len(weights)] = weights
    return indices_out, weights_out


def scale_and_normalize(indices: np.ndarray, weights: np.ndarray, scale: np.ndarray
                        ) -> np.ndarray:
    """What a model's graph does first, in numpy: ``weights * scale[indices]``, each row divided
    by its L2 norm (a row of zeros stays zeros). Shapes (..., L) -> (..., L) float32."""
    scaled = weights.astype(np.float32) * scale.astype(np.float32)[indices]
    norm = np.sqrt(np.sum(scaled * scaled, axis=-1, keepdims=True))
    out: np.ndarray = (scaled / np.maximum(norm, np.float32(1e-12))).astype(np.float32)
    return out


@dataclass(frozen=True)
class TextPredictions:
    """:func:`classify_texts`' answer: ``probabilities`` (N, C) float32 in the order of the
    texts, and ``truncated`` (N,) bool: the text was longer than ``max_chars``."""

    probabilities: np.ndarray
    truncated: np.ndarray


#: The model graph's inputs and output (docs/decisions/text-classification.md).
INPUT_NAMES = ("indices", "weights")
OUTPUT_NAME = "probabilities"


def classify_texts(texts: Sequence[str], settings: TextFeatures,
                   run: Callable[[np.ndarray, np.ndarray], np.ndarray],
                   batch_size: int = 64) -> TextPredictions:
    """Class probabilities of raw texts: each text featurised, texts of similar length batched
    together (``batch_size`` at most, padded by :func:`pad_batch`) and given to ``run(indices,
    weights) -> probabilities (B, C)``, e.g. ``lambda i, w: session.run(["probabilities"],
    {"indices": i, "weights": w})[0]`` on an onnxruntime session of the model.

    Raises:
        TextFeaturesError: a text cannot be featurised (``params["index"]``: which one).
        ValueError: no texts, or ``batch_size`` < 1.
    """
    if not texts:
        raise ValueError("classify_texts: no texts")
    if batch_size < 1:
        raise ValueError("classify_texts: batch_size must be >= 1")
    outputs = []
    for index, text in enumerate(texts):
        try:
            outputs.append(featurize(text, settings))
        except TextFeaturesError as error:
            error.params["index"] = index
            raise
    order = sorted(range(len(outputs)), key=lambda i: len(outputs[i].indices))
    results: list[np.ndarray | None] = [None] * len(outputs)
    for start in range(0, len(order), batch_size):
        rows = order[start : start + batch_size]
        indices, weights = pad_batch([(outputs[i].indices, outputs[i].weights) for i in rows])
        probabilities = np.asarray(run(indices, weights), dtype=np.float32)
        if probabilities.ndim != 2 or len(probabilities) != len(rows):
            raise ValueError(f"the model answered shape {probabilities.shape} for "
                             f"{len(rows)} texts")
        for row, i in enumerate(rows):
            results[i] = probabilities[row]
    return TextPredictions(np.stack([r for r in results if r is not None]),
                           np.asarray([o.truncated for o in outputs], dtype=bool))


def normalize_label(label: str) -> str:
    """A class name as one class: Unicode NFKC (full-width forms and the ideographic space fold
    to their ordinary forms), whitespace runs made one space, stripped. Case is kept
    (``Positive`` and ``positive`` stay two classes). Raises ValueError for a name that is empty
    after this."""
    if not isinstance(label, str):
        raise TypeError(f"label must be a string, got {type(label).__name__}")
    normalized = " ".join(unicodedata.normalize("NFKC", label.replace("\ufeff", "")).split())
    if not normalized:
        raise ValueError(f"empty label {label!r}")
    return normalized


def merge_labels(labels: Sequence[str]) -> tuple[list[str], list[int]]:
    """Class names that normalise alike become one class: ``(names, mapping)`` with ``names``
    the normalised names in order of first appearance and ``mapping[i]`` the new index of
    ``labels[i]``."""
    names: list[str] = []
    position: dict[str, int] = {}
    mapping = []
    for label in labels:
        name = normalize_label(label)
        if name not in position:
            position[name] = len(names)
            names.append(name)
        mapping.append(position[name])
    return names, mapping


def idf(document_frequency: np.ndarray, n_documents: int) -> np.ndarray:
    """Smoothed inverse document frequency per bucket, ``ln((1 + n) / (1 + df)) + 1``
    (scikit-learn's ``smooth_idf``), float32."""
    df = np.asarray(document_frequency, dtype=np.float64)
    return (np.log((1.0 + n_documents) / (1.0 + df)) + 1.0).astype(np.float32)
