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

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch
from PIL import Image, ImageOps

from edge_agent.imaging import Preprocessing

from .augmentation import AugmentationChoice, build_transform, choose_augmentation
from .data import ImageTensors, check_cache_fits, decode_samples, normalised_batches, to_tensors
from .devices import device_name, replay_device, training_device, training_on
from .evaluation import classification_report
from .export import compare_with_onnx, export_onnx, onnx_probabilities
from .models import build_classifier
from .recipe import BudgetCosts, Recipe, plan_recipe
from .specs import SampleRef, TrainingCancelled, TrainRequest, TrainResult
from .training import (
    Progress,
    TrainingState,
    balanced_accuracy,
    calibrate_step_s,
    evaluate,
    finetune,
    train_head,
)
from .specs import AUGMENTATIONS, MODEL_PREFERENCES
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
    if request.augmentation not in AUGMENTATIONS:
        raise ValueError(f"augmentation must be one of {', '.join(AUGMENTATIONS)}")
    if request.model_preference not in MODEL_PREFERENCES:
        raise ValueError(f"model_preference must be one of {', '.join(MODEL_PREFERENCES)}")
    for sample in (*request.train, *request.val, *request.test):
        if not 0 <= sample.label < len(request.labels):
            raise ValueError(f"sample {sample.sample_id}: label index {sample.label} out of range")


def available_threads() -> int:
    """Most intra-op threads: the CPUs this process may use (affinity mask, then the cgroup v2
    CPU quota). :func:`workers.ml.training.calibrate_step_s` then times this count against 1
    thread and keeps the faster; the load average is never used (on an idle 2-core machine it
    read ~1 and chose 1 thread in every run, while 2 threads are ~1.5x faster: issue 7). On a
    GPU all of them are kept (they serve the CPU's side: decoding, augmentation)."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cpus = os.cpu_count() or 1
    try:
        quota, period = Path("/sys/fs/cgroup/cpu.max").read_text().split()[:2]
        if quota != "max":
            cpus = min(cpus, max(1, int(int(quota) / int(period))))
    except (OSError, ValueError):
        pass
    return max(1, cpus)


def _resolve_weights(request: TrainRequest) -> tuple[dict[str, Any] | None, str]:
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
    ``head``, ``finetune``, ``export``, ``evaluate``, ``done``), ``elapsed_s``, ``fraction``
    (0..1 of the budget, never decreasing), ``eta_s`` (never increasing) and, when known,
    ``epoch``, ``epochs``, ``step``, ``steps``, ``loss``, and at epoch ends ``val_loss`` and
    ``val_accuracy`` of that ``epoch``; at most ~3 per second. ``should_stop`` is polled between
    steps.

    The whole call, export and evaluation included, aims to end at ``budget_s`` (90-105 % of it,
    unless validation stops improving first; the platform refuses budgets under its minimum).
    The schedule adapts to the measured speed, so two live runs may differ;
    ``TrainResult.recipe`` passed back as ``request.recipe`` replays a run exactly (same
    learning rate at every step, same thread count, same model) where it was recorded: on the
    CPU exactly; on a GPU not bit-for-bit (cuDNN's algorithms; never measured:
    :func:`workers.ml.devices.replay_device`). ``request.device`` (else
    ``SAMPAN_TRAINING_DEVICE``) chooses the device of a new run; with a recipe it must be of the
    recipe's kind.

    Raises:
        TrainingCancelled: ``should_stop()`` returned True.
        ValueError: fewer than 2 labels, an empty split, a label index out of range, every
            image of a split failed to decode, or the device (setting or recipe) names a GPU
            this worker does not have.
    """
    started = time.monotonic()
    _check_request(request)
    # a replay trains on the kind of device the recipe was recorded on
    device = (training_device(request.device) if request.recipe is None
              else replay_device(request.recipe.get("device"), request.device))
    progress = Progress(on_progress, should_stop, started, budget_s=float(request.budget_s))
    out_dir = Path(request.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    previous_threads = torch.get_num_threads()
    threads = available_threads()
    torch.set_num_threads(threads)
    # Denormal floats made a pretrained MobileNetV2's training step 10-50x slower on these CPUs
    # (1.9-6.8 s instead of 0.13 s, measured); flushing them to zero changes no figure we report.
    torch.set_flush_denormal(True)
    try:
        with training_on(device):
            return _train(request, progress, out_dir, threads, device)
    finally:
        torch.set_num_threads(previous_threads)
        torch.set_flush_denormal(False)


def _thumbnail(image: Image.Image, side: int = 64) -> Image.Image:
    """A resized copy of ``image`` within ``side`` x ``side`` px, aspect ratio kept."""
    return ImageOps.contain(image, (side, side), Image.Resampling.BILINEAR)


def _class_weights(labels: torch.Tensor, n_classes: int) -> torch.Tensor:
    """Loss weights ``sqrt(n / (C * n_c))``: the square root of scikit-learn's
    ``class_weight="balanced"``, 1.0 for every class of a balanced set; a class absent from train
    gets 1. Shape (C,).

    The square root tempers inverse frequency (square-root re-balancing, as in Mahajan et al. 2018,
    "Exploring the Limits of Weakly Supervised Pretraining"; Cui et al. 2019 show full inverse
    frequency over-weights rare classes): on 60 vs 6 training digits the full weights (0.55 and
    5.5) left the linear probe at 74 % validation accuracy and fine-tuning swung between 13 % and
    100 %; with their square roots the probe reached 96 % (measured, issue 7)."""
    counts = torch.bincount(labels, minlength=n_classes).to(torch.float32)
    weights = torch.where(counts > 0, len(labels) / (n_classes * counts.clamp(min=1)),
                          torch.ones_like(counts))
    return weights.sqrt()


def _train(request: TrainRequest, progress: Progress, out_dir: Path, threads: int,
           device: torch.device) -> TrainResult:
    state_dict, weights_note = _resolve_weights(request)
    pretrained = state_dict is not None
    torch.manual_seed(request.seed)  # the new head's initialisation
    model = build_classifier(request.architecture, len(request.labels), state_dict)
    # the model trains on ``device``; batches are made on the CPU and moved there
    model = model.to(device).to(memory_format=torch.channels_last)
    del state_dict

    progress.emit({"phase": "decode", "step": 0}, force=True)

    def tick() -> bool:  # polled per image and per calibration step: cancel, and keep moving
        progress.check()
        progress.emit({"phase": "decode"})
        return False

    probe, probe_skipped = decode_samples(request.train[:_PROBE_IMAGES], tick)
    # what the plan needs of the probe: sizes, and small copies for the colour test (32 full
    # decodes of 40 MP photos held meanwhile would be 5 GB); to_tensors decodes them again
    sizes = [image.size for _, image in probe]
    images = [_thumbnail(image) for _, image in probe]
    del probe
    choice = choose_augmentation(request.augmentation, images, request.allow_flips, sizes=sizes)
    if request.recipe is not None:
        # the recorded thread count too: a different count sums in another order
        recipe = Recipe.from_dict({**request.recipe, "seed": request.seed})
        recipe.pretrained = pretrained
        torch.set_num_threads(max(1, int(recipe.threads)))
    else:
        step_s_96, threads = calibrate_step_s(model, len(request.labels), threads, tick)
        costs = BudgetCosts(
            budget_s=float(request.budget_s),
            n_train=len(request.train),
            n_val=len(request.val),
            n_test=len(request.test),
            source_pixels=int(np.median([w * h for w, h in sizes])) if sizes else 0,
            shorter_side=int(np.median([min(size) for size in sizes])) if sizes else 0,
            step_s_96=step_s_96,
            spent_s=progress.elapsed_s(),
            pretrained=pretrained,
            model_preference=request.model_preference,
        )
        recipe = plan_recipe(
            costs, seed=request.seed, threads=threads, architecture=request.architecture
        )
        recipe.augmentation, recipe.augmentation_flip = choice.preset, choice.flip
        recipe.augmentation_reason = choice.reason
        recipe.augmentation_why = dict(choice.why or {})
    preprocessing = Preprocessing(size=(recipe.resolution, recipe.resolution), mean=_MEAN, std=_STD)
    # all three splits' cache at once, before anything more is decoded
    count, side = len(request.train) + len(request.val) + len(request.test), recipe.resolution
    check_cache_fits(count * 3 * side * side, f"{count} images at {side} x {side} px")
    train = to_tensors(request.train, preprocessing, tick)
    val = to_tensors(request.val, preprocessing, tick)
    test = to_tensors(request.test, preprocessing, tick)
    del images
    for name, split in (("train", train), ("val", val)):
        if len(split) == 0:
            raise ValueError(f"{name}: no image could be decoded")
    progress.emit({"phase": "decode", "step": len(train) + len(val) + len(test)}, force=True)

    if recipe.class_weights is None:
        recipe.class_weights = [round(float(w), 4)
                                for w in _class_weights(train.labels, len(request.labels))]
    class_weights = torch.tensor(recipe.class_weights, dtype=torch.float32, device=device)
    transform = build_transform(AugmentationChoice(recipe.augmentation, recipe.augmentation_flip,
                                                   recipe.augmentation_reason))
    tail_s = recipe.planned.get("export_s", 1.0) + recipe.planned.get("final_s", 1.0)
    progress.tail_s = tail_s
    deadline = progress.started + request.budget_s - tail_s
    state = TrainingState()
    if recipe.head_epochs > 0:
        train_head(model, train, val, recipe, state, progress, preprocessing, class_weights,
                   deadline=None if request.recipe is not None else deadline)
    else:
        accuracy, loss, logits = evaluate(model, val, preprocessing)
        state.offer(model, "init", 0, accuracy, loss, len(val),
                    balanced_accuracy(logits, val.labels))
    torch.manual_seed(request.seed + 2)  # dropout masks and augmentation draws
    finetune(model, train, val, recipe, state, progress, deadline, preprocessing, transform,
             class_weights)
    if state.best_state is None:  # train_head and the "init" evaluation always offer a model
        raise RuntimeError("training kept no model state to restore")
    model.load_state_dict(state.best_state)
    return _finish(request, model, recipe, state, (train, val, test), preprocessing, progress,
                   out_dir, pretrained, weights_note, device_name(device))


def _report(data: ImageTensors, probabilities: np.ndarray, labels: list[str]) -> dict[str, Any]:
    predicted = probabilities.argmax(axis=1) if len(data) else np.zeros(0, np.int64)
    report = classification_report(
        data.labels.tolist(), predicted.tolist(), labels, data.sample_ids,
        probabilities=probabilities.max(axis=1).tolist() if len(data) else [],
    )
    report["predictions"] = [  # what the device should answer for each sample
        {"sample_id": sid, "predicted": int(p), "probability": float(row[p])}
        for sid, p, row in zip(data.sample_ids, predicted, probabilities, strict=True)
    ]
    return report


def _finish(
    request: TrainRequest,
    model: torch.nn.Module,
    recipe: Recipe,
    state: TrainingState,
    splits: tuple[ImageTensors, ImageTensors, ImageTensors],
    preprocessing: Preprocessing,
    progress: Progress,
    out_dir: Path,
    pretrained: bool,
    weights_note: str,
    device: str,
) -> TrainResult:
    train, val, test = splits
    progress.check()
    # the checkpoint, the export and its parity check on the CPU, as the device will run it
    model = model.to("cpu").to(memory_format=torch.contiguous_format).eval()
    checkpoint_path = out_dir / "checkpoint.pt"
    recipe_dict = recipe.to_dict()
    recipe_dict["device"] = device  # in the checkpoint's recipe too
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
    val_pixels = np.concatenate(list(normalised_batches(val, preprocessing)))
    parity, val_probabilities = compare_with_onnx(model, onnx_path, val_pixels, val.sample_ids)
    del val_pixels
    val_report = _report(val, val_probabilities, request.labels)
    if len(test):
        report = _report(test,
                         onnx_probabilities(onnx_path, normalised_batches(test, preprocessing)),
                         request.labels)
        report["split"] = "test"
    else:
        report = val_report
        report["split"] = "val"
    report["validation"] = {"accuracy": val_report["accuracy"],
                            "macro_f1": val_report["macro_f1"], "n": val_report["n"]}
    report["skipped_samples"] = train.skipped + val.skipped + test.skipped
    # judged on the training split: a test split leaves out classes too small for it
    counts = torch.bincount(train.labels, minlength=len(request.labels)).tolist()
    present = [c for c in counts if c > 0]
    report["train_class_counts"] = counts
    report["imbalanced"] = bool(present and max(present) >= 3 * min(present))
    # classes the model learned that the evaluated split holds no image of: its figures say
    # nothing about them (a one-class test split of a two-class model scores 100 % by answering
    # that class every time; seen in review)
    report["classes_not_evaluated"] = [row["label"] for row in report["per_class"]
                                       if row["support"] == 0 and counts[row["index"]] > 0]
    elapsed = progress.elapsed_s()
    recipe_dict.update(
        export_info,
        stopped_early=state.stopped_early,
        stop_reason=state.stop_reason,
        n_train=len(train),
        n_val=len(val),
        n_test=len(test),
    )
    metrics = {
        "evaluated_on": report["split"],
        # the headline's figures say nothing about these (shown beside them wherever they appear)
        "classes_not_evaluated": report["classes_not_evaluated"],
        "val_accuracy": val_report["accuracy"],
        "macro_f1": val_report["macro_f1"],
        "best_epoch": state.best_epoch,
        "best_phase": state.best_phase,
        "torch_val_accuracy": round(state.kept_accuracy, 4),
    }
    if len(test):
        metrics.update(test_accuracy=report["accuracy"], test_macro_f1=report["macro_f1"])
    progress.emit({"phase": "done", "accuracy": report["accuracy"], "split": report["split"],
                   "eta_s": 0}, force=True)
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
