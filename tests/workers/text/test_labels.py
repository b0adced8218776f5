"""Class names that normalise alike are one class (edge_agent.text.normalize_label)."""

from __future__ import annotations

import pytest

from edge_agent.text import merge_labels, normalize_label


@pytest.mark.parametrize("raw", ["正面", "正面 ", " 正面", "正面\u3000", "\ufeff正面", "正面\n"])
def test_spaces_and_full_width_spaces_are_stripped(raw):
    assert normalize_label(raw) == "正面"


def test_full_width_forms_fold_and_inner_whitespace_collapses():
    assert normalize_label("ｐｏｓｉｔｉｖｅ") == "positive"
    assert normalize_label("very\u3000 good") == "very good"
    assert normalize_label("Ａ１") == "A1"
    assert normalize_label("Positive") == "Positive"  # case is kept: two classes stay two


def test_merge_labels_maps_every_name_to_its_class():
    names, mapping = merge_labels(["正面", "负面", "正面 ", "正面\u3000", "Positive", "positive"])
    assert names == ["正面", "负面", "Positive", "positive"]
    assert mapping == [0, 1, 0, 0, 2, 3]


@pytest.mark.parametrize("raw", ["", "   ", "\u3000"])
def test_an_empty_label_is_an_error(raw):
    with pytest.raises(ValueError, match="empty label"):
        normalize_label(raw)
