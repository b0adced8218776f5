"""Compression of text classifiers (workers.ml.compression.text): the fp32 reference and INT8
dynamic quantization of small real models trained by workers.ml.text (a fastText-style n-gram
model, a character CNN, a tiny WordPiece sentence encoder), each measured on held-out texts
through the device's own session; the encoder's vocabulary survives quantization."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest

from edge_agent.text import TextFeatures, classify_texts, featurize
from edge_agent.text_session import TextClassifierSession
from edge_agent.wordpiece import VOCAB_METADATA_KEY, vocab_sha256
from workers.ml.compression import (CompressionCancelled, TextCompressRequest,
                                    compress_text_classifier)
from workers.ml.compression.text import text_manifest
from workers.ml.text.encoder import export_sentence_onnx, train_encoder
from workers.ml.text.solvers import FamilyConfig
from workers.ml.text.train import TextTrainRequest, train_text_classifier

from .text.test_encoder import VOCAB, _corpus, tiny_encoder  # noqa: F401 - a fixture
from .text.test_training import LABELS, toy

# small tables and layers: the same graphs as the shipped settings, seconds to train
CONFIGS = {
    "fasttext": FamilyConfig("fasttext", TextFeatures(buckets=2**16), dim=32, epochs=3),
    "charcnn": FamilyConfig("charcnn", TextFeatures(kind="chars", max_chars=64, buckets=2**12),
                            dim=16, filters=16, widths=(2, 3), lr=0.01, epochs=2, min_steps=100),
}


def _rows(samples: list[Any]) -> list[tuple[str, int, str]]:
    return [(s.text, s.label, s.sample_id) for s in samples]


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    models = {}
    for family, config in CONFIGS.items():
        result = train_text_classifier(TextTrainRequest(
            train=toy(320, 0, "tr"), val=toy(80, 1, "va"), test=toy(80, 2, "te"),
            labels=LABELS, out_dir=tmp_path_factory.mktemp(family), budget_s=20.0, seed=1,
            candidates=(family,), configs={family: config}))
        models[family] = result
    return models


def _request(result: Any, out_dir: Path, **kwargs: Any) -> TextCompressRequest:
    return TextCompressRequest(
        onnx_path=result.onnx_path, text=result.features, labels=result.labels,
        sample_labels=LABELS, train=_rows(toy(320, 0, "tr")), val=_rows(toy(80, 1, "va")),
        test=_rows(toy(80, 2, "te")), out_dir=out_dir, budget_s=120.0, **kwargs)


def test_int8_of_an_ngram_model_is_smaller_loads_in_the_agent_and_is_measured(
        trained: dict[str, Any], tmp_path: Path) -> None:
    result = trained["fasttext"]
    seen: list[str] = []
    compressed = compress_text_classifier(
        _request(result, tmp_path, methods=("int8", "pruning", "resolution")),
        on_candidate=lambda c: seen.append(c.key))
    assert seen == [c.key for c in compressed.candidates] == ["fp32", "int8", "int8-matmul"]
    by_key = {c.key: c for c in compressed.candidates}
    assert all(c.status == "ready" for c in compressed.candidates), compressed.candidates
    fp32, int8, matmul = by_key["fp32"], by_key["int8"], by_key["int8-matmul"]
    # the n-gram table is most of the file: int8 ~4x smaller; MatMul alone leaves it float
    assert int8.size_bytes * 3 < fp32.size_bytes
    assert matmul.size_bytes > 0.9 * fp32.size_bytes
    assert int8.params["quantization"] == "dynamic" and int8.params["per_channel"] is True
    operators = set(int8.onnx["operators"])
    assert {"ai.onnx:DequantizeLinear", "ai.onnx:MatMulInteger"} <= operators, operators
    assert "ai.onnx:DequantizeLinear" not in set(matmul.onnx["operators"])
    for candidate in compressed.candidates:
        # accuracy measured on the 80 test texts (and validation), the float model's figures
        # within a point of its training's (the same featuriser, the same graph)
        assert candidate.evaluated_on == "test" and candidate.n_evaluated == 80
        assert candidate.accuracy is not None and candidate.val_accuracy is not None
        assert candidate.size_bytes == candidate.onnx_path.stat().st_size
    assert fp32.accuracy == pytest.approx(result.metrics["test_accuracy"], abs=0.0125)
    assert fp32.accuracy_drop_pt == 0.0 and fp32.within_budget
    assert int8.accuracy_drop_pt == pytest.approx(100 * (fp32.accuracy - int8.accuracy),
                                             abs=1e-3)
    assert int8.within_budget == (int8.accuracy_drop_pt <= 1.0
                                  and (int8.val_accuracy_drop_pt or 0.0) <= 1.0)
    # the device's session loads the INT8 package and answers as the float model does
    manifest = {**text_manifest(result.labels, result.features), "model": {"version_id": "x"}}
    session = TextClassifierSession(int8.onnx_path, manifest)
    session.self_test()
    reference = TextClassifierSession(fp32.onnx_path, manifest)
    texts = [s.text for s in toy(80, 2, "te")]
    quantized = classify_texts(texts, session.settings, session.predict_batch).probabilities
    floats = classify_texts(texts, reference.settings, reference.predict_batch).probabilities
    assert np.mean(quantized.argmax(1) == floats.argmax(1)) >= 0.95
    assert np.abs(quantized - floats).max() < 0.1
    # methods that make image students are ignored for text, and the job says so
    assert any(w.startswith("resolution, pruning: not applicable to a text model")
               for w in compressed.warnings), compressed.warnings
    assert any("the test split has 80 texts" in w for w in compressed.warnings)


def test_a_character_cnns_convolutions_stay_float(trained: dict[str, Any],
                                                   tmp_path: Path) -> None:
    compressed = compress_text_classifier(_request(trained["charcnn"], tmp_path))
    by_key = {c.key: c for c in compressed.candidates}
    assert set(by_key) == {"fp32", "int8", "int8-matmul"}
    int8 = by_key["int8"]
    assert int8.status == "ready", int8.reason
    operators = set(int8.onnx["operators"])
    # ConvInteger is 7-14x slower than a float Conv here: dynamic INT8 leaves Conv alone
    assert "ai.onnx:Conv" in operators and "ai.onnx:ConvInteger" not in operators, operators
    assert int8.size_bytes < by_key["fp32"].size_bytes / 2  # the embedding table is int8
    assert int8.n_evaluated == 80


def test_the_encoders_vocabulary_survives_int8_and_the_agent_loads_it(
        tiny_encoder: Any, tmp_path: Path) -> None:  # noqa: F811 - the fixture
    train_texts, train_labels = _corpus(96, 0)
    val_texts, val_labels = _corpus(40, 1)
    test_texts, test_labels = _corpus(40, 2)
    run = train_encoder(train_texts, train_labels, val_texts, val_labels, 2, np.ones(2),
                        tmp_path, time.monotonic() + 30, 1, 0, lambda: None,
                        files=tiny_encoder, replay={"finetune_epochs": 0})
    assert run.model is not None
    source = tmp_path / "model.onnx"
    export_sentence_onnx(run.model, source, VOCAB)
    settings = TextFeatures(kind="wordpiece", max_tokens=32, vocab_sha256=vocab_sha256(VOCAB))
    labels = ["positive", "negative"]
    request = TextCompressRequest(
        onnx_path=source, text=settings.to_dict(), labels=labels,
        val=[(t, int(val_labels[i]), f"v{i}") for i, t in enumerate(val_texts)],
        test=[(t, int(test_labels[i]), f"t{i}") for i, t in enumerate(test_texts)],
        out_dir=tmp_path / "out", budget_s=120.0)
    compressed = compress_text_classifier(request)
    by_key = {c.key: c for c in compressed.candidates}
    assert list(by_key) == ["fp32", "int8", "int8-matmul"]
    vocabulary = "\n".join(VOCAB)
    for candidate in compressed.candidates:
        assert candidate.status == "ready", candidate.reason
        metadata = {p.key: p.value for p in onnx.load(str(candidate.onnx_path)).metadata_props}
        assert metadata[VOCAB_METADATA_KEY] == vocabulary, candidate.key
        session = TextClassifierSession(candidate.onnx_path,
                                        text_manifest(labels, settings.to_dict()))
        session.self_test()
        assert list(session.settings.vocabulary or ()) == VOCAB
        assert candidate.n_evaluated == 40 and candidate.accuracy is not None
    assert by_key["int8"].size_bytes < by_key["fp32"].size_bytes
    assert by_key["fp32"].accuracy >= 0.8  # the cue words are learnt (chance: 0.5)
    # the ids the device feeds are the vocabulary's: "good" is one token
    ids = featurize("good", session.settings).indices
    assert VOCAB[int(ids[1])] == "good"


def test_a_graph_the_agent_cannot_load_is_refused_and_cancel_stops(
        trained: dict[str, Any], tmp_path: Path) -> None:
    result = trained["fasttext"]
    wrong = {**result.features, "kind": "wordpiece", "vocab_sha256": "0" * 64}
    with pytest.raises(ValueError, match="cannot load the model"):
        compress_text_classifier(TextCompressRequest(
            onnx_path=result.onnx_path, text=wrong, labels=result.labels,
            val=_rows(toy(8, 1, "va")), out_dir=tmp_path / "a"))
    calls = {"n": 0}

    def stop() -> bool:
        calls["n"] += 1
        return calls["n"] > 1  # after the reference
    with pytest.raises(CompressionCancelled):
        compress_text_classifier(_request(result, tmp_path / "b"), should_stop=stop)
