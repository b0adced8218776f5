"""The offline bundle installs and serves on a machine that never reaches the platform: a real
wheelhouse (``manage.py sampan_wheelhouse``'s code, pip download from PyPI), the bundle from
the API, ``install.sh`` into a fresh virtual environment with every index and proxy blocked,
and the installed agent answering predictions with no platform to talk to."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import tarfile
import time
from pathlib import Path
from typing import Any

import pytest
import requests
from PIL import Image

from sampan.registry import offline
from tests.edge_agent.test_agent_process import free_port
from tests.platform.registry.test_package_download import register

pytestmark = pytest.mark.django_db

#: every way out blocked: no index, a proxy that refuses connections, no pip configuration
NO_NETWORK = {"PIP_NO_INDEX": "1", "PIP_CONFIG_FILE": os.devnull, "http_proxy": "http://127.0.0.1:9",
              "https_proxy": "http://127.0.0.1:9", "HTTP_PROXY": "http://127.0.0.1:9",
              "HTTPS_PROXY": "http://127.0.0.1:9", "no_proxy": "", "NO_PROXY": ""}


@pytest.fixture(scope="module")
def wheelhouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from django.test import override_settings

    root = tmp_path_factory.mktemp("wheelhouse")
    target, python = offline.this_machine()
    with override_settings(SAMPAN_WHEELHOUSE=root):
        offline.wheelhouse_build(target=target, python=python)
    return root


def png() -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (32, 24), (200, 40, 90)).save(buffer, format="PNG")
    return buffer.getvalue()


def test_bundle_installs_and_serves_without_the_platform(
        wheelhouse: Path, project_with_roles: dict[str, Any], api: Any, tmp_path: Path,
        settings: Any) -> None:
    settings.SAMPAN_WHEELHOUSE = wheelhouse
    settings.DATA_DIR = tmp_path / "data"
    target, python = offline.this_machine()
    project = project_with_roles["project"]
    version = register(project, "digits", tmp_path)

    response = api(project_with_roles["viewer"]).get(
        f"/api/v1/projects/{project.pk}/model-versions/{version.pk}/offline-bundle/"
        f"?target={target}&python={python}")
    assert response.status_code == 200, response.content[:500]
    device = tmp_path / "device"  # what the device's owner unpacks
    with tarfile.open(fileobj=io.BytesIO(b"".join(response.streaming_content))) as archive:
        archive.extractall(device, filter="data")
    (bundle,) = device.iterdir()
    assert any(p.name.startswith("onnxruntime-") for p in (bundle / "wheels").iterdir())

    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path / "home"), **NO_NETWORK,
           "PYTHON": sys.executable, "SAMPAN_AGENT_PREFIX": str(tmp_path / "agent-env"),
           "SAMPAN_AGENT_HOME": str(tmp_path / "agent-home")}
    installed = subprocess.run(["sh", str(bundle / "install.sh")], cwd=tmp_path, env=env,
                               capture_output=True, text=True, timeout=300)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    assert "Serve it on this machine:" in installed.stdout
    agent = tmp_path / "agent-env" / "bin" / "sampan-agent"
    # the agent runs from the bundle's wheels, not from this checkout
    where = subprocess.run([str(tmp_path / "agent-env" / "bin" / "python"), "-c",
                            "import edge_agent; print(edge_agent.__file__)"],
                           cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert str(tmp_path / "agent-env") in where.stdout, where

    port = free_port()
    log_path = tmp_path / "agent.log"
    with open(log_path, "wb") as log:
        process = subprocess.Popen([str(agent), "run", "--port", str(port)], cwd=tmp_path,
                                   env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while True:
            assert process.poll() is None, log_path.read_text()
            try:
                health = requests.get(f"http://127.0.0.1:{port}/healthz", timeout=2).json()
                if health["status"] == "ok":
                    break
            except requests.ConnectionError:
                pass
            assert time.monotonic() < deadline, log_path.read_text()
            time.sleep(0.2)
        answer = requests.post(f"http://127.0.0.1:{port}/v1/predict", data=png(), timeout=30)
        assert answer.status_code == 200, answer.text
        assert answer.json()["model_version_id"] == str(version.pk)
        assert answer.json()["predictions"][0]["label"] in ("cat", "dog")
    finally:
        process.terminate()
        process.wait(timeout=20)
    assert "standalone" in log_path.read_text()
