"""``make bench BENCH=detection``: Sampan's detector against a plain Ultralytics YOLOv8n trained
from scratch in the same wall-clock time on the same split, both scored by the same evaluator.

Data: ``seeds/trees`` (aerial tree crowns drawn by people, DeepForest sample data, MIT):
``train/`` (39 tiles of 400 px) is split by sha256 of the file name into train (33) and val (6);
``heldout/`` (8 tiles, 191 boxes) is the test split, used by neither for model selection.

1. Sampan: ``workers.ml.detection.train.train_detector`` with the settings a training job of
   the platform uses and ``--budget-s`` (everything
   included: decoding, training, ONNX export, parity, evaluation); its wall-clock seconds W are
   measured.
2. Baseline: ``ultralytics.YOLO("yolov8n.yaml")`` (random initialisation: no weights can be
   downloaded here) trained with ``time=W`` (hours = W / 3600, Ultralytics' own wall-clock
   limit), the same input size, batch 4, CPU, its default augmentation and schedule; its
   ``best.pt`` (chosen on the same val split) predicts the test tiles (conf 0.001, NMS IoU
   0.6, up to 100 boxes).
3. Both answers are scored by :func:`workers.ml.detection.evaluation.mean_ap` (pycocotools COCO
   mAP@0.5 and mAP@0.5:0.95). Sampan's answers are its exported ONNX model's, through the
   device's post-processing (``edge_agent.detection``).

Both are trained ``--runs`` times (3 by default; training seeds ``seed``, ``seed + 1``, ...)
on the same split: one run of YOLOv8n-from-scratch scored 0.21, 0.22 and 0.32 mAP@0.5 in three
sessions at the same seed, so a single pair's ratio says more about that run than about the
detectors. The headline figures are the means over the runs (``ratio`` = mean / mean), with
each run's figures beside them (``*_runs``).

Prints one JSON line ``{"bench": "detection", "runs", "sampan_map50", "yolo_map50", "ratio",
"sampan_map", "yolo_map", "wall_s", "yolo_wall_s", "sampan_map50_runs", "yolo_map50_runs",
"ratio_runs", "budget_s", "input_size", "cpus", "load_1m", ...}``. Nothing is asserted.
Ultralytics (AGPL-3.0) is a dev-only dependency used here as the baseline; Sampan never
imports it.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from edge_agent.detection import DetectionSettings
from edge_agent.imaging import Preprocessing, decode_image

from .ml.detection.data import BoxSample
from .ml.detection.evaluation import ImageResult, mean_ap
from .ml.detection.train import EVAL_SCORE_THRESHOLD, DetectRequest, train_detector

TREES = Path(__file__).resolve().parent.parent / "seeds" / "trees"


def voc_samples(folder: Path, labels: list[str]) -> list[BoxSample]:
    """Every image of a VOC folder (``JPEGImages/`` + ``Annotations/``) as a BoxSample."""
    import xml.etree.ElementTree as ET

    samples = []
    for image in sorted((folder / "JPEGImages").iterdir()):
        root = ET.parse(folder / "Annotations" / f"{image.stem}.xml").getroot()
        boxes = tuple(
            tuple(float(o.findtext(f"bndbox/{k}")) for k in ("xmin", "ymin", "xmax", "ymax"))
            + (labels.index(o.findtext("name").strip()),) for o in root.findall("object"))
        samples.append(BoxSample(str(image), boxes, image.stem))  # type: ignore[arg-type]
    return samples


def split(samples: list[BoxSample], val_share: float, seed: int
          ) -> tuple[list[BoxSample], list[BoxSample]]:
    ranked = sorted(samples, key=lambda s: hashlib.sha256(f"{seed}:{s.sample_id}".encode())
                    .hexdigest())
    n_val = max(1, round(len(ranked) * val_share))
    return ranked[n_val:], ranked[:n_val]


def _truth(sample: BoxSample) -> tuple[np.ndarray, np.ndarray]:
    boxes = np.asarray([b[:4] for b in sample.boxes], dtype=np.float64).reshape(-1, 4)
    return boxes, np.asarray([b[4] for b in sample.boxes], dtype=np.int64)


def write_yolo(root: Path, parts: dict[str, list[BoxSample]], labels: list[str]) -> Path:
    """The splits in Ultralytics' layout (``images/<split>``, ``labels/<split>``, data.yaml);
    the images are linked, not copied."""
    from PIL import Image

    for part, samples in parts.items():
        (root / "images" / part).mkdir(parents=True)
        (root / "labels" / part).mkdir(parents=True)
        for sample in samples:
            source = Path(sample.path)
            (root / "images" / part / source.name).symlink_to(source)
            with Image.open(source) as image:
                width, height = image.size
            lines = [f"{b[4]} {(b[0] + b[2]) / 2 / width:.6f} {(b[1] + b[3]) / 2 / height:.6f} "
                     f"{(b[2] - b[0]) / width:.6f} {(b[3] - b[1]) / height:.6f}"
                     for b in sample.boxes]
            (root / "labels" / part / f"{source.stem}.txt").write_text("\n".join(lines) + "\n")
    data = root / "data.yaml"
    data.write_text(json.dumps({"path": str(root), "train": "images/train", "val": "images/val",
                                "names": dict(enumerate(labels))}))  # JSON is YAML
    return data


def run_yolo(data: Path, work: Path, seconds: float, imgsz: int, seed: int,
             test: list[BoxSample]) -> tuple[list[ImageResult], float, dict[str, Any]]:
    os.environ.setdefault("YOLO_CONFIG_DIR", str(work / "ultralytics-config"))
    os.environ["YOLO_OFFLINE"] = "1"
    os.environ["YOLO_VERBOSE"] = "False"  # its logger writes to stdout: keep the JSON line alone
    from ultralytics import YOLO

    started = time.monotonic()
    model = YOLO("yolov8n.yaml")
    with contextlib.redirect_stdout(io.StringIO()):
        model.train(data=str(data), epochs=1000, time=seconds / 3600.0, imgsz=imgsz, batch=4,
                    device="cpu", workers=0, pretrained=False, plots=False, amp=False,
                    seed=seed, deterministic=False, project=str(work / "yolo"), name="run",
                    exist_ok=True, verbose=False, patience=1000)
    wall = time.monotonic() - started
    best = work / "yolo" / "run" / "weights" / "best.pt"
    trained = YOLO(str(best)) if best.exists() else model
    results = []
    for sample in test:
        image = decode_image(Path(sample.path).read_bytes())
        with contextlib.redirect_stdout(io.StringIO()):
            (answer,) = trained.predict(np.asarray(image)[:, :, ::-1], imgsz=imgsz, conf=0.001,
                                        iou=0.6, max_det=100, device="cpu", verbose=False)
        boxes = answer.boxes
        true, classes = _truth(sample)
        results.append(ImageResult(sample.sample_id, image.width, image.height, true, classes,
                                   boxes.xyxy.numpy(), boxes.conf.numpy(),
                                   boxes.cls.numpy().astype(np.int64)))
    return results, wall, {"best_pt": best.exists()}


def run_sampan(train: list[BoxSample], val: list[BoxSample], test: list[BoxSample],
               labels: list[str], work: Path, budget_s: float, seed: int,
               input_size: int | None = None) -> tuple[list[ImageResult], float, Any]:
    started = time.monotonic()
    # a training job's defaults (workers.tasks.training): augmentation auto, horizontal flips
    result = train_detector(DetectRequest(train=train, val=val, test=[], labels=labels,
                                          out_dir=work / "sampan", budget_s=budget_s, seed=seed,
                                          input_size=input_size))
    wall = time.monotonic() - started
    import onnxruntime

    from edge_agent.detection import detect

    session = onnxruntime.InferenceSession(str(result.onnx_path),
                                           providers=["CPUExecutionProvider"])
    preprocessing = Preprocessing.from_dict(result.preprocessing)
    settings = DetectionSettings.from_dict(result.detection)
    results = []
    for sample in test:
        image = decode_image(Path(sample.path).read_bytes())
        found = detect(image, lambda x: tuple(session.run(["boxes", "scores"], {"images": x})),
                       preprocessing, settings, EVAL_SCORE_THRESHOLD)
        true, classes = _truth(sample)
        results.append(ImageResult(sample.sample_id, image.width, image.height, true, classes,
                                   found.boxes, found.scores, found.classes))
    return results, wall, result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m workers.bench_detection",
                                     description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--budget-s", type=float, default=300.0)
    parser.add_argument("--seed", type=int, default=0,
                        help="the split's seed and the first training seed")
    parser.add_argument("--runs", type=int, default=3,
                        help="training runs of each detector (seeds seed .. seed+runs-1) on the "
                             "same split; the figures are their means")
    parser.add_argument("--input-size", type=int, default=None,
                        help="both detectors' input size in px (a multiple of 64); default: the "
                             "size Sampan chooses from the data, given to YOLOv8n too")
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    if args.input_size is not None and (args.input_size <= 0 or args.input_size % 64):
        parser.error("--input-size must be a positive multiple of 64")
    labels = ["Tree"]
    train, val = split(voc_samples(TREES / "train", labels), 0.15, args.seed)
    test = voc_samples(TREES / "heldout", labels)
    runs: list[dict[str, Any]] = []
    for seed in range(args.seed, args.seed + args.runs):
        with tempfile.TemporaryDirectory(prefix="bench-detection-") as tmp:
            work = Path(tmp)
            ours, wall, result = run_sampan(train, val, test, labels, work, args.budget_s, seed,
                                               args.input_size)
            size = int(result.recipe["input_size"])
            data = write_yolo(work / "yolo-data", {"train": train, "val": val}, labels)
            theirs, yolo_wall, yolo_info = run_yolo(data, work, wall, size, seed, test)
        sampan_map50, sampan_map = mean_ap(ours, len(labels))
        yolo_map50, yolo_map = mean_ap(theirs, len(labels))
        runs.append({"seed": seed, "sampan_map50": sampan_map50, "yolo_map50": yolo_map50,
                     "sampan_map": sampan_map, "yolo_map": yolo_map, "wall_s": wall,
                     "yolo_wall_s": yolo_wall, "input_size": size,
                     "sampan_steps": result.recipe.get("steps_done"),
                     "sampan_val_map50": result.metrics.get("val_map50"),
                     "pretrained": result.pretrained, "yolo_best_pt": yolo_info["best_pt"]})

    def mean(key: str) -> float:
        return statistics.fmean(float(r[key]) for r in runs)

    def each(key: str) -> list[Any]:
        return [round(r[key], 4) if isinstance(r[key], float) else r[key] for r in runs]

    sampan_map50, yolo_map50 = mean("sampan_map50"), mean("yolo_map50")
    print(json.dumps({
        "bench": "detection", "dataset": "seeds/trees", "runs": len(runs),
        "sampan_map50": round(sampan_map50, 4), "yolo_map50": round(yolo_map50, 4),
        "ratio": round(sampan_map50 / yolo_map50, 2) if yolo_map50 > 0 else None,
        "sampan_map": round(mean("sampan_map"), 4), "yolo_map": round(mean("yolo_map"), 4),
        "wall_s": round(mean("wall_s"), 1), "yolo_wall_s": round(mean("yolo_wall_s"), 1),
        "seeds": each("seed"), "sampan_map50_runs": each("sampan_map50"),
        "yolo_map50_runs": each("yolo_map50"),
        "ratio_runs": [round(r["sampan_map50"] / r["yolo_map50"], 2) if r["yolo_map50"] > 0
                       else None for r in runs],
        "budget_s": args.budget_s, "input_size": runs[0]["input_size"],
        "train_images": len(train), "val_images": len(val), "test_images": len(test),
        "test_boxes": sum(len(s.boxes) for s in test),
        "sampan_steps": each("sampan_steps"), "sampan_val_map50": each("sampan_val_map50"),
        "pretrained": all(r["pretrained"] for r in runs),
        "yolo_best_pt": all(r["yolo_best_pt"] for r in runs),
        "cpus": len(os.sched_getaffinity(0)), "load_1m": round(os.getloadavg()[0], 2),
    }, sort_keys=True), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
