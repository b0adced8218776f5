"""``manage.py sampan_wheelhouse [--target linux-x86_64] [--python 3.11] | --list``.

Prepares the agent's wheels for offline bundles (sampan.registry.offline): Sampan's wheel from
this checkout and ``pip download`` of the agent's dependencies for the target device's
platform and Python. Needs PyPI (or the mirror in pip's configuration) while it runs; bundles
are built from the result without any network. Prints one JSON line per wheelhouse; exit
status 1 with pip's reason on stderr when it fails (the previous wheelhouse keeps serving).
"""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from sampan.core.errors import ApplicationError
from sampan.registry import offline


class Command(BaseCommand):
    help = "Prepare the agent's wheels for offline bundles of one device target."

    def add_arguments(self, parser: Any) -> None:
        target, python = offline.this_machine()
        parser.add_argument("--target", default=target if target in offline.TARGETS
                            else "linux-x86_64", choices=list(offline.TARGETS),
                            help="the device's OS and CPU (default: this machine's)")
        parser.add_argument("--python", default=python if python in offline.PYTHONS
                            else offline.PYTHONS[0], choices=list(offline.PYTHONS),
                            help="the device's Python (default: this machine's)")
        parser.add_argument("--list", action="store_true",
                            help="print the wheelhouses already built and stop")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["list"]:
            for house in offline.wheelhouses():
                self._emit(house)
            return
        self.stderr.write(f"downloading the agent's wheels for {options['target']}, Python "
                          f"{options['python']} ...")
        try:
            house = offline.wheelhouse_build(target=options["target"], python=options["python"])
        except ApplicationError as error:
            raise CommandError(error.message) from None
        self._emit(house)

    def _emit(self, house: offline.Wheelhouse) -> None:
        self.stdout.write(json.dumps({"target": house.target, "python": house.python,
                                      "wheels": len(house.wheels), "bytes": house.bytes,
                                      "path": str(house.path), "build_id": house.build_id}))
