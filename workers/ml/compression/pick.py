"""The automatic pick: the fastest candidate on the target device within the accuracy budget."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["pick"]


def pick(candidates: Sequence[Mapping[str, Any]], reference_key: str = "fp32"
         ) -> tuple[str | None, str]:
    """Choose among ``candidates`` (dicts with ``key``, ``status`` "ready", ``within_budget``,
    ``compatible`` (False: the device cannot load it) and ``latency`` = the device's measurement
    ``{"p50_ms": float, ...}`` or None when it was not measured; ``size_bytes``).

    The pick is the candidate of lowest device p50 among those ready, compatible, measured and
    within the accuracy budget; equal p50s go to the smaller file. When that is the reference
    itself, or nothing qualifies, the answer is ``(None, reason)``: keep the float model.

    Returns ``(key or None, reason)``, the reason in one English sentence for the job page.
    """
    reference = next((c for c in candidates if c.get("key") == reference_key), None)
    eligible = [c for c in candidates
                if c.get("status") == "ready" and c.get("within_budget")
                and c.get("compatible", True) and (c.get("latency") or {}).get("p50_ms")]
    if not eligible:
        measured = [c for c in candidates if (c.get("latency") or {}).get("p50_ms")]
        if not measured:
            return None, "no candidate could be measured on the device: keep the float model"
        return None, ("no candidate stays within the accuracy budget on the device: keep the "
                      "float model")
    best = min(eligible, key=lambda c: (float(c["latency"]["p50_ms"]), int(c.get("size_bytes")
                                                                            or 0)))
    if reference is not None and best.get("key") == reference_key:
        return None, ("no candidate within the accuracy budget is faster than the float model "
                      "on the device: keep the float model")
    ref_p50 = ((reference or {}).get("latency") or {}).get("p50_ms")
    speed = (f", {float(ref_p50) / float(best['latency']['p50_ms']):.1f}x faster than the float "
             "model" if ref_p50 else "")
    drop = float(best.get("accuracy_drop_pt") or 0.0)
    accuracy = (f"{drop:.1f} points less accurate than" if drop > 0 else
                f"{-drop:.1f} points more accurate than" if drop < 0 else "as accurate as")
    return str(best["key"]), (f"{best['key']} is the fastest candidate within the accuracy "
                              f"budget: {float(best['latency']['p50_ms']):.2f} ms p50 on the "
                              f"device{speed}, {accuracy} the float model on held-out images")
