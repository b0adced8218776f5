"""Liveness and readiness of a web process, for load balancers, compose and orchestrators.

``GET /healthz`` (liveness): 200 ``{"status": "ok"}`` while the process answers; it touches no
other service, so a database outage does not make an orchestrator restart every web replica.

``GET /readyz`` (readiness): one check per service this process needs, each bounded by a short
timeout: ``database`` (``SELECT 1``), ``redis`` (``PING``: the Celery broker and the Channels
layer) and ``storage`` (a HEAD on the bucket with ``SAMPAN_STORAGE=s3``; ``"local"`` otherwise).
200 ``{"status": "ready", "checks": {...: "ok"}}`` when all pass, else 503 ``{"status":
"unavailable", "checks": {...}}`` where a failed check reads ``"error: <kind>"``: the exception's
class and, for storage, the setting to fix; never a URL, host or credential (the endpoint is
anonymous).
"""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.db import connections
from django.http import HttpRequest, JsonResponse

from sampan.core import storage

#: Seconds each network check may take (a hung service must not hang the probe).
CHECK_TIMEOUT_S = 2.0


def healthz(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"status": "ok"})


def _database() -> str:
    with connections["default"].cursor() as cursor:
        cursor.execute("SELECT 1")
    return "ok"


def _redis() -> str:
    import redis

    client = redis.Redis.from_url(settings.REDIS_URL, socket_connect_timeout=CHECK_TIMEOUT_S,
                                  socket_timeout=CHECK_TIMEOUT_S)
    try:
        client.ping()
    finally:
        client.close()
    return "ok"


def _storage() -> str:
    if not storage.is_remote():
        return "local"
    storage.check()
    return "ok"


CHECKS: dict[str, Callable[[], str]] = {"database": _database, "redis": _redis,
                                         "storage": _storage}


def readyz(request: HttpRequest) -> JsonResponse:
    results: dict[str, str] = {}
    for name, check in CHECKS.items():
        try:
            results[name] = check()
        except storage.StorageUnavailable as error:
            results[name] = f"error: {type(error.__cause__ or error).__name__}, check {error.field}"
        except Exception as error:  # noqa: BLE001 - any failure makes the process not ready
            results[name] = f"error: {type(error).__name__}"
    ready = all(not value.startswith("error") for value in results.values())
    return JsonResponse({"status": "ready" if ready else "unavailable", "checks": results},
                        status=200 if ready else 503)
