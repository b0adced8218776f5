"""A text package that no device could load, for a reason of the package itself, is refused at
registration naming the file or field, and nothing is written (no model, no version, no stored
file, no staging folder): text settings that are not valid (``ManifestError``), a WordPiece
vocabulary the tokenizer cannot use (``WordPieceError``), n-gram ``buckets`` larger than the
graph's table (onnxruntime ``InvalidArgument`` in the device's load test). A reason of this host
(onnxruntime lacking an execution provider or an operator) stays logging-only: the package is
registered without reference predictions (sampan.registry.services._reference)."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings as django_settings
from onnxruntime.capi import onnxruntime_pybind11_state as ort_state

from edge_agent.text import TextFeatures
from edge_agent.text_session import TextClassifierSession
from edge_agent.wordpiece import vocab_sha256
from sampan.core.errors import ValidationFailed
from sampan.registry.models import ModelVersion, RegisteredModel
from sampan.registry.selectors import model_version_file
from sampan.registry.services import model_version_register
from tests.edge_agent.conftest import (
    TEXT_LABELS,
    TEXT_SETTINGS,
    build_text_classifier,
    text_table,
)
from tests.platform.registry.test_text_package_registration import (
    VOCAB,
    stored_files,
    wordpiece_onnx,
)

pytestmark = pytest.mark.django_db


def _wordpiece(vocab_sha: str, **changes: Any) -> dict[str, Any]:
    return {**TextFeatures(kind="wordpiece", max_tokens=32, vocab_sha256=vocab_sha).to_dict(),
            **changes}


def _small_table(path: Path) -> Path:
    """An n-gram graph whose table has 64 rows, for settings of 1,024 buckets."""
    path.write_bytes(build_text_classifier(text_table(buckets=64, seed=3)))
    return path


def _staging() -> list[str]:
    folder = Path(django_settings.DATA_DIR) / "staging"
    return sorted(os.listdir(folder)) if folder.exists() else []


def _register(project: Any, onnx_path: Path, text: dict[str, Any]) -> ModelVersion:
    return model_version_register(
        project=project, model_name="broken", task_type="text_classification",
        labels=list(TEXT_LABELS), preprocessing={}, onnx_path=onnx_path,
        input_shape=["N", "L"], metrics={}, lineage={},
        onnx_info={"opset": 18, "ir_version": 10}, pretrained=True, text=text)


# (the graph, the text settings, the field named, words of the message)
BROKEN: dict[str, tuple[Callable[[Path], Path], Callable[[], dict[str, Any]], str, list[str]]] = {
    "vocabulary without [UNK] (its sha256 matches)": (
        lambda p: wordpiece_onnx(p, ["a", "b", "c"]),
        lambda: _wordpiece(vocab_sha256(["a", "b", "c"])), "model.onnx", ["[UNK]"]),
    "vocab_sha256 empty": (
        lambda p: wordpiece_onnx(p, VOCAB), lambda: _wordpiece(vocab_sha256(VOCAB),
                                                               vocab_sha256=""),
        "text.vocab_sha256", ["hex"]),
    "vocab_sha256 not hex": (
        lambda p: wordpiece_onnx(p, VOCAB), lambda: _wordpiece(vocab_sha256(VOCAB),
                                                               vocab_sha256="not-hex"),
        "text.vocab_sha256", ["not-hex"]),
    "kind unknown": (lambda p: wordpiece_onnx(p, VOCAB), lambda: {"kind": "nope"},
                     "text.kind", ["nope"]),
    "buckets larger than the graph's table": (
        _small_table, lambda: dict(TEXT_SETTINGS), "text.buckets", ["1024"]),
}


@pytest.mark.parametrize("case", list(BROKEN))
def test_a_text_package_no_device_could_load_is_refused_and_leaves_nothing(
        project_with_roles: dict[str, Any], tmp_path: Path, settings: Any, case: str) -> None:
    project = project_with_roles["project"]
    media_root = Path(settings.MEDIA_ROOT)
    files_before, staging_before = stored_files(media_root), _staging()
    make, text, field, words = BROKEN[case]

    with pytest.raises(ValidationFailed) as refused:
        _register(project, make(tmp_path / "model.onnx"), text())

    assert refused.value.field == field, refused.value.message
    assert refused.value.message.startswith(f"{field}: "), refused.value.message
    for word in words:
        assert word in refused.value.message, refused.value.message
    assert not ModelVersion.objects.filter(project=project).exists()
    assert not RegisteredModel.objects.filter(project=project).exists()
    assert stored_files(media_root) == files_before
    assert _staging() == staging_before


def test_the_same_graphs_with_matching_settings_register_and_load_as_a_device_would(
        project_with_roles: dict[str, Any], tmp_path: Path) -> None:
    project = project_with_roles["project"]
    wordpiece = _register(project, wordpiece_onnx(tmp_path / "wp.onnx", VOCAB),
                          _wordpiece(vocab_sha256(VOCAB)))
    small = _register(project, _small_table(tmp_path / "small.onnx"),
                      {**TEXT_SETTINGS, "buckets": 64})
    for version in (wordpiece, small):
        assert version.manifest["reference"]["cases"]
        session = TextClassifierSession(model_version_file(version, "model.onnx"),
                                        version.manifest)
        session.self_test()
        assert session.predict_texts(["the film was good"])[0]["predictions"]


@pytest.mark.parametrize("error", ["EPFail", "NotImplemented", "Fail"])
def test_a_reason_of_this_host_is_only_logged_and_the_package_registers(
        project_with_roles: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture, error: str) -> None:
    """onnxruntime here lacks an execution provider or an operator: another host may load the
    package, so it is registered, load-tested on the device only (no reference)."""
    import edge_agent.runtime

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise getattr(ort_state, error)(f"{error} on this host")

    monkeypatch.setattr(edge_agent.runtime.ort, "InferenceSession", refuse)
    onnx_path = tmp_path / "model.onnx"
    onnx_path.write_bytes(build_text_classifier())
    with caplog.at_level(logging.WARNING, logger="sampan.registry.services"):
        version = _register(project_with_roles["project"], onnx_path, dict(TEXT_SETTINGS))
    assert version.version == 1
    assert "reference" not in version.manifest
    assert f"{error} on this host" in caplog.text
