"""Every error under /api/ is the platform's JSON (sampan.core.errors, sampan.core.error_views),
never one of Django's HTML pages: request limits, a bad Host, unknown paths, refusals and
unexpected exceptions, in DEBUG and not."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import AsyncClient, Client

from sampan.datasets.models import ImportJob

ERROR_URLS = "tests.platform.core.error_urls"


def error(response: Any) -> dict[str, Any]:
    assert response["Content-Type"] == "application/json", response.content[:200]
    return response.json()["error"]


@pytest.fixture
def imports_url(project_with_roles: dict[str, Any], api: Any) -> tuple[Any, str]:
    client = api(project_with_roles["editor"])
    base = f"/api/v1/projects/{project_with_roles['project'].pk}"
    dataset = client.post(f"{base}/datasets/", {"name": "d"}, format="json").json()
    return client, f"{base}/datasets/{dataset['id']}/imports/"


def test_101_files_in_one_request_are_a_json_400_naming_the_limit(imports_url: Any) -> None:
    client, url = imports_url
    files = [SimpleUploadedFile(f"{i}.png", b"x") for i in range(101)]

    response = client.post(url, {"files": files}, format="multipart")

    assert response.status_code == 400
    body = error(response)
    assert body["code"] == "too_many_files"
    assert body["field"] == "files"
    assert "at most 100 (DATA_UPLOAD_MAX_NUMBER_FILES)" in body["message"]
    assert body["details"] == {"setting": "DATA_UPLOAD_MAX_NUMBER_FILES", "limit": 100}
    assert ImportJob.objects.count() == 0


def test_100_files_are_accepted(imports_url: Any) -> None:
    client, url = imports_url
    files = [SimpleUploadedFile(f"{i}.png", b"x") for i in range(100)]
    assert client.post(url, {"files": files}, format="multipart").status_code == 202


def test_too_many_fields_are_a_json_400(imports_url: Any) -> None:
    client, url = imports_url
    fields = {f"f{i}": "x" for i in range(1100)}

    response = client.post(url, {"files": [SimpleUploadedFile("a.png", b"x")], **fields},
                           format="multipart")

    assert response.status_code == 400
    body = error(response)
    assert body["code"] == "too_many_fields"
    assert body["details"] == {"setting": "DATA_UPLOAD_MAX_NUMBER_FIELDS", "limit": 1000}


def test_a_json_body_over_the_memory_limit_is_a_413(make_user: Any, api: Any,
                                                    settings: Any) -> None:
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1024

    response = api(make_user()).post("/api/v1/projects/", {"name": "P", "description": "x" * 2000},
                                     format="json")

    assert response.status_code == 413
    body = error(response)
    assert body["code"] == "too_large"
    assert body["details"] == {"setting": "DATA_UPLOAD_MAX_MEMORY_SIZE", "limit_bytes": 1024}
    assert "larger than 1024 bytes" in body["message"]


def test_json_nested_too_deeply_is_a_400_not_a_500(make_user: Any, api: Any) -> None:
    body = "[" * 100_000 + "]" * 100_000  # the json module recurses per level

    response = api(make_user()).post("/api/v1/projects/", body,
                                     content_type="application/json")

    assert response.status_code == 400
    assert "nested too deeply" in error(response)["message"]
    # the endpoints anyone may call, unauthenticated: sign-in and device enrollment
    for path in ("/api/v1/auth/login/", "/api/device/v1/enroll"):
        anonymous = Client().post(path, body, content_type="application/json",
                                  HTTP_ORIGIN="http://testserver")
        assert anonymous.status_code == 400, (path, anonymous.content[:200])
        assert "nested too deeply" in error(anonymous)["message"], path


@pytest.mark.django_db
def test_a_disallowed_host_is_a_json_400_under_api_and_html_elsewhere() -> None:
    client = Client()

    api = client.get("/api/v1/projects/", HTTP_HOST="evil.example")
    page = client.get("/some/console/page", HTTP_HOST="evil.example")

    assert api.status_code == 400
    body = error(api)
    assert body["code"] == "disallowed_host"
    assert body["field"] == "Host"
    assert body["message"] == ("the Host 'evil.example' is not one of this platform's host "
                               "names: add it to SAMPAN_ALLOWED_HOSTS")
    assert page.status_code == 400 and page["Content-Type"].startswith("text/html")
    chinese = client.get("/api/v1/projects/", HTTP_HOST="evil.example",
                         HTTP_ACCEPT_LANGUAGE="zh-CN")
    assert error(chinese)["message"] == ("Host 'evil.example' 不是本平台的主机名：请把它加入 "
                                         "SAMPAN_ALLOWED_HOSTS")
    invalid = client.get("/api/v1/projects/", HTTP_HOST="bad_host!")
    assert error(invalid)["message"] == ("the Host 'bad_host!' is not a valid host name "
                                         "(RFC 1034/1035)")


@pytest.mark.django_db
def test_a_disallowed_host_in_debug_is_still_json(settings: Any) -> None:
    settings.DEBUG = True  # Django answers with its technical page here, not through handler400

    response = Client().get("/api/v1/projects/", HTTP_HOST="evil.example")

    assert response.status_code == 400
    assert error(response)["code"] == "bad_request"


@pytest.mark.asyncio
async def test_the_async_stack_answers_json_too() -> None:
    """The ASGI server runs the middleware chain asynchronously."""
    client = AsyncClient()

    host = await client.get("/api/v1/projects/", headers={"host": "evil.example"})
    missing = await client.get("/api/v1/no-such-thing/")

    assert (host.status_code, error(host)["code"]) == (400, "disallowed_host")
    assert (missing.status_code, error(missing)["code"]) == (404, "not_found")
    assert len(missing["X-Request-ID"]) == 32


@pytest.mark.django_db
def test_api_without_its_slash_is_a_json_404() -> None:
    from django.test import Client

    response = Client().get("/api")
    assert response.status_code == 404 and error(response)["code"] == "not_found"


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/api/v1/test-fail/plain/", "/api/v1/test-fail/drf/"])
def test_an_unexpected_exception_is_a_json_500_with_a_logged_request_id(
        settings: Any, caplog: pytest.LogCaptureFixture, path: str) -> None:
    settings.ROOT_URLCONF = ERROR_URLS
    caplog.set_level(logging.ERROR, logger="sampan.errors")

    response = Client(raise_request_exception=False).get(path)

    assert response.status_code == 500
    body = error(response)
    rid = response["X-Request-ID"]
    assert body["code"] == "server_error"
    assert body["details"] == {"request_id": rid}
    assert rid in body["message"]
    [record] = [r for r in caplog.records if r.name == "sampan.errors"]
    assert rid in record.getMessage() and path in record.getMessage()
    assert record.exc_info is not None and "boom in a" in str(record.exc_info[1])


@pytest.mark.django_db
def test_an_unexpected_exception_in_debug_is_a_json_500(settings: Any) -> None:
    settings.ROOT_URLCONF = ERROR_URLS
    settings.DEBUG = True

    response = Client(raise_request_exception=False).get("/api/v1/test-fail/plain/",
                                                         HTTP_X_REQUEST_ID="trace-42")

    assert response.status_code == 500
    assert error(response)["details"] == {"request_id": "trace-42"}
    assert response["X-Request-ID"] == "trace-42"


@pytest.mark.django_db
def test_outside_the_api_errors_stay_html(settings: Any) -> None:
    settings.ROOT_URLCONF = ERROR_URLS

    response = Client(raise_request_exception=False).get("/console-fail/")

    assert response.status_code == 500
    assert response["Content-Type"].startswith("text/html")


@pytest.mark.django_db
def test_a_permission_denied_outside_drf_is_a_json_403(settings: Any) -> None:
    settings.ROOT_URLCONF = ERROR_URLS

    response = Client().get("/api/v1/test-fail/refuse/")

    assert response.status_code == 403
    assert error(response) == {"code": "forbidden", "message": "not for you"}


@pytest.mark.django_db
def test_request_ids_come_from_the_client_only_when_they_are_plain() -> None:
    kept = Client().get("/api/v1/nothing/", HTTP_X_REQUEST_ID="abc-123.X_y")
    replaced = Client().get("/api/v1/nothing/", HTTP_X_REQUEST_ID="<script>")

    assert kept["X-Request-ID"] == "abc-123.X_y"
    assert replaced["X-Request-ID"] != "<script>" and len(replaced["X-Request-ID"]) == 32


@pytest.mark.django_db
@pytest.mark.parametrize("debug", [False, True])
def test_a_write_without_the_trailing_slash_is_a_json_308_naming_it(
        settings: Any, make_user: Any, api: Any, debug: bool) -> None:
    # Django's APPEND_SLASH answered 301 HTML: clients re-sent the POST as a GET, got the list
    # with 200, and the project was never created (in DEBUG: a RuntimeError, 500)
    settings.DEBUG = debug
    client = api(make_user("ana"))
    response = client.post("/api/v1/projects?x=1", {"name": "p"}, format="json")
    assert response.status_code == 308
    assert response["Location"] == "/api/v1/projects/?x=1"
    body = error(response)
    assert body["code"] == "trailing_slash"
    assert body["message"] == ("POST /api/v1/projects needs its trailing slash: send it to "
                               "/api/v1/projects/ (every API path ends with /)")
    # GET keeps Django's redirect; an unknown path stays a 404; the slashed write works
    assert client.get("/api/v1/projects").status_code == 301
    assert client.post("/api/v1/nowhere", {}, format="json").status_code == 404
    assert client.post("/api/v1/projects/", {"name": "p"}, format="json").status_code == 201
