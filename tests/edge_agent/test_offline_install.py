"""``sampan-agent install-model`` (air-gapped install of a signed package, as a directory or as
the platform's package zip) and the standalone ``run`` it sets up: real packages, the real CLI
and the real agent process, which must open no outbound connection."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest
import requests

from edge_agent.cli import main
from edge_agent.home import AgentConfig, AgentHome
from edge_agent.offline import MANIFEST_LIMIT
from sampan.devstack.stack import wait_until
from tests.edge_agent.conftest import (
    ModelPackage,
    SigningKey,
    build_classifier,
    make_package,
    new_signing_key,
)
from tests.edge_agent.test_agent_process import REPO, agent_command, free_port, running_agent

#: imported by every Python process the tests start (PYTHONPATH): an outbound connection
#: is reported on stderr and refused, so a standalone agent that tried to reach a platform
#: shows it in its log (the server's own listening socket accepts, it never connects)
GUARD = """\
import socket, sys

def _refuse(self, address, *args):
    print(f"OUTBOUND CONNECTION to {address!r}", file=sys.stderr, flush=True)
    raise OSError("outbound connections are refused in this test")

socket.socket.connect = _refuse
socket.socket.connect_ex = _refuse
"""


def write_dir(package: ModelPackage, folder: Path) -> Path:
    """``folder`` holding the package as the offline bundle's ``model/`` does."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "manifest.json").write_text(json.dumps(package.manifest), encoding="utf-8")
    (folder / "model.onnx").write_bytes(package.model_bytes)
    return folder


def write_zip(package: ModelPackage, path: Path,
              members: dict[str, bytes] | None = None) -> Path:
    """The package as the platform's "Download package" zip (deflated, files at the root), or
    a zip of ``members`` (name -> bytes) instead."""
    if members is None:
        members = {"manifest.json": json.dumps(package.manifest).encode(),
                   "model.onnx": package.model_bytes}
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return path


def key_file(key: SigningKey, path: Path) -> Path:
    path.write_text(key.public_b64 + "\n", encoding="ascii")
    return path


def install(source: Path, home: Path, trust: Path | None = None) -> subprocess.CompletedProcess:
    """The real CLI in its own process, as the bundle's install.sh runs it."""
    extra = ["--trust-key-file", str(trust)] if trust is not None else []
    return subprocess.run(agent_command("install-model", str(source), "--home", str(home),
                                        *extra),
                          cwd=REPO, capture_output=True, text=True, timeout=120)


def listing(root: Path) -> dict[str, str]:
    """Every path under ``root`` -> its sha256 (files) or "dir"; {} when it does not exist."""
    if not root.exists():
        return {}
    return {str(path.relative_to(root)): (hashlib.sha256(path.read_bytes()).hexdigest()
                                          if path.is_file() else "dir")
            for path in sorted(root.rglob("*"))}


@pytest.fixture
def no_network(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    guard = tmp_path / "guard"
    guard.mkdir()
    (guard / "sitecustomize.py").write_text(GUARD, encoding="utf-8")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        [str(guard), *filter(None, [os.environ.get("PYTHONPATH")])]))
    # the guard works: a process that does connect says so
    probe = subprocess.run([sys.executable, "-c", "import socket\ntry:\n    socket."
                            "create_connection(('127.0.0.1', 9), timeout=5)\nexcept OSError:\n"
                            "    pass"], capture_output=True, text=True, timeout=60)
    assert "OUTBOUND CONNECTION to ('127.0.0.1', 9)" in probe.stderr, probe.stderr


@pytest.mark.parametrize("form", ["dir", "zip"])
def test_an_offline_install_serves_standalone_without_any_network(
    tmp_path: Path, no_network: None, signing_key: SigningKey, package_factory, png, form: str
) -> None:
    package = package_factory()
    source = (write_dir(package, tmp_path / "bundle" / "model") if form == "dir"
              else write_zip(package, tmp_path / "package.zip"))
    home = tmp_path / "agent"
    result = install(source, home, key_file(signing_key, tmp_path / "signing-key.pub"))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == (f"installed model colours v1 ({package.version_id}); "
                                     f"run: sampan-agent run --home {home}")
    assert "OUTBOUND CONNECTION" not in result.stderr

    config = json.loads((home / "agent.json").read_text())
    assert config["server_url"] == "" and config["credential"] == ""
    assert config["device_id"].startswith("offline-") and len(config["device_id"]) == 20
    assert config["trusted_signing_keys"] == [signing_key.public_b64]
    assert config["signing_public_key"] == signing_key.public_b64
    assert (home / "agent.json").stat().st_mode & 0o777 == 0o600
    state = json.loads((home / "state.json").read_text())
    assert (state["current"], state["previous"]) == (package.version_id, None)
    assert sorted(p.name for p in (home / "models").iterdir()) == [package.version_id]
    assert (home / "models" / package.version_id / "model.onnx").read_bytes() == \
        package.model_bytes

    port, log_path = free_port(), tmp_path / "agent.log"
    base = f"http://127.0.0.1:{port}"
    with running_agent(home, port, log_path):
        health = wait_until(lambda: requests.get(f"{base}/healthz", timeout=5).json(),
                            timeout_s=60, what="the standalone agent's /healthz")
        assert health == {"status": "ok", "model_version_id": package.version_id}
        reply = requests.post(f"{base}/v1/predict?top_k=2", data=png((0, 0, 255)), timeout=10)
        assert reply.status_code == 200, reply.text
        assert reply.json()["model_version_id"] == package.version_id
        assert [p["label"] for p in reply.json()["predictions"]] == ["blue", "red"]
    # no platform: not one heartbeat was tried (not even to an empty URL), nothing connected
    log = log_path.read_text()
    assert "OUTBOUND CONNECTION" not in log, log
    assert "heartbeat" not in log.lower(), log
    assert f"standalone: serving {package.version_id}; no platform (offline install)" in log


def test_a_second_version_keeps_the_first_for_rollback(
    tmp_path: Path, signing_key: SigningKey, package_factory, capsys: pytest.CaptureFixture[str]
) -> None:
    home, trust = tmp_path / "agent", key_file(signing_key, tmp_path / "signing-key.pub")
    first, second, third = (package_factory(version=n) for n in (1, 2, 3))
    assert install(write_zip(first, tmp_path / "1.zip"), home, trust).returncode == 0
    config = (home / "agent.json").read_bytes()
    # enrolling it needs --force (refused before any network)
    assert main(["enroll", "--url", "http://127.0.0.1:9", "--token", "t", "--home",
                 str(home)]) == 1
    assert "installed offline, with no platform" in capsys.readouterr().err

    # the bundle's install.sh passes the key again: accepted, as agent.json already trusts it
    result = install(write_dir(second, tmp_path / "2"), home, trust)
    assert result.returncode == 0, result.stderr
    assert f"installed model colours v2 ({second.version_id})" in result.stdout
    state = json.loads((home / "state.json").read_text())
    assert (state["current"], state["previous"]) == (second.version_id, first.version_id)
    assert (home / "agent.json").read_bytes() == config  # device id and keys kept

    # the same version again (here without the key file): reinstalled, previous kept
    assert install(write_dir(second, tmp_path / "2"), home).returncode == 0
    state = json.loads((home / "state.json").read_text())
    assert (state["current"], state["previous"]) == (second.version_id, first.version_id)

    # a third: the first is pruned (current and previous stay, as deployments keep them)
    assert install(write_dir(third, tmp_path / "3"), home).returncode == 0
    state = json.loads((home / "state.json").read_text())
    assert (state["current"], state["previous"]) == (third.version_id, second.version_id)
    assert sorted(p.name for p in (home / "models").iterdir()) == sorted(
        [second.version_id, third.version_id])


def _tampered(package: ModelPackage, **manifest: object) -> ModelPackage:
    return ModelPackage(package.version_id, {**package.manifest, **manifest},
                        package.model_bytes)


def _with_model(package: ModelPackage, model_bytes: bytes) -> ModelPackage:
    return ModelPackage(package.version_id, package.manifest, model_bytes)


#: the byte size of the packages' model (the conftest's tiny classifier)
MODEL_SIZE = len(build_classifier())

#: name -> (the bad source, made from a good package, the trusted key and a folder; what the
#: one-line message must say)
BAD_SOURCES: dict[str, tuple[Callable[[ModelPackage, SigningKey, Path], Path], str]] = {
    "not a zip": (lambda p, k, d: _write(d / "package.zip", b"PK\x03\x04 not really"),
                  "package.zip: not a package directory or a readable zip"),
    "truncated zip": (lambda p, k, d: _write(d / "cut.zip", write_zip(
        p, d / "whole.zip").read_bytes()[:-200]), "cut.zip: not a package directory"),
    "path traversal": (lambda p, k, d: write_zip(p, d / "evil.zip", {
        "manifest.json": json.dumps(p.manifest).encode(), "../model.onnx": p.model_bytes}),
        "member '../model.onnx': not a plain file at the zip's root"),
    "nested dirs": (lambda p, k, d: write_zip(p, d / "nested.zip", {
        "package/manifest.json": json.dumps(p.manifest).encode(),
        "package/model.onnx": p.model_bytes}),
        "member 'package/manifest.json': not a plain file at the zip's root"),
    "extra member": (lambda p, k, d: write_zip(p, d / "extra.zip", {
        "manifest.json": json.dumps(p.manifest).encode(), "model.onnx": p.model_bytes,
        "run.sh": b"#!/bin/sh\n"}), "member 'run.sh' is not a file of the signed manifest"),
    "zip without the model": (lambda p, k, d: write_zip(p, d / "half.zip", {
        "manifest.json": json.dumps(p.manifest).encode()}),
        "half.zip: model.onnx: missing from the zip"),
    "dir without the model": (lambda p, k, d: _unlink(write_dir(p, d / "pkg"), "model.onnx"),
                              "pkg/model.onnx: missing"),
    "dir without the manifest": (lambda p, k, d: _unlink(write_dir(p, d / "pkg"),
                                                         "manifest.json"),
                                 "pkg/manifest.json: missing"),
    "manifest not JSON": (lambda p, k, d: _write(write_dir(p, d / "pkg") / "manifest.json",
                                                 b"{nope").parent,
                          "pkg/manifest.json: not JSON"),
    "huge manifest": (lambda p, k, d: write_zip(p, d / "big.zip", {
        "manifest.json": b" " * (MANIFEST_LIMIT + 1), "model.onnx": p.model_bytes}),
        f"big.zip: manifest.json: {MANIFEST_LIMIT + 1} bytes, over the {MANIFEST_LIMIT} bytes"),
    "signed by another key": (lambda p, k, d: write_zip(make_package(new_signing_key()),
                                                                 d / "other.zip"),
                              "manifest.json: manifest signed by another key"),
    "tampered manifest": (lambda p, k, d: write_dir(_tampered(p, labels=["a", "b", "c"]),
                                                    d / "pkg"),
                          "pkg/manifest.json: bad signature"),
    "sha256 mismatch": (lambda p, k, d: write_zip(_with_model(p, bytes(
        b ^ 1 if i == 100 else b for i, b in enumerate(p.model_bytes))), d / "flip.zip"),
        "flip.zip: file 'model.onnx': sha256 mismatch"),
    "truncated model": (lambda p, k, d: write_dir(_with_model(p, p.model_bytes[:-10]),
                                                  d / "pkg"),
                        f"file 'model.onnx': size {MODEL_SIZE - 10} bytes, expected {MODEL_SIZE}"),
    "model bigger than signed": (lambda p, k, d: write_zip(
        _with_model(p, p.model_bytes + b"\0" * 4096), d / "long.zip"),
        f"long.zip: model.onnx: {MODEL_SIZE + 4096} bytes, over the {MODEL_SIZE} bytes allowed"),
    "a model onnxruntime cannot run": (lambda p, k, d: write_zip(
        make_package(k, model_bytes=b"not onnx at all " * 64), d / "junk.zip"),
        "junk.zip: model.onnx: refused, the model does not run here"),
}


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def _unlink(folder: Path, name: str) -> Path:
    (folder / name).unlink()
    return folder


@pytest.mark.parametrize("installed", [False, True], ids=["fresh home", "installed home"])
@pytest.mark.parametrize("case", sorted(BAD_SOURCES))
def test_a_bad_package_is_refused_and_the_home_left_as_it_was(
    tmp_path: Path, signing_key: SigningKey, package_factory, capsys: pytest.CaptureFixture[str],
    case: str, installed: bool
) -> None:
    home, trust = tmp_path / "agent", key_file(signing_key, tmp_path / "signing-key.pub")
    make, message = BAD_SOURCES[case]
    if installed:
        assert main(["install-model", str(write_dir(package_factory(), tmp_path / "ok")),
                     "--home", str(home), "--trust-key-file", str(trust)]) == 0
    capsys.readouterr()
    before = listing(home)
    source = make(package_factory(version=2), signing_key, tmp_path)

    assert main(["install-model", str(source), "--home", str(home),
                 "--trust-key-file", str(trust)]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("\n") == 1 and err.startswith("install-model: "), err
    assert message in err, err
    assert listing(home) == before


@pytest.mark.parametrize(("content", "message"), [
    (None, "cannot read the trust key file"),
    (b"c2hvcnQ=\n", "signing public key must be 32 raw bytes, got 5"),
    (b"not base64!\n", "signing public key is not valid base64"),
    (b"-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEA\n-----END PUBLIC KEY-----\n", "a PEM key"),
])
def test_a_bad_trust_key_file_is_named(
    tmp_path: Path, package_factory, capsys: pytest.CaptureFixture[str],
    content: bytes | None, message: str
) -> None:
    home, trust = tmp_path / "agent", tmp_path / "signing-key.pub"
    if content is not None:
        trust.write_bytes(content)
    source = write_dir(package_factory(), tmp_path / "pkg")
    assert main(["install-model", str(source), "--home", str(home),
                 "--trust-key-file", str(trust)]) == 1
    err = capsys.readouterr().err
    assert str(trust) in err and message in err and err.count("\n") == 1, err
    assert not home.exists()


def test_a_fresh_home_needs_a_trust_key(tmp_path: Path, package_factory,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    home = tmp_path / "agent"
    assert main(["install-model", str(write_dir(package_factory(), tmp_path / "pkg")),
                 "--home", str(home)]) == 1
    assert "pass --trust-key-file" in capsys.readouterr().err
    assert not home.exists()


def test_an_enrolled_home_keeps_its_keys(
    tmp_path: Path, signing_key: SigningKey, key_factory, package_factory,
    capsys: pytest.CaptureFixture[str]
) -> None:
    """An enrolled device verifies against the platform's keys only; a bundle's key file does
    not add a key to it (the bundle would vouch for itself)."""
    platform_key = key_factory()
    home = AgentHome(tmp_path / "agent")
    home.save_config(AgentConfig(server_url="http://127.0.0.1:9", device_id="d-1",
                                 credential="cred", signing_public_key=platform_key.public_b64,
                                 trusted_signing_keys=[platform_key.public_b64]))
    before = listing(home.root)
    ours = write_zip(package_factory(), tmp_path / "ours.zip")  # signed by another key
    trust = key_file(signing_key, tmp_path / "signing-key.pub")

    assert main(["install-model", str(ours), "--home", str(home.root)]) == 1
    assert "manifest.json: manifest signed by another key" in capsys.readouterr().err
    assert main(["install-model", str(ours), "--home", str(home.root),
                 "--trust-key-file", str(trust)]) == 1
    err = capsys.readouterr().err
    assert f"trust key file {trust}" in err and "is not trusted by" in err
    assert "enrolled with http://127.0.0.1:9" in err
    assert listing(home.root) == before

    # a package the platform signed installs, and the enrollment is untouched
    theirs = make_package(platform_key)
    assert main(["install-model", str(write_zip(theirs, tmp_path / "theirs.zip")),
                 "--home", str(home.root)]) == 0
    assert f"({theirs.version_id})" in capsys.readouterr().out
    assert home.load_state().current == theirs.version_id
    assert listing(home.root)["agent.json"] == before["agent.json"]
