"""How unsure a model is about one image: the number the labeling queue is sorted by, most
uncertain first (uncertainty sampling, the simplest active-learning query strategy). Plain
Python, no Django.

Image classification, least confidence (B. Settles, "Active Learning Literature Survey",
Computer Sciences Technical Report 1648, University of Wisconsin-Madison, 2009, section 3.1;
from Culotta & McCallum, AAAI 2005)::

    u(x) = 1 - max_c P(c | x)

0 when the model puts all its probability on one class, 1 - 1/C at most (a uniform answer over
C classes). Least confidence was chosen over the margin (1 - (P1 - P2)) and entropy because it
reads as the model's own "I am 87 % sure" that the console shows beside a suggestion.

Object detection: every detection is a yes/no decision ("an object of class c here") with
probability s, its score. The least confidence of a yes/no decision is min(s, 1 - s); scaled to
0..1 it is ``2 * min(s, 1 - s) = 1 - |2s - 1|``: 1 for a score of 0.5, 0 for 0 or 1. An image
is as uncertain as its most uncertain detection (the "max" aggregation of per-detection scores
of C.-A. Brust, C. Käding, J. Denzler, "Active Learning for Deep Object Detection", VISAPP
2019)::

    u(x) = max_i (1 - |2 s_i - 1|)   over the detections with s_i > DETECTION_SCORE_FLOOR

and 0 when there is none (the model is sure the image holds nothing it knows). Detections are
taken down to the floor, below the threshold that makes suggestions, so a box at 0.45 that no
one is shown still makes its image one to look at.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

#: detections scoring at or below this are not counted (they are 0.1 or less uncertain)
DETECTION_SCORE_FLOOR = 0.05


def classification_uncertainty(probabilities: Sequence[float]) -> float:
    """Least confidence ``1 - max(probabilities)`` of one image's class probabilities (a
    softmax output, summing to 1). Raises ValueError for an empty sequence."""
    if not probabilities:
        raise ValueError("no class probabilities")
    return _unit(1.0 - max(float(p) for p in probabilities))


def detection_uncertainty(scores: Iterable[float]) -> float:
    """``max(1 - |2s - 1|)`` over the detection ``scores`` (0..1) above
    ``DETECTION_SCORE_FLOOR``; 0 for none."""
    return _unit(max((1.0 - abs(2.0 * float(s) - 1.0) for s in scores
                      if float(s) > DETECTION_SCORE_FLOOR), default=0.0))


def _unit(value: float) -> float:
    """``value`` kept in [0, 1] (float error at the ends) and rounded to 1e-6."""
    return round(min(max(value, 0.0), 1.0), 6)
