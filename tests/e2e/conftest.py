"""Whole-system fixtures: a real Redis server, web server, Celery worker, beat and edge agent."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sampan.devstack.client import Client
from sampan.devstack.stack import REPO_DIR, Stack
from tests.database import stack_database_url


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    data_dir: Path = tmp_path_factory.mktemp("stack")
    # short timeouts so that "worker lost" is detected well inside the 60 s the issue allows
    with Stack(data_dir=data_dir, database_url=stack_database_url(),
               extra_env={"SAMPAN_JOB_HEARTBEAT_TIMEOUT_S": "20",
                          "SAMPAN_DEVICE_HEARTBEAT_INTERVAL_S": "1"}) as s:
        s.start()
        yield s


@pytest.fixture(scope="module")
def client(stack: Stack) -> Client:
    user = json.loads(stack.manage("sampan_user", "--username", "e2e", "--password",
                                   "e2e-password").stdout.strip().splitlines()[-1])
    return Client(stack.url, user["token"])


def pytest_collection_modifyitems(items: list[Any]) -> None:
    for item in items:
        if "tests/e2e" in str(item.fspath):
            item.add_marker(pytest.mark.integration)


class JobSocket:
    """A websocket client on ``/ws/jobs/<kind>/<id>/`` as a signed-in browser opens it (session
    cookie, same Origin), collecting every event on a thread. ``events`` excludes the state sent
    on connect (``{status, progress, error}``); ``snapshot`` holds it."""

    def __init__(self, stack: Stack, username: str, password: str, kind: str, job_id: str) -> None:
        import contextlib
        import threading

        import requests
        from websockets.sync.client import connect

        session = requests.Session()
        session.post(stack.url + "/api/v1/auth/login/",
                     json={"username": username, "password": password}).raise_for_status()
        cookie = "; ".join(f"{k}={v}" for k, v in session.cookies.get_dict().items())
        self._exit = contextlib.ExitStack()
        self.socket = self._exit.enter_context(connect(
            stack.url.replace("http", "ws", 1) + f"/ws/jobs/{kind}/{job_id}/",
            additional_headers={"Cookie": cookie, "Origin": stack.url}, open_timeout=10))
        self.snapshot: dict[str, Any] = json.loads(self.socket.recv(timeout=10))
        self.events: list[dict[str, Any]] = []
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        from websockets.exceptions import ConnectionClosed

        try:
            for message in self.socket:
                self.events.append(json.loads(message))
        except ConnectionClosed:
            pass

    def close(self) -> None:
        self._exit.close()
        self.thread.join(timeout=10)


def frozen_digits_version(client: Client, name: str, tmp_path: Path) -> tuple[str, dict[str, Any]]:
    """A new project with the seed digits imported and frozen: (project API prefix, version)."""
    from sampan.devstack.mainjob import SEEDS_DIR, zip_folder

    project = client.post("/api/v1/projects/", {"name": name})
    p = f"/api/v1/projects/{project['id']}"
    dataset = client.post(p + "/datasets/", {"name": "digits"})
    job = client.upload(f"{p}/datasets/{dataset['id']}/imports/",
                        [zip_folder(SEEDS_DIR / "mnist" / "train", tmp_path / "d.zip")])
    assert client.wait_job(f"{p}/imports/{job['id']}/", timeout_s=300)["status"] == "SUCCEEDED"
    return p, client.post(f"{p}/datasets/{dataset['id']}/versions/", {})


# ---------------------------------------------------------------------------------------------
# The browser: the real Chromium from the system (Debian's `chromium` package), driven by
# Playwright. `playwright install` cannot download browsers here, so Playwright is pointed at the
# system binary. A missing Chromium FAILS the browser tests (it is not a reason to skip them):
# `.ci/run` installs it; by hand, `apt-get install -y chromium fonts-noto-cjk`.
CHROMIUM = os.environ.get("SAMPAN_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    """A headless Chromium (Playwright ``Browser``), one per test module."""
    if not (os.path.isfile(CHROMIUM) and os.access(CHROMIUM, os.X_OK)):
        pytest.fail(f"Chromium is missing: no executable at {CHROMIUM}. The browser tests need the "
                    "real Chromium: run `apt-get install -y chromium fonts-noto-cjk` (what .ci/run "
                    "does), or set SAMPAN_CHROMIUM to a Chromium binary.", pytrace=False)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True,
                                             args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture(scope="session")
def frontend_dist() -> Path:
    """The built console that the web process serves at "/" (``make frontend``; ``make test``
    builds it before the Python tests)."""
    dist = Path(os.environ.get("SAMPAN_CONSOLE_DIR") or REPO_DIR / "frontend" / "dist")
    if not (dist / "index.html").is_file():
        pytest.fail(f"the console is not built: {dist / 'index.html'} is missing. Run "
                    "`make frontend` (`make test` does it first).", pytrace=False)
    return dist


VIEWPORT = {"width": 1280, "height": 720}


@pytest.fixture
def page(chromium: Any, frontend_dist: Path, stack: Stack) -> Iterator[Any]:
    """A page of a fresh English browser context (the console picks zh-CN for a Chinese one) on
    the module's ``stack``; the test fails on any uncaught error in the page."""
    context = chromium.new_context(viewport=VIEWPORT, locale="en-US", base_url=stack.url)
    context.set_default_timeout(15_000)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    yield page
    context.close()
    assert not errors, f"uncaught errors in the page: {errors}"


class Screenshots:
    """Screenshots for a reviewer: written to ``<stack data dir>/var/screenshots/`` and
    copied to ``$SAMPAN_SCREENSHOT_DIR`` (default ``test-artifacts/screenshots/`` in the repo,
    ignored by git). Names are ``<prefix>-NN-<name>.png`` in the order taken."""

    def __init__(self, stack_dir: Path, artifact_dir: Path, prefix: str) -> None:
        self.stack_dir, self.artifact_dir, self.prefix = stack_dir, artifact_dir, prefix
        self.stack_dir.mkdir(parents=True, exist_ok=True)
        self.artifact_dir.mkdir(parents=True, exist_ok=True)
        self.taken: list[Path] = []

    def take(self, page: Any, name: str, *, full_page: bool = False) -> Path:
        """What the person sees: the viewport (1280x720), or the whole page."""
        filename = f"{self.prefix}-{len(self.taken) + 1:02d}-{name}.png"
        path = self.stack_dir / filename
        # finite CSS animations and transitions (antd fades) are fast-forwarded to their end
        page.screenshot(path=str(path), full_page=full_page, animations="disabled")
        shutil.copyfile(path, self.artifact_dir / filename)
        self.taken.append(self.artifact_dir / filename)
        return path


@pytest.fixture(scope="module")
def screenshots(stack: Stack, request: pytest.FixtureRequest) -> Screenshots:
    prefix = Path(str(request.path)).stem.removeprefix("test_")
    artifact_dir = Path(os.environ.get("SAMPAN_SCREENSHOT_DIR")
                        or REPO_DIR / "test-artifacts" / "screenshots")
    return Screenshots(stack.data_dir / "var" / "screenshots", artifact_dir, prefix)
