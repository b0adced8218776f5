"""End-to-end training on real MNIST digits with small budgets (marked slow: ~1-2 minutes)."""

import os
import time

import onnxruntime
import pytest
import torch

from workers.ml.classification import TrainingCancelled, TrainRequest, train_image_classifier

from .conftest import LABELS, digit_refs

pytestmark = pytest.mark.slow
BUDGET_S = 20.0


def _request(out_dir, budget_s=BUDGET_S, **kwargs):
    heldout = digit_refs("heldout", 20)
    val = [ref for i, ref in enumerate(heldout) if i % 20 < 10]
    test = [ref for i, ref in enumerate(heldout) if i % 20 >= 10]
    return TrainRequest(
        train=digit_refs("train", 20), val=val, test=test, labels=LABELS,
        out_dir=out_dir, budget_s=budget_s, seed=0, **kwargs,
    )


def _timed(request, **kwargs):
    started = time.monotonic()
    result = train_image_classifier(request, **kwargs)
    return result, time.monotonic() - started


@pytest.fixture(scope="module")
def pretrained_runs(torch_home_with_weights, tmp_path_factory):
    """A run with the ImageNet weights in the hub cache, and a replay of its recorded recipe."""
    mp = pytest.MonkeyPatch()
    mp.setenv("TORCH_HOME", str(torch_home_with_weights))
    events = []
    first = _timed(_request(tmp_path_factory.mktemp("run1")), on_progress=events.append)
    replay = _timed(_request(tmp_path_factory.mktemp("replay"), budget_s=300,
                             recipe=first[0].recipe))
    mp.undo()
    return first, replay, events


def test_trains_within_budget_and_exports_a_checked_model(pretrained_runs):
    (result, wall_s), _, _ = pretrained_runs
    assert wall_s <= BUDGET_S * 1.1, result.recipe
    assert result.pretrained is True and "ImageNet" in result.weights_note
    assert result.parity["passed"] is True, result.parity
    assert result.metrics["val_accuracy"] >= 0.6, result.history
    # the report is computed on the test split, never used to choose the epoch
    assert result.report["split"] == "test" and result.metrics["evaluated_on"] == "test"
    assert result.report["n"] == 100 and len(result.report["confusion_matrix"]) == 10
    assert result.report["validation"]["n"] == 100 and result.report["classes_not_evaluated"] == []
    assert result.metrics["test_accuracy"] == result.report["accuracy"] >= 0.6
    assert {p["sample_id"] for p in result.report["predictions"]} == {
        ref.sample_id for ref in _request(result.onnx_path.parent).test}
    # the measured faster of all CPUs and 1 (1 only when other work makes 2 threads spin-wait)
    assert result.recipe["threads"] in (1, len(os.sched_getaffinity(0)))
    assert result.preprocessing["size"] == [96, 96]  # 28 px digits -> 96 px
    assert result.recipe["opset"] >= 18 and result.recipe["ir_version"] >= 8
    assert result.checkpoint_path.is_file()
    # where it trained, in the job's recipe and the checkpoint's (the tests pin the CPU)
    assert result.recipe["device"] == "cpu"
    checkpoint = torch.load(result.checkpoint_path, map_location="cpu", weights_only=True)
    assert checkpoint["recipe"]["device"] == "cpu"
    session = onnxruntime.InferenceSession(str(result.onnx_path))
    assert [i.name for i in session.get_inputs()] == ["input"]
    assert [o.name for o in session.get_outputs()] == ["probabilities"]


def test_replaying_the_recorded_recipe_gives_the_same_model(pretrained_runs):
    # The live run re-planned its schedule from the clock; the recipe records every re-plan
    # and the steps run, so a replay (which ignores the clock) applies the same rate at every
    # step and trains the same model.
    (first, _), (replay, _), _ = pretrained_runs
    assert first.recipe["finetune_steps_done"] > 0, first.recipe
    assert replay.recipe["finetune_steps_done"] == first.recipe["finetune_steps_done"]
    strip = [[{k: v for k, v in h.items() if k != "elapsed_s"} for h in r.history]
             for r in (first, replay)]
    assert strip[0] == strip[1]
    assert first.report["predictions"] == replay.report["predictions"]
    assert replay.recipe["device"] == first.recipe["device"] == "cpu"


def test_the_first_finetuning_epoch_does_not_fall_to_chance(pretrained_runs):
    (result, _), _, _ = pretrained_runs
    finetune = [h for h in result.history if h["phase"] == "finetune"]
    assert finetune, result.history
    # chance is 10%; before BatchNorm was adapted (AdaBN), the first epoch fell to 10-15% from
    # ~90%: the probe's head did not fit train-mode features (tested directly below:
    # test_probe_head_still_fits_when_batchnorm_runs_in_train_mode). Measured since, after a probe
    # at 0.82: first epochs at 0.49-0.82 (0.70-0.73 with the 4-step warm-up), and epochs at the
    # peak rate at 0.27-0.62 (the BatchNorm running statistics lag, see workers/ml/training.py),
    # recovering. So the line is at twice chance, not at a share of the probe. The model kept is
    # chosen by validation (test_trains_within_budget...: >= 0.6); the schedule is tested in
    # test_recipe.py.
    assert finetune[0]["val_accuracy"] >= 0.2, result.history


def test_progress_is_reported_and_throttled(pretrained_runs):
    (result, wall_s), _, events = pretrained_runs
    phases = [event["phase"] for event in events]
    assert {"decode", "head", "export", "evaluate", "done"} <= set(phases)
    assert all("elapsed_s" in event for event in events)
    fractions = [event["fraction"] for event in events]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0
    etas = [event["eta_s"] for event in events if "eta_s" in event]
    assert etas == sorted(etas, reverse=True) and etas[-1] == 0
    for event in events:  # a validation figure always says which epoch it belongs to
        if "val_accuracy" in event:
            assert event["epoch"] >= 1 and event["phase"] in ("head", "finetune")
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


def test_eleven_images_over_four_classes_train_on_what_there_is(tmp_path, torch_home_with_weights,
                                                                monkeypatch):
    # the platform's default split of 5/3/2/1 images: 8 train, 3 val, no test split; from the
    # ImageNet weights, as users train: the probe and BatchNorm adaptation on 8 images too
    monkeypatch.setenv("TORCH_HOME", str(torch_home_with_weights))
    train = digit_refs("train", 5)
    by_class = {c: [r for r in train if r.label == c] for c in range(4)}
    refs = by_class[0][:4] + by_class[1][:2] + by_class[2][:1] + by_class[3][:1]
    val = [by_class[0][4], by_class[1][2], by_class[2][1]]
    request = TrainRequest(train=refs, val=val, labels=LABELS[:4], out_dir=tmp_path,
                           budget_s=20.0)
    result = train_image_classifier(request)
    assert result.pretrained is True and result.recipe["head_epochs"] > 0
    assert result.report["split"] == "val" and result.metrics["evaluated_on"] == "val"
    assert "test_accuracy" not in result.metrics
    assert result.report["n"] == 3 and result.parity["passed"] is True
    # class 3's only image is in train: the report says its figures say nothing about it
    assert result.report["classes_not_evaluated"] == [LABELS[3]]
    assert result.recipe["n_train"] == 8 and result.recipe["n_test"] == 0


def test_probe_head_still_fits_when_batchnorm_runs_in_train_mode(torch_home_with_weights,
                                                                 monkeypatch):
    # Issue 7: a head fitted on eval-mode features scored loss 0.02 in eval mode and 9.9 in
    # train mode, so fine-tuning started from a head that no longer fitted. AdaBN before the
    # probe makes both modes agree on shuffled batches of 32.
    import torch
    from torch import nn

    from edge_agent.imaging import Preprocessing
    from workers.ml.data import normalise, to_tensors
    from workers.ml.models import build_classifier
    from workers.ml.recipe import Recipe
    from workers.ml.training import Progress, TrainingState, train_head
    from workers.ml.weights import load_pretrained_state_dict

    monkeypatch.setenv("TORCH_HOME", str(torch_home_with_weights))
    state_dict, _ = load_pretrained_state_dict("mobilenet_v2")
    torch.manual_seed(0)
    model = build_classifier("mobilenet_v2", 10, state_dict)
    preprocessing = Preprocessing(size=(96, 96))
    train = to_tensors(digit_refs("train", 20), preprocessing, lambda: False)
    val = to_tensors(digit_refs("heldout", 5), preprocessing, lambda: False)
    train_head(model, train, val, Recipe(label_smoothing=0.0), TrainingState(),
               Progress(lambda e: None, lambda: False, time.monotonic()), preprocessing, None)
    order = torch.randperm(len(train), generator=torch.Generator().manual_seed(0))

    def mean_loss(train_mode: bool) -> float:
        model.train(train_mode)
        total = 0.0
        with torch.no_grad():
            for start in range(0, len(order), 32):
                index = order[start:start + 32]
                logits = model(normalise(train.images[index], preprocessing))
                total += float(nn.functional.cross_entropy(logits, train.labels[index],
                                                           reduction="sum"))
        return total / len(order)

    eval_loss, train_loss = mean_loss(False), mean_loss(True)
    assert eval_loss < 0.5
    assert train_loss < 0.5, (eval_loss, train_loss)  # 9-11 without AdaBN (measured)


def test_a_dataset_whose_cache_does_not_fit_is_refused_before_it_is_decoded(tmp_path,
                                                                             monkeypatch):
    """The images' in-memory cache (N x 3 x H x W uint8) over the limit even at the smallest
    resolution: a clear error naming the count, the size, what it needs and the setting, raised
    before the splits are decoded (an out-of-memory kill would look like a lost worker)."""
    from workers.ml import classification, data, recipe
    from workers.ml.data import DatasetTooLarge

    decoded = []
    real_decode = data._decode
    monkeypatch.setattr(data, "_decode", lambda sample: decoded.append(sample) or
                        real_decode(sample))
    request = _request(tmp_path, pretrained=False)
    count = len(request.train) + len(request.val) + len(request.test)
    limit = count * 3 * 96 * 96 - 1  # one byte short at 96 px, the smallest
    monkeypatch.setattr(data, "MAX_CACHE_BYTES", limit)
    monkeypatch.setattr(recipe, "MAX_CACHE_BYTES", limit)
    with pytest.raises(DatasetTooLarge) as refused:
        train_image_classifier(request)
    mb = f"{(limit + 1) / 1e6:.1f} MB"
    assert str(refused.value).startswith(f"{count} images at 96 x 96 px need {mb} of memory, "
                                         f"more than the {mb}")
    assert "SAMPAN_TRAINING_CACHE_BYTES" in str(refused.value)
    assert len(decoded) <= classification._PROBE_IMAGES  # the probe only
    assert not (tmp_path / "model.onnx").exists()
