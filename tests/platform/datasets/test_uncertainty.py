"""The uncertainty rules of the labeling queue, on known numbers (sampan.datasets.uncertainty)."""

from __future__ import annotations

import pytest

from sampan.datasets.uncertainty import classification_uncertainty, detection_uncertainty


@pytest.mark.parametrize(("probabilities", "expected"), [
    ([0.7, 0.2, 0.1], 0.3),  # least confidence: 1 - max
    ([1 / 3, 1 / 3, 1 / 3], 2 / 3),  # uniform over 3 classes: the most it can be
    ([0.5, 0.5], 0.5),
    ([1.0, 0.0], 0.0),
    ([0.45, 0.44, 0.11], 0.55),  # a close second does not count (that would be the margin)
])
def test_classification_is_least_confidence(probabilities: list[float], expected: float) -> None:
    assert classification_uncertainty(probabilities) == pytest.approx(expected, abs=1e-6)


def test_classification_needs_probabilities() -> None:
    with pytest.raises(ValueError):
        classification_uncertainty([])


@pytest.mark.parametrize(("scores", "expected"), [
    ([0.5], 1.0),  # a coin toss: as uncertain as it gets
    ([0.9, 0.1], 0.2),
    ([0.3, 0.95], 0.6),  # the most uncertain detection decides: 1 - |0.6 - 1|
    ([0.99, 0.98], 0.04),
    ([], 0.0),  # nothing found: sure
    ([0.04, 0.05], 0.0),  # at or below the floor (0.05): not counted
])
def test_detection_is_its_most_uncertain_detection(scores: list[float], expected: float) -> None:
    assert detection_uncertainty(scores) == pytest.approx(expected, abs=1e-6)
