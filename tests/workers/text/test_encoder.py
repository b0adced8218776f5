"""The sentence encoder candidate (workers.ml.text.encoder) on a tiny BERT with a tiny
vocabulary (the real all-MiniLM-L6-v2 is exercised by the training and tokenizer tests): the
fits, the ONNX graph with its vocabulary, and the device's session serving it."""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import onnx
import pytest
import torch

from edge_agent.runtime import ModelLoadError
from edge_agent.sessions import open_session
from edge_agent.text import TextFeatures, TextFeaturesError, featurize
from edge_agent.text_session import TextClassifierSession
from edge_agent.wordpiece import VOCAB_METADATA_KEY, vocab_sha256
from workers.ml.text import encoder
from workers.ml.text.encoder import (
    ENCODER_DIR_ENV,
    EncoderFiles,
    check_sentence_parity,
    encoder_files,
    export_sentence_onnx,
    latin_share,
    train_encoder,
)

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", ".", "!", ",", "the", "movie", "was",
         "film", "plot", "a", "good", "great", "fine", "bad", "awful", "dull", "really", "very",
         "and", "acting", "##s", "story", "it", "is", "not"]
POSITIVE, NEGATIVE = ["good", "great", "fine"], ["bad", "awful", "dull"]
FILLER = ["the", "movie", "was", "film", "plot", "a", "really", "very", "and", "acting", "story",
          "it", "is", ".", ","]


@pytest.fixture(scope="module")
def tiny_encoder(tmp_path_factory: pytest.TempPathFactory) -> EncoderFiles:
    from transformers import BertConfig, BertModel

    directory = tmp_path_factory.mktemp("tiny-bert")
    torch.manual_seed(0)
    config = BertConfig(vocab_size=len(VOCAB), hidden_size=32, num_hidden_layers=2,
                        num_attention_heads=2, intermediate_size=64,
                        max_position_embeddings=64)
    BertModel(config).save_pretrained(str(directory))
    (directory / "vocab.txt").write_text("\n".join(VOCAB) + "\n", encoding="utf-8")
    return EncoderFiles(directory)


def _corpus(n: int, seed: int) -> tuple[list[str], np.ndarray]:
    rng = np.random.default_rng(seed)
    texts, labels = [], []
    for i in range(n):
        label = i % 2
        words = list(rng.choice(FILLER, size=rng.integers(3, 9)))
        words.insert(int(rng.integers(0, len(words) + 1)),
                     str(rng.choice(NEGATIVE if label else POSITIVE)))
        texts.append(" ".join(words))
        labels.append(label)
    return texts, np.asarray(labels, dtype=np.int64)


def _run(files: EncoderFiles, tmp_path: Path, seconds: float, **kwargs):  # type: ignore[no-untyped-def]
    train_texts, train_labels = _corpus(96, 0)
    val_texts, val_labels = _corpus(40, 1)
    return train_encoder(train_texts, train_labels, val_texts, val_labels, 2, np.ones(2),
                         tmp_path, time.monotonic() + seconds, 1, 0, lambda: None, files=files,
                         **kwargs), val_texts, val_labels


def test_the_encoder_learns_the_cue_words_and_serves_them_from_its_package(
        tiny_encoder: EncoderFiles, tmp_path: Path) -> None:
    run, val_texts, val_labels = _run(tiny_encoder, tmp_path, 60)
    assert run.skipped is None and run.model is not None
    assert run.fits["frozen"]["c"] in (0.25, 1.0, 4.0, 16.0, 64.0)
    assert run.fit in ("frozen", "finetune") and run.plan["finetune_epochs"] >= 1
    assert run.fits["frozen"]["train_texts"] == run.plan["train_rows"] == 96
    assert run.figures["val_accuracy"] >= 0.9, run.fits
    onnx_path = tmp_path / "model.onnx"
    info = export_sentence_onnx(run.model, onnx_path, VOCAB)
    assert info["size_bytes"] == onnx_path.stat().st_size
    settings = TextFeatures(kind="wordpiece", max_tokens=32, vocab_sha256=vocab_sha256(VOCAB))
    tokenised = [featurize(t, settings.with_vocabulary(VOCAB)).indices for t in val_texts]
    parity = check_sentence_parity(run.model, onnx_path, tokenised, 1)
    assert parity["passed"] and parity["max_abs_diff"] <= 1e-4
    manifest = {"task": "text_classification", "labels": ["positive", "negative"],
                "preprocessing": {}, "text": settings.to_dict(),
                "inputs": [{"name": "indices", "shape": ["N", "L"], "dtype": "int64"},
                           {"name": "weights", "shape": ["N", "L"], "dtype": "float32"}],
                "model": {"version_id": "v1"}}
    assert "vocabulary" not in json.dumps(manifest) and "[CLS]" not in json.dumps(manifest)
    session = open_session(onnx_path, manifest)
    assert isinstance(session, TextClassifierSession)
    session.self_test()
    results = session.predict_texts(val_texts)
    predicted = [r["predictions"][0]["index"] for r in results]
    assert np.mean(np.asarray(predicted) == val_labels) >= 0.9
    with torch.no_grad():
        ids = featurize(val_texts[0], session.settings).indices[None, :]
        expected = run.model(torch.from_numpy(ids), torch.ones(ids.shape)).numpy()[0]
    assert results[0]["predictions"][0]["score"] == pytest.approx(float(expected.max()),
                                                                  abs=1e-5)
    answer = session.answer(json.dumps({"texts": ["a good film", "awful"]}).encode())
    assert [r["predictions"][0]["label"] for r in answer["results"]] == ["positive", "negative"]


def test_a_package_whose_vocabulary_is_missing_or_another_is_refused(
        tiny_encoder: EncoderFiles, tmp_path: Path) -> None:
    run, _, _ = _run(tiny_encoder, tmp_path, 20, replay={"finetune_epochs": 0})
    assert run.model is not None and run.fit == "frozen" and "finetune" in run.fits
    onnx_path = tmp_path / "model.onnx"
    export_sentence_onnx(run.model, onnx_path, VOCAB)
    manifest = {"task": "text_classification", "labels": ["positive", "negative"],
                "text": {"kind": "wordpiece", "max_tokens": 32,
                         "vocab_sha256": vocab_sha256([*VOCAB[:-1], "other"])},
                "inputs": [{"name": "indices", "shape": ["N", "L"], "dtype": "int64"},
                           {"name": "weights", "shape": ["N", "L"], "dtype": "float32"}]}
    with pytest.raises(ModelLoadError, match="not the one its manifest names"):
        TextClassifierSession(onnx_path, manifest)
    graph = onnx.load(str(onnx_path))
    del graph.metadata_props[:]
    bare = tmp_path / "bare.onnx"
    onnx.save(graph, str(bare))
    manifest["text"]["vocab_sha256"] = vocab_sha256(VOCAB)
    with pytest.raises(ModelLoadError, match=VOCAB_METADATA_KEY):
        TextClassifierSession(bare, manifest)
    TextClassifierSession(onnx_path, manifest).self_test()


def test_wordpiece_settings_are_checked_and_never_carry_the_vocabulary() -> None:
    settings = TextFeatures(kind="wordpiece", vocab_sha256=vocab_sha256(VOCAB))
    assert TextFeatures.from_dict(settings.to_dict()) == settings
    assert settings.to_dict()["max_tokens"] == 128
    with pytest.raises(TextFeaturesError, match="vocabulary"):
        featurize("good", settings)  # no vocabulary given
    with pytest.raises(TextFeaturesError, match="sha256"):
        settings.with_vocabulary(VOCAB[:-1])
    with pytest.raises(TextFeaturesError, match="vocab_sha256"):
        TextFeatures(kind="wordpiece", vocab_sha256="abc")
    with pytest.raises(TextFeaturesError, match="max_tokens"):
        TextFeatures(kind="wordpiece", vocab_sha256=vocab_sha256(VOCAB), max_tokens=1000)
    loaded = settings.with_vocabulary(VOCAB)
    assert loaded == settings and "vocabulary" not in loaded.to_dict()
    assert list(featurize("A GOOD film!", loaded).indices) == [2, 13, 14, 11, 6, 3]
    with pytest.raises(TextFeaturesError) as caught:
        featurize(" \t\u200b ", loaded)
    assert caught.value.kind == "empty"
    # an n-gram model's settings are unchanged by the new kind
    assert "max_tokens" not in TextFeatures().to_dict()


def test_the_candidate_is_skipped_with_the_reason_when_it_cannot_run(
        tiny_encoder: EncoderFiles, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENCODER_DIR_ENV, str(tmp_path / "nowhere"))
    assert encoder_files() is None
    run, _, _ = _run(None, tmp_path, 30)  # type: ignore[arg-type]
    assert run.model is None and "not installed" in (run.skipped or "")
    run, _, _ = _run(tiny_encoder, tmp_path, 5)  # less than loading and exporting take
    assert run.model is None and (run.skipped or "").startswith("budget: 5 s are left")
    # set-up free, but the texts do not fit the time: said with the counts
    monkeypatch.setattr(encoder, "_SETUP_S", 0.0)
    monkeypatch.setattr(encoder, "_TAIL_S", 0.0)
    run, _, _ = _run(tiny_encoder, tmp_path, 0.05)
    assert run.model is None and (run.skipped or "").startswith(
        "budget: encoding 40 validation and at least 96 training texts")
    assert latin_share(["good film", "这部电影很好", "très bien", "好好好 ok"]) == 0.5
    assert latin_share([]) == 0.0
