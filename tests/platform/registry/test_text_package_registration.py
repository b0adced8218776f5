"""A WordPiece text package that no device could load is refused at registration: its
``model.onnx`` without the vocabulary (``sampan.wordpiece_vocab`` metadata) or with another
vocabulary than ``text.vocab_sha256`` names. Nothing is left behind: no model, no version, no
stored file (sampan.registry.services.model_version_register)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import onnx
import pytest

from edge_agent.text import TextFeatures
from edge_agent.text_session import TextClassifierSession
from edge_agent.wordpiece import VOCAB_METADATA_KEY, vocab_sha256
from sampan.core.errors import ValidationFailed
from sampan.registry.models import ModelVersion, RegisteredModel
from sampan.registry.selectors import model_version_file
from sampan.registry.services import model_version_register
from tests.edge_agent.conftest import build_text_classifier, text_table

pytestmark = pytest.mark.django_db

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "film", "was", "good", "bad",
         "great", "awful", "##s", "."]
OTHER_VOCAB = [*VOCAB[:-1], "!"]


def wordpiece_onnx(path: Path, vocab: list[str] | None) -> Path:
    """A real text graph over WordPiece ids (a row of weights per token of ``VOCAB``), with
    ``vocab`` in its ONNX metadata as the exporter writes it, or none."""
    model = onnx.load_from_string(build_text_classifier(text_table(buckets=len(VOCAB), seed=3)))
    if vocab is not None:
        entry = model.metadata_props.add()
        entry.key, entry.value = VOCAB_METADATA_KEY, "\n".join(vocab)
    onnx.save(model, str(path))
    return path


def register(project: Any, onnx_path: Path, vocab_sha: str) -> ModelVersion:
    settings = TextFeatures(kind="wordpiece", max_tokens=32, vocab_sha256=vocab_sha).to_dict()
    return model_version_register(
        project=project, model_name="reviews-encoder", task_type="text_classification",
        labels=["negative", "positive"], preprocessing={}, onnx_path=onnx_path,
        input_shape=["N", "L"], metrics={}, lineage={},
        onnx_info={"opset": 18, "ir_version": 10}, pretrained=True, text=settings)


def stored_files(media_root: Path) -> list[Path]:
    return sorted(p for p in (media_root / "models").rglob("*") if p.is_file()) \
        if (media_root / "models").exists() else []


@pytest.mark.parametrize(("vocab", "field", "words"), [
    (None, "model.onnx", [VOCAB_METADATA_KEY, "no vocabulary"]),
    (OTHER_VOCAB, "text.vocab_sha256", [vocab_sha256(OTHER_VOCAB)[:12],
                                        vocab_sha256(VOCAB)[:12]]),
], ids=["vocabulary missing", "another vocabulary"])
def test_a_package_whose_vocabulary_cannot_load_is_refused_and_leaves_nothing(
        project_with_roles: dict[str, Any], tmp_path: Path, settings: Any,
        vocab: list[str] | None, field: str, words: list[str]) -> None:
    project = project_with_roles["project"]
    media_root = Path(settings.MEDIA_ROOT)
    before = stored_files(media_root)
    broken = wordpiece_onnx(tmp_path / "broken.onnx", vocab)

    with pytest.raises(ValidationFailed) as refused:
        register(project, broken, vocab_sha256(VOCAB))
    assert refused.value.field == field
    for word in words:
        assert word in refused.value.message, refused.value.message
    assert not ModelVersion.objects.filter(project=project).exists()
    assert not RegisteredModel.objects.filter(project=project).exists()
    assert stored_files(media_root) == before

    # the same model with its own vocabulary registers as version 1 and loads as a device would
    good = register(project, wordpiece_onnx(tmp_path / "good.onnx", VOCAB), vocab_sha256(VOCAB))
    assert good.version == 1
    assert good.manifest["reference"]["cases"], "reference predictions are recorded"
    session = TextClassifierSession(model_version_file(good, "model.onnx"), good.manifest)
    session.self_test()
    assert session.settings.vocabulary == tuple(VOCAB)
