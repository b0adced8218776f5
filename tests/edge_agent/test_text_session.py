"""Text classification packages: the session (manifest and graph checks, predictions), the
reference predictions checked after a swap, and the on-device benchmark of a text model."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from onnx import TensorProto

from edge_agent.benchmark import BENCHMARK_TEXTS, measure
from edge_agent.reference import (
    REFERENCE_TEXTS,
    HealthCheckError,
    reference_check,
    reference_record,
)
from edge_agent.runtime import ManifestError, ModelLoadError
from edge_agent.sessions import UnsupportedTaskError, manifest_task, open_session
from edge_agent.text import TextFeatures, TextFeaturesError, featurize
from edge_agent.text_session import TextClassifierSession
from tests.edge_agent.conftest import (
    TEXT_SETTINGS,
    build_classifier,
    build_text_classifier,
    cue_bucket,
    text_table,
)
from tests.edge_agent.test_benchmark import package_dir


def session_of(tmp_path: Path, package: Any, name: str = "model") -> Any:
    path = tmp_path / f"{name}-{package.version_id}.onnx"
    path.write_bytes(package.model_bytes)
    return open_session(path, package.manifest)


def expected_probabilities(text: str, table: np.ndarray) -> np.ndarray:
    """What the graph computes for one text, here in numpy: the sum of the table rows of the
    text's buckets, each times its weight, softmaxed."""
    features = featurize(text, TextFeatures.from_dict(TEXT_SETTINGS))
    logits = (table[features.indices] * features.weights[:, None]).sum(axis=0)
    exp = np.exp(logits - logits.max())
    return exp / exp.sum()


def test_a_text_package_opens_as_a_text_session_and_classifies_texts(
        tmp_path: Path, text_package_factory: Any) -> None:
    package = text_package_factory()
    directory = package_dir(tmp_path, package, [])
    assert type(open_session(directory)) is TextClassifierSession
    session = open_session(directory / "model.onnx", package.manifest)
    assert type(session) is TextClassifierSession
    assert (session.task, session.version_id) == ("text_classification", package.version_id)
    session.self_test()
    assert manifest_task({"task": "text_classification"}) == "text_classification"

    texts = ["这家餐厅的菜很好吃", "The battery DIED. Terrible!", "质量差", "hello there",
             "推荐 " + "x" * 100]
    results = session.predict_texts(texts, top_k=2)
    assert [r["predictions"][0]["label"] for r in results[:3]] == [
        "positive", "negative", "negative"]
    # the cues' buckets alone decide: 好 (+3) -> positive, died + terrible (2 x +3) -> negative
    assert results[0]["predictions"][0]["score"] == pytest.approx(1 / (1 + np.exp(-3)))
    assert results[1]["predictions"][0]["score"] == pytest.approx(1 / (1 + np.exp(-6)))
    for text, result in zip(texts, results, strict=True):
        expected = expected_probabilities(text, text_table())
        assert [p["index"] for p in result["predictions"]] == list(np.argsort(-expected,
                                                                                kind="stable"))
        assert [p["score"] for p in result["predictions"]] == pytest.approx(
            sorted(expected, reverse=True), abs=1e-6)
        assert [p["label"] for p in result["predictions"]] == [
            ["negative", "positive"][p["index"]] for p in result["predictions"]]
    # longer than max_chars (64): its first 64 characters are classified, and it says so
    assert [r["truncated"] for r in results] == [False, False, False, False, True]
    assert session.predict_texts(["推荐 " + "x" * 59])[0]["predictions"][0]["label"] == \
        "positive"
    assert len(session.predict_texts(["great"], top_k=1)[0]["predictions"]) == 1
    with pytest.raises(ValueError, match="top_k must be >= 1"):
        session.predict_texts(["great"], top_k=0)
    with pytest.raises(TextFeaturesError, match="empty text") as empty:
        session.predict_texts(["great", " \u3000\n"])
    assert empty.value.params["index"] == 1


def test_a_batch_answers_each_text_as_it_answers_it_alone(
        tmp_path: Path, text_package_factory: Any) -> None:
    session = session_of(tmp_path, text_package_factory(
        model_bytes=build_text_classifier(text_table(seed=5))))
    texts = [REFERENCE_TEXTS[i % 4] * (1 + i % 3) for i in range(70)]  # 2 batches of 64
    together = session.predict_texts(texts, top_k=2)
    alone = [session.predict_texts([text], top_k=2)[0] for text in texts]
    for a, b in zip(together, alone, strict=True):
        assert a["truncated"] == b["truncated"]
        assert [p["index"] for p in a["predictions"]] == [p["index"] for p in b["predictions"]]
        assert [p["score"] for p in a["predictions"]] == pytest.approx(
            [p["score"] for p in b["predictions"]], abs=1e-6)


INPUTS = [{"name": "indices", "shape": ["N", "L"], "dtype": "int64"},
          {"name": "weights", "shape": ["N", "L"], "dtype": "float32"}]


@pytest.mark.parametrize(("fields", "message"), [
    ({"text": None}, r"^text: a text_classification manifest needs its featurisation settings"),
    ({"text": ["crc32"]}, r"^text: must be an object of featurisation settings, not an array$"),
    ({"text": {**TEXT_SETTINGS, "buckets": 1}},
     r"^text: invalid featurisation settings: text features: buckets must be an integer in "
     r"2 \.\. 2\*\*24, got 1$"),
    ({"text": {**TEXT_SETTINGS, "lowercase": True}},
     r"^text: invalid featurisation settings: text features: lowercase is not a setting"),
    ({"text": {**TEXT_SETTINGS, "hash": "murmur3"}}, r"^text: invalid .*hash must be crc32"),
    ({"labels": []}, r"^manifest has no labels$"),
    ({"labels": "positive"}, r"^manifest has no labels$"),
    ({"preprocessing": {"size": [96, 96]}},
     r'^preprocessing: a text model has none \(it must be \{\}\), got \{"size": \[96, 96\]\}$'),
    ({"inputs": None}, r'^inputs: a text model takes indices \["N", "L"\] int64 and weights '
                       r'\["N", "L"\] float32, got null$'),
    ({"inputs": [{"name": "input", "shape": ["N", 3, 8, 8], "dtype": "float32"}]},
     r"^inputs: a text model takes indices .*, got \[\{\"name\": \"input\""),
    ({"inputs": [INPUTS[0], {**INPUTS[1], "dtype": "float16"}]}, r"^inputs: a text model takes"),
    ({"inputs": [INPUTS[1], INPUTS[0]]}, r"^inputs: a text model takes"),
    ({"inputs": [INPUTS[0], {**INPUTS[1], "shape": ["N"]}]}, r"^inputs: a text model takes"),
    ({"outputs": [{"name": "probabilities", "shape": ["N", 3], "dtype": "float32"}]},
     r'^outputs: a text model gives probabilities \["N", 2\] float32 \(2 labels\), got'),
    ({"outputs": [{"name": "logits", "shape": ["N", 2], "dtype": "float32"}]},
     r"^outputs: a text model gives probabilities"),
])
def test_a_manifest_that_is_not_a_text_models_is_refused_naming_the_field(
        tmp_path: Path, text_package_factory: Any, fields: dict[str, Any], message: str) -> None:
    package = text_package_factory(**fields)
    with pytest.raises(ManifestError, match=message):
        session_of(tmp_path, package)


def test_a_graph_that_is_not_a_text_models_is_refused(
        tmp_path: Path, text_package_factory: Any) -> None:
    image_graph = text_package_factory(model_bytes=build_classifier())
    with pytest.raises(ModelLoadError, match=r"^a text model must have inputs \['indices', "
                                             r"'weights'\] and output 'probabilities', has "
                                             r"\['input'\] -> \['probabilities'\]$"):
        session_of(tmp_path, image_graph)
    renamed = text_package_factory(model_bytes=build_text_classifier(
        input_names=("ids", "weights")))
    with pytest.raises(ModelLoadError, match=r"has \['ids', 'weights'\]"):
        session_of(tmp_path, renamed)
    int32 = text_package_factory(model_bytes=build_text_classifier(
        index_type=TensorProto.INT32))
    with pytest.raises(ModelLoadError, match=r"^model input 'indices' is tensor\(int32\) "
                                             r"\['N', 'L'\], not \(N, L\) tensor\(int64\)$"):
        session_of(tmp_path, int32)
    three = text_package_factory(model_bytes=build_text_classifier(text_table(classes=3)))
    with pytest.raises(ModelLoadError, match=r"^model output 'probabilities' is tensor\(float\) "
                                             r"\['N', 3\], not \(N, 2\) tensor\(float\)$"):
        session_of(tmp_path, three)
    # a table with fewer rows than the manifest's buckets loads, and fails its self-test
    small = session_of(tmp_path, text_package_factory(
        model_bytes=build_text_classifier(text_table(buckets=512))))
    with pytest.raises(ModelLoadError, match="^onnxruntime failed to run the model"):
        small.self_test()
    newer = text_package_factory(min_onnxruntime="99.0")
    with pytest.raises(ModelLoadError, match=r"^model needs onnxruntime >= 99\.0, have "):
        session_of(tmp_path, newer)


def test_the_task_list_names_text_classification(tmp_path: Path) -> None:
    with pytest.raises(UnsupportedTaskError) as refused:
        manifest_task({"task": "speech_recognition"})
    assert str(refused.value) == ("unsupported task 'speech_recognition': this agent serves "
                                  "image_classification, object_detection, text_classification")


def test_a_text_models_reference_is_fixed_texts_and_deterministic(
        tmp_path: Path, text_package_factory: Any) -> None:
    table = text_table(seed=3)
    first = session_of(tmp_path, text_package_factory(model_bytes=build_text_classifier(table)))
    again = session_of(tmp_path, text_package_factory(model_bytes=build_text_classifier(table)),
                       "again")
    record = reference_record(first)
    assert record == reference_record(again) == reference_record(first)
    assert record["schema"] == "sampan.reference/1" and record["texts"] == list(REFERENCE_TEXTS)
    assert any("😡" in t for t in record["texts"]) and any("Happy" in t for t in record["texts"])
    assert len(record["cases"]) == len(REFERENCE_TEXTS) == 4
    for text, (fingerprint,) in zip(REFERENCE_TEXTS, record["cases"], strict=True):
        assert fingerprint["shape"] == [1, 2]
        assert fingerprint["head"] == pytest.approx(
            list(expected_probabilities(text, table)), abs=1e-6)
        assert fingerprint["sum"] == pytest.approx(1.0, abs=1e-6)
    json.dumps(record, allow_nan=False)  # the manifest is JSON
    assert reference_check(again, record) is True

    other = session_of(tmp_path, text_package_factory(
        model_bytes=build_text_classifier(text_table(seed=4))), "other")
    with pytest.raises(HealthCheckError, match=r"^reference input 1, output 0: value \d is "):
        reference_check(other, record)

    # the check runs the texts the record names (a record made with other texts stays valid)
    named = copy.deepcopy(record)
    named["texts"][0] = "差评"
    with pytest.raises(HealthCheckError, match=r"^reference input 1, output 0: "):
        reference_check(first, named)
    named["cases"][0] = [{"shape": [1, 2], "head": [float(v) for v in
                                                      expected_probabilities("差评", table)],
                          "sum": 1.0, "abs_sum": 1.0}]
    assert reference_check(first, named) is True
    # without "texts" the first of REFERENCE_TEXTS are used
    bare = {key: value for key, value in record.items() if key != "texts"}
    assert reference_check(first, bare) is True
    for texts in (["a"], "abc", [1, 2, 3, 4], ["", "b", "c", "d"], ["x" * 5000] * 4):
        with pytest.raises(HealthCheckError, match="malformed"):
            reference_check(first, {**record, "texts": texts})
    too_many = {**bare, "cases": record["cases"] + record["cases"][:1]}
    with pytest.raises(HealthCheckError, match="malformed"):
        reference_check(first, too_many)


def test_a_text_package_is_benchmarked_on_fixed_texts(
        tmp_path: Path, text_package_factory: Any) -> None:
    assert any(len(text) > TEXT_SETTINGS["max_chars"] for text in BENCHMARK_TEXTS)
    package = text_package_factory()
    outcome = measure(package_dir(tmp_path, package, []), warmup=2, runs=12)
    assert outcome["status"] == "succeeded", outcome
    result = outcome["result"]
    assert set(result) == {"p50_ms", "p95_ms", "p99_ms", "mean_ms", "throughput_ips", "load_s",
                           "peak_memory_bytes", "runs", "warmup", "onnxruntime", "providers"}
    assert 0 < result["p50_ms"] <= result["p95_ms"] <= result["p99_ms"]
    assert (result["runs"], result["warmup"]) == (12, 2) and result["throughput_ips"] > 0

    broken = text_package_factory(model_bytes=build_text_classifier(text_table(buckets=512)))
    outcome = measure(package_dir(tmp_path / "broken", broken, []), warmup=0, runs=len(
        BENCHMARK_TEXTS))
    assert outcome["status"] == "failed"
    assert outcome["error"].startswith("onnxruntime failed to run the model")
    newer = text_package_factory(min_onnxruntime="99.0")
    outcome = measure(package_dir(tmp_path / "newer", newer, []), warmup=0, runs=1)
    assert outcome["status"] == "incompatible"
    assert outcome["error"].startswith("model needs onnxruntime >= 99.0")
    no_text = text_package_factory(text=None)
    outcome = measure(package_dir(tmp_path / "no-text", no_text, []), warmup=0, runs=1)
    assert outcome["status"] == "failed" and outcome["error"].startswith("text: ")


def test_cue_buckets_follow_the_features_the_agent_computes() -> None:
    """The tiny model's cues land in the buckets edge_agent.text gives those n-grams."""
    settings = TextFeatures.from_dict(TEXT_SETTINGS)
    assert cue_bucket("great") in featurize("great", settings).indices
    assert cue_bucket("推荐") in featurize("推荐", settings).indices
