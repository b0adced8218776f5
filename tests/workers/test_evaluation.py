import pytest

from workers.ml.evaluation import classification_report


def test_report_matches_hand_computed_values():
    # 3 classes, 6 samples. Confusion (rows true, columns predicted):
    #   a: [2, 1, 0]   b: [0, 1, 0]   c: [1, 0, 1]
    y_true = [0, 0, 0, 1, 2, 2]
    y_pred = [0, 0, 1, 1, 0, 2]
    report = classification_report(
        y_true, y_pred, ["a", "b", "c"], ["s0", "s1", "s2", "s3", "s4", "s5"],
        probabilities=[0.9, 0.8, 0.6, 0.7, 0.55, 0.95],
    )
    assert report["confusion_matrix"] == [[2, 1, 0], [0, 1, 0], [1, 0, 1]]
    assert report["accuracy"] == pytest.approx(4 / 6)
    a, b, c = report["per_class"]
    # a: TP 2, FP 1 (s4), FN 1 (s2) -> P 2/3, R 2/3, F1 2/3
    assert (a["precision"], a["recall"], a["f1"], a["support"]) == pytest.approx(
        (2 / 3, 2 / 3, 2 / 3, 3))
    # b: TP 1, FP 1 (s2), FN 0 -> P 1/2, R 1, F1 2/3
    assert (b["precision"], b["recall"], b["f1"], b["support"]) == pytest.approx(
        (0.5, 1.0, 2 / 3, 1))
    # c: TP 1, FP 0, FN 1 -> P 1, R 1/2, F1 2/3
    assert (c["precision"], c["recall"], c["f1"], c["support"]) == pytest.approx(
        (1.0, 0.5, 2 / 3, 2))
    assert report["macro_f1"] == pytest.approx(2 / 3)
    assert report["misclassified"] == [
        {"sample_id": "s2", "true": "a", "predicted": "b", "probability": 0.6},
        {"sample_id": "s4", "true": "c", "predicted": "a", "probability": 0.55},
    ]


def test_class_never_predicted_nor_present_is_left_out_of_macro_f1():
    report = classification_report([0, 1], [0, 1], ["a", "b", "c"], ["x", "y"])
    assert report["accuracy"] == 1.0
    assert report["per_class"][2] == {
        "label": "c", "index": 2, "precision": 0.0, "recall": 0.0, "f1": 0.0, "support": 0
    }
    assert report["macro_f1"] == 1.0  # sklearn's default labels: the union of true and predicted
    assert report["classes_in_split"] == 2
    assert report["misclassified"] == []


def test_class_predicted_but_absent_lowers_macro_f1():
    report = classification_report([0, 0], [0, 2], ["a", "b", "c"], ["x", "y"])
    # a: P 1, R 0.5, F1 2/3; c: predicted once, never present: F1 0; b: neither, left out
    assert report["macro_f1"] == pytest.approx((2 / 3 + 0) / 2)


def test_rejects_index_outside_labels():
    with pytest.raises(ValueError, match="y_pred"):
        classification_report([0], [3], ["a", "b"], ["x"])
