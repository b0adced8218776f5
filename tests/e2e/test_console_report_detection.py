"""The evaluation report of an object detector (issue 10) in the real Chromium against the real
platform, with nothing trained: an EvaluationReport row is written straight into the stack's
database.

Redis and the web process run (no worker). The project and an object-detection dataset (car,
person) are made through the REST API; three 320x240 street images with their boxes, a frozen
dataset version, a finished training job and its report (the shape of
``workers.ml.detection.evaluation.detection_report``: five errors, one of each kind and more)
are seeded in ``manage.py shell``. Playwright then opens the report at 1280x720 as a person:
the headline mAP on the test split and the validation figures, the per-class table, the
precision-recall chart drawn, the error browser filtered by kind,
and an error opened large: the predicted and the version's true boxes drawn where they lie on
the image (to 1.5 CSS px), arrows to the next error, Esc to close. Screenshots go to
``$SAMPAN_SCREENSHOT_DIR`` (default ``test-artifacts/screenshots/``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from sampan.devstack.client import Client
from sampan.devstack.stack import Stack
from tests.database import stack_database_url

USERNAME, PASSWORD = "report-e2e", "report-e2e-password"
WIDTH, HEIGHT = 320, 240
CLASSES = ["car", "person"]
CAR, PERSON = (40, 120, 160, 190), (220, 40, 270, 180)


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """Redis and the web process: seeding needs no worker."""
    with Stack(data_dir=tmp_path_factory.mktemp("stack"),
               database_url=stack_database_url()) as s:
        s.start(worker=False)
        yield s


# Runs in `manage.py shell`: three images stored as the import stores them, a car and a person
# boxed on each (shifted 8 px per image), then version 1 of the dataset. Prints the ids.
SEED_IMAGES = """
import hashlib, io, json
from PIL import Image, ImageDraw
from sampan.datasets import storage
from sampan.datasets.models import Annotation, AnnotationKind, Dataset, Sample
from sampan.datasets.services import class_labels_ensure
from sampan.datasets.versions import dataset_version_create

dataset = Dataset.objects.get(pk="{dataset_id}")
labels = class_labels_ensure(dataset=dataset, names={classes!r})
ids = []
for i in range(3):
    car = ({car[0]} + 8 * i, {car[1]}, {car[2]} + 8 * i, {car[3]})
    person = ({person[0]} + 8 * i, {person[1]}, {person[2]} + 8 * i, {person[3]})
    image = Image.new("RGB", ({width}, {height}), (200, 205, 210))
    draw = ImageDraw.Draw(image)
    draw.rectangle(car, fill=(210, 40, 40))
    draw.rectangle(person, fill=(40, 70, 210))
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    digest = hashlib.sha256(buffer.getvalue()).hexdigest()
    sample = Sample.objects.create(
        dataset=dataset, content_sha256=digest, width={width}, height={height},
        file=storage.store_normalised_image(image, digest), original_name=f"street_{{i}}.png")
    for name, (x1, y1, x2, y2) in (("car", car), ("person", person)):
        Annotation.objects.create(sample=sample, kind=AnnotationKind.BOX, class_label=labels[name],
                                  x1=x1, y1=y1, x2=x2, y2=y2)
    ids.append(str(sample.pk))
version = dataset_version_create(dataset=dataset, seed=0, val_fraction=0.34, test_fraction=0)
print(json.dumps({{"samples": ids, "version": str(version.pk), "labels": version.labels}}))
"""

# A finished detection job and its report, as the worker stores them.
SEED_REPORT = """
import json
from sampan.datasets.models import DatasetVersion
from sampan.training.models import EvaluationReport, TrainingJob

version = DatasetVersion.objects.get(pk="{version_id}")
job = TrainingJob.objects.create(
    project=version.project, dataset_version=version, task_type="object_detection",
    model_name="street detector", budget_s=300, status="SUCCEEDED", metrics=json.loads({metrics!r}),
    history=json.loads({history!r}))
EvaluationReport.objects.create(training_job=job, split="test", labels=version.labels,
                                report=json.loads({report!r}))
print(json.dumps({{"job": str(job.pk)}}))
"""


def detection_report(samples: list[str]) -> dict[str, Any]:
    """Five errors on the three images, in the engine's order, and every image's predictions."""
    s0, s1, s2 = samples
    recall = [i / 100 for i in range(101)]
    return {
        "task": "object_detection", "split": "test", "n": 3, "boxes": 6,
        "map50": 0.725, "map": 0.41, "score_threshold": 0.35,
        "precision": 0.667, "recall": 0.667, "f1": 0.667,
        "per_class": [
            {"label": "car", "index": 0, "ap50": 0.9, "ap": 0.55, "support": 3,
             "precision": 0.5, "recall": 0.333},
            {"label": "person", "index": 1, "ap50": 0.55, "ap": 0.27, "support": 3,
             "precision": 0.5, "recall": 0.667},
        ],
        "pr_curves": [
            {"label": "car", "index": 0, "recall": recall,
             "precision": [1.0 if r <= 0.67 else None for r in recall]},
            {"label": "person", "index": 1, "recall": recall,
             "precision": [0.6 if r <= 0.67 else None for r in recall]},
        ],
        "errors": [
            {"sample_id": s1, "kind": "wrong_class", "box": [48, 118, 170, 192],
             "label": "person", "true_label": "car", "score": 0.81},
            {"sample_id": s0, "kind": "false_positive", "box": [10, 10, 60, 50],
             "label": "car", "true_label": None, "score": 0.62},
            {"sample_id": s1, "kind": "false_positive", "box": [0, 200, 30, 240],
             "label": "person", "true_label": None, "score": 0.4},
            {"sample_id": s2, "kind": "missed", "box": [236, 40, 286, 180],
             "label": None, "true_label": "person", "score": None},
            {"sample_id": s0, "kind": "missed", "box": list(CAR),
             "label": None, "true_label": "car", "score": None},
        ],
        "error_counts": {"false_positive": 2, "wrong_class": 1, "missed": 2},
        "predictions": [
            {"sample_id": s0, "boxes": [[10, 10, 60, 50, 0, 0.62], [222, 42, 268, 178, 1, 0.93]]},
            {"sample_id": s1, "boxes": [[48, 118, 170, 192, 1, 0.81], [0, 200, 30, 240, 1, 0.4],
                                        [228, 40, 278, 180, 1, 0.88]]},
            {"sample_id": s2, "boxes": [[57, 121, 175, 189, 0, 0.9]]},
        ],
        "validation": {"map50": 0.8, "map": 0.45, "n": 4, "f1": 0.7},
        "skipped_samples": [],
    }


@pytest.fixture(scope="module")
def seeded(stack: Stack) -> dict[str, Any]:
    out = stack.manage("sampan_user", "--username", USERNAME, "--password", PASSWORD)
    api = Client(stack.url, json.loads(out.stdout.strip().splitlines()[-1])["token"])
    project = api.post("/api/v1/projects/", {"name": "Street scenes"})
    prefix = f"/api/v1/projects/{project['id']}"
    dataset = api.post(prefix + "/datasets/", {"name": "street", "task_type": "object_detection",
                                               "labels": CLASSES})
    images = json.loads(stack.manage("shell", "-c", SEED_IMAGES.format(
        dataset_id=dataset["id"], classes=CLASSES, car=CAR, person=PERSON, width=WIDTH,
        height=HEIGHT)).stdout.strip().splitlines()[-1])
    assert images["labels"] == CLASSES
    history = [{"phase": "train", "step": s, "steps": 120, "loss": 2 / s, "val_map50": m,
                "val_map": m / 2, "elapsed_s": s} for s, m in ((40, 0.3), (80, 0.8), (120, 0.78))]
    metrics = {"val_map50": 0.8, "val_map": 0.45, "val_f1": 0.7, "score_threshold": 0.35,
               "best_step": 80, "evaluated_on": "test", "test_map50": 0.725, "test_map": 0.41}
    job = json.loads(stack.manage("shell", "-c", SEED_REPORT.format(
        version_id=images["version"], metrics=json.dumps(metrics),
        history=json.dumps(history), report=json.dumps(detection_report(images["samples"]))
    )).stdout.strip().splitlines()[-1])
    assert api.get(f"{prefix}/training-jobs/{job['job']}/report/")["labels"] == CLASSES
    return {"api": api, "project": project, "job": job["job"], "samples": images["samples"]}




def sign_in(page: Page) -> None:
    page.goto("/")
    expect(page).to_have_url(re.compile(r"/login\?next="))
    page.get_by_label("Username").fill(USERNAME)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    expect(page).to_have_url(re.compile(r"/projects$"))


def relative_rect(page: Page, test_id: str, index: int = 0) -> tuple[float, float, float, float]:
    """The n-th element's rectangle in px of the shown image: (left, top, width, height); ratios
    of the screen rectangles, so a transform on the whole dialog changes nothing."""
    return page.evaluate("""([id, n]) => {
        const shown = document.querySelector('[data-testid=lightbox-image] img');
        const img = shown.getBoundingClientRect();
        const box = document.querySelectorAll(`[data-testid=${id}]`)[n].getBoundingClientRect();
        const k = img.width / 320;
        return [(box.left - img.left) / k, (box.top - img.top) / k, box.width / k, box.height / k];
    }""", [test_id, index])


def close_to(actual: tuple[float, ...], box: tuple[float, float, float, float],
             scale: float) -> bool:
    """Within 1.5 CSS px of the box (x1, y1, x2, y2 in px of the image), shown at `scale`."""
    x1, y1, x2, y2 = box
    expected = (x1, y1, x2 - x1, y2 - y1)
    return all(abs(a - e) * scale <= 1.5 for a, e in zip(actual, expected, strict=True))


def test_detection_report_headline_table_chart_and_error_browser(
        page: Page, seeded: dict[str, Any], screenshots: Any) -> None:
    expect.set_options(timeout=15_000)
    sign_in(page)
    page.goto(f"/projects/{seeded['project']['id']}/training/{seeded['job']}/report")
    expect(page.get_by_test_id("report-split")).to_contain_text(
        "Computed on the test split: 3 images with 6 objects, never used to choose the model.")
    expect(page.get_by_test_id("report-map50")).to_contain_text("72.5%")
    expect(page.get_by_test_id("report-map")).to_contain_text("41.0%")
    expect(page.get_by_test_id("report-validation")).to_contain_text(
        "mAP@0.5 80.0%, mAP@0.5:0.95 45.0% (4 images)")
    expect(page.get_by_test_id("report-threshold")).to_contain_text(
        "At the serving threshold 0.35 (IoU 0.5)")
    rows = page.get_by_test_id("per-class").locator("tbody tr.ant-table-row")
    expect(rows).to_have_count(2)
    expect(rows.nth(0)).to_contain_text("car0.9000.55030.5000.333")
    # ECharts drew the curves on its canvas
    chart = page.get_by_role("img", name="Precision-recall curves (IoU 0.5)")
    expect(chart.locator("canvas")).to_have_count(1)
    assert chart.bounding_box()["height"] >= 300  # type: ignore[index]

    thumbs = page.get_by_test_id("error-thumb")
    expect(thumbs).to_have_count(5)
    expect(page.get_by_test_id("thumb-error-box")).to_have_count(5)  # the crops have their sizes
    page.get_by_test_id("error-browser").scroll_into_view_if_needed()
    screenshots.take(page, "report", full_page=True)
    page.get_by_text("Missed objects (2)").click()
    expect(thumbs).to_have_count(2)
    expect(thumbs.first).to_have_attribute("title", "car not found")  # the larger one first
    page.get_by_text("All (5)").click()
    expect(thumbs).to_have_count(5)

    thumbs.first.click()
    title = page.get_by_test_id("lightbox-title")
    expect(title).to_contain_text("Wrong class")
    expect(title).to_contain_text("1 of 5")
    # the image's predictions (solid) and the version's frozen boxes (dashed) of image 1
    expect(page.get_by_test_id("predicted-box")).to_have_count(3)
    expect(page.get_by_test_id("true-box")).to_have_count(2)
    image = page.get_by_test_id("lightbox-image").locator("img")
    expect(image).to_have_js_property("complete", True)
    # the layout width (the modal may still be zooming in: its transform scales the rectangles,
    # not their ratios, which relative_rect reads)
    scale = image.evaluate("img => img.offsetWidth") / WIDTH
    assert scale > 1.5, scale  # a small image is shown large
    assert close_to(relative_rect(page, "error-box"), (48, 118, 170, 192), scale)
    car_1 = (CAR[0] + 8, CAR[1], CAR[2] + 8, CAR[3])
    assert close_to(relative_rect(page, "true-box", 0), car_1, scale)
    screenshots.take(page, "error-wrong-class")

    page.keyboard.press("ArrowRight")
    expect(title).to_contain_text("2 of 5")
    expect(title).to_contain_text("car · 0.62")
    expect(page.get_by_test_id("predicted-box")).to_have_count(2)
    assert close_to(relative_rect(page, "error-box"), (10, 10, 60, 50), scale)
    page.keyboard.press("ArrowLeft")
    expect(title).to_contain_text("1 of 5")
    page.keyboard.press("Escape")
    expect(title).to_have_count(0)
    expect(thumbs).to_have_count(5)  # the browser stays
