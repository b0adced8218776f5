"""Assisted labeling: a registered model version pre-labels a dataset's unlabeled samples with
the edge agent's own session, leaving suggestions and an uncertainty per sample that are never
labels until a person accepts them.

The models are real ONNX graphs run by onnxruntime: the colour classifier of
tests/edge_agent/conftest.py (channel means -> 10 x identity -> softmax, so its probabilities
for a one-colour image are known in closed form) registered as a signed package, and the
fixed-answer detector of tests/fixtures/detection_models.py.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from sampan.core.jobs import JobStatus
from sampan.datasets import prelabel
from sampan.datasets.models import (Annotation, DatasetVersionItem, PrelabelJob, Sample,
                                    Suggestion)
from sampan.datasets.prelabel import prelabel_job_run
from sampan.datasets.imports import import_job_run
from sampan.registry.services import model_version_register
from tests.edge_agent.conftest import build_classifier
from tests.fixtures.detection import dataset_context, image_bytes
from tests.fixtures.detection_models import detection_version

pytestmark = pytest.mark.django_db

COLOURS = ["red", "green", "blue"]
GAIN = 10.0  # build_classifier's weights: GAIN x identity


def classifier_version(project: Any, tmp_path: Path, labels: list[str] = COLOURS,
                       name: str = "colours") -> Any:
    onnx_path = tmp_path / f"{name}.onnx"
    onnx_path.write_bytes(build_classifier(labels, size=8, gain=GAIN))
    return model_version_register(
        project=project, model_name=name, task_type="image_classification", labels=labels,
        preprocessing={"size": [8, 8], "resize": "stretch", "mean": [0.5] * 3, "std": [0.5] * 3,
                       "colour_order": "RGB", "layout": "NCHW", "dtype": "float32"},
        onnx_path=onnx_path, input_shape=["N", 3, 8, 8], metrics={}, lineage={},
        onnx_info={"opset": 18, "ir_version": 10}, pretrained=False)


def expected_probabilities(colour: tuple[int, int, int]) -> list[float]:
    """The colour classifier's answer for an image of one colour, computed by hand: each channel
    v -> (v / 255 - 0.5) / 0.5, logits = GAIN x that, softmax."""
    logits = [GAIN * (v / 255 - 0.5) / 0.5 for v in colour]
    top = max(logits)
    exp = [math.exp(x - top) for x in logits]
    return [e / sum(exp) for e in exp]


def import_images(ctx: dict[str, Any], images: dict[str, bytes]) -> dict[str, Sample]:
    """Loose images through the import API (stored as the platform stores them); name ->
    sample."""
    response = ctx["client"].post(
        f"{ctx['base']}/datasets/{ctx['dataset']['id']}/imports/",
        {"files": [SimpleUploadedFile(n, data) for n, data in images.items()]},
        format="multipart")
    assert response.status_code == 202, response.json()
    import_job_run(job_id=response.json()["id"])
    return {s.original_name: s for s in Sample.objects.filter(dataset_id=ctx["dataset"]["id"])}


def start(ctx: dict[str, Any], version: Any, **extra: Any) -> Any:
    return ctx["client"].post(f"{ctx['base']}/datasets/{ctx['dataset']['id']}/prelabel-jobs/",
                              {"model_version_id": str(version.pk), **extra}, format="json")


def run(ctx: dict[str, Any], version: Any, **extra: Any) -> dict[str, Any]:
    """Start a pre-labeling job through the API, run the task body here, return the job."""
    response = start(ctx, version, **extra)
    assert response.status_code == 202, response.json()
    assert response.json()["status"] == "QUEUED"
    prelabel_job_run(job_id=response.json()["id"])
    return ctx["client"].get(f"{ctx['base']}/prelabel-jobs/{response.json()['id']}/").json()


def sample_json(ctx: dict[str, Any], sample: Sample) -> dict[str, Any]:
    return ctx["client"].get(f"{ctx['base']}/samples/{sample.pk}/").json()


def freeze(ctx: dict[str, Any]) -> set[str]:
    """Freeze a version; the original names of the samples in it."""
    response = ctx["client"].post(f"{ctx['base']}/datasets/{ctx['dataset']['id']}/versions/",
                                  {"val_fraction": 0.0, "test_fraction": 0.0}, format="json")
    assert response.status_code == 201, response.json()
    return set(DatasetVersionItem.objects.filter(version_id=response.json()["id"])
               .values_list("sample__original_name", flat=True))


@pytest.fixture
def client(project_with_roles: dict[str, Any], api: Any) -> Any:
    return api(project_with_roles["editor"])


# one-colour images and what the classifier thinks of them: sure, unsure, in between
PAINTS = {"scarlet.png": (255, 0, 0), "grey.png": (128, 128, 128),
          "olive.png": (150, 120, 0), "teal.png": (0, 140, 150), "cobalt.png": (10, 40, 240)}


@pytest.fixture
def colours(client: Any, project_with_roles: dict[str, Any], tmp_path: Path
            ) -> dict[str, Any]:
    ctx = dataset_context(client, project_with_roles["project"].pk, "paints",
                          "image_classification")
    client.post(f"{ctx['base']}/datasets/{ctx['dataset']['id']}/class-labels/",
                {"names": COLOURS}, format="json")
    samples = import_images(ctx, {n: image_bytes(c, (8, 8)) for n, c in PAINTS.items()})
    # a person labeled cobalt before the model came: the model never touches it
    client.put(f"{ctx['base']}/samples/{samples['cobalt.png'].pk}/label/",
               {"class_label": "blue"}, format="json")
    version = classifier_version(project_with_roles["project"], tmp_path)
    return {**ctx, "samples": samples, "version": version}


def test_a_classifier_suggests_its_most_probable_class_and_its_least_confidence(
        colours: dict[str, Any]) -> None:
    job = run(colours, colours["version"])
    assert job["status"] == "SUCCEEDED", job["error"]
    assert job["report"]["counts"] == {"done": 4, "suggestions": 4, "suggested_samples": 4}
    assert job["report"]["samples"] == 4 and job["progress"]["fraction"] == 1.0
    assert job["model_version_label"] == "colours v1"
    for name, colour in PAINTS.items():
        body = sample_json(colours, colours["samples"][name])
        if name == "cobalt.png":  # labeled by a person: no suggestion, no uncertainty
            assert body["suggestions"] == [] and body["uncertainty"] is None
            continue
        p = expected_probabilities(colour)
        (suggestion,) = body["suggestions"]
        assert suggestion["kind"] == "class"
        assert suggestion["class_label"] == COLOURS[p.index(max(p))]
        assert suggestion["score"] == pytest.approx(max(p), abs=1e-5)
        assert suggestion["model_version_id"] == str(colours["version"].pk)
        # least confidence: 1 - max probability
        assert body["uncertainty"] == pytest.approx(1 - max(p), abs=1e-5)
        assert body["annotations"] == []  # a suggestion is not a label
    # the grey image is nearly uniform over the 3 classes: 1 - 1/3
    assert sample_json(colours, colours["samples"]["grey.png"])["uncertainty"] == \
        pytest.approx(2 / 3, abs=1e-3)


def test_the_queue_sorts_most_uncertain_first(colours: dict[str, Any]) -> None:
    run(colours, colours["version"])
    url = f"{colours['base']}/datasets/{colours['dataset']['id']}/samples/"
    by_uncertainty = colours["client"].get(url, {"ordering": "-uncertainty"}).json()["results"]
    expected = sorted((n for n in PAINTS if n != "cobalt.png"),
                      key=lambda n: -(1 - max(expected_probabilities(PAINTS[n]))))
    assert expected[0] == "grey.png" and expected[-1] == "scarlet.png"
    # the one no model looked at (labeled before) comes last
    assert [row["original_name"] for row in by_uncertainty] == [*expected, "cobalt.png"]
    unlabeled = colours["client"].get(url, {"ordering": "-uncertainty", "unlabeled": "true"})
    assert [row["original_name"] for row in unlabeled.json()["results"]] == expected
    oldest = colours["client"].get(url).json()["results"]
    assert [row["original_name"] for row in oldest] == sorted(
        PAINTS, key=lambda n: colours["samples"][n].created_at)
    bad = colours["client"].get(url, {"ordering": "uncertainty"})
    assert bad.status_code == 400 and bad.json()["error"]["field"] == "ordering"


def test_a_suggestion_is_not_a_label_until_accepted_and_accepting_makes_exactly_one(
        colours: dict[str, Any]) -> None:
    run(colours, colours["version"])
    assert freeze(colours) == {"cobalt.png"}  # suggestions are not in a version
    teal = colours["samples"]["teal.png"]
    before = sample_json(colours, teal)
    url = f"{colours['base']}/samples/{teal.pk}/suggestions/accept/"

    stale = colours["client"].post(url, {}, format="json", HTTP_IF_MATCH='"0000"')
    assert stale.status_code == 412 and stale.json()["error"]["field"] == "If-Match"
    assert Suggestion.objects.filter(sample=teal).count() == 1

    accepted = colours["client"].post(url, {}, format="json",
                                      HTTP_IF_MATCH=f'"{before["etag"]}"')
    assert accepted.status_code == 200, accepted.json()
    body = accepted.json()
    p = expected_probabilities(PAINTS["teal.png"])
    assert [(a["kind"], a["class_label"]) for a in body["annotations"]] == [
        ("class", COLOURS[p.index(max(p))])]
    assert Annotation.objects.filter(sample=teal).count() == 1
    assert body["suggestions"] == [] and body["etag"] != before["etag"]
    assert accepted["ETag"] == f'"{body["etag"]}"'
    # accepted already: nothing left to accept
    again = colours["client"].post(url, {}, format="json")
    assert again.status_code == 400 and again.json()["error"]["field"] == "suggestion_ids"
    assert freeze(colours) == {"cobalt.png", "teal.png"}


def test_a_class_key_replaces_the_suggestion_and_reject_removes_it(
        colours: dict[str, Any]) -> None:
    run(colours, colours["version"])
    olive, grey = colours["samples"]["olive.png"], colours["samples"]["grey.png"]
    response = colours["client"].put(f"{colours['base']}/samples/{olive.pk}/label/",
                                     {"class_label": "blue"}, format="json")
    assert [a["class_label"] for a in response.json()["annotations"]] == ["blue"]
    assert response.json()["suggestions"] == []

    before = sample_json(colours, grey)
    rejected = colours["client"].post(f"{colours['base']}/samples/{grey.pk}/suggestions/reject/",
                                      {"suggestion_ids": [before["suggestions"][0]["id"]]},
                                      format="json")
    assert rejected.status_code == 200
    assert rejected.json()["suggestions"] == [] and rejected.json()["annotations"] == []
    assert rejected.json()["etag"] == before["etag"]  # labels did not change
    unknown = colours["client"].post(f"{colours['base']}/samples/{grey.pk}/suggestions/reject/",
                                     {"suggestion_ids": [before["suggestions"][0]["id"]]},
                                     format="json")
    assert unknown.status_code == 400 and unknown.json()["error"]["field"] == "suggestion_ids"


def test_a_second_run_replaces_the_suggestions_of_the_first(colours: dict[str, Any]) -> None:
    run(colours, colours["version"])
    run(colours, colours["version"])
    assert Suggestion.objects.filter(sample__dataset_id=colours["dataset"]["id"]).count() == 4


# ------------------------------------------------------------------------------- detection

@pytest.fixture
def street(client: Any, project_with_roles: dict[str, Any]) -> dict[str, Any]:
    ctx = dataset_context(client, project_with_roles["project"].pk, "street")
    client.post(f"{ctx['base']}/datasets/{ctx['dataset']['id']}/class-labels/",
                {"names": ["car", "person"]}, format="json")
    grey = (90, 90, 90)
    samples = import_images(ctx, {"small.png": image_bytes(grey, (64, 64)),
                                  "large.png": image_bytes((91, 90, 90), (128, 128)),
                                  "boxed.png": image_bytes((92, 90, 90), (64, 64)),
                                  "empty.png": image_bytes((93, 90, 90), (64, 64))})
    client.put(f"{ctx['base']}/samples/{samples['boxed.png'].pk}/boxes/",
               {"boxes": [{"x1": 1, "y1": 1, "x2": 9, "y2": 9, "class_label": "car"}]},
               format="json")
    client.put(f"{ctx['base']}/samples/{samples['empty.png'].pk}/boxes/",
               {"boxes": [], "no_objects": True}, format="json")
    version = detection_version(project_with_roles["project"])
    return {**ctx, "samples": samples, "version": version}


def boxes_of(body: dict[str, Any], key: str = "suggestions") -> list[tuple[Any, ...]]:
    return [(b["class_label"], b["x1"], b["y1"], b["x2"], b["y2"]) + (
        (b["score"],) if key == "suggestions" else ()) for b in body[key]]


def test_a_detector_suggests_its_boxes_in_the_images_pixels(street: dict[str, Any]) -> None:
    job = run(street, street["version"])
    assert job["status"] == "SUCCEEDED", job["error"]
    assert job["report"]["counts"] == {"done": 2, "suggestions": 4, "suggested_samples": 2}
    assert job["report"]["score_threshold"] == 0.3  # the manifest's
    # the detector's fixed answer above 0.3 (tests/edge_agent/conftest.py DETECTOR_ANCHORS):
    # person 0.9 at (2, 4, 12, 20) and car 0.8 at (10, 30, 20, 34) in its 64 px input
    small = sample_json(street, street["samples"]["small.png"])
    assert boxes_of(small) == [("person", 2.0, 4.0, 12.0, 20.0, pytest.approx(0.9)),
                               ("car", 10.0, 30.0, 20.0, 34.0, pytest.approx(0.8))]
    large = sample_json(street, street["samples"]["large.png"])  # letterboxed at half size
    assert boxes_of(large) == [("person", 4.0, 8.0, 24.0, 40.0, pytest.approx(0.9)),
                               ("car", 20.0, 60.0, 40.0, 68.0, pytest.approx(0.8))]
    # uncertainty: max of 1 - |2s - 1| over the detections above 0.05 (0.9, 0.8, 0.2, 0.1):
    # 0.8 and 0.2 give 0.4
    assert small["uncertainty"] == pytest.approx(0.4, abs=1e-5)
    for name in ("boxed.png", "empty.png"):  # labeled: boxes, or checked "no objects"
        assert sample_json(street, street["samples"][name])["suggestions"] == []


def test_the_dataset_counts_its_samples_and_those_with_suggestions(
        street: dict[str, Any], colours: dict[str, Any]) -> None:
    """Two boxes on each of two samples count two suggested samples; another dataset of the
    project (5 samples, none suggested yet) keeps its own counts, and a new one has zeros."""
    run(street, street["version"])
    datasets = f"{street['base']}/datasets/"
    empty = street["client"].post(datasets, {"name": "empty"}, format="json").json()
    counts = {d["name"]: (d["sample_count"], d["suggested_samples"])
              for d in street["client"].get(datasets).json()}
    assert counts == {"street": (4, 2), "paints": (5, 0), "empty": (0, 0)}
    detail = street["client"].get(f"{datasets}{street['dataset']['id']}/").json()
    assert (detail["sample_count"], detail["suggested_samples"]) == (4, 2)
    assert street["client"].get(f"{datasets}{empty['id']}/").json()["sample_count"] == 0


def test_a_score_threshold_keeps_the_boxes_above_it(street: dict[str, Any]) -> None:
    job = run(street, street["version"], score_threshold=0.85)
    assert job["report"]["score_threshold"] == 0.85
    small = sample_json(street, street["samples"]["small.png"])
    assert [b[0] for b in boxes_of(small)] == ["person"]


def test_accept_all_boxes_adds_them_once_and_only_then_they_are_in_a_version(
        street: dict[str, Any]) -> None:
    run(street, street["version"])
    assert freeze(street) == {"boxed.png", "empty.png"}
    small = street["samples"]["small.png"]
    before = sample_json(street, small)
    accepted = street["client"].post(f"{street['base']}/samples/{small.pk}/suggestions/accept/",
                                     {}, format="json", HTTP_IF_MATCH=f'"{before["etag"]}"')
    assert accepted.status_code == 200, accepted.json()
    assert boxes_of(accepted.json(), "annotations") == [("person", 2.0, 4.0, 12.0, 20.0),
                                                        ("car", 10.0, 30.0, 20.0, 34.0)]
    assert accepted.json()["suggestions"] == []
    assert Annotation.objects.filter(sample=small).count() == 2
    assert freeze(street) == {"boxed.png", "empty.png", "small.png"}


def test_one_box_accepted_then_corrected_by_the_boxes_write_that_resolves_the_rest(
        street: dict[str, Any]) -> None:
    run(street, street["version"])
    large = street["samples"]["large.png"]
    body = sample_json(street, large)
    person, car = body["suggestions"]
    url = f"{street['base']}/samples/{large.pk}/suggestions/accept/"
    one = street["client"].post(url, {"suggestion_ids": [person["id"]]}, format="json",
                                HTTP_IF_MATCH=f'"{body["etag"]}"')
    assert boxes_of(one.json(), "annotations") == [("person", 4.0, 8.0, 24.0, 40.0)]
    assert [s["id"] for s in one.json()["suggestions"]] == [car["id"]]
    # the console corrects the accepted box and rejects the car in one save of the list
    saved = street["client"].put(
        f"{street['base']}/samples/{large.pk}/boxes/",
        {"boxes": [{"x1": 5, "y1": 8, "x2": 24, "y2": 41, "class_label": "person"}],
         "resolved_suggestion_ids": [car["id"], person["id"]]},
        format="json", HTTP_IF_MATCH=f'"{one.json()["etag"]}"')
    assert saved.status_code == 200, saved.json()
    assert boxes_of(saved.json(), "annotations") == [("person", 5.0, 8.0, 24.0, 41.0)]
    assert saved.json()["suggestions"] == []


def test_no_objects_clears_the_box_suggestions(street: dict[str, Any]) -> None:
    run(street, street["version"])
    small = street["samples"]["small.png"]
    response = street["client"].put(f"{street['base']}/samples/{small.pk}/boxes/",
                                    {"boxes": [], "no_objects": True}, format="json")
    assert response.json()["no_objects"] is True and response.json()["suggestions"] == []


# -------------------------------------------------------------------------------- refusals

def test_a_model_of_the_other_task_or_without_a_shared_class_is_a_400_naming_the_field(
        street: dict[str, Any], colours: dict[str, Any], project_with_roles: dict[str, Any],
        tmp_path: Path) -> None:
    response = start(street, colours["version"])
    assert response.status_code == 400
    assert response.json()["error"] == {"code": "invalid", "field": "model_version_id", "message": (
        "colours v1 is an image_classification model and this dataset is object_detection: "
        "choose a model of the dataset's task")}
    pets = classifier_version(project_with_roles["project"], tmp_path, ["cat", "dog", "bird"],
                              name="pets")
    response = start(colours, pets)
    assert response.status_code == 400
    assert response.json()["error"] == {"code": "invalid", "field": "model_version_id", "message": (
        "pets v1 knows 'cat', 'dog', 'bird' and this dataset has 'blue', 'green', 'red': no "
        "class in common (a suggestion is a class of the dataset, matched by name); add the "
        "classes first")}
    response = start(colours, colours["version"], score_threshold=0.5)
    assert response.status_code == 400 and response.json()["error"]["field"] == "score_threshold"
    response = start(street, street["version"], score_threshold=1.5)
    assert response.status_code == 400 and response.json()["error"]["field"] == "score_threshold"
    assert PrelabelJob.objects.count() == 0


def test_a_model_of_another_project_is_a_404_and_one_run_at_a_time(
        colours: dict[str, Any], project_with_roles: dict[str, Any], tmp_path: Path) -> None:
    theirs = classifier_version(project_with_roles["other"], tmp_path)
    response = start(colours, theirs)
    assert response.status_code == 404
    assert response.json()["error"]["field"] == "model_version_id"
    first = start(colours, colours["version"])
    assert first.status_code == 202
    second = start(colours, colours["version"])
    assert second.status_code == 409
    assert second.json()["error"]["details"] == {"job_id": first.json()["id"]}


def test_viewers_read_runs_editors_start_them_outsiders_see_nothing(
        colours: dict[str, Any], project_with_roles: dict[str, Any], api: Any) -> None:
    viewer = api(project_with_roles["viewer"])
    url = f"{colours['base']}/datasets/{colours['dataset']['id']}/prelabel-jobs/"
    refused = viewer.post(url, {"model_version_id": str(colours["version"].pk)}, format="json")
    assert refused.status_code == 403
    job = run(colours, colours["version"])
    assert [j["id"] for j in viewer.get(url).json()] == [job["id"]]
    teal = colours["samples"]["teal.png"]
    assert viewer.post(f"{colours['base']}/samples/{teal.pk}/suggestions/accept/", {},
                       format="json").status_code == 403
    outsider = api(project_with_roles["outsider"])
    assert outsider.get(f"{colours['base']}/prelabel-jobs/{job['id']}/").status_code == 404


# ---------------------------------------------------------------------- cancel, failures

def test_cancel_stops_the_run_before_the_next_image(colours: dict[str, Any],
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    response = start(colours, colours["version"])
    job_id = response.json()["id"]
    real = prelabel.shared_storage.read_bytes
    reads: list[str] = []

    def read_and_cancel_at_the_second(name: str) -> bytes:
        # the person presses Cancel while the second image is being read
        reads.append(name)
        if len(reads) == 2:
            cancelled = colours["client"].post(f"{colours['base']}/prelabel-jobs/{job_id}/cancel/")
            assert cancelled.json()["status"] == "CANCELLED"
        return real(name)

    monkeypatch.setattr(prelabel.shared_storage, "read_bytes", read_and_cancel_at_the_second)
    prelabel_job_run(job_id=job_id)
    job = PrelabelJob.objects.get(pk=job_id)
    assert job.status == JobStatus.CANCELLED and job.error == "cancelled by user"
    assert len(reads) == 2  # 4 unlabeled samples: it stopped after the one in hand
    assert job.report["counts"]["done"] == 2
    assert Suggestion.objects.filter(sample__dataset_id=colours["dataset"]["id"]).count() == 2
    again = colours["client"].post(f"{colours['base']}/prelabel-jobs/{job_id}/cancel/")
    assert again.status_code == 400 and again.json()["error"]["field"] == "status"


def test_a_queued_run_cancelled_does_nothing_when_delivered(colours: dict[str, Any]) -> None:
    job_id = start(colours, colours["version"]).json()["id"]
    colours["client"].post(f"{colours['base']}/prelabel-jobs/{job_id}/cancel/")
    prelabel_job_run(job_id=job_id)
    assert PrelabelJob.objects.get(pk=job_id).status == JobStatus.CANCELLED
    assert Suggestion.objects.count() == 0


def test_a_missing_image_is_named_and_a_missing_model_fails_the_run(
        colours: dict[str, Any]) -> None:
    from sampan.core import storage

    storage.delete(colours["samples"]["grey.png"].file)
    job = run(colours, colours["version"])
    assert job["status"] == "SUCCEEDED"
    assert job["report"]["failed"] == [{"name": "grey.png", "reason": (
        "the image file is missing from the storage")}]
    assert job["report"]["counts"]["done"] == 3

    storage.delete(f"{colours['version'].package_dir}/model.onnx")
    job = run(colours, colours["version"])
    assert job["status"] == "FAILED"
    assert job["error"] == "colours v1 cannot be loaded: model.onnx of colours v1 is missing " \
                           "from storage"


def test_the_task_goes_to_the_imports_queue() -> None:
    from sampan.celery import app

    assert app.amqp.router.route({}, "datasets.run_prelabel")["queue"].name == "imports"
