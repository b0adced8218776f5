"""The platform's own errors in the client's language (Accept-Language zh-CN: Simplified Chinese;
English by default), also where Django's LocaleMiddleware has not run: the error middleware
(before it in MIDDLEWARE), Django's error handlers, the ASGI body limit."""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

import pytest
from django.test import Client, RequestFactory
from django.utils import translation

from sampan.core import error_views
from sampan.core.body_limit import BodyLimitMiddleware
from sampan.core.language import headers_language

ZH = {"HTTP_ACCEPT_LANGUAGE": "zh-CN"}


def test_the_language_of_headers_is_the_one_locale_middleware_chooses() -> None:
    assert headers_language([]) == "en"  # LANGUAGE_CODE en-us, as LANGUAGES has it
    assert headers_language([(b"accept-language", b"zh-CN,zh;q=0.9,en;q=0.8")]) == "zh-hans"
    assert headers_language([(b"accept-language", b"fr-FR, en;q=0.5")]) == "en"
    assert headers_language([(b"Accept-Language", b"de"), (b"accept-language", b"zh-Hans")]) \
        == "zh-hans"
    assert headers_language([(b"cookie", b"django_language=zh-hans"),
                             (b"accept-language", b"en")]) == "zh-hans"


@pytest.mark.django_db
def test_names_and_lookups_are_refused_in_chinese(make_user: Any, api: Any) -> None:
    client = api(make_user("ana"))
    bad_name = {"name": "line\nbreak"}

    english = client.post("/api/v1/auth/tokens/", bad_name, format="json")
    assert english.json()["error"]["message"] == (
        "name: contains U+000A (a control character) at position 4")

    chinese = client.post("/api/v1/auth/tokens/", bad_name, format="json", **ZH)
    assert chinese.status_code == 400
    assert chinese.json()["error"]["message"] == "name：在位置 4 包含 U+000A（控制字符）"

    project = client.post("/api/v1/projects/", {"name": "p"}, format="json").json()
    missing = f"/api/v1/projects/{project['id']}/datasets/00000000-0000-0000-0000-000000000000/"
    assert client.get(missing).json()["error"]["message"] == "dataset not found"
    assert client.get(missing, **ZH).json()["error"]["message"] == "找不到数据集"


@pytest.mark.django_db
def test_answers_made_outside_locale_middleware_are_in_the_language_asked_for(
        make_user: Any, api: Any) -> None:
    # ApiErrorMiddleware answers a write without its slash before LocaleMiddleware runs
    client = api(make_user("ana"))
    slash = client.post("/api/v1/projects", {"name": "p"}, format="json", **ZH)
    assert slash.status_code == 308
    assert slash.json()["error"]["message"] == (
        "POST /api/v1/projects 缺少末尾的斜杠：请发送到 /api/v1/projects/"
        "（每个 API 路径都以 / 结尾）")

    unknown = Client().get("/api/v1/nowhere/", **ZH)
    assert unknown.status_code == 404
    assert unknown.json()["error"]["message"] == "不存在此 API 路径：/api/v1/nowhere/"
    assert Client().get("/api/v1/nowhere/").json()["error"]["message"] == (
        "no such API path: /api/v1/nowhere/")

    # the handlers themselves, called with no middleware at all (an error raised before
    # LocaleMiddleware ran reaches them so), leave the active language as they found it
    translation.deactivate()
    request = RequestFactory().get("/api/v1/x/", **ZH)
    request.request_id = "r1"
    answer = json.loads(error_views.server_error(request).content)["error"]
    assert answer["message"] == "服务器发生意外错误；详情见服务器日志，请求 ID 为 r1"
    answer = json.loads(error_views.not_found(request, Exception()).content)["error"]
    assert answer["message"] == "不存在此 API 路径：/api/v1/x/"
    assert translation.get_language() == "en-us"
    english = RequestFactory().get("/api/v1/x/")
    english.request_id = "r2"
    assert json.loads(error_views.server_error(english).content)["error"]["message"] == (
        "unexpected server error; the server log has the details under request id r2")


def test_the_body_limit_answers_in_the_language_asked_for() -> None:
    def refused(headers: list[tuple[bytes, bytes]]) -> dict[str, Any]:
        sent: list[Any] = []

        async def send(message: Any) -> None:
            sent.append(message)

        async def receive() -> Any:
            return {"type": "http.request", "body": b""}

        scope = {"type": "http", "method": "POST", "path": "/x",
                 "headers": [(b"content-length", b"5000"), *headers]}
        limited = BodyLimitMiddleware(None, lambda s: 1000)  # type: ignore[arg-type]
        asyncio.run(limited(scope, receive, send))
        assert sent[0]["status"] == 413
        return json.loads(sent[1]["body"])["error"]

    assert refused([])["message"] == "request body is too large: the limit is 1000 bytes"
    assert refused([(b"accept-language", b"zh-CN")])["message"] == "请求体过大：上限为 1000 字节"
    assert translation.get_language() == "en-us"


# DRF's own parse and CSRF refusals, and answers made before LocaleMiddleware (a review's
# findings: these came back in English, or without Content-Language)
_HAN = re.compile("[\u4e00-\u9fff]")


@pytest.mark.django_db
def test_malformed_json_and_multipart_bodies_are_refused_in_chinese(
        project_with_roles: dict[str, Any], api: Any) -> None:
    owner = api(project_with_roles["owner"])
    bad_json = owner.post("/api/v1/projects/", data='{"name": "p",}',
                          content_type="application/json", HTTP_ACCEPT_LANGUAGE="zh-CN")
    assert bad_json.status_code == 400
    assert bad_json.json()["error"]["message"].startswith("JSON 解析错误：")
    english = owner.post("/api/v1/projects/", data='{"name": "p",}',
                         content_type="application/json")
    assert english.json()["error"]["message"].startswith("JSON parse error - Expecting")
    bad_multipart = owner.post("/api/v1/projects/", data=b"--x\r\nnonsense",
                               content_type="multipart/form-data; boundary=",
                               HTTP_ACCEPT_LANGUAGE="zh-CN")
    assert bad_multipart.status_code == 400
    assert _HAN.search(bad_multipart.json()["error"]["message"]), bad_multipart.json()


@pytest.mark.django_db
def test_a_session_write_without_its_csrf_token_is_refused_in_chinese(make_user: Any) -> None:
    make_user("ana")
    client = Client(enforce_csrf_checks=True)
    assert client.login(username="ana", password="pw")
    refused = client.post("/api/v1/projects/", {"name": "p"}, content_type="application/json",
                          HTTP_ACCEPT_LANGUAGE="zh-CN")
    assert refused.status_code == 403
    assert refused.json()["error"]["message"].startswith("CSRF 校验失败："), refused.json()
    english = client.post("/api/v1/projects/", {"name": "p"}, content_type="application/json")
    assert english.json()["error"]["message"].startswith("CSRF Failed: ")


@pytest.mark.django_db
def test_the_trailing_slash_answer_says_its_language() -> None:
    moved = Client().post("/api/v1/projects", {}, content_type="application/json",
                          HTTP_ACCEPT_LANGUAGE="zh-CN")
    assert moved.status_code == 308 and _HAN.search(moved.json()["error"]["message"])
    assert moved["Content-Language"] == "zh-hans"
