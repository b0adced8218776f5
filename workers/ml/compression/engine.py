"""The compression search: make candidates one after another within a time budget, measure each
one's accuracy with onnxruntime on held-out images, and hand each to the caller as soon as it is
ready (so the caller can benchmark it on the device while the next one is made).

Order (most likely to help first on CPUs without INT8 dot-product instructions, where speed has
to come from fewer multiply-accumulates, docs/decisions/compression.md):

1. ``fp32``: the teacher after onnxruntime's offline graph optimisation: the reference.
2. ``int8``: the teacher quantized (static QDQ, per-channel, MinMax calibration on training
   images); ``int8-percentile`` when time allows.
3. ``pruned50``: half of every layer's channels removed, distilled from the teacher.
4. ``res<r>``: the teacher at ~70 % of its input side (half the FLOPs), distilled.
5. ``pruned30-res<r>``: both, for the largest speed-up.
6. ``<student>-int8`` for each student made: the smallest files.
7. ``fp16`` when the target has a GPU execution provider.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

from edge_agent.imaging import Preprocessing

from ..augmentation import AugmentationChoice, build_transform
from ..classification import available_threads
from ..data import ImageTensors, normalise, normalised_batches, to_tensors
from ..evaluation import classification_report
from ..export import compare_with_onnx, export_onnx, onnx_probabilities
from ..specs import TrainingCancelled
from .common import Clock as _Clock
from .common import fp16_candidate, fp16_warning, held_out_warnings
from .common import ignore as _ignore
from .common import judge as _judge
from .common import never as _never
from .common import no_progress as _no_progress
from .graph import (GPU_PROVIDERS, MIN_CALIBRATION_IMAGES, onnx_info, optimise_fp32, quantize_int8,
                    tidy_graph)
from .specs import Candidate, CompressionCancelled, CompressRequest, CompressResult
from .students import (DistillConfig, count_macs, distill, load_teacher_module, prune,
                       student_resolution)

__all__ = ["compress_classifier"]

log = logging.getLogger(__name__)

#: Most training images used to calibrate INT8 (onnxruntime's examples use 100-500).
CALIBRATION_IMAGES = 200
#: Seconds kept back at the end of the budget for evaluating and quantizing the last student.
TAIL_S = 15.0


class _Splits:
    """The request's images decoded once per resolution (uint8 tensors)."""

    def __init__(self, request: CompressRequest, base: Preprocessing, clock: _Clock) -> None:
        self.request, self.base, self.clock = request, base, clock
        self._cache: dict[int, dict[str, ImageTensors]] = {}

    def preprocessing(self, resolution: int) -> Preprocessing:
        return Preprocessing.from_dict({**self.base.to_dict(), "size": [resolution, resolution]})

    def at(self, resolution: int) -> dict[str, ImageTensors]:
        if resolution not in self._cache:
            p = self.preprocessing(resolution)

            def tick() -> bool:
                self.clock.check()
                return False

            self._cache[resolution] = {name: to_tensors(refs, p, tick) for name, refs in
                                       (("train", self.request.train), ("val", self.request.val),
                                        ("test", self.request.test))}
        return self._cache[resolution]


def _evaluate(candidate: Candidate, splits: _Splits, labels: list[str],
              reference: Candidate | None, budget_pt: float) -> None:
    """Accuracy of ``candidate.onnx_path`` with onnxruntime on test (else val) and val."""
    path = candidate.onnx_path
    if path is None:
        raise ValueError(f"candidate {candidate.key}: no ONNX file to evaluate")
    size = int(candidate.preprocessing["size"][0])
    data = splits.at(size)
    p = splits.preprocessing(size)
    val = onnx_probabilities(path, normalised_batches(data["val"], p))
    candidate.val_accuracy = _accuracy(val, data["val"])
    held_out = data["test"] if len(data["test"]) else data["val"]
    candidate.evaluated_on = "test" if len(data["test"]) else "val"
    probabilities = val if held_out is data["val"] else \
        onnx_probabilities(path, normalised_batches(held_out, p))
    report = classification_report(held_out.labels.tolist(),
                                   probabilities.argmax(1).tolist() if len(held_out) else [],
                                   labels, held_out.sample_ids)
    candidate.accuracy = float(report["accuracy"])
    candidate.macro_f1 = float(report["macro_f1"])
    candidate.n_evaluated = len(held_out)
    candidate.size_bytes = path.stat().st_size
    _judge(candidate, reference, budget_pt)


def _accuracy(probabilities: np.ndarray, data: ImageTensors) -> float:
    if not len(data):
        return 0.0
    return float((probabilities.argmax(1) == data.labels.numpy()).mean())


def _calibration_images(data: ImageTensors, p: Preprocessing, seed: int) -> np.ndarray:
    """Up to :data:`CALIBRATION_IMAGES` training images, every class represented in proportion
    (a fixed random draw of the seed)."""
    n = len(data)
    order = torch.randperm(n, generator=torch.Generator().manual_seed(seed))[:CALIBRATION_IMAGES]
    order = order.sort().values
    return normalise(data.images[order], p).contiguous().numpy()


def compress_classifier(request: CompressRequest, *,
                        on_candidate: Callable[[Candidate], None] = _ignore,
                        on_progress: Callable[[dict[str, Any]], None] = _no_progress,
                        should_stop: Callable[[], bool] = _never) -> CompressResult:
    """Make and evaluate compression candidates of ``request.teacher`` within
    ``request.budget_s`` seconds; each ready or failed candidate is passed to ``on_candidate``
    at once (the fp32 reference first). Files go to ``request.out_dir/<key>/model.onnx``.

    ``on_progress`` receives ``{"phase": "decode"|"reference"|"int8"|"student"|"done",
    "candidate", "epoch", "val_accuracy", "elapsed_s", "fraction"}``.

    Raises:
        CompressionCancelled: ``should_stop()`` returned True.
        ValueError: no labels, an empty validation split, or a teacher file that onnxruntime
            cannot load.
    """
    if len(request.teacher.labels) < 2:
        raise ValueError("teacher.labels: a classifier has at least 2 classes")
    if not request.val:
        raise ValueError("val: at least one validation image is needed")
    clock = _Clock(float(request.budget_s), should_stop, on_progress)
    out = Path(request.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    previous_threads = torch.get_num_threads()
    torch.set_num_threads(available_threads())
    torch.set_flush_denormal(True)
    try:
        return _compress(request, clock, out, on_candidate)
    except TrainingCancelled:
        raise CompressionCancelled() from None
    finally:
        torch.set_num_threads(previous_threads)
        torch.set_flush_denormal(False)


def _compress(request: CompressRequest, clock: _Clock, out: Path,
              on_candidate: Callable[[Candidate], None]) -> CompressResult:
    labels = list(request.teacher.labels)
    base = Preprocessing.from_dict(request.teacher.preprocessing)
    teacher_size = int(base.size[0])
    splits = _Splits(request, base, clock)
    result = CompressResult(candidates=[])
    budget_pt = float(request.accuracy_budget_pt)

    def add(candidate: Candidate, started: float) -> Candidate:
        candidate.elapsed_s = round(time.monotonic() - started, 2)
        result.candidates.append(candidate)
        on_candidate(candidate)
        return candidate

    clock.emit({"phase": "decode"})
    data = splits.at(teacher_size)
    result.warnings.extend(held_out_warnings(len(data["test"]), len(data["val"]),
                                             float(request.accuracy_budget_pt)))
    # 1. the reference
    started = time.monotonic()
    clock.emit({"phase": "reference", "candidate": "fp32"})
    reference_path = out / "fp32" / "model.onnx"
    reference = Candidate(key="fp32", method="fp32", params={"graph_optimization": "basic"},
                          preprocessing=base.to_dict(), onnx_path=reference_path)
    reference_path.parent.mkdir(parents=True, exist_ok=True)
    try:
        optimise_fp32(request.teacher.onnx_path, reference_path)
    except Exception as error:  # noqa: BLE001 - onnxruntime raises its own types
        raise ValueError(f"teacher: onnxruntime cannot load the model: {error}") from error
    reference.onnx = onnx_info(reference_path)
    _evaluate(reference, splits, labels, None, budget_pt)
    add(reference, started)

    teacher_module: torch.nn.Module | None = None
    teacher_recipe: dict[str, Any] = {}
    if request.teacher.checkpoint_path and Path(request.teacher.checkpoint_path).is_file():
        try:
            module, recipe = load_teacher_module(Path(request.teacher.checkpoint_path),
                                                 len(labels))
            reference.macs = count_macs(module, teacher_size)
        except (ValueError, OSError, RuntimeError) as error:
            result.warnings.append(f"the training checkpoint cannot be read ({error}): no "
                                   "distilled students, only graph-level candidates")
        else:  # only a teacher that loaded AND ran (count_macs) is distilled, as warned above
            teacher_module, teacher_recipe = module, recipe
    elif {"resolution", "pruning"} & set(request.methods):
        result.warnings.append("this model has no training checkpoint: no distilled students, "
                               "only graph-level candidates")

    calibration: np.ndarray | None = None
    n_classes_train = int(torch.unique(data["train"].labels).numel()) if len(data["train"]) else 0
    if "int8" in request.methods:
        if len(data["train"]) < MIN_CALIBRATION_IMAGES:
            result.warnings.append(
                f"INT8 not attempted: {len(data['train'])} training images to calibrate on, at "
                f"least {MIN_CALIBRATION_IMAGES} are needed")
        else:
            if n_classes_train < 2:
                result.warnings.append("the calibration images are all of one class: INT8 "
                                       "ranges may not fit the others (measured below)")
            calibration = _calibration_images(data["train"], base, request.seed)

    def int8_of(parent: Candidate, method: str = "minmax") -> None:
        source = parent.onnx_path
        if calibration is None or source is None or parent.status != "ready" or clock.left() < 5:
            return
        key = f"{parent.key}-int8" if parent.key != "fp32" else "int8"
        if method != "minmax":
            key = f"{key}-{method}"
        started = time.monotonic()
        clock.emit({"phase": "int8", "candidate": key})
        size = int(parent.preprocessing["size"][0])
        images = calibration if size == teacher_size else _calibration_images(
            splits.at(size)["train"], splits.preprocessing(size), request.seed)
        target = out / key / "model.onnx"
        candidate = Candidate(key=key, method="int8", parent=parent.key,
                              preprocessing=dict(parent.preprocessing),
                              onnx_path=target, macs=parent.macs)
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            candidate.params = {**parent.params, **quantize_int8(source, target, images,
                                                                 method=method)}
            candidate.onnx = onnx_info(target)
            _evaluate(candidate, splits, labels, reference, budget_pt)
        except (CompressionCancelled, TrainingCancelled):
            raise
        except Exception as error:  # noqa: BLE001 - a failed candidate never ends the job
            log.exception("INT8 of %s failed", parent.key)
            candidate.status, candidate.reason = "failed", f"quantization failed: {error}"
        add(candidate, started)

    int8_of(reference)

    students: list[tuple[str, float, int]] = []  # (key, pruning ratio, resolution)
    if teacher_module is not None:
        small = student_resolution(teacher_size, 0.7)
        if "pruning" in request.methods:
            students.append(("pruned50", 0.5, teacher_size))
        if "resolution" in request.methods and small < teacher_size:
            students.append((f"res{small}", 0.0, small))
        if {"pruning", "resolution"} <= set(request.methods) and small < teacher_size:
            students.append((f"pruned30-res{small}", 0.3, small))
    transform = _teacher_augmentation(teacher_recipe, request.allow_flips) if students else None
    made: list[Candidate] = []
    for index, (key, ratio, size) in enumerate(students):
        left = clock.left() - TAIL_S
        share = left / (len(students) - index)
        if share < 20:
            result.candidates.append(Candidate(key=key, method="distilled", status="skipped",
                                               reason="not enough time left in the budget"))
            on_candidate(result.candidates[-1])
            continue
        if teacher_module is None:  # students are only planned with a teacher (above)
            raise RuntimeError(f"student {key}: no teacher module to distil from")
        started = time.monotonic()
        clock.emit({"phase": "student", "candidate": key})
        candidate = _student(key, ratio, size, teacher_module, transform, splits, request,
                             clock, out, deadline=time.monotonic() + share)
        if candidate.status == "ready":
            _evaluate(candidate, splits, labels, reference, budget_pt)
            made.append(candidate)
        add(candidate, started)
    for student in made:
        int8_of(student)
    if "int8" in request.methods and clock.left() > 30:
        int8_of(reference, "percentile")
    no_fp16 = fp16_warning(tuple(request.methods), request.providers)
    if no_fp16:
        result.warnings.append(no_fp16)
    if "fp16" in request.methods and GPU_PROVIDERS & set(request.providers):
        started = time.monotonic()
        add(fp16_candidate(reference, out, request.providers,
                           lambda c: _evaluate(c, splits, labels, reference, budget_pt)), started)
    result.elapsed_s = round(clock.elapsed(), 2)
    clock.emit({"phase": "done"})
    return result


def _teacher_augmentation(recipe: dict[str, Any], allow_flips: bool) -> Any:
    """The teacher's own training augmentation (its checkpoint's ``recipe``), flips only where
    the teacher was flipped and the request allows; ``light`` without flips when not recorded."""
    preset = str(recipe.get("augmentation") or "light")
    flip = bool(recipe.get("augmentation_flip")) and allow_flips
    return build_transform(AugmentationChoice(preset, flip, "the teacher's augmentation"))


def _student(key: str, ratio: float, size: int, teacher: torch.nn.Module, transform: Any,
             splits: _Splits, request: CompressRequest, clock: _Clock, out: Path,
             deadline: float) -> Candidate:
    import copy

    p = splits.preprocessing(size)
    target = out / key / "model.onnx"
    candidate = Candidate(key=key, method="distilled", parent="fp32", preprocessing=p.to_dict(),
                          onnx_path=target)
    target.parent.mkdir(parents=True, exist_ok=True)
    student = copy.deepcopy(teacher)
    if ratio:
        prune(student, ratio, size)
    candidate.macs = count_macs(student, size)
    data = splits.at(size)
    config = DistillConfig(seed=request.seed, lr=2e-3 if ratio else 5e-4)
    candidate.params = {"resolution": size, "pruning_ratio": ratio,
                        "pruning": "L1 magnitude, channels rounded to 8" if ratio else None,
                        "distillation": {"temperature": config.temperature,
                                         "alpha": config.alpha, "lr": config.lr,
                                         "teacher": "fp32"}}

    def on_epoch(event: dict[str, Any]) -> None:
        clock.emit({"phase": "student", "candidate": key, **event})

    try:
        teacher_size = int(splits.base.size[0])
        candidate.history = distill(student, teacher, splits.at(teacher_size)["train"],
                                    data["val"], splits.base, p, transform=transform,
                                    deadline=deadline, config=config,
                                    should_stop=lambda: clock._should_stop(), on_epoch=on_epoch)
        candidate.params["epochs"] = len(candidate.history) - 1
        student = student.to(memory_format=torch.contiguous_format).eval()
        export_onnx(student, target, (size, size), "torchscript")
        tidy_graph(target)
        pixels = np.concatenate(list(normalised_batches(data["val"], p)))
        parity, _ = compare_with_onnx(student, target, pixels, data["val"].sample_ids)
        if not parity["passed"]:
            candidate.status = "failed"
            candidate.reason = (f"export gate failed: torch and onnxruntime disagree "
                                f"(max |Δprob| {parity['max_abs_diff']:.2g})")
        candidate.onnx = onnx_info(target)
    except (CompressionCancelled, TrainingCancelled):
        raise
    except Exception as error:  # noqa: BLE001 - a failed candidate never ends the job
        log.exception("student %s failed", key)
        candidate.status, candidate.reason = "failed", f"{type(error).__name__}: {error}"
    return candidate
