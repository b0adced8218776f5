"""``GET /metrics``: the platform in Prometheus's text format (prometheus-client).

Read from the database and the broker at each scrape (no counter lives in a process that may
restart, so every web replica answers the same numbers for them):

- ``sampan_jobs{kind, status}``: jobs of each kind (``trainingjob``, ``importjob``, ...) by
  status, as many as the database holds;
- ``sampan_queue_messages{queue}``: messages waiting in each Celery queue (not those delivered
  to a worker); absent when the broker cannot be read;
- ``sampan_devices{status}``: devices online (a heartbeat within
  ``SAMPAN_DEVICE_OFFLINE_AFTER_S``) and offline.

And per web process (Prometheus sums them over replicas):

- ``sampan_http_request_duration_seconds{method, route, status}``: a histogram of request
  latencies by method, URL pattern (``api/v1/projects/<uuid:project_id>/``, never the raw path:
  a bounded set of labels) and status class (``2xx`` ...).

The endpoint names no host, user or secret. With ``SAMPAN_METRICS_TOKEN`` set it answers only
``Authorization: Bearer <token>`` (401 otherwise); unset, anyone who reaches it may read it, as
with ``/healthz``: restrict it at the proxy.
"""

from __future__ import annotations

import hmac
import time
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db.models import Count
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils import timezone
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

#: methods kept as labels; any other (HTTP servers accept any token) is "other", so no client
#: can grow the histogram's label set
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
#: the Celery queues whose waiting messages are counted
QUEUES = ["training", "compression", "imports", "default"]

REGISTRY = CollectorRegistry(auto_describe=False)
REQUEST_SECONDS = Histogram(
    "sampan_http_request_duration_seconds", "Web requests by method, URL pattern and status "
    "class, in seconds (this process).", ["method", "route", "status"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0),
    registry=REGISTRY)


class PlatformCollector(Collector):
    """Jobs by kind and status, queue lengths and devices by status, read at each scrape."""

    def collect(self) -> Iterator[GaugeMetricFamily]:
        from sampan.core.enqueue import broker_queue_lengths
        from sampan.core.models import JobStatus
        from sampan.core.services import job_models
        from sampan.fleet.models import Device

        # the broker first: a scrape waiting on Redis (at most ~2 s) holds no database connection
        lengths = broker_queue_lengths(QUEUES)
        jobs = GaugeMetricFamily("sampan_jobs", "Jobs by kind and status.",
                                 labels=["kind", "status"])
        for model in job_models():
            counts = dict(model.objects.values_list("status").annotate(n=Count("pk"))
                          .values_list("status", "n"))
            for status in JobStatus.values:
                jobs.add_metric([model._meta.model_name or model.__name__.lower(), status],
                                counts.get(status, 0))
        yield jobs
        if lengths is not None:
            queues = GaugeMetricFamily("sampan_queue_messages",
                                       "Messages waiting in each Celery queue.",
                                       labels=["queue"])
            for queue, length in lengths.items():
                queues.add_metric([queue], length)
            yield queues
        cutoff = timezone.now() - timedelta(seconds=settings.SAMPAN_DEVICE_OFFLINE_AFTER_S)
        online = Device.objects.filter(last_seen_at__gte=cutoff).count()
        total = Device.objects.count()
        devices = GaugeMetricFamily("sampan_devices", "Enrolled devices by status.",
                                    labels=["status"])
        devices.add_metric(["online"], online)
        devices.add_metric(["offline"], total - online)
        yield devices


REGISTRY.register(PlatformCollector())


def metrics_view(request: HttpRequest) -> HttpResponse:
    token = getattr(settings, "SAMPAN_METRICS_TOKEN", "")
    if token:
        given = request.headers.get("Authorization", "")
        if not hmac.compare_digest(given.encode(), f"Bearer {token}".encode()):
            response = JsonResponse({"error": {"code": "not_authenticated", "message":
                                               "GET /metrics needs Authorization: Bearer "
                                               "<SAMPAN_METRICS_TOKEN>"}}, status=401)
            response["WWW-Authenticate"] = "Bearer"
            return response
    return HttpResponse(generate_latest(REGISTRY), content_type=CONTENT_TYPE_LATEST)


class RequestMetricsMiddleware:
    """Observes every request's duration in ``sampan_http_request_duration_seconds``."""

    def __init__(self, get_response: Callable[[HttpRequest], Any]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> Any:
        began = time.perf_counter()
        response = self.get_response(request)
        match = getattr(request, "resolver_match", None)
        route = (match.route if match is not None and match.route else "unmatched")[:200]
        method = request.method if request.method in METHODS else "other"
        REQUEST_SECONDS.labels(method, route,
                               f"{response.status_code // 100}xx").observe(
            time.perf_counter() - began)
        return response
