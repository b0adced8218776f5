"""End-to-end training on real MNIST digits with small budgets (marked slow: ~1-2 minutes)."""

import time

import onnxruntime
import pytest

from workers.ml.classification import TrainingCancelled, TrainRequest, train_image_classifier

from .conftest import LABELS, digit_refs

pytestmark = pytest.mark.slow
BUDGET_S = 20.0


def _request(out_dir, budget_s=BUDGET_S, **kwargs):
    return TrainRequest(
        train=digit_refs("train", 20), val=digit_refs("heldout", 10), labels=LABELS,
        out_dir=out_dir, budget_s=budget_s, seed=0, **kwargs,
    )


def _timed(request, **kwargs):
    started = time.monotonic()
    result = train_image_classifier(request, **kwargs)
    return result, time.monotonic() - started


@pytest.fixture(scope="module")
def pretrained_runs(torch_home_with_weights, tmp_path_factory):
    """Two runs of the same request and seed, with the ImageNet weights in the hub cache."""
    mp = pytest.MonkeyPatch()
    mp.setenv("TORCH_HOME", str(torch_home_with_weights))
    events = []
    first = _timed(_request(tmp_path_factory.mktemp("run1")), on_progress=events.append)
    second = _timed(_request(tmp_path_factory.mktemp("run2")))
    mp.undo()
    return first, second, events


def test_trains_within_budget_and_exports_a_checked_model(pretrained_runs):
    (result, wall_s), _, _ = pretrained_runs
    assert wall_s <= BUDGET_S * 1.1, result.recipe
    assert result.pretrained is True and "ImageNet" in result.weights_note
    assert result.parity["passed"] is True, result.parity
    assert result.metrics["val_accuracy"] >= 0.6, result.history
    assert result.report["n"] == 100 and len(result.report["confusion_matrix"]) == 10
    assert result.preprocessing["size"] == [96, 96]  # 28 px digits -> 96 px
    assert result.recipe["opset"] >= 18 and result.recipe["ir_version"] >= 8
    assert result.checkpoint_path.is_file()
    session = onnxruntime.InferenceSession(str(result.onnx_path))
    assert [i.name for i in session.get_inputs()] == ["input"]
    assert [o.name for o in session.get_outputs()] == ["probabilities"]


def test_same_seed_gives_same_validation_predictions(pretrained_runs):
    (first, _), (second, _), _ = pretrained_runs
    assert not (first.recipe["stopped_early"] or second.recipe["stopped_early"]), (
        "machine too busy: the time guard cut a run short, so the runs differ by design"
    )
    assert first.recipe["planned"] == second.recipe["planned"]
    assert first.report["predictions"] == second.report["predictions"]
    assert first.metrics == second.metrics


def test_progress_is_reported_and_throttled(pretrained_runs):
    (result, wall_s), _, events = pretrained_runs
    phases = [event["phase"] for event in events]
    assert {"decode", "head", "export", "evaluate", "done"} <= set(phases)
    assert all("elapsed_s" in event for event in events)
    assert len(events) <= 3.5 * wall_s + 10  # ~3 per second plus forced phase/epoch ends
    head_end = next(e for e in events if e["phase"] == "head" and "val_accuracy" in e)
    assert 0.0 <= head_end["val_accuracy"] <= 1.0 and head_end["epochs"] >= 1


def test_should_stop_cancels_promptly(tmp_path):
    calls = []

    def should_stop():
        calls.append(1)
        return len(calls) > 5

    started = time.monotonic()
    with pytest.raises(TrainingCancelled):
        train_image_classifier(_request(tmp_path, pretrained=False), should_stop=should_stop)
    assert time.monotonic() - started < 10
    assert not (tmp_path / "model.onnx").exists()


def test_without_cached_weights_trains_from_random_init_and_says_so(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "empty-torch-home"))
    result, wall_s = _timed(_request(tmp_path / "out", budget_s=15.0))
    assert result.pretrained is False
    assert "random initialisation" in result.weights_note
    assert result.recipe["pretrained"] is False and result.recipe["head_epochs"] == 0
    assert result.parity["passed"] is True
    assert wall_s <= 15.0 * 1.1


def test_replayed_recipe_with_finetuning_gives_identical_models(
    pretrained_runs, torch_home_with_weights, tmp_path, monkeypatch
):
    # Independent of machine load: a replayed recipe fixes the epochs, and a generous budget keeps
    # the time guard out of the way, so fine-tuning itself must be deterministic for a seed.
    monkeypatch.setenv("TORCH_HOME", str(torch_home_with_weights))
    (first, _), _, _ = pretrained_runs
    recipe = {**first.recipe, "finetune_epochs": 1, "finetune_steps": 7, "warmup_steps": 2}
    runs = [
        train_image_classifier(_request(tmp_path / f"replay{i}", budget_s=300, recipe=recipe))
        for i in range(2)
    ]
    for run in runs:
        assert [h["phase"] for h in run.history] == ["head", "finetune"]
        assert run.history[-1]["step"] == 7 and run.recipe["stopped_early"] is False
    without_time = [[{k: v for k, v in h.items() if k != "elapsed_s"} for h in r.history] for r in runs]
    assert without_time[0] == without_time[1]
    assert runs[0].report["predictions"] == runs[1].report["predictions"]
