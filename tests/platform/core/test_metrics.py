"""GET /metrics: jobs by kind and status, Celery queue lengths (a real redis-server), devices
online and offline, and request latencies by URL pattern, in Prometheus's text format."""

from __future__ import annotations

import hashlib
from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from sampan.accounts.services import project_create
from sampan.core.jobs import JobStatus
from sampan.datasets.models import ImportJob
from sampan.datasets.services import dataset_create
from sampan.fleet.models import Device
from tests.platform.core.test_health import redis_url  # noqa: F401  (the real redis fixture)

pytestmark = pytest.mark.django_db


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def device(project: Any, name: str, seen_s_ago: float | None) -> Device:
    return Device.objects.create(
        project=project, name=name, credential_sha256=hashlib.sha256(name.encode()).hexdigest(),
        last_seen_at=None if seen_s_ago is None else timezone.now() - timedelta(seconds=seen_s_ago))


def test_jobs_devices_queues_and_request_latencies(make_user: Any, settings: Any,
                                                   redis_url: str,  # noqa: F811
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from sampan.celery import app

    monkeypatch.setitem(app.conf, "broker_url", redis_url)
    owner = make_user()
    project = project_create(user=owner, name="p")
    dataset = dataset_create(project=project, name="d", task_type="image_classification")
    for status in (JobStatus.QUEUED, JobStatus.QUEUED, JobStatus.FAILED):
        ImportJob.objects.create(project=project, dataset=dataset, staging_dir="/none",
                                 status=status)
    device(project, "a", 1)
    device(project, "b", settings.SAMPAN_DEVICE_OFFLINE_AFTER_S + 5)
    device(project, "c", None)
    # three messages waiting in the training queue: kombu's list for priority 0 is named after
    # the queue
    import redis

    redis.Redis.from_url(redis_url).lpush("training", b"{}", b"{}", b"{}")
    client = Client()
    assert client.get("/healthz").status_code == 200

    response = client.get("/metrics")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain")
    found = samples(response.content.decode())
    assert found[("sampan_jobs", (("kind", "importjob"), ("status", "QUEUED")))] == 2
    assert found[("sampan_jobs", (("kind", "importjob"), ("status", "FAILED")))] == 1
    assert found[("sampan_jobs", (("kind", "trainingjob"), ("status", "RUNNING")))] == 0
    assert found[("sampan_devices", (("status", "online"),))] == 1
    assert found[("sampan_devices", (("status", "offline"),))] == 2
    assert found[("sampan_queue_messages", (("queue", "training"),))] == 3
    assert found[("sampan_queue_messages", (("queue", "compression"),))] == 0
    # the earlier request, by URL pattern and status class (never the raw path)
    assert found[("sampan_http_request_duration_seconds_count",
                  (("method", "GET"), ("route", "healthz"), ("status", "2xx")))] >= 1


def test_request_routes_are_patterns_not_paths(make_user: Any) -> None:
    client = Client()
    client.force_login(make_user())
    client.get("/api/v1/projects/00000000-0000-0000-0000-000000000001/")
    client.get("/api/v1/projects/00000000-0000-0000-0000-000000000002/")
    text = client.get("/metrics").content.decode()
    assert "00000000-0000-0000-0000-000000000001" not in text
    routes = {dict(s.labels).get("route") for family in text_string_to_metric_families(text)
              for s in family.samples if s.name.startswith("sampan_http_request_duration")}
    assert "api/v1/projects/<uuid:project_id>/" in routes


def test_made_up_methods_share_one_label() -> None:
    """Any token is an HTTP method to the server: each must not add series (unbounded)."""
    client = Client()
    for n in range(5):
        client.generic(f"FOO{n}", "/healthz")
    text = client.get("/metrics").content.decode()
    assert "FOO" not in text
    assert 'method="other",route="healthz"' in text


def test_a_token_guards_the_metrics_when_set(settings: Any) -> None:
    settings.SAMPAN_METRICS_TOKEN = "s3cret-scrape"
    client = Client()
    refused = client.get("/metrics")
    assert refused.status_code == 401 and refused["WWW-Authenticate"] == "Bearer"
    assert "SAMPAN_METRICS_TOKEN" in refused.json()["error"]["message"]
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer wrong").status_code == 401
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer s3cret-scrape").status_code == 200
