"""Offline bundles (sampan.registry.offline): the API's answers without a real wheelhouse
build (those are in tests/e2e/test_offline_bundle.py), and the bundle's layout."""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
from pathlib import Path
from typing import Any

import pytest

from sampan.registry import offline
from sampan.registry.models import SigningKey, SigningKeyState
from tests.platform.registry.test_package_download import register

pytestmark = pytest.mark.django_db


def fake_wheelhouse(root: Path, target: str = "linux-x86_64", python: str = "3.11") -> Path:
    """A wheelhouse folder as sampan_wheelhouse leaves it, with one small placeholder wheel
    (the layout is what is tested here; a real build is in tests/e2e)."""
    folder = root / offline.folder_name(target, python)
    folder.mkdir(parents=True)
    wheel = folder / "sampan-0.1.0-py3-none-any.whl"
    wheel.write_bytes(b"PK\x05\x06" + b"\x00" * 18)
    (folder / offline.BUILD_FILE).write_text(json.dumps({
        "target": target, "python": python, "build_id": "b1", "wheels": [wheel.name],
        "bytes": wheel.stat().st_size, "built_at": 1.0e9}))
    return folder


def url(project: Any, version: Any, query: str = "") -> str:
    return f"/api/v1/projects/{project.pk}/model-versions/{version.pk}/offline-bundle/{query}"


@pytest.fixture
def setup(project_with_roles: dict[str, Any], tmp_path: Path, settings: Any) -> dict[str, Any]:
    settings.SAMPAN_WHEELHOUSE = tmp_path / "wheelhouse"
    settings.DATA_DIR = tmp_path / "data"
    version = register(project_with_roles["project"], "猫狗 digits", tmp_path)
    return {**project_with_roles, "version": version, "root": tmp_path / "wheelhouse"}


def test_without_wheels_the_answer_names_the_command_that_prepares_them(
        setup: dict[str, Any], api: Any) -> None:
    response = api(setup["viewer"]).get(url(setup["project"], setup["version"],
                                            "?target=linux-aarch64&python=3.12"))
    assert response.status_code == 409
    error = response.json()["error"]
    assert error["code"] == "wheelhouse_missing"
    assert "sampan_wheelhouse --target linux-aarch64 --python 3.12" in error["message"]
    listed = api(setup["viewer"]).get(f"/api/v1/projects/{setup['project'].pk}/agent-wheelhouses/")
    assert listed.status_code == 200 and listed.json() == []


@pytest.mark.parametrize(("query", "field"), [
    ("?target=windows-amd64", "target"), ("?target=linux-x86_64&python=2.7", "python"),
    ("?python=../../etc", "python"), ("?target=linux-x86_64/../x", "target")])
def test_unknown_targets_are_refused_by_field(setup: dict[str, Any], api: Any, query: str,
                                             field: str) -> None:
    fake_wheelhouse(setup["root"])
    response = api(setup["viewer"]).get(url(setup["project"], setup["version"], query))
    assert response.status_code == 400
    assert response.json()["error"]["field"] == field


def test_other_projects_cannot_download_it(setup: dict[str, Any], api: Any) -> None:
    fake_wheelhouse(setup["root"])
    assert api(setup["outsider"]).get(url(setup["project"], setup["version"])).status_code == 404
    assert api().get(url(setup["project"], setup["version"])).status_code in (401, 403)


def test_the_bundle_holds_script_model_key_wheels_and_their_checksums(
        setup: dict[str, Any], api: Any) -> None:
    fake_wheelhouse(setup["root"])
    response = api(setup["viewer"]).get(url(setup["project"], setup["version"]))
    assert response.status_code == 200
    assert response["Content-Type"] == "application/x-tar"
    assert "-v1-offline-linux-x86_64-py3.11.tar" in response["Content-Disposition"]
    body = b"".join(response.streaming_content)
    with tarfile.open(fileobj=io.BytesIO(body)) as archive:
        members = {member.name: member for member in archive.getmembers()}
        top = "digits-v1-offline-linux-x86_64-py3.11"
        assert sorted(members) == sorted(f"{top}/{name}" for name in (
            "install.sh", "README.txt", "SHA256SUMS", "signing-key.pub", "model/manifest.json",
            "model/model.onnx", "wheels/sampan-0.1.0-py3-none-any.whl"))
        assert members[f"{top}/install.sh"].mode == 0o755
        assert all(member.isfile() for member in members.values())
        read = {name: archive.extractfile(member).read() for name, member in members.items()}
    manifest = json.loads(read[f"{top}/model/manifest.json"])
    key = SigningKey.objects.get(key_id=manifest["signature"]["key_id"])
    assert read[f"{top}/signing-key.pub"].decode().strip() == key.public_key
    sums = dict(reversed(line.split("  ", 1)) for line in
                read[f"{top}/SHA256SUMS"].decode().splitlines())
    assert set(sums) == {name.removeprefix(f"{top}/") for name in read} - {"SHA256SUMS"}
    for name, digest in sums.items():
        assert hashlib.sha256(read[f"{top}/{name}"]).hexdigest() == digest, name
    script = read[f"{top}/install.sh"].decode()
    assert "--no-index" in script and "install-model" in script and "(3, 11)" in script

    # served from the cache the second time: the same file, not built again
    cached = offline.offline_bundle(setup["version"], target="linux-x86_64", python="3.11")
    again = api(setup["viewer"]).get(url(setup["project"], setup["version"]))
    assert b"".join(again.streaming_content) == body
    assert offline.offline_bundle(setup["version"], target="linux-x86_64",
                                  python="3.11") == cached


def test_a_manifest_signed_by_a_retired_key_is_not_bundled(setup: dict[str, Any],
                                                          api: Any) -> None:
    fake_wheelhouse(setup["root"])
    SigningKey.objects.update(state=SigningKeyState.RETIRED)
    response = api(setup["viewer"]).get(url(setup["project"], setup["version"]))
    assert response.status_code == 409
    assert "retired" in response.json()["error"]["message"]


def test_broken_or_half_built_wheelhouse_folders_are_not_offered(setup: dict[str, Any],
                                                                api: Any) -> None:
    fake_wheelhouse(setup["root"])
    (setup["root"] / "linux-aarch64-py3.12").mkdir()  # no wheelhouse.json: not finished
    (setup["root"] / ".linux-aarch64-py3.13.1234").mkdir()  # a build in progress
    bad = fake_wheelhouse(setup["root"], "linux-aarch64", "3.11")
    (bad / offline.BUILD_FILE).write_text("{not json")
    listed = api(setup["viewer"]).get(f"/api/v1/projects/{setup['project'].pk}/agent-wheelhouses/")
    assert [(h["target"], h["python"], h["wheels"]) for h in listed.json()] == [
        ("linux-x86_64", "3.11", 1)]


def test_a_failed_wheelhouse_build_keeps_the_previous_one(setup: dict[str, Any],
                                                         tmp_path: Path) -> None:
    """pip failing (here: a requirement no index has) raises Conflict with pip's reason and
    leaves the wheelhouse that was there, and no temporary folder."""
    before = fake_wheelhouse(setup["root"])
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "pyproject.toml").write_text(
        '[project]\nname = "x"\nversion = "0"\n[project.optional-dependencies]\n'
        'edge = ["sampan-no-such-distribution==0.0.1"]\n')
    with pytest.raises(offline.Conflict) as raised:
        offline.wheelhouse_build(target="linux-x86_64", python="3.11", repo=repo)
    assert "pip" in raised.value.message
    assert sorted(p.name for p in setup["root"].iterdir()) == [before.name]
    assert [h.build_id for h in offline.wheelhouses()] == ["b1"]
