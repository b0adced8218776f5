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
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings

from sampan.core import storage
from sampan.core.errors import Conflict, ValidationFailed
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
        raise ValidationFailed(f"unknown target {target!r}; one of {', '.join(TARGETS)}",
                               field="target")
    if python not in PYTHONS:
        raise ValidationFailed(f"unsupported Python {python!r}; one of {', '.join(PYTHONS)}",
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
        raise Conflict(f"pip {arguments[0]} failed (exit {done.returncode}): {tail}")


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
        _pip(["wheel", "--no-deps", "--no-build-isolation", "--quiet", "--wheel-dir",
              str(staging), str(repo)])
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
        if house.name == folder.name:
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
        f"this server has no agent wheels for {target} with Python {python}: an administrator "
        f"runs 'manage.py sampan_wheelhouse --target {target} --python {python}' once (it "
        "needs PyPI or a pip mirror)", field="target")


def _signing_key(manifest: dict) -> SigningKey:
    key_id = (manifest.get("signature") or {}).get("key_id")
    key = SigningKey.objects.filter(key_id=key_id).first()
    if key is None or key.state == SigningKeyState.RETIRED:
        raise Conflict(f"the manifest is signed by key {key_id!r}, which devices no longer "
                       "trust (retired); register the model again to sign it with the active "
                       "key")
    return key


def install_script(version: ModelVersion, house: Wheelhouse) -> str:
    """``install.sh`` of a bundle: checks the Python version and the files' checksums, creates
    a virtual environment, installs the agent from ``wheels/`` without an index and the model
    with ``sampan-agent install-model``. POSIX sh."""
    major, minor = house.python.split(".")
    return f"""#!/bin/sh
# Sampan offline agent bundle: {version.model.name} v{version.version} for {house.target},
# Python {house.python}. Installs without any network: the agent from wheels/, the model
# from model/ (its signature checked against signing-key.pub). Environment:
#   PYTHON               the Python {house.python} to use (default: python3)
#   SAMPAN_AGENT_PREFIX  where the agent's virtual environment goes
#                        (default: $HOME/.local/share/sampan-agent)
#   SAMPAN_AGENT_HOME    the agent's state folder (default: $HOME/.sampan-agent)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
python=${{PYTHON:-python3}}
prefix=${{SAMPAN_AGENT_PREFIX:-$HOME/.local/share/sampan-agent}}
if ! "$python" -c 'import sys; sys.exit(sys.version_info[:2] != ({major}, {minor}))'; then
    echo "this bundle is for Python {house.python}; $python is $("$python" -V 2>&1)." \\
         "Set PYTHON to a Python {house.python}, or download the bundle for your Python." >&2
    exit 1
fi
"$python" - "$here" <<'CHECK'
import hashlib, pathlib, sys
root = pathlib.Path(sys.argv[1])
for line in (root / "SHA256SUMS").read_text().splitlines():
    digest, name = line.split("  ", 1)
    h = hashlib.sha256()
    with open(root / name, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    if h.hexdigest() != digest:
        sys.exit(f"{{name}}: checksum mismatch (damaged download?)")
CHECK
"$python" -m venv "$prefix"
"$prefix/bin/python" -m pip install --no-index --find-links "$here/wheels" \\
    --disable-pip-version-check --quiet 'sampan[edge]'
"$prefix/bin/sampan-agent" install-model "$here/model" --trust-key-file "$here/signing-key.pub"
echo "Serve it: $prefix/bin/sampan-agent run --host 0.0.0.0 --port 8700"
"""


def _readme(version: ModelVersion, house: Wheelhouse) -> str:
    return f"""Sampan offline bundle
=====================
Model: {version.model.name} v{version.version} ({version.task_type}), version id {version.pk}
Device: {house.target}, Python {house.python}

Install on the device (no network needed):   sh install.sh
Then serve:    ~/.local/share/sampan-agent/bin/sampan-agent run --host 0.0.0.0 --port 8700
Predict:       curl --data-binary @photo.jpg http://DEVICE:8700/v1/predict

The agent runs for as long as you let it: there is no activation server, no licence
check and no expiry. The model's manifest is signed; the agent checks it against
signing-key.pub before serving. SHA256SUMS lists every file of this bundle.
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


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def offline_bundle(version: ModelVersion, *, target: str, python: str) -> Path:
    """The bundle of ``version`` for ``target``/``python`` as a tar file on this host (built
    on first use, then cached; read-only for the caller). Layout under :func:`bundle_name`:
    ``install.sh``, ``README.txt``, ``SHA256SUMS``, ``signing-key.pub`` (the base64 public key
    that signed the manifest), ``model/manifest.json``, ``model/model.onnx``, ``wheels/*.whl``.

    Raises ValidationFailed (target/python), Conflict (no wheelhouse for them:
    ``wheelhouse_missing``; a manifest signed by a retired key), NotFound, StorageUnavailable
    (the package's files)."""
    house = wheelhouse_get(target, python)
    cache = storage.cache_root() / "bundles"  # trimmed with the download cache
    cache.mkdir(parents=True, exist_ok=True)
    stem = f"{version.pk}-{house.name}"
    cached = cache / f"{stem}-{house.build_id}.tar"
    if cached.exists():
        return cached
    manifest_path = selectors.model_version_file(version, "manifest.json")
    model_path = selectors.model_version_file(version, "model.onnx")
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    key = _signing_key(manifest)
    top = bundle_name(version, house)
    texts = {"install.sh": install_script(version, house).encode(),
             "README.txt": _readme(version, house).encode(),
             "signing-key.pub": (key.public_key + "\n").encode()}
    files = {f"model/{path.name}": path for path in (manifest_path, model_path)}
    files.update({f"wheels/{name}": house.path / name for name in house.wheels})
    sums = [f"{hashlib.sha256(data).hexdigest()}  {name}" for name, data in texts.items()]
    sums += [f"{_sha256(path)}  {name}" for name, path in files.items()]
    partial = cache / f".tmp-{stem}.{secrets.token_hex(4)}"  # cache_trim skips .tmp-
    try:
        with tarfile.open(partial, "w", format=tarfile.PAX_FORMAT) as archive:
            for name, data in texts.items():
                _add(archive, f"{top}/{name}", data, 0o755 if name.endswith(".sh") else 0o644)
            _add(archive, f"{top}/SHA256SUMS", ("\n".join(sums) + "\n").encode())
            for name, path in files.items():
                info = archive.gettarinfo(str(path), arcname=f"{top}/{name}")
                info.uid = info.gid = 0
                info.uname = info.gname = ""
                info.mode = 0o644
                with path.open("rb") as handle:
                    archive.addfile(info, handle)
        os.replace(partial, cached)
    finally:
        partial.unlink(missing_ok=True)
    for stale in cache.glob(f"{stem}-*.tar"):  # bundles of an earlier wheelhouse build
        if stale != cached:
            stale.unlink(missing_ok=True)
    return cached
