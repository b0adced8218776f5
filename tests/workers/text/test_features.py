"""edge_agent.text: normalisation, hashed n-grams, weights, settings, batches."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import time
import zlib
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from edge_agent.text import (
    TextFeatures,
    TextFeaturesError,
    classify_texts,
    featurize,
    featurize_batch,
    normalize_text,
    pad_batch,
    scale_and_normalize,
)

ROOT = Path(__file__).resolve().parents[3]


def reference(text: str, settings: TextFeatures) -> dict[int, float]:
    """An independent rendering of the documented rule: bucket -> weight."""
    low, high = settings.char_ngrams
    grams = [b"c:" + text[i : i + k].encode("utf-8")
             for k in range(low, high + 1) for i in range(len(text) - k + 1)]
    if settings.word_ngrams:
        import re

        words = list(re.finditer("[0-9a-z\u00df-\u00f6\u00f8-\u00ff\u0100-\u024f]+", text))
        grams += [b"w:" + w.group().encode("utf-8") for w in words]
        if settings.word_ngrams == 2:
            grams += [b"b:" + (a.group() + " " + b.group()).encode("utf-8")
                      for a, b in zip(words, words[1:], strict=False)
                      if text[a.end() : b.start()].isascii()]
    counts = Counter(zlib.crc32(g) % settings.buckets for g in grams)
    return {k: (1.0 + math.log(c)) if settings.sublinear_tf else float(c)
            for k, c in counts.items()}


def as_dict(text: str, settings: TextFeatures) -> dict[int, float]:
    out = featurize(text, settings)
    assert out.indices.dtype == np.int64 and out.weights.dtype == np.float32
    assert list(out.indices) == sorted(set(out.indices.tolist()))  # ascending, unique
    return dict(zip(out.indices.tolist(), out.weights.tolist(), strict=True))


@pytest.mark.parametrize("text", ["这本书很好", "good book, good price", "ab",
                                  "这个phone很好用 battery life great!", "👍👍 好评"])
@pytest.mark.parametrize("features", [TextFeatures(), TextFeatures(char_ngrams=(1, 2),
                                                                   word_ngrams=1, buckets=1000,
                                                                   sublinear_tf=False)])
def test_indices_and_weights_follow_the_documented_hash(text, features):
    expected = reference(normalize_text(text), features)
    got = as_dict(text, features)
    assert got.keys() == expected.keys()
    for bucket, weight in expected.items():
        assert got[bucket] == pytest.approx(weight, rel=1e-6)


def test_known_buckets_of_a_fixed_string():
    settings = TextFeatures(char_ngrams=(1, 2), word_ngrams=2, buckets=2**18)
    got = set(featurize("Hi 好", settings).indices.tolist())
    expected = {zlib.crc32(b"c:" + g.encode()) % 2**18 for g in ["h", "i", " ", "好", "hi",
                                                                   "i ", " 好"]}
    expected.add(zlib.crc32(b"w:hi") % 2**18)
    assert got == expected


def test_same_indices_in_a_fresh_interpreter_with_another_hash_seed():
    text = "这个phone很好用 battery life great"
    here = featurize(text, TextFeatures())
    code = ("import json, sys; from edge_agent.text import featurize, TextFeatures; "
            "o = featurize(sys.argv[1], TextFeatures()); "
            "print(json.dumps([o.indices.tolist(), o.weights.tolist()]))")
    for seed in ("1", "12345"):
        out = subprocess.run([sys.executable, "-c", code, text], capture_output=True, text=True,
                             check=True, cwd=ROOT, env={**os.environ, "PYTHONHASHSEED": seed})
        indices, weights = json.loads(out.stdout)
        assert indices == here.indices.tolist()
        assert np.allclose(weights, here.weights)


def test_nfc_case_whitespace_and_bom_make_the_same_features():
    settings = TextFeatures()
    base = as_dict("café  good\tbook", settings)
    assert as_dict("cafe\u0301 good book", settings) == base  # decomposed é
    assert as_dict("\ufeffCAFÉ good\n\u3000 BOOK  ", settings) == base
    assert normalize_text("Straße") == "strasse"  # case folding, not lower()
    assert normalize_text("\ufeff a\u00a0 b\u3000c ") == "a b c"


def test_nfkc_setting_folds_full_width_forms():
    assert normalize_text("ＧＯＯＤ１２３") == "ｇｏｏｄ１２３"  # NFC keeps full width
    settings = TextFeatures(normalization="NFKC")
    assert as_dict("ＧＯＯＤ１２３", settings) == as_dict("good123", settings)


def test_emoji_and_four_byte_characters_are_hashed_as_utf8():
    settings = TextFeatures(char_ngrams=(1, 1), word_ngrams=0, buckets=2**20)
    got = set(featurize("👍𠮷", settings).indices.tolist())
    assert got == {zlib.crc32(b"c:" + "👍".encode()) % 2**20,
                   zlib.crc32(b"c:" + "𠮷".encode()) % 2**20}


def test_traditional_and_simplified_share_only_the_common_characters():
    settings = TextFeatures(char_ngrams=(1, 1), word_ngrams=0)
    traditional = set(featurize("這本書很好", settings).indices.tolist())
    simplified = set(featurize("这本书很好", settings).indices.tolist())
    common = {zlib.crc32(b"c:" + c.encode()) % settings.buckets for c in "本很好"}
    assert traditional & simplified == common
    assert len(traditional) == len(simplified) == 5


def test_mixed_chinese_and_english_words_and_bigrams():
    settings = TextFeatures(char_ngrams=(1, 1), word_ngrams=2)
    got = set(featurize("这个phone很好用 battery-life great", settings).indices.tolist())
    bucket = lambda b: zlib.crc32(b) % settings.buckets  # noqa: E731
    for word in (b"phone", b"battery", b"life", b"great"):
        assert bucket(b"w:" + word) in got
    assert bucket(b"b:battery life") in got and bucket(b"b:life great") in got
    # a Chinese phrase between two words: no bigram across it
    assert bucket(b"b:phone battery") not in got


@pytest.mark.parametrize("text", ["", "   ", "\n\t\u3000", "\ufeff"])
def test_empty_text_raises_a_clear_value_error(text):
    with pytest.raises(ValueError, match="empty text") as caught:
        featurize(text, TextFeatures())
    assert isinstance(caught.value, TextFeaturesError) and caught.value.kind == "empty"


def test_not_a_string_raises():
    with pytest.raises(TextFeaturesError, match="must be a string"):
        featurize(b"bytes", TextFeatures())  # type: ignore[arg-type]


def test_long_text_is_truncated_and_says_so():
    settings = TextFeatures(max_chars=100)
    out = featurize("好" * 50 + "差" * 200, settings)
    assert out.truncated and out.chars == 100
    assert as_dict("好" * 50 + "差" * 200, settings) == as_dict("好" * 50 + "差" * 50, settings)
    short = featurize("好" * 100, settings)
    assert not short.truncated and short.chars == 100


def test_a_one_megabyte_text_is_featurised_fast():
    text = "这本书很好 good book " * 60_000  # ~1 MB of characters
    began = time.perf_counter()
    out = featurize(text, TextFeatures())
    assert time.perf_counter() - began < 1.0
    assert out.truncated and out.chars == TextFeatures().max_chars


def test_settings_round_trip_through_json_and_reject_bad_values():
    settings = TextFeatures(max_chars=500, char_ngrams=(2, 4), word_ngrams=1, buckets=4096,
                            sublinear_tf=False, normalization="NFKC")
    assert TextFeatures.from_dict(json.loads(json.dumps(settings.to_dict()))) == settings
    assert TextFeatures.from_dict({}) == TextFeatures()
    for bad in ({"buckets": 1}, {"char_ngrams": [3, 2]}, {"word_ngrams": 3},
                {"normalization": "NFD"}, {"hash": "md5"}, {"max_chars": 0}, {"colour": 1},
                {"sublinear_tf": 1}):
        with pytest.raises(TextFeaturesError) as caught:
            TextFeatures.from_dict(bad)
        assert caught.value.kind == "settings"


def test_pad_batch_pads_with_index_zero_and_weight_zero():
    settings = TextFeatures(buckets=2**12)
    indices, weights, truncated = featurize_batch(["好", "这本书很好 good"], settings)
    assert indices.shape == weights.shape and indices.dtype == np.int64
    assert weights.dtype == np.float32 and truncated == [False, False]
    first = featurize("好", settings)
    assert (indices[0, len(first.indices) :] == 0).all()
    assert (weights[0, len(first.weights) :] == 0).all()
    with pytest.raises(ValueError):
        pad_batch([])


def test_scale_and_normalize_gives_unit_rows():
    out = featurize("这本书很好", TextFeatures(buckets=64))
    indices, weights = pad_batch([(out.indices, out.weights)] * 2)
    scale = np.linspace(1, 2, 64, dtype=np.float32)
    normalized = scale_and_normalize(indices, weights, scale)
    assert np.allclose(np.linalg.norm(normalized, axis=1), 1.0)
    assert np.allclose(normalized[0, : len(out.weights)] / (out.weights * scale[out.indices]),
                       1.0 / np.linalg.norm(out.weights * scale[out.indices]))


def test_classify_texts_keeps_the_order_and_names_an_empty_text():
    settings = TextFeatures(buckets=256)
    seen = []

    def run(indices: np.ndarray, weights: np.ndarray) -> np.ndarray:
        seen.append(indices.shape)
        # "probability" of class 1 = number of features: tells the texts apart
        n = (weights > 0).sum(1).astype(np.float32)
        return np.stack([1 - n / 1000, n / 1000], axis=1)

    texts = ["这本书很好看的", "好", "这本书", "good"]
    answer = classify_texts(texts, settings, run, batch_size=2)
    expected = [len(featurize(t, settings).indices) / 1000 for t in texts]
    assert np.allclose(answer.probabilities[:, 1], expected)
    assert len(seen) == 2 and not answer.truncated.any()
    with pytest.raises(TextFeaturesError) as caught:
        classify_texts(["好", "  "], settings, run)
    assert caught.value.params["index"] == 1


def test_a_lone_surrogate_is_featurised_as_the_replacement_character():
    # json.loads('"\\ud800"') gives a str UTF-8 cannot encode: the hash would raise
    # UnicodeEncodeError (a 500 from the agent) instead of featurising the rest of the text
    settings = TextFeatures(buckets=4096)
    broken = json.loads('"good\\ud800 day\\udfff"')
    assert normalize_text(broken) == "good\ufffd day\ufffd"
    assert np.array_equal(featurize(broken, settings).indices,
                          featurize("good\ufffd day\ufffd", settings).indices)


# kind="chars": the characters in order, the input of the character CNN


CHARS = TextFeatures(kind="chars", max_chars=8, buckets=2**16)


def char_bucket(character: str, buckets: int = CHARS.buckets) -> int:
    """The documented rule, independently: CRC-32 of ``s:`` + the character's UTF-8."""
    return zlib.crc32(b"s:" + character.encode("utf-8")) % buckets


def test_chars_are_the_normalised_characters_in_order_with_weight_one():
    out = featurize("  Ａb\u3000好好😀 ", TextFeatures(kind="chars", buckets=2**16,
                                                  normalization="NFKC"))
    # NFKC, case folded, whitespace run one space, stripped: "ab 好好😀", repeats kept, in order
    assert out.indices.tolist() == [char_bucket(c) for c in "ab 好好😀"]
    assert out.indices.dtype == np.int64 and out.weights.dtype == np.float32
    assert out.weights.tolist() == [1.0] * 6 and out.chars == 6 and not out.truncated
    # another prefix than the n-grams' "c:": a character is not its own 1-gram bucket
    assert char_bucket("好") != zlib.crc32(b"c:" + "好".encode()) % CHARS.buckets
    assert featurize("好", CHARS).indices.tolist() == [char_bucket("好")]


def test_chars_are_truncated_to_max_chars_and_padding_is_the_mask():
    long = featurize("这本书很好看，推荐给大家", CHARS)
    assert long.truncated and long.indices.tolist() == [char_bucket(c) for c in "这本书很好看，推"]
    indices, weights, truncated = featurize_batch(["好", "这本书很好看，推荐给大家"], CHARS)
    assert indices.shape == weights.shape == (2, 8) and truncated == [False, True]
    assert weights[0].tolist() == [1.0] + [0.0] * 7 and weights[1].tolist() == [1.0] * 8
    assert indices[0].tolist() == [char_bucket("好")] + [0] * 7


def test_chars_settings_round_trip_and_ngrams_settings_stay_as_they_were():
    assert TextFeatures.from_dict(json.loads(json.dumps(CHARS.to_dict()))) == CHARS
    assert CHARS.to_dict()["kind"] == "chars"
    # an n-gram setting's dict is today's: no "kind" key, so older packages' manifests and
    # their checks stay byte for byte
    assert list(TextFeatures().to_dict()) == ["max_chars", "char_ngrams", "word_ngrams",
                                              "buckets", "sublinear_tf", "normalization", "hash"]
    old = {"max_chars": 64, "char_ngrams": [1, 2], "word_ngrams": 1, "buckets": 1024,
           "sublinear_tf": True, "normalization": "NFC", "hash": "crc32"}
    assert TextFeatures.from_dict(old).kind == "ngrams"
    assert TextFeatures.from_dict(old).to_dict() == old
    assert TextFeatures.from_dict({**old, "kind": "ngrams"}) == TextFeatures.from_dict(old)
    with pytest.raises(TextFeaturesError) as caught:
        TextFeatures.from_dict({"kind": "words"})
    assert (caught.value.kind, caught.value.params["field"]) == ("settings", "kind")
    # the n-gram settings are ignored by this kind but still validated
    assert featurize("好书", TextFeatures(kind="chars", buckets=2**16, char_ngrams=(2, 5),
                                         word_ngrams=0)).indices.tolist() == \
        featurize("好书", TextFeatures(kind="chars", buckets=2**16)).indices.tolist()
    with pytest.raises(TextFeaturesError):
        TextFeatures(kind="chars", word_ngrams=3)


def test_classify_texts_batches_char_sequences_by_length():
    shapes = []

    def run(indices: np.ndarray, weights: np.ndarray) -> np.ndarray:
        shapes.append(indices.shape)
        n = weights.sum(1)  # the characters of each text: the mask's sum
        return np.stack([1 - n / 100, n / 100], axis=1).astype(np.float32)

    texts = ["这本书很好看", "好", "这本书很好看，推荐给大家", "ok"]
    answer = classify_texts(texts, CHARS, run, batch_size=2)
    assert answer.probabilities[:, 1].tolist() == pytest.approx([0.06, 0.01, 0.08, 0.02])
    assert shapes == [(2, 2), (2, 8)] and answer.truncated.tolist() == [False, False, True,
                                                                         False]
