"""The database the test suite runs on: PostgreSQL, the production database, unless told SQLite.

A pytest plugin, loaded with ``-p tests.database`` (``addopts`` in pyproject.toml), because it
must act before pytest-django imports ``sampan.settings``, which reads ``SAMPAN_DATABASE_URL``
once at import: pytest-django does that in its ``pytest_load_initial_conftests`` hook, before any
conftest.py is read, so this plugin's ``tryfirst`` implementation of the same hook runs first.

``SAMPAN_TEST_DB`` chooses:

- ``postgres`` (the default; ``make test``): a throw-away cluster of Debian's ``postgresql``
  package is started for the session (tests/fixtures/postgres.py, ~3 s) and stopped at its end.
  ``SAMPAN_DATABASE_URL`` is set to ``postgres://postgres@127.0.0.1:<port>/sampan`` for this
  process and every process the tests start; pytest-django creates ``test_sampan`` from it. The
  database ``sampan`` itself is never created, on purpose: a process that inherits the URL and
  touches the database fails loudly instead of sharing one database with another stack. Each
  dev stack that a test starts gets a database of its own from :func:`stack_database_url`.
- ``sqlite``: ``SAMPAN_DATABASE_URL`` is removed from the environment; the test process runs on
  pytest-django's in-memory SQLite database and each stack on the SQLite file in its data folder
  (WAL, IMMEDIATE transactions), as ``make run`` does.

A ``SAMPAN_DATABASE_URL`` already in the environment is never used by the tests (it may name a
real deployment's database).
"""

from __future__ import annotations

import contextlib
import itertools
import os
import subprocess
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest

CHOICES = ("postgres", "sqlite")

_state: dict[str, Any] = {"kind": None, "server": None}
_stack_numbers = itertools.count(1)


def chosen() -> str:
    """``postgres`` or ``sqlite``: what ``SAMPAN_TEST_DB`` asks for (default ``postgres``)."""
    kind = os.environ.get("SAMPAN_TEST_DB", "postgres").strip().lower() or "postgres"
    if kind not in CHOICES:
        raise pytest.UsageError(f"SAMPAN_TEST_DB={kind!r}: use one of {', '.join(CHOICES)}")
    return kind


def _with_database(url: str, database: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path="/" + database))


def stack_database_url(*, migrated: bool = True) -> str:
    """The database for one dev stack (``Stack(database_url=...)``) and all its processes.

    On PostgreSQL: a new database on the session's cluster, its ``postgres://`` URL. With
    ``migrated`` (the default) it is a copy of a template database that ``migrate`` filled once
    for the session (``CREATE DATABASE ... TEMPLATE``), so the stack's own ``migrate`` has
    nothing left to apply (a full migrate is 8-10 s of each stack's start on a slow 2-core
    host); without, it is empty. On SQLite: ``""``, the SQLite file in the stack's data
    folder."""
    if _state["kind"] != "postgres":
        return ""
    import psycopg

    name = f"stack_{next(_stack_numbers)}"
    template = _migrated_template() if migrated else None
    with psycopg.connect(_with_database(_state["server"], "postgres"), autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"'
                     + (f' TEMPLATE "{template}"' if template else ""))
    return _with_database(_state["server"], name)


def _migrated_template() -> str:
    """The session's template database (``stack_template``), migrated on first use."""
    if _state.get("template"):
        return str(_state["template"])
    import tempfile
    from pathlib import Path

    import psycopg

    from sampan.devstack.stack import Stack

    name = "stack_template"
    with psycopg.connect(_with_database(_state["server"], "postgres"), autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    with tempfile.TemporaryDirectory(prefix="sampan-template-") as data_dir:
        Stack(data_dir=Path(data_dir),
              database_url=_with_database(_state["server"], name)).migrate()
    _state["template"] = name
    return name


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config) -> None:
    kind = chosen()
    _state["kind"] = kind
    os.environ["SAMPAN_TEST_DB"] = kind  # a pytest started by a test runs on the same kind
    os.environ.pop("SAMPAN_DATABASE_URL", None)
    options = early_config.known_args_namespace
    if kind == "sqlite" or getattr(options, "help", False) or getattr(options, "version", False):
        return
    from tests.fixtures.postgres import postgres_url

    cluster = contextlib.ExitStack()
    early_config.add_cleanup(cluster.close)
    try:
        url = cluster.enter_context(postgres_url("sampan"))
    except (RuntimeError, OSError, subprocess.SubprocessError) as error:
        detail = getattr(error, "stderr", b"") or b""
        raise pytest.UsageError(
            f"the tests run on PostgreSQL and its server did not start: {error} "
            f"{detail.decode(errors='replace')[-1500:] if isinstance(detail, bytes) else detail}"
            "\nInstall it (apt-get install -y postgresql, as .ci/run does), or run on SQLite: "
            "SAMPAN_TEST_DB=sqlite") from error
    _state["server"] = url
    os.environ["SAMPAN_DATABASE_URL"] = url


def pytest_report_header(config: pytest.Config) -> str:
    if _state["server"]:
        port = urlsplit(_state["server"]).port
        return (f"database: PostgreSQL, a throw-away cluster on 127.0.0.1:{port} "
                "(SAMPAN_TEST_DB=sqlite for SQLite)")
    return "database: SQLite (SAMPAN_TEST_DB=sqlite; unset for PostgreSQL)"


def run_on_postgresql(test_file: str, test_name: str) -> None:
    """Run test ``test_name`` of ``test_file`` (its ``__file__``) in a pytest process on
    PostgreSQL, and fail unless it passed: the race tests that need real concurrent transactions
    call it when the session's database is SQLite."""
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parents[1]
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         f"{Path(test_file).resolve().relative_to(repo)}::{test_name}"],
        cwd=repo, env={**os.environ, "SAMPAN_TEST_DB": "postgres"}, capture_output=True,
        text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert "1 passed" in result.stdout, result.stdout[-2000:]
