"""Whole-system fixtures: a real Redis server, web server, Celery worker, beat and edge agent."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sampan.devstack.client import Client
from sampan.devstack.stack import Stack


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    data_dir: Path = tmp_path_factory.mktemp("stack")
    # short timeouts so that "worker lost" is detected well inside the 60 s the issue allows
    with Stack(data_dir=data_dir, extra_env={"SAMPAN_JOB_HEARTBEAT_TIMEOUT_S": "20",
                                             "SAMPAN_DEVICE_HEARTBEAT_INTERVAL_S": "1"}) as s:
        s.start()
        yield s


@pytest.fixture(scope="module")
def client(stack: Stack) -> Client:
    user = json.loads(stack.manage("sampan_user", "--username", "e2e", "--password", "e2e"
                                   ).stdout.strip().splitlines()[-1])
    return Client(stack.url, user["token"])


def pytest_collection_modifyitems(items: list[Any]) -> None:
    for item in items:
        if "tests/e2e" in str(item.fspath):
            item.add_marker(pytest.mark.integration)


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
