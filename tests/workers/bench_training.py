"""Benchmark: the engine vs the plain torchvision loop on seeds/mnist (train 400 / heldout 200).

    python -m tests.workers.bench_training [budget_s ...]     # default: 60 90

Prints one JSON line per run and ratios (engine / baseline val accuracy). Needs the ImageNet
checkpoint in the torch hub cache for the pretrained rows (python -m workers.ml.weights).
Not collected by pytest (speed is measured here, not asserted).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

from workers.ml.baseline import train_baseline
from workers.ml.classification import TrainRequest, train_image_classifier

from .conftest import LABELS, digit_refs


def main(budgets: list[float]) -> None:
    train, val = digit_refs("train", 1000), digit_refs("heldout", 1000)
    for budget in budgets:
        for pretrained in (True, False):
            with tempfile.TemporaryDirectory() as out:
                request = TrainRequest(train, val, LABELS, Path(out), budget, 0, pretrained=pretrained)
                load = os.getloadavg()[0]
                result = train_image_classifier(request)
                engine = {
                    "budget_s": budget, "pretrained": result.pretrained, "load_1m": round(load, 1),
                    "engine_wall_s": result.elapsed_s, "engine_val_accuracy": result.metrics["val_accuracy"],
                    "recipe": {k: result.recipe[k] for k in ("resolution", "finetune_epochs",
                               "threads", "exporter", "stopped_early", "export_s")},
                    "best": [result.metrics["best_phase"], result.metrics["best_epoch"]],
                }
                load = os.getloadavg()[0]
                baseline = train_baseline(request)
                engine.update({f"baseline_{k}": v for k, v in baseline.items()})
                engine["baseline_load_1m"] = round(load, 1)
                engine["accuracy_ratio"] = round(
                    engine["engine_val_accuracy"] / max(baseline["val_accuracy"], 1e-9), 3)
                print(json.dumps(engine), flush=True)


if __name__ == "__main__":
    main([float(b) for b in sys.argv[1:]] or [60.0, 90.0])
