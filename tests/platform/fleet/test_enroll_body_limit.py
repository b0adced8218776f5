"""The unauthenticated device enrollment reads no body over SAMPAN_ANONYMOUS_MAX_BYTES (it read
and parsed up to 64 MiB before anything checked who sent it: a body of ``[{},{},...]`` cost
~1.5 GB of the web process, 30 requests a minute per address), and no JSON body anywhere is read
past SAMPAN_JSON_MAX_BYTES (found by a reviewer, issue 12)."""
import asyncio
from typing import Any

import pytest

pytestmark = pytest.mark.django_db(transaction=True)


def _post(path: str, body: bytes) -> tuple[int, int]:
    from sampan.asgi import application

    chunks = [body[i:i + 65536] for i in range(0, len(body), 65536)]
    read = {"bytes": 0}
    status = {}

    async def receive() -> dict[str, Any]:
        if chunks:
            chunk = chunks.pop(0)
            read["bytes"] += len(chunk)
            return {"type": "http.request", "body": chunk, "more_body": bool(chunks)}
        await asyncio.sleep(3600)
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            status["code"] = message["status"]

    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
             "scheme": "http", "path": path, "raw_path": path.encode(), "query_string": b"",
             "root_path": "", "client": ("10.9.9.9", 5555), "server": ("testserver", 80),
             "headers": [(b"host", b"testserver"), (b"content-type", b"application/json"),
                         (b"content-length", str(len(body)).encode())]}
    asyncio.run(application(scope, receive, send))
    return status["code"], read["bytes"]


def test_an_anonymous_enrollment_body_over_the_anonymous_limit_is_not_read(settings: Any) -> None:
    body = b"[" + b"{}," * (3 * 1024 * 1024 // 3) + b"{}]"  # 3 MiB, ~1M dicts once parsed
    limit = settings.SAMPAN_ANONYMOUS_MAX_BYTES
    # the user API refuses it unread (baseline):
    code, read = _post("/api/v1/auth/login/", body)
    assert code == 401 and read < limit, (code, read)
    code, read = _post("/api/device/v1/enroll", body)
    assert code == 413 and read <= limit, f"enroll read {read} bytes before answering {code}"


def test_a_json_body_over_the_json_limit_is_refused_unread(settings: Any) -> None:
    settings.SAMPAN_JSON_MAX_BYTES = 2 * 1024 * 1024
    body = b"[" + b"{}," * (3 * 1024 * 1024 // 3) + b"{}]"
    code, read = _post("/api/device/v1/heartbeat", body)
    assert code == 413 and read == 0, (code, read)
