from typing import Any

import pytest


@pytest.mark.django_db
def test_unknown_api_path_is_a_json_404(make_user: Any, api: Any) -> None:
    response = api(make_user()).get("/api/v1/projects/not-a-uuid/samples/x/label/")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"
    assert "not-a-uuid" in response.json()["error"]["message"]


@pytest.mark.django_db
def test_api_docs_are_served_without_a_cdn(make_user: Any, api: Any) -> None:
    response = api(make_user()).get("/api/docs/")
    assert response.status_code == 200
    assert b"cdn.jsdelivr" not in response.content
