"""Pre-labeling on real processes: Redis, uvicorn serving the built console, and the light Celery
worker of the default and imports queues (``sampan.celery``, no torch), as docker-compose.yml
runs it. A registered detector (the fixed-answer ONNX detector of tests/edge_agent/conftest.py,
signed by the stack's key) pre-labels an object detection dataset imported through the API: the
run is queued by name and picked up by the imports worker.

- through the API: the suggestions read back, accepted with If-Match, and only the accepted
  sample frozen into a version;
- in the real Chromium at 1280x720, as a person: "Pre-label with a model", Start, the run's
  result; the gallery sorted most uncertain first with the suggested boxes dashed on the
  thumbnails; the drawer shows them dashed, Enter makes them boxes (stored by the API), Ctrl+Z
  takes them back (stored again).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from sampan.devstack.client import Client
from sampan.devstack.stack import Stack, wait_until
from tests.database import stack_database_url

# the detector's fixed answer above its 0.3 threshold, in its 64 px input (tests/edge_agent/
# conftest.py DETECTOR_ANCHORS); an image of side 64 * k gets them k times larger
PERSON, CAR = ("person", 2.0, 4.0, 12.0, 20.0), ("car", 10.0, 30.0, 20.0, 34.0)


def scaled(box: tuple[Any, ...], k: float) -> tuple[Any, ...]:
    return (box[0], *(v * k for v in box[1:]))


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    with Stack(data_dir=tmp_path_factory.mktemp("stack"),
               database_url=stack_database_url()) as s:
        s.start(worker=False)
        s.start_worker("worker-light", queues="default,imports", pool="threads", concurrency=2,
                       app="sampan.celery")
        yield s


def street(stack: Stack, username: str, side: int, tmp_path: Path) -> dict[str, Any]:
    """A user, a project, an object detection dataset (car, person) with two grey images of
    ``side`` px, and the detector registered in the project."""
    from PIL import Image

    password = f"{username}-e2e-password"
    out = stack.manage("sampan_user", "--username", username, "--password", password)
    api = Client(stack.url, json.loads(out.stdout.strip().splitlines()[-1])["token"])
    project = api.post("/api/v1/projects/", {"name": f"Pre-labeling {username}"})
    p = f"/api/v1/projects/{project['id']}"
    dataset = api.post(f"{p}/datasets/", {"name": "street", "task_type": "object_detection",
                                          "labels": ["car", "person"]})
    images = []
    for i in range(2):
        path = tmp_path / f"street_{i}.png"
        Image.new("RGB", (side, side), (90 + i, 90, 90)).save(path)
        images.append(path)
    job = api.upload(f"{p}/datasets/{dataset['id']}/imports/", images)
    assert api.wait_job(f"{p}/imports/{job['id']}/", timeout_s=120)["status"] == "SUCCEEDED"
    # registered in the stack's database and storage by a manage.py shell of the stack
    code = ("from sampan.accounts.models import Project\n"
            "from tests.fixtures.detection_models import detection_version\n"
            f"print(detection_version(Project.objects.get(pk='{project['id']}')).pk)\n")
    version_id = stack.manage("shell", "-c", code).stdout.strip().splitlines()[-1]
    return {"api": api, "p": p, "project": project, "dataset": dataset, "version_id": version_id,
            "username": username, "password": password}


def boxes(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return [(r["class_label"], r["x1"], r["y1"], r["x2"], r["y2"]) for r in rows]


def test_a_detector_pre_labels_through_the_imports_worker(stack: Stack, tmp_path: Path) -> None:
    s = street(stack, "prelabel-api", 64, tmp_path)
    api, p, dataset = s["api"], s["p"], s["dataset"]
    started = api.post(f"{p}/datasets/{dataset['id']}/prelabel-jobs/",
                       {"model_version_id": s["version_id"]})
    assert started["status"] == "QUEUED"
    done = api.wait_job(f"{p}/prelabel-jobs/{started['id']}/", timeout_s=120)
    assert done["status"] == "SUCCEEDED", (done, stack.log_tail("worker-light", 60))
    assert done["report"]["counts"] == {"done": 2, "suggestions": 4, "suggested_samples": 2}
    assert done["progress"]["fraction"] == 1.0
    assert api.get(f"{p}/datasets/{dataset['id']}/")["suggested_samples"] == 2

    samples = api.get(f"{p}/datasets/{dataset['id']}/samples/",
                      params={"ordering": "-uncertainty"})["results"]
    for sample in samples:
        assert boxes(sample["suggestions"]) == [PERSON, CAR]
        assert sample["annotations"] == [] and sample["uncertainty"] == pytest.approx(0.4)
    first = samples[0]
    accepted = api.post(f"{p}/samples/{first['id']}/suggestions/accept/", {},
                        headers={"If-Match": f'"{first["etag"]}"'})
    assert boxes(accepted["annotations"]) == [PERSON, CAR] and accepted["suggestions"] == []
    version = api.post(f"{p}/datasets/{dataset['id']}/versions/",
                       {"val_fraction": 0.0, "test_fraction": 0.0})
    assert version["stats"]["samples"] == 1  # the sample not accepted is not in it




def test_pre_label_in_the_console_and_accept_with_enter(page: Page, stack: Stack,
                                                        tmp_path: Path, screenshots: Any) -> None:
    expect.set_options(timeout=15_000)
    s = street(stack, "prelabel-ui", 256, tmp_path)  # 4 x the detector's input: boxes x 4
    api, p, dataset = s["api"], s["p"], s["dataset"]
    page.goto("/")
    page.get_by_label("Username").fill(s["username"])
    page.get_by_label("Password").fill(s["password"])
    page.get_by_role("button", name="Sign in").click()
    expect(page).to_have_url(re.compile(r"/projects$"))
    page.goto(f"/projects/{s['project']['id']}/datasets/{dataset['id']}?tab=samples")

    page.get_by_role("button", name="Pre-label with a model").click()
    dialog = page.get_by_role("dialog", name="Pre-label with a model")
    expect(dialog.get_by_text("street v1")).to_be_visible()
    expect(dialog.get_by_text("Suggests these classes of the dataset: person, car")).to_be_visible()
    dialog.get_by_role("button", name="Start").click()
    expect(page.get_by_text("street v1 suggested labels for 2 samples (4 suggestions).",
                            exact=False)).to_be_visible(timeout=60_000)

    gallery = page.get_by_test_id("gallery")
    # sorted most uncertain first now; the suggested boxes dashed on the thumbnails
    expect(page.get_by_role("combobox", name="Sort").locator("xpath=ancestor::div[contains("
                                                              "@class,'ant-select')][1]")
           ).to_contain_text("Most uncertain first")
    expect(gallery.locator("rect[data-suggested]")).to_have_count(4)
    screenshots.take(page, "gallery-suggestions")

    first = api.get(f"{p}/datasets/{dataset['id']}/samples/",
                    params={"ordering": "-uncertainty"})["results"][0]
    gallery.get_by_role("button", name=f"{first['original_name']}: unlabeled").click()
    expect(page.get_by_test_id("detection-panel")).to_be_visible()
    expect(page.get_by_test_id("suggested-box")).to_have_count(2)
    expect(page.get_by_test_id("suggestion-row")).to_have_count(2)
    screenshots.take(page, "drawer-suggestions")

    def stored() -> dict[str, Any]:
        return api.get(f"{p}/samples/{first['id']}/")

    page.keyboard.press("Enter")
    expect(page.get_by_test_id("box-row")).to_have_count(2)
    expect(page.get_by_test_id("suggestion-row")).to_have_count(0)
    expect(page.get_by_test_id("save-status")).to_have_text("Saved")
    wait_until(lambda: sorted(boxes(stored()["annotations"])) == sorted(
        [scaled(PERSON, 4), scaled(CAR, 4)]), timeout_s=15, what="the accepted boxes stored")
    assert stored()["suggestions"] == []
    screenshots.take(page, "drawer-accepted")

    page.keyboard.press("Control+z")
    expect(page.get_by_test_id("box-row")).to_have_count(0)
    expect(page.get_by_test_id("suggestion-row")).to_have_count(2)
    wait_until(lambda: stored()["annotations"] == [], timeout_s=15,
               what="the accept taken back on the server")
