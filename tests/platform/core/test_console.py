"""The browser console is served by Django: index.html for its routes, WhiteNoise for /assets/."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.test import Client

INDEX = b"<!doctype html><html><body><div id='root'></div>console-build-marker</body></html>"


@pytest.fixture
def built_console(settings: Any, tmp_path: Path) -> Path:
    """A stand-in for ``frontend/dist``: index.html and one hashed asset."""
    dist = tmp_path / "dist"
    (dist / "assets").mkdir(parents=True)
    (dist / "index.html").write_bytes(INDEX)
    (dist / "assets" / "index-AbC_12-z.js").write_text("console.log('sampan')")
    settings.SAMPAN_CONSOLE_DIR = dist
    # WhiteNoise reads its settings when the middleware is built: each test Client builds its own
    settings.WHITENOISE_ROOT = dist
    return dist


@pytest.mark.parametrize("path", ["/", "/login", "/projects/3f2c/datasets/9a1b",
                                  "/apiary", "/administration/x", "/healthz/more"])
def test_console_routes_get_index_html(built_console: Path, path: str) -> None:
    response = Client().get(path)

    assert response.status_code == 200
    assert response.content == INDEX
    assert response["Content-Type"] == "text/html; charset=utf-8"
    assert response["Cache-Control"] == "no-cache"


def test_hashed_assets_are_served_by_whitenoise_and_cached_forever(built_console: Path) -> None:
    response = Client().get("/assets/index-AbC_12-z.js")

    assert response.status_code == 200
    assert b"".join(response.streaming_content) == b"console.log('sampan')"
    assert "immutable" in response["Cache-Control"]


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/api/v1/nowhere/", "/api/device/v1/nowhere", "/admin/nowhere/",
                                  "/static/nowhere.css", "/ws/jobs/x/"])
def test_api_admin_static_and_websocket_paths_never_get_the_console(
        built_console: Path, path: str) -> None:
    response = Client().get(path)

    assert response.status_code in {302, 404}
    assert b"console-build-marker" not in response.content


@pytest.mark.django_db
def test_api_paths_without_a_slash_still_redirect_to_the_slashed_api(built_console: Path) -> None:
    response = Client().get("/api/v1/projects")

    assert response.status_code == 301
    assert response["Location"] == "/api/v1/projects/"


def test_healthz_is_not_shadowed(built_console: Path) -> None:
    response = Client().get("/healthz")

    assert response.json() == {"status": "ok"}


def test_unbuilt_console_says_how_to_build_it(settings: Any, tmp_path: Path) -> None:
    settings.SAMPAN_CONSOLE_DIR = tmp_path / "missing"

    response = Client().get("/datasets")

    assert response.status_code == 503
    assert b"make run" in response.content
    assert b"/api/docs/" in response.content


def test_console_routes_refuse_writes(built_console: Path) -> None:
    response = Client().post("/projects")

    assert response.status_code == 405


def test_an_unknown_asset_is_a_404_not_the_index_page(client: Any) -> None:
    response = client.get("/assets/index-doesnotexist.js")
    assert response.status_code == 404
