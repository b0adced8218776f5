"""Train an object detector within a wall-clock budget, evaluate it, export it, gate the export.

The plan, like classification's (:mod:`workers.ml.classification`): decode once, measure the
seconds of one training step on this machine, plan the steps that fit the budget after the
export, parity check and evaluation (their cost estimated from the image counts), and re-plan
at each validation from the measured pace. The learning rate warms up linearly and decays on a
cosine (:func:`workers.ml.schedule.learning_rate_factor`) to zero at the (re-planned) end.

Model selection uses the validation split only: after each validation round the model is kept
when its validation mAP@0.5 is at least the best so far (ties go to the later, more trained
model); the test split is evaluated once, with the exported ONNX model, for the report. The
serving score threshold is the one with the best F1 on the validation split
(:func:`workers.ml.detection.evaluation.best_f1_threshold`).
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from edge_agent.detection import DetectionSettings, detect
from edge_agent.imaging import Preprocessing

from ..classification import available_threads
from ..devices import device_name, training_device, training_on
from ..schedule import learning_rate_factor
from ..specs import TrainResult, TrainingCancelled
from ..data import check_cache_fits
from ..state import Progress
from ..weights import load_pretrained_state_dict
from .data import (BoxSample, DetectionData, Geometry, augmented, cache_bytes, choose_geometry,
                   load_samples, mosaic, random_window, training_transform)
from .evaluation import ImageResult, best_f1_threshold, detection_report, mean_ap
from .export import check_box_parity, export_detector, onnx_session, torch_runner
from .model import ExportedDetector, build_detector

__all__ = ["DetectRequest", "DetectResult", "train_detector"]

#: evaluation keeps every detection above this score (the whole precision-recall curve)
EVAL_SCORE_THRESHOLD = 0.05
BATCH_SIZE = 4
#: seconds kept for the ONNX export and its checks besides the inference they run (the
#: TorchScript exporter took 1.4-2.1 s for the FCOS graph on a slow 2-core host; 12 s were kept
#: while dynamo exported first, which took 15-34 s there)
EXPORT_RESERVE_S = 6.0
#: validation rounds planned over a run (each costs one pass over the validation images)
VALIDATIONS = 6
#: exponential moving average of the weights, validated and exported instead of the last
#: step's (YOLOv5/v8's ModelEMA; torch.optim.swa_utils), its decay ramped up to this value
#: (:func:`ema_decay`); None (the default) trains without it. Measured on seeds/trees, 120 s
#: (~170 steps, the CI test's run), test mAP@0.5: without 0.163, ramped 0.99 0.096 (seed 1);
#: a fixed 0.99 from the first step 0.018-0.026 (seed 0). Our CPU runs are hundreds of steps,
#: too short for an average to help; YOLOv5's own ramp (tau 2000 updates) barely averages there.
EMA_DECAY: float | None = None


def ema_decay(updates: int, decay: float) -> float:
    """The average's decay after ``updates`` updates: ``min(decay, (1 + n) / (10 + n))``,
    TensorFlow's ``tf.train.ExponentialMovingAverage`` with ``num_updates`` (YOLOv5's ModelEMA
    ramps the same way with an exponential). A fixed 0.99 from the first step kept 0.99 ** 172
    = 18 % of the barely trained weights of step 1 in a 173-step run (the trees test's 120 s),
    whose mAP@0.5 fell to 0.02-0.03; the ramp reaches 0.99 after 890 updates."""
    return min(decay, (1 + updates) / (10 + updates))


def _ema_multi_avg_fn(decay: float) -> Any:
    """``multi_avg_fn`` for :class:`torch.optim.swa_utils.AveragedModel`: the average moves
    towards the model by ``1 - ema_decay(n, decay)`` (``n`` the updates so far)."""

    @torch.no_grad()
    def update(averaged: list[torch.Tensor], current: list[torch.Tensor],
               n_averaged: torch.Tensor) -> None:
        weight = 1.0 - ema_decay(int(n_averaged.item()), decay)
        if torch.is_floating_point(averaged[0]):
            torch._foreach_lerp_(averaged, current, weight)
        else:  # integer buffers (batch norm's num_batches_tracked)
            for mean, value in zip(averaged, current, strict=True):
                mean.copy_(value)

    return update


@dataclass
class DetectRequest:
    """What to train. ``budget_s``: wall-clock seconds for everything (decode, training,
    export, parity, evaluation). ``test`` may be empty (the report is then on ``val``).
    ``input_size``: None chooses it from the data (:func:`workers.ml.detection.data.
    choose_geometry`). ``flips``: False never mirrors the images (left and right matter);
    ``augmentation``: its strength (``auto``, ``none``, ``light``, ``strong``:
    :func:`workers.ml.detection.data.training_transform`). ``pretrained``: None uses the
    ImageNet backbone when it is in the torch hub cache, False never loads it. ``device``:
    ``auto``, ``cpu``, ``cuda`` or ``cuda:N`` (:func:`workers.ml.devices.training_device`);
    None reads the worker's ``SAMPAN_TRAINING_DEVICE``."""

    train: list[BoxSample]
    val: list[BoxSample]
    labels: list[str]
    out_dir: Path
    budget_s: float
    test: list[BoxSample] = field(default_factory=list)
    seed: int = 0
    input_size: int | None = None
    flips: bool = True
    augmentation: str = "auto"
    pretrained: bool | None = None
    lr: float = 5e-3
    device: str | None = None


@dataclass
class DetectResult(TrainResult):
    """What training produced: :class:`workers.ml.specs.TrainResult`'s fields (paths inside
    ``out_dir``), read for a detector: ``preprocessing`` the manifest's letterbox preprocessing;
    ``metrics`` ``evaluated_on``, ``val_map50``, ``val_map``, and ``test_map50``, ``test_map``
    with a test split; ``report`` :func:`detection_report` of the exported model; ``parity``
    :func:`check_box_parity` (register only when ``passed``). Added: ``detection``, the
    :class:`edge_agent.detection.DetectionSettings` as a dict."""

    detection: dict[str, Any] = field(default_factory=dict)


def _image_sizes(samples: list[BoxSample]) -> list[tuple[int, int]]:
    """(width, height) of the upright images, from their headers (EXIF orientations 5-8 swap
    the sides); unreadable files are left out (decoding reports them)."""
    from PIL import Image

    sizes = []
    for sample in samples:
        try:
            with Image.open(sample.path) as image:
                orientation = image.getexif().get(0x0112, 1)
                size = image.size
            sizes.append(size[::-1] if orientation in (5, 6, 7, 8) else size)
        except (OSError, ValueError):
            continue
    return sizes


#: share of training images that are a mosaic of four (``data.mosaic``), and the share of the
#: planned steps after which mosaics stop so that the last steps see whole images (YOLOv8's
#: ``close_mosaic``). Measured on the trees (300 s, seeds 0 and 1): val mAP@0.5 0.691 / 0.671
#: with mosaics against 0.661 / 0.650 without (test 0.438 / 0.514 against 0.483 / 0.414).
MOSAIC_P = 0.5
MOSAIC_CLOSE = 0.9


def _batch(data: DetectionData, geometry: Geometry, transform: Any,
           generator: torch.Generator, mosaic_p: float = 0.0,
           fill: tuple[int, ...] = (0, 0, 0)
           ) -> tuple[list[torch.Tensor], list[dict[str, torch.Tensor]]]:
    """BATCH_SIZE training images and targets: each a random image (a random window of it when
    tiled), or with probability ``mosaic_p`` (untiled runs only) a mosaic of it and three
    others on ``fill``, then ``transform``."""
    images, targets = [], []
    for index in torch.randint(0, len(data), (BATCH_SIZE,), generator=generator).tolist():
        if (geometry.tile is None and len(data) > 1 and mosaic_p > 0
                and float(torch.rand((), generator=generator)) < mosaic_p):
            others = torch.randint(0, len(data), (3,), generator=generator).tolist()
            image, boxes, classes = mosaic(data, [index, *others], geometry.input_size, fill,
                                           generator)
        elif geometry.tile is not None:
            image, boxes, classes = random_window(data, index, geometry.tile.size, generator)
        else:
            image, boxes, classes = data.images[index], data.boxes[index], data.classes[index]
        image, target = augmented(image, boxes, classes, transform)
        images.append(image)
        targets.append(target)
    return images, targets


_CPU = torch.device("cpu")


def _optimizer(model: torch.nn.Module, lr: float) -> torch.optim.Optimizer:
    """AdamW: the pretrained backbone at lr / 4, the new pyramid and head at lr; no weight
    decay on norms and biases (torchvision's detection references)."""
    groups: dict[tuple[bool, bool], list[torch.nn.Parameter]] = {}
    for name, parameter in model.named_parameters():
        if parameter.requires_grad:
            groups.setdefault((name.startswith("backbone.body"), parameter.ndim <= 1),
                              []).append(parameter)
    return torch.optim.AdamW([
        {"params": params, "base_lr": lr / 4 if is_body else lr,
         "weight_decay": 0.0 if no_decay else 1e-4}
        for (is_body, no_decay), params in sorted(groups.items())], lr=lr)


def _train_step(model: torch.nn.Module, optimizer: torch.optim.Optimizer,
                images: list[torch.Tensor], targets: list[dict[str, torch.Tensor]],
                device: torch.device = _CPU) -> dict[str, float]:
    """One optimiser step on a batch made on the CPU, moved to ``device`` (the model's). The
    losses come back as floats, which waits for the device: a step's wall time is its own."""
    model.train()
    if device.type != "cpu":
        images = [image.to(device, non_blocking=True) for image in images]
        targets = [{k: v.to(device, non_blocking=True) for k, v in t.items()} for t in targets]
    losses = model(images, targets)
    loss = sum(losses.values())
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 10.0)
    optimizer.step()
    return {k: float(v.detach()) for k, v in losses.items()}


def _results(run: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]],
             samples: list[BoxSample], data: DetectionData, preprocessing: Preprocessing,
             settings: DetectionSettings, progress: Progress | None) -> list[ImageResult]:
    """Detections on every image of a split, in the image's own pixels, with its true boxes
    (from the request: the stored boxes are scaled)."""
    from edge_agent.imaging import decode_image

    by_id = {s.sample_id: s for s in samples}
    results = []
    for sample_id in data.sample_ids:
        if progress is not None:
            progress.check()
        sample = by_id[sample_id]
        image = decode_image(Path(sample.path).read_bytes())
        found = detect(image, run, preprocessing, settings, EVAL_SCORE_THRESHOLD)
        true = np.asarray([b[:4] for b in sample.boxes], dtype=np.float64).reshape(-1, 4)
        true[:, 0::2] = true[:, 0::2].clip(0, image.width)
        true[:, 1::2] = true[:, 1::2].clip(0, image.height)
        classes = np.asarray([b[4] for b in sample.boxes], dtype=np.int64)
        keep = (true[:, 2] - true[:, 0] >= 1) & (true[:, 3] - true[:, 1] >= 1)
        results.append(ImageResult(sample_id, image.width, image.height, true[keep],
                                   classes[keep], found.boxes, found.scores, found.classes))
    return results


def _parity_batches(data: DetectionData, geometry: Geometry, preprocessing: Preprocessing
                    ) -> list[np.ndarray]:
    """The model inputs of the validation images as the device makes them: each letterboxed
    image, or with tiling each image's first 4 windows (:func:`edge_agent.detection.
    tile_windows`) letterboxed. (1, 3, S, S) float32 each."""
    from PIL import Image

    from edge_agent.detection import tile_windows
    from edge_agent.imaging import preprocess

    batches = []
    for image in data.images:
        pixels = image.permute(1, 2, 0).numpy()
        if geometry.tile is None:
            crops = [pixels]
        else:
            height, width = pixels.shape[:2]
            crops = [pixels[y0:y1, x0:x1]
                     for x0, y0, x1, y1 in tile_windows(width, height, geometry.tile)[:4]]
        batches += [preprocess(Image.fromarray(np.ascontiguousarray(c)), preprocessing)[None]
                    for c in crops]
    return batches


def train_detector(request: DetectRequest, *,
                   on_progress: Callable[[dict[str, Any]], None] = lambda _: None,
                   should_stop: Callable[[], bool] = lambda: False) -> DetectResult:
    """Train, validate, export and evaluate a detector within ``request.budget_s`` seconds.

    Raises TrainingCancelled when ``should_stop()`` turns True (nothing exported), ValueError
    when the training or validation split has no decodable image, or when ``request.device``
    (or ``SAMPAN_TRAINING_DEVICE``) names a device this worker does not have."""
    device = training_device(request.device)
    with training_on(device):
        return _train_detector(request, device, on_progress, should_stop)


def _train_detector(request: DetectRequest, device: torch.device,
                    on_progress: Callable[[dict[str, Any]], None],
                    should_stop: Callable[[], bool]) -> DetectResult:
    started = time.monotonic()
    progress = Progress(on_progress, should_stop, started, request.budget_s)
    deadline = started + request.budget_s
    torch.manual_seed(request.seed)
    out_dir = Path(request.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    num_classes = len(request.labels)
    progress.emit({"phase": "decode", "message": "reading images"}, force=True)

    sizes = _image_sizes(request.train)
    sides = [math.sqrt(max(0.0, (b[2] - b[0]) * (b[3] - b[1])))
             for s in request.train for b in s.boxes]
    geometry = choose_geometry(sizes, sides, request.input_size)
    size = geometry.input_size
    preprocessing = Preprocessing(size=(size, size), resize="letterbox")
    # train and val stay decoded while test is evaluated: the three at once, before decoding
    count = len(request.train) + len(request.val) + len(request.test)
    check_cache_fits(cache_bytes(sizes + _image_sizes(request.val) + _image_sizes(request.test),
                                 geometry), f"{count} images ({geometry.reason})")
    train = load_samples(request.train, geometry, preprocessing, num_classes, should_stop)
    val = load_samples(request.val, geometry, preprocessing, num_classes, should_stop)
    if not len(train) or not len(val):
        raise ValueError("the training and validation splits need at least one readable image "
                         "each")

    if request.pretrained is False:
        state, weights_note = None, "random initialisation (pretrained weights not requested)"
    else:
        state, weights_note = load_pretrained_state_dict("mobilenet_v2")
    # channels_last: oneDNN's convolutions ran a training step 15-19 % faster (0.57-0.62 vs
    # 0.70-0.74 s at 384 px, batch 4, 2 threads); the export gets the default layout back
    model = build_detector(num_classes, size, state).to(device).to(
        memory_format=torch.channels_last)
    transform = training_transform(size, preprocessing.mean, request.flips,
                                   request.augmentation)
    # mosaics are augmentation: none when the pixels are to stay as they are, none for tiles
    mosaic_share = 0.0 if request.augmentation == "none" or geometry.tile is not None \
        else MOSAIC_P
    fill = tuple(int(round(255 * m)) for m in preprocessing.mean)
    optimizer = _optimizer(model, request.lr)
    # the average starts as a copy of the model and follows each step; it is what is
    # validated, kept and exported
    ema = (None if EMA_DECAY is None else torch.optim.swa_utils.AveragedModel(
        model, multi_avg_fn=_ema_multi_avg_fn(EMA_DECAY), use_buffers=True))
    generator = torch.Generator().manual_seed(request.seed)
    settings = DetectionSettings(score_threshold=EVAL_SCORE_THRESHOLD, tile=geometry.tile)

    # measure (lr 0: the weights do not move before the plan): 1 thread, 1 warm-up step in
    # which oneDNN builds its kernels, then the median of 2; then all threads, kept when
    # faster. With other processes busy, 2 OpenMP threads spin-waiting on each other were
    # 5-20x slower than 1 (classification measured it; here a run planned 12 steps of 7.9 s
    # where 1 thread took ~1 s), so the count is measured, never assumed.
    for group in optimizer.param_groups:
        group["lr"] = 0.0

    def timed(count: int, steps: int) -> list[float]:
        torch.set_num_threads(count)
        out = []
        for _ in range(steps):
            progress.check()
            began = time.monotonic()
            _train_step(model, optimizer, *_batch(train, geometry, transform, generator), device)
            out.append(time.monotonic() - began)
        return out

    step_s, threads = statistics.median(timed(1, 3)[1:]), 1
    if available_threads() > 1:
        many = statistics.median(timed(available_threads(), 2))
        if many < step_s / 1.1:
            step_s, threads = many, available_threads()
    torch.set_num_threads(threads)
    tiles_per_image = 1.0
    if geometry.tile is not None:
        from edge_agent.detection import tile_windows
        tiles_per_image = statistics.mean(
            len(tile_windows(w, h, geometry.tile)) for w, h in sizes) if sizes else 1.0
    # inference of one letterboxed image ~ a third of a training step per image (forward only)
    infer_s = step_s / BATCH_SIZE / 2.0 * tiles_per_image
    val_s = infer_s * len(val) + 0.2
    # export, parity (2 batches), the exported model on validation and on test
    tail_s = EXPORT_RESERVE_S + infer_s * (len(val) + len(request.test) + 2)
    train_s = deadline - time.monotonic() - tail_s
    planned = max(0, int((train_s - VALIDATIONS * val_s) / step_s))
    total = planned
    warmup = max(1, min(50, total // 20))
    every = max(1, total // VALIDATIONS)
    recipe: dict[str, Any] = {
        "task": "object_detection", "architecture": "fcos_mobilenet_v2_fpn",
        "input_size": size, "geometry": geometry.reason,
        "tile": None if geometry.tile is None else {"size": geometry.tile.size,
                                                    "overlap": geometry.tile.overlap},
        "batch_size": BATCH_SIZE, "lr": request.lr, "optimizer": "adamw", "threads": threads,
        "device": device_name(device),
        "ema_decay": EMA_DECAY,
        "flips": request.flips,
        "augmentation": request.augmentation,
        "mosaic": mosaic_share, "mosaic_close": MOSAIC_CLOSE,
        # the checkpoint's backbone convolutions carry norm_scale / norm_shift buffers
        "folded_norms": state is not None,
        "planned_steps": planned,
        "step_s": round(step_s, 3), "val_s": round(val_s, 3), "tail_s": round(tail_s, 2),
        "seed": request.seed, "warmup_steps": warmup, "replans": [[0, total]]}

    history: list[dict[str, Any]] = []
    best_state: dict[str, torch.Tensor] | None = None
    best_results: list[ImageResult] = []
    best_map50, best_step = -1.0, 0
    step = 0
    running: dict[str, float] = {}
    step_times: list[float] = []
    stop_reason = None

    def validate() -> None:
        nonlocal best_state, best_results, best_map50, best_step, val_s, tail_s
        evaluated = model if ema is None else ema.module
        evaluated.eval()
        graph = ExportedDetector(evaluated, size).to(device).eval()
        began = time.monotonic()
        results = _results(torch_runner(graph, device), request.val, val, preprocessing, settings,
                           progress)
        map50, map_ = mean_ap(results, num_classes)
        if map50 >= best_map50:
            # kept on the CPU: a GPU's memory holds the training, not old copies of it
            best_state = {k: v.detach().to(_CPU, copy=True)
                          for k, v in evaluated.state_dict().items()}
            best_results, best_map50, best_step = results, map50, step
        entry = {"phase": "train", "step": step, "steps": total,
                 "loss": round(sum(running.values()), 4) if running else None,
                 "losses": {k: round(v, 4) for k, v in running.items()},
                 "val_map50": round(map50, 4), "val_map": round(map_, 4),
                 "elapsed_s": round(progress.elapsed_s(), 2),
                 "val_s": round(time.monotonic() - began, 2)}
        # inference measured: a slower validation than planned means a slower tail too (the
        # export's parity and the final evaluations are the same inference), so both grow
        slower = (time.monotonic() - began) / max(val_s, 1e-6)
        if slower > 1.0:
            tail_s = EXPORT_RESERVE_S + (tail_s - EXPORT_RESERVE_S) * slower
            val_s *= slower
        history.append(entry)
        progress.emit(entry, force=True)

    while step < total:
        progress.check()
        step_est = statistics.mean(step_times[-20:]) if step_times else step_s
        if time.monotonic() + step_est + val_s + tail_s > deadline:
            if total - step > max(2, 0.05 * total):
                stop_reason = "deadline"
            break
        began = time.monotonic()
        factor = learning_rate_factor(step, total, warmup)
        for group in optimizer.param_groups:
            group["lr"] = group["base_lr"] * factor
        mosaic_p = mosaic_share if step < MOSAIC_CLOSE * total else 0.0
        losses = _train_step(model, optimizer, *_batch(train, geometry, transform, generator,
                                                        mosaic_p, fill), device)
        if ema is not None:
            ema.update_parameters(model)
        running = {k: 0.9 * running.get(k, v) + 0.1 * v for k, v in losses.items()}
        step += 1
        step_times.append(time.monotonic() - began)
        progress.emit({"phase": "train", "step": step, "steps": total,
                       "loss": round(sum(running.values()), 4)})
        if step % every == 0 and step < total:
            validate()
            # re-plan from the measured pace: as many steps as fit before the deadline
            pace = statistics.median(step_times[-100:])
            left = deadline - time.monotonic() - tail_s - val_s
            rounds_left = max(1, (total - step) // every)
            fits = step + max(0, int((left - rounds_left * val_s) / pace))
            new_total = max(step, min(fits, int(total * 1.3)))
            if new_total < total or new_total > total * 1.05:
                total = new_total
                recipe["replans"].append([step, total])
    validate()
    recipe.update({"steps_done": step, "best_step": best_step, "stop_reason": stop_reason,
                   "train_s": round(progress.elapsed_s(), 2)})
    if best_state is not None:
        model.load_state_dict(best_state)
    # the export, its parity gate and the evaluations run on the CPU, as the device will
    model = model.to(_CPU).to(memory_format=torch.contiguous_format)
    model.eval()
    graph = ExportedDetector(model, size).eval()
    checkpoint_path = out_dir / "checkpoint.pt"
    torch.save({"state_dict": model.state_dict(), "labels": request.labels, "input_size": size,
                "recipe": recipe}, checkpoint_path)

    # the serving threshold from the validation split (best F1), then export and gate
    progress.emit({"phase": "export", "message": "exporting to ONNX"}, force=True)
    # the kept weights' validation detections were computed when they were kept
    threshold, val_f1 = best_f1_threshold(best_results)
    serving = DetectionSettings(score_threshold=threshold, tile=geometry.tile)
    onnx_path = out_dir / "model.onnx"
    export = export_detector(graph, onnx_path, size)
    batches = _parity_batches(val, geometry, preprocessing)
    parity = check_box_parity(graph, onnx_path, batches, serving)
    progress.emit({"phase": "evaluate", "message": "evaluating the exported model"}, force=True)
    session = onnx_session(onnx_path, threads)

    def run_onnx(batch: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        boxes, scores = session.run(["boxes", "scores"], {"images": batch})
        return boxes, scores

    onnx_val = _results(run_onnx, request.val, val, preprocessing, settings, progress)
    val_map50, val_map = mean_ap(onnx_val, num_classes)
    metrics: dict[str, Any] = {"val_map50": round(val_map50, 4), "val_map": round(val_map, 4),
                               "val_f1": round(val_f1, 4), "score_threshold": threshold,
                               "best_step": best_step}
    evaluated, split = onnx_val, "val"
    if request.test:
        test = load_samples(request.test, geometry, preprocessing, num_classes, should_stop)
        if len(test):
            evaluated, split = _results(run_onnx, request.test, test, preprocessing, settings,
                                        progress), "test"
            metrics["test_map50"], metrics["test_map"] = (
                round(v, 4) for v in mean_ap(evaluated, num_classes))
            train.skipped.extend(test.skipped)
    metrics["evaluated_on"] = split
    report = detection_report(evaluated, request.labels, threshold, split)
    report["validation"] = {"map50": round(val_map50, 4), "map": round(val_map, 4),
                            "n": len(onnx_val), "f1": round(val_f1, 4)}
    report["skipped_samples"] = train.skipped + val.skipped
    recipe.update({"export": export, "opset": export["opset"],
                   "ir_version": export["ir_version"]})
    elapsed = time.monotonic() - started
    recipe["elapsed_s"] = round(elapsed, 2)
    progress.emit({"phase": "done", "message": "done"}, force=True)
    return DetectResult(onnx_path=onnx_path, checkpoint_path=checkpoint_path,
                        preprocessing=preprocessing.to_dict(), detection=serving.to_dict(),
                        pretrained=state is not None, weights_note=weights_note,
                        metrics=metrics, history=history, report=report, parity=parity,
                        recipe=recipe, elapsed_s=elapsed)


__all__ += ["TrainingCancelled"]
