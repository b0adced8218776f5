"""``manage.py sampan_user --username U [--password P] [--set-password] [--superuser]
[--token-name N] [--replace-token]``: create a user, or take an existing one, and print one JSON
line with a fresh personal API token. Used by ``make run`` and ``make demo``.

``--replace-token`` revokes the user's earlier live tokens named N when it issues the new one
(``make run`` passes it: each start prints a token, and they no longer pile up in the account).

A new user needs ``--password``. An existing user's password is left as it is unless
``--set-password`` is given (then ``--password`` is required): asking for a token never changes a
password by surprise. A password that is set passes Django's password validators
(AUTH_PASSWORD_VALIDATORS) or the command fails naming ``--password`` and changes nothing.

Output: ``{"username", "token", "created": bool, "password_set": bool, "revoked": int}``.
"""

from __future__ import annotations

import json
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction
from django.utils import timezone

from sampan.accounts.models import ApiToken
from sampan.accounts.services import api_token_create


class Command(BaseCommand):
    help = "Create a user (or take an existing one) and print a new API token as JSON."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--username", required=True)
        parser.add_argument("--password", help="required for a new user or with --set-password")
        parser.add_argument("--set-password", action="store_true",
                            help="change an existing user's password to --password")
        parser.add_argument("--superuser", action="store_true")
        parser.add_argument("--token-name", default="cli")
        parser.add_argument("--replace-token", action="store_true",
                            help="revoke the user's earlier tokens of the same name")

    def handle(self, *args: Any, **options: Any) -> None:
        User = get_user_model()
        username, password = options["username"], options["password"]
        if options["set_password"] and not password:
            raise CommandError("--set-password needs --password")
        with transaction.atomic():
            user = User.objects.select_for_update().filter(username=username).first()
            created = user is None
            if created and not password:
                raise CommandError(f"user {username!r} does not exist: give --password to "
                                   "create it")
            if created:
                user = User(username=username)
            set_password = created or options["set_password"]
            if set_password:
                try:
                    validate_password(password, user)
                except ValidationError as error:
                    raise CommandError("--password: " + " ".join(error.messages)) from None
                user.set_password(password)
            elif password:
                self.stderr.write(f"user {username!r} exists: its password was left unchanged "
                                  "(--set-password changes it)")
            if options["superuser"]:
                user.is_staff = user.is_superuser = True
            user.save()
            revoked = 0
            if options["replace_token"] and not created:
                revoked = ApiToken.objects.filter(
                    user=user, name=options["token_name"], revoked_at__isnull=True
                ).update(revoked_at=timezone.now())
            issued = api_token_create(user=user, name=options["token_name"])
        self.stdout.write(json.dumps({"username": user.username, "token": issued.secret,
                                      "created": created, "password_set": set_password,
                                      "revoked": revoked}))
