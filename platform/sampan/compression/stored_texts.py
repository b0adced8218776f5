"""What a compression job stores in English, read in the request's language.

The compression worker writes each candidate's ``reason``, the job's ``warnings`` and its
``pick_reason`` in English (``workers.ml.compression.engine``, ``.text`` and ``.pick``;
workers/ml does not import Django, so their sentences are repeated here as msgids, as
``sampan.training.notes`` does for the weights note); the device benchmarks' errors come from
the fleet (``sampan.fleet.stored_texts``). The output serializer shows them in the request's
language (``sampan.core.stored_text``), keys, names and figures unchanged; a text of another
form (an exception's own message, a sentence of an older worker) is shown as stored. A test
makes the worker's sentences and reads them back.
"""

from __future__ import annotations

from typing import Any

from django.utils.translation import gettext_noop

from sampan.compression.services import READING_SOURCE_FAILED
from sampan.core.stored_text import JOB_ERRORS, Templates, read_text, read_texts
from sampan.fleet.stored_texts import BENCHMARK_ERRORS, INCOMPATIBILITY

#: why a candidate failed or was skipped (workers/ml/compression/engine.py)
CANDIDATE_REASONS = Templates(
    gettext_noop("quantization failed: %(error)s"),
    gettext_noop("not enough time left in the budget"),
    gettext_noop("FP16 conversion failed: %(error)s"),
    gettext_noop("export gate failed: torch and onnxruntime disagree (max |Δprob| "
                 "%(difference)s)"),
)

#: the job's warnings (workers/ml/compression/engine.py, .text, .common,
#: workers/tasks/compression.py)
WARNINGS = Templates(
    gettext_noop("this dataset version has no test split: accuracy is measured on the "
                 "validation split, which also chose the teacher's best epoch (it flatters every "
                 "candidate alike)"),
    gettext_noop("the test split has %(images)s images: one image moves accuracy by %(points)s "
                 "points, more than the %(budget)s-point budget, so the budget is checked as 'no "
                 "more mistakes than the float model' there and on validation, and a small split "
                 "can still be lucky; freeze a version with a larger test split (or more images) "
                 "for a finer check"),
    gettext_noop("the validation split has %(images)s images: one image moves accuracy by "
                 "%(points)s points, more than the %(budget)s-point budget, so the budget is "
                 "checked as 'no more mistakes than the float model' there and on validation, "
                 "and a small split can still be lucky; freeze a version with a larger test "
                 "split (or more images) for a finer check"),
    gettext_noop("the training checkpoint cannot be read (%(error)s): no distilled students, "
                 "only graph-level candidates"),
    gettext_noop("this model has no training checkpoint: no distilled students, only "
                 "graph-level candidates"),
    gettext_noop("INT8 not attempted: %(images)s training images to calibrate on, at least "
                 "%(needed)s are needed"),
    gettext_noop("the calibration images are all of one class: INT8 ranges may not fit the "
                 "others (measured below)"),
    gettext_noop("FP16 not attempted: the target reports no GPU execution provider "
                 "(%(providers)s); on a CPU it is emulated and slower"),
    gettext_noop("not measured: %(candidates)s"),
    # a text classifier's (workers/ml/compression/text.py)
    gettext_noop("the test split has %(texts)s texts: one text moves accuracy by %(points)s "
                 "points, more than the %(budget)s-point budget, so the budget is checked as 'no "
                 "more mistakes than the float model' there and on validation, and a small split "
                 "can still be lucky; freeze a version with a larger test split (or more texts) "
                 "for a finer check"),
    gettext_noop("the validation split has %(texts)s texts: one text moves accuracy by "
                 "%(points)s points, more than the %(budget)s-point budget, so the budget is "
                 "checked as 'no more mistakes than the float model' there and on validation, "
                 "and a small split can still be lucky; freeze a version with a larger test "
                 "split (or more texts) for a finer check"),
    gettext_noop("%(methods)s: not applicable to a text model (distilled students at a lower "
                 "resolution or with fewer channels are for image networks); only graph-level "
                 "candidates are made"),
    gettext_noop("%(count)s held-out texts were left out of the accuracy: empty after "
                 "normalisation, or of a class the model does not have"),
)

# The pick's reason (workers/ml/compression/pick.py): a sentence of where the candidates were
# measured, an optional speed-up, how accurate the pick is, and an optional note of the
# candidates that were not measured.
_WHERE = Templates(gettext_noop("the compression worker"), gettext_noop("the device"),
                   other=True)  # else: the device's name
_SPEED = Templates(gettext_noop(", %(times)sx faster than the float model"), "")
_IMAGES = Templates(gettext_noop(" on the test images"), gettext_noop(" on the validation images"),
                    gettext_noop(" on %(count)s test images"),
                    gettext_noop(" on %(count)s validation images"),
                    gettext_noop(" on the test texts"), gettext_noop(" on the validation texts"),
                    gettext_noop(" on %(count)s test texts"),
                    gettext_noop(" on %(count)s validation texts"))
_ACCURACY = Templates(
    gettext_noop("%(drop)s points less accurate than the float model%(images)s"),
    gettext_noop("no less accurate than the float model%(images)s"), inner={"images": _IMAGES})
_NOT_MEASURED = Templates(
    gettext_noop(" Not measured: %(keys)s; the pick is the fastest of those measured."), "")
PICK_REASONS = Templates(
    gettext_noop("no candidate could be measured on %(where)s: keep the float model.%(note)s"),
    gettext_noop("no candidate stays within the accuracy budget on %(where)s: keep the float "
                 "model.%(note)s"),
    gettext_noop("no candidate within the accuracy budget is faster than the float model on "
                 "%(where)s: keep the float model.%(note)s"),
    gettext_noop("%(key)s is the fastest candidate within the accuracy budget: %(p50)s ms p50 "
                 "on %(where)s%(speed)s; %(accuracy)s.%(note)s"),
    gettext_noop("%(key)s is the smallest of the candidates within the accuracy budget whose "
                 "p50 is within %(share)s%% of the fastest one's: %(p50)s ms p50 on %(where)s "
                 "(the fastest: %(fastest)s ms); %(accuracy)s.%(note)s"),
    inner={"where": _WHERE, "speed": _SPEED, "accuracy": _ACCURACY, "note": _NOT_MEASURED})

#: the job's ``error``: a job's errors, and the platform's own before the worker starts
COMPRESSION_ERRORS = Templates(JOB_ERRORS, READING_SOURCE_FAILED)


def candidate_text(candidate: Any) -> Any:
    """One stored candidate with its reason, its benchmark's error and its incompatibilities
    in the active language."""
    if not isinstance(candidate, dict):
        return candidate
    shown = dict(candidate)
    if isinstance(shown.get("reason"), str):
        shown["reason"] = read_text(shown["reason"], CANDIDATE_REASONS)
    benchmark = shown.get("benchmark")
    if isinstance(benchmark, dict) and isinstance(benchmark.get("error"), str):
        shown["benchmark"] = {**benchmark,
                              "error": read_text(benchmark["error"], BENCHMARK_ERRORS)}
    if "incompatibilities" in shown:
        shown["incompatibilities"] = read_texts(shown["incompatibilities"], INCOMPATIBILITY)
    return shown


__all__ = ["CANDIDATE_REASONS", "COMPRESSION_ERRORS", "PICK_REASONS", "WARNINGS", "candidate_text"]
