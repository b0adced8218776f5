"""Offline bundles (sampan.registry.offline): the API's answers without a real wheelhouse
build (those are in tests/e2e/test_offline_bundle.py), and the bundle's layout."""

from __future__ import annotations

import fcntl
import hashlib
import io
import json
import os
import platform
import subprocess
import sys
import tarfile
import threading
import time
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
    with offline.offline_bundle(setup["version"], target="linux-x86_64",
                                python="3.11") as cached:
        built_at = Path(cached.name).stat().st_ino
    again = api(setup["viewer"]).get(url(setup["project"], setup["version"]))
    assert b"".join(again.streaming_content) == body
    with offline.offline_bundle(setup["version"], target="linux-x86_64",
                                python="3.11") as served:
        assert served.name == cached.name and Path(served.name).stat().st_ino == built_at


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


def unpacked(setup: dict[str, Any], tmp_path: Path, **query: str) -> Path:
    """The bundle of ``setup``'s version unpacked under ``tmp_path/device``; its top folder."""
    with offline.offline_bundle(setup["version"], target=query.get("target", "linux-x86_64"),
                                python=query.get("python", "3.11")) as bundle:
        with tarfile.open(fileobj=bundle) as archive:
            archive.extractall(tmp_path / "device", filter="data")
    (top,) = (tmp_path / "device").iterdir()
    return top


def install(top: Path, tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["sh", str(top / "install.sh")], capture_output=True, text=True,
                          timeout=120, cwd=tmp_path,
                          env={"PATH": os.environ["PATH"], "HOME": str(tmp_path / "home"),
                               "PYTHON": sys.executable, "PIP_NO_INDEX": "1",
                               "SAMPAN_AGENT_PREFIX": str(tmp_path / "prefix"), **env})


def test_install_sh_refuses_unlisted_tampered_or_foreign_bundles_before_installing(
        setup: dict[str, Any], tmp_path: Path) -> None:
    """Each refusal comes before the virtual environment is made (the prefix stays absent),
    with CDPATH exported (it once made the bundle's folder two lines)."""
    mine = offline.this_machine()[0]
    other = next(target for target in offline.TARGETS if target != mine)
    fake_wheelhouse(setup["root"], mine)
    top = unpacked(setup, tmp_path, target=mine)
    (top / "wheels" / "sampan-9.9.9-py3-none-any.whl").write_bytes(b"not ours")
    refused = install(top, tmp_path, CDPATH=str(tmp_path))
    assert refused.returncode != 0
    assert "not part of this bundle: wheels/sampan-9.9.9-py3-none-any.whl" in refused.stderr
    (top / "wheels" / "sampan-9.9.9-py3-none-any.whl").unlink()
    (top / "model" / "model.onnx").write_bytes(b"tampered")
    refused = install(top, tmp_path)
    assert "model/model.onnx: checksum mismatch" in refused.stderr
    assert not (tmp_path / "prefix").exists()

    fake_wheelhouse(setup["root"], other, "3.11")
    foreign = unpacked(setup, tmp_path / "foreign", target=other)
    refused = install(foreign, tmp_path)
    assert f"this bundle is for {other}; this machine is Linux {platform.machine()}" in \
        refused.stderr
    assert not (tmp_path / "prefix").exists()


def test_install_sh_refuses_another_python_and_a_prefix_that_is_no_venv(
        setup: dict[str, Any], tmp_path: Path) -> None:
    fake_wheelhouse(setup["root"], python="3.13")
    top = unpacked(setup, tmp_path, python="3.13")
    if sys.version_info[:2] != (3, 13):
        refused = install(top, tmp_path)
        assert "this bundle is for Python 3.13" in refused.stderr
    fake_wheelhouse(setup["root"], python=f"{sys.version_info[0]}.{sys.version_info[1]}")
    mine = unpacked(setup, tmp_path / "mine",
                    python=f"{sys.version_info[0]}.{sys.version_info[1]}")
    (tmp_path / "prefix").mkdir()
    (tmp_path / "prefix" / "notes.txt").write_text("precious")
    refused = install(mine, tmp_path)
    assert "is not a virtual environment" in refused.stderr
    assert (tmp_path / "prefix" / "notes.txt").read_text() == "precious"


def test_no_platform_text_reaches_the_shell_script(setup: dict[str, Any], tmp_path: Path,
                                                   api: Any) -> None:
    """A name stored before the name rule (or through the admin) with a newline and shell:
    install.sh holds only its ASCII slug; README.txt shows it with the controls replaced."""
    from sampan.registry.models import RegisteredModel

    pwned = tmp_path / "pwned"
    fake_wheelhouse(setup["root"], python=f"{sys.version_info[0]}.{sys.version_info[1]}")
    evil = f"x\ntouch {pwned}; echo INJECTED >&2 #"
    RegisteredModel.objects.filter(pk=setup["version"].model_id).update(name=evil)
    setup["version"].refresh_from_db()
    top = unpacked(setup, tmp_path, python=f"{sys.version_info[0]}.{sys.version_info[1]}")
    script = (top / "install.sh").read_text()
    assert str(pwned) not in script and "INJECTED >&2" not in script
    install(top, tmp_path)  # fails at pip (the placeholder wheel) after every check ran
    assert not pwned.exists()
    readme = (top / "README.txt").read_text()
    assert "\ntouch" not in readme and "x\ufffdtouch" in readme


def test_a_key_retired_after_the_bundle_was_cached_is_refused_too(
        setup: dict[str, Any], api: Any) -> None:
    fake_wheelhouse(setup["root"])
    assert api(setup["viewer"]).get(url(setup["project"], setup["version"])).status_code == 200
    SigningKey.objects.update(state=SigningKeyState.RETIRED)
    assert api(setup["viewer"]).get(url(setup["project"], setup["version"])).status_code == 409


def test_wheel_names_that_are_paths_make_the_wheelhouse_unusable(setup: dict[str, Any],
                                                                 api: Any) -> None:
    folder = fake_wheelhouse(setup["root"])
    data = json.loads((folder / offline.BUILD_FILE).read_text())
    data["wheels"].append("../../keys/signing-key.pem")
    (folder / offline.BUILD_FILE).write_text(json.dumps(data))
    response = api(setup["viewer"]).get(url(setup["project"], setup["version"]))
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "wheelhouse_missing"


def test_the_bundle_cache_keeps_the_newest_within_its_size(
        setup: dict[str, Any], settings: Any, tmp_path: Path) -> None:
    """A rebuilt wheelhouse replaces its bundles; past SAMPAN_BUNDLE_CACHE_MAX_BYTES the least
    recently served bundle goes."""
    fake_wheelhouse(setup["root"])
    project = setup["project"]
    for i in range(2):
        (tmp_path / str(i)).mkdir()
    versions = [setup["version"]] + [register(project, "digits", tmp_path / str(i))
                                     for i in range(2)]
    for version in versions:
        offline.offline_bundle(version, target="linux-x86_64", python="3.11").close()
    cache = Path(settings.DATA_DIR) / "cache" / "bundles"
    sizes = sorted(p.stat().st_size for p in cache.glob("*.tar"))
    assert len(sizes) == 3
    settings.SAMPAN_BUNDLE_CACHE_MAX_BYTES = sizes[0] + sizes[1] + 1
    offline.offline_bundle(versions[0], target="linux-x86_64", python="3.11").close()  # served
    offline.offline_bundle(versions[2], target="linux-x86_64", python="3.11").close()
    house = offline.wheelhouses()[0]
    rebuilt = json.loads((house.path / offline.BUILD_FILE).read_text())
    rebuilt["build_id"] = "b2"
    (house.path / offline.BUILD_FILE).write_text(json.dumps(rebuilt))
    offline.offline_bundle(versions[2], target="linux-x86_64", python="3.11").close()
    left = sorted(p.name for p in cache.glob("*.tar"))
    assert left == sorted([f"{versions[0].pk}-linux-x86_64-py3.11-b1.tar",
                           f"{versions[2].pk}-linux-x86_64-py3.11-b2.tar"]), left


def test_head_builds_nothing_and_says_the_size_once_built(setup: dict[str, Any], api: Any,
                                                         monkeypatch: Any) -> None:
    """``curl -I`` / ``wget --spider`` on a bundle not built yet answered only after building
    the whole bundle; now HEAD checks what GET checks and builds nothing."""
    client = api(setup["viewer"])
    assert client.head(url(setup["project"], setup["version"])).status_code == 409  # no wheels
    fake_wheelhouse(setup["root"])
    built: list[Path] = []
    real_build = offline._build
    monkeypatch.setattr(offline, "_build", lambda cached, *a: (built.append(cached),
                                                               real_build(cached, *a)))
    head = client.head(url(setup["project"], setup["version"]))
    assert head.status_code == 200 and built == []
    assert head["Content-Type"] == "application/x-tar" and not head.has_header("Content-Length")
    body = b"".join(client.get(url(setup["project"], setup["version"])).streaming_content)
    assert len(built) == 1
    head = client.head(url(setup["project"], setup["version"]))
    assert head.status_code == 200 and int(head["Content-Length"]) == len(body)
    assert len(built) == 1


def test_head_does_not_wait_for_a_build_under_way(setup: dict[str, Any], api: Any) -> None:
    """HEAD took the build lock, so it waited for a whole build (minutes for a real
    wheelhouse) although it builds nothing (found by review)."""
    fake_wheelhouse(setup["root"])
    client = api(setup["viewer"])
    cache = offline.storage.cache_root() / "bundles"
    cache.mkdir(parents=True, exist_ok=True)
    house = offline.wheelhouse_get("linux-x86_64", "3.11")
    lock = cache / f".tmp-{setup['version'].pk}-{house.name}.lock"
    with lock.open("a") as handle:  # a GET building this bundle (another worker)
        fcntl.flock(handle, fcntl.LOCK_EX)
        release = threading.Timer(2.0, lambda: fcntl.flock(handle, fcntl.LOCK_UN))
        release.start()  # so that a HEAD that waits for it fails instead of hanging
        started = time.monotonic()
        head = client.head(url(setup["project"], setup["version"]))
        took = time.monotonic() - started
        release.join()
    assert head.status_code == 200
    assert took < 1.0, f"HEAD answered after {took:.1f} s: it waited for the build's lock"
