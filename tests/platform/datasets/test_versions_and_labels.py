"""Labeling (one, many, boxes) and freezing dataset versions."""

from __future__ import annotations

from typing import Any

import pytest

from sampan.datasets.models import DatasetVersionItem, Sample
from sampan.datasets.services import class_labels_ensure, dataset_create
from sampan.datasets.versions import (MIN_SAMPLES_FOR_TEST, dataset_version_create,
                                      stratified_split)

pytestmark = pytest.mark.django_db


def make_samples(dataset: Any, counts: dict[str, int]) -> list[Sample]:
    from sampan.datasets.services import sample_label_set

    samples = []
    for label, count in counts.items():
        for i in range(count):
            sample = Sample.objects.create(dataset=dataset,
                                           content_sha256=f"{label}-{i:04d}".ljust(64, "0"),
                                           file=f"samples/{label}{i}.png",
                                           original_name=f"{label}/{i}.png", width=40, height=30)
            sample_label_set(sample=sample, label=label)
            samples.append(sample)
    return samples


@pytest.fixture
def dataset(project_with_roles: dict[str, Any]) -> Any:
    return dataset_create(project=project_with_roles["project"], name="digits")


def test_split_is_stratified_and_deterministic() -> None:
    groups = {0: [f"a{i}" for i in range(10)], 1: [f"b{i}" for i in range(5)]}
    first, flags = stratified_split(groups, val=0.2, test=0.0, seed=7)
    again, _ = stratified_split(groups, val=0.2, test=0.0, seed=7)
    other, _ = stratified_split(groups, val=0.2, test=0.0, seed=8)
    assert first == again and first != other
    assert sum(1 for h in groups[0] if first[h] == "val") == 2
    assert sum(1 for h in groups[1] if first[h] == "val") == 1
    assert [f["code"] for f in flags] == ["no_test_split"]  # asked for: said, not an error


def test_class_with_one_image_is_flagged_not_a_crash(dataset: Any) -> None:
    make_samples(dataset, {"a": 6, "b": 6, "lonely": 1})
    version = dataset_version_create(dataset=dataset, seed=0)
    # no class reaches 10 samples: one no_test_split flag, not one per class
    assert [f["code"] for f in version.flags] == ["no_test_split", "class_too_small",
                                                  "class_imbalance"]
    too_small = version.flags[1]
    assert too_small["class"] == "lonely"
    assert "too few to appear in validation" in too_small["message"]
    assert version.stats["classes"]["lonely"] == {"train": 1}
    assert version.stats["classes"]["a"] == {"train": 5, "val": 1}  # round(6 * 0.15) = 1
    assert version.labels == ["a", "b", "lonely"]


def test_version_is_a_frozen_snapshot_with_a_content_digest(dataset: Any) -> None:
    samples = make_samples(dataset, {"a": 5, "b": 5})
    v1 = dataset_version_create(dataset=dataset, seed=0)
    again = dataset_version_create(dataset=dataset, seed=0)
    assert v1.digest == again.digest and (v1.number, again.number) == (1, 2)
    from sampan.datasets.services import sample_label_set

    sample_label_set(sample=samples[0], label="b")  # relabel after freezing
    v3 = dataset_version_create(dataset=dataset, seed=0)
    assert v3.digest != v1.digest
    frozen = DatasetVersionItem.objects.get(version=v1, sample=samples[0])
    assert v1.labels[frozen.class_index] == "a"  # the old version did not change


def test_nothing_labeled_refuses_with_a_clear_message(dataset: Any) -> None:
    from sampan.core.errors import ValidationFailed

    with pytest.raises(ValidationFailed, match="no labeled samples"):
        dataset_version_create(dataset=dataset)


def test_label_one_and_many_through_the_api(project_with_roles: dict[str, Any], api: Any,
                                             dataset: Any) -> None:
    samples = make_samples(dataset, {"a": 3})
    client = api(project_with_roles["editor"])
    base = f"/api/v1/projects/{project_with_roles['project'].pk}"
    response = client.put(f"{base}/samples/{samples[0].pk}/label/", {"class_label": "zebra"},
                          format="json")
    assert response.status_code == 200
    assert [a["class_label"] for a in response.json()["annotations"]] == ["zebra"]
    response = client.post(f"{base}/datasets/{dataset.pk}/labels/bulk/",
                           {"sample_ids": [str(s.pk) for s in samples], "class_label": "b"},
                           format="json")
    assert response.json() == {"labeled": 3}
    names = list(dataset.class_labels.values_list("name", flat=True))
    assert names == ["a", "zebra", "b"]  # explicit, stable order: first seen first
    listed = client.get(f"{base}/datasets/{dataset.pk}/samples/?label=b").json()
    assert listed["count"] == 3
    response = client.post(f"{base}/datasets/{dataset.pk}/labels/bulk/",
                           {"sample_ids": [str(samples[0].pk),
                                           "00000000-0000-0000-0000-000000000000"],
                            "class_label": "a"}, format="json")
    assert response.status_code == 400 and "00000000" in response.json()["error"]["message"]
    assert client.get(f"{base}/datasets/{dataset.pk}/samples/?label=b").json()["count"] == 3


def test_boxes_are_stored_in_upright_pixels_and_validated(project_with_roles: dict[str, Any],
                                                          api: Any) -> None:
    dataset = dataset_create(project=project_with_roles["project"], name="shelf",
                             task_type="object_detection")
    sample = make_samples(dataset, {"a": 1})[0]
    client = api(project_with_roles["editor"])
    url = f"/api/v1/projects/{project_with_roles['project'].pk}/samples/{sample.pk}/boxes/"
    response = client.put(url, {"boxes": [{"x1": 1, "y1": 2, "x2": 30, "y2": 29,
                                           "class_label": "car"}]}, format="json")
    assert response.status_code == 200
    boxes = [a for a in response.json()["annotations"] if a["kind"] == "box"]
    assert [(b["x1"], b["y1"], b["x2"], b["y2"], b["class_label"]) for b in boxes] == [
        (1.0, 2.0, 30.0, 29.0, "car")]
    response = client.put(url, {"boxes": [{"x1": 1, "y1": 2, "x2": 30, "y2": 29,
                                           "class_label": "car"},
                                          {"x1": 5, "y1": 5, "x2": 41, "y2": 10,
                                           "class_label": "car"}]}, format="json")
    assert response.status_code == 400
    assert "boxes[1]" in response.json()["error"]["message"]
    # a box without a class names the box and its field (a new user's review: "class_label")
    response = client.put(url, {"boxes": [{"x1": 1, "y1": 2, "x2": 30, "y2": 29,
                                           "class_label": "car"},
                                          {"x1": 1, "y1": 2, "x2": 9, "y2": 9}]}, format="json")
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["field"] == "boxes[1].class_label", error
    assert error["message"].startswith("boxes[1]: give class_label")
    assert len([a for a in client.get(url.replace("boxes/", "")).json()["annotations"]
                if a["kind"] == "box"]) == 1  # nothing half-written


def test_class_labels_keep_explicit_positions(dataset: Any) -> None:
    class_labels_ensure(dataset=dataset, names=["10", "2"])
    class_labels_ensure(dataset=dataset, names=["1", " 2 "])
    assert list(dataset.class_labels.values_list("name", "position")) == [
        ("10", 0), ("2", 1), ("1", 2)]


def test_boxes_on_a_classification_dataset_are_refused(project_with_roles: dict[str, Any],
                                                       api: Any, dataset: Any) -> None:
    sample = make_samples(dataset, {"a": 1})[0]
    url = f"/api/v1/projects/{project_with_roles['project'].pk}/samples/{sample.pk}/boxes/"
    response = api(project_with_roles["editor"]).put(
        url, {"boxes": [{"x1": 1, "y1": 1, "x2": 9, "y2": 9, "class_label": "new"}]},
        format="json")
    assert response.status_code == 400 and response.json()["error"]["field"] == "boxes"
    assert list(dataset.class_labels.values_list("name", flat=True)) == ["a"]


@pytest.mark.parametrize("body, message", [
    ({}, "class_label: null to remove"),
    ({"class_label": "a", "class_label_id": "00000000-0000-0000-0000-000000000000"}, "not both"),
])
def test_label_input_must_say_what_it_means(project_with_roles: dict[str, Any], api: Any,
                                            dataset: Any, body: dict[str, Any], message: str
                                            ) -> None:
    sample = make_samples(dataset, {"a": 1})[0]
    url = f"/api/v1/projects/{project_with_roles['project'].pk}/samples/{sample.pk}/label/"
    response = api(project_with_roles["editor"]).put(url, body, format="json")
    assert response.status_code == 400 and message in response.json()["error"]["message"]
    response = api(project_with_roles["editor"]).put(url, {"class_label": None}, format="json")
    assert response.status_code == 200 and response.json()["annotations"] == []


def test_huge_seed_is_a_400_not_a_crash(project_with_roles: dict[str, Any], api: Any,
                                        dataset: Any) -> None:
    make_samples(dataset, {"a": 2, "b": 2})
    url = f"/api/v1/projects/{project_with_roles['project'].pk}/datasets/{dataset.pk}/versions/"
    response = api(project_with_roles["editor"]).post(url, {"seed": 2**70}, format="json")
    assert response.status_code == 400 and response.json()["error"]["field"] == "seed"


def test_default_split_is_70_15_15_for_classes_big_enough_for_a_test_split(dataset: Any) -> None:
    make_samples(dataset, {"a": 20, "b": 10, "c": 9})
    version = dataset_version_create(dataset=dataset, seed=0)
    assert version.split_fractions == {"val": 0.15, "test": 0.15}
    # a: round(3.0) = 3 val and 3 test; b: round(1.5) = 2 each; c has 9 < 10: train/val only
    assert version.stats["classes"] == {"a": {"train": 14, "val": 3, "test": 3},
                                        "b": {"train": 6, "val": 2, "test": 2},
                                        "c": {"train": 8, "val": 1}}
    assert version.stats["splits"] == {"train": 28, "val": 6, "test": 5}
    assert version.flags == [{
        "code": "no_test_split_for_class", "class_index": 2, "class": "c",
        "message": "class 'c' has 9 samples: too few for a test split (needs 10); it is left "
                   "out of the test report"}]  # 20 / 9 = 2.2x: below the imbalance flag


def test_tiny_dataset_gets_a_version_with_train_and_val_only(dataset: Any) -> None:
    # 11 images over 4 classes (the smallest data a user might try)
    make_samples(dataset, {"cat": 5, "dog": 3, "fox": 2, "owl": 1})
    version = dataset_version_create(dataset=dataset, seed=0)
    assert version.labels == ["cat", "dog", "fox", "owl"]
    # val: round(0.75) = 1, round(0.45) -> at least 1, round(0.3) -> at least 1, owl none
    assert version.stats["classes"] == {"cat": {"train": 4, "val": 1},
                                        "dog": {"train": 2, "val": 1},
                                        "fox": {"train": 1, "val": 1},
                                        "owl": {"train": 1}}
    assert version.stats["splits"] == {"train": 8, "val": 3}
    codes = [f["code"] for f in version.flags]
    assert codes == ["no_test_split", "class_too_small", "class_imbalance"]
    no_test = version.flags[0]
    assert f"the {MIN_SAMPLES_FOR_TEST} labelled samples" in no_test["message"]
    assert "largest has 5" in no_test["message"] and "train and val splits only" in \
        no_test["message"]
    assert version.flags[1]["class"] == "owl"
    assert version.flags[2]["ratio"] == 5.0
    assert "'cat' has 5 samples, 'owl' only 1" in version.flags[2]["message"]


@pytest.mark.parametrize("counts, ratio", [({"a": 9, "b": 3}, 3.0), ({"a": 8, "b": 3}, None),
                                           ({"a": 30, "b": 12, "c": 4}, 7.5)])
def test_class_imbalance_is_flagged_from_three_to_one(dataset: Any, counts: dict[str, int],
                                                      ratio: float | None) -> None:
    make_samples(dataset, counts)
    version = dataset_version_create(dataset=dataset, seed=0, test_fraction=0.0)
    flags = [f for f in version.flags if f["code"] == "class_imbalance"]
    assert [f["ratio"] for f in flags] == ([ratio] if ratio else [])


def test_explicit_zero_test_fraction_says_the_report_will_be_on_validation(dataset: Any) -> None:
    make_samples(dataset, {"a": 4, "b": 4})
    version = dataset_version_create(dataset=dataset, seed=0, val_fraction=0.25,
                                     test_fraction=0.0)
    assert [f["code"] for f in version.flags] == ["no_test_split"]  # one flag, not per class
    assert "test fraction is 0" in version.flags[0]["message"]
    assert version.stats["splits"] == {"train": 6, "val": 2}


def test_version_api_defaults_and_minimum_budget(project_with_roles: dict[str, Any], api: Any,
                                                dataset: Any) -> None:
    make_samples(dataset, {"a": 10, "b": 10})
    url = f"/api/v1/projects/{project_with_roles['project'].pk}/datasets/{dataset.pk}/versions/"
    body = api(project_with_roles["editor"]).post(url, {}, format="json").json()
    assert body["split_fractions"] == {"val": 0.15, "test": 0.15}
    assert body["stats"]["splits"] == {"train": 12, "val": 4, "test": 4}
    assert body["flags"] == []
    # 15 s + 0.01 s for each of the 20 images + 1.5e-8 s a pixel, in whole seconds (the
    # number the refusal names)
    assert body["min_budget_s"] == 16
    listed = api(project_with_roles["viewer"]).get(url).json()
    assert [v["min_budget_s"] for v in listed] == [16]
