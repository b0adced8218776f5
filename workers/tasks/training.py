"""Celery adapter for training: ids in, the ML engine in the middle, one service call out."""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

from celery import shared_task

from sampan.core.stored_text import STORING_MODEL_FAILED, TRAINING_FAILED, TRAINING_TIME_LIMIT
from sampan.training import services
from workers.ml.export import onnx_info
from workers.tasks.heartbeat import heartbeating, time_limit_s
from workers.ml.classification import (SampleRef, TrainingCancelled, TrainRequest,
                                       train_image_classifier)
from workers.ml.detection.data import BoxSample
from workers.ml.detection.train import DetectRequest, train_detector
from workers.ml.text.train import TextSample, TextTrainRequest, train_text_classifier

log = logging.getLogger(__name__)

# Time kept back from the engine for registration and the final database writes (measured
# ~0.1 s; 3 s left every job at 70-86 % of its budget, issue 7). Time spent before the engine
# starts (loading inputs) is subtracted as well.
OVERHEAD_S = 0.5


def _classify_request(inputs: services.TrainingInputs, budget_s: float) -> TrainRequest:
    def refs(rows: list[tuple[str, int, str]]) -> list[SampleRef]:
        return [SampleRef(path=p, label=c, sample_id=i) for p, c, i in rows]

    return TrainRequest(
        train=refs(inputs.train), val=refs(inputs.val), test=refs(inputs.test),
        labels=inputs.labels, out_dir=Path(inputs.out_dir), budget_s=budget_s,
        seed=inputs.seed, augmentation=inputs.augmentation,
        model_preference=inputs.model_preference, allow_flips=inputs.allow_flips)


def _detect_request(inputs: services.TrainingInputs, budget_s: float) -> DetectRequest:
    def refs(rows: list[tuple[str, list[list[float]], str]]) -> list[BoxSample]:
        return [BoxSample(path=p, sample_id=i, boxes=tuple(
            (float(b[0]), float(b[1]), float(b[2]), float(b[3]), int(b[4])) for b in boxes))
            for p, boxes, i in rows]

    # "never mirror the images" (allow_flips false) means no flips for boxes either
    return DetectRequest(train=refs(inputs.train), val=refs(inputs.val), test=refs(inputs.test),
                         labels=inputs.labels, out_dir=Path(inputs.out_dir), budget_s=budget_s,
                         seed=inputs.seed, augmentation=inputs.augmentation,
                         flips=inputs.allow_flips)


def _text_request(inputs: services.TrainingInputs, budget_s: float) -> TextTrainRequest:
    def refs(rows: list[tuple[str, int, str]]) -> list[TextSample]:
        return [TextSample(text=t, label=c, sample_id=i) for t, c, i in rows]

    return TextTrainRequest(train=refs(inputs.train), val=refs(inputs.val),
                            test=refs(inputs.test), labels=inputs.labels,
                            out_dir=Path(inputs.out_dir), budget_s=budget_s, seed=inputs.seed)


def _text_result(inputs: services.TrainingInputs, budget_s: float,
                 on_progress: Any, should_stop: Any) -> dict[str, Any]:
    """Train a text classifier and describe it as ``services.training_job_complete`` reads a
    result (no image preprocessing; pretrained only when the sentence encoder won; the
    featurisation settings go to the package as ``text``)."""
    result = train_text_classifier(_text_request(inputs, budget_s), on_progress=on_progress,
                                   should_stop=should_stop)
    recipe = {**result.recipe, "family": result.family, "candidates": result.candidates}
    return {"onnx_path": str(result.onnx_path), "out_dir": str(inputs.out_dir),
            "preprocessing": {}, "text": result.features, "labels": result.labels,
            "pretrained": result.pretrained, "weights_note": result.weights_note,
            "metrics": result.metrics,
            "history": result.history, "report": result.report,
            "parity": {"passed": True, **result.parity}, "recipe": recipe,
            "onnx": onnx_info(result.onnx_path)}


@shared_task(name="training.run", acks_late=True)
def run_training(training_job_id: str, deferrals: int = 0) -> None:
    """Train, evaluate, export and register. Idempotent: a second delivery returns at once.

    Fair between projects: when another project's job should go first
    (``services.training_job_fair_next``), this job's message goes back to the end of the
    queue (at most ``MAX_DEFERRALS`` times) and the worker takes the next message."""
    fairer = services.training_job_fair_next()
    if fairer is not None and fairer != str(training_job_id) and services.training_job_defer(
            job_id=training_job_id, deferrals=deferrals):
        log.info("training job %s waits: %s goes first (another project's turn)",
                 training_job_id, fairer)
        return
    started = time.monotonic()
    inputs = services.training_job_start(job_id=training_job_id)
    if inputs is None:
        log.info("training job %s already taken or finished; nothing to do", training_job_id)
        return
    try:
        alive = {"value": True}

        def on_progress(progress: dict[str, Any]) -> None:
            alive["value"] = services.training_job_progress(job_id=training_job_id,
                                                            progress=progress)

        budget_s = max(5.0, inputs.budget_s - OVERHEAD_S - (time.monotonic() - started))
        try:
            limit_s = time_limit_s(inputs.budget_s)

            def expire(job_id: str) -> None:
                services.training_job_fail(job_id=job_id, message=TRAINING_TIME_LIMIT % {
                    "limit": limit_s, "budget": inputs.budget_s})

            with heartbeating(training_job_id, alive, services.training_job_heartbeat,
                              limit_s=limit_s, expire=expire):
                text: dict[str, Any] | None = None
                if inputs.task_type == "text_classification":
                    text = _text_result(inputs, budget_s, on_progress,
                                        lambda: not alive["value"])
                elif inputs.task_type == "object_detection":
                    result = train_detector(_detect_request(inputs, budget_s),
                                            on_progress=on_progress,
                                            should_stop=lambda: not alive["value"])
                else:
                    result = train_image_classifier(_classify_request(inputs, budget_s),
                                                    on_progress=on_progress,
                                                    should_stop=lambda: not alive["value"])
        except TrainingCancelled:
            log.info("training job %s stopped: cancelled or reaped", training_job_id)
            return
        except Exception as exc:
            log.exception("training job %s failed", training_job_id)
            services.training_job_fail(job_id=training_job_id,
                                       message=TRAINING_FAILED % {"reason": exc})
            return
        try:
            if text is not None:
                services.training_job_complete(job_id=training_job_id, result=text)
                return
            services.training_job_complete(job_id=training_job_id, result={
                "onnx_path": str(result.onnx_path), "out_dir": str(inputs.out_dir),
                "preprocessing": result.preprocessing,
                "pretrained": result.pretrained, "weights_note": result.weights_note,
                "metrics": result.metrics, "history": result.history, "report": result.report,
                "parity": result.parity, "recipe": result.recipe,
                "detection": getattr(result, "detection", None),
                "onnx": onnx_info(result.onnx_path)})
        except Exception as exc:  # storing artifacts or registering (the bucket, the database)
            log.exception("training job %s could not be stored or registered", training_job_id)
            services.training_job_fail(job_id=training_job_id,
                                       message=STORING_MODEL_FAILED % {"reason": exc})
    finally:
        # with the bucket, this host's copy of the attempt's files is no longer needed
        services.training_workdir_release(Path(inputs.out_dir))
