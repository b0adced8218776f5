"""The text model's graph, its ONNX export, the parity gate and batch inference."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
import torch
from onnx import numpy_helper

from edge_agent.text import TextFeatures, featurize, pad_batch
from workers.ml.text.data import featurize_texts
from workers.ml.text.export import (
    TextParityError,
    check_text_parity,
    export_text_onnx,
    onnx_text_session,
    parity_gate,
    predict_texts,
)
from workers.ml.text.model import CharCNN, TextClassifier

FEATURES = TextFeatures(buckets=2**12)
TEXTS = ["这本书很好看", "质量太差了，不推荐", "good book, fast delivery", "屏幕 ok 但是电池 awful",
         "一般", "😀😀 喜欢", "價格便宜", "还行吧" * 40]
ALLOWED_OPS = {"Gather", "Mul", "ReduceSum", "Sqrt", "Clip", "Div", "Add", "Gemm", "Softmax",
               "Unsqueeze", "Constant", "MatMul", "Max"}


def _model(family: str, seed: int = 0) -> TextClassifier:
    torch.manual_seed(seed)
    model = TextClassifier(family, FEATURES.buckets, 3, dim=8)
    with torch.no_grad():
        model.table.normal_(0, 1.0)
        model.set_scale(torch.rand(FEATURES.buckets) * 3 + 1)
        if model.bias is not None:
            model.bias.normal_()
    return model.eval()


def _data():
    return featurize_texts(TEXTS, [0] * len(TEXTS), FEATURES)


@pytest.mark.parametrize("family", ["linear", "fasttext"])
def test_padded_graph_equals_the_training_path(family):
    model, data = _model(family), _data()
    indices, weights = data.padded(range(len(data)))
    with torch.no_grad():
        padded = model.logits(torch.from_numpy(indices), torch.from_numpy(weights))
        flat = model.flat_logits(*data.flat(np.arange(len(data))))
    assert torch.allclose(padded, flat, atol=1e-5)


@pytest.mark.parametrize("family", ["linear", "fasttext"])
def test_export_is_plain_gather_mul_reducesum_and_passes_parity(family, tmp_path):
    model, data = _model(family), _data()
    path = tmp_path / "model.onnx"
    info = export_text_onnx(model, path)
    assert info["exporter"] == "torchscript" and info["opset"] == 18
    proto = onnx.load(str(path))
    ops = {node.op_type for node in proto.graph.node}
    assert {"Gather", "Mul", "ReduceSum", "Softmax"} <= ops <= ALLOWED_OPS
    assert all(node.domain in ("", "ai.onnx") for node in proto.graph.node)
    assert [i.name for i in proto.graph.input] == ["indices", "weights"]
    assert [o.name for o in proto.graph.output] == ["probabilities"]
    for graph_input in proto.graph.input:  # batch and length both dynamic
        dims = graph_input.type.tensor_type.shape.dim
        assert dims[0].dim_param and dims[1].dim_param
    parity = parity_gate(model, path, data)
    assert parity["passed"] and parity["n"] == len(TEXTS)
    assert parity["max_abs_diff"] <= 1e-4 and parity["top1_agree"]


def test_parity_gate_fails_when_the_onnx_model_is_tampered_with(tmp_path):
    model, data = _model("linear"), _data()
    path = tmp_path / "model.onnx"
    export_text_onnx(model, path)
    proto = onnx.load(str(path))
    (table,) = [t for t in proto.graph.initializer if t.name == "table"]
    values = numpy_helper.to_array(table).copy()
    first = featurize(TEXTS[0], FEATURES).indices
    values[first, 0] += 5.0  # the first text's n-grams now favour class 0 much more
    table.CopyFrom(numpy_helper.from_array(values, "table"))
    onnx.save(proto, str(path))
    assert not check_text_parity(model, path, data)["passed"]
    with pytest.raises(TextParityError, match="largest") as caught:
        parity_gate(model, path, data, [f"t{i}" for i in range(len(TEXTS))])
    assert caught.value.parity["max_abs_diff"] > 1e-2
    assert caught.value.parity["worst"]["sample_id"] == "t0"


def test_batch_inference_equals_one_text_at_a_time(tmp_path):
    model = _model("fasttext")
    path = tmp_path / "model.onnx"
    export_text_onnx(model, path)
    session = onnx_text_session(path)
    batch = predict_texts(session, TEXTS, FEATURES, batch_size=64)
    singles = np.concatenate([predict_texts(session, [t], FEATURES).probabilities
                              for t in TEXTS])
    assert batch.probabilities.shape == (len(TEXTS), 3)
    assert np.abs(batch.probabilities - singles).max() <= 1e-6
    assert (batch.probabilities.argmax(1) == singles.argmax(1)).all()
    # and the device's path equals the torch model on the same texts
    with torch.no_grad():
        for text, row in zip(TEXTS, batch.probabilities, strict=True):
            out = featurize(text, FEATURES)
            indices, weights = pad_batch([(out.indices, out.weights)])
            expected = model(torch.from_numpy(indices), torch.from_numpy(weights)).numpy()[0]
            assert np.abs(expected - row).max() <= 1e-5
    assert predict_texts(path, TEXTS[:2], FEATURES, batch_size=1).probabilities.shape == (2, 3)


# the character CNN (family charcnn, TextFeatures(kind="chars"))

CHARS = TextFeatures(kind="chars", max_chars=32, buckets=2**10)
CNN_OPS = {"Gather", "Mul", "Greater", "Cast", "Transpose", "Pad", "Conv", "Relu", "ReduceMax",
           "Concat", "Gemm", "Softmax", "Unsqueeze", "Constant", "ConstantOfShape", "Reshape",
           "Slice"}


def _cnn(seed: int = 0) -> CharCNN:
    torch.manual_seed(seed)
    return CharCNN(CHARS.buckets, 3, dim=8, filters=6, widths=(2, 3, 5), dropout=0.5).eval()


def _chars():
    return featurize_texts(TEXTS, [0] * len(TEXTS), CHARS)


def test_charcnn_answers_a_text_alone_as_in_any_padded_batch():
    model = _cnn()
    one = featurize("好", CHARS)  # L = 1: shorter than every kernel (2, 3, 5)
    alone = pad_batch([(one.indices, one.weights)])
    with torch.no_grad():
        single = model(torch.from_numpy(alone[0]), torch.from_numpy(alone[1]))
        assert single.shape == (1, 3) and torch.isfinite(single).all()
        assert float(single.sum()) == pytest.approx(1.0)
        data = _chars()
        indices, weights = data.padded(range(len(data)))
        batch = model(torch.from_numpy(indices), torch.from_numpy(weights))
        # the padding's indices are masked: any bucket there changes nothing
        noisy = np.where(weights > 0, indices, (indices * 7 + 13) % CHARS.buckets)
        assert torch.allclose(model(torch.from_numpy(noisy), torch.from_numpy(weights)), batch,
                              atol=1e-6)
        for row, text in enumerate(TEXTS):
            out = featurize(text, CHARS)
            i, w = pad_batch([(out.indices, out.weights)])
            assert torch.allclose(model(torch.from_numpy(i), torch.from_numpy(w))[0], batch[row],
                                  atol=1e-6)
        # the model sees the order: the same characters reversed give another answer
        text = "质量太差了，不推荐"
        forward, backward = featurize(text, CHARS), featurize(text[::-1], CHARS)
        assert not torch.allclose(
            model(torch.from_numpy(forward.indices[None]), torch.from_numpy(forward.weights[None])),
            model(torch.from_numpy(backward.indices[None]),
                  torch.from_numpy(backward.weights[None])), atol=1e-6)


def test_charcnn_exports_with_dynamic_batch_and_length_and_passes_parity(tmp_path):
    model, data = _cnn(), _chars()
    path = tmp_path / "model.onnx"
    info = export_text_onnx(model, path)
    assert info["exporter"] == "torchscript" and info["fallback_reason"] is None
    proto = onnx.load(str(path))
    ops = {node.op_type for node in proto.graph.node}
    assert {"Gather", "Conv", "ReduceMax", "Softmax"} <= ops <= CNN_OPS
    assert [i.name for i in proto.graph.input] == ["indices", "weights"]
    for graph_input in proto.graph.input:
        dims = graph_input.type.tensor_type.shape.dim
        assert dims[0].dim_param and dims[1].dim_param
    parity = parity_gate(model, path, data)
    assert parity["passed"] and parity["n"] == len(TEXTS) and parity["max_abs_diff"] <= 1e-4
    # lengths 1 .. 32 and batches of 1 and 8 through onnxruntime, as the device sends them
    session = onnx_text_session(path)
    batch = predict_texts(session, TEXTS, CHARS, batch_size=64).probabilities
    singles = np.concatenate([predict_texts(session, [t], CHARS).probabilities for t in TEXTS])
    assert np.abs(batch - singles).max() <= 1e-5
    with torch.no_grad():
        indices, weights = data.padded(range(len(data)))
        expected = model(torch.from_numpy(indices), torch.from_numpy(weights)).numpy()
    assert np.abs(expected - batch).max() <= 1e-5


def test_parity_gate_fails_when_the_charcnn_graph_is_tampered_with(tmp_path):
    model, data = _cnn(), _chars()
    path = tmp_path / "model.onnx"
    export_text_onnx(model, path)
    proto = onnx.load(str(path))
    (table,) = [t for t in proto.graph.initializer if t.name == "embedding"]
    values = numpy_helper.to_array(table).copy()
    values[featurize(TEXTS[0], CHARS).indices] *= -4.0  # the first text's characters changed
    table.CopyFrom(numpy_helper.from_array(values, "embedding"))
    onnx.save(proto, str(path))
    with pytest.raises(TextParityError, match="largest") as caught:
        parity_gate(model, path, data, [f"t{i}" for i in range(len(TEXTS))])
    assert caught.value.parity["max_abs_diff"] > 1e-3
