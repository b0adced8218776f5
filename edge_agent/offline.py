"""Air-gapped install of a signed model package (``sampan-agent install-model``), and the
standalone agent it sets up (docs/edge.md, "Offline (air-gapped) install").

A package is ``manifest.json`` + the files it lists (``model.onnx``): a directory holding them,
or the platform's "Download package" zip holding them at its root. :func:`install_model` reads
the manifest (at most :data:`MANIFEST_LIMIT` bytes), checks its Ed25519 signature against the
keys the home trusts, copies each listed file into ``models/.offline-*`` (streamed, at most the
size the signed manifest gives it), checks sizes and sha256, loads the model with the session
of its task, runs one dummy input and the package's reference predictions, and only then
renames the staging directory to ``models/<version_id>/`` and makes it ``current`` in
``state.json``. Any refusal leaves the home as it was (no models directory, ``agent.json`` or
``state.json`` written).

Trust: a home with an ``agent.json`` (enrolled with a platform, or an earlier offline install)
verifies against the keys it already trusts; a ``--trust-key-file`` must name one of them. A key
is never *added* to an existing ``agent.json``: the key file comes in the same bundle as the
model, so trusting whatever key a bundle brings would let any bundle vouch for itself (and an
enrolled agent replaces its keys with the platform's at the next heartbeat anyway). A home
without ``agent.json`` needs ``--trust-key-file`` and gets a standalone config
(``server_url`` ``""``): trust on first use.
"""

from __future__ import annotations

import json
import re
import secrets
import shutil
import socket
import zipfile
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from edge_agent.home import AgentConfig, AgentHome, AgentState
from edge_agent.reference import HealthCheckError, reference_check
from edge_agent.runtime import (
    MANIFEST_FILE,
    MODEL_FILE,
    ManifestError,
    ModelLoadError,
    public_key_id,
    verify_files,
    verify_manifest,
)
from edge_agent.sessions import open_session

__all__ = ["MANIFEST_LIMIT", "Installed", "OfflineInstallError", "install_model",
           "is_standalone", "offline_config", "read_trust_key"]

#: largest manifest.json read (bytes); a real one is a few KiB
MANIFEST_LIMIT = 1 << 20
#: largest trust key file read (bytes); the key itself is 44 characters
KEY_FILE_LIMIT = 4096
#: most members a package zip may have (manifest.json and the files it lists)
ZIP_MEMBERS_LIMIT = 16
_CHUNK = 1 << 20
#: file names in a package: plain names, as edge_agent.runtime.verify_files allows them
_PLAIN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
#: a model version id becomes a directory name under models/
_VERSION_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
_KEY_FORMAT = "expected one line: base64 of the 32-byte raw Ed25519 public key"


class OfflineInstallError(Exception):
    """An offline install refused. ``str(error)`` is one line naming the file or field."""

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(message.split()))


@dataclass(frozen=True)
class Installed:
    """What :func:`install_model` installed: the manifest's model ``name`` and ``version``,
    its ``version_id``, the ``previous`` version now kept for rollback (None: none), the
    home's ``device_id`` and whether this install wrote a new standalone ``agent.json``."""

    name: str
    version: str
    version_id: str
    previous: str | None
    device_id: str
    new_config: bool


def is_standalone(config: AgentConfig) -> bool:
    """Whether ``config`` is an offline install's: no platform (``server_url`` empty)."""
    return not config.server_url


def offline_config(public_key: str, device_id: str, name: str) -> AgentConfig:
    """The standalone ``agent.json`` of an offline install: no platform, no credential, and
    ``public_key`` (base64 raw Ed25519) the one trusted signing key."""
    return AgentConfig(server_url="", device_id=device_id, credential="",
                       signing_public_key=public_key, name=name,
                       trusted_signing_keys=[public_key])


def read_trust_key(path: Path) -> str:
    """The public key in a trust key file: one line, base64 of 32 raw Ed25519 bytes.

    Raises:
        OfflineInstallError: unreadable, too long, not text, or not such a key (names the file).
    """
    try:
        with open(path, "rb") as handle:
            raw = handle.read(KEY_FILE_LIMIT + 1)
    except OSError as error:
        raise OfflineInstallError(
            f"cannot read the trust key file {path}: {error.strerror or error}") from error
    if len(raw) > KEY_FILE_LIMIT:
        raise OfflineInstallError(f"trust key file {path}: over {KEY_FILE_LIMIT} bytes; "
                                  f"{_KEY_FORMAT}")
    try:
        text = raw.decode("ascii").strip()
    except UnicodeDecodeError as error:
        raise OfflineInstallError(f"trust key file {path}: not ASCII text; {_KEY_FORMAT}"
                                  ) from error
    if "BEGIN" in text:
        raise OfflineInstallError(f"trust key file {path}: a PEM key; {_KEY_FORMAT}")
    try:
        public_key_id(text)
    except ManifestError as error:
        raise OfflineInstallError(f"trust key file {path}: {error}; {_KEY_FORMAT}") from error
    return text


class _Source:
    """A package to read: a directory, or a zip with the files at its root."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._zip: zipfile.ZipFile | None = None
        self._members: dict[str, zipfile.ZipInfo] = {}

    def __enter__(self) -> _Source:
        if self.path.is_dir():
            return self
        if not self.path.is_file():
            raise OfflineInstallError(f"{self.path}: no such package (a directory with "
                                      f"{MANIFEST_FILE} and {MODEL_FILE}, or a zip of them)")
        try:
            self._zip = zipfile.ZipFile(self.path)
        except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError) as error:
            raise OfflineInstallError(f"{self.path}: not a package directory or a readable "
                                      f"zip: {error}") from error
        try:
            self._index(self._zip.infolist())
        except BaseException:
            self._zip.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        if self._zip is not None:
            self._zip.close()

    def _index(self, infos: list[zipfile.ZipInfo]) -> None:
        if len(infos) > ZIP_MEMBERS_LIMIT:
            raise OfflineInstallError(f"{self.path}: {len(infos)} members; a package zip "
                                      f"holds {MANIFEST_FILE} and {MODEL_FILE}")
        for info in infos:
            name = info.filename
            if info.is_dir() or "/" in name or "\\" in name or not _PLAIN_NAME.fullmatch(name):
                raise OfflineInstallError(
                    f"{self.path}: member {name!r}: not a plain file at the zip's root "
                    f"(a package zip holds {MANIFEST_FILE} and {MODEL_FILE} at its root)")
            if name in self._members:
                raise OfflineInstallError(f"{self.path}: member {name!r} appears twice")
            if info.flag_bits & 0x1:
                raise OfflineInstallError(f"{self.path}: member {name!r} is encrypted")
            self._members[name] = info

    def label(self, name: str) -> str:
        """How messages name the package file ``name``."""
        return f"{self.path}: {name}" if self._zip is not None else str(self.path / name)

    def check_members(self, listed: set[str]) -> None:
        """Refuse zip members that are neither the manifest nor a file it lists."""
        extra = sorted(set(self._members) - listed - {MANIFEST_FILE})
        if self._zip is not None and extra:
            raise OfflineInstallError(f"{self.path}: member {extra[0]!r} is not a file of the "
                                      "signed manifest")

    @contextmanager
    def open(self, name: str, limit: int) -> Iterator[IO[bytes]]:
        """The file ``name`` to read, refused when it says it is over ``limit`` bytes."""
        if self._zip is None:
            path = self.path / name
            if not path.is_file():
                raise OfflineInstallError(f"{self.label(name)}: missing")
            try:
                size = path.stat().st_size
                handle: IO[bytes] = open(path, "rb")
            except OSError as error:
                raise OfflineInstallError(f"{self.label(name)}: cannot read: "
                                          f"{error.strerror or error}") from error
        else:
            info = self._members.get(name)
            if info is None:
                raise OfflineInstallError(f"{self.label(name)}: missing from the zip")
            size = info.file_size
            try:
                handle = self._zip.open(info)
            except (zipfile.BadZipFile, NotImplementedError, RuntimeError, OSError,
                    EOFError, zlib.error) as error:
                raise OfflineInstallError(f"{self.label(name)}: cannot read from the zip: "
                                          f"{error}") from error
        with handle:
            if size > limit:
                raise OfflineInstallError(f"{self.label(name)}: {size} bytes, over the "
                                          f"{limit} bytes allowed")
            yield handle

    def read(self, name: str, limit: int, sink: Callable[[bytes], object]) -> int:
        """Stream the file ``name`` into ``sink``, at most ``limit`` bytes whatever headers
        say; returns the byte count. Raises OfflineInstallError (over the limit, unreadable)."""
        total = 0
        with self.open(name, limit) as handle:
            try:
                while chunk := handle.read(min(_CHUNK, limit + 1 - total)):
                    total += len(chunk)
                    if total > limit:
                        raise OfflineInstallError(f"{self.label(name)}: over the {limit} "
                                                  "bytes allowed")
                    sink(chunk)
            except (zipfile.BadZipFile, OSError, EOFError, zlib.error) as error:
                raise OfflineInstallError(f"{self.label(name)}: cannot read: {error}"
                                          ) from error
        return total


def _parse_manifest(source: _Source, data: bytes, keys: list[str]) -> dict[str, Any]:
    """The signed manifest, checked: a JSON object, signed by one of ``keys``, with a model
    version id usable as a directory name and a byte size for each listed file."""
    label = source.label(MANIFEST_FILE)
    try:
        manifest = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as error:
        raise OfflineInstallError(f"{label}: not JSON: {error}") from error
    if not isinstance(manifest, dict):
        raise OfflineInstallError(f"{label}: not a JSON object")
    try:
        verify_manifest(manifest, keys)
    except ManifestError as error:
        raise OfflineInstallError(f"{label}: {error}") from error
    model = manifest.get("model")
    version_id = model.get("version_id") if isinstance(model, dict) else None
    if not isinstance(version_id, str) or not _VERSION_ID.fullmatch(version_id):
        raise OfflineInstallError(f"{label}: model.version_id {version_id!r} is not a version "
                                  "id")
    files = manifest.get("files")
    if not isinstance(files, dict) or MODEL_FILE not in files:
        raise OfflineInstallError(f"{label}: files lists no {MODEL_FILE}")
    for name, entry in files.items():
        size = entry.get("size") if isinstance(entry, dict) else None
        if not isinstance(name, str) or not _PLAIN_NAME.fullmatch(name) or name == MANIFEST_FILE:
            raise OfflineInstallError(f"{label}: files: unsafe name {name!r}")
        if not isinstance(size, int) or isinstance(size, bool) or size < 0:
            raise OfflineInstallError(f"{label}: files.{name}.size {size!r} is not a byte count")
    return manifest


def _stage(source: _Source, staging: Path, keys: list[str], threads: int) -> dict[str, Any]:
    """Copy the package into ``staging`` and check it as ``Agent.load_package`` would (signature,
    sizes, sha256, load, one dummy input), plus its reference predictions. Returns the
    manifest."""
    chunks: list[bytes] = []
    source.read(MANIFEST_FILE, MANIFEST_LIMIT, chunks.append)
    data = b"".join(chunks)
    manifest = _parse_manifest(source, data, keys)
    files: dict[str, dict[str, Any]] = manifest["files"]
    source.check_members(set(files))
    (staging / MANIFEST_FILE).write_bytes(data)
    for name, entry in files.items():
        with open(staging / name, "wb") as target:
            source.read(name, entry["size"], target.write)
    try:
        verify_files(manifest, staging)
    except ManifestError as error:
        raise OfflineInstallError(f"{source.path}: {error}") from error
    try:
        session = open_session(staging / MODEL_FILE, manifest, threads=threads)
        session.self_test()
        reference_check(session, manifest.get("reference"))
    except (ManifestError, ModelLoadError, HealthCheckError) as error:
        raise OfflineInstallError(f"{source.label(MODEL_FILE)}: refused, the model does not "
                                  f"run here: {error}") from error
    return manifest


def _trust(home: AgentHome, trust_key_file: Path | None) -> tuple[AgentConfig | None, str | None]:
    """(the home's config or None, the key file's key or None), checked as the module says."""
    key = read_trust_key(trust_key_file) if trust_key_file is not None else None
    if not home.config_path.exists():
        if key is None:
            raise OfflineInstallError(
                f"{home.config_path} does not exist: pass --trust-key-file (the platform's "
                "signing-key.pub) to trust the key this package is signed with")
        return None, key
    try:
        config = home.load_config()
    except (OSError, ValueError, TypeError) as error:
        raise OfflineInstallError(f"cannot read {home.config_path}: {error}") from error
    if key is not None and key not in config.trusted_keys():
        kind = "a standalone device" if is_standalone(config) else \
            f"enrolled with {config.server_url}"
        raise OfflineInstallError(
            f"trust key file {trust_key_file}: key {public_key_id(key)} is not trusted by "
            f"{home.config_path} ({kind}; trusts "
            f"{', '.join(public_key_id(k) for k in config.trusted_keys())}); an existing "
            "agent.json never takes a new key from a bundle: install without --trust-key-file, "
            "or move agent.json away to trust this key from scratch")
    return config, key


def _make_home(home: AgentHome) -> list[Path]:
    """Create the home and its models directory; returns the directories created, outermost
    first (to remove them again when the install is refused)."""
    missing = [path for path in (*reversed(home.models_dir.parents), home.models_dir)
               if not path.exists()]
    home.root.mkdir(mode=0o700, parents=True, exist_ok=True)
    home.models_dir.mkdir(exist_ok=True)
    return missing


def install_model(source: Path, home: AgentHome, trust_key_file: Path | None = None, *,
                  machine_id: Callable[[AgentHome], str], threads: int = 1) -> Installed:
    """Install the package at ``source`` (directory or zip) into ``home`` and make it current.

    ``machine_id(home)`` gives the 32-hex-digit machine id a new standalone config's device id
    (``offline-`` + its first 12 digits) is made from; ``threads``: onnxruntime's intra-op
    threads for the test load. The running agent is not told: start (or restart) it after.

    Raises:
        OfflineInstallError: the package, the trust key or the home is refused; the message
            names the file or field. The home is then as it was.
    """
    config, key = _trust(home, trust_key_file)
    try:
        old = home.load_state()
    except (OSError, ValueError, TypeError) as error:
        raise OfflineInstallError(f"cannot read {home.state_path}: {error}") from error
    keys = config.trusted_keys() if config is not None else [str(key)]
    with _Source(source) as package:
        try:
            created = _make_home(home)
        except OSError as error:
            raise OfflineInstallError(f"cannot create {home.models_dir}: "
                                      f"{error.strerror or error}") from error
        staging = home.models_dir / f".offline-{secrets.token_hex(6)}"
        try:
            staging.mkdir()
            manifest = _stage(package, staging, keys, threads)
            return _commit(home, staging, manifest, config, key, old, machine_id)
        except BaseException as error:
            shutil.rmtree(staging, ignore_errors=True)
            for path in reversed(created):
                try:
                    path.rmdir()
                except OSError:
                    pass
            if isinstance(error, OSError):
                raise OfflineInstallError(f"cannot install into {home.root}: "
                                          f"{error.strerror or error}") from error
            raise


def _commit(home: AgentHome, staging: Path, manifest: dict[str, Any],
            config: AgentConfig | None, key: str | None, old: AgentState,
            machine_id: Callable[[AgentHome], str]) -> Installed:
    """Move ``staging`` to ``models/<version_id>``, write a new standalone config (when
    ``config`` is None) and ``state.json``; on an OSError undo the move and the new config."""
    model = manifest["model"]
    version_id: str = model["version_id"]
    new_config = config is None
    if config is None:
        config = offline_config(str(key), "offline-" + machine_id(home)[:12],
                                socket.gethostname())
    target = home.model_dir(version_id)
    aside = home.models_dir / f".replaced-{secrets.token_hex(6)}" if target.exists() else None
    previous = old.current if old.current != version_id else old.previous
    state = AgentState(current=version_id, previous=previous, deployment=old.deployment)
    moved = False
    try:
        if aside is not None:
            target.replace(aside)
        staging.replace(target)
        moved = True
        if new_config:
            home.save_config(config)
        home.save_state(state)
    except BaseException:
        if moved:
            shutil.rmtree(target, ignore_errors=True)
        if aside is not None and aside.exists():
            aside.replace(target)
        if new_config:
            home.config_path.unlink(missing_ok=True)
        raise
    if aside is not None:
        shutil.rmtree(aside, ignore_errors=True)
    _prune(home, {version_id, previous})
    return Installed(name=str(model.get("name", "")), version=str(model.get("version", "")),
                     version_id=version_id, previous=previous, device_id=config.device_id,
                     new_config=new_config)


def _prune(home: AgentHome, keep: set[str | None]) -> None:
    """Delete installed versions other than ``keep`` (current and previous), as the
    convergence loop does after a deployment; hidden staging directories are left to it."""
    for path in home.models_dir.iterdir():
        if path.name not in keep and not path.name.startswith(".") and path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
