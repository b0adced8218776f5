"""Reference predictions shipped in a model package: the device's health check after a swap.

At registration the platform runs the model on :data:`CASES` reference inputs and stores a
fingerprint of every output in the signed manifest (``"reference"``); after swapping a new
version in, the agent runs the same inputs through the session now serving and compares
(:func:`reference_check`). A model that loads but computes something else on this device
(a runtime or CPU difference, a corrupted graph that still parses) fails the check and the agent
goes back to the version it served before (Mender's commit-or-roll-back after an update).

The inputs are drawn, not shipped: ``numpy.random.RandomState(seed + i).standard_normal`` in
the model's normalised input space, (1, 3, H, W) float32. The legacy ``RandomState`` stream is
frozen by NumPy's compatibility policy (NEP 19), so every NumPy draws the same numbers.

A text model (``task`` ``text_classification``) is checked on texts instead: the record holds
them (``"texts"``: :data:`REFERENCE_TEXTS` when it is made, Chinese, English, mixed and emoji),
each classified alone (a batch of one, featurised by :mod:`edge_agent.text`), and the check runs
the texts the record names, so a later change of :data:`REFERENCE_TEXTS` cannot fail a package
recorded before it. A text record without ``"texts"`` uses the first of :data:`REFERENCE_TEXTS`.

Fingerprint of one output array: ``{"shape", "head", "sum", "abs_sum"}``: its first
:data:`HEAD` values (flattened, C order), the float64 sum and sum of absolute values. Two
fingerprints match when the shapes are equal, every head value is within ``RTOL`` of the
expected one plus ``ATOL`` times the largest expected magnitude (at least 1), and both sums are
within ``RTOL`` of ``abs_sum`` (plus 1e-3): onnxruntime builds and CPUs differ by ~1e-6
relative in float32; a different model or a broken kernel differs by far more.
"""

from __future__ import annotations

from typing import Any

import math

import numpy as np

__all__ = ["CASES", "REFERENCE_TEXTS", "SCHEMA", "HealthCheckError", "reference_check",
           "reference_inputs", "reference_record"]

SCHEMA = "sampan.reference/1"
CASES = 2
#: a package's reference may hold at most this many inputs (each is a full model input)
MAX_CASES = 8
SEED = 20261202
HEAD = 64
RTOL = 1e-3
ATOL = 1e-4
#: The reference inputs of a text model (module docstring): Chinese, English, Chinese and
#: English mixed with emoji, a greeting of emoji, digits, English and Chinese.
REFERENCE_TEXTS = (
    "这家餐厅的菜很好吃，服务也很周到，下次还会再来！",
    "The battery died after two days and support never answered my emails.",
    "物流太慢了😡 but the quality is great 👍👍 五星好评",
    "🎉🎉 Happy New Year 2026! 新年快乐，万事如意 🧧",
)
#: Longest reference text a record may name, characters (a check runs each one).
MAX_TEXT_CHARS = 4096


class HealthCheckError(Exception):
    """The session's outputs on the reference inputs differ from the package's."""


def reference_inputs(size: tuple[int, int], seed: int = SEED, count: int = CASES
                     ) -> list[np.ndarray]:
    """``count`` inputs of (1, 3, height, width) float32 drawn from N(0, 1) (module docstring)."""
    height, width = size
    return [np.random.RandomState(seed + i).standard_normal((1, 3, height, width))
            .astype(np.float32) for i in range(count)]


def _is_text(session: Any) -> bool:
    return getattr(session, "task", None) == "text_classification"


def _outputs(session: Any, x: np.ndarray | str) -> list[np.ndarray]:
    """The raw outputs of a ClassifierSession (probabilities) or DetectorSession (boxes,
    scores) for one input batch, or of a TextClassifierSession (probabilities) for one text."""
    if isinstance(x, str):
        from edge_agent.text import classify_texts

        return [np.asarray(classify_texts([x], session.settings,
                                          session.predict_batch).probabilities)]
    if hasattr(session, "run_batch"):
        return [np.asarray(a) for a in session.run_batch(x)]
    return [np.asarray(session.predict_batch(x))]


def _fingerprint(array: np.ndarray) -> dict[str, Any]:
    flat = np.asarray(array, dtype=np.float64).ravel()
    return {"shape": list(array.shape), "head": [float(v) for v in flat[:HEAD]],
            "sum": float(flat.sum()), "abs_sum": float(np.abs(flat).sum())}


def reference_record(session: Any, seed: int = SEED) -> dict[str, Any]:
    """The manifest's ``reference`` object for a loaded session: ``{"schema", "seed",
    "cases": [[fingerprint of each output] for each input]}``.

    A text model's record also holds ``"texts"``: :data:`REFERENCE_TEXTS`, its inputs
    (``seed`` is kept for the schema's sake; nothing is drawn).

    Raises ModelLoadError (edge_agent.runtime) when the model fails to run."""
    if _is_text(session):
        return {"schema": SCHEMA, "seed": seed, "texts": list(REFERENCE_TEXTS),
                "cases": [[_fingerprint(a) for a in _outputs(session, text)]
                          for text in REFERENCE_TEXTS]}
    inputs = reference_inputs(tuple(session.preprocessing.size), seed)
    return {"schema": SCHEMA, "seed": seed,
            "cases": [[_fingerprint(a) for a in _outputs(session, x)] for x in inputs]}


def _reference_texts(reference: dict[str, Any], count: int) -> list[str]:
    """The texts a text model's record names (its ``"texts"``, else the first ``count`` of
    :data:`REFERENCE_TEXTS`). Raises HealthCheckError when they are malformed."""
    texts = reference.get("texts", list(REFERENCE_TEXTS[:count]))
    if not isinstance(texts, list) or len(texts) != count or not all(
            isinstance(text, str) and 0 < len(text) <= MAX_TEXT_CHARS for text in texts):
        raise HealthCheckError("the package's reference predictions are malformed")
    return texts


def _differs(found: dict[str, Any], expected: dict[str, Any]) -> str | None:
    if not isinstance(expected.get("shape"), list) or list(found["shape"]) != expected["shape"]:
        return f"shape {found['shape']} instead of {expected.get('shape')}"
    try:
        head = np.asarray(expected.get("head"), dtype=np.float64).reshape(-1)
        sums = [float(expected.get(key)) for key in ("sum", "abs_sum")]  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return "malformed expected values"
    if head.size > HEAD or not np.all(np.isfinite(head)) or not all(map(math.isfinite, sums)):
        return "malformed expected values"
    got = np.asarray(found["head"][:len(head)], dtype=np.float64)
    scale = max(1.0, float(np.abs(head).max(initial=0.0)))
    if got.shape != head.shape or not np.all(np.isfinite(got)):
        return "values that are not finite"
    worst = np.abs(got - head) - (RTOL * np.abs(head) + ATOL * scale)
    if worst.size and worst.max() > 0:
        index = int(worst.argmax())
        return f"value {index} is {got[index]:.6g} instead of {head[index]:.6g}"
    for key in ("sum", "abs_sum"):
        allowed = RTOL * float(expected.get("abs_sum", 0.0)) + 1e-3
        if not abs(found[key] - float(expected.get(key, 0.0))) <= allowed:
            return f"{key} {found[key]:.6g} instead of {float(expected.get(key, 0.0)):.6g}"
    return None


def reference_check(session: Any, reference: dict[str, Any] | None) -> bool:
    """Run the reference inputs through ``session`` and compare with ``reference`` (the
    manifest's). Returns False when there is nothing to check (no reference, or another
    schema), True when every output matches.

    Raises HealthCheckError naming the first case and output that differs (or the run's error).
    """
    if not isinstance(reference, dict) or reference.get("schema") != SCHEMA:
        return False
    cases = reference.get("cases")
    seed = reference.get("seed")
    if not isinstance(cases, list) or not 0 < len(cases) <= MAX_CASES \
            or not isinstance(seed, int) or isinstance(seed, bool) \
            or not 0 <= seed <= 2**32 - 1 - len(cases) \
            or not all(isinstance(case, list) and all(isinstance(f, dict) for f in case)
                       for case in cases):
        raise HealthCheckError("the package's reference predictions are malformed")
    inputs: list[np.ndarray | str] = []
    if _is_text(session):
        inputs += _reference_texts(reference, len(cases))
    else:
        inputs += reference_inputs(tuple(session.preprocessing.size), seed, len(cases))
    for number, (x, expected) in enumerate(zip(inputs, cases, strict=True), start=1):
        try:
            outputs = _outputs(session, x)
        except Exception as error:  # any failure to run is a failed check
            raise HealthCheckError(f"reference input {number}: the model failed: "
                                   f"{error}") from error
        if not isinstance(expected, list) or len(expected) != len(outputs):
            raise HealthCheckError(f"reference input {number}: {len(outputs)} outputs instead "
                                   f"of {len(expected) if isinstance(expected, list) else 0}")
        for index, (array, wanted) in enumerate(zip(outputs, expected, strict=True)):
            difference = _differs(_fingerprint(array), wanted if isinstance(wanted, dict)
                                  else {})
            if difference:
                raise HealthCheckError(f"reference input {number}, output {index}: "
                                       f"{difference}")
    return True
