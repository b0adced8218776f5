"""The agent serves a character CNN text package (family ``charcnn``: ``TextFeatures(kind=
"chars")``) through the same session, manifest and graph interface as the n-gram models."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from edge_agent.sessions import open_session
from edge_agent.text import TextFeatures, featurize, pad_batch
from edge_agent.text_session import TextClassifierSession
from tests.edge_agent.conftest import TEXT_LABELS
from tests.edge_agent.test_benchmark import package_dir
from workers.ml.text.export import export_text_onnx
from workers.ml.text.model import CharCNN

CHARS = TextFeatures(kind="chars", max_chars=16, buckets=512)
TEXTS = ["这家餐厅的菜很好吃", "好", "The battery DIED. Terrible!", "质量差，不推荐",
         "推荐" * 20, "😀"]


def test_the_agent_serves_a_character_cnn_package(tmp_path: Path,
                                                   text_package_factory: Any) -> None:
    torch.manual_seed(0)
    model = CharCNN(CHARS.buckets, len(TEXT_LABELS), dim=8, filters=6, widths=(2, 3, 4)).eval()
    export_text_onnx(model, tmp_path / "model.onnx")
    package = text_package_factory(model_bytes=(tmp_path / "model.onnx").read_bytes(),
                                   settings=CHARS.to_dict())
    assert package.manifest["text"]["kind"] == "chars"
    directory = package_dir(tmp_path, package, [])
    session = open_session(directory)
    assert type(session) is TextClassifierSession and session.settings == CHARS
    session.self_test()
    results = session.predict_texts(TEXTS, top_k=2)
    assert [r["truncated"] for r in results] == [False, False, True, False, True, False]
    with torch.no_grad():
        for text, result in zip(TEXTS, results, strict=True):
            out = featurize(text, CHARS)
            indices, weights = pad_batch([(out.indices, out.weights)])
            expected = model(torch.from_numpy(indices), torch.from_numpy(weights)).numpy()[0]
            assert [p["index"] for p in result["predictions"]] == list(
                np.argsort(-expected, kind="stable"))
            assert [p["score"] for p in result["predictions"]] == pytest.approx(
                sorted(expected, reverse=True), abs=1e-5)
    # one text alone answers as it does in the batch (padding is masked inside the graph)
    alone = [session.predict_texts([text], top_k=2)[0] for text in TEXTS]
    for a, b in zip(results, alone, strict=True):
        assert [p["score"] for p in a["predictions"]] == pytest.approx(
            [p["score"] for p in b["predictions"]], abs=1e-6)
