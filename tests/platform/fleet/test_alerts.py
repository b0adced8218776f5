"""Alert rules: offline, error rate and p95 latency, opened and resolved by the evaluation,
notified by webhook (a real local HTTP server) and e-mail (Django's test outbox)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from django.core import mail
from django.utils import timezone
from rest_framework.test import APIClient

from sampan.fleet.alerts import alerts_evaluate
from sampan.fleet.models import Alert, Telemetry


@pytest.fixture
def webhook() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    received: list[dict[str, Any]] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            pass

        def do_POST(self) -> None:  # noqa: N802
            received.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
            self.send_response(204)
            self.end_headers()

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/hook", received
    server.shutdown()
    server.server_close()


def rule(owner_api: APIClient, project: Any, **body: Any) -> Any:
    response = owner_api.post(f"/api/v1/projects/{project.pk}/alert-rules/", body, format="json")
    assert response.status_code == 201, response.content
    return response.json()


def test_an_offline_device_fires_once_then_resolves_with_notifications(
        owner_api: APIClient, project: Any, enrolled: Any, heartbeat: Any,
        webhook: Any) -> None:
    url, received = webhook
    device, client = enrolled("gate")
    other, other_client = enrolled("other")
    created = rule(owner_api, project, name="gone 10 min", kind="device_offline", threshold=10,
                   webhook_url=url, emails=["ops@example.org"])
    heartbeat(client)
    heartbeat(other_client)
    now = timezone.now()
    assert alerts_evaluate(now=now) == {"fired": 0, "resolved": 0}

    later = now + timedelta(minutes=11)
    assert alerts_evaluate(now=later) == {"fired": 2, "resolved": 0}
    assert alerts_evaluate(now=later + timedelta(minutes=1)) == {"fired": 0, "resolved": 0}
    assert {r["device"]["name"] for r in received} == {"gate", "other"}
    first = received[0]
    assert first["event"] == "fired" and first["rule"]["id"] == created["id"]
    assert "no heartbeat for 11 min" in first["alert"]["message"]
    assert len(mail.outbox) == 2 and mail.outbox[0].to == ["ops@example.org"]
    assert mail.outbox[0].subject.startswith("[Sampan] Alert: ")

    heartbeat(client)  # back (received now): resolves at the next evaluation
    from sampan.fleet.models import Device

    Device.objects.filter(pk=device.pk).update(last_seen_at=later + timedelta(minutes=1))
    assert alerts_evaluate(now=later + timedelta(minutes=2)) == {"fired": 0, "resolved": 1}
    assert received[-1]["event"] == "resolved" and received[-1]["device"]["name"] == "gate"
    listed = owner_api.get(f"/api/v1/projects/{project.pk}/alerts/").json()
    assert sorted((a["device_name"], a["state"]) for a in listed) == [
        ("gate", "resolved"), ("other", "firing")]
    gate = next(a for a in listed if a["device_name"] == "gate")
    assert gate["notified"]["fired"] == {"webhook": "ok", "email": "ok"}
    firing = owner_api.get(f"/api/v1/projects/{project.pk}/alerts/?state=firing").json()
    assert [a["device_name"] for a in firing] == ["other"]


def test_error_rate_and_p95_rules_read_the_telemetry(owner_api: APIClient, project: Any,
                                                     enrolled: Any, heartbeat: Any) -> None:
    device, client = enrolled()
    rule(owner_api, project, name="errors", kind="error_rate", threshold=0.2, window_minutes=5)
    rule(owner_api, project, name="slow", kind="p95_latency_ms", threshold=50)
    for requests_count, errors in ((100, 0), (150, 5), (200, 30)):  # 30 of 100 in the window
        heartbeat(client, metrics={"requests": requests_count, "errors": errors,
                                   "latency_ms": {"p50": 10, "p95": 80, "p99": 90}})
    assert alerts_evaluate() == {"fired": 2, "resolved": 0}
    messages = sorted(Alert.objects.values_list("message", flat=True))
    assert messages[0].startswith("camera-1: 30.0% of requests failed over 5 min")
    assert messages[1] == "camera-1: p95 latency 80.0 ms (rule: 50 ms)"
    # the agent restarted (counters from 0), few errors since, fast again: both resolve
    Telemetry.objects.filter(device=device).delete()
    for requests_count, errors in ((0, 0), (100, 1)):
        heartbeat(client, metrics={"requests": requests_count, "errors": errors,
                                   "latency_ms": {"p50": 5, "p95": 9, "p99": 12}})
    assert alerts_evaluate() == {"fired": 0, "resolved": 2}


def test_a_rule_on_a_tag_watches_only_that_group(owner_api: APIClient, project: Any,
                                                 enrolled: Any, heartbeat: Any) -> None:
    tagged, tagged_client = enrolled("tagged")
    _, plain_client = enrolled("plain")
    owner_api.patch(f"/api/v1/projects/{project.pk}/devices/{tagged.pk}/", {"tags": ["line-3"]},
                    format="json")
    rule(owner_api, project, name="slow line 3", kind="p95_latency_ms", threshold=50,
         tag="line-3")
    for client in (tagged_client, plain_client):
        heartbeat(client, metrics={"latency_ms": {"p50": 1, "p95": 99, "p99": 99}})
    assert alerts_evaluate()["fired"] == 1
    assert list(Alert.objects.values_list("device__name", flat=True)) == ["tagged"]


def test_a_webhook_that_fails_is_recorded_and_evaluation_goes_on(
        owner_api: APIClient, project: Any, enrolled: Any, heartbeat: Any) -> None:
    _, client = enrolled()
    rule(owner_api, project, name="slow", kind="p95_latency_ms", threshold=1,
         webhook_url="http://127.0.0.1:9/nowhere")
    heartbeat(client)  # p95 9.0 ms in the fixture's metrics
    assert alerts_evaluate()["fired"] == 1
    assert Alert.objects.get().notified["fired"]["webhook"] == "error: ConnectionError"


def test_rules_are_validated_editable_deletable_and_editor_only(
        owner_api: APIClient, project: Any, member: Any) -> None:
    base = f"/api/v1/projects/{project.pk}/alert-rules/"
    for bad, field in (({"kind": "error_rate", "threshold": 5}, "threshold"),
                       ({"kind": "nope", "threshold": 1}, "kind"),
                       ({"kind": "device_offline", "threshold": -1}, "threshold"),
                       ({"kind": "device_offline", "threshold": 1, "webhook_url": "ftp://x"},
                        "webhook_url"),
                       ({"kind": "device_offline", "threshold": 1, "emails": ["not-mail"]},
                        "emails")):
        response = owner_api.post(base, {"name": "r", **bad}, format="json")
        assert response.status_code == 400, (bad, response.content)
        assert response.json()["error"]["field"].startswith(field), response.json()
    created = rule(owner_api, project, name="r", kind="device_offline", threshold=5)
    updated = owner_api.put(base + f"{created['id']}/", {"name": "r2", "kind": "device_offline",
                                                         "threshold": 15}, format="json")
    assert updated.status_code == 200 and updated.json()["threshold"] == 15
    viewer = APIClient()
    viewer.force_authenticate(member("vera", "viewer"))
    assert viewer.get(base).status_code == 200
    assert viewer.post(base, {"name": "x", "kind": "device_offline", "threshold": 1},
                       format="json").status_code == 403
    assert owner_api.delete(base + f"{created['id']}/").status_code == 204
    assert owner_api.get(base).json() == []


def test_a_low_confidence_rule_fires_below_its_threshold(owner_api: APIClient, project: Any,
                                                         enrolled: Any, heartbeat: Any) -> None:
    """The one rule that fires below: a model unsure of what it sees (confidence_mean from the
    agent's window); no answers in the window (null) is not low confidence."""
    _, client = enrolled("unsure")
    _, other = enrolled("sure")
    rule(owner_api, project, name="unsure", kind="low_confidence", threshold=0.6)
    heartbeat(client, metrics={"confidence_mean": 0.41})
    heartbeat(other, metrics={"confidence_mean": 0.93})
    assert alerts_evaluate() == {"fired": 1, "resolved": 0}
    assert list(Alert.objects.values_list("message", flat=True)) == [
        "unsure: mean confidence 0.41 (rule: below 0.60)"]
    heartbeat(client, metrics={"confidence_mean": None})  # quiet: resolves, never fires
    heartbeat(other, metrics={"confidence_mean": None})
    assert alerts_evaluate() == {"fired": 0, "resolved": 1}
    bad = owner_api.post(f"/api/v1/projects/{project.pk}/alert-rules/",
                         {"name": "x", "kind": "low_confidence", "threshold": 60}, format="json")
    assert bad.status_code == 400 and bad.json()["error"]["field"] == "threshold"
