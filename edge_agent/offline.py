"""Air-gapped install of a signed model package (``sampan-agent install-model``), and the
standalone agent it sets up (docs/edge.md, "Offline (air-gapped) install").

A package is ``manifest.json`` + the files it lists (``model.onnx``), a directory or a zip;
reading it, the trust key file and the home's files (bounded, regular files only) is
:mod:`edge_agent.offline_reader`'s. :func:`install_model` reads the manifest (at most
:data:`MANIFEST_LIMIT` bytes), checks its Ed25519 signature against the keys the home trusts,
copies each listed file into ``models/.offline-*`` (streamed, at most the size the signed
manifest gives it), checks sizes and sha256, loads the model with the session of its task, runs
one dummy input and the package's reference predictions, and only then renames the staging
directory to ``models/<version_id>/`` and makes it ``current`` in ``state.json``. Any refusal
leaves the home as it was (no models directory, ``agent.json`` or ``state.json`` written) and is
one line naming the file or field (an :class:`OfflineInstallError`, raised by the reader too).

Concurrency: the install holds an exclusive ``flock`` on the home directory itself (no lock
file, so a refused install leaves no trace); a second ``install-model`` on the same home is
refused at once. A new standalone ``agent.json`` is created exclusively (a temp file hard-linked
into place), so a writer that created one meanwhile (an ``enroll``, or an install on a file
system without ``flock``) is never overwritten, and undoing a failed install removes only the
``agent.json`` this install created.

Trust: a home with an ``agent.json`` (enrolled with a platform, or an earlier offline install)
verifies against the keys it already trusts; a ``--trust-key-file`` must name one of them. A key
is never *added* to an existing ``agent.json``: the key file comes in the same bundle as the
model, so trusting whatever key a bundle brings would let any bundle vouch for itself (and an
enrolled agent replaces its keys with the platform's at the next heartbeat anyway). A home
without ``agent.json`` needs ``--trust-key-file`` and gets a standalone config
(``server_url`` ``""``): trust on first use.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import secrets
import shutil
import socket
import tempfile
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from edge_agent.home import AgentConfig, AgentHome, AgentState
from edge_agent.offline_reader import (
    MANIFEST_LIMIT,
    OfflineInstallError,
    PackageSource,
    load_config,
    load_state,
    parse_manifest,
    present,
    printable,
    read_trust_key,
    reason,
)
from edge_agent.reference import HealthCheckError, reference_check
from edge_agent.runtime import (
    MANIFEST_FILE,
    MODEL_FILE,
    ManifestError,
    ModelLoadError,
    public_key_id,
    verify_files,
)
from edge_agent.sessions import open_session

__all__ = ["MANIFEST_LIMIT", "Installed", "OfflineInstallError", "install_model",
           "is_standalone", "offline_config", "printable", "read_trust_key"]



@dataclass(frozen=True)
class Installed:
    """What :func:`install_model` installed: the manifest's model ``name`` and ``version``
    (:func:`printable`), its ``version_id``, the ``key_id`` of the trusted key that signed it,
    the ``previous`` version now kept for rollback (None: none), the home's ``device_id`` and
    whether this install wrote a new standalone ``agent.json``."""

    name: str
    version: str
    version_id: str
    key_id: str
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


def _stage(source: PackageSource, staging: Path, keys: list[str], threads: int) -> dict[str, Any]:
    """Copy the package into ``staging`` and check it as ``Agent.load_package`` would (signature,
    sizes, sha256, load, one dummy input), plus its reference predictions. Returns the
    manifest."""
    chunks: list[bytes] = []
    source.read(MANIFEST_FILE, MANIFEST_LIMIT, chunks.append)
    data = b"".join(chunks)
    manifest = parse_manifest(source, data, keys)
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


def _trust(home: AgentHome, key: str | None, trust_key_file: Path | None) -> AgentConfig | None:
    """The home's config (None: there is none, and ``key``, the trust key file's, is to be
    trusted), checked as the module says."""
    if not present(home.config_path):
        if key is None:
            raise OfflineInstallError(
                f"{home.config_path} does not exist: pass --trust-key-file (the platform's "
                "signing-key.pub) to trust the key this package is signed with")
        return None
    config = load_config(home.config_path)
    if key is not None and key not in config.trusted_keys():
        kind = "a standalone device" if is_standalone(config) else \
            f"enrolled with {config.server_url}"
        raise OfflineInstallError(
            f"trust key file {trust_key_file}: key {public_key_id(key)} is not trusted by "
            f"{home.config_path} ({kind}; trusts "
            f"{', '.join(public_key_id(k) for k in config.trusted_keys())}); an existing "
            "agent.json never takes a new key from a bundle: install without --trust-key-file, "
            "or move agent.json away to trust this key from scratch")
    return config


def _make_dirs(paths: list[tuple[Path, int]]) -> list[Path]:
    """Create each missing directory of ``paths`` (path, mode), in order; returns those this
    process created (one that appears meanwhile is someone else's). On an error, removes them
    again and raises OfflineInstallError."""
    created: list[Path] = []
    for path, mode in paths:
        if path.is_dir():
            continue
        try:
            path.mkdir(mode=mode)
        except FileExistsError:
            continue
        except OSError as error:
            _remove_dirs(created)
            raise OfflineInstallError(f"cannot create {path}: {reason(error)}") from error
        created.append(path)
    return created


def _remove_dirs(created: list[Path]) -> None:
    """Remove the directories of ``created`` (outermost first) that are empty again."""
    for path in reversed(created):
        try:
            path.rmdir()
        except OSError:
            pass


def _lock_home(home: AgentHome) -> int | None:
    """Hold an exclusive, non-blocking ``flock`` on the home directory; returns the descriptor
    that holds it (closing it releases the lock), or None where the file system has no
    ``flock`` (agent.json is still created exclusively there).

    The directory itself is locked, not a lock file in it: nothing is added to the home, so a
    refused install leaves it exactly as it was (and no stale lock file can outlive a crash:
    the kernel drops the lock with the process)."""
    busy = f"{home.root}: another install-model is running on this home; run again after it"
    try:
        fd = os.open(home.root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as error:
        raise OfflineInstallError(f"cannot open {home.root}: {reason(error)}") from error
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as error:
            raise OfflineInstallError(busy) from error
        except OSError:  # no flock here (ENOLCK, EBADF on some network file systems)
            os.close(fd)
            return None
        # the install that held it may have removed the home (a refused install into a home it
        # created) before releasing it: this lock is then on a directory no longer there
        try:
            now = os.stat(home.root)
        except OSError:
            now = None
        held = os.fstat(fd)
        if now is None or (now.st_dev, now.st_ino) != (held.st_dev, held.st_ino):
            raise OfflineInstallError(busy)
    except BaseException:
        os.close(fd)
        raise
    return fd


def install_model(source: Path, home: AgentHome, trust_key_file: Path | None = None, *,
                  machine_id: Callable[[AgentHome], str], threads: int = 1) -> Installed:
    """Install the package at ``source`` (directory or zip) into ``home`` and make it current.

    ``machine_id(home)`` gives the 32-hex-digit machine id a new standalone config's device id
    (``offline-`` + its first 12 digits) is made from; ``threads``: onnxruntime's intra-op
    threads for the test load. The running agent is not told: start (or restart) it after.

    Raises:
        OfflineInstallError: the package, the trust key or the home is refused, or another
            install runs on the home; the message names the file or field. The home is then
            as it was.
    """
    key = read_trust_key(trust_key_file) if trust_key_file is not None else None
    with PackageSource(source) as package:
        # the home's parents, the home (0700); those created here are removed on a refusal
        created = _make_dirs([*((path, 0o777) for path in reversed(home.root.parents)),
                              (home.root, 0o700)])
        # refused here: another install holds the home (and whatever this one created of it)
        lock = _lock_home(home)
        staging: Path | None = None
        try:
            config = _trust(home, key, trust_key_file)
            old = load_state(home)
            keys = config.trusted_keys() if config is not None else [str(key)]
            created += _make_dirs([(home.models_dir, 0o777), (home.downloads_dir, 0o777)])
            staging = home.models_dir / f".offline-{secrets.token_hex(6)}"
            staging.mkdir()
            manifest = _stage(package, staging, keys, threads)
            return _commit(home, staging, manifest, config, key, old, machine_id)
        except BaseException as error:
            # undone while the lock is held: no other install sees the home half-removed
            if staging is not None:
                shutil.rmtree(staging, ignore_errors=True)
            _remove_dirs(created)
            if isinstance(error, OSError):
                raise OfflineInstallError(f"cannot install into {home.root}: "
                                          f"{reason(error)}") from error
            raise
        finally:
            if lock is not None:
                os.close(lock)


def _create_config(home: AgentHome, config: AgentConfig) -> tuple[int, int]:
    """Write ``config`` as the home's ``agent.json``, which must not exist: a complete temp file
    (mode 0600, fsynced) hard-linked into place, so a writer that created one meanwhile is
    never overwritten. Returns (st_dev, st_ino) of the file created.

    Raises:
        OfflineInstallError: an ``agent.json`` appeared meanwhile.
        OSError: it cannot be written.
    """
    conflict = f"{home.config_path}: another install created agent.json meanwhile; run again"
    fd, temp = tempfile.mkstemp(prefix=".agent.json.", dir=home.root)
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(asdict(config), handle, indent=2, sort_keys=True)
            handle.flush()
            os.fsync(handle.fileno())
        try:
            os.link(temp, home.config_path)
        except FileExistsError as error:
            raise OfflineInstallError(conflict) from error
        except OSError as error:
            if error.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EMLINK):
                raise
            # no hard links on this file system: created with O_EXCL (not atomic on a crash)
            return _create_exclusive(home.config_path, Path(temp).read_bytes(), conflict)
        info = os.stat(temp)
        return info.st_dev, info.st_ino
    finally:
        Path(temp).unlink(missing_ok=True)


def _create_exclusive(path: Path, data: bytes, conflict: str) -> tuple[int, int]:
    """Create ``path`` (O_EXCL, mode 0600) holding ``data``; returns its (st_dev, st_ino)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    except FileExistsError as error:
        raise OfflineInstallError(conflict) from error
    info = os.fstat(fd)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
    except BaseException:
        path.unlink(missing_ok=True)
        raise
    return info.st_dev, info.st_ino


def _remove_own(path: Path, identity: tuple[int, int]) -> None:
    """Remove ``path`` if it is still the file (st_dev, st_ino) this install created."""
    try:
        info = os.lstat(path)
    except OSError:
        return
    if (info.st_dev, info.st_ino) == identity:
        path.unlink(missing_ok=True)


def _commit(home: AgentHome, staging: Path, manifest: dict[str, Any],
            config: AgentConfig | None, key: str | None, old: AgentState,
            machine_id: Callable[[AgentHome], str]) -> Installed:
    """Create a new standalone config (when ``config`` is None; refused when one appeared
    meanwhile), move ``staging`` to ``models/<version_id>`` and write ``state.json``; on an
    error undo the move, and remove the config only if this install created it (and so the
    ``<home>/machine-id`` that ``machine_id`` keeps where the machine has no id, if this
    install made it: no device id was given out)."""
    model = manifest["model"]
    version_id: str = model["version_id"]
    new_config = config is None
    kept_id: tuple[int, int] | None = None
    if config is None:
        kept = home.root / "machine-id"
        had_id = present(kept)
        device_id = "offline-" + machine_id(home)[:12]
        if not had_id and present(kept):
            info = os.lstat(kept)
            kept_id = info.st_dev, info.st_ino
        config = offline_config(str(key), device_id, socket.gethostname())
    target = home.model_dir(version_id)
    aside = home.models_dir / f".replaced-{secrets.token_hex(6)}" if target.exists() else None
    previous = old.current if old.current != version_id else old.previous
    state = AgentState(current=version_id, previous=previous, deployment=old.deployment)
    created: tuple[int, int] | None = None
    moved = False
    try:
        if new_config:
            created = _create_config(home, config)
        if aside is not None:
            target.replace(aside)
        staging.replace(target)
        moved = True
        home.save_state(state)
    except BaseException:
        if moved:
            shutil.rmtree(target, ignore_errors=True)
        if aside is not None and aside.exists():
            aside.replace(target)
        if created is not None:
            _remove_own(home.config_path, created)
        if kept_id is not None:
            _remove_own(home.root / "machine-id", kept_id)
        raise
    if aside is not None:
        shutil.rmtree(aside, ignore_errors=True)
    _prune(home, {version_id, previous})
    # verify_manifest checked it: the key_id of the trusted key that made the signature
    key_id = str(manifest["signature"]["key_id"])
    return Installed(name=printable(str(model.get("name", ""))),
                     version=printable(str(model.get("version", ""))),
                     version_id=version_id, key_id=key_id, previous=previous,
                     device_id=config.device_id, new_config=new_config)


def _prune(home: AgentHome, keep: set[str | None]) -> None:
    """Delete installed versions other than ``keep`` (current and previous), as the
    convergence loop does after a deployment; hidden staging directories are left to it."""
    for path in home.models_dir.iterdir():
        if path.name not in keep and not path.name.startswith(".") and path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
