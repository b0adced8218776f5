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
from workers.ml.text.model import TextClassifier

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
