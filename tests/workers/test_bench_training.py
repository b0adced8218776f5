"""The training bench and its reference script: the reference fills its budget with a schedule
that is warm-up then cosine, keeps its best epoch, and the bench's lines carry the issue's keys.

Real training on real MNIST digits with small budgets (marked slow: ~1 minute)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from workers import bench_training
from workers.ml.reference import train_reference
from workers.ml.specs import TrainRequest

from .conftest import LABELS, digit_refs

pytestmark = pytest.mark.slow


def _refs() -> dict[str, list]:
    heldout = digit_refs("heldout", 4)
    return {"train": digit_refs("train", 8), "val": heldout[::2], "test": heldout[1::2]}


def test_the_reference_fills_its_budget_and_keeps_its_best_epoch(tmp_path, torch_home_with_weights,
                                                                  monkeypatch):
    monkeypatch.setenv("TORCH_HOME", str(torch_home_with_weights))
    refs = _refs()
    budget_s = 12.0
    result = train_reference(TrainRequest(**refs, labels=LABELS, out_dir=tmp_path,
                                          budget_s=budget_s, seed=0))
    # it re-plans from its pace: however slow its first epoch, it ends near the budget
    assert 0.85 * budget_s <= result["wall_s"] <= 1.05 * budget_s, result
    assert result["epochs"] >= 3
    history = result["history"]
    best = max(h["val_accuracy"] for h in history)
    assert result["val_accuracy"] == pytest.approx(best, abs=1e-4)
    assert history[result["best_epoch"] - 1]["val_accuracy"] == pytest.approx(best, abs=1e-4)
    assert 0.0 <= result["test_accuracy"] <= 1.0
    # the plan's last total is where it stopped (within the epoch it was cut in)
    assert result["steps"] <= history[-1]["planned_steps"] + math.ceil(len(refs["train"]) / 32)


def test_a_bench_line_carries_the_issues_keys(tmp_path, torch_home_with_weights, monkeypatch,
                                              capsys):
    monkeypatch.setenv("TORCH_HOME", str(torch_home_with_weights))
    monkeypatch.setitem(bench_training.LOADERS, "tiny_digits", lambda root: (_refs(), LABELS))
    lines = bench_training.bench([("tiny_digits", 25.0, 1)])
    printed = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert printed == json.loads(json.dumps(lines))
    line = lines[0]
    for key in ("bench", "dataset", "budget_s", "sampan_test_acc", "reference_test_acc",
                "budget_used", "stopped_early", "sampan_s_to_reference_60s_acc"):
        assert key in line, key
    assert line["bench"] == "training" and line["dataset"] == "tiny_digits"
    assert line["budget_s"] == 25.0 and line["n_test"] == 20
    assert len(line["load_1m"]) == 2 and line["cpus"] >= 1  # how busy the machine was
    # one seed: the means are that seed's figures
    assert line["sampan_test_acc"] == line["sampan_test_accs"][0]
    assert line["reference_test_acc"] == line["reference_test_accs"][0]
    run = line["runs"][0]
    assert run["sampan"]["budget_used"] == pytest.approx(run["sampan"]["wall_s"] / 25.0, abs=0.01)
    # not a 60 s configuration and none ran: null, and the line says why
    assert line["sampan_s_to_reference_60s_acc"] is None
    assert "60 s configuration" in line["sampan_s_to_reference_60s_acc_why"]


@pytest.mark.parametrize(("only", "message"), [
    ("no_such_dataset:10:1", "unknown dataset 'no_such_dataset'"),
    ("digits", "expected dataset:budget_s[:seeds]"),
    ("digits:sixty", "expected dataset:budget_s[:seeds]"),
])
def test_only_names_a_dataset_budget_and_seed_count(only, message, capsys):
    with pytest.raises(SystemExit) as stop:
        bench_training.main(["--only", only])
    assert stop.value.code == 2 and message in capsys.readouterr().err
    assert bench_training.CONFIGURATIONS[0] == ("digits", 60.0, 3)
    assert Path(bench_training.SEEDS / "lfw_faces_split.json").is_file()
