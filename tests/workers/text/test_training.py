"""train_text_classifier on a small separable set: learns it within the budget, both families
reported, labels merged, replayable; and the planner's rules."""

from __future__ import annotations

import random

import numpy as np
import pytest

from edge_agent.text import TextFeatures
from workers.ml.text.export import predict_texts
from workers.ml.text.model import FAMILIES
from workers.ml.text.train import (
    CANDIDATES,
    DEFAULT_CONFIGS,
    TextSample,
    TextTrainRequest,
    plan_candidates,
    train_text_classifier,
)

KEYWORDS = [["很好", "喜欢", "满意", "推荐", "great", "love it"],
            ["很差", "讨厌", "失望", "退货", "awful", "hate it"],
            ["一般", "还行", "凑合", "普通", "okay", "so so"]]
# neutral words around the keyword: what a review says besides its verdict
FILLER = ["这个", "东西", "我们", "今天", "买了", "手机", "这本书", "酒店", "房间", "快递", "价格",
          "屏幕", "the", "phone", "book", "hotel", "room", "delivery", "，", "。", " "]
# class 3 is "正面" written with an ideographic space: the same class as 0
LABELS = ["正面", "负面 ", "中性", "正面\u3000"]


def toy(n: int, seed: int, prefix: str) -> list[TextSample]:
    rng = random.Random(seed)
    samples = []
    for i in range(n):
        label = i % 4
        words = KEYWORDS[0 if label == 3 else label]
        filler = lambda: "".join(rng.choice(FILLER) for _ in range(rng.randint(1, 5)))  # noqa: E731
        samples.append(TextSample(filler() + rng.choice(words) + filler(), label,
                                  f"{prefix}{i}"))
    return samples


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    train = toy(320, 0, "tr") + [TextSample("   ", 0, "blank")]
    request = TextTrainRequest(train=train, val=toy(80, 1, "va"), test=toy(80, 2, "te"),
                               labels=LABELS, out_dir=tmp_path_factory.mktemp("text-a"),
                               budget_s=10.0, seed=3)
    events = []
    result = train_text_classifier(request, on_progress=events.append)
    return request, result, events


def test_learns_a_separable_set_within_the_budget(trained):
    request, result, events = trained
    assert result.labels == ["正面", "负面", "中性"]  # "正面\u3000" merged into "正面"
    assert result.metrics["evaluated_on"] == "test"
    assert result.metrics["test_accuracy"] >= 0.95
    assert result.metrics["val_accuracy"] >= 0.95
    assert result.elapsed_s <= request.budget_s * 1.25
    assert result.onnx_path.is_file() and result.parity["passed"]
    assert result.parity["n"] == 80
    assert result.winner in CANDIDATES
    assert result.family == DEFAULT_CONFIGS[result.winner].family in FAMILIES
    assert result.features == DEFAULT_CONFIGS[result.winner].features.to_dict()
    assert {e["phase"] for e in events} >= {"featurize", "calibrate", "train", "export",
                                            "evaluate", "done"}
    assert [s["sample_id"] for s in result.report["skipped_samples"]] == ["blank"]


def test_reports_both_families_their_fits_and_which_won(trained):
    _, result, _ = trained
    assert set(result.candidates) == set(FAMILIES)
    for family, candidate in result.candidates.items():
        assert "skipped" not in candidate and candidate["family"] == family
        assert 0.0 <= candidate["val_accuracy"] <= 1.0
        assert candidate["steps_done"] > 0 and candidate["epochs_done"] >= 1
        epochs = [e["epoch"] for e in result.history if e["family"] == family]
        # numbered through the family's fits: the kept epoch names one entry
        assert epochs == sorted(set(epochs)) and epochs[-1] == candidate["epochs_done"]
        assert candidate["kept_epoch"] in epochs
        fits = candidate["fits"]
        assert set(fits) == {n for n, c in DEFAULT_CONFIGS.items() if c.family == family}
        best = max(f["val_balanced_accuracy"] for f in fits.values())
        assert fits[candidate["fit"]]["val_balanced_accuracy"] == best
    best = max(c["val_balanced_accuracy"] for c in result.candidates.values())
    assert result.candidates[result.family]["val_balanced_accuracy"] == best
    assert result.candidates[result.family]["fit"] == result.winner
    assert result.metrics["val_by_family"].keys() == set(FAMILIES)
    assert result.metrics["val_by_fit"].keys() == set(CANDIDATES)
    # the exact logistic regression tries the Cs in order, strongest regularisation first (all
    # of them unless the clock stopped it)
    lbfgs = [e["l2_c"] for e in result.history if e["fit"] == "linear_lbfgs"]
    grid = list(DEFAULT_CONFIGS["linear_lbfgs"].l2_c)
    assert lbfgs == grid[: len(lbfgs)] and (
        lbfgs == grid or result.candidates["linear"]["fits"]["linear_lbfgs"]["stop_reason"]
        == "deadline")


def test_the_recipe_replays_the_same_model(trained, tmp_path):
    request, result, _ = trained
    again = train_text_classifier(TextTrainRequest(
        train=request.train, val=request.val, test=request.test, labels=LABELS,
        out_dir=tmp_path, budget_s=10.0, seed=3, recipe=result.recipe))
    assert again.recipe["replayed"] and again.winner == result.winner
    texts = [s.text for s in request.test]
    features = TextFeatures.from_dict(result.features)
    first = predict_texts(result.onnx_path, texts, features).probabilities
    second = predict_texts(again.onnx_path, texts, features).probabilities
    assert np.array_equal(first, second)
    assert [e["val_accuracy"] for e in again.history] == [e["val_accuracy"]
                                                         for e in result.history]


def test_requests_that_cannot_train_are_refused(tmp_path):
    good = toy(8, 0, "x")
    with pytest.raises(ValueError, match="at least 2 classes"):
        train_text_classifier(TextTrainRequest(good, good, ["正面", "正面 "], tmp_path, 5.0))
    with pytest.raises(ValueError, match="out of range"):
        train_text_classifier(TextTrainRequest([("好", 4)], good, LABELS, tmp_path, 5.0))
    with pytest.raises(ValueError, match="every text is empty"):
        train_text_classifier(TextTrainRequest([(" ", 0), ("\u3000", 1)], good, LABELS,
                                               tmp_path, 5.0))


def test_the_plan_fits_the_budget():
    configs = {name: DEFAULT_CONFIGS[name] for name in ("linear", "fasttext")}  # in this order
    costs = {"linear": (0.006, 0.02), "fasttext": (0.02, 0.03)}
    # 14,000 texts: 219 steps an epoch; linear needs 5 x 1.334 s, fastText 3 x 4.41 s
    full = plan_candidates(configs, costs, 14_000, 60.0)
    assert full["linear"]["planned_steps"] == 5 * 219
    assert full["fasttext"]["planned_steps"] == 3 * 219
    short = plan_candidates(configs, costs, 14_000, 12.0)
    assert short["linear"]["planned_steps"] == 5 * 219
    assert 219 <= short["fasttext"]["planned_steps"] < 3 * 219
    only = plan_candidates(configs, costs, 14_000, 4.0)
    assert "skipped" in only["fasttext"]
    assert only["linear"]["planned_steps"] == round(4.0 / (5 * (219 * 0.006 + 0.02)) * 5 * 219)
    # small data: at least min_steps (400), many epochs
    small = plan_candidates(configs, costs, 320, 60.0)
    assert small["linear"]["planned_steps"] == small["fasttext"]["planned_steps"] == 400
    # L-BFGS: its iterations per C shrink with the time left, down to two calls of 10
    configs["linear_lbfgs"] = DEFAULT_CONFIGS["linear_lbfgs"]
    costs["linear_lbfgs"] = (0.025, 0.02)  # 3 C x 100 iterations x 1.1 x 25 ms = 8.25 s
    assert plan_candidates(configs, costs, 14_000, 30.0)["linear_lbfgs"]["max_iter"] == 100
    squeezed = plan_candidates(configs, costs, 14_000, 12.0)
    assert 20 <= squeezed["linear_lbfgs"]["max_iter"] < 100
    assert "skipped" in plan_candidates(configs, costs, 14_000, 7.0)["linear_lbfgs"]
