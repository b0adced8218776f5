"""What a hostile or broken device sends (session 25's attack on the device API): every answer a
400 naming the field, nothing stored that a later read cannot render, no traceback logged, and
no model readable by claiming it.

Before: a lone surrogate as a ``detections_by_class`` label was stored (200) and the device's
telemetry answered 500 from then on; one in an enrolled ``info`` or a benchmark ``status``
answered 500; integers of any size (``10**400``) and latencies of 1e308 ms were stored; a
``device_time`` of 9999-12-31 at -14:00 logged the fast path's traceback; a heartbeat claiming
an undeployed version as current made it downloadable.
"""

from __future__ import annotations

import json
import logging
import uuid
from datetime import timedelta
from typing import Any

import pytest
from rest_framework.test import APIClient

from sampan.core.parsers import MAX_JSON_INTEGER, check_json_document
from sampan.core.errors import ValidationFailed
from sampan.fleet import services
from sampan.fleet.heartbeat_body import parse
from sampan.fleet.models import Device, Telemetry
from sampan.fleet.services import deployment_create

from tests.platform.heartbeats import steady_heartbeat

STEADY = steady_heartbeat()


def post_raw(client: APIClient, path: str, raw: str) -> Any:
    """``raw`` as the body, as written (JSON escapes such as ``\\ud800`` kept)."""
    return client.post(path, data=raw.encode("ascii"), content_type="application/json")


def refused(response: Any, field: str) -> str:
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert error["code"] == "invalid", error
    assert error["field"] == field, error
    assert error["message"].startswith(f"{field}: "), error
    return str(error["message"])


def heartbeat_raw(**replace: str) -> str:
    """The steady heartbeat as JSON text with some fields' JSON replaced as written."""
    text = json.dumps({key: value for key, value in STEADY.items() if key not in replace})
    extra = ", ".join(f'"{key}": {value}' for key, value in replace.items())
    return text[:-1] + (", " + extra if extra else "") + "}"


def test_a_lone_surrogate_label_is_refused_and_the_telemetry_stays_readable(
        owner_api: APIClient, project: Any, enrolled: Any) -> None:
    device, client = enrolled()
    metrics = ('{"requests": 1, "detections": 1, "detections_by_class": {"\\ud800": 1}}')
    message = refused(post_raw(client, "/api/device/v1/heartbeat", heartbeat_raw(metrics=metrics)),
                      "metrics.detections_by_class")
    assert "the key '\\ud800' contains U+D800 (a lone surrogate) at position 0" in message
    assert not Telemetry.objects.filter(device=device).exists()
    response = owner_api.get(f"/api/v1/projects/{project.pk}/devices/{device.pk}/telemetry/")
    assert response.status_code == 200, response.content


@pytest.mark.parametrize(("info", "field", "shown"), [
    ('{"\\ud800": "\\udfff"}', "info", "the key '\\ud800' contains U+D800 (a lone surrogate)"),
    ('{"os": "\\udfff"}', "info.os", "contains U+DFFF (a lone surrogate) at position 0"),
    ('{"a\\u0000b": 1}', "info",
     "the key 'a\\x00b' contains U+0000 (a control character) at position 1"),
    ('{"cpu": [1, "x\\u0000"]}', "info.cpu[1]", "U+0000 (a control character) at position 1"),
    ('{"cpu_count": 1' + "0" * 400 + "}", "info.cpu_count", "RFC 8259"),
])
def test_enrollment_info_the_database_or_the_console_cannot_hold_is_refused(
        project: Any, owner: Any, info: str, field: str, shown: str) -> None:
    issued = services.enrollment_token_create(project=project, user=owner,
                                              expires_in=timedelta(hours=1))
    raw = f'{{"token": "{issued.secret}", "name": "cam", "info": {info}}}'
    message = refused(post_raw(APIClient(), "/api/device/v1/enroll", raw), field)
    assert shown in message
    assert not Device.objects.exists()


def test_a_lone_surrogate_as_a_benchmark_status_is_a_400(enrolled: Any) -> None:
    _, client = enrolled()
    response = post_raw(client, f"/api/device/v1/benchmarks/{uuid.uuid4()}/result",
                        '{"status": "\\ud800"}')
    refused(response, "status")


@pytest.mark.parametrize(("metrics", "field"), [
    ('{"requests": 1' + "0" * 400 + "}", "metrics.requests"),
    (f'{{"requests": {MAX_JSON_INTEGER + 1}}}', "metrics.requests"),
    ('{"memory_bytes": 1000000000000000000000000000000}', "metrics.memory_bytes"),
    (f'{{"errors": -{MAX_JSON_INTEGER + 1}}}', "metrics.errors"),
])
def test_integers_past_what_a_json_number_holds_are_refused(enrolled: Any, metrics: str,
                                                            field: str) -> None:
    device, client = enrolled()
    message = refused(post_raw(client, "/api/device/v1/heartbeat",
                               heartbeat_raw(metrics=metrics)), field)
    assert "RFC 8259" in message
    assert not Telemetry.objects.filter(device=device).exists()


@pytest.mark.parametrize(("metrics", "field"), [
    ('{"requests": "1' + "0" * 400 + '"}', "requests"),
    (f'{{"memory_bytes": "{MAX_JSON_INTEGER + 2}"}}', "memory_bytes"),
    ('{"detections": 1, "detections_by_class": {"car": "1' + "0" * 30 + '"}}', "car"),
])
def test_quoted_integers_are_held_to_the_same_bound(enrolled: Any, metrics: str, field: str
                                                    ) -> None:
    # DRF's IntegerField reads "123" as 123: the JSON rule alone let these through (review)
    device, client = enrolled()
    response = post_raw(client, "/api/device/v1/heartbeat", heartbeat_raw(metrics=metrics))
    assert response.status_code == 400, response.content
    assert response.json()["error"]["field"] == "metrics"
    assert field in json.dumps(response.json()["error"]["details"])
    assert not Telemetry.objects.filter(device=device).exists()


@pytest.mark.parametrize("raw", [
    heartbeat_raw(metrics='{"cpu_percent": 1' + "0" * 400 + "}"),
    heartbeat_raw(metrics='{"latency_ms": {"p50": 1' + "0" * 400 + "}}"),
    heartbeat_raw(metrics=f'{{"cpu_percent": {MAX_JSON_INTEGER + 2}}}'),
    heartbeat_raw(extra='{"note": "a\\u0000b"}'),
    heartbeat_raw(extra='{"\\ud800": 1}'),
    heartbeat_raw(extra=str(2**60)),
])
def test_the_fast_path_leaves_what_the_view_refuses_to_the_view(
        enrolled: Any, raw: str, caplog: pytest.LogCaptureFixture) -> None:
    """The fast path's validation must never raise (it used to log OverflowError's traceback
    for a huge integer in a float metric) nor take a body the view refuses (a value under a key
    the view drops included)."""
    assert parse(raw.encode()) is None
    _, client = enrolled()
    with caplog.at_level(logging.WARNING):
        assert post_raw(client, "/api/device/v1/heartbeat", raw).status_code == 400
    assert not [r for r in caplog.records if r.exc_info], caplog.text


def test_the_largest_exact_integer_is_taken(enrolled: Any) -> None:
    device, client = enrolled()
    response = post_raw(client, "/api/device/v1/heartbeat",
                        heartbeat_raw(metrics=f'{{"requests": {MAX_JSON_INTEGER}}}'))
    assert response.status_code == 200, response.content
    assert Telemetry.objects.get(device=device).metrics["requests"] == MAX_JSON_INTEGER


def test_a_dropped_count_past_the_exact_integers_is_refused(enrolled: Any) -> None:
    _, client = enrolled()
    refused(post_raw(client, "/api/device/v1/heartbeat",
                     heartbeat_raw(buffered_dropped="1" + "0" * 30)), "buffered_dropped")


@pytest.mark.parametrize(("metrics", "field"), [
    ('{"latency_ms": {"p50": 1e308}}', "latency_ms"),
    ('{"latency_ms": {"p99": 86400001}}', "latency_ms"),
    ('{"latency_window_s": 86401}', "metrics"),
])
def test_latencies_longer_than_a_day_are_refused(enrolled: Any, metrics: str, field: str
                                                 ) -> None:
    device, client = enrolled()
    response = post_raw(client, "/api/device/v1/heartbeat", heartbeat_raw(metrics=metrics))
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert error["field"] == "metrics", error  # DRF names the outer field, details the inner
    assert field in json.dumps(error["details"]), error
    assert "less than or equal to" in json.dumps(error["details"]), error
    assert not Telemetry.objects.filter(device=device).exists()
    assert parse(heartbeat_raw(metrics=metrics).encode()) is None  # the fast path agrees


def test_a_latency_of_a_day_is_taken(enrolled: Any) -> None:
    _, client = enrolled()
    metrics = '{"latency_ms": {"p50": 86400000, "p99": 86400000}, "latency_window_s": 86400}'
    response = post_raw(client, "/api/device/v1/heartbeat", heartbeat_raw(metrics=metrics))
    assert response.status_code == 200, response.content
    assert parse(heartbeat_raw(metrics=metrics).encode()) is not None


def test_a_device_time_past_the_last_utc_instant_is_a_400_without_a_traceback(
        enrolled: Any, caplog: pytest.LogCaptureFixture) -> None:
    _, client = enrolled()
    raw = heartbeat_raw(device_time='"9999-12-31T23:59:59-14:00"')
    body = {**STEADY, "device_time": "9999-12-31T23:59:59-14:00"}
    assert parse(json.dumps(body).encode()) is None  # left to the view, not an OverflowError
    with caplog.at_level(logging.WARNING):
        response = post_raw(client, "/api/device/v1/heartbeat", raw)
    assert response.status_code == 400, response.content
    assert response.json()["error"]["field"] == "device_time"
    assert not [r for r in caplog.records if r.exc_info], caplog.text


def test_claiming_an_undeployed_version_as_current_does_not_make_it_readable(
        project: Any, owner: Any, model_version: Any, enrolled: Any, heartbeat: Any) -> None:
    _, client = enrolled()
    secret = model_version(b"someone else's weights")
    assert heartbeat(client, current_model_version_id=str(secret.pk)).status_code == 200
    base = f"/api/device/v1/model-versions/{secret.pk}"
    assert client.get(f"{base}/manifest.json").status_code == 404
    assert client.get(f"{base}/model.onnx", HTTP_RANGE="bytes=0-9").status_code == 404


def test_a_version_once_deployed_stays_readable_while_it_is_current(
        project: Any, owner: Any, model_version: Any, enrolled: Any, heartbeat: Any) -> None:
    device, client = enrolled()
    first, second = model_version(b"v1"), model_version(b"v2")
    deployment_create(project=project, user=owner, model_version_id=first.pk,
                      device_ids=[device.pk])
    heartbeat(client, current_model_version_id=str(first.pk))
    deployment_create(project=project, user=owner, model_version_id=second.pk,
                      device_ids=[device.pk])  # supersedes the first deployment
    assert client.get(f"/api/device/v1/model-versions/{first.pk}/manifest.json"
                      ).status_code == 200


@pytest.mark.parametrize(("document", "field"), [
    ({"buffered": [{"metrics": {}}, {"metrics": {"requests": 2**60}}]},
     "buffered[1].metrics.requests"),
    ([{"a": ["ok", "\x00"]}], "[0].a[1]"),
    ("\ud83d", None),
])
def test_the_path_of_the_refused_value_is_the_field(document: Any, field: str | None) -> None:
    with pytest.raises(ValidationFailed) as refused_:
        check_json_document(document)
    assert refused_.value.field == field


def test_documents_within_the_rule_pass() -> None:
    check_json_document({"name": "猫 \U0001f408 \u200d", "n": -MAX_JSON_INTEGER, "ok": True,
                         "x": 1e308, "nested": [[{"k": None}]]})
