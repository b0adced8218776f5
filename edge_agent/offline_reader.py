"""What an offline install (:mod:`edge_agent.offline`) reads, bounded and safely: the package,
its signed manifest, the trust key file and the home's ``agent.json`` and ``state.json``.

A package is ``manifest.json`` + the files it lists (``model.onnx``): a directory, or the
platform's "Download package" zip holding them at its root (at most :data:`ZIP_MEMBERS_LIMIT`
plain, unencrypted members, all listed by the signed manifest). :class:`PackageSource` streams
each file with a byte cap; :func:`parse_manifest` checks the manifest's JSON, its Ed25519
signature against the keys given and the fields an install relies on; :func:`read_trust_key`,
:func:`load_config` and :func:`load_state` read the key and home files, capped and checked.
Only regular files are read (a FIFO or device is refused without a blocking open: checked,
opened ``O_NONBLOCK``, checked again). Every refusal (a corrupt zip, JSON nested too deeply
included) is an :class:`OfflineInstallError`: one line naming the file or field.
"""

from __future__ import annotations

import errno
import json
import lzma
import os
import re
import stat
import struct
import unicodedata
import zipfile
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from edge_agent.home import AgentConfig, AgentHome, AgentState
from edge_agent.runtime import (
    MANIFEST_FILE,
    MODEL_FILE,
    ManifestError,
    public_key_id,
    verify_manifest,
)

__all__ = ["HOME_FILE_LIMIT", "KEY_FILE_LIMIT", "MANIFEST_LIMIT", "ZIP_MEMBERS_LIMIT",
           "OfflineInstallError", "PackageSource", "load_config", "load_state",
           "parse_manifest", "present", "printable", "read_trust_key", "reason"]

#: largest manifest.json read (bytes); a real one is a few KiB
MANIFEST_LIMIT = 1 << 20
#: largest trust key file read (bytes); the key itself is 44 characters
KEY_FILE_LIMIT = 4096
#: largest agent.json / state.json read (bytes); real ones are well under 1 KiB
HOME_FILE_LIMIT = 1 << 20
#: most members a package zip may have (manifest.json and the files it lists)
ZIP_MEMBERS_LIMIT = 16
_CHUNK = 1 << 20
#: file names in a package: plain names, as edge_agent.runtime.verify_files allows them
_PLAIN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
#: a model version id becomes a directory name under models/
_VERSION_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
_KEY_FORMAT = "expected one line: base64 of the 32-byte raw Ed25519 public key"
#: what reading a zip (its directory, or a member: header, decompression, CRC) raises on a
#: damaged or unsupported archive: zipfile's own errors, the decompressors' (deflate: zlib.error,
#: bzip2: OSError, lzma: LZMAError; a truncated stream: EOFError), a method or encryption it
#: cannot read (NotImplementedError, RuntimeError), a bad header (struct.error, a member name
#: that is not UTF-8: ValueError)
_ZIP_ERRORS: tuple[type[BaseException], ...] = (
    zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError, RuntimeError, OSError,
    EOFError, ValueError, zlib.error, lzma.LZMAError, struct.error)
_DEPTH = "nested too deeply"


class OfflineInstallError(Exception):
    """An offline install refused. ``str(error)`` is one line naming the file or field (line
    breaks become spaces, other control characters are dropped)."""

    def __init__(self, message: str) -> None:
        super().__init__(printable(" ".join(message.split())))


def printable(text: str) -> str:
    """``text`` without control, format, private-use or unassigned characters (Unicode
    category C*) and line or paragraph separators (Zl, Zp): what a terminal line may show of a
    string that comes from a package."""
    return "".join(char for char in text
                   if unicodedata.category(char)[0] != "C"
                   and unicodedata.category(char) not in ("Zl", "Zp"))



class _NotRegularFile(OSError):
    """A path that is a FIFO, a device, a directory or a socket where a file is read."""


_KINDS: tuple[tuple[Callable[[int], bool], str], ...] = (
    (stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"))


def _check_regular(mode: int) -> None:
    if not stat.S_ISREG(mode):
        kind = next((name for test, name in _KINDS if test(mode)), "not a plain file")
        raise _NotRegularFile(errno.EINVAL, f"not a regular file ({kind})")


def _open_regular(path: Path) -> tuple[IO[bytes], int]:
    """``path`` (symlinks followed) opened for reading, and its size. A FIFO or device is
    refused before it is opened; a path swapped for one meanwhile is opened non-blocking, so
    it is refused too instead of blocking.

    Raises:
        FileNotFoundError: no such file (or a symlink to nothing).
        _NotRegularFile: not a regular file (``strerror`` says what it is).
        OSError: not readable.
    """
    _check_regular(os.stat(path).st_mode)
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    try:
        info = os.fstat(fd)
        _check_regular(info.st_mode)
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb"), info.st_size
    except BaseException:
        os.close(fd)
        raise


def reason(error: BaseException) -> str:
    """An error's reason for a message: an OSError's strerror, else its text (or type)."""
    if isinstance(error, OSError) and error.strerror:
        return error.strerror
    return str(error) or type(error).__name__


def _json_type(value: object) -> str:
    """What a JSON value is, in JSON's words."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    names = {dict: "an object", list: "an array", str: "a string", int: "a number",
             float: "a number"}
    return names.get(type(value), type(value).__name__)


def read_trust_key(path: Path) -> str:
    """The public key in a trust key file: one line, base64 of 32 raw Ed25519 bytes.

    Raises:
        OfflineInstallError: unreadable, not a regular file, too long, not text, or not such a
            key (names the file).
    """
    try:
        handle, _ = _open_regular(path)
        with handle:
            raw = handle.read(KEY_FILE_LIMIT + 1)
    except OSError as error:
        raise OfflineInstallError(
            f"cannot read the trust key file {path}: {reason(error)}") from error
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


class PackageSource:
    """A package to read: a directory, or a zip with the files at its root."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._file: IO[bytes] | None = None
        self._zip: zipfile.ZipFile | None = None
        self._members: dict[str, zipfile.ZipInfo] = {}

    def __enter__(self) -> PackageSource:
        what = (f"a package directory (with {MANIFEST_FILE} and {MODEL_FILE}) or a zip of "
                "them")
        try:
            if stat.S_ISDIR(os.stat(self.path).st_mode):
                return self
            self._file, _ = _open_regular(self.path)
        except FileNotFoundError as error:
            raise OfflineInstallError(f"{self.path}: no such package ({what})") from error
        except _NotRegularFile as error:
            raise OfflineInstallError(f"{self.path}: {error.strerror}; expected {what}"
                                      ) from error
        except OSError as error:
            raise OfflineInstallError(f"{self.path}: cannot read: {reason(error)}") from error
        try:
            self._zip = zipfile.ZipFile(self._file)
            self._index(self._zip.infolist())
        except _ZIP_ERRORS as error:
            self.__exit__()
            raise OfflineInstallError(f"{self.path}: not a package directory or a readable "
                                      f"zip: {reason(error)}") from error
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        if self._zip is not None:
            self._zip.close()
        if self._file is not None:
            self._file.close()

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
        """The file ``name`` to read, refused when it says it is over ``limit`` bytes (or, in
        a directory, is not a regular file)."""
        if self._zip is None:
            try:
                handle, size = _open_regular(self.path / name)
            except FileNotFoundError as error:
                raise OfflineInstallError(f"{self.label(name)}: missing") from error
            except _NotRegularFile as error:
                raise OfflineInstallError(f"{self.label(name)}: {error.strerror}") from error
            except OSError as error:
                raise OfflineInstallError(f"{self.label(name)}: cannot read: "
                                          f"{reason(error)}") from error
        else:
            info = self._members.get(name)
            if info is None:
                raise OfflineInstallError(f"{self.label(name)}: missing from the zip")
            size = info.file_size
            try:
                handle = self._zip.open(info)
            except _ZIP_ERRORS as error:
                raise OfflineInstallError(f"{self.label(name)}: cannot read from the zip: "
                                          f"{reason(error)}") from error
        with handle:
            if size > limit:
                raise OfflineInstallError(f"{self.label(name)}: {size} bytes, over the "
                                          f"{limit} bytes allowed")
            yield handle

    def read(self, name: str, limit: int, sink: Callable[[bytes], object]) -> int:
        """Stream the file ``name`` into ``sink``, at most ``limit`` bytes whatever headers
        say; returns the byte count. Raises OfflineInstallError (over the limit, unreadable,
        a corrupt zip member); what ``sink`` raises (a full disk) goes through."""
        where = " from the zip" if self._zip is not None else ""
        total = 0
        with self.open(name, limit) as handle:
            while True:
                try:
                    chunk = handle.read(min(_CHUNK, limit + 1 - total))
                except _ZIP_ERRORS as error:
                    raise OfflineInstallError(f"{self.label(name)}: cannot read{where}: "
                                              f"{reason(error)}") from error
                if not chunk:
                    return total
                total += len(chunk)
                if total > limit:
                    raise OfflineInstallError(f"{self.label(name)}: over the {limit} "
                                              "bytes allowed")
                sink(chunk)


def parse_manifest(source: PackageSource, data: bytes, keys: list[str]) -> dict[str, Any]:
    """The signed manifest, checked: a JSON object, signed by one of ``keys``, with a model
    version id usable as a directory name and a byte size for each listed file."""
    label = source.label(MANIFEST_FILE)
    try:
        manifest = json.loads(data.decode("utf-8"))
    except RecursionError as error:
        raise OfflineInstallError(f"{label}: not JSON: {_DEPTH}") from error
    except (UnicodeDecodeError, ValueError) as error:
        raise OfflineInstallError(f"{label}: not JSON: {error}") from error
    if not isinstance(manifest, dict):
        raise OfflineInstallError(f"{label}: not a JSON object")
    try:
        verify_manifest(manifest, keys)
    except ManifestError as error:
        raise OfflineInstallError(f"{label}: {error}") from error
    except RecursionError as error:  # the signed form of a deep value (canonical_json)
        raise OfflineInstallError(f"{label}: {_DEPTH}") from error
    except (TypeError, ValueError) as error:  # e.g. a signature.key_id that is an array
        raise OfflineInstallError(f"{label}: not a valid signed manifest: {error}") from error
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


def present(path: Path) -> bool:
    """Whether ``path`` exists (a symlink to nothing counts: it is not free to create)."""
    return os.path.lexists(path)


def _load_object(path: Path) -> dict[str, Any]:
    """The JSON object in the home file ``path`` (agent.json, state.json).

    Raises:
        OfflineInstallError: unreadable, not a regular file, too long, not JSON (nested too
            deeply included) or not an object; names the file.
    """
    try:
        handle, _ = _open_regular(path)
        with handle:
            raw = handle.read(HOME_FILE_LIMIT + 1)
    except OSError as error:
        raise OfflineInstallError(f"cannot read {path}: {reason(error)}") from error
    if len(raw) > HOME_FILE_LIMIT:
        raise OfflineInstallError(f"{path}: over {HOME_FILE_LIMIT} bytes")
    try:
        data = json.loads(raw.decode("utf-8"))
    except RecursionError as error:
        raise OfflineInstallError(f"{path}: not JSON: {_DEPTH}") from error
    except (UnicodeDecodeError, ValueError) as error:
        raise OfflineInstallError(f"{path}: not JSON: {error}") from error
    if not isinstance(data, dict):
        raise OfflineInstallError(f"{path}: not a JSON object ({_json_type(data)})")
    return data


def load_config(path: Path) -> AgentConfig:
    """``agent.json``, with the field types an install relies on checked (names the field)."""
    data = _load_object(path)
    required = ("server_url", "device_id", "credential", "signing_public_key")
    for name in required:
        if name not in data:
            raise OfflineInstallError(f"{path}: {name}: missing")
    for name in (*required, "name"):
        if name in data and not isinstance(data[name], str):
            raise OfflineInstallError(f"{path}: {name}: expected a string, got "
                                      f"{_json_type(data[name])}")
    interval = data.get("heartbeat_interval_s", 30.0)
    if not isinstance(interval, int | float) or isinstance(interval, bool):
        raise OfflineInstallError(f"{path}: heartbeat_interval_s: expected a number, got "
                                  f"{_json_type(interval)}")
    trusted = data.get("trusted_signing_keys", [])
    if not isinstance(trusted, list) or not all(isinstance(key, str) for key in trusted):
        raise OfflineInstallError(f"{path}: trusted_signing_keys: expected an array of "
                                  "base64 Ed25519 public keys")
    known = AgentConfig.__dataclass_fields__
    config = AgentConfig(**{key: value for key, value in data.items() if key in known})
    for index, key in enumerate(config.trusted_keys()):
        field = f"trusted_signing_keys[{index}]" if trusted else "signing_public_key"
        try:
            public_key_id(key)
        except ManifestError as error:
            raise OfflineInstallError(f"{path}: {field}: {error}") from error
    return config


def load_state(home: AgentHome) -> AgentState:
    """``state.json`` (an empty state when there is none), field types checked."""
    path = home.state_path
    if not present(path):
        return AgentState()
    data = _load_object(path)
    for name in ("current", "previous"):
        value = data.get(name)
        if value is not None and not isinstance(value, str):
            raise OfflineInstallError(f"{path}: {name}: expected a version id (a string), got "
                                      f"{_json_type(value)}")
    deployment = data.get("deployment")
    if deployment is not None and not isinstance(deployment, dict):
        raise OfflineInstallError(f"{path}: deployment: expected an object, got "
                                  f"{_json_type(deployment)}")
    try:
        return AgentState.from_dict(data)
    except TypeError as error:
        raise OfflineInstallError(f"{path}: deployment: {error}") from error
