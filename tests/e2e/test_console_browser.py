"""The browser console (issue 3) in the real Chromium against the real running platform.

Redis, uvicorn serving the built console (``frontend/dist``, built by ``make frontend``, which
``make test`` runs first), the Celery workers and beat all run as real processes (the ``stack``
fixture); Playwright drives the system Chromium headless at 1280x720 (the ``chromium`` fixture
fails, it does not skip, when Chromium is missing). Each step asserts what a person would see:
texts, counts and labels on the page, not the API's answers. A screenshot of each main page goes
to the stack's ``var/screenshots/`` and to ``$SAMPAN_SCREENSHOT_DIR`` (default
``test-artifacts/screenshots/``) for a reviewer.

Covered now: sign in through the login page; create a project; the members page; create a
dataset; upload the seed zip (400 digits) and three loose images through the upload control and
read the import reports; the gallery and its filters; label the loose images by clicking a class
and by its key (the digit itself: key 5 labels "5", the label stored checked through the API),
undo it with Ctrl+Z (the server's label cleared) and redo it with Ctrl+Shift+Z, reload and see the
labels kept; switch the language to Chinese (kept across a reload) and back to English.

Then, from the datasets list the language step ends on: freeze a dataset version on the Versions
tab and see its numbers, split counts and class-balance chart, and the versions table's row;
filter the gallery by that version's validation split; start training from the wizard ("Train a
model on it") with the 0:30 budget, see the epoch and loss while it runs and the curves, and the
status reach "Done"; open the report (accuracy, macro-F1, the confusion matrix), click a diagonal
cell of the matrix (a canvas: the cell is found by its tooltip) and see that cell's samples as
thumbnails; open the model version page; drop a held-out digit on "Try it" and read the top 5.
Then add a device: copy the enroll command the console shows, run it (the device is this machine;
the agent's home is in the stack's folder), start the agent and see it online in the fleet table;
deploy the version with one click and see the deployment reach "running"; send the device traffic
and see its requests, p95 latency and charts on the device page and the fleet table.

Detection labeling (draw, move/resize, change the class, delete, undo, reload) is in
``test_console_detection.py`` (it needs no training worker).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import requests
from playwright.sync_api import Locator, Page, expect
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

from sampan.devstack.mainjob import SEEDS_DIR, zip_folder
from sampan.devstack.stack import Stack

USERNAME, PASSWORD = "console-e2e", "browser-walkthrough-7"
VIEWPORT = {"width": 1280, "height": 720}
# the loose images labeled by hand: (class folder in the held-out seed, how it is labeled)
LOOSE = [("2", "click"), ("5", "key"), ("8", "click")]


@pytest.fixture(scope="module")
def console_user(stack: Stack) -> tuple[str, str]:
    stack.manage("sampan_user", "--username", USERNAME, "--password", PASSWORD)
    return USERNAME, PASSWORD


@pytest.fixture
def page(chromium: Any, frontend_dist: Path, stack: Stack) -> Any:
    # an English browser: the console picks zh-CN for a Chinese one
    context = chromium.new_context(viewport=VIEWPORT, locale="en-US", base_url=stack.url)
    context.set_default_timeout(15_000)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    warnings: list[str] = []  # React Router's own warnings (e.g. a lazy route with no fallback)
    page.on("console", lambda m: warnings.append(m.text) if "React Router" in m.text
            or "HydrateFallback" in m.text else None)
    yield page
    context.close()
    assert not errors, f"uncaught errors in the page: {errors}"
    assert not warnings, f"router warnings in the page's console: {warnings}"


def test_console_sign_in_upload_label_and_languages(page: Page, stack: Stack, console_user: Any,
                                                    screenshots: Any, tmp_path: Path) -> None:
    expect.set_options(timeout=15_000)
    timings: dict[str, float] = {}
    broken_assets: list[str] = []  # console files that did not come back as the build's own

    def check_asset(response: Any) -> None:
        kind = response.headers.get("content-type", "")
        if "/assets/" in response.url and (response.status != 200 or "text/html" in kind):
            broken_assets.append(f"{response.url} ({response.status}, {kind})")

    page.on("response", check_asset)

    def step(name: str, fn: Any, *args: Any) -> Any:
        started = time.monotonic()
        try:
            result = fn(*args)
        except BaseException as error:
            screenshots.take(page, f"FAILED-{name}")  # what the page showed when the step failed
            if broken_assets:
                raise AssertionError(
                    f"step {name}: the console's own files did not load: {broken_assets}. Was "
                    "frontend/dist rebuilt while the platform ran? The web process indexes the "
                    "build when it starts (restart it after `make frontend`).") from error
            raise
        timings[name] = round(time.monotonic() - started, 1)
        return result

    step("sign_in", sign_in, page, *console_user, screenshots)
    step("create_project", create_project, page, "Digits demo", screenshots)
    step("members", members_page, page, console_user[0], screenshots)
    step("create_dataset", create_dataset, page, "digits", screenshots)
    step("upload", upload_seed_and_loose_images, page, tmp_path, screenshots)
    step("gallery", open_gallery, page, screenshots)
    step("label_and_reload", label_and_reload, page, screenshots)
    step("languages", switch_languages, page, screenshots)
    step("freeze_version", freeze_version, page, screenshots)
    step("split_filter", filter_by_split, page, screenshots)
    step("train", train_small_budget, page, screenshots)
    step("report", open_report, page, screenshots)
    step("model_version", open_model_version, page, screenshots)
    step("try_it", try_model, page, screenshots)
    step("add_device", add_device, page, stack, screenshots)
    step("deploy", deploy_to_device, page, screenshots)
    step("device", device_page, page, stack, screenshots)
    step("compress", compress_for_the_agent, page, screenshots)
    print("console browser steps (s):", json.dumps(timings))


# ------------------------------------------------------------------------------------- steps
def sign_in(page: Page, username: str, password: str, screenshots: Any) -> None:
    page.goto("/")
    expect(page.locator("#root > *").first).to_be_attached()  # the console rendered
    # not signed in: the console sends the browser to the login page
    expect(page).to_have_url(re.compile(r"/login\?next="))
    expect(page.get_by_role("heading", name="Sign in to Sampan")).to_be_visible()
    expect(page.get_by_text("Low-code AI, from images to edge devices")).to_be_visible()
    screenshots.take(page, "login")

    # a wrong password shows the server's message, and the person stays on the login page
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(password + "-wrong")
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_text("wrong username or password")).to_be_visible()  # the server's words
    expect(page).to_have_url(re.compile(r"/login"))

    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Sign in").click()
    expect(page).to_have_url(re.compile(r"/projects$"))
    expect(page.get_by_role("heading", name="Projects")).to_be_visible()
    expect(page.get_by_role("button", name="User menu")).to_contain_text(username)


def create_project(page: Page, name: str, screenshots: Any) -> None:
    page.get_by_role("button", name="New project").click()
    dialog = page.get_by_role("dialog", name="Create a project")
    expect(dialog).to_be_visible()
    dialog.get_by_label("Name").fill(name)
    dialog.get_by_label("Description").fill("Handwritten digits, from the browser test")
    dialog.get_by_role("button", name="Create").click()
    expect(page.get_by_text(f"Project “{name}” created")).to_be_visible()
    expect(page).to_have_url(re.compile(r"/projects/[^/]+/datasets$"))
    expect(page.get_by_role("heading", name="Datasets")).to_be_visible()
    expect(page.get_by_text("No datasets yet. Create one, then upload images.")).to_be_visible()
    # the sider's project picker shows the new project
    expect(page.locator(".ant-layout-sider .ant-select")).to_contain_text(name)

    # and the project list has it
    # the "Sampan" title in the sider leads back to the project list (an <a> without href: not a
    # link to assistive technology, so it is found by its text)
    page.locator(".ant-layout-sider").get_by_text("Sampan", exact=True).click()
    expect(page).to_have_url(re.compile(r"/projects$"))
    row = page.get_by_role("row").filter(has=page.get_by_role("link", name=name, exact=True))
    expect(row).to_contain_text("Handwritten digits, from the browser test")
    screenshots.take(page, "projects")
    row.get_by_role("link", name=name, exact=True).click()
    expect(page.get_by_role("heading", name="Datasets")).to_be_visible()


def members_page(page: Page, username: str, screenshots: Any) -> None:
    page.get_by_role("menuitem", name="Members").click()
    expect(page).to_have_url(re.compile(r"/members$"))
    expect(page.get_by_role("heading", name="Members")).to_be_visible()
    row = page.get_by_role("row").filter(has_text=username)
    expect(row).to_contain_text("Owner")
    # the creator is an owner, so the invite form is there
    expect(page.get_by_role("button", name="Invite")).to_be_visible()
    screenshots.take(page, "members")
    page.get_by_role("menuitem", name="Datasets").click()
    expect(page.get_by_role("heading", name="Datasets")).to_be_visible()


def create_dataset(page: Page, name: str, screenshots: Any) -> None:
    page.get_by_role("button", name="New dataset").click()
    dialog = page.get_by_role("dialog", name="Create a dataset")
    expect(dialog).to_be_visible()
    dialog.get_by_label("Name").fill(name)
    expect(dialog.get_by_label("Task")).to_be_visible()
    expect(dialog).to_contain_text("Image classification")
    dialog.get_by_role("button", name="Create").click()
    expect(page.get_by_text(f"Dataset “{name}” created")).to_be_visible()
    # the new dataset opens on its upload tab
    expect(page).to_have_url(re.compile(r"/datasets/[^/?]+\?tab=upload$"))
    expect(page.get_by_role("heading", name=name)).to_be_visible()
    expect(page.get_by_text("0 samples", exact=True)).to_be_visible()
    expect(page.get_by_text("No classes yet")).to_be_visible()
    expect(page.get_by_role("tab", name="Upload", selected=True)).to_be_visible()
    expect(page.get_by_text("Drop a zip or images here, or click to choose")).to_be_visible()


def upload_seed_and_loose_images(page: Page, tmp_path: Path, screenshots: Any) -> None:
    archive = zip_folder(SEEDS_DIR / "mnist" / "train", tmp_path / "digits.zip")
    file_input = page.locator("input[type=file]")

    file_input.set_input_files(str(archive))
    expect(page.get_by_test_id("pending-files")).to_have_text(re.compile(r"^1 file ready \(.+\)$"))
    page.get_by_role("button", name="Upload", exact=True).click()
    job = page.get_by_test_id("import-job").first
    # the import runs on the worker: the card shows progress, then "Done" and the report
    expect(job).to_contain_text("Done", timeout=120_000)
    expect_report(job, imported=400)
    expect(job).to_contain_text("Every file was imported.")
    # the pending list is emptied once the batch is in
    expect(page.get_by_test_id("pending-files")).to_have_count(0)
    # the header follows: 400 samples in the ten digit classes from the zip's folders
    expect(page.get_by_text("400 samples", exact=True)).to_be_visible()
    for digit in range(10):
        expect(page.locator(".ant-tag", has_text=re.compile(rf"^{digit}$")).first).to_be_visible()

    # three loose images (no folder, no class) go up as one batch of their own
    loose = [min((SEEDS_DIR / "mnist" / "heldout" / digit).iterdir()) for digit, _ in LOOSE]
    file_input.set_input_files([str(p) for p in loose])
    expect(page.get_by_test_id("pending-files")).to_have_text(re.compile(r"^3 files ready \(.+\)$"))
    page.get_by_role("button", name="Upload", exact=True).click()
    expect(page.get_by_test_id("import-job")).to_have_count(2)
    newest = page.get_by_test_id("import-job").first
    expect(newest).to_contain_text("Done", timeout=60_000)
    expect_report(newest, imported=3)
    expect(page.get_by_text("403 samples", exact=True)).to_be_visible()
    screenshots.take(page, "upload-report")


def expect_report(job: Locator, *, imported: int) -> None:
    def stat(title: str) -> Locator:
        statistic = job.locator(".ant-statistic").filter(has_text=title)
        return statistic.locator(".ant-statistic-content")

    expect(stat("Imported")).to_have_text(str(imported))
    for title in ("Duplicates", "Ignored", "Rejected"):
        expect(stat(title)).to_have_text("0")


def open_gallery(page: Page, screenshots: Any) -> None:
    page.get_by_role("tab", name="Samples").click()
    expect(page).to_have_url(re.compile(r"tab=samples"))
    gallery = page.get_by_test_id("gallery")
    expect(gallery).to_be_visible()
    # the count shows in the header and above the gallery
    expect(page.get_by_text("403 samples", exact=True)).to_have_count(2)
    wait_for_thumbnails(page)
    # a virtual grid: all 403 are loaded (one page of 500), only the rows in view and a few more
    # are in the DOM; the grid fits the 1280x720 window
    in_dom = gallery.get_by_test_id("sample").count()
    assert 0 < in_dom < 403, in_dom
    box = gallery.bounding_box()
    assert box is not None and box["y"] + box["height"] <= VIEWPORT["height"], box
    # scrolled to the bottom with the wheel, it shows the last samples: the three loose images
    gallery.hover()
    page.mouse.wheel(0, 100_000)
    loose = gallery.get_by_role("button", name=re.compile(r"^\d_\d+\.png: unlabeled$"))
    expect(loose).to_have_count(3)
    wait_for_thumbnails(page)
    assert gallery.get_by_test_id("sample").count() < 403
    screenshots.take(page, "gallery-bottom")

    choose_filter(page, "Label: 3")
    expect(page.get_by_text("40 samples", exact=True)).to_be_visible()
    expect(gallery.get_by_test_id("sample")).to_have_count(40)
    expect(gallery.get_by_role("button", name=re.compile(r": 3$"))).to_have_count(40)
    wait_for_thumbnails(page)
    gallery.get_by_test_id("sample").first.click()
    expect(page.get_by_test_id("labeling-panel")).to_contain_text("Current label: 3")
    screenshots.take(page, "gallery")


def wait_for_thumbnails(page: Page) -> None:
    """The thumbnails in the gallery's view have loaded (the grid renders them as they scroll
    into view)."""
    page.wait_for_function("""() => {
        const grid = document.querySelector('[data-testid=gallery]');
        if (!grid) return false;
        const view = grid.getBoundingClientRect();
        const imgs = [...grid.querySelectorAll('img')].filter((img) => {
            const box = img.getBoundingClientRect();
            return box.bottom > view.top && box.top < Math.min(view.bottom, window.innerHeight);
        });
        return imgs.length > 0 && imgs.every((img) => img.complete && img.naturalWidth > 0);
    }""")


def choose_filter(page: Page, option: str) -> None:
    choose_option(page, page.get_by_role("combobox", name="Show"), option)


def choose_option(page: Page, combobox: Locator, text: str) -> None:
    """Pick ``text`` in an antd Select. A long list is virtual (only the options in view exist)
    and opens scrolled to the current value, so it is scrolled with the wheel, as a person
    would, to the top and then to the bottom until the option shows."""
    combobox.click()
    dropdown = page.locator(".ant-select-dropdown:visible")
    expect(dropdown).to_have_count(1)
    option = dropdown.locator(".ant-select-item-option").filter(
        has_text=re.compile(rf"^{re.escape(text)}$"))
    holder = dropdown.locator(".ant-select-dropdown-list-holder")
    if holder.evaluate("el => el.scrollHeight > el.clientHeight + 1"):
        for delta in (-5_000, 5_000):
            holder.hover()
            page.mouse.wheel(0, delta)
            try:
                option.wait_for(state="visible", timeout=1_000)
                break
            except PlaywrightTimeoutError:
                continue
    option.click()
    expect(dropdown).to_have_count(0)


def label_and_reload(page: Page, screenshots: Any) -> None:
    gallery = page.get_by_test_id("gallery")
    choose_filter(page, "Unlabeled")
    expect(page.get_by_text("3 samples", exact=True)).to_be_visible()
    unlabeled = gallery.get_by_role("button", name=re.compile(r": unlabeled$"))
    expect(unlabeled).to_have_count(3)

    # the held-out files are named "<digit>_<n>.png": the person reads the digit off the image
    unlabeled.first.click()
    panel = page.get_by_test_id("labeling-panel")
    expect(panel).to_be_visible()
    expect(panel).to_contain_text("Current label: none")
    labeled: dict[str, str] = {}
    for _, how in LOOSE:
        name_text = panel.locator(".ant-typography-ellipsis")
        expect(name_text).to_have_text(re.compile(r"^\d_\d+\.png$"))
        name = name_text.inner_text()
        digit = name[0]
        # class buttons show their key then the name: "<kbd>3</kbd>3" is class "3" with key 3 (a
        # class named by a digit has that digit as its key; it was 1 -> "0", 2 -> "1", ...)
        button = panel.get_by_role("button").filter(has=page.locator("kbd")).filter(
            has_text=re.compile(rf"^{re.escape(digit)}{re.escape(digit)}$"))
        expect(button.locator("kbd")).to_have_text(digit)
        if how == "click":
            button.click()
        else:
            page.keyboard.press(digit)
        expect(page.locator(".ant-message").get_by_text(f"Saved: {digit}")).to_be_visible()
        assert stored_label(page, name) == digit
        if how == "key":
            # Ctrl+Z clears it on the server and shows the sample again; Ctrl+Shift+Z labels it
            # again and moves on, as the key did
            page.keyboard.press("Control+z")
            expect(name_text).to_have_text(name)
            expect(panel).to_contain_text("Current label: none")
            assert stored_label(page, name) is None
            page.keyboard.press("Control+Shift+z")
            expect(name_text).not_to_have_text(name)
            assert stored_label(page, name) == digit
        labeled[name] = digit
        if len(labeled) < len(LOOSE):
            # labeling moves on to the next unlabeled sample
            expect(name_text).not_to_have_text(name)
    expect(page.locator(".ant-message").get_by_text(
        "Every loaded sample is labeled.")).to_be_visible()
    expect(page.get_by_text("0 samples", exact=True)).to_be_visible()
    expect(page.get_by_text("No samples match.")).to_be_visible()
    screenshots.take(page, "labeled")

    # labels save without a save button: they survive a reload, and so does the filter (in the URL)
    page.reload()
    expect(page.get_by_text("403 samples", exact=True)).to_be_visible()  # the dataset's header
    expect(page.locator(".ant-select").filter(has=page.get_by_role("combobox", name="Show"))
           ).to_contain_text("Unlabeled")
    expect(page.get_by_text("No samples match.")).to_be_visible()
    for name, digit in labeled.items():
        choose_filter(page, f"Label: {digit}")
        expect(page.get_by_text("41 samples", exact=True)).to_be_visible()
        expect(gallery.get_by_role("button", name=f"{name}: {digit}")).to_be_visible()


def stored_label(page: Page, name: str) -> str | None:
    """The class label the API stores for the sample named ``name`` in the dataset on screen
    (``/projects/<id>/datasets/<id>``), read with the page's own session."""
    match = re.search(r"/projects/([0-9a-f-]+)/datasets/([0-9a-f-]+)", page.url)
    assert match is not None, page.url
    response = page.request.get(f"/api/v1/projects/{match[1]}/datasets/{match[2]}/samples/"
                                "?page_size=500")
    assert response.ok, response.status
    [sample] = [s for s in response.json()["results"] if s["original_name"] == name]
    return next((a["class_label"] for a in sample["annotations"] if a["kind"] == "class"), None)


def switch_languages(page: Page, screenshots: Any) -> None:
    def choose_language(current_label: str, option: str) -> None:
        choose_option(page, page.get_by_role("combobox", name=current_label), option)

    choose_language("Language", "简体中文")
    expect(page.locator("html")).to_have_attribute("lang", "zh-CN")
    expect(page.get_by_role("menuitem", name="数据集")).to_be_visible()
    expect(page.get_by_role("menuitem", name="成员")).to_be_visible()
    expect(page.get_by_role("tab", name="样本")).to_be_visible()
    expect(page.get_by_text("共 41 个样本", exact=True)).to_be_visible()
    # the choice is kept across a reload (and the gallery's filter, in the URL)
    page.reload()
    expect(page.get_by_role("menuitem", name="数据集")).to_be_visible()
    expect(page.get_by_text("共 403 个样本", exact=True)).to_be_visible()
    expect(page.get_by_text("共 41 个样本", exact=True)).to_be_visible()
    expect(page.get_by_role("tab", name="上传")).to_be_visible()
    wait_for_thumbnails(page)
    screenshots.take(page, "gallery-zh-CN")
    page.get_by_role("menuitem", name="数据集").click()
    expect(page.get_by_role("heading", name="数据集")).to_be_visible()
    expect(page.get_by_role("columnheader", name="样本数")).to_be_visible()
    expect(page.get_by_role("cell", name="403")).to_be_visible()
    screenshots.take(page, "datasets-zh-CN")

    choose_language("语言", "English")
    expect(page.locator("html")).to_have_attribute("lang", "en")
    expect(page.get_by_role("heading", name="Datasets")).to_be_visible()
    expect(page.get_by_role("columnheader", name="Samples")).to_be_visible()
    expect(page.get_by_role("menuitem", name="Members")).to_be_visible()
    screenshots.take(page, "datasets")


def freeze_version(page: Page, screenshots: Any) -> None:
    # from the datasets list (where the language step ends) to the dataset's Versions tab
    page.get_by_role("link", name="digits", exact=True).click()
    expect(page.get_by_role("heading", name="digits")).to_be_visible()
    page.get_by_role("tab", name="Versions").click()
    expect(page).to_have_url(re.compile(r"tab=versions"))
    expect(page.get_by_text("No versions yet. Label samples, then freeze a version to train on it.")
           ).to_be_visible()
    # the API's defaults: 70/15/15 train/validation/test, seed 0; the form says what the test
    # split is for and what a class needs to have one
    expect(page.get_by_role("spinbutton", name="Validation fraction")).to_have_value("0.15")
    expect(page.get_by_role("spinbutton", name="Test fraction")).to_have_value("0.15")
    expect(page.get_by_test_id("test-split-hint")).to_contain_text(
        "The evaluation report is computed on the test split")
    expect(page.get_by_test_id("test-split-hint")).to_contain_text("at least 10 labeled samples")
    page.get_by_role("button", name="Freeze version").click()
    expect(page.locator(".ant-message").get_by_text("Version 1 frozen")).to_be_visible()
    # the new version's page: its numbers, split counts and the class balance chart
    expect(page).to_have_url(re.compile(r"/datasets/[^/]+/versions/[^/?]+$"))
    expect(page.get_by_role("heading", name="digits v1")).to_be_visible()
    samples, classes = statistic(page, "Samples"), statistic(page, "Classes")
    expect(samples).to_have_text("403")
    expect(classes).to_have_text("10")
    train, val, test = (statistic(page, "Train"), statistic(page, "Validation"),
                        statistic(page, "Test"))
    for count in (train, val, test):
        expect(count).to_have_text(re.compile(r"^\d+$"))  # a test split: no "no test split"
    n_train, n_val, n_test = int(train.inner_text()), int(val.inner_text()), int(test.inner_text())
    # round(15 %) of each class's 40 or 41 samples to validation and to test: 6 each (every class
    # has the 10 samples a test split needs)
    assert (n_train, n_val, n_test) == (283, 60, 60), (n_train, n_val, n_test)
    balance = page.get_by_role("img", name="Class balance per split")
    expect(balance.locator("canvas").first).to_be_visible()
    wait_for_chart(balance)
    # every class has 40+ samples: no warnings about this version
    expect(page.get_by_test_id("version-flags")).to_have_count(0)
    expect(page.get_by_text("validation 15%, test 15%")).to_be_visible()
    screenshots.take(page, "dataset-version")

    # the versions table lists it with its counts and no flags
    page.locator(".ant-breadcrumb").get_by_role("link", name="digits").click()
    expect(page).to_have_url(re.compile(r"tab=versions"))
    row = page.get_by_test_id("versions-table").get_by_role("row").filter(
        has=page.get_by_role("link", name="v1", exact=True))
    expect(row).to_contain_text(f"{n_train} / {n_val} / {n_test}")
    expect(row.get_by_role("cell", name="403", exact=True)).to_be_visible()
    expect(row.get_by_role("cell", name="10", exact=True)).to_be_visible()
    expect(row.locator(".ant-tag")).to_have_text("OK")
    screenshots.take(page, "versions")
    row.get_by_role("link", name="v1", exact=True).click()
    expect(page.get_by_role("heading", name="digits v1")).to_be_visible()


def filter_by_split(page: Page, screenshots: Any) -> None:
    # from the version page (where freezing ends) to the gallery of its validation split and back
    n_val = int(statistic(page, "Validation").inner_text())
    page.locator(".ant-breadcrumb").get_by_role("link", name="digits").click()
    page.get_by_role("tab", name="Samples").click()
    gallery = page.get_by_test_id("gallery")
    expect(gallery).to_be_visible()
    split = page.get_by_role("combobox", name="Split")
    expect(split).to_be_disabled()  # no version chosen: a split means nothing yet
    choose_option(page, page.get_by_role("combobox", name="Version"), "Version v1")
    choose_option(page, split, "Validation")
    expect(page).to_have_url(re.compile(r"[?&]version=[^&]+&split=val"))
    expect(page.get_by_text(f"{n_val} samples", exact=True)).to_be_visible()
    # with the label filter too: the validation samples of class "3" (~15 % of its 40)
    choose_filter(page, "Label: 3")
    expect(page.get_by_text(f"{n_val} samples", exact=True)).to_have_count(0)
    n_three = int(page.get_by_text(re.compile(r"^\d{1,2} samples?$")).inner_text().split()[0])
    assert n_three == 6, n_three  # the split is stratified: round(15 %) of each class
    expect(gallery.get_by_test_id("sample")).to_have_count(n_three)
    expect(gallery.get_by_role("button", name=re.compile(r": 3$"))).to_have_count(n_three)
    wait_for_thumbnails(page)
    screenshots.take(page, "gallery-split")
    page.get_by_role("tab", name="Versions").click()
    page.get_by_test_id("versions-table").get_by_role("link", name="v1", exact=True).click()
    expect(page.get_by_role("heading", name="digits v1")).to_be_visible()


def statistic(page: Page, title: str) -> Locator:
    """The value of the antd Statistic titled exactly ``title``."""
    return page.locator(".ant-statistic").filter(
        has=page.locator(".ant-statistic-title", has_text=re.compile(rf"^{re.escape(title)}$"))
    ).locator(".ant-statistic-content")


def wait_for_chart(chart: Locator) -> None:
    """ECharts has drawn into the chart's canvas and its animation has ended: something on the
    canvas is not transparent, and the picture did not change between two looks 300 ms apart
    (a canvas animation is not one that the screenshot's ``animations="disabled"`` stops)."""
    chart.locator("canvas").first.wait_for()
    chart.page.wait_for_function("""(el) => {
        const canvas = el.querySelector('canvas');
        if (!canvas || canvas.width === 0) return false;
        const data = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
        let drawn = false;
        for (let i = 3; i < data.length; i += 4 * 97) if (data[i] !== 0) { drawn = true; break; }
        const picture = canvas.toDataURL();
        const still = el.__sampanLastPicture === picture;
        el.__sampanLastPicture = picture;
        return drawn && still;
    }""", arg=chart.element_handle(), polling=300)


def train_small_budget(page: Page, screenshots: Any) -> None:
    # "Train a model on it" opens the wizard with this version chosen
    page.get_by_role("button", name="Train a model on it").click()
    expect(page).to_have_url(re.compile(r"/training\?version="))
    expect(page.get_by_role("heading", name="Training", exact=True)).to_be_visible()
    def select(name: str) -> Locator:  # an antd Select shows its choice beside the combobox
        return page.locator(".ant-select").filter(
            has=page.get_by_role("combobox", name=name, exact=True))

    expect(select("Dataset")).to_contain_text("digits")
    expect(select("Dataset version")).to_contain_text("v1 · 403 samples · 10 classes")
    budget = page.get_by_role("spinbutton", name="Time budget")
    expect(budget).to_have_value("90")  # the default
    page.locator(".ant-segmented").get_by_text("0:30", exact=True).click()  # the smallest preset
    expect(budget).to_have_value("30")
    # augmentation "Auto" by default, previewed on 4 of the version's images, 3 draws each
    expect(page.get_by_role("radio", name=re.compile(r"^Auto"))).to_be_checked()
    expect(page.get_by_test_id("augmented")).to_have_count(12)
    expect(page.get_by_role("radio", name=re.compile(r"^More accurate"))).to_have_attribute(
        "aria-checked", "true")
    expect(page.get_by_test_id("training-jobs")).to_contain_text("No training jobs yet.")
    screenshots.take(page, "training-wizard")
    # what the job's websocket brings to the page (the page also polls while the socket is down)
    frames: list[dict[str, Any]] = []

    def on_socket(socket: Any) -> None:
        if "/ws/jobs/training/" in socket.url:
            socket.on("framereceived", lambda payload: frames.append(json.loads(payload)))

    page.on("websocket", on_socket)
    page.get_by_role("button", name="Start training").click()

    # the job page: status, epoch and loss while it runs, then "Done" with the curves
    expect(page).to_have_url(re.compile(r"/training/[^/]+$"))
    expect(page.get_by_role("heading", name="Training digits")).to_be_visible()
    status = page.get_by_test_id("job-status")
    expect(status).to_have_text(re.compile(r"^(Pending|Queued|Running|Done)$"))
    # record what the person sees as the job runs (the page polls or listens on its socket)
    page.evaluate("""() => {
        window.__sampanSeen = {epoch: [], loss: [], live: []};
        const value = (title) => {
            for (const s of document.querySelectorAll('.ant-statistic')) {
                const t = s.querySelector('.ant-statistic-title');
                if (t && t.textContent.trim() === title)
                    return s.querySelector('.ant-statistic-content').textContent.trim();
            }
            return null;
        };
        const timer = setInterval(() => {
            const seen = window.__sampanSeen;
            const epoch = value('Epoch'), loss = value('Loss');
            const tag = document.querySelector('[data-testid=live-tag]');
            if (epoch && /^\\d+ \\/ \\d+$/.test(epoch) && !seen.epoch.includes(epoch))
                seen.epoch.push(epoch);
            if (loss && /^\\d+\\.\\d{4}$/.test(loss) && !seen.loss.includes(loss))
                seen.loss.push(loss);
            if (tag && !seen.live.includes(tag.textContent)) seen.live.push(tag.textContent);
            if (!location.pathname.match(/\\/training\\/[^/]+$/)) clearInterval(timer);
        }, 100);
    }""")
    expect(page.get_by_test_id("live-tag")).to_have_text(re.compile(r"^(live|polling)$"))
    # a running epoch: "n / m" and a loss
    page.wait_for_function("() => window.__sampanSeen.epoch.length > 0 "
                           "&& window.__sampanSeen.loss.length > 0", timeout=120_000)
    if status.inner_text() == "Running":
        screenshots.take(page, "training-running")
    expect(status).to_have_text("Done", timeout=120_000)
    seen = page.evaluate("() => window.__sampanSeen")
    print("training job page showed:", json.dumps(seen), f"({len(frames)} websocket events)")
    # progress came over the websocket: epochs with a loss, then the end, and the page said "live"
    assert any("epoch" in f.get("progress", {}) and "loss" in f["progress"] for f in frames), frames
    assert frames and frames[-1].get("status") == "SUCCEEDED", frames[-3:]
    assert "live" in seen["live"], f"the job page never showed 'live': {seen['live']}"
    expect(page.get_by_test_id("live-tag")).to_have_count(0)  # only while the job runs
    expect(page.get_by_text("Training finished")).to_be_visible()
    expect(page.get_by_test_id("training-progress")).to_have_attribute("aria-valuenow", "100")
    expect(statistic(page, "Phase")).to_have_text("Done")
    # the version has a test split: the header gives the kept model's accuracy on it, said so
    expect(statistic(page, "Test accuracy")).to_have_text(re.compile(r"^\d+\.\d%$"))
    curves = page.get_by_role("img", name="Loss and validation accuracy per epoch")
    expect(curves.locator("canvas").first).to_be_visible()
    wait_for_chart(curves)
    # the curve may end lower than the result: the page says which epoch's weights were kept
    expect(page.get_by_test_id("kept-epoch")).to_have_text(re.compile(
        r"^The model kept is from epoch \d+ \((output layer only|all layers), "
        r"validation accuracy \d+\.\d%\)"))
    # once done, the figure in the header is the kept model's (on the test split), and says so
    expect(page.get_by_test_id("val-epoch")).to_have_text(
        re.compile(r"^of the model kept: epoch \d+ \((output layer only|all layers)\)$"))
    expect(page.get_by_test_id("report-link")).to_have_text("Open the evaluation report")
    expect(page.get_by_test_id("model-link")).to_have_text("Model digits v1")
    expect(page.locator(".ant-descriptions").get_by_role("link", name="digits v1", exact=True)
           ).to_be_visible()  # the dataset version it trains on
    screenshots.take(page, "training-done")


def open_report(page: Page, screenshots: Any) -> None:
    page.get_by_test_id("report-link").click()
    expect(page).to_have_url(re.compile(r"/training/[^/]+/report$"))
    expect(page.get_by_role("heading", name="Evaluation of digits")).to_be_visible()
    expect(statistic(page, "Accuracy")).to_have_text(re.compile(r"^\d+\.\d%$"))
    expect(statistic(page, "Macro-F1")).to_have_text(re.compile(r"^\d+\.\d%$"))
    accuracy = float(statistic(page, "Accuracy").inner_text().rstrip("%"))
    assert accuracy >= 50, f"accuracy {accuracy}% after a 30 s budget"  # ten classes: chance is 10%
    # the version has a test split (the default 15 %): the report is computed on it, with the
    # validation figures beside
    expect(statistic(page, "Samples evaluated")).to_have_text("60")
    expect(page.get_by_test_id("report-split")).to_contain_text(
        "Computed on the test split: 60 images never used to choose the model.")
    expect(page.get_by_test_id("report-validation")).to_contain_text(
        re.compile(r"accuracy \d+\.\d%, macro-F1 \d+\.\d% \(60 images\)"))
    matrix = page.get_by_role("img", name="Confusion matrix")
    expect(matrix.locator("canvas").first).to_be_visible()
    wait_for_chart(matrix)
    cells = page.get_by_test_id("cell-samples")
    expect(cells).to_contain_text("Click a cell of the matrix to list its samples here.")

    # the matrix is a canvas: aim at the diagonal cell of class "0" from the chart's grid
    # (ReportPage: grid left 72, right 24, top 16, bottom 96; 10 classes), check by its tooltip
    matrix.scroll_into_view_if_needed()
    box = matrix.locator("canvas").first.bounding_box()
    assert box is not None
    n, left, right, top, bottom = 10, 72, 24, 16, 96
    x = box["x"] + left + 0.5 * (box["width"] - left - right) / n
    y = box["y"] + top + 0.5 * (box["height"] - top - bottom) / n
    page.mouse.move(x, y)
    tooltip = re.compile(r"True 0, predicted 0: (\d+)")
    expect(matrix).to_contain_text(tooltip)  # the tooltip lives in the chart's element
    correct = int(tooltip.search(matrix.inner_text()).group(1))  # type: ignore[union-attr]
    assert correct > 0
    page.mouse.click(x, y)
    title = "sample" if correct == 1 else "samples"
    expect(cells).to_contain_text(f"True 0, predicted 0: {correct} {title}")
    thumbs = cells.get_by_test_id("report-sample")
    expect(thumbs).to_have_count(min(correct, 48))  # 48 a page
    expect(thumbs.first).to_have_attribute("title", "predicted 0, true 0")
    cells.scroll_into_view_if_needed()
    page.wait_for_function("""() => {
        const imgs = [...document.querySelectorAll('[data-testid=cell-samples] img')];
        return imgs.length > 0 && imgs.every((img) => img.complete && img.naturalWidth > 0);
    }""")
    screenshots.take(page, "report")
    expect(page.get_by_text(re.compile(r"^(\d+ misclassified samples?|"
                                       r"Every sample was classified correctly\.)$")).first
           ).to_be_visible()
    page.get_by_role("link", name="digits", exact=True).click()  # the breadcrumb: the job
    expect(page.get_by_role("heading", name="Training digits")).to_be_visible()


def open_model_version(page: Page, screenshots: Any) -> None:
    page.get_by_test_id("model-link").click()
    expect(page).to_have_url(re.compile(r"/models/versions/[^/]+$"))
    expect(page.get_by_role("heading", name="Model digits v1")).to_be_visible()
    expect(page.locator(".ant-breadcrumb")).to_contain_text("digits v1")
    # the held-out test split's figure, named as such (not the validation figure that chose it)
    expect(statistic(page, "Accuracy (test)")).to_have_text(re.compile(r"^\d+\.\d%$"))
    expect(statistic(page, "Macro-F1 (test)")).to_have_text(re.compile(r"^\d+\.\d%$"))
    expect(statistic(page, "Classes")).to_have_text("10")
    expect(page.get_by_role("link", name="Download package")).to_be_visible()
    expect(page.get_by_role("link", name="model.onnx")).to_be_visible()
    # lineage: the dataset version it learned from
    expect(page.locator(".ant-descriptions").get_by_role("link", name="digits v1", exact=True)
           ).to_have_attribute("href", re.compile(r"/datasets/[^/]+/versions/[^/]+$"))
    screenshots.take(page, "model-version")


def try_model(page: Page, screenshots: Any) -> None:
    """Drop a held-out digit on "Try it": the control plane runs the model and shows the top 5."""
    card = page.locator(".ant-card").filter(has=page.get_by_text("Try it", exact=True))
    expect(card).to_contain_text("Top")
    digit = sorted((SEEDS_DIR / "mnist" / "heldout" / "7").glob("*.png"))[0]
    card.locator("input[type=file]").set_input_files(str(digit))
    predictions = card.get_by_test_id("prediction")
    expect(predictions).to_have_count(5)  # top 5 by default
    expect(card.get_by_test_id("predict-latency")).to_contain_text(re.compile(r"\d+\.\d ms"))
    shown = [predictions.nth(i).inner_text().split("\n") for i in range(5)]
    labels = [row[0] for row in shown]
    probabilities = [float(row[-1].rstrip("%")) for row in shown]
    assert set(labels) <= set("0123456789") and len(set(labels)) == 5, labels
    assert probabilities == sorted(probabilities, reverse=True) and sum(probabilities) <= 100.5
    expect(card.get_by_role("img", name=digit.name)).to_be_visible()  # the dropped image
    screenshots.take(page, "try-it")


def add_device(page: Page, stack: Stack, screenshots: Any) -> None:
    """Add a device as a person would: copy the enroll command from the console and run it on the
    device (here: this machine, with the agent's home in the stack's folder), then start the
    agent."""
    page.get_by_role("menuitem", name="Devices").click()
    expect(page.get_by_role("heading", name="Devices")).to_be_visible()
    expect(page.get_by_text("No devices yet: add one.")).to_be_visible()
    page.get_by_role("button", name="Add device").click()
    dialog = page.get_by_role("dialog", name="Add a device")
    command = dialog.get_by_test_id("enroll-command")
    expect(command).to_have_text(re.compile(r"^sampan-agent enroll --url http://\S+ --token \S+$"))
    expect(dialog).to_contain_text("shown only now")
    screenshots.take(page, "add-device")
    argv = shlex.split(command.inner_text())
    assert argv[:2] == ["sampan-agent", "enroll"] and argv[argv.index("--url") + 1] == stack.url
    if stack.agent_home.exists():
        shutil.rmtree(stack.agent_home)
    enrolled = subprocess.run(
        [sys.executable, "-m", "edge_agent.cli", *argv[1:], "--home", str(stack.agent_home),
         "--name", "local-agent"], env=stack.env(), capture_output=True, text=True, timeout=60)
    assert enrolled.returncode == 0, enrolled.stdout + enrolled.stderr
    stack.start_agent()
    dialog.locator(".ant-modal-footer").get_by_role("button", name="Close").click()
    expect(dialog).to_be_hidden()
    row = page.get_by_test_id("devices-table").get_by_role("row").filter(has_text="local-agent")
    expect(row).to_contain_text("online", timeout=30_000)  # the agent's first heartbeat
    expect(row).to_contain_text("none")  # no model yet
    screenshots.take(page, "devices")


def deploy_to_device(page: Page, screenshots: Any) -> None:
    """One click deploys the model version; the device converges to "running"."""
    page.get_by_role("menuitem", name="Models").click()
    card = page.get_by_test_id("model-card").filter(has_text="digits")
    card.get_by_role("link", name="v1", exact=True).click()
    expect(page.get_by_role("heading", name="Model digits v1")).to_be_visible()
    page.get_by_role("button", name=re.compile(r"\bDeploy$")).click()
    dialog = page.get_by_role("dialog", name="Deploy digits v1")
    dialog.get_by_role("checkbox", name=re.compile(r"^local-agent")).check()
    dialog.get_by_role("button", name="Deploy to 1 device").click()
    expect(page.locator(".ant-message").get_by_text("Deployment started")).to_be_visible()
    row = page.get_by_test_id("deployments-table").get_by_role("row").filter(has_text="local-agent")
    expect(row).to_contain_text(re.compile(r"pending|downloading|verifying|running"))
    expect(row).to_contain_text("running", timeout=90_000)
    screenshots.take(page, "deployed")


def device_page(page: Page, stack: Stack, screenshots: Any) -> None:
    """The device serves traffic; its page shows the requests, latency and charts."""
    digits = sorted((SEEDS_DIR / "mnist" / "heldout").glob("*/*.png"))[:20]
    for path in digits:  # the device's own traffic, from an app next to it
        served = requests.post(stack.agent_url + "/v1/predict", data=path.read_bytes(), timeout=10)
        assert served.status_code == 200, served.text
    row = page.get_by_test_id("deployments-table").get_by_role("row").filter(has_text="local-agent")
    row.get_by_role("link", name="local-agent").click()
    expect(page.get_by_role("heading", name="local-agent")).to_be_visible()
    expect(page.get_by_text("digits v1").first).to_be_visible()
    # the next heartbeats carry the counters (every second in this stack)
    expect(statistic(page, "Requests")).to_have_text(str(len(digits)), timeout=30_000)
    expect(statistic(page, "p95 latency, last 60 s")).to_have_text(re.compile(r"^\d+\.\d ms$"))
    cores = os.cpu_count()
    expect(statistic(page, f"CPU (of {cores} core{'s' if cores != 1 else ''})")).to_have_text(
        re.compile(r"^\d+\.\d%$"))
    for title in ("Requests per second", "Latency (ms)", "Errors per interval", "CPU %",
                  "Memory (MB)"):
        chart = page.get_by_role("img", name=title)
        expect(chart.locator("canvas").first).to_be_visible()
        wait_for_chart(chart)
    screenshots.take(page, "device", full_page=True)
    page.get_by_role("menuitem", name="Devices").click()
    row = page.get_by_test_id("devices-table").get_by_role("row").filter(has_text="local-agent")
    expect(row).to_contain_text("digits v1")
    expect(row).to_contain_text(str(len(digits)))
    screenshots.take(page, "devices-running")
    # an alert rule from the console: it lists with its condition
    page.get_by_role("menuitem", name="Alerts").click()
    expect(page.get_by_role("heading", name="Alerts")).to_be_visible()
    page.get_by_label("Name").fill("slow agent")
    page.get_by_label("Condition").click()
    page.get_by_title("p95 latency", exact=True).click()
    page.get_by_label("above (ms)").fill("500")
    page.get_by_role("button", name="Add rule").click()
    rules = page.get_by_test_id("alert-rules")
    expect(rules).to_contain_text("slow agent")
    expect(rules).to_contain_text("500 ms")
    screenshots.take(page, "alerts")


def compress_for_the_agent(page: Page, screenshots: Any) -> None:
    """Compress digits v1 for the local agent (INT8 only, 2 minutes): the live job page fills
    its table and Pareto chart as the agent measures each candidate; the outcome is a new
    version one click deploys, or "keep the float model" with the reason."""
    page.get_by_role("menuitem", name="Models").click()
    card = page.get_by_test_id("model-card").filter(has_text="digits")
    card.get_by_role("link", name="v1", exact=True).click()
    expect(page.get_by_role("heading", name="Model digits v1")).to_be_visible()
    page.get_by_test_id("compress-button").click()
    dialog = page.get_by_role("dialog", name="Compress digits v1 for a device")
    expect(dialog.get_by_label("Target device")).to_be_visible()
    expect(dialog.get_by_text("local-agent")).to_be_visible()  # the online device, preselected
    dialog.get_by_label("Time budget (minutes)").fill("2")
    dialog.get_by_text("Advanced").click()
    # the panel opens with a height animation: a click while it still moves lands beside the
    # box ("Clicking the checkbox did not change its state", seen on a slow 2-core host)
    expect(dialog.locator(".ant-collapse-item-active")).to_have_count(1)
    expect(dialog.locator("[class*='ant-motion-collapse']")).to_have_count(0)
    for method in ("Pruning (distilled student)", "Lower input resolution (distilled student)",
                   "FP16 (devices with a GPU only)"):
        box = dialog.get_by_role("checkbox", name=method)
        box.uncheck()
        expect(box).not_to_be_checked()
    screenshots.take(page, "compress-form")
    dialog.get_by_role("button", name="Start compressing").click()
    expect(page.get_by_role("heading", name="Compression of digits v1")).to_be_visible()
    table = page.get_by_test_id("candidates-table")
    expect(table.get_by_role("row").filter(has_text="Float reference")).to_be_visible(
        timeout=60_000)
    expect(page.get_by_test_id("outcome")).to_be_visible(timeout=180_000)
    for row in (table.get_by_role("row").filter(has_text="Float reference"),
                table.get_by_role("row").filter(has_text="INT8").first):
        expect(row).to_contain_text("measured")
        expect(row).to_contain_text(re.compile(r"\d+\.\d+ / \d+\.\d+ ms"))
    chart = page.get_by_role("img", name="Accuracy vs latency on the device")
    expect(chart.locator("canvas").first).to_be_visible()
    wait_for_chart(chart)
    expect(page.get_by_test_id("pick-reason")).not_to_be_empty()
    screenshots.take(page, "compression-job", full_page=True)
    deploy = page.get_by_role("button", name="Deploy to local-agent")
    if deploy.count():  # a pick: one click deploys it
        deploy.click()
        expect(page.locator(".ant-message").get_by_text(
            "Deployment to local-agent started")).to_be_visible()
        page.get_by_test_id("picked-version-link").click()
        expect(page.get_by_test_id("compressed-from")).to_contain_text("Compressed from v1")
        screenshots.take(page, "compressed-version")
