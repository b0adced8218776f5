"""Ed25519 signing of model manifests (``cryptography``).

The private key lives in ``SAMPAN_KEYS_DIR/manifest_ed25519.pem`` (created on first use, mode
0600). Devices receive the public key (base64 of the 32 raw bytes) when they enroll and verify
every manifest with ``edge_agent.runtime.verify_manifest``; the signed bytes are
``edge_agent.runtime.canonical_json(manifest without "signature")`` (docs/contracts.md).
"""

from __future__ import annotations

import base64
import os
import threading
from functools import lru_cache
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from django.conf import settings

from edge_agent.runtime import canonical_json, public_key_id

_lock = threading.Lock()


def _key_path() -> Path:
    return Path(settings.SAMPAN_KEYS_DIR) / "manifest_ed25519.pem"


@lru_cache(maxsize=4)
def _load(path: str) -> Ed25519PrivateKey:
    pem = Path(path).read_bytes()
    key = serialization.load_pem_private_key(pem, password=None)
    if not isinstance(key, Ed25519PrivateKey):
        raise ValueError(f"{path} does not hold an Ed25519 private key")
    return key


def private_key() -> Ed25519PrivateKey:
    """The platform's signing key, created atomically on first use."""
    path = _key_path()
    with _lock:
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            pem = Ed25519PrivateKey.generate().private_bytes(
                serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption())
            tmp = path.with_suffix(f".tmp-{os.getpid()}")
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as handle:
                handle.write(pem)
            try:
                os.link(tmp, path)  # fails if another process won the race: keep theirs
            except FileExistsError:
                pass
            finally:
                tmp.unlink()
    return _load(str(path))


def public_key_b64() -> str:
    raw = private_key().public_key().public_bytes(serialization.Encoding.Raw,
                                                  serialization.PublicFormat.Raw)
    return base64.b64encode(raw).decode()


def sign_manifest(manifest: dict[str, Any]) -> dict[str, Any]:
    """Return a copy of ``manifest`` with its ``signature`` object (ed25519 over canonical JSON)."""
    body = {k: v for k, v in manifest.items() if k != "signature"}
    signature = private_key().sign(canonical_json(body))
    key = public_key_b64()
    return {**body, "signature": {"algorithm": "ed25519", "key_id": public_key_id(key),
                                  "value": base64.b64encode(signature).decode()}}
