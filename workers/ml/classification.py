"""Image classification training: the engine's entry point (no Django; paths in, paths out).

    result = train_image_classifier(TrainRequest(train, val, labels, out_dir, budget_s=90))
    if not result.parity["passed"]: refuse to register result.onnx_path

Steps: resolve ImageNet weights from the torch hub cache (never downloaded), decode and preprocess
every image once through ``edge_agent.imaging``, plan a recipe for the budget
(:mod:`workers.ml.recipe`), linear probe on cached features, fine-tune while time remains, keep the
best epoch by validation accuracy, export ONNX with softmax, check torch/onnxruntime parity, and
evaluate the exported model on the validation split.
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

from edge_agent.imaging import Preprocessing

from .data import decode_samples, shorter_side_px, to_tensors
from .evaluation import classification_report
from .export import compare_with_onnx, export_onnx
from .models import build_classifier
from .recipe import BudgetCosts, Recipe, plan_recipe
from .specs import SampleRef, TrainingCancelled, TrainRequest, TrainResult
from .training import (
    Progress,
    TrainingState,
    calibrate_step_s,
    evaluate,
    finetune,
    train_head,
)
from .weights import load_pretrained_state_dict

__all__ = [
    "SampleRef",
    "TrainRequest",
    "TrainResult",
    "TrainingCancelled",
    "train_image_classifier",
]

#: Images decoded first to choose the resolution (each is decoded only once overall).
_PROBE_IMAGES = 32
#: ImageNet statistics (torchvision's MobileNet_V2_Weights transforms), used with or without the
#: pretrained weights so that the package's preprocessing does not depend on the weights.
_MEAN = (0.485, 0.456, 0.406)
_STD = (0.229, 0.224, 0.225)


def _no_progress(_: dict[str, Any]) -> None:
    return None


def _never_stop() -> bool:
    return False


def _check_request(request: TrainRequest) -> None:
    if len(request.labels) < 2:
        raise ValueError("labels: a classifier needs at least 2 classes")
    if not request.train or not request.val:
        raise ValueError("train and val must each hold at least one sample")
    if request.budget_s <= 0:
        raise ValueError("budget_s must be > 0")
    for sample in (*request.train, *request.val):
        if not 0 <= sample.label < len(request.labels):
            raise ValueError(f"sample {sample.sample_id}: label index {sample.label} out of range")


@functools.lru_cache(maxsize=1)
def _threads() -> int:
    """Intra-op threads: the CPUs this process may use, minus those other processes keep busy.

    Measured on the 2-core machines: with other work running, 2 OpenMP threads made a training
    step 5-10x slower than 1 thread (the threads spin-wait for each other), so a busy machine
    gets fewer threads. The 1-minute load average is the measure of "busy" (Linux, macOS).
    Decided once per process: the thread count keys the step-time calibration, so a choice that
    followed the load from run to run would break "same seed, same model" within a worker.
    """
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cpus = os.cpu_count() or 1
    try:
        busy = int(os.getloadavg()[0] + 0.5)
    except OSError:
        busy = 0
    return max(1, min(cpus, cpus - busy))


def _resolve_weights(request: TrainRequest) -> tuple[dict | None, str]:
    if request.pretrained is False:
        return None, "random initialisation (pretrained weights not requested)"
    return load_pretrained_state_dict(request.architecture)


def train_image_classifier(
    request: TrainRequest,
    *,
    on_progress: Callable[[dict[str, Any]], None] = _no_progress,
    should_stop: Callable[[], bool] = _never_stop,
) -> TrainResult:
    """Train an image classifier within ``request.budget_s`` seconds and export it to ONNX.

    Writes ``model.onnx`` (input ``input`` (N, 3, H, W) float32, output ``probabilities`` (N, C))
    and ``checkpoint.pt`` (best state dict, labels, preprocessing, recipe) into
    ``request.out_dir``. ``on_progress`` receives dicts with ``phase`` (``decode``, ``features``,
    ``head``, ``finetune``, ``export``, ``evaluate``), ``epoch``, ``epochs``, ``step``, ``loss``,
    ``val_accuracy``, ``elapsed_s``, ``eta_s`` (keys present when known), at most ~3 per second.
    ``should_stop`` is polled between steps.

    The whole call, export and evaluation included, aims to end within ``budget_s``; budgets under
    ~20 s still export (~10 s) and so can end later. Same request and seed in one process ->
    same recipe and the same model; ``TrainResult.recipe`` passed back as ``request.recipe``
    replays a run anywhere.

    Raises:
        TrainingCancelled: ``should_stop()`` returned True.
        ValueError: fewer than 2 labels, an empty split, a label index out of range, or every
            image of a split failed to decode.
    """
    started = time.monotonic()
    _check_request(request)
    progress = Progress(on_progress, should_stop, started)
    out_dir = Path(request.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    previous_threads = torch.get_num_threads()
    threads = _threads()
    torch.set_num_threads(threads)
    try:
        return _train(request, progress, out_dir, threads)
    finally:
        torch.set_num_threads(previous_threads)


def _train(request: TrainRequest, progress: Progress, out_dir: Path, threads: int) -> TrainResult:
    state_dict, weights_note = _resolve_weights(request)
    pretrained = state_dict is not None
    torch.manual_seed(request.seed)  # the new head's initialisation
    model = build_classifier(request.architecture, len(request.labels), state_dict)
    model = model.to(memory_format=torch.channels_last)
    del state_dict

    progress.emit({"phase": "decode", "step": 0}, force=True)
    probe, probe_skipped = decode_samples(request.train[:_PROBE_IMAGES], progress.check)
    images = [image for _, image in probe]
    if request.recipe is not None:
        recipe = Recipe.from_dict({**request.recipe, "seed": request.seed, "threads": threads})
        recipe.pretrained = pretrained
    else:
        costs = BudgetCosts(
            budget_s=float(request.budget_s),
            n_train=len(request.train),
            n_val=len(request.val),
            source_pixels=int(np.median([i.size[0] * i.size[1] for i in images])) if images else 0,
            shorter_side=shorter_side_px(images),
            step_s_96=calibrate_step_s(model, len(request.labels), threads),
            pretrained=pretrained,
        )
        recipe = plan_recipe(
            costs, seed=request.seed, threads=threads, architecture=request.architecture
        )
    preprocessing = Preprocessing(size=(recipe.resolution, recipe.resolution), mean=_MEAN, std=_STD)
    decoded = {sample.sample_id: image for sample, image in probe}
    train = to_tensors(request.train, preprocessing, progress.check, decoded)
    train.skipped[:0] = probe_skipped
    val = to_tensors(request.val, preprocessing, progress.check)
    del decoded, images, probe
    for name, split in (("train", train), ("val", val)):
        if len(split) == 0:
            raise ValueError(f"{name}: no image could be decoded")
    progress.emit({"phase": "decode", "step": len(train) + len(val)}, force=True)

    tail_s = recipe.planned.get("export_s", 10.0) + recipe.planned.get("final_s", 1.0)
    progress.tail_s = tail_s
    deadline = progress.started + request.budget_s - tail_s
    state = TrainingState()
    if recipe.head_epochs > 0:
        train_head(model, train, val, recipe, state, progress)
    else:
        accuracy, loss, _ = evaluate(model, val)
        state.offer(model, "init", 0, accuracy, loss)
    torch.manual_seed(request.seed + 2)  # dropout masks during fine-tuning
    finetune(model, train, val, recipe, state, progress, deadline)
    model.load_state_dict(state.best_state)
    return _finish(request, model, recipe, state, train, val, preprocessing, progress, out_dir,
                   pretrained, weights_note)


def _finish(
    request: TrainRequest,
    model: torch.nn.Module,
    recipe: Recipe,
    state: TrainingState,
    train: Any,
    val: Any,
    preprocessing: Preprocessing,
    progress: Progress,
    out_dir: Path,
    pretrained: bool,
    weights_note: str,
) -> TrainResult:
    progress.check()
    model = model.to(memory_format=torch.contiguous_format).eval()
    checkpoint_path = out_dir / "checkpoint.pt"
    recipe_dict = recipe.to_dict()
    torch.save(
        {"state_dict": model.state_dict(), "labels": list(request.labels),
         "preprocessing": preprocessing.to_dict(), "architecture": request.architecture,
         "recipe": recipe_dict},
        checkpoint_path,
    )
    progress.emit({"phase": "export", "eta_s": round(progress.tail_s, 1)}, force=True)
    onnx_path = out_dir / "model.onnx"
    export_info = export_onnx(model, onnx_path, preprocessing.size, recipe.exporter)
    progress.check()
    progress.emit({"phase": "evaluate"}, force=True)
    parity, probabilities = compare_with_onnx(model, onnx_path, val.images, val.sample_ids)
    predicted = probabilities.argmax(axis=1)
    report = classification_report(
        val.labels.tolist(), predicted.tolist(), request.labels, val.sample_ids,
        probabilities=probabilities.max(axis=1).tolist(),
    )
    report["skipped_samples"] = train.skipped + val.skipped
    report["predictions"] = [  # what the device should answer for each validation sample
        {"sample_id": sid, "predicted": int(p), "probability": float(row[p])}
        for sid, p, row in zip(val.sample_ids, predicted, probabilities)
    ]
    elapsed = progress.elapsed_s()
    recipe_dict.update(
        export_info,
        stopped_early=state.stopped_early,
        n_train=len(train),
        n_val=len(val),
    )
    metrics = {
        "val_accuracy": report["accuracy"],
        "macro_f1": report["macro_f1"],
        "best_epoch": state.best_epoch,
        "best_phase": state.best_phase,
        "torch_val_accuracy": round(state.best_accuracy, 4),
    }
    progress.emit({"phase": "done", "val_accuracy": report["accuracy"], "eta_s": 0}, force=True)
    return TrainResult(
        onnx_path=onnx_path,
        checkpoint_path=checkpoint_path,
        preprocessing=preprocessing.to_dict(),
        pretrained=pretrained,
        weights_note=weights_note,
        metrics=metrics,
        history=state.history,
        report=report,
        parity=parity,
        recipe=recipe_dict,
        elapsed_s=round(elapsed, 3),
    )
