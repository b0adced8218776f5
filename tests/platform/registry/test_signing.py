"""The model-signing key ring: bootstrap, rotate, retire, and hosts that must refuse to sign."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from edge_agent.runtime import ManifestError, public_key_id, verify_manifest
from sampan.core.errors import Conflict, NotFound
from sampan.registry import keyfile, signing
from sampan.registry.models import SigningKey

pytestmark = pytest.mark.django_db

MANIFEST = {"schema": "sampan.model-package/1", "labels": ["猫", "狗"]}


def _host_key_id() -> str:
    return signing.public_key_id_of_host()


def _states() -> dict[str, str]:
    return dict(SigningKey.objects.values_list("key_id", "state"))


def test_an_empty_ring_takes_the_host_key_generated_in_dev(settings: Any) -> None:
    assert not Path(settings.SAMPAN_SIGNING_KEY_FILE).exists()
    signed = signing.sign_manifest(MANIFEST)
    path = Path(settings.SAMPAN_SIGNING_KEY_FILE)
    assert path.stat().st_mode & 0o777 == 0o600
    key_id = _host_key_id()
    assert signed["signature"]["key_id"] == key_id
    assert _states() == {key_id: "active"}
    assert signing.trusted_keys_payload() == [{"key_id": key_id,
                                               "public_key": signing.public_key_b64()}]
    verify_manifest(signed, signing.public_key_b64())


def test_outside_dev_a_missing_key_file_is_never_generated(settings: Any) -> None:
    settings.SAMPAN_ENV = "production"
    with pytest.raises(signing.SigningKeyError, match="SAMPAN_SIGNING_KEY_FILE: .*No such file"):
        signing.sign_manifest(MANIFEST)
    assert not Path(settings.SAMPAN_SIGNING_KEY_FILE).exists()
    assert SigningKey.objects.count() == 0


def test_a_key_file_that_is_not_an_ed25519_key_is_named(settings: Any, tmp_path: Path) -> None:
    bad = tmp_path / "not-a-key.pem"
    bad.write_text("-----BEGIN PRIVATE KEY-----\nnope\n-----END PRIVATE KEY-----\n")
    settings.SAMPAN_SIGNING_KEY_FILE = bad
    with pytest.raises(signing.SigningKeyError, match=f"{bad} is not an unencrypted PEM"):
        signing.sign_manifest(MANIFEST)


def test_rotate_signs_with_the_new_key_and_keeps_trusting_the_old(settings: Any) -> None:
    before = signing.sign_manifest(MANIFEST)
    old_id = before["signature"]["key_id"]

    rotation = signing.signing_key_rotate()

    new_id = rotation.active.key_id
    assert new_id != old_id and rotation.previous is not None
    assert rotation.previous.key_id == old_id
    assert rotation.written_to == Path(settings.SAMPAN_SIGNING_KEY_FILE)
    assert _host_key_id() == new_id  # the file on this host now holds the new key
    assert _states() == {old_id: "trusted", new_id: "active"}
    trusted = signing.trusted_keys_payload()
    assert [k["key_id"] for k in trusted] == [new_id, old_id]  # the active key first
    after = signing.sign_manifest(MANIFEST)
    assert after["signature"]["key_id"] == new_id
    public_keys = [k["public_key"] for k in trusted]
    verify_manifest(before, public_keys)
    verify_manifest(after, public_keys)


def test_after_retire_the_old_key_is_not_handed_out_and_a_host_holding_it_refuses(
        settings: Any, tmp_path: Path) -> None:
    before = signing.sign_manifest(MANIFEST)
    old_id = _host_key_id()
    old_file = tmp_path / "old.pem"
    old_file.write_bytes(Path(settings.SAMPAN_SIGNING_KEY_FILE).read_bytes())
    new_id = signing.signing_key_rotate().active.key_id

    signing.signing_key_retire(key_id=old_id)

    assert _states() == {old_id: "retired", new_id: "active"}
    trusted = signing.trusted_keys_payload()
    assert [k["key_id"] for k in trusted] == [new_id]
    with pytest.raises(ManifestError, match="signed by another key"):
        verify_manifest(before, [k["public_key"] for k in trusted])
    # a worker host whose key file still holds the retired key
    settings.SAMPAN_SIGNING_KEY_FILE = old_file
    with pytest.raises(signing.SigningKeyError, match=f"{old_id} .* was retired: install the "
                                                      f"active key {new_id}"):
        signing.sign_manifest(MANIFEST)
    # a retired key is never trusted again
    with pytest.raises(signing.SigningKeyError, match="retired"):
        signing.signing_key_rotate(from_file=old_file)


def test_a_host_with_another_key_refuses_to_sign(settings: Any, tmp_path: Path) -> None:
    signing.sign_manifest(MANIFEST)  # the ring holds the first host's key
    other = tmp_path / "other.pem"
    keyfile.create_private_key_file(other)
    settings.SAMPAN_SIGNING_KEY_FILE = other
    with pytest.raises(signing.SigningKeyError, match="is not in the platform's key ring"):
        signing.sign_manifest(MANIFEST)


def test_rotate_to_a_provisioned_key_file_leaves_the_host_file_alone(
        settings: Any, tmp_path: Path) -> None:
    signing.sign_manifest(MANIFEST)
    host_id = _host_key_id()
    new_file = tmp_path / "new.pem"
    keyfile.create_private_key_file(new_file)
    new_id = public_key_id(keyfile.public_key_b64(keyfile.read_private_key(new_file)))

    rotation = signing.signing_key_rotate(from_file=new_file)

    assert rotation.active.key_id == new_id and rotation.written_to is None
    assert _host_key_id() == host_id
    # until this host gets the new file it still signs, with the previous (trusted) key
    assert signing.sign_manifest(MANIFEST)["signature"]["key_id"] == host_id
    with pytest.raises(signing.SigningKeyError, match="already the active key"):
        signing.signing_key_rotate(from_file=new_file)
    with pytest.raises(signing.SigningKeyError, match="--key-file: .* does not exist"):
        signing.signing_key_rotate(from_file=tmp_path / "missing.pem")


def test_the_active_key_cannot_be_retired_and_an_unknown_one_is_not_found() -> None:
    signing.trusted_keys()
    with pytest.raises(Conflict, match="rotate to a new key before retiring it"):
        signing.signing_key_retire(key_id=_host_key_id())
    with pytest.raises(NotFound, match="no signing key 'ffffffffffffffff'"):
        signing.signing_key_retire(key_id="ffffffffffffffff")


def _command(*args: str) -> list[dict[str, Any]]:
    out = StringIO()
    call_command("sampan_signing_key", *args, stdout=out, stderr=StringIO())
    return [json.loads(line) for line in out.getvalue().splitlines()]


def test_the_management_command_lists_rotates_and_retires() -> None:
    (first,) = _command("list")
    assert first["state"] == "active" and first["this_host_signs_with_it"] is True
    assert first["signed_model_versions"] == 0
    (rotated,) = _command("rotate")
    assert rotated["previous"] == first["key_id"] and rotated["active"] != first["key_id"]
    listed = {row["key_id"]: row for row in _command("list")}
    assert listed[first["key_id"]]["state"] == "trusted"
    assert listed[rotated["active"]]["this_host_signs_with_it"] is True
    assert _command("retire", first["key_id"]) == [{"retired": first["key_id"],
                                                    "signed_model_versions": 0}]
    with pytest.raises(CommandError, match="is the active key"):
        _command("retire", rotated["active"])
