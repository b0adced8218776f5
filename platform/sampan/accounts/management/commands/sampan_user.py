"""``manage.py sampan_user --username U --password P [--token-name N]``: create (or update) a user
and print one JSON line with a fresh personal API token. Used by ``make run`` and ``make demo``."""

from __future__ import annotations

import json
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand

from sampan.accounts.services import api_token_create


class Command(BaseCommand):
    help = "Create or update a user and print a new API token as JSON."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--username", required=True)
        parser.add_argument("--password", required=True)
        parser.add_argument("--superuser", action="store_true")
        parser.add_argument("--token-name", default="cli")

    def handle(self, *args: Any, **options: Any) -> None:
        User = get_user_model()
        user, _ = User.objects.get_or_create(username=options["username"])
        user.set_password(options["password"])
        if options["superuser"]:
            user.is_staff = user.is_superuser = True
        user.save()
        issued = api_token_create(user=user, name=options["token_name"])
        self.stdout.write(json.dumps({"username": user.username, "token": issued.secret}))
