"""The committed OpenAPI schema (docs/openapi.yaml) is the one the code generates."""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any

import yaml

SCHEMA_FILE = Path(__file__).resolve().parents[3] / "docs" / "openapi.yaml"


def _generated() -> bytes:
    """Exactly what ``manage.py spectacular --file docs/openapi.yaml`` (``make schema``) writes."""
    from drf_spectacular.renderers import OpenApiYamlRenderer
    from drf_spectacular.settings import spectacular_settings

    generator = spectacular_settings.DEFAULT_GENERATOR_CLASS()
    schema = generator.get_schema(request=None, public=True)
    return OpenApiYamlRenderer().render(schema, renderer_context={})


def test_committed_schema_matches_the_code() -> None:
    committed = SCHEMA_FILE.read_text(encoding="utf-8")
    generated = _generated().decode("utf-8")

    if committed != generated:
        diff = "".join(difflib.unified_diff(
            committed.splitlines(keepends=True), generated.splitlines(keepends=True),
            fromfile="docs/openapi.yaml (committed)", tofile="generated from the code", n=2))
        lines = diff.splitlines(keepends=True)
        shown = "".join(lines[:80]) + (f"... {len(lines) - 80} more diff lines\n"
                                       if len(lines) > 80 else "")
        raise AssertionError(
            "docs/openapi.yaml is out of date with the API code: run `make schema` and commit "
            f"the result.\n{shown}")


def test_committed_schema_describes_the_user_and_device_api() -> None:
    schema = yaml.safe_load(SCHEMA_FILE.read_text(encoding="utf-8"))

    assert schema["openapi"].startswith("3.")
    assert schema["info"]["title"] == "Sampan API"
    assert "/api/v1/projects/{project_id}/datasets/" in schema["paths"]
    assert "/api/v1/projects/{project_id}/training-jobs/" in schema["paths"]
    assert "/api/device/v1/heartbeat" in schema["paths"]
    assert schema["components"]["securitySchemes"]["apiToken"] == {
        "type": "http", "scheme": "bearer",
        "description": "A personal API token: `Authorization: Bearer spn_...`"}


def test_schema_is_served_to_signed_in_users(make_user: Any, api: Any) -> None:
    response = api(make_user("ana")).get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi")

    assert response.status_code == 200
    served = yaml.safe_load(response.content)
    assert served["info"]["title"] == "Sampan API"
    assert "/api/v1/projects/{project_id}/members/" in served["paths"]


def test_the_schema_states_the_ranges_checked_in_code(settings: Any) -> None:
    """Issue 12: the constraints that live in code are in the schema too."""
    schemas = yaml.safe_load(SCHEMA_FILE.read_text(encoding="utf-8"))["components"]["schemas"]
    budget = schemas["TrainingJobInputRequest"]["properties"]["budget_s"]
    assert (budget["minimum"], budget["maximum"]) == (15.0, settings.SAMPAN_TRAINING_MAX_BUDGET_S)
    compression = schemas["CompressionJobInputRequest"]["properties"]["budget_s"]
    assert (compression["minimum"], compression["maximum"]) == (120.0, 21600.0)
    fractions = schemas["DatasetVersionInputRequest"]["properties"]
    assert "val_fraction + test_fraction must be below 1" in fractions["val_fraction"][
        "description"]
    assert "pattern" in schemas["ProjectInputRequest"]["properties"]["name"]
