"""``manage.py sampan_enrollment_token --project NAME --owner USERNAME [--file PATH]``.

A one-time enrollment token for a device of the project ``NAME`` that the user ``USERNAME`` owns
(the project is created, owned by that user, when the user owns none of that name). This is the
console's "Add a device" step for scripts: docker-compose.yml's ``migrate`` service runs it so
that the demo agent enrolls with no manual step.

Without ``--file`` it prints one JSON line ``{"project_id", "token", "expires_at"}``. With
``--file`` the token goes into that file (mode 0600, written atomically) and the JSON line has
``"file"`` instead of the token; a token already in the file is kept while it is unused and
unexpired (``"reused": true``), so running it at every start does not pile up tokens. Exit status
1 with the reason on stderr for an unknown user or a bad ``--expires-hours``.
"""

from __future__ import annotations

import json
import os
import tempfile
from datetime import timedelta
from pathlib import Path
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from sampan.accounts.models import Project, Role
from sampan.accounts.services import project_create
from sampan.core.errors import ApplicationError
from sampan.fleet.selectors import enrollment_token_usable
from sampan.fleet.services import enrollment_token_create

#: Longest validity a token may be given, hours (a week).
MAX_EXPIRES_HOURS = 7 * 24


def write_secret_atomic(path: Path, secret: str) -> None:
    """Write ``secret`` to ``path`` (mode 0600): readers see the old file or the new, never half."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")  # mode 0600
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write(secret + "\n")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class Command(BaseCommand):
    help = "Create a one-time device enrollment token for a project (printed or written to a file)."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--project", required=True, help="project name")
        parser.add_argument("--owner", required=True,
                            help="username of an owner of the project (creates it if needed)")
        parser.add_argument("--expires-hours", type=float, default=24.0)
        parser.add_argument("--note", default="")
        parser.add_argument("--file", type=Path,
                            help="write the token here instead of printing it")

    def handle(self, *args: Any, **options: Any) -> None:
        hours = options["expires_hours"]
        if not 0 < hours <= MAX_EXPIRES_HOURS:
            raise CommandError(f"--expires-hours must be above 0 and at most {MAX_EXPIRES_HOURS}, "
                               f"not {hours}")
        name = options["project"].strip()
        if not name:
            raise CommandError("--project must not be empty")
        owner = get_user_model().objects.filter(username=options["owner"]).first()
        if owner is None:
            raise CommandError(f"--owner: no user named {options['owner']!r}")
        try:
            project = (Project.objects.filter(name=name, memberships__user=owner,
                                              memberships__role=Role.OWNER)
                       .order_by("created_at").first()
                       or project_create(user=owner, name=name))
        except ApplicationError as error:  # e.g. a control character in the name
            raise CommandError(f"--project: {error.message}") from None
        path: Path | None = options["file"]
        if path is not None and path.is_file():
            kept = enrollment_token_usable(secret=path.read_text().strip())
            if kept is not None and kept.project_id == project.pk:
                self._emit({"project_id": str(project.pk), "file": str(path),
                            "expires_at": kept.expires_at.isoformat(), "reused": True})
                return
        issued = enrollment_token_create(project=project, user=owner,
                                         expires_in=timedelta(hours=hours), note=options["note"])
        expires_at = issued.token.expires_at.isoformat()
        if path is None:
            self._emit({"project_id": str(project.pk), "token": issued.secret,
                        "expires_at": expires_at})
            return
        write_secret_atomic(path, issued.secret)
        self._emit({"project_id": str(project.pk), "file": str(path), "expires_at": expires_at,
                    "reused": False})

    def _emit(self, data: dict[str, Any]) -> None:
        self.stdout.write(json.dumps(data))
