"""Shared fixtures: an isolated data folder per test session, users, projects and API clients."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

# pytest-django imports the settings before this file runs, so these reach only the processes
# that tests start (workers, agents); this process gets its settings from ``_media_root``.
_DATA = Path(tempfile.mkdtemp(prefix="sampan-test-"))
os.environ.setdefault("SAMPAN_DATA_DIR", str(_DATA))
os.environ.setdefault("SAMPAN_CHANNEL_LAYER", "memory")
# training on the CPU on a GPU host too: the tests' figures and exact replays are the CPU's
# (the GPU path is `python -m workers.check_cuda`, docs/deploy.md)
os.environ["SAMPAN_TRAINING_DEVICE"] = "cpu"  # also where a GPU worker's environment sets cuda


@pytest.fixture(autouse=True)
def _media_root(settings: Any, tmp_path: Path) -> Iterator[Path]:
    """Each test writes samples, packages and keys under its own tmp folder."""
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.DATA_DIR = tmp_path / "data"
    settings.SAMPAN_SIGNING_KEY_FILE = tmp_path / "keys" / "manifest_ed25519.pem"
    # PBKDF2's 10^6 rounds cost ~0.5 s a user; tests need a real hash, not a slow one
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    # job progress goes to an in-process layer, never to a Redis that may or may not be running
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    settings.DATA_DIR.mkdir()
    # counts kept in the cache (failed sign-ins, enrollment throttling) start at zero per test
    from django.core.cache import cache

    cache.clear()
    yield tmp_path
    # a request with Accept-Language leaves its language active in this thread (Django's
    # LocaleMiddleware activates and never deactivates); the next test starts in English
    from django.utils import translation

    translation.deactivate()


@pytest.fixture
def make_user(db: Any) -> Any:
    from sampan.accounts.services import user_create

    counter = {"n": 0}

    def make(username: str | None = None) -> Any:
        counter["n"] += 1
        return user_create(username=username or f"user{counter['n']}", password="pw")

    return make


@pytest.fixture
def api(db: Any) -> Any:
    """``api(user)`` -> a DRF APIClient authenticated as ``user``."""
    from rest_framework.test import APIClient

    def make(user: Any = None) -> APIClient:
        client = APIClient()
        if user is not None:
            client.force_authenticate(user=user)
        return client

    return make


@pytest.fixture
def project_with_roles(make_user: Any) -> dict[str, Any]:
    """A project with an owner, an editor and a viewer, and an outsider with its own project."""
    from sampan.accounts.services import membership_set, project_create

    owner, editor, viewer, outsider = (make_user(n) for n in ("owner", "editor", "viewer",
                                                               "outsider"))
    project = project_create(user=owner, name="Project A")
    membership_set(project=project, username="editor", role="editor")
    membership_set(project=project, username="viewer", role="viewer")
    other = project_create(user=outsider, name="Project B")
    return {"project": project, "other": other, "owner": owner, "editor": editor,
            "viewer": viewer, "outsider": outsider}


@pytest.fixture(scope="session")
def s3_server() -> Any:
    """The endpoint URL of a moto S3 server process shared by the session (tests/fixtures/s3.py)."""
    from tests.fixtures.s3 import moto_server

    with moto_server() as endpoint:
        yield endpoint


@pytest.fixture
def s3(s3_server: str, settings: Any) -> Any:
    """This process switched to ``SAMPAN_STORAGE=s3`` on a fresh bucket; yields its ``S3``
    (``env()`` gives the same settings to processes a test starts)."""
    from tests.fixtures.s3 import S3

    bucket = S3.start(s3_server)
    bucket.apply(settings)
    yield bucket
