"""train_text_classifier on a small separable set: learns it within the budget, every family
reported, labels merged, replayable; the character CNN; and the planner's rules."""

from __future__ import annotations

import random

import numpy as np
import pytest

from edge_agent.text import TextFeatures
from workers.ml.text.export import predict_texts
from workers.ml.text.model import BAG_FAMILIES, FAMILIES
from workers.ml.text.plan import cost_s
from workers.ml.text.solvers import FamilyConfig
from workers.ml.text.train import (
    CANDIDATES,
    DEFAULT_CONFIGS,
    ENCODER,
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
    assert set(result.candidates) == {*FAMILIES, ENCODER}
    # the sentence encoder needs more than this budget leaves (loading it alone takes seconds)
    assert result.candidates[ENCODER]["family"] == ENCODER
    assert result.candidates[ENCODER]["skipped"].startswith("budget: ")
    assert result.recipe["plan"][ENCODER]["skipped"] == result.candidates[ENCODER]["skipped"]
    # the character CNN gets the time the others leave: on a busy machine, none
    if "skipped" in result.candidates["charcnn"]:
        assert result.candidates["charcnn"]["skipped"].startswith("budget: ")
    fitted = {f for f, c in result.candidates.items() if "skipped" not in c}
    assert fitted >= set(BAG_FAMILIES)
    # a training loss is never rounded to 0 (the console's loss chart is logarithmic)
    assert all(e["loss"] is None or e["loss"] > 0 for e in result.history)
    # it runs last
    families = [e["family"] for e in result.history]
    assert families == sorted(families, key=lambda f: f == "charcnn")
    for family, candidate in result.candidates.items():
        if family not in fitted:
            continue
        assert candidate["family"] == family
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
    best = max(c["val_balanced_accuracy"] for c in result.candidates.values()
               if "skipped" not in c)
    assert result.candidates[result.family]["val_balanced_accuracy"] == best
    assert result.candidates[result.family]["fit"] == result.winner
    assert result.metrics["val_by_family"].keys() == fitted
    assert result.metrics["val_by_fit"].keys() == {
        n for n in DEFAULT_CONFIGS if DEFAULT_CONFIGS[n].family in fitted}
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


def test_a_character_cnn_learns_the_set_and_its_recipe_replays_the_same_model(tmp_path):
    # a small CNN (the default's 128 filters take 15-50 ms a step here): 150 steps
    small = FamilyConfig("charcnn", TextFeatures(kind="chars", max_chars=64, buckets=2**12),
                         dim=16, filters=24, widths=(2, 3, 4), lr=0.005, min_steps=150)
    request = TextTrainRequest(train=toy(320, 0, "tr"), val=toy(80, 1, "va"),
                               test=toy(80, 2, "te"), labels=LABELS, out_dir=tmp_path / "a",
                               budget_s=8.0, seed=1, candidates=("charcnn",),
                               configs={"charcnn": small})
    result = train_text_classifier(request)
    assert (result.winner, result.family) == ("charcnn", "charcnn")
    assert result.features == small.features.to_dict() and result.features["kind"] == "chars"
    assert result.parity["passed"] and result.parity["n"] == 80
    assert result.metrics["val_accuracy"] >= 0.9 and result.metrics["test_accuracy"] >= 0.9
    candidate = result.candidates["charcnn"]
    assert candidate["fit"] == "charcnn" and candidate["steps_done"] > 0
    assert candidate["widths"] == [2, 3, 4] and candidate["filters"] == 24
    assert candidate["kept_epoch"] in [e["epoch"] for e in result.history]
    assert {e["family"] for e in result.history} == {"charcnn"}
    assert result.recipe["plan"]["charcnn"]["config"]["widths"] == [2, 3, 4]
    again = train_text_classifier(TextTrainRequest(
        train=request.train, val=request.val, test=request.test, labels=LABELS,
        out_dir=tmp_path / "b", budget_s=8.0, seed=1, recipe=result.recipe))
    assert again.recipe["replayed"] and again.candidates["charcnn"]["steps_done"] == \
        candidate["steps_done"]
    texts = [s.text for s in request.test]
    features = TextFeatures.from_dict(result.features)
    first = predict_texts(result.onnx_path, texts, features).probabilities
    second = predict_texts(again.onnx_path, texts, features).probabilities
    assert np.array_equal(first, second)
    assert [e["val_loss"] for e in again.history] == [e["val_loss"] for e in result.history]


def test_the_character_cnn_is_planned_with_the_time_the_others_leave():
    configs = {name: DEFAULT_CONFIGS[name] for name in ("charcnn", "linear", "fasttext")}
    costs = {"linear": (0.006, 0.02), "fasttext": (0.02, 0.03), "charcnn": (0.06, 0.5)}
    # 14,000 texts: 219 steps an epoch; linear + fastText need 19.9 s, charcnn 3 x 13.64 s
    full = plan_candidates(configs, costs, 14_000, 80.0)
    assert [full[n]["planned_steps"] for n in ("linear", "fasttext", "charcnn")] == [
        5 * 219, 3 * 219, 3 * 219]
    shortened = plan_candidates(configs, costs, 14_000, 40.0)
    assert shortened["linear"] == full["linear"] and shortened["fasttext"] == full["fasttext"]
    # the most steps that fit in the 20.1 s left with their 2 validations (0.5 s each)
    assert shortened["charcnn"]["planned_steps"] == int((40.0 - 19.9 - 2 * 0.5) / 0.06)
    assert shortened["charcnn"]["reason"] == "shortened to the time the other candidates leave"
    assert sum(cost_s(configs[n], shortened[n]["planned_steps"], 14_000, costs[n])
               for n in configs) <= 40.0
    # less than one epoch left after the others: skipped, saying why; they keep their plan
    skipped = plan_candidates(configs, costs, 14_000, 25.0)
    assert skipped["charcnn"] == {"skipped": "budget: 5.1 s left after the other candidates, "
                                             "its minimum (one epoch) needs 13.6 s"}
    assert skipped["fasttext"] == full["fasttext"]
    squeezed = plan_candidates(configs, costs, 14_000, 12.0)
    assert "skipped" in squeezed["charcnn"] and squeezed["fasttext"]["planned_steps"] < 3 * 219
    # asked for alone, it is the first candidate: scaled to the time
    alone = plan_candidates({"charcnn": configs["charcnn"]}, costs, 14_000, 20.0)
    assert alone["charcnn"]["planned_steps"] == round(3 * 219 * 20.0 / 40.92)


# English where the words of the verdict in validation and test never occur in training: the
# n-gram models cannot know "superb" is praise; the pretrained encoder can
SEEN = [["good", "great", "nice", "lovely"], ["bad", "awful", "poor", "terrible"]]
UNSEEN = [["superb", "wonderful", "excellent", "delightful"],
          ["horrible", "dreadful", "disgusting", "atrocious"]]
SUBJECTS = ["the food", "our room", "this phone", "the service", "the movie", "my order"]


def english(n: int, words: list[list[str]], seed: int, prefix: str) -> list[TextSample]:
    rng = random.Random(seed)
    return [TextSample(f"{rng.choice(SUBJECTS)} was {rng.choice(words[i % 2])}", i % 2,
                       f"{prefix}{i}") for i in range(n)]


def test_on_english_the_pretrained_encoder_runs_wins_and_its_package_serves(tmp_path):
    from edge_agent.sessions import open_session

    request = TextTrainRequest(
        train=english(160, SEEN, 0, "tr"), val=english(48, UNSEEN, 1, "va"),
        test=english(48, UNSEEN, 2, "te"), labels=["positive", "negative"],
        out_dir=tmp_path, budget_s=75, candidates=("linear", ENCODER))
    result = train_text_classifier(request)
    encoder = result.candidates[ENCODER]
    assert "skipped" not in encoder, encoder
    assert encoder["fits"]["frozen"]["train_texts"] == 160
    assert encoder["val_accuracy"] > result.candidates["linear"]["val_accuracy"] + 0.1
    assert (result.family, result.pretrained) == (ENCODER, True)
    assert result.winner == f"{ENCODER}_{encoder['fit']}"
    assert result.metrics["test_accuracy"] >= 0.85 and result.parity["passed"]
    assert result.features["kind"] == "wordpiece" and "vocabulary" not in result.features
    assert result.elapsed_s <= request.budget_s * 1.25
    # the package: the manifest's text settings and the graph (vocabulary in its metadata)
    manifest = {"task": "text_classification", "labels": result.labels, "preprocessing": {},
                "text": result.features,
                "inputs": [{"name": "indices", "shape": ["N", "L"], "dtype": "int64"},
                           {"name": "weights", "shape": ["N", "L"], "dtype": "float32"}]}
    session = open_session(result.onnx_path, manifest)
    session.self_test()
    answers = session.predict_texts(["the hotel was superb", "the hotel was dreadful"])
    assert [a["predictions"][0]["label"] for a in answers] == ["positive", "negative"]
    # the device's answers are the report's: the same test accuracy
    served = session.predict_texts([s.text for s in request.test])
    correct = [a["predictions"][0]["index"] == s.label for a, s in zip(served, request.test,
                                                                      strict=True)]
    assert sum(correct) / len(correct) == pytest.approx(result.metrics["test_accuracy"])
