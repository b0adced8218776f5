"""Liveness and readiness of a web process, for load balancers, compose and orchestrators.

``GET /healthz`` (liveness): 200 ``{"status": "ok"}`` while the process answers; it touches no
other service, so a database outage does not make an orchestrator restart every web replica.

``GET /readyz`` (readiness): one check per service this process needs: ``database``
(``SELECT 1``), ``redis`` (``PING``: the Celery broker and the Channels layer) and ``storage`` (a
HEAD on the bucket with ``SAMPAN_STORAGE=s3``; ``"local"`` otherwise). They run at once, each in
its own thread, and one that has not answered after ``CHECK_TIMEOUT_S`` reads ``"error: no
answer within 2 s"``. 200 ``{"status": "ready", "checks": {...: "ok"}}`` when all pass, else
503 ``{"status": "unavailable", "checks": {...}}`` where a failed check reads ``"error: <kind>"``:
the exception's class and, for storage, the setting to fix; never a URL, host or credential (the
endpoint is anonymous).
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, wait

from django.conf import settings
from django.db import connections
from django.http import HttpRequest, JsonResponse

from sampan.core import storage

#: Seconds each network check may take (a hung service must not hang the probe).
CHECK_TIMEOUT_S = 2.0


def healthz(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"status": "ok"})


def _database() -> str:
    try:
        with connections["default"].cursor() as cursor:
            cursor.execute("SELECT 1")
    finally:
        connections.close_all()  # this check's own thread: leave no connection behind
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


def _run(check: Callable[[], str]) -> str:
    try:
        return check()
    except storage.StorageUnavailable as error:
        return f"error: {type(error.__cause__ or error).__name__}, check {error.field}"
    except Exception as error:  # noqa: BLE001 - any failure makes the process not ready
        return f"error: {type(error).__name__}"


def readyz(request: HttpRequest) -> JsonResponse:
    # every check in its own thread, all at once, and none waited for past CHECK_TIMEOUT_S: a
    # server that accepts connections and never answers held this probe for 132-180 s (review)
    pool = ThreadPoolExecutor(max_workers=len(CHECKS), thread_name_prefix="readyz")
    try:
        futures = {name: pool.submit(_run, check) for name, check in CHECKS.items()}
        wait(futures.values(), timeout=CHECK_TIMEOUT_S)
        results = {name: future.result() if future.done() else
                   f"error: no answer within {CHECK_TIMEOUT_S:g} s"
                   for name, future in futures.items()}
    finally:
        pool.shutdown(wait=False, cancel_futures=True)  # a hung check ends on its own timeout
    ready = all(not value.startswith("error") for value in results.values())
    return JsonResponse({"status": "ready" if ready else "unavailable", "checks": results},
                        status=200 if ready else 503)
