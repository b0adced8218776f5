"""Labeling keys chosen per class (``PUT .../class-labels/hotkeys/``): stored, validated, kept."""

from __future__ import annotations

from typing import Any

import pytest

from sampan.datasets.services import dataset_create

pytestmark = pytest.mark.django_db


@pytest.fixture
def pets(project_with_roles: dict[str, Any]) -> dict[str, Any]:
    project = project_with_roles["project"]
    dataset = dataset_create(project=project, name="pets", labels=["cat", "dog", "bird"])
    base = f"/api/v1/projects/{project.pk}/datasets/{dataset.pk}/"
    ids = {c.name: str(c.pk) for c in dataset.class_labels.all()}
    return {"dataset": dataset, "base": base, "ids": ids}


def _keys(response: Any) -> dict[str, str]:
    return {c["name"]: c["hotkey"] for c in response.json()}


def test_chosen_keys_are_stored_and_come_back_with_the_dataset(
        project_with_roles: dict[str, Any], api: Any, pets: dict[str, Any]) -> None:
    client = api(project_with_roles["editor"])
    assert _keys_of(client, pets) == {"cat": "", "dog": "", "bird": ""}  # automatic
    response = client.put(pets["base"] + "class-labels/hotkeys/", {"hotkeys": [
        {"class_label_id": pets["ids"]["cat"], "hotkey": "C"},
        {"class_label_id": pets["ids"]["dog"], "hotkey": "d"}]}, format="json")
    assert response.status_code == 200
    assert _keys(response) == {"cat": "c", "dog": "d", "bird": ""}
    # a reload (another client, a new request) sees them
    assert _keys_of(api(project_with_roles["viewer"]), pets) == {"cat": "c", "dog": "d",
                                                                 "bird": ""}
    # two classes swap keys in one call; "" gives a class its automatic key back
    swapped = client.put(pets["base"] + "class-labels/hotkeys/", {"hotkeys": [
        {"class_label_id": pets["ids"]["cat"], "hotkey": "d"},
        {"class_label_id": pets["ids"]["dog"], "hotkey": "c"}]}, format="json")
    assert _keys(swapped) == {"cat": "d", "dog": "c", "bird": ""}
    cleared = client.put(pets["base"] + "class-labels/hotkeys/", {"hotkeys": [
        {"class_label_id": pets["ids"]["dog"], "hotkey": ""}]}, format="json")
    assert _keys(cleared) == {"cat": "d", "dog": "", "bird": ""}


def _keys_of(client: Any, pets: dict[str, Any]) -> dict[str, str]:
    classes = client.get(pets["base"]).json()["class_labels"]
    return {c["name"]: c["hotkey"] for c in classes}


@pytest.mark.parametrize(("entries", "field", "words"), [
    ([("cat", "cd")], "hotkeys[0].hotkey", "one character"),
    ([("cat", "!")], "hotkeys[0].hotkey", "0-9 or a-z"),
    ([("cat", "n")], "hotkeys[0].hotkey", "labeling shortcut"),
    ([("cat", "P")], "hotkeys[0].hotkey", "labeling shortcut"),
    ([("cat", "x"), ("dog", "x")], "hotkeys[1].hotkey", "already the key of class 'cat'"),
    ([("bird", "b"), ("dog", "1"), ("cat", "1")], "hotkeys[2].hotkey", "already the key"),
    ([("cat", "x"), ("cat", "y")], "hotkeys[1].class_label_id", "named twice"),
])
def test_a_bad_key_is_a_400_naming_the_entry_and_nothing_changes(
        project_with_roles: dict[str, Any], api: Any, pets: dict[str, Any],
        entries: list[tuple[str, str]], field: str, words: str) -> None:
    client = api(project_with_roles["editor"])
    response = client.put(pets["base"] + "class-labels/hotkeys/", {"hotkeys": [
        {"class_label_id": pets["ids"][name], "hotkey": key} for name, key in entries]},
        format="json")
    assert response.status_code == 400, response.json()
    error = response.json()["error"]
    assert error["field"] == field and words in error["message"], error
    assert _keys_of(client, pets) == {"cat": "", "dog": "", "bird": ""}


def test_a_key_taken_by_a_class_not_in_the_request_is_refused(
        project_with_roles: dict[str, Any], api: Any, pets: dict[str, Any]) -> None:
    client = api(project_with_roles["editor"])
    client.put(pets["base"] + "class-labels/hotkeys/", {"hotkeys": [
        {"class_label_id": pets["ids"]["bird"], "hotkey": "b"}]}, format="json")
    response = client.put(pets["base"] + "class-labels/hotkeys/", {"hotkeys": [
        {"class_label_id": pets["ids"]["cat"], "hotkey": "B"}]}, format="json")
    assert response.status_code == 400
    assert response.json()["error"]["field"] == "hotkeys[0].hotkey"
    assert "'bird'" in response.json()["error"]["message"]


def test_another_datasets_class_and_a_viewer_are_refused(
        project_with_roles: dict[str, Any], api: Any, pets: dict[str, Any]) -> None:
    other = dataset_create(project=project_with_roles["project"], name="other", labels=["x"])
    foreign = str(other.class_labels.get().pk)
    client = api(project_with_roles["editor"])
    response = client.put(pets["base"] + "class-labels/hotkeys/", {"hotkeys": [
        {"class_label_id": foreign, "hotkey": "x"}]}, format="json")
    assert response.status_code == 400
    assert response.json()["error"]["field"] == "hotkeys[0].class_label_id"
    viewer = api(project_with_roles["viewer"]).put(
        pets["base"] + "class-labels/hotkeys/", {"hotkeys": [
            {"class_label_id": pets["ids"]["cat"], "hotkey": "c"}]}, format="json")
    assert viewer.status_code == 403
