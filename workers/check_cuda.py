"""``python -m workers.check_cuda``: does this worker train on its GPU, and does what it trains
there serve the same on the CPU?

For an operator setting up a GPU training worker (docs/deploy.md) and for developers on a GPU
host; CI has no GPU and never runs it. ``--task detection`` trains the detector of
``seeds/trees`` (the split of ``make bench BENCH=detection``) on ``--device`` (the worker's
``SAMPAN_TRAINING_DEVICE`` when set, else ``cuda``; :func:`workers.ml.devices.training_device`)
within ``--budget-s``, then:

1. the run's recipe names the GPU, and the export's parity gate (torch on the CPU against
   onnxruntime, IoU >= 0.99, scores within 1e-3) passed;
2. the kept weights give the same answers on the GPU (where validation chose them) and on the
   CPU (where they are exported and served): on every validation image, each cell whose score
   reaches the serving threshold on either side has boxes with IoU >= 0.99 and scores within
   ``--score-tolerance`` (cuDNN's and oneDNN's float32 convolutions round differently; both
   sides are computed as a job computes them, :func:`workers.ml.devices.training_on`);
3. the test split's mAP@0.5 of the exported model, for the record.

``--task classification`` trains the digits classifier of ``make bench BENCH=training``
(``seeds/mnist_bench``) the same way and checks the recipe's device, the export's parity gate,
the checkpoint on the CPU, and that the kept weights' validation probabilities on the GPU and the
CPU differ by at most ``--score-tolerance`` with the same top-1 class. ``--task all`` (the
default) runs both.

Prints one JSON line per task (``check``, ``device``, ``steps``, ``val_*``, ``test_*``,
``gpu_cpu_*``, ``checks``, ``ok``, ...) and exits 1 when a check fails, 2 when the device cannot
be used.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import torch

from edge_agent.detection import DetectionSettings, TileSettings

from .bench_detection import TREES, split, voc_samples
from .ml.detection.export import PARITY_MIN_IOU, check_box_parity, compare_boxes, torch_runner
from .ml.detection.model import ExportedDetector, build_detector
from .ml.devices import DEVICE_ENV, training_device, training_on


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m workers.check_cuda", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--task", choices=("all", "detection", "classification"), default="all")
    parser.add_argument("--device", default=os.environ.get(DEVICE_ENV, "").strip() or "cuda",
                        help=f"the device to check (default: the worker's {DEVICE_ENV} when set, "
                             "else cuda)")
    parser.add_argument("--budget-s", type=float, default=120.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--score-tolerance", type=float, default=1e-2)
    args = parser.parse_args(argv)
    try:
        device = training_device(args.device, source="--device")
    except ValueError as exc:
        print(json.dumps({"check": "cuda", "ok": False, "error": str(exc)}), flush=True)
        return 2
    if device.type != "cuda":  # "auto" on a host without a GPU: nothing of CUDA was checked
        print(json.dumps({"check": "cuda", "ok": False,
                          "error": f"--device {args.device} is {device}, not a CUDA GPU"}),
              flush=True)
        return 2
    failed = False
    if args.task in ("all", "classification"):
        failed |= not check_classification(device, args)
    if args.task in ("all", "detection"):
        failed |= not check_detection(device, args)
    return 1 if failed else 0


def check_detection(device: torch.device, args: argparse.Namespace) -> bool:
    """The detection checks (module docstring); prints their JSON line, returns whether all
    passed."""
    from edge_agent.imaging import Preprocessing

    from .ml.detection.data import Geometry, load_samples
    from .ml.detection.train import DetectRequest, _parity_batches, train_detector

    labels = ["Tree"]
    train, val = split(voc_samples(TREES / "train", labels), 0.15, args.seed)
    test = voc_samples(TREES / "heldout", labels)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="check-cuda-") as tmp:
        result = train_detector(DetectRequest(train=train, val=val, test=test, labels=labels,
                                              out_dir=Path(tmp), budget_s=args.budget_s,
                                              seed=args.seed, device=args.device))
        wall = time.monotonic() - started
        checkpoint = torch.load(result.checkpoint_path, map_location="cpu", weights_only=True)
        on_cpu = all(t.device.type == "cpu" for t in checkpoint["state_dict"].values())
        size = int(checkpoint["input_size"])
        # the kept weights on both devices, on the validation images as the device sees them
        preprocessing = Preprocessing.from_dict(result.preprocessing)
        tile = result.detection.get("tile")
        geometry = Geometry(size, None if tile is None else TileSettings(**tile), "checked")
        batches = _parity_batches(load_samples(val, geometry, preprocessing, len(labels),
                                               lambda: False), geometry, preprocessing)
        serving = DetectionSettings.from_dict(result.detection)
        cpu_graph = ExportedDetector(_reloaded(result.checkpoint_path, len(labels), size),
                                     size).eval()
        gpu_graph = ExportedDetector(_reloaded(result.checkpoint_path, len(labels), size),
                                     size).to(device).eval()
        # the GPU's numerics while a job validates (training_on: float32, not TF32)
        with training_on(device):
            compared = compare_boxes(torch_runner(cpu_graph), torch_runner(gpu_graph, device),
                                     batches, serving, PARITY_MIN_IOU, args.score_tolerance)
        parity = check_box_parity(cpu_graph, result.onnx_path, batches[:4], serving)
    checks = {
        "device_used": str(result.recipe.get("device", "")).startswith(str(device)),
        "export_parity": bool(result.parity.get("passed")),
        "checkpoint_on_cpu": on_cpu,
        "gpu_matches_cpu": compared["passed"],
        "reexport_parity": bool(parity.get("passed")),
    }
    print(json.dumps({
        "check": "cuda_detection", "device": result.recipe.get("device"), "budget_s": args.budget_s,
        "wall_s": round(wall, 1), "steps": result.recipe.get("steps_done"),
        "step_s": result.recipe.get("step_s"), "threads": result.recipe.get("threads"),
        "val_map50": result.metrics.get("val_map50"),
        "test_map50": result.metrics.get("test_map50"),
        "parity_passed": checks["export_parity"],
        "gpu_cpu_max_score_diff": compared["max_score_diff"],
        "gpu_cpu_min_iou": compared["min_iou"], "gpu_cpu_candidates": compared["candidates"],
        "checks": checks, "ok": all(checks.values()),
        "torch": torch.__version__,
        "cudnn": torch.backends.cudnn.version(),  # type: ignore[no-untyped-call]
    }, sort_keys=True), flush=True)
    return all(checks.values())


def check_classification(device: torch.device, args: argparse.Namespace) -> bool:
    """The classification checks (module docstring); prints their JSON line, returns whether
    all passed."""
    from edge_agent.imaging import Preprocessing

    from .bench_training import load_digits
    from .ml.classification import train_image_classifier
    from .ml.data import to_tensors
    from .ml.models import build_classifier
    from .ml.specs import TrainRequest
    from .ml.training import evaluate

    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="check-cuda-") as tmp:
        refs, labels = load_digits(Path(tmp) / "digits")
        result = train_image_classifier(TrainRequest(
            train=refs["train"], val=refs["val"], test=refs["test"], labels=labels,
            out_dir=Path(tmp) / "out", budget_s=args.budget_s, seed=args.seed,
            device=args.device))
        wall = time.monotonic() - started
        checkpoint = torch.load(result.checkpoint_path, map_location="cpu", weights_only=True)
        on_cpu = all(t.device.type == "cpu" for t in checkpoint["state_dict"].values())
        preprocessing = Preprocessing.from_dict(checkpoint["preprocessing"])
        val = to_tensors(refs["val"], preprocessing, lambda: False)
        probabilities = []
        for where in (torch.device("cpu"), device):
            model = build_classifier(checkpoint["architecture"], len(labels), None)
            model.load_state_dict(checkpoint["state_dict"])
            with training_on(where):  # the GPU's numerics while a job validates
                _, _, logits = evaluate(model.to(where), val, preprocessing)
            probabilities.append(torch.softmax(logits, dim=1))
    cpu, gpu = probabilities
    max_diff = float((cpu - gpu).abs().max())
    top1_agree = float((cpu.argmax(1) == gpu.argmax(1)).float().mean())
    checks = {
        "device_used": str(result.recipe.get("device", "")).startswith(str(device)),
        "export_parity": bool(result.parity.get("passed")),
        "checkpoint_on_cpu": on_cpu,
        "gpu_matches_cpu": max_diff <= args.score_tolerance and top1_agree == 1.0,
    }
    print(json.dumps({
        "check": "cuda_classification", "device": result.recipe.get("device"),
        "budget_s": args.budget_s, "wall_s": round(wall, 1),
        "resolution": result.recipe.get("resolution"),
        "steps": result.recipe.get("finetune_steps_done"),
        "stop_reason": result.recipe.get("stop_reason"),
        "planned": result.recipe.get("planned"),
        "threads": result.recipe.get("threads"),
        "val_accuracy": result.metrics.get("val_accuracy"),
        "test_accuracy": result.metrics.get("test_accuracy"),
        "parity_passed": checks["export_parity"], "gpu_cpu_max_prob_diff": round(max_diff, 6),
        "gpu_cpu_top1_agree": top1_agree, "checks": checks, "ok": all(checks.values()),
        "torch": torch.__version__,
    }, sort_keys=True), flush=True)
    return all(checks.values())


def _reloaded(path: Path, num_classes: int, size: int) -> torch.nn.Module:
    """The checkpoint's detector as training left it (folded backbone norms included)."""
    from .ml.weights import load_pretrained_state_dict

    state, _ = load_pretrained_state_dict("mobilenet_v2")
    model = build_detector(num_classes, size, state)
    checkpoint = torch.load(path, map_location="cpu", weights_only=True)
    model.load_state_dict(checkpoint["state_dict"])
    model.eval()
    return model


if __name__ == "__main__":
    sys.exit(main())
