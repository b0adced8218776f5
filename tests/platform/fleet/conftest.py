"""Fixtures for the fleet tests: users and projects with roles, real model packages on disk
under a temporary MEDIA_ROOT, enrolled devices, and API clients (user and device)."""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from rest_framework.test import APIClient

from sampan.accounts.models import Membership, Project
from sampan.accounts.services import project_create, user_create
from sampan.fleet import services
from sampan.fleet.models import Device
from sampan.registry.models import ModelVersion, RegisteredModel
from tests.platform.heartbeats import steady_heartbeat


@pytest.fixture(autouse=True)
def _device_timing(settings: Any) -> None:
    # MEDIA_ROOT, the keys folder and a fast password hasher come from tests/conftest.py.
    settings.SAMPAN_DEVICE_HEARTBEAT_INTERVAL_S = 5.0
    settings.SAMPAN_DEVICE_OFFLINE_AFTER_S = 30.0


@pytest.fixture
def owner(db: Any) -> Any:
    return user_create(username="alice", password="pw-alice")


@pytest.fixture
def project(owner: Any) -> Project:
    return project_create(user=owner, name="Factory line")


@pytest.fixture
def member(project: Project) -> Callable[[str, str], Any]:
    def make(username: str, role: str) -> Any:
        user = user_create(username=username, password="pw")
        Membership.objects.create(project=project, user=user, role=role)
        return user
    return make


@pytest.fixture
def owner_api(owner: Any) -> APIClient:
    """An API client authenticated as the project's owner."""
    client = APIClient()
    client.force_authenticate(owner)
    return client


@pytest.fixture
def model_version(project: Project) -> Callable[..., ModelVersion]:
    """A registered model version with a real package dir (model.onnx + manifest.json)."""
    counter = iter(range(1, 1000))

    def make(content: bytes = b"onnx-bytes " * 100, target: Project | None = None) -> ModelVersion:
        target = target or project
        model, _ = RegisteredModel.objects.get_or_create(
            project=target, name="digits", defaults={"task_type": "image_classification"})
        version_id = uuid.uuid4()
        number = next(counter)
        package_dir = f"models/{model.pk}/{version_id}"
        sha256 = hashlib.sha256(content).hexdigest()
        manifest = {"schema": "sampan.model-package/1",
                    "model": {"id": str(model.pk), "name": "digits", "version": number,
                              "version_id": str(version_id)},
                    "files": {"model.onnx": {"sha256": sha256, "size": len(content)}}}
        from django.conf import settings
        folder = Path(settings.MEDIA_ROOT) / package_dir
        folder.mkdir(parents=True)
        (folder / "model.onnx").write_bytes(content)
        (folder / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
        return ModelVersion.objects.create(
            pk=version_id, project=target, model=model, version=number,
            task_type="image_classification", labels=["0", "1"], manifest=manifest,
            package_dir=package_dir, model_sha256=sha256, model_size=len(content))
    return make


@pytest.fixture
def enrolled(project: Project, owner: Any) -> Callable[..., tuple[Device, APIClient]]:
    """Enroll a device through the device API; returns it and a client sending its credential."""
    def make(name: str = "camera-1", target: Project | None = None) -> tuple[Device, APIClient]:
        issued = services.enrollment_token_create(project=target or project, user=owner,
                                                  expires_in=timedelta(hours=1))
        response = APIClient().post("/api/device/v1/enroll",
                                    {"token": issued.secret, "name": name,
                                     "info": {"arch": "aarch64"}}, format="json")
        assert response.status_code == 201, response.content
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Device {response.json()['credential']}")
        return Device.objects.get(pk=response.json()["device_id"]), client
    return make


@pytest.fixture
def heartbeat() -> Callable[..., Any]:
    """POST a heartbeat in the contract's format; keyword arguments replace fields."""
    def send(client: APIClient, **fields: Any) -> Any:
        return client.post("/api/device/v1/heartbeat", steady_heartbeat(**fields), format="json")
    return send
