"""The sample gallery at 10,000 samples (issue 3: "a fast gallery ... that stays smooth at 10,000
samples"), in the real Chromium against the real platform.

A dataset of 10,000 distinct 8x8 PNGs is seeded straight into the stack's database and media (the
import worker takes 30-45 s for the same files on two cores; this takes a few seconds). The
console opens its gallery at 1280x720 and the test scrolls from the first sample to the last with
the mouse wheel, one step per animation frame, while the page records, each frame: the time since
the previous frame (requestAnimationFrame), the thumbnails in the DOM, whether the rendered rows
cover the grid's visible area ("blank" when not), and whether "loading more" is in view
("waiting" for the next page); the main thread's long tasks (PerformanceObserver "longtask",
tasks over 50 ms); the image requests made, answered and aborted; and, once the last sample is
in view, how long until the images in view have loaded.

The figures are printed. Asserted is only what must hold on any machine: the DOM stays bounded
(virtual rows, not 10,000 thumbnails), no frame shows a blank area, each page of 500 is fetched
once, the last sample is reached, its images load within LAST_IMAGES_LIMIT_S, and no task blocks
the page for LONG_TASK_LIMIT_MS. Frame times are not asserted (the style guide: speed is
measured, not asserted in timed tests); on a busy two-core machine the longest task of a run
varied from ~100 to ~390 ms, so the limits catch a grid that renders thousands of thumbnails at
once or leaves its images queued for minutes, not noise.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from sampan.devstack.client import Client
from sampan.devstack.mainjob import percentile
from sampan.devstack.stack import Stack
from tests.database import stack_database_url

SAMPLES = 10_000
PAGE_SIZE = 500  # the console's page of samples (SAMPLE_PAGE_SIZE)
CLASSES = 10
VIEWPORT = {"width": 1280, "height": 720}
USERNAME, PASSWORD = "gallery-scale", "thousands-of-digits-42"
WHEEL_PX = 600  # one wheel step: a fast flick (a notch is ~100 px)
MAX_DOM_THUMBNAILS = 300
LONG_TASK_LIMIT_MS = 1_000
LAST_IMAGES_LIMIT_S = 30  # measured ~2 s; > 120 s when passed-by thumbnails kept their requests


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """Redis and the web process only: seeding needs no worker, and none competes for the CPU."""
    with Stack(data_dir=tmp_path_factory.mktemp("stack"),
               database_url=stack_database_url()) as s:
        s.start(worker=False)
        yield s


# Runs in `manage.py shell` with the stack's settings: the images are stored as the import stores
# them (content-addressed PNGs), the rows and class annotations are created in bulk.
SEED = """
import hashlib, io
from PIL import Image
from sampan.datasets import storage
from sampan.datasets.models import Annotation, AnnotationKind, Dataset, Sample
from sampan.datasets.services import class_labels_ensure

dataset = Dataset.objects.get(pk="{dataset_id}")
labels = class_labels_ensure(dataset=dataset, names=[str(c) for c in range({classes})])
samples, annotations = [], []
for index in range({count}):
    # the index in the first three pixels: no two images are the same
    pixels = bytes((index >> (8 * i)) & 0xFF if i < 3 else (i * 37) & 0xFF for i in range(64))
    image = Image.frombytes("L", (8, 8), pixels).convert("RGB")
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    digest = hashlib.sha256(buffer.getvalue()).hexdigest()
    sample = Sample(dataset=dataset, content_sha256=digest, width=8, height=8,
                    file=storage.store_normalised_image(image, digest),
                    original_name=f"{{index % {classes}}}/{{index:05d}}.png")
    samples.append(sample)
    annotations.append(Annotation(sample=sample, kind=AnnotationKind.CLASS,
                                  class_label=labels[str(index % {classes})]))
Sample.objects.bulk_create(samples, batch_size=500)
Annotation.objects.bulk_create(annotations, batch_size=500)
"""


def seed_dataset(stack: Stack) -> tuple[Client, str, str]:
    """A project with one dataset of SAMPLES labeled samples: (client, project id, dataset id)."""
    user = json.loads(stack.manage("sampan_user", "--username", USERNAME, "--password", PASSWORD
                                   ).stdout.strip().splitlines()[-1])
    client = Client(stack.url, user["token"])
    project = client.post("/api/v1/projects/", {"name": "Gallery at 10k"})
    dataset = client.post(f"/api/v1/projects/{project['id']}/datasets/", {"name": "tiny"})
    stack.manage("shell", "-c", SEED.format(dataset_id=dataset["id"], classes=CLASSES,
                                            count=SAMPLES))
    return client, project["id"], dataset["id"]


# Installed before the console loads; records while window.__gallery.on is true.
RECORDER = """
window.__gallery = {on: false, frames: [], longTasks: [], maxThumbs: 0, blankFrames: 0,
                    waitingFrames: 0, last: 0};
new PerformanceObserver((list) => {
  if (!window.__gallery.on) return;
  for (const entry of list.getEntries()) window.__gallery.longTasks.push(entry.duration);
}).observe({type: 'longtask', buffered: false});
const tick = (now) => {
  const g = window.__gallery;
  if (g.on) {
    if (g.last) g.frames.push(now - g.last);
    g.last = now;
    g.maxThumbs = Math.max(g.maxThumbs, document.querySelectorAll('[data-testid=sample]').length);
    // blank: the rendered rows do not cover the grid's visible area (the last row ends a gap of
    // 8 px before the content does); waiting: "loading more" is in view
    const grid = document.querySelector('[data-testid=gallery]');
    const rows = grid && grid.firstElementChild;
    if (rows && rows.firstElementChild) {
      const view = grid.getBoundingClientRect();
      const top = rows.firstElementChild.getBoundingClientRect().top;
      const bottom = rows.lastElementChild.getBoundingClientRect().bottom;
      const end = rows.getBoundingClientRect().bottom;
      if (top > view.top + 1 || bottom < Math.min(view.bottom, end) - 9) g.blankFrames += 1;
      const loading = grid.querySelector('[data-testid=gallery-loading]');
      if (loading && loading.getBoundingClientRect().top < view.bottom) g.waitingFrames += 1;
    }
  } else {
    g.last = 0;
  }
  requestAnimationFrame(tick);
};
requestAnimationFrame(tick);
"""


# the thumbnail named `name` is inside the grid's visible area (not only rendered in the overscan)
LAST_IN_VIEW = """(name) => {
    const grid = document.querySelector('[data-testid=gallery]');
    const thumbnail = grid.querySelector(`[aria-label="${name}"]`);
    if (!thumbnail) return false;
    const view = grid.getBoundingClientRect(), box = thumbnail.getBoundingClientRect();
    return box.top >= view.top && box.bottom <= view.bottom;
}"""
IMAGES_IN_VIEW_LOADED = """() => {
    const grid = document.querySelector('[data-testid=gallery]');
    const view = grid.getBoundingClientRect();
    const imgs = [...grid.querySelectorAll('img')].filter((img) => {
        const box = img.getBoundingClientRect();
        return box.bottom > view.top && box.top < view.bottom;
    });
    return imgs.length > 0 && imgs.every((img) => img.complete && img.naturalWidth > 0);
}"""


def test_gallery_scrolls_10000_samples(chromium: Any, frontend_dist: Path, stack: Stack,
                                       screenshots: Any) -> None:
    started = time.monotonic()
    client, project_id, dataset_id = seed_dataset(stack)
    timings = {"seed_s": time.monotonic() - started}
    samples_url = f"/api/v1/projects/{project_id}/datasets/{dataset_id}/samples/"
    started = time.monotonic()
    last_page = client.get(f"{samples_url}?page={SAMPLES // PAGE_SIZE}&page_size={PAGE_SIZE}")
    timings["api_page_of_500_s"] = time.monotonic() - started
    assert last_page["count"] == SAMPLES and last_page["next"] is None
    first = client.get(f"{samples_url}?page_size=1")["results"][0]["original_name"]
    last = last_page["results"][-1]["original_name"]

    context = chromium.new_context(viewport=VIEWPORT, locale="en-US", base_url=stack.url)
    context.set_default_timeout(30_000)
    context.add_init_script(RECORDER)
    page: Page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    sample_pages: list[str] = []
    page.on("response", lambda r: sample_pages.append(r.url) if "/samples/?" in r.url else None)
    images = {"requested": 0, "loaded": 0, "aborted": 0}

    def count_image(key: str) -> Any:
        return lambda r: images.__setitem__(key, images[key] + 1) if "/image/" in r.url else None

    page.on("request", count_image("requested"))
    page.on("response", count_image("loaded"))
    page.on("requestfailed", count_image("aborted"))
    try:
        sign_in(page)
        started = time.monotonic()
        page.goto(f"/projects/{project_id}/datasets/{dataset_id}?tab=samples")
        gallery = page.get_by_test_id("gallery")
        expect(page.get_by_text(f"{SAMPLES} samples", exact=True)).to_have_count(2)
        expect(gallery.get_by_role("button", name=f"{first}: {first[0]}")).to_be_visible()
        timings["first_thumbnails_s"] = time.monotonic() - started
        screenshots.take(page, "top")

        page.evaluate("() => { window.__gallery.on = true; }")
        started = time.monotonic()
        gallery.hover()
        wheels = 0
        deadline = time.monotonic() + 120
        while not page.evaluate(LAST_IN_VIEW, f"{last}: {last[0]}"):
            assert time.monotonic() < deadline, f"the last sample not reached after {wheels} wheels"
            page.mouse.wheel(0, WHEEL_PX)
            wheels += 1
            # one wheel step a frame: wait for the next frame, not for a fixed time
            page.evaluate("() => new Promise((resolve) => requestAnimationFrame(() => resolve()))")
        timings["scroll_to_last_s"] = time.monotonic() - started
        recorded = page.evaluate("() => { window.__gallery.on = false; return window.__gallery; }")
        # the images of the thumbnails in view at the end: how long a person waits for them (not
        # for minutes behind the requests of every thumbnail that flew past)
        started = time.monotonic()
        page.wait_for_function(IMAGES_IN_VIEW_LOADED, timeout=LAST_IMAGES_LIMIT_S * 1000)
        timings["last_images_loaded_s"] = time.monotonic() - started
        screenshots.take(page, "bottom")
    finally:
        context.close()
    assert not errors, f"uncaught errors in the page: {errors}"

    frames, long_tasks = recorded["frames"], recorded["longTasks"]
    figures = {
        "samples": SAMPLES,
        "wheel_steps": wheels,
        "wheel_px": WHEEL_PX,
        "sample_page_requests": len(sample_pages),
        "max_dom_thumbnails": recorded["maxThumbs"],
        "frames": len(frames),
        "frame_ms_p50": round(percentile(frames, 50), 1),
        "frame_ms_p95": round(percentile(frames, 95), 1),
        "frame_ms_max": round(max(frames), 1),
        "frames_over_50ms": sum(1 for f in frames if f > 50),
        "blank_frames": recorded["blankFrames"],
        "waiting_frames": recorded["waitingFrames"],
        "long_tasks": len(long_tasks),
        "long_task_ms_max": round(max(long_tasks, default=0), 1),
        "long_task_ms_sum": round(sum(long_tasks)),
        **{f"images_{k}": v for k, v in images.items()},
        **{k: round(v, 2) for k, v in timings.items()},
    }
    print("gallery at 10,000 samples:", json.dumps(figures))
    assert len(sample_pages) == SAMPLES // PAGE_SIZE, sample_pages  # each page once
    assert recorded["maxThumbs"] < MAX_DOM_THUMBNAILS, figures
    assert recorded["blankFrames"] == 0, figures
    assert figures["long_task_ms_max"] < LONG_TASK_LIMIT_MS, figures


def sign_in(page: Page) -> None:
    page.goto("/login")
    page.get_by_label("Username").fill(USERNAME)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("heading", name="Projects")).to_be_visible()
