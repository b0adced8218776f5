"""``manage.py sampan_admin [--username admin]``: create the superuser if it does not exist.

docker-compose.yml's one-shot ``migrate`` service runs it at every start. The password comes from
the environment variable ``SAMPAN_ADMIN_PASSWORD`` (never from the command line, where other users
of the host could read it). A user of that name that exists already is left exactly as it is: its
password is never reset, so a password changed in the console survives every restart.

Prints one JSON line, ``{"username", "created"}``. Exit status 1 with the reason on stderr when
the user is missing and ``SAMPAN_ADMIN_PASSWORD`` is empty or fails Django's password validators
(``AUTH_PASSWORD_VALIDATORS``; each reason is listed).
"""

from __future__ import annotations

import json
import os
from typing import Any

from django.contrib.auth import get_user_model, password_validation
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError
from django.db import IntegrityError, transaction

PASSWORD_VARIABLE = "SAMPAN_ADMIN_PASSWORD"


class Command(BaseCommand):
    help = "Create the superuser from SAMPAN_ADMIN_PASSWORD unless it exists (never resets it)."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--username", default="admin")

    def handle(self, *args: Any, **options: Any) -> None:
        User = get_user_model()
        username = options["username"].strip()
        if not username:
            raise CommandError("--username must not be empty")
        if User.objects.filter(username=username).exists():
            self._emit(username, created=False)
            return
        password = os.environ.get(PASSWORD_VARIABLE, "")
        if not password:
            raise CommandError(f"{PASSWORD_VARIABLE} is empty: set it (in .env with docker "
                               f"compose) to the password the user {username!r} signs in with")
        try:
            password_validation.validate_password(password, user=User(username=username))
        except ValidationError as error:
            raise CommandError(f"{PASSWORD_VARIABLE} is refused: "
                               + " ".join(error.messages)) from None
        try:
            with transaction.atomic():
                User.objects.create_superuser(username=username, email="", password=password)
        except IntegrityError:  # created by a concurrent run since the check: keep that one
            self._emit(username, created=False)
            return
        self._emit(username, created=True)

    def _emit(self, username: str, *, created: bool) -> None:
        self.stdout.write(json.dumps({"username": username, "created": created}))
