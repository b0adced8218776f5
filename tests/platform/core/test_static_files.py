"""Static files with DEBUG off: the assets of /api/docs/ (Swagger UI, from
drf-spectacular-sidecar) load. They used to 404: WhiteNoise serves STATIC_ROOT, which nothing
filled, and looks in the apps only when DEBUG is on (WHITENOISE_USE_FINDERS defaults to DEBUG).
Dev now finds them in the apps; production collects them (collectstatic) at build time.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from django.core.management import call_command
from django.test import Client


def _docs_assets(client: Client) -> list[str]:
    page = client.get("/api/docs/")
    assert page.status_code == 200
    html = page.content.decode()
    assets = sorted(set(re.findall(r'(?:src|href)="(/static/[^"]+)"', html)))
    assert any(a.endswith("swagger-ui-bundle.js") for a in assets), html
    return assets


def _status(client: Client, url: str) -> int:
    response = client.get(url)
    if hasattr(response, "streaming_content"):
        b"".join(response.streaming_content)
    return response.status_code


def test_api_docs_assets_load_in_dev_without_collectstatic(settings: Any, db: Any,
                                                           tmp_path: Path) -> None:
    settings.DEBUG = False
    settings.STATIC_ROOT = tmp_path / "static-never-collected"
    settings.STATIC_ROOT.mkdir()
    settings.WHITENOISE_USE_FINDERS = True  # SAMPAN_ENV=dev
    client = Client()
    client.force_login(_admin())
    for url in _docs_assets(client):
        assert _status(client, url) == 200, url


def test_api_docs_assets_load_in_production_after_collectstatic(settings: Any, db: Any,
                                                                tmp_path: Path) -> None:
    settings.DEBUG = False
    settings.WHITENOISE_USE_FINDERS = False  # SAMPAN_ENV=production
    settings.STATIC_ROOT = tmp_path / "static"
    settings.STATIC_ROOT.mkdir()  # empty: nothing collected yet
    client = Client()
    client.force_login(_admin())
    assets = _docs_assets(client)
    assert _status(client, assets[0]) == 404  # nothing collected: the old failure

    call_command("collectstatic", "--noinput", "-v", "0")

    client = Client()  # WhiteNoise indexes STATIC_ROOT when the handler starts
    client.force_login(_admin())
    for url in assets:
        assert _status(client, url) == 200, url
    bundle = next(url for url in assets if url.endswith("swagger-ui-bundle.js"))
    gzipped = client.get(bundle, HTTP_ACCEPT_ENCODING="gzip")
    assert gzipped.headers.get("Content-Encoding") == "gzip"  # compressed at collect time


def _admin() -> Any:
    from django.contrib.auth import get_user_model

    user, _ = get_user_model().objects.get_or_create(username="docs-reader")
    return user
