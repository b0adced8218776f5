"""Device downloads: only the device's own desired or current model version; HTTP Range."""

from __future__ import annotations

import json
from typing import Any

import pytest
from rest_framework.test import APIClient

from sampan.fleet.downloads import Unsatisfiable, parse_range
from sampan.fleet.services import deployment_create

CONTENT = bytes(range(256)) * 40  # 10240 bytes, every offset distinguishable


def url(version: Any, name: str) -> str:
    return f"/api/device/v1/model-versions/{version.pk}/{name}"


def body(response: Any) -> bytes:
    return b"".join(response.streaming_content)


@pytest.fixture
def deployed(project: Any, owner: Any, model_version: Any, enrolled: Any) -> Any:
    version = model_version(CONTENT)
    device, client = enrolled("one")
    deployment_create(project=project, user=owner, model_version_id=version.pk,
                      device_ids=[device.pk])
    return version, device, client


def test_full_download_and_manifest(deployed: Any) -> None:
    version, _, client = deployed
    response = client.get(url(version, "model.onnx"))
    assert response.status_code == 200
    assert body(response) == CONTENT
    assert response["Content-Length"] == "10240"
    assert response["Accept-Ranges"] == "bytes"
    assert response["ETag"] == f'"{version.model_sha256}"'
    manifest = client.get(url(version, "manifest.json"))
    assert manifest.status_code == 200
    assert json.loads(manifest.content) == version.manifest


def test_range_resume_returns_206_and_the_right_bytes(deployed: Any) -> None:
    version, _, client = deployed
    response = client.get(url(version, "model.onnx"), HTTP_RANGE="bytes=4000-")
    assert response.status_code == 206
    assert body(response) == CONTENT[4000:]
    assert response["Content-Range"] == "bytes 4000-10239/10240"
    assert response["Content-Length"] == "6240"

    middle = client.get(url(version, "model.onnx"), HTTP_RANGE="bytes=100-199")
    assert (middle.status_code, body(middle)) == (206, CONTENT[100:200])
    assert middle["Content-Range"] == "bytes 100-199/10240"

    suffix = client.get(url(version, "model.onnx"), HTTP_RANGE="bytes=-16")
    assert (suffix.status_code, body(suffix)) == (206, CONTENT[-16:])


def test_range_past_the_end_is_416(deployed: Any) -> None:
    version, _, client = deployed
    response = client.get(url(version, "model.onnx"), HTTP_RANGE="bytes=10240-")
    assert response.status_code == 416
    assert response["Content-Range"] == "bytes */10240"
    assert response.json()["error"] == {
        "code": "range_not_satisfiable", "field": "Range", "details": {"size": 10240},
        "message": "the range 'bytes=10240-' lies outside the 10240 bytes of the file"}


def test_if_range_with_another_etag_sends_the_whole_file(deployed: Any) -> None:
    version, _, client = deployed
    response = client.get(url(version, "model.onnx"), HTTP_RANGE="bytes=10-",
                          HTTP_IF_RANGE='"0000"')
    assert (response.status_code, body(response)) == (200, CONTENT)


def test_other_devices_and_undeployed_versions_are_404(deployed: Any, model_version: Any,
                                                        enrolled: Any) -> None:
    version, _, client = deployed
    undeployed = model_version(b"secret weights")
    assert client.get(url(undeployed, "model.onnx")).status_code == 404
    assert client.get(url(undeployed, "manifest.json")).status_code == 404
    _, other_client = enrolled("two")
    assert other_client.get(url(version, "model.onnx")).status_code == 404
    assert other_client.get(url(version, "manifest.json")).status_code == 404
    assert APIClient().get(url(version, "model.onnx")).status_code == 401


def test_current_version_stays_readable_after_a_new_deployment(
        project: Any, owner: Any, deployed: Any, model_version: Any, heartbeat: Any) -> None:
    version, device, client = deployed
    heartbeat(client, current_model_version_id=str(version.pk))
    newer = model_version(b"v2")
    deployment_create(project=project, user=owner, model_version_id=newer.pk,
                      device_ids=[device.pk])
    assert client.get(url(version, "model.onnx")).status_code == 200
    assert client.get(url(newer, "model.onnx")).status_code == 200
    heartbeat(client, current_model_version_id=str(newer.pk))
    assert client.get(url(version, "model.onnx")).status_code == 404


@pytest.mark.parametrize(("header", "expected"), [
    ("bytes=0-", (0, 99)), ("bytes=10-19", (10, 19)), ("bytes=90-500", (90, 99)),
    ("bytes=-10", (90, 99)), ("bytes=-500", (0, 99)), ("bytes=5-1", None),
    ("bytes=0-1,5-6", None), ("items=0-1", None), ("bytes=-", None),
])
def test_parse_range(header: str, expected: Any) -> None:
    assert parse_range(header, 100) == expected


@pytest.mark.parametrize("header", ["bytes=100-", "bytes=-0"])
def test_parse_range_unsatisfiable(header: str) -> None:
    with pytest.raises(Unsatisfiable):
        parse_range(header, 100)
