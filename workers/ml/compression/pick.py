"""The automatic pick: the fastest candidate on the target device within the accuracy budget."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["TEXT_TIE_SHARE", "TIE_SHARE", "pick"]

#: Candidates whose p50 is within this share of the fastest one's are tied (two measurements of
#: one model differ by a few percent on a quiet machine); a tie goes to the smaller file.
TIE_SHARE = 0.03
#: The tie share for text models: an n-gram model's p50 is ~0.2 ms, mostly featurisation and
#: scheduling, and the same float model measured 0.167-0.265 ms in three jobs on one machine
#: (session 20's review), so 3 % would pick by noise between a 12.6 MB float table and its
#: 3.1 MB INT8 copy; within 10 % the smaller file wins.
TEXT_TIE_SHARE = 0.10


def _p50(candidate: Mapping[str, Any]) -> float | None:
    value = (candidate.get("latency") or {}).get("p50_ms")
    return float(value) if value else None


def pick(candidates: Sequence[Mapping[str, Any]], reference_key: str = "fp32", *,
         measured_on: str = "the device", unit: str = "images",
         tie_share: float = TIE_SHARE) -> tuple[str | None, str]:
    """Choose among ``candidates`` (dicts with ``key``, ``status`` "ready", ``within_budget``,
    ``compatible`` (False: the device cannot load it), ``latency`` = the measurement
    ``{"p50_ms": float, ...}`` or None when it was not measured, ``size_bytes``,
    ``accuracy_drop_pt``, ``n_evaluated``, ``evaluated_on``).

    The pick is the candidate of lowest p50 among those ready, compatible, measured and within
    the accuracy budget; p50s within ``tie_share`` (:data:`TIE_SHARE`; text models
    :data:`TEXT_TIE_SHARE`) of the lowest are tied and the smallest
    file among them wins. When that is the reference itself, or nothing qualifies, the answer is
    ``(None, reason)``: keep the float model. Ready candidates that were not measured are named
    in the reason (the pick is only the fastest of those measured).

    Returns ``(key or None, reason)``, the reason in English sentences for the job page;
    ``measured_on`` names where the latencies come from, ``unit`` what the accuracy was measured
    on ("images", "texts").
    """
    reference = next((c for c in candidates if c.get("key") == reference_key), None)
    unmeasured = [str(c.get("key")) for c in candidates
                  if c.get("status") == "ready" and c.get("compatible", True) and not _p50(c)]
    note = (f" Not measured: {', '.join(unmeasured)}; the pick is the fastest of those "
            "measured." if unmeasured else "")
    eligible = [c for c in candidates
                if c.get("status") == "ready" and c.get("within_budget")
                and c.get("compatible", True) and _p50(c)]
    if not eligible:
        if not any(_p50(c) for c in candidates):
            return None, (f"no candidate could be measured on {measured_on}: keep the float "
                          "model." + note)
        return None, (f"no candidate stays within the accuracy budget on {measured_on}: keep "
                      "the float model." + note)
    fastest = min(_p50(c) or 0.0 for c in eligible)
    tied = [c for c in eligible if (_p50(c) or 0.0) <= fastest * (1 + tie_share)]
    best = min(tied, key=lambda c: (int(c.get("size_bytes") or 0), _p50(c) or 0.0))
    if reference is not None and best.get("key") == reference_key:
        return None, ("no candidate within the accuracy budget is faster than the float model "
                      f"on {measured_on}: keep the float model." + note)
    ref_p50 = _p50(reference or {})
    p50 = _p50(best) or 0.0
    speed = f", {ref_p50 / p50:.1f}x faster than the float model" if ref_p50 else ""
    drop = float(best.get("accuracy_drop_pt") or 0.0)
    n = int(best.get("n_evaluated") or 0)
    split = "test" if best.get("evaluated_on", "test") == "test" else "validation"
    images = f" on {n} {split} {unit}" if n else f" on the {split} {unit}"
    accuracy = (f"{drop:.1f} points less accurate than the float model{images}" if drop > 0
                else f"no less accurate than the float model{images}")
    if p50 > fastest:  # tied with a faster one, and the smaller file
        return str(best["key"]), (
            f"{best['key']} is the smallest of the candidates within the accuracy budget whose "
            f"p50 is within {round(tie_share * 100)}% of the fastest one's: {p50:.2f} ms p50 on "
            f"{measured_on} (the fastest: {fastest:.2f} ms); {accuracy}." + note)
    return str(best["key"]), (f"{best['key']} is the fastest candidate within the accuracy "
                              f"budget: {p50:.2f} ms p50 on {measured_on}{speed}; {accuracy}."
                              + note)
