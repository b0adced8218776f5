"""Accounts in the browser console (issue 12), in the real Chromium against the real platform
(Redis and uvicorn serving the built console; no worker: nothing here runs a job).

A staff member signs in, creates a user from the members page (the one-time password shown once)
and adds it to the project in the same step, invites another by e-mail address, reads the
project's audit log (filtered by action), then creates a personal API token on the API tokens
page, uses it from outside the browser, and revokes it (refused from then on). Screenshots of the
members page, the create-user dialog, the audit log and the tokens page go where
``test_console_browser.py``'s do.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
import requests
from playwright.sync_api import Page, expect

from sampan.devstack.client import Client
from sampan.devstack.stack import Stack
from tests.database import stack_database_url

STAFF, PASSWORD = "staff-e2e", "accounts-walkthrough-7"


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    with Stack(data_dir=tmp_path_factory.mktemp("stack"),
               database_url=stack_database_url()) as s:
        s.start(worker=False)
        yield s


@pytest.fixture(scope="module")
def project(stack: Stack) -> dict[str, Any]:
    """A project of the staff user, and a user with an e-mail address to invite by it."""
    staff = json.loads(stack.manage("sampan_user", "--username", STAFF, "--password", PASSWORD,
                                    "--superuser").stdout.strip().splitlines()[-1])
    client = Client(stack.url, staff["token"])
    made = client.post("/api/v1/users/", {"username": "hana", "email": "hana@example.org",
                                          "password": "plum orchard 1987"})
    assert made["generated_password"] is None
    return {"client": client, **client.post("/api/v1/projects/", {"name": "Accounts demo"})}




def test_staff_create_users_owners_read_the_audit_log_people_manage_tokens(
        page: Page, stack: Stack, project: dict[str, Any], screenshots: Any) -> None:
    expect.set_options(timeout=15_000)

    def step(name: str, fn: Any, *args: Any) -> Any:
        try:
            return fn(*args)
        except BaseException:
            screenshots.take(page, f"FAILED-{name}")
            raise

    step("sign_in", sign_in, page)
    step("members", members, page, project, screenshots)
    step("audit", audit_log, page, project, screenshots)
    step("tokens", tokens, page, stack, screenshots)


def sign_in(page: Page) -> None:
    page.goto("/login")
    page.get_by_label("Username").fill(STAFF)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    expect(page).to_have_url(re.compile(r"/projects$"))


def members(page: Page, project: dict[str, Any], screenshots: Any) -> None:
    page.goto(f"/projects/{project['id']}/members")
    expect(page.get_by_role("heading", name="Members")).to_be_visible()

    page.get_by_role("button", name="Create user").click()
    dialog = page.get_by_role("dialog")
    dialog.get_by_label("Username").fill("carol")
    screenshots.take(page, "create-user")
    dialog.get_by_role("button", name="Create user").click()
    expect(dialog.get_by_text("User carol created")).to_be_visible()
    password = dialog.get_by_test_id("generated-password").inner_text().strip()
    assert len(password) == 16
    dialog.get_by_role("button", name="Close").last.click()
    expect(page.get_by_role("row").filter(has_text="carol")).to_contain_text("Editor")
    # the one-time password signs carol in
    carol = requests.Session()
    carol.get(page.url.split("/projects")[0] + "/api/v1/auth/csrf/", timeout=10)
    signed_in = carol.post(page.url.split("/projects")[0] + "/api/v1/auth/login/",
                           json={"username": "carol", "password": password},
                           headers={"Origin": page.url.split("/projects")[0]}, timeout=10)
    assert signed_in.status_code == 200, signed_in.text

    page.get_by_label("Invite by").click()
    page.get_by_title("E-mail", exact=True).click()
    page.get_by_label("E-mail address").fill("HANA@example.org")
    page.get_by_role("button", name="Invite").click()
    expect(page.get_by_role("row").filter(has_text="hana")).to_contain_text("Editor")

    # the form is back to "by username" after an invite
    page.get_by_label("Username").fill("nobody")
    page.get_by_role("button", name="Invite").click()
    expect(page.get_by_text("no user named 'nobody'")).to_be_visible()
    screenshots.take(page, "members-accounts")

    # in 简体中文 the server's own message comes back in Chinese (the console's Accept-Language)
    page.evaluate("localStorage.setItem('sampan.language', 'zh-CN')")
    page.reload()
    page.get_by_label("用户名", exact=True).fill("nobody")
    page.get_by_role("button", name=re.compile("邀请$")).click()
    expect(page.get_by_text("没有名为 'nobody' 的用户")).to_be_visible()
    screenshots.take(page, "members-error-zh-CN")
    page.evaluate("localStorage.setItem('sampan.language', 'en')")
    page.reload()
    expect(page.get_by_role("heading", name="Members")).to_be_visible()


def audit_log(page: Page, project: dict[str, Any], screenshots: Any) -> None:
    page.get_by_role("menuitem", name="Audit log").click()
    expect(page).to_have_url(re.compile(r"/audit$"))
    log = page.get_by_test_id("audit-log")
    expect(log.get_by_role("row").filter(has_text="Project created")).to_contain_text(STAFF)
    expect(log.get_by_role("row").filter(has_text="username: hana")).to_contain_text(
        "Member added or role changed")
    page.get_by_label("Filter by action").click()
    page.get_by_title("Project created").click()
    expect(log.get_by_role("row")).to_have_count(2)  # the header and the one event
    screenshots.take(page, "audit")


def tokens(page: Page, stack: Stack, screenshots: Any) -> None:
    page.get_by_role("button", name="User menu").hover()
    page.get_by_text("API tokens").click()
    expect(page).to_have_url(re.compile(r"/tokens$"))
    page.get_by_label("Token name").fill("notebook")
    page.get_by_role("button", name="Create token").click()
    secret = page.get_by_test_id("token-secret").inner_text().strip()
    assert secret.startswith("spn_")
    screenshots.take(page, "token-created")
    page.get_by_role("dialog").get_by_role("button", name="Close").last.click()
    row = page.get_by_test_id("tokens").get_by_role("row").filter(has_text="notebook")
    expect(row).to_contain_text("Never used")

    me = requests.get(stack.url + "/api/v1/auth/me/", timeout=10,
                      headers={"Authorization": f"Bearer {secret}"})
    assert me.json()["username"] == STAFF
    page.reload()
    expect(row).not_to_contain_text("Never used")  # the last use is shown
    screenshots.take(page, "tokens")

    row.get_by_role("button", name="Revoke").click()
    page.locator(".ant-popover").get_by_role("button", name="Revoke").click()
    expect(row).to_have_count(0)
    refused = requests.get(stack.url + "/api/v1/auth/me/", timeout=10,
                           headers={"Authorization": f"Bearer {secret}"})
    assert refused.status_code == 401
