"""The model-signing key on disk: one Ed25519 private key in a PEM file (PKCS#8, unencrypted).

No Django here: ``sampan.settings`` calls :func:`read_private_key` to refuse to start outside dev
with a missing or unusable ``SAMPAN_SIGNING_KEY_FILE``. A key made by
``openssl genpkey -algorithm ed25519 -out key.pem`` or by :func:`generate_private_key` works.
"""

from __future__ import annotations

import base64
import os
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

__all__ = ["KeyFileError", "check_private_key_permissions", "create_private_key_file",
           "generate_private_key", "private_key_pem", "public_key_b64", "read_private_key",
           "replace_private_key_file"]


class KeyFileError(ValueError):
    """The key file is missing, unreadable, not PEM or not an Ed25519 private key (names it)."""


def read_private_key(path: Path | str) -> Ed25519PrivateKey:
    """The Ed25519 private key in the PEM file ``path``.

    Raises:
        KeyFileError: "<path> does not exist", "... cannot be read: ...", "... is not a PEM
            private key", "... holds a <type>, not an Ed25519 private key".
    """
    path = Path(path)
    try:
        pem = path.read_bytes()
    except FileNotFoundError:
        raise KeyFileError(f"{path} does not exist") from None
    except OSError as error:
        raise KeyFileError(f"{path} cannot be read: {error.strerror or error}") from None
    try:
        key = serialization.load_pem_private_key(pem, password=None)
    except (ValueError, TypeError) as error:
        raise KeyFileError(f"{path} is not an unencrypted PEM private key ({error})") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise KeyFileError(f"{path} holds a {type(key).__name__}, not an Ed25519 private key")
    return key


def check_private_key_permissions(path: Path | str) -> None:
    """Refuse a key file that other users may read or anyone but its owner may write, as ssh
    refuses such a private key: whoever reads it can sign models that every device trusts.

    Raises:
        KeyFileError: "<path> can be read or written by other users (mode 0644): chmod 600
            <path> ..." (a Docker or Kubernetes secret: mount it with mode 0400 / defaultMode
            0400).
    """
    path = Path(path)
    if os.name != "posix":
        return
    try:
        mode = path.stat().st_mode & 0o777
    except OSError as error:
        raise KeyFileError(f"{path} cannot be read: {error.strerror or error}") from None
    if mode & 0o077:
        raise KeyFileError(
            f"{path} can be read or written by other users (mode {mode:04o}): chmod 600 {path} "
            "(as a Docker or Kubernetes secret: mode 0400, or defaultMode: 0400)")


def generate_private_key() -> Ed25519PrivateKey:
    return Ed25519PrivateKey.generate()


def private_key_pem(key: Ed25519PrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def public_key_b64(key: Ed25519PrivateKey) -> str:
    """base64 of the 32 raw bytes of the public half (the form devices receive, contracts.md)."""
    raw = key.public_key().public_bytes(serialization.Encoding.Raw,
                                        serialization.PublicFormat.Raw)
    return base64.b64encode(raw).decode("ascii")


def _write_temp(path: Path, key: Ed25519PrivateKey) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(private_key_pem(key))
        handle.flush()
        os.fsync(handle.fileno())
    return temp


def create_private_key_file(path: Path | str) -> None:
    """Write a new key to ``path`` (mode 0600) unless a key is already there.

    Two processes racing both end up with the same key: ``os.link`` fails for the loser, who
    keeps the winner's file.
    """
    path = Path(path)
    temp = _write_temp(path, generate_private_key())
    try:
        os.link(temp, path)
    except FileExistsError:
        pass
    finally:
        temp.unlink()


def replace_private_key_file(path: Path | str, key: Ed25519PrivateKey) -> None:
    """Atomically replace the key in ``path`` by ``key`` (mode 0600)."""
    path = Path(path)
    os.replace(_write_temp(path, key), path)
