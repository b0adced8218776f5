"""Can a device's onnxruntime load a model package? A pure function over two dicts, no I/O.

:func:`model_incompatibilities` compares a manifest (docs/contracts.md, "Model package":
``min_onnxruntime``, ``onnx.opset``, ``onnx.ir_version``, optional ``onnx.operators`` and
``onnx.execution_providers``) with what a device reported of its runtime (heartbeat ``runtime``:
``{"onnxruntime": "1.20.1", "providers": ["CPUExecutionProvider"], ...}``; enrollment ``info``
carries ``onnxruntime`` too) and returns the reasons it cannot, in words a user reads (in the
active language: the request's in the API, English in a worker).

The opset and IR-version limits come from onnxruntime's published compatibility table,
https://onnxruntime.ai/docs/reference/compatibility.html ("ONNX opset support"; the source is
``docs/reference/compatibility.md`` of the gh-pages branch of microsoft/onnxruntime), which lists
releases 0.1 to 1.20. A release newer than the table's newest row is assumed to support every
model (the table is not updated at every release, and onnxruntime keeps backwards
compatibility). A release older than the table's oldest row is judged by that row.

A device that never reported an onnxruntime version (an agent older than the ``runtime`` field,
enrolled without ``info.onnxruntime``) is UNKNOWN and allowed: no reason comes from version
checks. The agent still refuses at load time a model it cannot run, and a benchmark of such a
model ends ``incompatible`` on the device instead of here.
"""

from __future__ import annotations

import re
from typing import Any

from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop

COMPATIBILITY_URL = "https://onnxruntime.ai/docs/reference/compatibility.html"

#: (onnxruntime major.minor, highest ONNX opset implemented, highest ONNX IR version supported),
#: newest first: the table of COMPATIBILITY_URL.
ONNXRUNTIME_SUPPORT: tuple[tuple[tuple[int, int], int, int], ...] = (
    ((1, 20), 21, 10),
    ((1, 19), 21, 10),
    ((1, 18), 21, 10),
    ((1, 17), 20, 9),
    ((1, 16), 19, 9),
    ((1, 15), 19, 8),
    ((1, 14), 18, 8),
    ((1, 13), 17, 8),
    ((1, 12), 17, 8),
    ((1, 11), 16, 8),
    ((1, 10), 15, 8),
    ((1, 9), 15, 8),
    ((1, 8), 14, 7),
    ((1, 7), 13, 7),
    ((1, 6), 13, 7),
    ((1, 5), 12, 7),
    ((1, 4), 12, 7),
    ((1, 3), 12, 7),
    ((1, 2), 11, 6),
    ((1, 1), 11, 6),
    ((1, 0), 11, 6),
    ((0, 5), 10, 5),
    ((0, 4), 10, 5),
    ((0, 3), 9, 3),
    ((0, 2), 8, 3),
    ((0, 1), 8, 3),
)

#: Operators (``domain:OpType``, the manifest's ``onnx.operators`` spelling; ``ai.onnx`` is the
#: default domain) that the CPU execution provider runs only from a given release, in the form
#: quantizers emit them, with the source. Kept small and conservative: the manifest names
#: operators, not their element types, so an entry holds for the types that
#: ``onnxruntime.quantization.quantize_dynamic`` produces (uint8 activations, int8 weights).
OPERATOR_MIN_ONNXRUNTIME: dict[str, tuple[str, str]] = {
    # uint8 x uint8 ran before; int8 (and mixed) inputs only from the release after PR #26585
    # (merged 2025-11, in the 1.24.0 release branch): https://github.com/microsoft/onnxruntime/
    # pull/26585, fixing e.g. issue #12362 (NOT_IMPLEMENTED ConvInteger after quantize_dynamic).
    "ai.onnx:ConvInteger": ("1.24", "int8 ConvInteger on CPU: microsoft/onnxruntime PR #26585"),
    # uint8 x int8 (quantize_dynamic's form) since PR #1391 (2019-07, in 1.0); int8 activations
    # only from PR #26744 (2025-12, 1.24).
    "ai.onnx:MatMulInteger": ("1.0", "uint8 x int8 MatMulInteger on CPU: microsoft/onnxruntime "
                                     "PR #1391"),
}

CPU_PROVIDER = "CPUExecutionProvider"

# The reasons, in the active language when they are made; a benchmark stores them in English
# (sampan.fleet.benchmarks) and the API reads them back in the request's (BENCHMARK_ERRORS).
NEEDS_NEWER_ONNXRUNTIME = gettext_noop("the model needs onnxruntime >= %(needed)s; the device "
                                       "has %(reported)s")
OPSET_TOO_NEW = gettext_noop("the model uses ONNX opset %(opset)d; onnxruntime %(reported)s "
                             "implements opsets up to %(max_opset)d (%(url)s)")
IR_VERSION_TOO_NEW = gettext_noop("the model has ONNX IR version %(ir_version)d; onnxruntime "
                                  "%(reported)s supports IR versions up to %(max_ir)d (%(url)s)")
OPERATOR_TOO_NEW = gettext_noop("the model uses %(operator)s, which onnxruntime's CPU provider "
                                "runs from %(since)s on; the device has %(reported)s "
                                "(%(source)s)")
PROVIDERS_MISSING = gettext_noop("the model needs the execution provider(s) %(missing)s; the "
                                 "device offers %(offered)s")
NO_PROVIDER = gettext_noop("none")
INCOMPATIBILITIES = (NEEDS_NEWER_ONNXRUNTIME, OPSET_TOO_NEW, IR_VERSION_TOO_NEW, OPERATOR_TOO_NEW,
                     PROVIDERS_MISSING)


def version_tuple(text: Any) -> tuple[int, ...] | None:
    """``"1.20.1"`` -> (1, 20, 1); ``"1.17"`` -> (1, 17, 0); None when it holds no number."""
    if not isinstance(text, str):
        return None
    parts = [int(part) for part in re.findall(r"\d+", text.split("+")[0])[:3]]
    if not parts:
        return None
    return tuple(parts + [0] * (3 - len(parts)))


def onnx_support(onnxruntime_version: tuple[int, ...]) -> tuple[int, int] | None:
    """(highest opset, highest IR version) that this onnxruntime release implements, or None when
    the release is newer than the table (assumed to support everything)."""
    key = onnxruntime_version[:2]
    newest = ONNXRUNTIME_SUPPORT[0][0]
    if key > newest:
        return None
    for release, opset, ir_version in ONNXRUNTIME_SUPPORT:
        if key >= release:
            return opset, ir_version
    _, opset, ir_version = ONNXRUNTIME_SUPPORT[-1]
    return opset, ir_version


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def model_incompatibilities(manifest: dict[str, Any], runtime: dict[str, Any]) -> list[str]:
    """The reasons a device with ``runtime`` cannot load the model of ``manifest``; [] if it can.

    ``runtime`` is ``{"onnxruntime": version, "providers": [...]}`` as the device reported it
    (either key may be missing: an unknown version or provider list checks nothing).
    Rules: onnxruntime older than ``min_onnxruntime``; ``onnx.opset`` / ``onnx.ir_version``
    above what that release implements (COMPATIBILITY_URL); an ``onnx.execution_providers``
    entry the device lacks (absent: CPU only, which every build has); an ``onnx.operators``
    entry of :data:`OPERATOR_MIN_ONNXRUNTIME` that the release does not run.
    """
    manifest = manifest if isinstance(manifest, dict) else {}
    runtime = runtime if isinstance(runtime, dict) else {}
    onnx = manifest.get("onnx") if isinstance(manifest.get("onnx"), dict) else {}
    reasons: list[str] = []
    reported = runtime.get("onnxruntime")
    have = version_tuple(reported)
    if have is not None:
        needed_text = manifest.get("min_onnxruntime")
        needed = version_tuple(needed_text)
        if needed is not None and have < needed:
            reasons.append(_(NEEDS_NEWER_ONNXRUNTIME) % {"needed": needed_text,
                                                         "reported": reported})
        support = onnx_support(have)
        if support is not None:
            max_opset, max_ir = support
            opset, ir_version = _int(onnx.get("opset")), _int(onnx.get("ir_version"))
            if opset is not None and opset > max_opset:
                reasons.append(_(OPSET_TOO_NEW)
                               % {"opset": opset, "reported": reported, "max_opset": max_opset,
                                  "url": COMPATIBILITY_URL})
            if ir_version is not None and ir_version > max_ir:
                reasons.append(_(IR_VERSION_TOO_NEW)
                               % {"ir_version": ir_version, "reported": reported,
                                  "max_ir": max_ir, "url": COMPATIBILITY_URL})
        operators = onnx.get("operators")
        for operator in sorted(set(operators)) if isinstance(operators, list) else ():
            if not isinstance(operator, str) or operator not in OPERATOR_MIN_ONNXRUNTIME:
                continue
            since, source = OPERATOR_MIN_ONNXRUNTIME[operator]
            if have < (version_tuple(since) or (0, 0, 0)):
                reasons.append(_(OPERATOR_TOO_NEW)
                               % {"operator": operator, "since": since, "reported": reported,
                                  "source": source})
    required = onnx.get("execution_providers")
    providers = runtime.get("providers")
    if isinstance(required, list) and isinstance(providers, list):
        missing = [p for p in required if isinstance(p, str) and p not in providers
                   and p != CPU_PROVIDER]
        if missing:
            reasons.append(_(PROVIDERS_MISSING)
                           % {"missing": ", ".join(missing),
                              "offered": ", ".join(map(str, providers)) or _(NO_PROVIDER)})
    return reasons
