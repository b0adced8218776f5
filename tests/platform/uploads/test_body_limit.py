"""The body limit in front of every HTTP request (``sampan.core.body_limit``), at the ASGI level:
what reaches the application, what is answered, and that a refused body is never read."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from sampan.core.body_limit import BodyLimitMiddleware

LIMIT = 1000


def run(headers: list[tuple[bytes, bytes]], chunks: list[bytes]) -> dict[str, Any]:
    """Send a request through the middleware around an app that reads the whole body."""
    pending = [{"type": "http.request", "body": c, "more_body": i < len(chunks) - 1}
               for i, c in enumerate(chunks)]
    result: dict[str, Any] = {"reads": 0, "app_body": None, "sent": []}

    async def receive() -> dict[str, Any]:
        result["reads"] += 1
        return pending.pop(0) if pending else {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        result["sent"].append(message)

    async def app(scope: Any, receive: Any, send: Any) -> None:
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        result["app_body"] = body
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})

    scope = {"type": "http", "method": "POST", "path": "/x", "headers": headers}
    asyncio.run(BodyLimitMiddleware(app, lambda s: LIMIT)(scope, receive, send))
    start = result["sent"][0]
    result["status"] = start["status"]
    result["headers"] = dict(start["headers"])
    result["body"] = b"".join(m.get("body", b"") for m in result["sent"][1:])
    return result


def test_a_declared_length_over_the_limit_is_refused_without_reading_the_body() -> None:
    result = run([(b"content-length", str(10 * 1024**3).encode())], [b"x" * 100])
    assert result["status"] == 413
    assert result["reads"] == 0 and result["app_body"] is None
    assert json.loads(result["body"]) == {"error": {
        "code": "too_large", "message": "request body is too large: the limit is 1000 bytes",
        "details": {"limit_bytes": 1000}}}
    assert result["headers"][b"connection"] == b"close"


def test_a_chunked_body_is_counted_and_refused_once_over() -> None:
    result = run([(b"transfer-encoding", b"chunked")], [b"x" * 400] * 10)
    assert result["status"] == 413 and result["app_body"] is None
    assert result["reads"] == 3  # 400, 800, 1200 > 1000: nothing more is read
    assert json.loads(result["body"])["error"]["details"] == {"limit_bytes": 1000}


def test_a_body_at_the_limit_passes_whole() -> None:
    result = run([(b"transfer-encoding", b"chunked")], [b"x" * 500, b"y" * 500])
    assert result["status"] == 200 and result["app_body"] == b"x" * 500 + b"y" * 500


def test_a_content_length_that_is_not_a_number_is_a_400_naming_it() -> None:
    result = run([(b"content-length", b"12abc")], [b""])
    assert result["status"] == 400 and result["reads"] == 0
    assert json.loads(result["body"])["error"]["field"] == "Content-Length"


def test_the_limits_per_path(settings: Any) -> None:
    from sampan.uploads.limits import request_body_limit

    settings.SAMPAN_UPLOAD_MAX_BYTES, settings.SAMPAN_MULTIPART_MAX_BYTES = 7, 5
    settings.SAMPAN_REQUEST_MAX_BYTES = 3
    uid = "0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9"

    def limit(method: str, path: str, *headers: tuple[bytes, bytes]) -> int:
        return request_body_limit({"method": method, "path": path, "headers": list(headers)})

    assert limit("PATCH", f"/api/v1/uploads/{uid}/") == 7
    assert limit("POST", f"/api/v1/uploads/{uid}/", (b"x-http-method-override", b"PATCH")) == 7
    assert limit("POST", "/api/v1/uploads/") == 3
    assert limit("POST", f"/api/v1/projects/{uid}/datasets/{uid}/imports/") == 5
    assert limit("POST", f"/api/v1/projects/{uid}/datasets/") == 3
    settings.SAMPAN_REQUEST_MAX_BYTES, settings.SAMPAN_JSON_MAX_BYTES = 30, 20
    settings.SAMPAN_ANONYMOUS_MAX_BYTES = 10
    json_type = (b"content-type", b"application/json; charset=utf-8")
    assert limit("POST", f"/api/v1/projects/{uid}/datasets/", json_type) == 20
    assert limit("POST", "/x", (b"content-type", b"application/merge-patch+json")) == 20
    assert limit("POST", "/api/v1/projects/", (b"content-type", b"multipart/form-data")) == 30
    assert limit("POST", "/api/device/v1/enroll", json_type) == 10
