"""``sampan-agent install-model`` (air-gapped install of a signed package, as a directory or as
the platform's package zip) and the standalone ``run`` it sets up: real packages, the real CLI
and the real agent process, which must open no outbound connection."""

from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import os
import struct
import subprocess
import sys
import threading
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import requests

from edge_agent import cli, offline
from edge_agent.cli import main
from edge_agent.home import AgentConfig, AgentHome
from edge_agent.offline import MANIFEST_LIMIT, OfflineInstallError, install_model, offline_config
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


def run_cli(args: list[str], timeout_s: float = 120.0) -> int:
    """``main(args)`` in a thread: a read that blocks (a FIFO opened without O_NONBLOCK) fails
    the test instead of hanging it."""
    result: list[object] = []

    def target() -> None:
        try:
            result.append(main(args))
        except BaseException as error:  # re-raised below, in the test's thread
            result.append(error)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(timeout_s)
    assert not thread.is_alive(), f"sampan-agent {args} blocked for {timeout_s} s"
    if isinstance(result[0], BaseException):
        raise result[0]
    assert isinstance(result[0], int)
    return result[0]


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
    assert result.stdout.strip() == (f"installed model colours v1 ({package.version_id}), "
                                     f"signed by key {signing_key.key_id}; "
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
    # json.loads raises RecursionError (not ValueError) on this, before any signature check
    "deeply nested manifest": (lambda p, k, d: _write(
        write_dir(p, d / "pkg") / "manifest.json", b"[" * 100_000 + b"]" * 100_000).parent,
        "pkg/manifest.json: not JSON: nested too deeply"),
    "signature key_id not a string": (lambda p, k, d: write_dir(_tampered(
        p, signature={**p.manifest["signature"], "key_id": []}), d / "pkg"),
        "pkg/manifest.json: not a valid signed manifest"),
    # damaged compressed data: LZMAError, OSError (bz2), zlib.error, all while reading
    "corrupt lzma member": (lambda p, k, d: _corrupt(p, d / "lzma.zip", zipfile.ZIP_LZMA),
                            "lzma.zip: manifest.json: cannot read from the zip"),
    "corrupt bzip2 member": (lambda p, k, d: _corrupt(p, d / "bz2.zip", zipfile.ZIP_BZIP2),
                             "bz2.zip: manifest.json: cannot read from the zip"),
    "corrupt deflate member": (lambda p, k, d: _corrupt(p, d / "zlib.zip",
                                                        zipfile.ZIP_DEFLATED),
                               "zlib.zip: manifest.json: cannot read from the zip"),
    # not regular files: refused as such (not "missing"), and never opened for a blocking read
    "manifest is a FIFO": (lambda p, k, d: _fifo(write_dir(p, d / "pkg"), "manifest.json"),
                           "pkg/manifest.json: not a regular file (a FIFO)"),
    "manifest links to /dev/zero": (lambda p, k, d: _link(write_dir(p, d / "pkg"),
                                                          "manifest.json", "/dev/zero"),
                                    "pkg/manifest.json: not a regular file (a character device)"),
    "model is a FIFO": (lambda p, k, d: _fifo(write_dir(p, d / "pkg"), "model.onnx"),
                        "pkg/model.onnx: not a regular file (a FIFO)"),
    "package is a FIFO": (lambda p, k, d: _fifo(d, "pipe.zip") / "pipe.zip",
                          "pipe.zip: not a regular file (a FIFO)"),
    "package links to /dev/zero": (lambda p, k, d: _link(d, "zero.zip", "/dev/zero") /
                                   "zero.zip", "zero.zip: not a regular file (a character device)"),
}


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def _unlink(folder: Path, name: str) -> Path:
    (folder / name).unlink()
    return folder


def _fifo(folder: Path, name: str) -> Path:
    (folder / name).unlink(missing_ok=True)
    os.mkfifo(folder / name)
    return folder


def _link(folder: Path, name: str, target: str) -> Path:
    (folder / name).unlink(missing_ok=True)
    (folder / name).symlink_to(target)
    return folder


def _corrupt(package: ModelPackage, path: Path, method: int) -> Path:
    """The package zip with ``method``, the first bytes of manifest.json's compressed data
    damaged (deflate: a reserved block type; bzip2: not its magic; lzma: invalid lc/lp/pb)."""
    with zipfile.ZipFile(path, "w", method) as archive:
        archive.writestr("manifest.json", json.dumps(package.manifest))
        archive.writestr("model.onnx", package.model_bytes)
        offset = archive.getinfo("manifest.json").header_offset
    raw = bytearray(path.read_bytes())
    name_length, extra_length = struct.unpack("<HH", raw[offset + 26:offset + 30])
    data = offset + 30 + name_length + extra_length
    if method == zipfile.ZIP_LZMA:  # 2 bytes version, 2 bytes size, then the properties
        raw[data + 4] = 0xFF
    else:
        raw[data] = 0xFF
    path.write_bytes(bytes(raw))
    return path


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

    assert run_cli(["install-model", str(source), "--home", str(home),
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


@pytest.mark.parametrize(("kind", "what"), [("fifo", "a FIFO"), ("device", "a character device"),
                                            ("directory", "a directory")])
def test_a_trust_key_file_that_is_not_a_regular_file_is_refused_without_blocking(
    tmp_path: Path, package_factory, capsys: pytest.CaptureFixture[str], kind: str, what: str
) -> None:
    home, trust = tmp_path / "agent", tmp_path / "signing-key.pub"
    if kind == "fifo":
        os.mkfifo(trust)
    elif kind == "device":
        trust.symlink_to("/dev/zero")
    else:
        trust.mkdir()
    source = write_dir(package_factory(), tmp_path / "pkg")
    assert run_cli(["install-model", str(source), "--home", str(home),
                    "--trust-key-file", str(trust)], timeout_s=60) == 1
    err = capsys.readouterr().err
    assert err == f"install-model: cannot read the trust key file {trust}: not a regular file " \
                  f"({what})\n", err
    assert not home.exists()


def _standalone_home(root: Path, key: SigningKey) -> AgentHome:
    home = AgentHome(root)
    home.save_config(offline_config(key.public_b64, "offline-000000000000", "edge"))
    return home


#: (file, what it holds, what the one-line refusal must say after "<home>/<file>: ")
BAD_HOME_FILES = [
    ("agent.json", b"[]", "not a JSON object (an array)"),
    ("agent.json", b'"standalone"', "not a JSON object (a string)"),
    ("agent.json", b"[" * 100_000 + b"]" * 100_000, "not JSON: nested too deeply"),
    ("agent.json", b'{"server_url": ""}', "device_id: missing"),
    ("agent.json", b'{"server_url": "", "device_id": "d", "credential": "", '
                   b'"signing_public_key": 5}', "signing_public_key: expected a string, got a "
                                                "number"),
    ("agent.json", b'{"server_url": "", "device_id": "d", "credential": "", '
                   b'"signing_public_key": "", "trusted_signing_keys": "abc"}',
     "trusted_signing_keys: expected an array of base64 Ed25519 public keys"),
    ("agent.json", b'{"server_url": "", "device_id": "d", "credential": "", '
                   b'"signing_public_key": "", "trusted_signing_keys": ["not base64!"]}',
     "trusted_signing_keys[0]: signing public key is not valid base64"),
    ("agent.json", b'{"server_url": "", "device_id": "d", "credential": "", '
                   b'"signing_public_key": "", "trusted_signing_keys": [{"a": 1}]}',
     "trusted_signing_keys: expected an array"),
    ("agent.json", None, "not a regular file (a directory)"),
    ("state.json", b"[1, 2]", "not a JSON object (an array)"),
    ("state.json", b"[" * 100_000 + b"]" * 100_000, "not JSON: nested too deeply"),
    ("state.json", b'{"current": ["v1"]}', "current: expected a version id (a string), got an "
                                           "array"),
    ("state.json", b'{"previous": {"id": 1}}', "previous: expected a version id"),
    ("state.json", b'{"deployment": 5}', "deployment: expected an object, got a number"),
    ("state.json", b'{"deployment": {"state": "running"}}', "deployment: "),
]


@pytest.mark.parametrize(("name", "content", "message"), BAD_HOME_FILES,
                         ids=[f"{name}-{index}" for index, (name, _, _) in
                              enumerate(BAD_HOME_FILES)])
def test_a_home_file_of_the_wrong_shape_is_named_in_one_line(
    tmp_path: Path, signing_key: SigningKey, package_factory,
    capsys: pytest.CaptureFixture[str], name: str, content: bytes | None, message: str
) -> None:
    """agent.json and state.json are read as JSON objects with the field types the install
    uses; anything else is one line naming the file and field, and the home stays as it was."""
    home = _standalone_home(tmp_path / "agent", signing_key)
    path = home.root / name
    if content is None:
        path.unlink(missing_ok=True)
        path.mkdir()
    else:
        path.write_bytes(content)
    before = listing(home.root)
    source = write_dir(package_factory(), tmp_path / "pkg")
    assert run_cli(["install-model", str(source), "--home", str(home.root)]) == 1
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and err.startswith("install-model: "), err
    assert f"{path}: {message}" in err, err
    assert listing(home.root) == before


def test_an_install_is_refused_while_another_holds_the_home(
    tmp_path: Path, signing_key: SigningKey, package_factory, capsys: pytest.CaptureFixture[str]
) -> None:
    """The install holds an exclusive flock on the home directory (no lock file in it)."""
    home, trust = tmp_path / "agent", key_file(signing_key, tmp_path / "signing-key.pub")
    home.mkdir()
    source = write_dir(package_factory(), tmp_path / "pkg")
    holder = os.open(home, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(holder, fcntl.LOCK_EX | fcntl.LOCK_NB)
        assert run_cli(["install-model", str(source), "--home", str(home),
                        "--trust-key-file", str(trust)]) == 1
        assert capsys.readouterr().err == (
            f"install-model: {home}: another install-model is running on this home; run again "
            "after it\n")
        assert listing(home) == {}
    finally:
        os.close(holder)
    # released: it installs (and leaves no lock file behind)
    assert run_cli(["install-model", str(source), "--home", str(home),
                    "--trust-key-file", str(trust)]) == 0
    assert sorted(path.name for path in home.iterdir()) == [
        "agent.json", "downloads", "models", "state.json"]


def test_two_installs_into_a_fresh_home_at_once(
    tmp_path: Path, signing_key: SigningKey, package_factory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The second install, started while the first stages its package, is refused at once;
    the first completes, with its agent.json (the race left none: the loser removed the
    winner's agent.json when it failed)."""
    home, trust = AgentHome(tmp_path / "agent"), key_file(signing_key, tmp_path / "key.pub")
    source = write_dir(package_factory(), tmp_path / "pkg")
    staging, second_done = threading.Event(), threading.Event()
    real_stage, calls = offline._stage, []

    def stage(*args: Any) -> Any:
        calls.append(1)
        if len(calls) == 1:  # the first install waits here for the second to finish
            staging.set()
            assert second_done.wait(60)
        return real_stage(*args)

    def first_install() -> None:
        try:
            first.append(install_model(source, home, trust, machine_id=lambda h: "0" * 32))
        except BaseException as error:
            first.append(error)

    monkeypatch.setattr(offline, "_stage", stage)
    first: list[Any] = []
    thread = threading.Thread(target=first_install, daemon=True)
    thread.start()
    try:
        assert staging.wait(60)
        with pytest.raises(OfflineInstallError, match="another install-model is running on "
                                                      "this home"):
            install_model(source, home, trust, machine_id=lambda h: "1" * 32)
    finally:
        second_done.set()
        thread.join(120)
    assert first and not isinstance(first[0], BaseException), first
    assert first[0].new_config
    config = home.load_config()
    assert config.device_id == "offline-000000000000"
    assert config.trusted_keys() == [signing_key.public_b64]
    assert home.load_state().current == first[0].version_id


def test_an_agent_json_created_meanwhile_is_not_overwritten(
    tmp_path: Path, signing_key: SigningKey, package_factory, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str]
) -> None:
    """A home without agent.json when the install starts, and one when it commits (written by
    a process that does not take the lock, e.g. an enroll): the new one is kept, the install
    refused, and what the install created removed."""
    home, trust = tmp_path / "agent", key_file(signing_key, tmp_path / "signing-key.pub")
    theirs = json.dumps({"server_url": "http://platform", "device_id": "d-7"}).encode()
    real_stage = offline._stage

    def stage(*args: Any) -> Any:
        manifest = real_stage(*args)
        (home / "agent.json").write_bytes(theirs)
        return manifest

    monkeypatch.setattr(offline, "_stage", stage)
    assert run_cli(["install-model", str(write_dir(package_factory(), tmp_path / "pkg")),
                    "--home", str(home), "--trust-key-file", str(trust)]) == 1
    assert capsys.readouterr().err == (f"install-model: {home / 'agent.json'}: another install "
                                       "created agent.json meanwhile; run again\n")
    assert listing(home) == {"agent.json": hashlib.sha256(theirs).hexdigest()}


@pytest.mark.parametrize("replaced", [False, True], ids=["ours", "replaced meanwhile"])
def test_a_failed_commit_removes_only_the_agent_json_it_created(
    tmp_path: Path, signing_key: SigningKey, package_factory, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str], replaced: bool
) -> None:
    """A commit that fails after agent.json is created (a full disk at state.json) removes it,
    and the machine-id it kept for a machine without one, but not an agent.json another
    process put in its place meanwhile."""
    home, trust = tmp_path / "agent", key_file(signing_key, tmp_path / "signing-key.pub")
    theirs = json.dumps({"server_url": "http://platform", "device_id": "d-7"}).encode()

    def kept_machine_id(home: AgentHome) -> str:  # a machine without /etc/machine-id
        (home.root / "machine-id").write_text("ab" * 16 + "\n", encoding="ascii")
        return "ab" * 16

    monkeypatch.setattr(cli, "machine_id", kept_machine_id)

    def save_state(self: AgentHome, state: object) -> None:
        if replaced:  # as write_json_atomic does: a new file renamed over it
            (home / "other.json").write_bytes(theirs)
            os.replace(home / "other.json", home / "agent.json")
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(AgentHome, "save_state", save_state)
    assert run_cli(["install-model", str(write_dir(package_factory(), tmp_path / "pkg")),
                    "--home", str(home), "--trust-key-file", str(trust)]) == 1
    assert capsys.readouterr().err == (f"install-model: cannot install into {home}: No space "
                                       "left on device\n")
    assert listing(home) == ({"agent.json": hashlib.sha256(theirs).hexdigest()} if replaced
                             else {})


def test_the_success_line_names_the_signing_key_and_no_control_characters(
    tmp_path: Path, signing_key: SigningKey, package_factory, capsys: pytest.CaptureFixture[str]
) -> None:
    """An operator compares the key id with the platform's `manage.py sampan_signing_key list`;
    the model name and version come from the manifest and lose control characters and line
    separators (a name could otherwise forge a second line, or reorder the line's text)."""
    package = package_factory()
    model = {**package.manifest["model"], "name": "col\nours\x1b[2J\u202e\u2028\u2029\x85\t!",
             "version": "1\r\n2"}
    signed = ModelPackage(package.version_id, signing_key.sign({**package.manifest,
                                                                "model": model}),
                          package.model_bytes)
    home, trust = tmp_path / "agent", key_file(signing_key, tmp_path / "signing-key.pub")
    assert run_cli(["install-model", str(write_dir(signed, tmp_path / "pkg")), "--home",
                    str(home), "--trust-key-file", str(trust)]) == 0
    assert capsys.readouterr().out == (
        f"installed model colours[2J! v12 ({package.version_id}), signed by key "
        f"{signing_key.key_id}; run: sampan-agent run --home {home}\n")


def test_an_unforeseen_error_is_still_one_line_and_undone(
    tmp_path: Path, signing_key: SigningKey, package_factory, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str]
) -> None:
    """The CLI's safety net: an exception install_model does not turn into a refusal (here a
    KeyError from loading the model) is one line too (the traceback only with --verbose),
    and the home is left as it was."""
    def broken_session(*args: Any, **kwargs: Any) -> Any:
        raise KeyError("inputs")

    monkeypatch.setattr(offline, "open_session", broken_session)
    home, trust = tmp_path / "agent", key_file(signing_key, tmp_path / "signing-key.pub")
    source = write_dir(package_factory(), tmp_path / "pkg")
    assert run_cli(["install-model", str(source), "--home", str(home),
                    "--trust-key-file", str(trust)]) == 1
    out, err = capsys.readouterr()
    assert out == "" and err == (f"install-model: {source}: refused: unexpected KeyError: "
                                 "'inputs' (--verbose for the traceback)\n"), err
    assert not home.exists()
