"""Two people editing one sample: a write from a stale copy (If-Match with an older ETag) is refused
with 412 and changes nothing; without If-Match the API keeps working for scripts."""

from __future__ import annotations

from typing import Any

import pytest

from sampan.datasets.etags import if_match_holds
from sampan.datasets.models import Sample
from sampan.datasets.services import dataset_create

pytestmark = pytest.mark.django_db

CAR = {"x1": 10.0, "y1": 20.0, "x2": 110.0, "y2": 80.0, "class_label": "car"}
PERSON = {"x1": 200.0, "y1": 40.0, "x2": 250.0, "y2": 180.0, "class_label": "person"}


def _sample(dataset: Any, name: str = "street_0.png") -> Sample:
    return Sample.objects.create(dataset=dataset, content_sha256=name.ljust(64, "0"),
                                 file=f"samples/{name}", original_name=name, width=320,
                                 height=240)


def _boxes(response: Any) -> list[tuple[str, float, float, float, float]]:
    return [(a["class_label"], a["x1"], a["y1"], a["x2"], a["y2"])
            for a in response.json()["annotations"] if a["kind"] == "box"]


@pytest.fixture
def street(project_with_roles: dict[str, Any]) -> dict[str, Any]:
    project = project_with_roles["project"]
    dataset = dataset_create(project=project, name="street", task_type="object_detection",
                             labels=["car", "person"])
    sample = _sample(dataset)
    return {"project": project, "dataset": dataset, "sample": sample,
            "url": f"/api/v1/projects/{project.pk}/samples/{sample.pk}/"}


def test_the_second_save_from_a_stale_copy_is_refused_with_412(
        project_with_roles: dict[str, Any], api: Any, street: dict[str, Any]) -> None:
    alice, bob = api(project_with_roles["editor"]), api(project_with_roles["owner"])
    # both open the sample with no boxes
    opened = alice.get(street["url"])
    assert opened.status_code == 200
    etag = opened["ETag"]
    assert etag == f'"{opened.json()["etag"]}"' and len(opened.json()["etag"]) == 32
    assert bob.get(street["url"])["ETag"] == etag

    # Alice saves a car; the answer carries the new tag
    saved = alice.put(street["url"] + "boxes/", {"boxes": [CAR]}, format="json",
                      HTTP_IF_MATCH=etag)
    assert saved.status_code == 200
    assert _boxes(saved) == [("car", 10.0, 20.0, 110.0, 80.0)]
    assert saved["ETag"] != etag and saved["ETag"] == f'"{saved.json()["etag"]}"'

    # Bob saves a person from the copy he opened before: refused, Alice's car stays
    stale = bob.put(street["url"] + "boxes/", {"boxes": [PERSON]}, format="json",
                    HTTP_IF_MATCH=etag)
    assert stale.status_code == 412
    assert stale.json() == {"error": {
        "code": "precondition_failed",
        "message": "these boxes were changed by someone else since you opened them; reload to "
                   "see them",
        "field": "If-Match",
        "details": {"etag": saved.json()["etag"]}}}
    assert _boxes(bob.get(street["url"])) == [("car", 10.0, 20.0, 110.0, 80.0)]

    # after a reload Bob has the current tag, and his save goes through
    reloaded = bob.get(street["url"])
    both = bob.put(street["url"] + "boxes/", {"boxes": [CAR, PERSON]}, format="json",
                   HTTP_IF_MATCH=reloaded["ETag"])
    assert both.status_code == 200
    assert _boxes(both) == [("car", 10.0, 20.0, 110.0, 80.0),
                            ("person", 200.0, 40.0, 250.0, 180.0)]


def test_without_if_match_a_write_goes_on_as_before(project_with_roles: dict[str, Any], api: Any,
                                                    street: dict[str, Any]) -> None:
    client = api(project_with_roles["editor"])
    first = client.put(street["url"] + "boxes/", {"boxes": [CAR]}, format="json")
    second = client.put(street["url"] + "boxes/", {"boxes": [PERSON]}, format="json")
    assert first.status_code == second.status_code == 200
    assert _boxes(second) == [("person", 200.0, 40.0, 250.0, 180.0)]
    assert first.json()["etag"] != second.json()["etag"]
    # "*" matches whatever is stored
    star = client.put(street["url"] + "boxes/", {"boxes": []}, format="json", HTTP_IF_MATCH="*")
    assert star.status_code == 200 and _boxes(star) == []


def test_an_invalid_write_with_a_stale_tag_says_412_and_an_invalid_box_still_says_which(
        project_with_roles: dict[str, Any], api: Any, street: dict[str, Any]) -> None:
    client = api(project_with_roles["editor"])
    etag = client.get(street["url"])["ETag"]
    client.put(street["url"] + "boxes/", {"boxes": [CAR]}, format="json")
    outside = {**CAR, "x2": 400.0}
    fresh = client.get(street["url"])["ETag"]
    bad = client.put(street["url"] + "boxes/", {"boxes": [outside]}, format="json",
                     HTTP_IF_MATCH=fresh)
    assert bad.status_code == 400 and bad.json()["error"]["field"] == "boxes[0]"
    stale = client.put(street["url"] + "boxes/", {"boxes": [PERSON]}, format="json",
                       HTTP_IF_MATCH=etag)
    assert stale.status_code == 412
    assert client.get(street["url"])["ETag"] == fresh  # nothing was written by either


def test_the_label_endpoint_takes_if_match_too(project_with_roles: dict[str, Any],
                                               api: Any) -> None:
    project = project_with_roles["project"]
    dataset = dataset_create(project=project, name="digits", labels=[str(d) for d in range(10)])
    sample = _sample(dataset, "3_001.png")
    url = f"/api/v1/projects/{project.pk}/samples/{sample.pk}/"
    alice, bob = api(project_with_roles["editor"]), api(project_with_roles["owner"])
    opened = alice.get(url)["ETag"]
    three = alice.put(url + "label/", {"class_label": "3"}, format="json", HTTP_IF_MATCH=opened)
    assert three.status_code == 200
    stale = bob.put(url + "label/", {"class_label": "8"}, format="json", HTTP_IF_MATCH=opened)
    assert stale.status_code == 412
    assert stale.json()["error"]["message"] == (
        "this sample's label was changed by someone else since you opened it; reload to see it")
    assert [a["class_label"] for a in bob.get(url).json()["annotations"]] == ["3"]
    # an undo from the tag Alice got back clears it
    undone = alice.put(url + "label/", {"class_label": None}, format="json",
                       HTTP_IF_MATCH=three["ETag"])
    assert undone.status_code == 200 and undone.json()["annotations"] == []


def test_the_sample_list_carries_each_samples_etag(project_with_roles: dict[str, Any], api: Any,
                                                   street: dict[str, Any]) -> None:
    client = api(project_with_roles["viewer"])
    api(project_with_roles["editor"]).put(street["url"] + "boxes/", {"boxes": [CAR]},
                                          format="json")
    listed = client.get(f"/api/v1/projects/{street['project'].pk}/datasets/"
                        f"{street['dataset'].pk}/samples/").json()["results"]
    assert [row["etag"] for row in listed] == [client.get(street["url"]).json()["etag"]]


@pytest.mark.parametrize(("header", "holds"), [
    ('"abc"', True), ("abc", True), ('"x", "abc"', True), ("*", True),
    ('W/"abc"', False), ('"abd"', False), ('"ab"', False),
])
def test_if_match_compares_strongly(header: str, holds: bool) -> None:
    assert if_match_holds(header, "abc") is holds
