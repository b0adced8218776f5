"""Offline bundles: the agent's wheels, a signed model package and an install script in one
archive, for a device that never reaches the platform (docs/edge.md, "Offline install").

The wheels come from a wheelhouse on the web host (``SAMPAN_WHEELHOUSE``), one folder per
target (``linux-x86_64-py3.11``), filled once by ``manage.py sampan_wheelhouse`` (which needs
PyPI, or a mirror in pip's configuration): Sampan's own wheel built from this checkout and
``pip download`` of the ``edge`` extra for the target's platform and Python. Bundles are built
on first download into ``SAMPAN_DATA_DIR/cache/bundles`` and served from there afterwards (a
model version never changes; a rebuilt wheelhouse gets new bundles).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import io
import json
import os
import platform
import re
import secrets
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from django.conf import settings
from django.utils.translation import gettext as _

from sampan.core import storage
from sampan.core.errors import Conflict, ValidationFailed
from sampan.core.names import display_name
from sampan.registry import selectors
from sampan.registry.models import ModelVersion, SigningKey, SigningKeyState

#: target -> (machine, the newest glibc it is for): ``pip download --platform`` gets every
#: manylinux tag from that glibc down to 2.5 (:func:`platform_tags`). glibc 2.28: Debian 10,
#: Ubuntu 18.10, RHEL 8 and the Jetson and Raspberry Pi OS releases of 2020 on; onnxruntime's
#: Linux wheels need it.
TARGETS: dict[str, tuple[str, int]] = {
    "linux-x86_64": ("x86_64", 28),
    "linux-aarch64": ("aarch64", 28),
}


def platform_tags(target: str) -> list[str]:
    """The platform tags a device of ``target`` installs (PEP 600 ``manylinux_2_N`` from the
    target's glibc down, and the PEP 513/571/599 aliases ``manylinux1/2010/2014``), newest
    first. pip takes ``--platform`` literally: given only ``manylinux_2_28_x86_64`` it found
    no stable cffi (whose wheels are tagged 2_17) and fetched a beta that ``pip install``
    then refused on the device."""
    machine, glibc = TARGETS[target]
    tags = [f"manylinux_2_{minor}_{machine}" for minor in range(glibc, 16, -1)]
    tags.append(f"manylinux2014_{machine}")
    if machine == "x86_64":
        tags += [f"manylinux_2_{minor}_{machine}" for minor in range(16, 4, -1)]
        tags += [f"manylinux2010_{machine}", f"manylinux1_{machine}"]
    return tags


#: the Python versions the agent supports (pyproject's requires-python >= 3.11)
PYTHONS = ("3.11", "3.12", "3.13")
#: the file a finished wheelhouse folder holds: its build id, time and contents
BUILD_FILE = "wheelhouse.json"
#: a wheel's file name (PEP 427): a plain name in the folder, never a path
_WHEEL_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+!-]*\.whl")
_PIP_TIMEOUT_S = 900


class WheelhouseMissing(Conflict):
    code = "wheelhouse_missing"


@dataclass(frozen=True)
class Wheelhouse:
    """One built wheelhouse folder: ``target`` (a key of :data:`TARGETS`), ``python``
    (``"3.11"``), ``build_id`` (random, new at every build), ``wheels`` (file names),
    ``bytes`` (their total size), ``built_at`` (Unix seconds)."""

    target: str
    python: str
    build_id: str
    wheels: tuple[str, ...]
    bytes: int
    built_at: float

    @property
    def name(self) -> str:
        return folder_name(self.target, self.python)

    @property
    def path(self) -> Path:
        return wheelhouse_root() / self.name


def wheelhouse_root() -> Path:
    return Path(settings.SAMPAN_WHEELHOUSE)


def folder_name(target: str, python: str) -> str:
    return f"{target}-py{python}"


def this_machine() -> tuple[str, str]:
    """(target, python) of the host running this code, e.g. ("linux-x86_64", "3.11")."""
    machine = {"amd64": "x86_64", "arm64": "aarch64"}.get(platform.machine().lower(),
                                                         platform.machine().lower())
    return f"{sys.platform}-{machine}", f"{sys.version_info[0]}.{sys.version_info[1]}"


def check_target(target: str, python: str) -> None:
    """Raises ValidationFailed (field ``target`` or ``python``) naming the supported values."""
    if target not in TARGETS:
        raise ValidationFailed(_("unknown target %(target)r; one of %(targets)s")
                               % {"target": target, "targets": ", ".join(TARGETS)},
                               field="target")
    if python not in PYTHONS:
        raise ValidationFailed(_("unsupported Python %(python)r; one of %(pythons)s")
                               % {"python": python, "pythons": ", ".join(PYTHONS)},
                               field="python")


def edge_requirements(repo: Path | None = None) -> list[str]:
    """The ``edge`` extra of ``pyproject.toml`` (what the agent needs), e.g.
    ``["onnxruntime==1.32.0", ...]``."""
    pyproject = (repo or Path(settings.REPO_DIR)) / "pyproject.toml"
    with pyproject.open("rb") as handle:
        extras = tomllib.load(handle)["project"]["optional-dependencies"]
    return [item for item in extras["edge"] if not item.startswith("sampan")]


def _pip(arguments: list[str]) -> None:
    command = [sys.executable, "-m", "pip", "--disable-pip-version-check", *arguments]
    done = subprocess.run(command, capture_output=True, text=True, timeout=_PIP_TIMEOUT_S,
                          check=False)
    if done.returncode != 0:
        tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-6:])
        raise Conflict(_("pip %(command)s failed (exit %(code)s): %(tail)s")
                       % {"command": arguments[0], "code": done.returncode, "tail": tail})


#: what Sampan's wheel is built from (pyproject.toml's packages and readme)
_SOURCES = ("pyproject.toml", "README.md", "LICENSE", "edge_agent", "workers",
            "platform/sampan")


def _source_copy(repo: Path, target: Path) -> Path:
    """The files of :data:`_SOURCES` under ``repo`` copied to ``target`` (no caches)."""
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "node_modules", "build",
                                    "*.egg-info")
    for name in _SOURCES:
        source = repo / name
        if source.is_dir():
            shutil.copytree(source, target / name, ignore=ignore)
        elif source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)
    return target


def wheelhouse_build(*, target: str, python: str, repo: Path | None = None) -> Wheelhouse:
    """Fill the wheelhouse folder of ``target``/``python``: Sampan's wheel built from ``repo``
    (default: this checkout) and the wheels of :func:`edge_requirements` with their
    dependencies for that platform (``pip download --only-binary=:all:``). Built in a
    temporary folder and swapped in whole: a failed build leaves the previous one serving.

    Raises ValidationFailed for an unknown target or Python, Conflict when pip fails (no
    network, no wheel for that platform: pip's last lines in the message)."""
    check_target(target, python)
    repo = repo or Path(settings.REPO_DIR)
    root = wheelhouse_root()
    root.mkdir(parents=True, exist_ok=True)
    final = root / folder_name(target, python)
    staging = root / f".{final.name}.{secrets.token_hex(4)}"
    staging.mkdir()
    try:
        with tempfile.TemporaryDirectory(prefix="sampan-wheel-") as temp:
            # built from a copy: a read-only checkout works, and nothing (build/, *.egg-info,
            # files deleted since an earlier build) is left behind or carried into the wheel
            source = _source_copy(repo, Path(temp) / "src")
            _pip(["wheel", "--no-deps", "--no-build-isolation", "--quiet", "--wheel-dir",
                  str(staging), str(source)])
        tags = [item for tag in platform_tags(target) for item in ("--platform", tag)]
        _pip(["download", "--quiet", "--only-binary=:all:", *tags, "--python-version", python,
              "--implementation", "cp", "--dest", str(staging), *edge_requirements(repo)])
        wheels = sorted(path.name for path in staging.glob("*.whl"))
        built = Wheelhouse(target=target, python=python, build_id=secrets.token_hex(8),
                           wheels=tuple(wheels),
                           bytes=sum((staging / name).stat().st_size for name in wheels),
                           built_at=time.time())
        (staging / BUILD_FILE).write_text(json.dumps({
            "target": target, "python": python, "build_id": built.build_id,
            "wheels": wheels, "bytes": built.bytes, "built_at": built.built_at}, indent=2))
        retired = root / f".{final.name}.old-{secrets.token_hex(4)}"
        if final.exists():
            final.replace(retired)
        staging.replace(final)
        shutil.rmtree(retired, ignore_errors=True)
        return built
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def wheelhouses() -> list[Wheelhouse]:
    """The finished wheelhouse folders (those with a readable :data:`BUILD_FILE`), sorted."""
    root = wheelhouse_root()
    found = []
    for folder in sorted(root.iterdir()) if root.is_dir() else ():
        if folder.name.startswith("."):
            continue
        try:
            data = json.loads((folder / BUILD_FILE).read_text(encoding="utf-8"))
            house = Wheelhouse(target=data["target"], python=data["python"],
                               build_id=data["build_id"], wheels=tuple(data["wheels"]),
                               bytes=int(data["bytes"]), built_at=float(data["built_at"]))
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if house.name == folder.name and all(
                _WHEEL_NAME.fullmatch(name) and (folder / name).is_file()
                and not (folder / name).is_symlink() for name in house.wheels):
            found.append(house)
    return found


def wheelhouse_get(target: str, python: str) -> Wheelhouse:
    """The built wheelhouse of ``target``/``python``. Raises ValidationFailed for unknown
    values, Conflict (code ``wheelhouse_missing``) with the command that builds it."""
    check_target(target, python)
    for house in wheelhouses():
        if (house.target, house.python) == (target, python):
            return house
    raise WheelhouseMissing(
        _("this server has no agent wheels for %(target)s with Python %(python)s: an "
          "administrator runs 'manage.py sampan_wheelhouse --target %(target)s --python "
          "%(python)s' once (it needs PyPI or a pip mirror)")
        % {"target": target, "python": python}, field="target")


def _signing_key(manifest: dict) -> SigningKey:
    key_id = (manifest.get("signature") or {}).get("key_id")
    key = SigningKey.objects.filter(key_id=key_id).first()
    if key is None or key.state == SigningKeyState.RETIRED:
        raise Conflict(_("the manifest is signed by key %(key_id)r, which devices no longer "
                         "trust (retired); register the model again to sign it with the active "
                         "key") % {"key_id": key_id})
    return key


def _sampan_wheel(house: Wheelhouse) -> str:
    for name in house.wheels:
        if name.startswith("sampan-"):
            return name
    raise Conflict(_("the wheelhouse %(name)s holds no Sampan wheel: build it again "
                     "(manage.py sampan_wheelhouse --target %(target)s --python %(python)s)")
                   % {"name": house.name, "target": house.target, "python": house.python})


def install_script(version: ModelVersion, house: Wheelhouse) -> str:
    """``install.sh`` of a bundle (POSIX sh): checks the machine, the Python version, every
    file against SHA256SUMS (and that no file is unlisted), makes a fresh virtual environment,
    installs Sampan's wheel of the bundle (by file name) with its dependencies from ``wheels/``
    without an index, then the model with ``sampan-agent install-model``. No user text from
    the platform is written into it: the model appears by its ASCII slug, in a comment."""
    major, minor = house.python.split(".")
    machine = TARGETS[house.target][0]
    machines = "x86_64 | amd64" if machine == "x86_64" else "aarch64 | arm64"
    return f"""#!/bin/sh
# Sampan offline agent bundle {bundle_name(version, house)}: installs without any network,
# the agent from wheels/ and the model from model/ (its signature checked against
# signing-key.pub). Environment:
#   PYTHON               the Python {house.python} to use (default: python3; needs its venv module,
#                        on Debian and Ubuntu the python3-venv package)
#   SAMPAN_AGENT_PREFIX  the agent's virtual environment, made afresh at each install
#                        (default: $HOME/.local/share/sampan-agent)
#   SAMPAN_AGENT_HOME    the agent's state folder (default: $HOME/.sampan-agent)
set -eu
here=$(CDPATH= cd -- "$(dirname -- "$0")" >/dev/null && pwd)
python=${{PYTHON:-python3}}
prefix=${{SAMPAN_AGENT_PREFIX:-$HOME/.local/share/sampan-agent}}
case "$(uname -s)-$(uname -m)" in
    Linux-{machines.replace(" | ", " | Linux-")}) ;;
    *) echo "this bundle is for {house.target}; this machine is $(uname -s) $(uname -m):" \\
            "download the bundle for its CPU" >&2; exit 1 ;;
esac
if ! "$python" -c 'import sys; sys.exit(sys.version_info[:2] != ({major}, {minor}))'; then
    echo "this bundle is for Python {house.python}; $python is $("$python" -V 2>&1)." \\
         "Set PYTHON to a Python {house.python}, or download the bundle for your Python." >&2
    exit 1
fi
"$python" - "$here" <<'CHECK'
import hashlib, os, sys
root = sys.argv[1]
listed = {{}}
with open(os.path.join(root, "SHA256SUMS"), encoding="utf-8") as sums:
    for line in sums.read().splitlines():
        digest, name = line.split("  ", 1)
        listed[name] = digest
found = set()
for folder, _, files in os.walk(root):
    for file in files:
        found.add(os.path.relpath(os.path.join(folder, file), root).replace(os.sep, "/"))
extra = sorted(found - set(listed) - {{"SHA256SUMS"}})
if extra:
    sys.exit("files that are not part of this bundle: " + ", ".join(extra)
             + " (remove them, or unpack the bundle again)")
for name, digest in listed.items():
    h = hashlib.sha256()
    try:
        with open(os.path.join(root, name), "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
    except OSError as error:
        sys.exit(f"{{name}}: {{error}} (unpack the bundle again)")
    if h.hexdigest() != digest:
        sys.exit(f"{{name}}: checksum mismatch (damaged download? unpack it again)")
CHECK
if [ -e "$prefix" ] && [ ! -f "$prefix/pyvenv.cfg" ] && [ -n "$(ls -A "$prefix")" ]; then
    echo "$prefix exists and is not a virtual environment: set SAMPAN_AGENT_PREFIX to" \\
         "another folder" >&2
    exit 1
fi
"$python" -m venv --clear "$prefix"
"$prefix/bin/python" -m pip install --no-index --find-links "$here/wheels" \\
    --disable-pip-version-check --quiet "$here/wheels/{_sampan_wheel(house)}[edge]"
"$prefix/bin/sampan-agent" install-model "$here/model" --trust-key-file "$here/signing-key.pub"
echo "Serve it on this machine:  $prefix/bin/sampan-agent run --port 8700"
echo "Serve it to the network:   $prefix/bin/sampan-agent run --host 0.0.0.0 --port 8700" \\
     "--api-key-file <a file holding a key of 16+ characters>"
"""


def _readme(version: ModelVersion, house: Wheelhouse) -> str:
    return f"""Sampan offline bundle
=====================
Model: {display_name(version.model.name)} v{version.version} ({version.task_type})
Model version id: {version.pk}
Device: {house.target}, Python {house.python} (with its venv module: python3-venv on Debian
and Ubuntu)

Install on the device (no network needed):   sh install.sh
Then serve:    ~/.local/share/sampan-agent/bin/sampan-agent run --port 8700
Predict:       curl --data-binary @photo.jpg http://127.0.0.1:8700/v1/predict
(on the network: run --host 0.0.0.0 --api-key-file FILE, and send the key as
 Authorization: Bearer <key>)

The agent runs for as long as you let it: there is no activation server, no licence
check and no expiry. install.sh checks every file against SHA256SUMS, which tells a
damaged download from a good one; it cannot tell who made the bundle, since the list
travels with it. The model's manifest is signed, and install-model prints the id of the
key it trusts from signing-key.pub: compare it with the platform's
`manage.py sampan_signing_key list` (or ask its administrator) to know the model is
the platform's.
"""


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("._") or "model"


def bundle_name(version: ModelVersion, house: Wheelhouse) -> str:
    """The archive's top folder (ASCII), e.g. ``digits-v3-offline-linux-x86_64-py3.11``."""
    return f"{_slug(version.model.name)}-v{version.version}-offline-{house.name}"


def _add(archive: tarfile.TarFile, name: str, data: bytes, mode: int = 0o644) -> None:
    info = tarfile.TarInfo(name)
    info.size, info.mode, info.mtime = len(data), mode, int(time.time())
    archive.addfile(info, io.BytesIO(data))


class _Hashing(io.RawIOBase):
    """A readable file that hashes what is read from it (sha256), for tarfile.addfile."""

    def __init__(self, handle: BinaryIO) -> None:
        self.handle, self.digest = handle, hashlib.sha256()

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        data = self.handle.read(size)
        self.digest.update(data)
        return data


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """An exclusive advisory lock (fcntl) on ``path``: one build of a bundle at a time."""
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def offline_bundle(version: ModelVersion, *, target: str, python: str, build: bool = True
                   ) -> BinaryIO | None:
    """The bundle of ``version`` for ``target``/``python``, a tar file opened for reading
    (the caller closes it). Built on first use under ``<cache>/bundles`` (one build at a time
    per bundle; the others wait for it), then served from there; a rebuilt wheelhouse gets new
    bundles, the older ones are deleted, and the folder is trimmed to
    ``SAMPAN_BUNDLE_CACHE_MAX_BYTES``, least recently served first. Layout under
    :func:`bundle_name`: ``install.sh``, ``README.txt``, ``signing-key.pub`` (the base64 public
    key that signed the manifest), ``model/manifest.json``, ``model/model.onnx``,
    ``wheels/*.whl`` and last ``SHA256SUMS`` of every other file, hashed as written.
    ``build=False`` (a HEAD request) returns None instead of building one not built yet, after
    the same checks.

    Raises ValidationFailed (target/python), Conflict (no wheelhouse for them:
    ``wheelhouse_missing``; a manifest signed by a retired key, checked at every download; a
    wheelhouse rebuilt during the build), NotFound, StorageUnavailable (the package)."""
    house = wheelhouse_get(target, python)
    manifest_path = selectors.model_version_file(version, "manifest.json")
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    key = _signing_key(manifest)
    cache = storage.cache_root() / "bundles"  # trimmed with the download cache
    cache.mkdir(parents=True, exist_ok=True)
    stem = f"{version.pk}-{house.name}"
    cached = cache / f"{stem}-{house.build_id}.tar"
    if not build:  # never waits for a build under way
        try:
            return cached.open("rb")
        except FileNotFoundError:
            return None
    with _locked(cache / f".tmp-{stem}.lock"):
        try:
            handle = cached.open("rb")
            os.utime(cached)  # recently served: trimmed last
            return handle
        except FileNotFoundError:
            pass
        model_path = selectors.model_version_file(version, "model.onnx")
        _build(cached, version, house, key, {"model/manifest.json": manifest_path,
                                             "model/model.onnx": model_path})
        handle = cached.open("rb")
    for stale in cache.glob(f"{stem}-*.tar"):  # bundles of an earlier wheelhouse build
        if stale != cached:
            stale.unlink(missing_ok=True)
    storage.cache_trim(root=cache, keep={cached},
                       max_bytes=settings.SAMPAN_BUNDLE_CACHE_MAX_BYTES)
    return handle


def _build(cached: Path, version: ModelVersion, house: Wheelhouse, key: SigningKey,
           package: dict[str, Path]) -> None:
    top = bundle_name(version, house)
    texts = {"install.sh": install_script(version, house).encode(),
             "README.txt": _readme(version, house).encode(),
             "signing-key.pub": (key.public_key + "\n").encode()}
    files = {**package, **{f"wheels/{name}": house.path / name for name in house.wheels}}
    sums = [f"{hashlib.sha256(data).hexdigest()}  {name}" for name, data in texts.items()]
    partial = cached.parent / f".tmp-{cached.stem}.{secrets.token_hex(4)}"
    try:
        with tarfile.open(partial, "w", format=tarfile.PAX_FORMAT) as archive:
            for name, data in texts.items():
                _add(archive, f"{top}/{name}", data, 0o755 if name.endswith(".sh") else 0o644)
            for name, path in files.items():
                try:
                    source = path.open("rb")  # open first: a wheelhouse swapped in meanwhile
                except FileNotFoundError:  # leaves this handle on the file it opened
                    raise Conflict(_("%(name)s went away while the bundle was built (the "
                                     "wheelhouse was rebuilt): download it again")
                                   % {"name": name}) from None
                with source:
                    info = tarfile.TarInfo(f"{top}/{name}")
                    info.size, info.mode = os.fstat(source.fileno()).st_size, 0o644
                    info.mtime = int(time.time())
                    hashing = _Hashing(source)
                    archive.addfile(info, hashing)  # type: ignore[arg-type]
                sums.append(f"{hashing.digest.hexdigest()}  {name}")
            _add(archive, f"{top}/SHA256SUMS", ("\n".join(sums) + "\n").encode())
        os.replace(partial, cached)
    finally:
        partial.unlink(missing_ok=True)
