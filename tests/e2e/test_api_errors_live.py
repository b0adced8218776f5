"""Bad input against the real web server process (the ASGI server of the dev stack, SQLite,
Redis): JSON errors where Django used to answer HTML, and package downloads under Unicode names
as ``requests`` and ``curl -OJ`` read them."""

from __future__ import annotations

import email
import email.policy
import io
import json
import shutil
import subprocess
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from sampan.devstack.stack import Stack
from tests.database import stack_database_url

SEED = r'''
import hashlib, json, uuid
from pathlib import Path
from django.conf import settings
from sampan.accounts.services import api_token_create, project_create, user_create
from sampan.registry.models import ModelVersion, RegisteredModel
user = user_create(username="ana", password="pw-ana-1")
project = project_create(user=user, name="P")
out = {"token": api_token_create(user=user, name="t").secret, "project": str(project.pk),
       "versions": {}}
# the second name predates the name rule: stored as it was, it must still download
for name in ['猫狗识别 "v2"', "line\nbreak"]:
    model = RegisteredModel.objects.create(project=project, name=name,
                                           task_type="image_classification")
    version_id = uuid.uuid4()
    package_dir = f"models/{model.pk}/{version_id}"
    folder = Path(settings.MEDIA_ROOT) / package_dir
    folder.mkdir(parents=True)
    (folder / "model.onnx").write_bytes(b"onnx-bytes")
    (folder / "manifest.json").write_text("{}")
    ModelVersion.objects.create(pk=version_id, project=project, model=model, version=1,
                                task_type="image_classification", labels=[], manifest={},
                                package_dir=package_dir, model_size=10,
                                model_sha256=hashlib.sha256(b"onnx-bytes").hexdigest())
    out["versions"][name] = str(version_id)
print(json.dumps(out))
'''


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    with Stack(data_dir=tmp_path_factory.mktemp("live"),
               database_url=stack_database_url()) as stack:
        stack.start(worker=False)
        seeded = json.loads(stack.manage("shell", "-c", SEED).stdout.strip().splitlines()[-1])
        session = requests.Session()
        session.headers["Authorization"] = f"Bearer {seeded['token']}"
        yield {"url": stack.url, "session": session, **seeded}


def error_of(response: requests.Response) -> dict[str, Any]:
    assert response.headers["Content-Type"] == "application/json", response.text[:200]
    return response.json()["error"]


def test_101_files_in_one_request(server: dict[str, Any]) -> None:
    session, base = server["session"], f"{server['url']}/api/v1/projects/{server['project']}"
    dataset = session.post(f"{base}/datasets/", json={"name": "d"}).json()
    files = [("files", (f"{i}.png", b"x", "image/png")) for i in range(101)]

    response = session.post(f"{base}/datasets/{dataset['id']}/imports/", files=files)

    assert response.status_code == 400
    body = error_of(response)
    assert (body["code"], body["field"]) == ("too_many_files", "files")
    assert body["details"] == {"setting": "DATA_UPLOAD_MAX_NUMBER_FILES", "limit": 100}


def test_a_host_outside_the_allowed_hosts(server: dict[str, Any]) -> None:
    response = requests.get(f"{server['url']}/api/v1/projects/",
                            headers={"Host": "evil.example"}, timeout=10)
    assert response.status_code == 400
    assert error_of(response)["code"] == "disallowed_host"
    assert response.headers["X-Request-ID"]


def test_an_unknown_api_path(server: dict[str, Any]) -> None:
    response = server["session"].get(f"{server['url']}/api/v1/nowhere/")
    assert (response.status_code, error_of(response)["code"]) == (404, "not_found")


def filename_of(response: requests.Response) -> str | None:
    """The download's file name as Python's email package parses Content-Disposition."""
    header = response.headers["Content-Disposition"]
    message = email.message_from_string(f"Content-Disposition: {header}\n\n",
                                        policy=email.policy.default)
    return message.get_filename()


def package_url(server: dict[str, Any], name: str) -> str:
    return (f"{server['url']}/api/v1/projects/{server['project']}/model-versions/"
            f"{server['versions'][name]}/package/")


def test_a_chinese_model_name_downloads_under_that_name(server: dict[str, Any]) -> None:
    response = server["session"].get(package_url(server, '猫狗识别 "v2"'))

    assert response.status_code == 200
    assert filename_of(response) == '猫狗识别 "v2"-v1.zip'
    assert zipfile.ZipFile(io.BytesIO(response.content)).read("model.onnx") == b"onnx-bytes"


def test_curl_remote_header_name_saves_under_the_ascii_fallback(server: dict[str, Any],
                                                                 tmp_path: Path) -> None:
    """curl -OJ reads only ``filename=`` (not ``filename*``): it gets the ASCII fallback."""
    folder = tmp_path / "curl"
    folder.mkdir()
    curl = shutil.which("curl")
    assert curl, "curl is part of the test environment (Debian's curl package)"
    subprocess.run([curl, "-sS", "-f", "-O", "-J", "-H",
                    f"Authorization: Bearer {server['session'].headers['Authorization'][7:]}",
                    package_url(server, '猫狗识别 "v2"')], cwd=folder, check=True, timeout=60)
    assert [p.name for p in folder.iterdir()] == ["model-v2-v1.zip"]
    assert zipfile.ZipFile(folder / "model-v2-v1.zip").read("model.onnx") == b"onnx-bytes"


def test_a_newline_in_an_old_model_name_still_downloads(server: dict[str, Any]) -> None:
    response = server["session"].get(package_url(server, "line\nbreak"))
    assert response.status_code == 200
    assert filename_of(response) == "line\ufffdbreak-v1.zip"
