"""Ed25519 signing of model manifests and the platform's key ring (``cryptography``).

Two halves, kept apart so that several hosts agree:

- the private key a host signs with is the PEM file ``SAMPAN_SIGNING_KEY_FILE`` (generated on
  first use only when ``SAMPAN_ENV=dev``; provisioned, the same on every host, otherwise). It is
  re-read when the file changes, so a rotation on this host needs no restart;
- the key ring, the public keys devices trust, is the ``SigningKey`` table in the database that
  every host shares: one active key, earlier keys still trusted until they are retired. An empty
  ring takes the host's key as its active key (a new installation, or one from before the ring).

Devices receive the trusted keys when they enroll and in every heartbeat reply and accept a
manifest signed by any of them (``edge_agent.runtime.verify_manifest``); the signed bytes are
``edge_agent.runtime.canonical_json(manifest without "signature")`` (docs/contracts.md). A host
refuses to sign with a key that is retired or not in the ring (two hosts with different key
files), with a message that says what to do. Rotation procedure: docs/deploy.md.
"""

from __future__ import annotations

import base64
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Case, IntegerField, Value, When
from django.utils import timezone
from django.utils.translation import gettext as _

from edge_agent.runtime import canonical_json, public_key_id
from sampan.core.errors import Conflict, NotFound
from sampan.registry.keyfile import (
    KeyFileError,
    create_private_key_file,
    generate_private_key,
    read_private_key,
    replace_private_key_file,
)
from sampan.registry.keyfile import public_key_b64 as _public_b64
from sampan.registry.models import ModelVersion, SigningKey, SigningKeyState

log = logging.getLogger(__name__)

_cache: dict[str, tuple[tuple[int, int], Ed25519PrivateKey]] = {}


class SigningKeyError(Conflict):
    """This host cannot sign: its key file is missing, unusable, retired or not in the ring."""

    code = "signing_key"


def key_file() -> Path:
    return Path(settings.SAMPAN_SIGNING_KEY_FILE)


def host_private_key() -> Ed25519PrivateKey:
    """The private key in ``SAMPAN_SIGNING_KEY_FILE`` (created first, in dev only).

    Raises:
        SigningKeyError: the file is missing (outside dev), unreadable or not an Ed25519 key.
    """
    path = key_file()
    if settings.SAMPAN_ENV == "dev" and not path.exists():
        create_private_key_file(path)
    try:
        stat = path.stat()
    except OSError as error:
        raise SigningKeyError(_("SAMPAN_SIGNING_KEY_FILE: %(path)s: %(reason)s")
                              % {"path": path, "reason": error.strerror}) from None
    stamp = (stat.st_mtime_ns, stat.st_ino)
    cached = _cache.get(str(path))
    if cached and cached[0] == stamp:
        return cached[1]
    try:
        key = read_private_key(path)
    except KeyFileError as error:
        raise SigningKeyError(_("SAMPAN_SIGNING_KEY_FILE: %(reason)s")
                              % {"reason": error}) from None
    _cache[str(path)] = (stamp, key)
    return key


def _ring_bootstrap() -> None:
    if SigningKey.objects.exists():
        return
    public = _public_b64(host_private_key())
    try:
        with transaction.atomic():
            SigningKey.objects.create(key_id=public_key_id(public), public_key=public,
                                      state=SigningKeyState.ACTIVE)
    except IntegrityError:
        pass  # another process made the ring first


def trusted_keys() -> list[SigningKey]:
    """The keys devices trust (not retired), the active key first."""
    _ring_bootstrap()
    return list(SigningKey.objects.exclude(state=SigningKeyState.RETIRED).order_by(
        Case(When(state=SigningKeyState.ACTIVE, then=Value(0)), default=Value(1),
             output_field=IntegerField()), "-created_at"))


def trusted_keys_payload() -> list[dict[str, str]]:
    """``[{"key_id", "public_key"}, ...]`` as devices receive them (contracts.md)."""
    return [{"key_id": key.key_id, "public_key": key.public_key} for key in trusted_keys()]


def public_key_b64() -> str:
    """The active key's public half: base64 of its 32 raw bytes."""
    return trusted_keys()[0].public_key


def sign_manifest(manifest: dict[str, Any]) -> dict[str, Any]:
    """Return a copy of ``manifest`` with its ``signature`` object (ed25519 over canonical JSON).

    Raises:
        SigningKeyError: this host's key is unusable, retired, or not in the key ring.
    """
    key = host_private_key()
    public = _public_b64(key)
    key_id = public_key_id(public)
    _ring_bootstrap()
    row = SigningKey.objects.filter(pk=key_id).first()
    active = SigningKey.objects.filter(state=SigningKeyState.ACTIVE).first()
    active_id = active.key_id if active else "none"
    if row is None:
        raise SigningKeyError(
            _("the signing key %(key_id)s in %(path)s is not in the platform's key ring (active "
              "key: %(active)s): every host that signs must hold the same "
              "SAMPAN_SIGNING_KEY_FILE (or adopt this key with `manage.py sampan_signing_key "
              "rotate --key-file`)") % {"key_id": key_id, "path": key_file(),
                                        "active": active_id})
    if row.state == SigningKeyState.RETIRED:
        raise SigningKeyError(
            _("the signing key %(key_id)s in %(path)s was retired: install the active key "
              "%(active)s in SAMPAN_SIGNING_KEY_FILE on this host")
            % {"key_id": key_id, "path": key_file(), "active": active_id})
    if row.state != SigningKeyState.ACTIVE:
        log.warning("signing with key %s, which is no longer the active key (%s): install the "
                    "active key in SAMPAN_SIGNING_KEY_FILE on this host", key_id, active_id)
    body = {k: v for k, v in manifest.items() if k != "signature"}
    signature = key.sign(canonical_json(body))
    return {**body, "signature": {"algorithm": "ed25519", "key_id": key_id,
                                  "value": base64.b64encode(signature).decode()}}


# --- the key ring: rotate, retire, list (manage.py sampan_signing_key) ------------------------


@dataclass(frozen=True)
class Rotation:
    active: SigningKey
    previous: SigningKey | None
    written_to: Path | None  # this host's key file, when the command made the key


def signing_key_rotate(*, from_file: Path | None = None) -> Rotation:
    """Make a new key the active one; the previous active key stays trusted until retired.

    With ``from_file`` the key in that PEM file becomes active and no file is written (install
    it on the signing hosts yourself); without, a new key is generated and written to this
    host's ``SAMPAN_SIGNING_KEY_FILE`` (mode 0600) in the same transaction.

    Raises:
        SigningKeyError: ``from_file`` is unusable, or holds the active or a retired key.
    """
    if from_file is not None:
        try:
            new_key = read_private_key(from_file)
        except KeyFileError as error:
            raise SigningKeyError(_("--key-file: %(reason)s") % {"reason": error},
                                  field="key_file") from None
    else:
        new_key = generate_private_key()
    public = _public_b64(new_key)
    key_id = public_key_id(public)
    _ring_bootstrap()
    with transaction.atomic():
        ring = {row.key_id: row for row in SigningKey.objects.select_for_update()}
        existing = ring.get(key_id)
        if existing is not None and existing.state == SigningKeyState.ACTIVE:
            raise SigningKeyError(_("%(key_id)s is already the active key")
                                  % {"key_id": key_id})
        if existing is not None and existing.state == SigningKeyState.RETIRED:
            raise SigningKeyError(_("%(key_id)s was retired, and a retired key is never "
                                    "trusted again: use a new key") % {"key_id": key_id})
        previous = next((r for r in ring.values() if r.state == SigningKeyState.ACTIVE), None)
        if previous is not None:  # first, or the one-active constraint refuses the new row
            previous.state = SigningKeyState.TRUSTED
            previous.save(update_fields=["state"])
        if existing is not None:
            existing.state = SigningKeyState.ACTIVE
            existing.save(update_fields=["state"])
            active = existing
        else:
            active = SigningKey.objects.create(key_id=key_id, public_key=public,
                                               state=SigningKeyState.ACTIVE)
        written_to = None
        if from_file is None:
            written_to = key_file()
            replace_private_key_file(written_to, new_key)
    return Rotation(active=active, previous=previous, written_to=written_to)


def signing_key_retire(*, key_id: str) -> SigningKey:
    """Stop trusting ``key_id``: devices refuse manifests it signed from their next heartbeat.

    Raises:
        NotFound: no such key in the ring.
        Conflict: it is the active key (rotate first).
    """
    with transaction.atomic():
        row = SigningKey.objects.select_for_update().filter(pk=key_id).first()
        if row is None:
            raise NotFound(_("no signing key %(key_id)r in the key ring") % {"key_id": key_id},
                           field="key_id")
        if row.state == SigningKeyState.ACTIVE:
            raise Conflict(_("%(key_id)s is the active key: rotate to a new key before "
                             "retiring it") % {"key_id": key_id}, field="key_id")
        if row.state != SigningKeyState.RETIRED:
            row.state = SigningKeyState.RETIRED
            row.retired_at = timezone.now()
            row.save(update_fields=["state", "retired_at"])
    return row


def signed_version_count(key_id: str) -> int:
    """How many registered model versions carry a signature by ``key_id``."""
    return ModelVersion.objects.filter(manifest__signature__key_id=key_id).count()


def public_key_id_of_host() -> str:
    """``key_id`` of the key in this host's ``SAMPAN_SIGNING_KEY_FILE``. Raises SigningKeyError."""
    return public_key_id(_public_b64(host_private_key()))
