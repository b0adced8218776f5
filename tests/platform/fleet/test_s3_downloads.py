"""Model packages in the bucket (SAMPAN_STORAGE=s3, a moto S3 server process): registration
writes them there, devices and browsers download them from presigned URLs (never through the
web process), the real agent client resumes with HTTP Range and sends the bucket no credential,
and a URL without its signature is refused."""

from __future__ import annotations

import io
import json
import os
import zipfile
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import requests

from edge_agent.client import DeviceClient
from sampan.core.disposition import content_disposition
from sampan.fleet.services import deployment_create
from sampan.registry.services import model_version_register
from tests.fixtures.registered import PREPROCESSING



def _content() -> bytes:
    """A real ONNX classifier (registration runs the device's load test on it) of ~300 KiB, its
    bytes almost all random (an unused initializer), so every offset is distinguishable."""
    import tempfile

    import onnx
    from onnx import TensorProto

    from tests.platform.training.test_training_services import tiny_onnx

    with tempfile.TemporaryDirectory() as scratch:
        model = onnx.load(tiny_onnx(Path(scratch) / "m.onnx"))
    padding = onnx.TensorProto(name="padding", data_type=TensorProto.UINT8,
                               dims=[300 * 1024], raw_data=os.urandom(300 * 1024))
    model.graph.initializer.append(padding)
    return model.SerializeToString()


CONTENT = _content()


@pytest.fixture
def registered(s3: Any, project: Any, tmp_path: Path) -> Any:
    onnx_path = tmp_path / "model.onnx"
    onnx_path.write_bytes(CONTENT)
    return model_version_register(
        project=project, model_name='猫狗识别 "v2"', task_type="image_classification",
        labels=["cat", "dog"], preprocessing=PREPROCESSING, onnx_path=onnx_path,
        input_shape=["N", 3, 4, 4], metrics={}, lineage={}, onnx_info={}, pretrained=False)


def test_registration_writes_the_package_to_the_bucket(s3: Any, registered: Any) -> None:
    prefix = registered.package_dir
    # the package zip too, made by the registering host (a worker) from its own files, so that
    # the web server never downloads a model to zip it
    assert s3.keys("models/") == [f"{prefix}/manifest.json", f"{prefix}/model.onnx",
                                  f"{prefix}/package.zip"]
    stored = s3.client().get_object(Bucket=s3.bucket, Key=f"{prefix}/manifest.json")
    assert json.loads(stored["Body"].read()) == registered.manifest
    package = s3.client().get_object(Bucket=s3.bucket, Key=f"{prefix}/package.zip")
    with zipfile.ZipFile(io.BytesIO(package["Body"].read())) as archive:
        assert archive.read("model.onnx") == CONTENT
        assert json.loads(archive.read("manifest.json")) == registered.manifest


def test_a_missing_package_zip_is_made_on_download_and_the_web_host_keeps_no_copy(
        s3: Any, registered: Any, owner_api: Any, project: Any, settings: Any) -> None:
    name = f"{registered.package_dir}/package.zip"
    s3.client().delete_object(Bucket=s3.bucket, Key=name)  # e.g. a version registered before
    response = owner_api.get(f"/api/v1/projects/{project.pk}/model-versions/{registered.pk}"
                             "/package/")
    assert response.status_code == 302
    with zipfile.ZipFile(io.BytesIO(requests.get(response["Location"], timeout=10).content)
                         ) as archive:
        assert archive.read("model.onnx") == CONTENT
    assert name in s3.keys("models/")
    left = [p for p in Path(settings.DATA_DIR).rglob("*")
            if p.is_file() and registered.package_dir.split("/")[-1] in str(p)]
    assert left == []


def test_a_device_downloads_from_a_presigned_url_with_range_resume_and_no_credential(
        s3: Any, registered: Any, project: Any, owner: Any, enrolled: Any, heartbeat: Any,
        tmp_path: Path) -> None:
    device, client = enrolled("cam")
    deployment_create(project=project, user=owner, model_version_id=registered.pk,
                      device_ids=[device.pk])
    desired = heartbeat(client).json()["desired"]
    artifact_url = desired["artifact_url"]
    assert urlsplit(artifact_url)[:2] == urlsplit(s3.endpoint_url)[:2]  # the bucket, not web
    assert "X-Amz-Signature=" in artifact_url
    # the manifest stays on the web process (small, and the device API authenticates it)
    manifest = client.get(urlsplit(desired["manifest_url"]).path)
    assert manifest.status_code == 200 and json.loads(manifest.content) == registered.manifest

    agent = DeviceClient("http://testserver", "spd_secret-credential")
    assert agent._headers(artifact_url) == {}  # the credential never leaves the web's origin
    part = tmp_path / "model.part"
    # a partial download whose first bytes are NOT the file's: only a Range resume keeps them
    part.write_bytes(b"\0" * 100_000)
    agent.download(artifact_url, part, len(CONTENT))
    assert part.read_bytes() == b"\0" * 100_000 + CONTENT[100_000:]
    part.unlink()
    agent.download(artifact_url, part, len(CONTENT))
    assert part.read_bytes() == CONTENT

    # an agent holding the web's artifact URL is sent to the bucket
    redirect = client.get(f"/api/device/v1/model-versions/{registered.pk}/model.onnx")
    assert redirect.status_code == 302
    assert urlsplit(redirect["Location"])[:2] == urlsplit(s3.endpoint_url)[:2]


def test_a_presigned_url_is_refused_without_its_signature(s3: Any, registered: Any,
                                                          owner_api: Any, project: Any) -> None:
    response = owner_api.get(f"/api/v1/projects/{project.pk}/model-versions/{registered.pk}"
                             "/files/model.onnx")
    assert response.status_code == 302
    signed = response["Location"]
    assert requests.get(signed, timeout=10).content == CONTENT
    unsigned = requests.get(signed.split("?")[0], timeout=10)
    assert unsigned.status_code == 403 and b"AccessDenied" in unsigned.content
    tampered = requests.get(signed.replace("X-Amz-Signature=", "X-Amz-Signature=0"), timeout=10)
    assert tampered.status_code == 403 and b"SignatureDoesNotMatch" in tampered.content
    other_key = signed.replace(registered.package_dir.split("/")[-1], "0" * 32)
    assert requests.get(other_key, timeout=10).status_code == 403


def test_the_package_zip_downloads_from_the_bucket_under_the_models_name(
        s3: Any, registered: Any, owner_api: Any, project: Any) -> None:
    response = owner_api.get(f"/api/v1/projects/{project.pk}/model-versions/{registered.pk}"
                             "/package/")
    assert response.status_code == 302
    download = requests.get(response["Location"], timeout=10)
    assert download.status_code == 200
    assert download.headers["Content-Disposition"] == content_disposition(
        '猫狗识别 "v2"-v1.zip', default="model")
    assert download.headers["Content-Type"] == "application/zip"
    with zipfile.ZipFile(io.BytesIO(download.content)) as archive:
        assert archive.read("model.onnx") == CONTENT
        assert json.loads(archive.read("manifest.json")) == registered.manifest
    assert f"{registered.package_dir}/package.zip" in s3.keys("models/")
    # the file download names the file too
    onnx = owner_api.get(f"/api/v1/projects/{project.pk}/model-versions/{registered.pk}"
                         "/files/manifest.json")
    assert requests.get(onnx["Location"], timeout=10).headers["Content-Disposition"] == (
        'attachment; filename="manifest.json"')


def test_a_benchmark_package_in_the_bucket_is_fetched_from_presigned_urls(
        s3: Any, project: Any, enrolled: Any, heartbeat: Any, tmp_path: Path) -> None:
    from sampan.core import storage
    from sampan.fleet import benchmarks

    onnx_path = tmp_path / "candidate.onnx"
    onnx_path.write_bytes(CONTENT)
    package = benchmarks.benchmark_package_store(project=project, onnx_path=onnx_path,
                                                 manifest={"labels": ["cat", "dog"]})
    assert s3.keys("benchmarks/") == [f"{package.package_dir}/manifest.json",
                                      f"{package.package_dir}/model.onnx"]
    image = storage.save_bytes("benchmark-inputs/cat.png", b"\x89PNG cat")
    device, client = enrolled("cam")
    benchmark = benchmarks.device_benchmark_create(
        device=device, package_dir=package.package_dir, manifest=package.manifest,
        model_sha256=package.model_sha256, model_size=package.model_size, inputs=[image])
    (listed,) = heartbeat(client).json()["benchmarks"]
    artifact_url = listed["artifact_url"]
    assert urlsplit(artifact_url)[:2] == urlsplit(s3.endpoint_url)[:2]  # the bucket, not web
    assert "X-Amz-Signature=" in artifact_url
    redirect = client.get(f"/api/device/v1/benchmarks/{benchmark.pk}/model.onnx")
    assert redirect.status_code == 302
    assert urlsplit(redirect["Location"])[:2] == urlsplit(s3.endpoint_url)[:2]
    agent = DeviceClient("http://testserver", "unused")
    part = tmp_path / "model.onnx"
    part.write_bytes(CONTENT[:1000])  # resumed with HTTP Range from the bucket
    agent.download(artifact_url, part, len(CONTENT))
    assert part.read_bytes() == CONTENT
    manifest = client.get(urlsplit(listed["manifest_url"]).path)
    assert manifest.status_code == 200 and manifest.json() == package.manifest
    assert client.get(urlsplit(listed["inputs"][0]).path).content == b"\x89PNG cat"
