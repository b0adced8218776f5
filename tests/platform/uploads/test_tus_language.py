"""The tus app answers in the request's language (it runs in front of Django, without its
LocaleMiddleware): Accept-Language zh-CN gives Simplified Chinese, no header English, and the
language does not outlive the request."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from django.utils import translation

from sampan.uploads.tus import TUS_VERSION, TusApp


def tus(method: str, path: str, headers: list[tuple[bytes, bytes]]) -> tuple[int, dict[str, Any]]:
    """(status, error) of one request to the tus app."""
    sent: list[Any] = []

    async def receive() -> Any:
        return {"type": "http.request", "body": b""}

    async def send(message: Any) -> None:
        sent.append(message)

    scope = {"type": "http", "method": method, "path": path, "headers": headers}
    asyncio.run(TusApp()(scope, receive, send))
    return sent[0]["status"], json.loads(sent[1]["body"])["error"]


def test_a_tus_error_comes_back_in_chinese_for_accept_language_zh_cn() -> None:
    zh = [(b"accept-language", b"zh-CN,zh;q=0.9")]

    status, error = tus("POST", "/api/v1/uploads/", [])
    assert status == 412
    assert error["message"] == "send Tus-Resumable: 1.0.0 (the only tus version this server speaks)"

    status, error = tus("POST", "/api/v1/uploads/", zh)
    assert (status, error["code"], error["field"]) == (412, "unsupported_version", "Tus-Resumable")
    assert error["message"] == "请发送 Tus-Resumable: 1.0.0（本服务器仅支持此 tus 版本）"

    status, error = tus("GET", "/api/v1/uploads/", zh)
    assert status == 405 and error["message"] == "此处不允许 GET；请使用 POST（tus 1.0.0）"
    assert translation.get_language() == "en-us"  # as before the requests


def test_authentication_errors_made_in_the_database_thread_are_in_chinese_too(db: Any) -> None:
    headers = [(b"tus-resumable", TUS_VERSION.encode()), (b"upload-length", b"10")]

    status, error = tus("POST", "/api/v1/uploads/", headers)
    assert status == 401 and error["message"].startswith("authentication credentials were not")

    status, error = tus("POST", "/api/v1/uploads/",
                        [*headers, (b"accept-language", b"zh-CN")])
    assert (status, error["code"]) == (401, "not_authenticated")
    assert error["message"] == "未提供身份认证凭据（Bearer 令牌或已登录的会话）"

    status, error = tus("POST", "/api/v1/uploads/", [
        *headers, (b"accept-language", b"zh-CN"), (b"authorization", b"Bearer spn_nothing")])
    assert (status, error["message"]) == (401, "API 令牌无效或已被撤销")
