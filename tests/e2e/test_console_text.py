"""Text classification in the console (issue 13) in the real Chromium against the real platform.

Redis, uvicorn serving the built console (``frontend/dist``), the light Celery worker of the
default and imports queues (``sampan.celery``, as docker-compose.yml runs it) and the training
worker (``workers.app``, the training queue) run as real processes. Playwright drives the system
Chromium at 1280x720 as a person:

- creates a text classification dataset (正面 / 负面) in the console and uploads a UTF-8 CSV with
  a byte-order mark, the header ``评论,情感``, a quoted field holding a comma and a line break, a
  row with too many columns, an empty text, Chinese, English and emoji; reads the browser's
  preview, chooses the text and label columns there, uploads, and reads the import report: the
  counts, the encoding, the table as the server read it and the bad rows by line;
- in the text list: searches a text; labels the current text with its class's key (stored: read
  back through the API), undoes it with Ctrl+Z and redoes it with Ctrl+Shift+Z (both stored);
  ticks two texts and labels them at once;
- a toy dataset (60 texts a class built around cue words, imported through the API) is frozen and
  trained through the API (``POST .../training-jobs/``, a 20 s budget; it trains while the
  person uses the console above); then the job page shows the candidates table with the winning
  family marked; the report shows the per-class table and the confusion matrix, and a click on a
  cell lists its texts; the model version's "Try it" classifies a typed text with class bars.

Screenshots of each step go to ``$SAMPAN_SCREENSHOT_DIR`` (default ``test-artifacts/screenshots/``).
"""

from __future__ import annotations

import contextlib
import json
import random
import re
from collections.abc import Iterator
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Locator, Page, expect

from sampan.devstack.client import Client
from sampan.devstack.stack import Stack, wait_until
from tests.database import stack_database_url
from tests.e2e.test_console_browser import choose_option, statistic, wait_for_chart

USERNAME, PASSWORD = "text-e2e", "text-e2e-password"
CLASSES = ["正面", "负面"]

# The CSV the person uploads: (line its record starts on, the row as written). Line 3's quoted
# text holds a comma and a line break (so line 4 is part of it); line 6 has a cell too many and
# line 7 an empty text: both are reported by line; lines 9-11 have no label.
CSV_HEADER = "评论,情感"
CSV_ROWS = [
    (2, "物流很快，包装也很好 📦,正面"),
    (3, '"Great value, would buy again\nfive stars 👍",正面'),
    (5, "质量太差了 😡 never again,负面"),
    (6, '"坏了,退货",负面,多余的一列'),
    (7, ",负面"),
    (8, "屏幕清晰 and the battery lasts 两天 🔋,正面"),
    (9, "还行吧 so-so 🤔,"),
    (10, "客服态度很差 rude support 😠,"),
    (11, "Works as described 👌 物有所值,"),
]
MULTILINE = "Great value, would buy again\nfive stars 👍"
IMPORTED = 7  # lines 2, 3, 5, 8, 9, 10, 11

# The toy dataset that trains: cue words of its class among filler characters.
POSITIVE = ["好", "棒", "喜欢", "满意", "great", "love", "👍"]
NEGATIVE = ["差", "烂", "讨厌", "失望", "awful", "hate", "👎"]
FILLER = "的了是在我有这个们中来上大为和国地到以说时要就出会可也你对生能而子那得于着下自之"
PER_CLASS = 60
BUDGET_S = 20
# what the console calls each family (frontend/src/i18n/locales/en.json training.text.families)
FAMILY_NAMES = {"linear": "linear model", "fasttext": "fastText-style model",
                "charcnn": "character CNN", "encoder": "sentence encoder"}


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """Web, the light worker (imports) and the training worker; the training worker imports
    torch while the light one starts (``wait=False``): the first job queued waits for it."""
    with Stack(data_dir=tmp_path_factory.mktemp("stack"),
               database_url=stack_database_url()) as s:
        s.start(worker=False)
        s.start_worker("worker", queues="training", wait=False)
        s.start_worker("worker-light", queues="default,imports", pool="threads", concurrency=2,
                       app="sampan.celery")
        yield s


@pytest.fixture(scope="module")
def account(stack: Stack) -> dict[str, Any]:
    """The console user, its API client and a project of its own."""
    out = stack.manage("sampan_user", "--username", USERNAME, "--password", PASSWORD)
    api = Client(stack.url, json.loads(out.stdout.strip().splitlines()[-1])["token"])
    project = api.post("/api/v1/projects/", {"name": "Reviews"})
    return {"api": api, "project": project, "p": f"/api/v1/projects/{project['id']}"}


def toy_reviews(per_class: int, seed: int = 0) -> str:
    """A CSV of ``per_class`` short reviews a class: two cue words of the class among filler
    characters."""
    generator = random.Random(seed)
    rows = ["text,label"]
    for words, label in ((POSITIVE, CLASSES[0]), (NEGATIVE, CLASSES[1])):
        for _ in range(per_class):
            text = [generator.choice(FILLER) for _ in range(generator.randint(4, 12))]
            for word in generator.sample(words, 2):
                text.insert(generator.randint(0, len(text)), word)
            rows.append(f"{''.join(text)},{label}")
    return "\n".join(rows) + "\n"


@pytest.fixture(scope="module")
def text_job(account: dict[str, Any], tmp_path_factory: pytest.TempPathFactory
             ) -> dict[str, Any]:
    """A toy text dataset imported and frozen through the API and its training job started (not
    waited for: it trains while the first test uses the console)."""
    api, p = account["api"], account["p"]
    dataset = api.post(f"{p}/datasets/", {"name": "toy reviews",
                                          "task_type": "text_classification",
                                          "labels": CLASSES})
    path = tmp_path_factory.mktemp("toy") / "toy.csv"
    path.write_text(toy_reviews(PER_CLASS), encoding="utf-8")
    job = api.upload(f"{p}/datasets/{dataset['id']}/imports/", [path])
    done = api.wait_job(f"{p}/imports/{job['id']}/", timeout_s=120)
    assert done["status"] == "SUCCEEDED", done
    assert done["report"]["imported"] == 2 * PER_CLASS, done["report"]
    version = api.post(f"{p}/datasets/{dataset['id']}/versions/",
                       {"val_fraction": 0.2, "test_fraction": 0.2})
    assert version["labels"] == CLASSES, version
    training = api.post(f"{p}/training-jobs/", {"dataset_version_id": version["id"],
                                               "budget_s": BUDGET_S})
    return {"dataset": dataset, "version": version, "job": training}


# ------------------------------------------------------------------------------------ helpers
def sign_in(page: Page) -> None:
    page.goto("/")
    page.get_by_label("Username").fill(USERNAME)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    expect(page).to_have_url(re.compile(r"/projects$"))


def write_csv(path: Path) -> Path:
    body = "\n".join([CSV_HEADER, *(row for _, row in CSV_ROWS)]) + "\n"
    path.write_bytes(b"\xef\xbb\xbf" + body.encode("utf-8"))  # UTF-8 with a byte-order mark
    return path


def stored_labels(account: dict[str, Any], dataset_id: str) -> dict[str, str | None]:
    """Text -> the class label the API stores for it."""
    samples = account["api"].get(f"{account['p']}/datasets/{dataset_id}/samples/",
                                 params={"page_size": 100})["results"]
    return {s["text"]: next((a["class_label"] for a in s["annotations"] if a["kind"] == "class"),
                            None) for s in samples}


def text_of(line: int) -> str:
    """The text of the CSV row on ``line`` as stored (its label cell cut off)."""
    row = dict(CSV_ROWS)[line]
    return row.rsplit(",", 1)[0]


@contextlib.contextmanager
def failure_screenshot(page: Page, screenshots: Any, name: str) -> Iterator[None]:
    """What the page showed when a step failed, for the reviewer."""
    try:
        yield
    except BaseException:
        screenshots.take(page, f"FAILED-{name}")
        raise


def fixed(x: float, digits: int) -> str:
    """``x.toFixed(digits)`` as the console writes it: the float's exact value rounded half up
    (Python's format rounds half to even: 0.0625 -> "0.062", JavaScript's "0.063")."""
    return str(Decimal(x).quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP))


def text_row(page: Page, text: str) -> Locator:
    return page.get_by_test_id("text-list").locator("tr[data-row-key]").filter(
        has=page.get_by_test_id("text-content").get_by_text(text, exact=True))


# -------------------------------------------------------------------------------------- tests
def test_import_search_and_label_texts_in_the_console(
        page: Page, account: dict[str, Any], text_job: dict[str, Any], screenshots: Any,
        tmp_path: Path) -> None:
    """``text_job`` is asked for only to start the toy model's training before this test: it
    trains while the person imports and labels here."""
    expect.set_options(timeout=15_000)
    sign_in(page)
    page.goto(f"/projects/{account['project']['id']}/datasets")
    with failure_screenshot(page, screenshots, "create-dataset"):
        dataset_id = create_dataset(page, "评论 reviews", screenshots)
    with failure_screenshot(page, screenshots, "upload"):
        upload_and_read_the_report(page, write_csv(tmp_path / "reviews.csv"), screenshots)
    stored = stored_labels(account, dataset_id)
    assert len(stored) == IMPORTED, stored
    assert stored[MULTILINE] == "正面"  # the quoted comma and line break kept in the text
    assert stored[text_of(5)] == "负面" and stored[text_of(9)] is None
    with failure_screenshot(page, screenshots, "text-list"):
        search_and_label(page, account, dataset_id, screenshots)


def create_dataset(page: Page, name: str, screenshots: Any) -> str:
    page.get_by_role("button", name="New dataset").click()
    dialog = page.get_by_role("dialog", name="Create a dataset")
    dialog.get_by_label("Name").fill(name)
    choose_option(page, dialog.get_by_role("combobox", name="Task"), "Text classification")
    classes = dialog.get_by_role("combobox", name="Classes")
    for label in CLASSES:
        classes.fill(label)
        classes.press("Enter")
    tags = dialog.locator(".ant-select").filter(
        has=page.get_by_role("combobox", name="Classes")).locator(".ant-select-selection-item")
    expect(tags).to_have_text(CLASSES)
    screenshots.take(page, "create-dataset")
    dialog.get_by_role("button", name="Create").click()
    expect(page.get_by_text(f"Dataset “{name}” created")).to_be_visible()
    expect(page).to_have_url(re.compile(r"/datasets/[^/?]+\?tab=upload$"))
    expect(page.get_by_role("heading", name=name)).to_be_visible()
    for label in CLASSES:
        expect(page.locator(".ant-tag", has_text=re.compile(rf"^{label}$"))).to_be_visible()
    expect(page.get_by_test_id("text-formats")).to_contain_text("Files for text classification")
    match = re.search(r"/datasets/([0-9a-f-]+)", page.url)
    assert match is not None, page.url
    return match[1]


def upload_and_read_the_report(page: Page, csv_path: Path, screenshots: Any) -> None:
    page.locator("input[type=file]").set_input_files(str(csv_path))
    expect(page.get_by_test_id("pending-files")).to_have_text(re.compile(r"^1 file ready \(.+\)$"))
    # the browser's preview of the file: read as UTF-8 with its BOM, a header, three columns (a
    # row has one too many), the columns guessed from the header's names (the column titles are
    # in the head: antd repeats them in a hidden measuring row of the body)
    preview = page.get_by_test_id("text-preview")
    expect(preview).to_contain_text("reviews.csv: the first")
    expect(preview.get_by_test_id("preview-encoding")).to_have_text("Read as UTF-8 (BOM)")
    expect(preview).to_contain_text("the first row is a header")
    expect(preview.get_by_title(MULTILINE)).to_be_visible()  # one record, comma and all
    expect(preview.locator("thead").get_by_test_id("preview-column-3")).to_have_text("Column 3")
    # the person chooses the columns: the text in 评论, no labels, then the labels in 情感
    choose_option(page, preview.get_by_role("combobox", name="Text column"), "1 · 评论")
    label_column = preview.get_by_role("combobox", name="Label column")
    choose_option(page, label_column, "No labels")
    expect(preview.locator("thead").get_by_test_id("preview-column-2")).to_have_text("情感")
    choose_option(page, label_column, "2 · 情感")
    expect(preview.locator("thead").get_by_test_id("preview-column-1")).to_have_text("评论text")
    expect(preview.locator("thead").get_by_test_id("preview-column-2")).to_have_text("情感label")
    preview.scroll_into_view_if_needed()
    screenshots.take(page, "upload-preview")

    page.get_by_role("button", name="Upload", exact=True).click()
    job = page.get_by_test_id("import-job").first
    expect(job).to_contain_text("Done", timeout=60_000)

    def stat(title: str) -> Locator:
        return job.locator(".ant-statistic").filter(
            has=page.locator(".ant-statistic-title", has_text=re.compile(rf"^{title}$"))
        ).locator(".ant-statistic-content")

    expect(stat("Imported")).to_have_text(str(IMPORTED))
    expect(stat("Rejected")).to_have_text("2")
    for title in ("Duplicates", "Ignored"):
        expect(stat(title)).to_have_text("0")
    expect(stat("Duplicate texts")).to_have_count(0)  # the count is shown once: "Duplicates"
    # the bad rows by file and line, with the server's reasons (the list opens by itself)
    rejected = job.locator(".ant-collapse-item").filter(has_text="Rejected (2)")
    expect(rejected.get_by_role("row").filter(has_text="reviews.csv:6")).to_contain_text(
        "line 6 has 3 columns, the header has 2: row skipped")
    expect(rejected.get_by_role("row").filter(has_text="reviews.csv:7")).to_contain_text(
        "line 7: the text is empty: row skipped")
    # the encoding, and the table as the server read it
    expect(job.get_by_test_id("text-encodings")).to_contain_text("UTF-8 (BOM): 1 file")
    table = job.get_by_test_id("text-tables").get_by_role("row").filter(has_text="reviews.csv")
    for cell in ("UTF-8 (BOM)", "评论 | 情感", "1 · 评论", "2 · 情感"):
        expect(table).to_contain_text(cell)
    expect(table.get_by_role("cell")).to_have_text(
        ["reviews.csv", "UTF-8 (BOM)", ",", "评论 | 情感", "1 · 评论", "2 · 情感", str(IMPORTED),
         "2"])
    expect(page.get_by_text(f"{IMPORTED} samples", exact=True)).to_be_visible()
    job.scroll_into_view_if_needed()
    screenshots.take(page, "import-report")


def search_and_label(page: Page, account: dict[str, Any], dataset_id: str,
                     screenshots: Any) -> None:
    page.get_by_role("tab", name="Samples").click()
    texts = page.get_by_test_id("text-list")
    expect(texts.get_by_text(f"{IMPORTED} texts", exact=True)).to_be_visible()
    expect(texts.locator("tr[data-row-key]")).to_have_count(IMPORTED)
    # the multi-line text shows whole, line break and emoji included
    expect(text_row(page, MULTILINE)).to_have_count(1)

    # search: a word of one text finds it; a rejected row's text was never imported
    search = page.get_by_role("textbox", name="Search texts and file names")
    search.fill("battery")
    expect(texts.locator("tr[data-row-key]")).to_have_count(1)
    expect(texts.get_by_test_id("text-content")).to_have_text(text_of(8))
    expect(texts.get_by_text("1 text", exact=True)).to_be_visible()
    screenshots.take(page, "text-search")
    search.fill("退货")
    expect(texts.get_by_text("No samples match.")).to_be_visible()
    search.fill("")
    expect(texts.locator("tr[data-row-key]")).to_have_count(IMPORTED)

    # a class's key labels the current text (a click makes a row current) and moves on
    classes = page.get_by_role("group", name="Label the current text")
    negative_key = classes.get_by_role("button").filter(has_text="负面").locator("kbd")
    expect(negative_key).to_have_text(re.compile(r"^[0-9A-Z]$"))
    key = negative_key.inner_text().lower()
    rude, so_so, works = (text_row(page, text_of(line)) for line in (10, 9, 11))
    rude.get_by_test_id("text-name").click()
    expect(rude).to_have_attribute("aria-current", "true")
    page.keyboard.press(key)
    expect(rude.get_by_test_id("text-label")).to_have_text("负面")
    expect(works).to_have_attribute("aria-current", "true")  # the next unlabeled text

    def label_of(line: int) -> str | None:
        return stored_labels(account, dataset_id)[text_of(line)]

    wait_until(lambda: label_of(10) == "负面", timeout_s=10, what="the key's label stored")
    screenshots.take(page, "text-labeled-by-key")
    # Ctrl+Z takes it back on the server and shows the text; Ctrl+Shift+Z labels it again
    page.keyboard.press("Control+z")
    expect(rude.get_by_test_id("text-label")).to_have_text("unlabeled")
    expect(rude).to_have_attribute("aria-current", "true")
    wait_until(lambda: label_of(10) is None, timeout_s=10, what="the label undone on the server")
    page.keyboard.press("Control+Shift+z")
    expect(rude.get_by_test_id("text-label")).to_have_text("负面")
    wait_until(lambda: label_of(10) == "负面", timeout_s=10, what="the label redone on the server")

    # tick the two texts left unlabeled and label them at once
    for row in (so_so, works):
        row.get_by_role("checkbox").check()
    selection = page.get_by_test_id("text-selection")
    expect(selection).to_contain_text("2 selected")
    selection.get_by_role("button", name="Label selected as…").hover()
    page.get_by_role("menuitem", name="正面", exact=True).click()
    expect(page.locator(".ant-message").get_by_text("2 texts labeled “正面”")).to_be_visible()
    for row in (so_so, works):
        expect(row.get_by_test_id("text-label")).to_have_text("正面")
    expect(selection).to_have_count(0)
    wait_until(lambda: label_of(9) == label_of(11) == "正面", timeout_s=10,
               what="the bulk labels stored")
    screenshots.take(page, "text-bulk-labeled")
    choose_option(page, page.get_by_role("combobox", name="Show"), "Unlabeled")
    expect(texts.get_by_text("No samples match.")).to_be_visible()
    assert None not in stored_labels(account, dataset_id).values()


def test_a_text_model_trained_through_the_api_in_the_console(
        page: Page, stack: Stack, account: dict[str, Any], text_job: dict[str, Any],
        screenshots: Any) -> None:
    expect.set_options(timeout=15_000)
    api = account["api"]
    url = f"{account['p']}/training-jobs/{text_job['job']['id']}/"
    try:
        job = api.wait_job(url, timeout_s=240)
    except TimeoutError as error:
        raise AssertionError(f"{error}\n{stack.log_tail('worker', 60)}") from None
    assert job["status"] == "SUCCEEDED", (job.get("error"), stack.log_tail("worker", 60))
    assert job["recipe"]["family"] in job["recipe"]["candidates"], job["recipe"]
    evaluation = api.get(url + "report/")
    assert evaluation["labels"] == CLASSES and evaluation["split"] == "test", evaluation

    sign_in(page)
    with failure_screenshot(page, screenshots, "job"):
        job_page(page, account, job, screenshots)
    with failure_screenshot(page, screenshots, "report"):
        report_page(page, account, text_job, job, evaluation, screenshots)
    with failure_screenshot(page, screenshots, "try-it"):
        try_it(page, account, job, screenshots)


def job_page(page: Page, account: dict[str, Any], job: dict[str, Any], screenshots: Any) -> None:
    """Every family the engine tried, the winner marked."""
    candidates, winner = job["recipe"]["candidates"], job["recipe"]["family"]
    page.goto(f"/projects/{account['project']['id']}/training/{job['id']}")
    expect(page.get_by_role("heading", name=f"Training {job['model_name']}")).to_be_visible()
    card = page.get_by_test_id("text-candidates")
    expect(card).to_contain_text("Candidates on validation")
    rows = card.locator("tbody tr.ant-table-row")
    expect(rows).to_have_count(len(candidates))
    for family in candidates:
        expect(rows.filter(has_text=FAMILY_NAMES.get(family, family))).to_have_count(1)
    chosen = rows.filter(has=page.get_by_test_id("candidate-winner"))
    expect(chosen).to_have_count(1)
    expect(chosen.get_by_test_id("candidate-family")).to_contain_text(
        FAMILY_NAMES.get(winner, winner))
    expect(chosen.get_by_test_id("candidate-winner")).to_have_text("chosen")
    expect(chosen).to_contain_text(re.compile(r"\d+\.\d%"))  # its validation accuracy
    # the one line that says which model won; no image architecture on a text job
    expect(page.get_by_test_id("text-family")).to_contain_text("Won on validation")
    expect(page.get_by_text("Architecture", exact=True)).to_have_count(0)
    card.scroll_into_view_if_needed()
    screenshots.take(page, "job-candidates")


def report_page(page: Page, account: dict[str, Any], text_job: dict[str, Any],
                job: dict[str, Any], evaluation: dict[str, Any], screenshots: Any) -> None:
    """The per-class table, the confusion matrix, a cell's texts."""
    labels, report = evaluation["labels"], evaluation["report"]
    page.get_by_test_id("report-link").click()
    expect(page.get_by_role("heading", name=f"Evaluation of {job['model_name']}")).to_be_visible()
    expect(page.get_by_test_id("report-split")).to_contain_text(
        f"Computed on the test split: {report['n']} texts never used to choose the model.")
    expect(statistic(page, "Accuracy")).to_have_text(re.compile(r"^\d+\.\d%$"))
    per_class = page.get_by_test_id("per-class")
    for row in report["per_class"]:
        line = per_class.get_by_role("row").filter(has_text=row["label"])
        expect(line.get_by_role("cell")).to_have_text(
            [row["label"], *(fixed(row[k], 3) for k in ("precision", "recall", "f1")),
             str(row["support"])])
    matrix = page.get_by_role("img", name="Confusion matrix")
    expect(matrix.locator("canvas").first).to_be_visible()
    wait_for_chart(matrix)
    cells = page.get_by_test_id("cell-samples")
    expect(cells).to_contain_text("Click a cell of the matrix to list its samples here.")
    # aim at the diagonal cell of 正面 from the chart's grid (ReportPage: grid left 72, right 24,
    # top 16, bottom 96; two classes), checked by its tooltip
    matrix.scroll_into_view_if_needed()
    box = matrix.locator("canvas").first.bounding_box()
    assert box is not None
    k, left, right, top, bottom = len(labels), 72, 24, 16, 96
    x = box["x"] + left + 0.5 * (box["width"] - left - right) / k
    y = box["y"] + top + 0.5 * (box["height"] - top - bottom) / k
    correct = report["confusion_matrix"][0][0]
    assert correct > 0, report["confusion_matrix"]
    page.mouse.move(x, y)
    expect(matrix).to_contain_text(f"True 正面, predicted 正面: {correct}")
    page.mouse.click(x, y)
    expect(cells).to_contain_text(f"True 正面, predicted 正面: {correct} sample")
    listed = cells.get_by_test_id("report-text")
    expect(listed).to_have_count(min(correct, 20))  # 20 a page
    expect(listed.get_by_test_id("text-predicted").first).to_have_text(
        re.compile(r"^predicted 正面"))
    # the texts listed are the toy dataset's texts of 正面
    toy = stored_labels(account, text_job["dataset"]["id"])
    first = listed.first.get_by_test_id("text-content")
    expect(first).not_to_be_empty()
    assert toy[first.inner_text()] == "正面", first.inner_text()
    cells.scroll_into_view_if_needed()
    screenshots.take(page, "report")
    page.get_by_role("link", name=job["model_name"], exact=True).click()  # the breadcrumb: the job
    expect(page.get_by_role("heading", name=f"Training {job['model_name']}")).to_be_visible()


def try_it(page: Page, account: dict[str, Any], job: dict[str, Any], screenshots: Any) -> None:
    """The model version's "Try it" classifies a typed text: a bar a class, best first."""
    page.get_by_test_id("model-link").click()
    expect(page).to_have_url(re.compile(r"/models/versions/[^/]+$"))
    expect(page.get_by_role("heading", name=f"Model {job['model_name']} v1")).to_be_visible()
    card = page.locator(".ant-card").filter(has=page.get_by_text("Try it", exact=True))
    field = card.get_by_role("textbox", name="Text to classify")
    for text, expected, how in (("非常满意 love it 好 👍", "正面", "click"),
                                ("太差了 awful 讨厌 👎", "负面", "ctrl+enter")):
        field.fill(text)
        if how == "click":
            card.get_by_role("button", name="Predict").click()
        else:
            field.press("Control+Enter")
        bars = card.get_by_test_id("prediction")
        expect(bars).to_have_count(len(CLASSES))  # top 5 of two classes
        expect(bars.first).to_contain_text(expected)
        expect(card.get_by_test_id("predict-latency")).to_contain_text(re.compile(r"\d+\.\d ms"))
        shown = [bars.nth(i).inner_text().split("\n") for i in range(len(CLASSES))]
        assert {row[0] for row in shown} == set(CLASSES), shown
        percents = [float(row[-1].rstrip("%")) for row in shown]
        assert percents == sorted(percents, reverse=True) and abs(sum(percents) - 100) <= 0.2
        # the bars say what the model answers through the API
        answer = account["api"].post(
            f"{account['p']}/model-versions/{job['model_version_id']}/predict/",
            files={"text": (None, text)})
        assert [(r["label"], fixed(100 * r["score"], 1)) for r in answer["predictions"]] == [
            (row[0], row[-1].rstrip("%")) for row in shown]
        screenshots.take(page, "try-it-" + ("positive" if expected == CLASSES[0] else "negative"))
