"""``manage.py sampan_signing_key list | rotate [--key-file PEM] | retire KEY_ID``.

The model-signing key ring (sampan.registry.signing; procedure in docs/deploy.md, "Rotating the
model-signing key"). ``list`` prints one JSON object per key; ``rotate`` and ``retire`` print one
JSON line saying what changed. Exit status 1 with the reason on stderr when refused.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from sampan.core.errors import ApplicationError
from sampan.registry import signing


class Command(BaseCommand):
    help = "List, rotate or retire the keys that sign model packages."

    def add_arguments(self, parser: Any) -> None:
        actions = parser.add_subparsers(dest="action", required=True)
        actions.add_parser("list", help="every key of the ring with its state")
        rotate = actions.add_parser(
            "rotate", help="make a new key active; the previous one stays trusted until retired")
        rotate.add_argument(
            "--key-file", type=Path,
            help="adopt the key in this PEM file (install it on the signing hosts yourself); "
                 "without it a new key is generated into this host's SAMPAN_SIGNING_KEY_FILE")
        retire = actions.add_parser("retire", help="devices stop trusting this key")
        retire.add_argument("key_id")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            getattr(self, f"_{options['action']}")(options)
        except ApplicationError as error:
            raise CommandError(error.message) from None

    def _emit(self, data: dict[str, Any]) -> None:
        self.stdout.write(json.dumps(data))

    def _list(self, options: dict[str, Any]) -> None:
        signing.trusted_keys()  # an empty ring takes this host's key first
        host_key = None
        try:
            host_key = signing.public_key_id_of_host()
        except signing.SigningKeyError:
            pass
        for key in signing.SigningKey.objects.order_by("created_at"):
            self._emit({"key_id": key.key_id, "state": key.state,
                        "created_at": key.created_at.isoformat(),
                        "retired_at": key.retired_at.isoformat() if key.retired_at else None,
                        "signed_model_versions": signing.signed_version_count(key.key_id),
                        "this_host_signs_with_it": key.key_id == host_key})

    def _rotate(self, options: dict[str, Any]) -> None:
        rotation = signing.signing_key_rotate(from_file=options["key_file"])
        self._emit({"active": rotation.active.key_id,
                    "previous": rotation.previous.key_id if rotation.previous else None,
                    "written_to": str(rotation.written_to) if rotation.written_to else None})
        if rotation.written_to is None:
            self.stderr.write("install the new key file as SAMPAN_SIGNING_KEY_FILE on every host "
                              "that signs (the workers); until then they sign with the previous "
                              "key, which devices still trust")

    def _retire(self, options: dict[str, Any]) -> None:
        key = signing.signing_key_retire(key_id=options["key_id"])
        count = signing.signed_version_count(key.key_id)
        self._emit({"retired": key.key_id, "signed_model_versions": count})
        if count:
            self.stderr.write(f"{count} model version(s) are signed with {key.key_id}: devices "
                              "will refuse to install them (one already loaded keeps serving)")
