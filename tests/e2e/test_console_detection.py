"""Detection labeling in the console (issue 3) in the real Chromium against the real platform.

Redis, uvicorn serving the built console (``frontend/dist``) and the Celery worker of the default
queue (imports) run as real processes; no training worker is started, nothing here trains.
The project, an object-detection dataset with two classes and five generated 320x240 street-like
images (a red "car" and a blue "person" rectangle at known places) are set up through the REST API
as the console user; then Playwright drives Chromium at 1280x720 as a person: sign in, open the
dataset's Samples tab and an image, draw a box around the car by a mouse drag (it stays selected:
a class key then picks the next box's class, Escape deselects it and the drawer stays), move it
and resize it by dragging, give it another class with its key, draw a second box, delete it with
the Delete key and bring it back with Ctrl+Z, reload, and see both boxes kept, on the gallery's
thumbnail too; choose another key for a class in the key editor and see it kept after a reload;
then the same drawer in Chinese. Each step asserts what the person sees (the box list, its
classes, "Saved"), and the boxes the API stored, in pixels of the image, within a pixel of what
the mouse did. Screenshots of the drawer go to ``$SAMPAN_SCREENSHOT_DIR`` (default
``test-artifacts/screenshots/``).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Locator, Page, expect

from sampan.devstack.client import Client
from sampan.devstack.stack import Stack
from tests.database import stack_database_url
from tests.e2e.conftest import VIEWPORT

USERNAME, PASSWORD = "detect-e2e", "detect-e2e-password"
WIDTH, HEIGHT = 320, 240
CLASSES = ["car", "person"]
# per image: the car's and the person's rectangle, xyxy in px; image i shifts them by 8*i px
CAR, PERSON = (40, 120, 160, 190), (220, 40, 270, 180)
N_IMAGES = 5
# a mouse position is a CSS pixel; the image is shown ~2.6x larger, so a pixel of the screen is
# ~0.4 px of the image: 1 px of tolerance leaves room for rounding on both sides
TOLERANCE_PX = 1.0


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """The platform without the training worker: imports run on the imports queue."""
    with Stack(data_dir=tmp_path_factory.mktemp("stack"),
               database_url=stack_database_url()) as s:
        s.start(worker=False)
        s.start_worker("worker-default", queues="default,imports", pool="threads", concurrency=2)
        yield s


@pytest.fixture(scope="module")
def detection_dataset(stack: Stack, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return setup_detection_dataset(stack, tmp_path_factory.mktemp("images"))




def test_detection_draw_move_resize_class_delete_undo_reload(
        page: Page, detection_dataset: dict[str, Any], screenshots: Any) -> None:
    expect.set_options(timeout=15_000)
    d = detection_dataset
    api: Client = d["client"]

    def step(name: str, fn: Any, *args: Any) -> Any:
        try:
            return fn(*args)
        except BaseException:
            screenshots.take(page, f"FAILED-{name}")
            raise

    step("sign_in", sign_in, page)
    step("open_sample", open_first_sample, page, d, screenshots)
    boxes = BoxesApi(api, d["prefix"], d["first"]["id"], d["class_ids"])
    step("draw_move_resize", draw_move_resize_and_class, page, boxes, d, screenshots)
    step("delete_undo", delete_and_undo, page, boxes, d, screenshots)
    step("reload", reload_and_see_boxes_kept, page, boxes, d, screenshots)
    step("keys", choose_a_key, page, d, screenshots)
    step("zh-CN", in_chinese, page, d, screenshots)


# ------------------------------------------------------------------------------------- setup
def make_images(folder: Path) -> list[Path]:
    """Five 320x240 PNGs: grey road, a red car and a blue person, shifted by 8 px per image."""
    from PIL import Image, ImageDraw

    paths = []
    for i in range(N_IMAGES):
        image = Image.new("RGB", (WIDTH, HEIGHT), (200, 205, 210))
        draw = ImageDraw.Draw(image)
        draw.rectangle((0, 200, WIDTH, HEIGHT), fill=(90, 90, 95))
        shift = 8 * i
        draw.rectangle(shifted(CAR, shift), fill=(210, 40, 40), outline=(60, 0, 0))
        draw.rectangle(shifted(PERSON, shift), fill=(40, 70, 210), outline=(0, 0, 60))
        path = folder / f"street_{i}.png"
        image.save(path)
        paths.append(path)
    return paths


def shifted(rect: tuple[int, int, int, int], by: int) -> tuple[int, int, int, int]:
    return (rect[0] + by, rect[1], rect[2] + by, rect[3])


def setup_detection_dataset(stack: Stack, folder: Path) -> dict[str, Any]:
    """The console user, a project, an object-detection dataset with CLASSES and the images."""
    out = stack.manage("sampan_user", "--username", USERNAME, "--password", PASSWORD)
    api = Client(stack.url, json.loads(out.stdout.strip().splitlines()[-1])["token"])
    project = api.post("/api/v1/projects/", {"name": "Street scenes"})
    prefix = f"/api/v1/projects/{project['id']}"
    dataset = api.post(prefix + "/datasets/", {"name": "street", "task_type": "object_detection",
                                               "labels": CLASSES})
    job = api.upload(f"{prefix}/datasets/{dataset['id']}/imports/", make_images(folder))
    assert api.wait_job(f"{prefix}/imports/{job['id']}/", timeout_s=120)["status"] == "SUCCEEDED"
    dataset = api.get(f"{prefix}/datasets/{dataset['id']}/")
    samples = api.get(f"{prefix}/datasets/{dataset['id']}/samples/")["results"]
    assert len(samples) == N_IMAGES and all(s["annotations"] == [] for s in samples)
    return {"client": api, "project": project, "prefix": prefix, "dataset": dataset,
            "class_ids": {c["name"]: c["id"] for c in dataset["class_labels"]},
            "samples": samples}


class BoxesApi:
    """What the API stored for one sample: its boxes, read until they match (autosave is
    debounced, so the check waits with a deadline rather than sleeping)."""

    def __init__(self, api: Client, prefix: str, sample_id: str, class_ids: dict[str, str]):
        self.api, self.path = api, f"{prefix}/samples/{sample_id}/"
        self.class_names = {v: k for k, v in class_ids.items()}

    def stored(self) -> list[tuple[str, float, float, float, float]]:
        sample = self.api.get(self.path)
        return sorted((self.class_names[a["class_label_id"]], a["x1"], a["y1"], a["x2"], a["y2"])
                      for a in sample["annotations"] if a["kind"] == "box")

    def wait_for(self, expected: list[tuple[str, float, float, float, float]],
                 timeout_s: float = 10.0) -> list[tuple[str, float, float, float, float]]:
        deadline = time.monotonic() + timeout_s
        while True:
            stored = self.stored()
            if matches(stored, expected):
                return stored
            if time.monotonic() > deadline:
                raise AssertionError(f"stored boxes {stored} are not {expected} "
                                     f"(within {TOLERANCE_PX} px)")
            time.sleep(0.2)


def matches(stored: list[Any], expected: list[Any]) -> bool:
    return len(stored) == len(expected) and all(
        s[0] == e[0] and all(abs(a - b) <= TOLERANCE_PX for a, b in zip(s[1:], e[1:], strict=True))
        for s, e in zip(sorted(stored), sorted(expected), strict=True))


# ------------------------------------------------------------------------------------- steps
def sign_in(page: Page) -> None:
    page.goto("/")
    expect(page).to_have_url(re.compile(r"/login\?next="))
    page.get_by_label("Username").fill(USERNAME)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    expect(page).to_have_url(re.compile(r"/projects$"))


def open_first_sample(page: Page, d: dict[str, Any], screenshots: Any) -> None:
    page.get_by_role("link", name="Street scenes", exact=True).click()
    expect(page.get_by_role("heading", name="Datasets")).to_be_visible()
    page.get_by_role("link", name="street", exact=True).click()
    expect(page.get_by_role("heading", name="street")).to_be_visible()
    expect(page.get_by_text("Object detection")).to_be_visible()
    page.get_by_role("tab", name="Samples").click()
    gallery = page.get_by_test_id("gallery")
    expect(gallery.get_by_test_id("sample")).to_have_count(N_IMAGES)
    expect(gallery.get_by_role("button", name=re.compile(r": unlabeled$"))).to_have_count(N_IMAGES)

    # the gallery's first thumbnail is the API's first sample
    first = d["samples"][0]
    d["first"] = first
    name = re.fullmatch(r"street_(\d)\.png", first["original_name"])
    assert name is not None, first["original_name"]
    d["shift"] = 8 * int(name[1])
    gallery.get_by_role("button", name=f"{first['original_name']}: unlabeled").click()
    panel = page.get_by_test_id("detection-panel")
    expect(panel).to_be_visible()
    drawer = page.get_by_role("dialog", name=re.compile(r"^Label boxes"))
    expect(drawer).to_be_visible()
    expect(page.get_by_test_id("detection-sample-name")).to_have_text(first["original_name"])
    expect(drawer.get_by_text(f"1 / {N_IMAGES}", exact=True)).to_be_visible()
    # the classes with their number keys; the first is the one new boxes get
    classes = panel.get_by_role("group", name="Classes")
    expect(class_button(classes, "car")).to_have_attribute("aria-pressed", "true")
    expect(class_button(classes, "person")).to_have_attribute("aria-pressed", "false")
    expect(panel.get_by_text("No boxes yet. Drag on the image to draw one.")).to_be_visible()
    wait_for_image(page)
    screenshots.take(page, "detection-empty")


def class_button(classes: Locator, name: str) -> Locator:
    """A class's button: its key (a digit or a letter) then its name, "1car"."""
    return classes.get_by_role("button").filter(
        has_text=re.compile(rf"^[0-9A-Z]{re.escape(name)}$"))


def wait_for_image(page: Page) -> None:
    page.wait_for_function("""() => {
        const img = document.querySelector('[data-testid=detection-image]');
        return img && img.complete && img.naturalWidth > 0
            && img.parentElement.querySelector('svg') !== null;  // Annotorious is on it
    }""")


def wait_for_settled_layout(page: Page, timeout_s: float = 5.0) -> None:
    """Until the image and its box layer stop moving (the drawer slides in after a reload; read
    mid-slide, the boxes were ~2 CSS px off the image): three equal reads 100 ms apart."""
    read = """() => {
        const img = document.querySelector('[data-testid=detection-image]');
        const layer = document.querySelector('.a9s-annotationlayer');
        const r = (e) => e ? [e.getBoundingClientRect().x, e.getBoundingClientRect().y,
                              e.getBoundingClientRect().width] : null;
        return JSON.stringify([r(img), r(layer)]);
    }"""
    deadline = time.monotonic() + timeout_s
    last, same = None, 0
    while time.monotonic() < deadline and same < 2:
        now = page.evaluate(read)
        same = same + 1 if now == last else 0
        last = now
        page.wait_for_timeout(100)


class ImageGeometry:
    """Maps image pixels to the page's CSS pixels, from where the image is shown."""

    def __init__(self, page: Page) -> None:
        wait_for_settled_layout(page)
        box = page.get_by_test_id("detection-image").bounding_box()
        assert box is not None
        self.left, self.top = box["x"], box["y"]
        self.scale = box["width"] / WIDTH
        assert abs(box["height"] / HEIGHT - self.scale) < 0.02, box
        # the image uses the room the drawer gives it at 1280x720
        assert box["width"] > 700, box

    def screen(self, x: float, y: float) -> tuple[float, float]:
        return self.left + x * self.scale, self.top + y * self.scale

    def image(self, sx: float, sy: float) -> tuple[float, float]:
        return (sx - self.left) / self.scale, (sy - self.top) / self.scale


def drag(page: Page, start: tuple[float, float], end: tuple[float, float]) -> None:
    """A person's drag: press, move in steps, release."""
    page.mouse.move(*start)
    page.mouse.down()
    page.mouse.move(*end, steps=12)
    page.mouse.up()


def rows(page: Page) -> Locator:
    return page.get_by_test_id("box-row")


def expect_saved(page: Page) -> None:
    expect(page.get_by_test_id("save-status")).to_have_text("Saved")


def draw_move_resize_and_class(page: Page, boxes: BoxesApi, d: dict[str, Any],
                               screenshots: Any) -> None:
    geo = ImageGeometry(page)
    car = shifted(CAR, d["shift"])
    # drag from the car's top-left corner to its bottom-right: a box of the active class "car"
    start, end = geo.screen(car[0], car[1]), geo.screen(car[2], car[3])
    drag(page, start, end)
    expect(rows(page)).to_have_count(1)
    expect(rows(page).first.get_by_test_id("box-class")).to_have_text("car")
    expect(rows(page).first).to_contain_text("120 × 70 px")
    # the class is written on the image too
    expect(page.locator(".sampan-box-label")).to_have_text(["car"])
    # the stored box is the car's rectangle, in pixels of the image (not of the screen)
    boxes.wait_for([("car", *car)])
    expect_saved(page)
    x1, y1, x2, y2 = car
    screenshots.take(page, "detection-drawn")

    # the new box stays selected, but a key now picks the class of the NEXT box and leaves this
    # one alone (labels were lost this way: draw a car, press 2 for a person, car relabeled)
    classes = page.get_by_test_id("detection-panel").get_by_role("group", name="Classes")
    expect(rows(page).first.get_by_role("button", pressed=True)).to_have_count(1)
    page.keyboard.press("2")
    expect(class_button(classes, "person")).to_have_attribute("aria-pressed", "true")
    expect(rows(page).first.get_by_test_id("box-class")).to_have_text("car")
    page.keyboard.press("1")
    expect(class_button(classes, "car")).to_have_attribute("aria-pressed", "true")
    boxes.wait_for([("car", *car)])
    # Escape deselects the box just drawn; the drawer stays open (it closed here before)
    page.keyboard.press("Escape")
    expect(rows(page).first.get_by_role("button", pressed=True)).to_have_count(0)
    expect(page.get_by_test_id("detection-panel")).to_be_visible()

    # move: a click selects the box, then drag it by its middle 24 px right and 12 px down
    middle = ((start[0] + end[0]) / 2, (start[1] + end[1]) / 2)
    page.mouse.click(*middle)
    expect(rows(page).first.get_by_role("button", pressed=True)).to_have_count(1)
    drag(page, middle, (middle[0] + 24, middle[1] + 12))
    dx, dy = 24 / geo.scale, 12 / geo.scale
    x1, y1, x2, y2 = x1 + dx, y1 + dy, x2 + dx, y2 + dy
    boxes.wait_for([("car", x1, y1, x2, y2)])
    expect_saved(page)
    expect(rows(page)).to_have_count(1)

    # resize: drag the bottom-right corner 30 px right and 15 px down
    corner = geo.screen(x2, y2)
    drag(page, corner, (corner[0] + 30, corner[1] + 15))
    x2, y2 = x2 + 30 / geo.scale, y2 + 15 / geo.scale
    boxes.wait_for([("car", x1, y1, x2, y2)])
    expect_saved(page)
    expect(rows(page).first).to_contain_text(f"{round(x2 - x1)} × {round(y2 - y1)} px")

    # key 2 gives the selected box the second class, and makes it the class of new boxes
    page.keyboard.press("2")
    expect(rows(page).first.get_by_test_id("box-class")).to_have_text("person")
    expect(class_button(classes, "person")).to_have_attribute("aria-pressed", "true")
    boxes.wait_for([("person", x1, y1, x2, y2)])
    # and key 1 back: the box is a car again
    page.keyboard.press("1")
    expect(rows(page).first.get_by_test_id("box-class")).to_have_text("car")
    d["car_box"] = ("car", x1, y1, x2, y2)
    boxes.wait_for([d["car_box"]])
    expect_saved(page)


def delete_and_undo(page: Page, boxes: BoxesApi, d: dict[str, Any], screenshots: Any) -> None:
    geo = ImageGeometry(page)
    car_box = d["car_box"]
    # Escape deselects the car (a class click would change the selected box's class), then a
    # click picks "person" for the next box, and a drag around the person draws it
    expect(rows(page).first.get_by_role("button", pressed=True)).to_have_count(1)
    page.keyboard.press("Escape")
    expect(rows(page).first.get_by_role("button", pressed=True)).to_have_count(0)
    classes = page.get_by_test_id("detection-panel").get_by_role("group", name="Classes")
    class_button(classes, "person").click()
    expect(class_button(classes, "person")).to_have_attribute("aria-pressed", "true")
    expect(rows(page).first.get_by_test_id("box-class")).to_have_text("car")
    person = shifted(PERSON, d["shift"])
    start, end = geo.screen(person[0], person[1]), geo.screen(person[2], person[3])
    drag(page, start, end)
    expect(rows(page)).to_have_count(2)
    expect(rows(page).get_by_test_id("box-class")).to_have_text(["car", "person"])
    person_box = ("person", *person)
    d["person_box"] = person_box
    boxes.wait_for([car_box, person_box])
    expect_saved(page)
    screenshots.take(page, "detection-two-boxes")

    # select the new box (a click on it), then Delete removes it, from the list, the image and
    # the server
    page.mouse.click((start[0] + end[0]) / 2, (start[1] + end[1]) / 2)
    expect(rows(page).nth(1).get_by_role("button", pressed=True)).to_have_count(1)
    page.keyboard.press("Delete")
    expect(rows(page)).to_have_count(1)
    expect(page.locator(".sampan-box-label")).to_have_text(["car"])
    boxes.wait_for([car_box])
    expect_saved(page)

    # Ctrl+Z brings it back, saved again
    page.keyboard.press("Control+z")
    expect(rows(page)).to_have_count(2)
    expect(rows(page).get_by_test_id("box-class")).to_have_text(["car", "person"])
    boxes.wait_for([car_box, person_box])
    expect_saved(page)
    # Ctrl+Shift+Z redoes the delete, Ctrl+Z undoes it again
    page.keyboard.press("Control+Shift+z")
    expect(rows(page)).to_have_count(1)
    page.keyboard.press("Control+z")
    expect(rows(page)).to_have_count(2)
    boxes.wait_for([car_box, person_box])
    expect_saved(page)

    # a drag released past the image's bottom-right corner (over the sidebar) still makes a box,
    # cut at the image's edges; then the drawing is over (moving the mouse changes nothing)
    inside = geo.screen(WIDTH - 60, HEIGHT - 40)
    outside = geo.screen(WIDTH + 40, HEIGHT + 30)
    drag(page, inside, outside)
    expect(rows(page)).to_have_count(3)
    boxes.wait_for([car_box, person_box, ("person", WIDTH - 60, HEIGHT - 40, WIDTH, HEIGHT)])
    expect_saved(page)
    page.mouse.move(inside[0] - 50, inside[1] - 50, steps=5)
    # the drawing tool's group stays; a draft in it would be a rectangle following the mouse
    expect(page.locator(".a9s-rubberband > *")).to_have_count(0)
    page.keyboard.press("Control+z")
    expect(rows(page)).to_have_count(2)
    boxes.wait_for([car_box, person_box])
    expect_saved(page)


def reload_and_see_boxes_kept(page: Page, boxes: BoxesApi, d: dict[str, Any],
                              screenshots: Any) -> None:
    stored = boxes.wait_for([d["car_box"], d["person_box"]])
    page.reload()
    gallery = page.get_by_test_id("gallery")
    expect(gallery.get_by_test_id("sample")).to_have_count(N_IMAGES)
    first = d["first"]["original_name"]
    # the thumbnail counts the boxes, and draws them over its image
    thumbnail = gallery.get_by_role("button", name=f"{first}: 2 boxes", exact=True)
    expect(thumbnail).to_contain_text("2 boxes")
    expect(thumbnail.get_by_test_id("thumbnail-boxes").locator("rect")).to_have_count(2)
    on_image = thumbnail.locator("img").bounding_box()
    drawn = thumbnail.get_by_test_id("thumbnail-boxes").locator("rect").first.bounding_box()
    assert on_image is not None and drawn is not None
    scale = on_image["width"] / WIDTH  # the 320x240 image in its 92x92 cell: 69 px high
    car_x1 = min(b[1] for b in stored)
    assert abs(drawn["x"] - (on_image["x"] + car_x1 * scale)) <= 2, (drawn, on_image, stored)
    # the other images have no boxes yet
    expect(gallery.get_by_role("button", name=re.compile(r": unlabeled$"))).to_have_count(
        N_IMAGES - 1)
    thumbnail.click()
    expect(page.get_by_test_id("detection-sample-name")).to_have_text(first)
    wait_for_image(page)
    expect(rows(page)).to_have_count(2)
    expect(rows(page).get_by_test_id("box-class")).to_have_text(["car", "person"])
    expect(page.locator(".sampan-box-label")).to_have_text(["car", "person"])
    # the boxes on the screen are the ones stored, where the mouse left them
    geo = ImageGeometry(page)
    shown = page.locator(".a9s-annotationlayer rect.a9s-inner")
    expect(shown).to_have_count(2)
    on_screen = sorted(rect_of(shown.nth(i), geo) for i in range(2))
    by_left = sorted(b[1:] for b in stored)
    for s, o in zip(by_left, on_screen, strict=True):
        assert all(abs(a - b) <= TOLERANCE_PX for a, b in zip(s, o, strict=True)), (
            stored, on_screen)
    # nothing changed by opening it again
    assert boxes.stored() == stored
    screenshots.take(page, "detection-reloaded")

    # N moves to the next image, which has no boxes; Escape closes the drawer
    page.keyboard.press("n")
    second = d["samples"][1]["original_name"]
    expect(page.get_by_test_id("detection-sample-name")).to_have_text(second)
    expect(page.get_by_text(f"2 / {N_IMAGES}", exact=True)).to_be_visible()
    expect(page.get_by_text("No boxes yet. Drag on the image to draw one.")).to_be_visible()
    page.keyboard.press("Escape")
    expect(page.get_by_test_id("detection-panel")).to_have_count(0)


def choose_a_key(page: Page, d: dict[str, Any], screenshots: Any) -> None:
    """The key editor: "person" gets key X instead of 2; kept on the server and after a reload."""
    gallery = page.get_by_test_id("gallery")
    gallery.get_by_role("button", name=re.compile(
        rf"^{re.escape(d['first']['original_name'])}: ")).click()
    panel = page.get_by_test_id("detection-panel")
    classes = panel.get_by_role("group", name="Classes")
    expect(classes.get_by_test_id("class-key")).to_have_text(["1", "2"])
    panel.get_by_role("button", name=re.compile("Change keys")).click()
    dialog = page.get_by_role("dialog", name="Labeling keys")
    dialog.get_by_label("Key of person").fill("x")
    expect(dialog.get_by_test_id("effective-key")).to_have_text(["1", "X"])
    screenshots.take(page, "detection-keys")
    dialog.get_by_role("button", name="Save keys").click()
    expect(dialog).to_have_count(0)
    expect(classes.get_by_test_id("class-key")).to_have_text(["1", "X"])
    api: Client = d["client"]
    stored = api.get(f"{d['prefix']}/datasets/{d['dataset']['id']}/")["class_labels"]
    assert {c["name"]: c["hotkey"] for c in stored} == {"car": "", "person": "x"}
    page.keyboard.press("Escape")
    page.reload()
    gallery.get_by_role("button", name=re.compile(
        rf"^{re.escape(d['first']['original_name'])}: ")).click()
    expect(page.get_by_test_id("detection-panel").get_by_role("group", name="Classes")
           .get_by_test_id("class-key")).to_have_text(["1", "X"])
    page.keyboard.press("Escape")
    expect(page.get_by_test_id("detection-panel")).to_have_count(0)


def in_chinese(page: Page, d: dict[str, Any], screenshots: Any) -> None:
    """The same drawer in Chinese (the language the console keeps in localStorage)."""
    page.evaluate("localStorage.setItem('sampan.language', 'zh-CN')")
    page.reload()
    gallery = page.get_by_test_id("gallery")
    gallery.get_by_role("button", name=re.compile(
        rf"^{re.escape(d['first']['original_name'])}: ")).click()
    expect(page.get_by_role("dialog", name=re.compile(r"^标注边界框"))).to_be_visible()
    wait_for_image(page)
    expect(page.get_by_test_id("detection-panel").get_by_text("2 个框", exact=True)).to_be_visible()
    expect(page.get_by_role("button", name=re.compile("撤销"))).to_be_visible()
    expect(page.get_by_role("group", name="类别")).to_be_visible()
    screenshots.take(page, "detection-zh-CN")
    page.evaluate("localStorage.setItem('sampan.language', 'en')")


def rect_of(rect: Locator, geo: ImageGeometry) -> tuple[float, float, float, float]:
    box = rect.bounding_box()
    assert box is not None
    x1, y1 = geo.image(box["x"], box["y"])
    x2, y2 = geo.image(box["x"] + box["width"], box["y"] + box["height"])
    return x1, y1, x2, y2


def test_a_viewer_sees_the_boxes_but_cannot_change_them(
        chromium: Any, frontend_dist: Path, stack: Stack, detection_dataset: dict[str, Any],
        screenshots: Any) -> None:
    """A viewer's drawer is read-only: no drawing, no delete, no class keys; nothing is sent."""
    d = detection_dataset
    api: Client = d["client"]
    stack.manage("sampan_user", "--username", "detect-viewer", "--password", "viewer-password")
    api.post(d["prefix"] + "/members/", {"username": "detect-viewer", "role": "viewer"})
    sample = d["samples"][-1]  # the other test labels the first one
    box = {"x1": 20.0, "y1": 30.0, "x2": 120.0, "y2": 90.0, "class_label": "car"}
    api.put(f"{d['prefix']}/samples/{sample['id']}/boxes/", {"boxes": [box]})
    boxes = BoxesApi(api, d["prefix"], sample["id"], d["class_ids"])
    stored = boxes.stored()
    assert stored == [("car", 20.0, 30.0, 120.0, 90.0)]

    context = chromium.new_context(viewport=VIEWPORT, locale="en-US", base_url=stack.url)
    context.set_default_timeout(15_000)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    writes: list[str] = []  # any box or label request the viewer's page makes
    page.on("request", lambda r: writes.append(f"{r.method} {r.url}")
            if r.method in ("PUT", "POST", "PATCH", "DELETE") and "/samples/" in r.url else None)
    try:
        page.goto("/")
        page.get_by_label("Username").fill("detect-viewer")
        page.get_by_label("Password").fill("viewer-password")
        page.get_by_role("button", name="Sign in").click()
        page.get_by_role("link", name="Street scenes", exact=True).click()
        expect(page.get_by_text("Read-only: you are a viewer in this project")).to_be_visible()
        page.get_by_role("link", name="street", exact=True).click()
        page.get_by_role("tab", name="Samples").click()
        gallery = page.get_by_test_id("gallery")
        gallery.get_by_role("button", name=f"{sample['original_name']}: 1 box").click()
        drawer = page.get_by_role("dialog", name=re.compile(r"^Label boxes"))
        expect(drawer.get_by_test_id("read-only-tag")).to_have_text("Read-only")
        wait_for_image(page)
        expect(rows(page)).to_have_count(1)
        expect(rows(page).get_by_test_id("box-class")).to_have_text(["car"])
        geo = ImageGeometry(page)
        drag(page, geo.screen(160, 120), geo.screen(260, 200))  # would draw a box
        middle = geo.screen(70, 60)
        page.mouse.click(*middle)
        page.keyboard.press("2")  # would make the selected box a person
        page.keyboard.press("Delete")  # would delete it
        drag(page, middle, (middle[0] + 40, middle[1] + 20))  # would move it
        page.wait_for_timeout(1_000)  # longer than the autosave's debounce
        expect(rows(page)).to_have_count(1)
        expect(rows(page).get_by_test_id("box-class")).to_have_text(["car"])
        screenshots.take(page, "detection-viewer")
        assert boxes.stored() == stored
        assert writes == [], writes
    finally:
        context.close()
    assert not errors, f"uncaught errors in the page: {errors}"
