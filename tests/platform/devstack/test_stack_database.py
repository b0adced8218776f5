"""The processes of a dev stack run on the database the stack is given (``Stack.database_url``):
under the suite each stack gets one of its own on the suite's database server (tests/database.py),
and ``""`` is the SQLite file in the stack's data folder, whatever the environment says."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

import pytest

from sampan.devstack.stack import Stack
from tests.database import chosen, stack_database_url

WHICH = ("from django.db import connection; "
         "print(connection.vendor, connection.settings_dict['NAME'])")


def _which(stack: Stack) -> str:
    return stack.manage("shell", "-c", WHICH).stdout.strip().splitlines()[-1]


def test_each_stack_runs_on_a_database_of_its_own_on_the_suite_s_server(tmp_path: Path) -> None:
    first, second = stack_database_url(migrated=False), stack_database_url(migrated=False)
    a = Stack(data_dir=tmp_path / "a", database_url=first)
    b = Stack(data_dir=tmp_path / "b", database_url=second)
    if chosen() == "postgres":
        assert first != second
        assert _which(a) == f"postgresql {urlsplit(first).path.lstrip('/')}"
        assert _which(b) == f"postgresql {urlsplit(second).path.lstrip('/')}"
        a.migrate()  # the other stack's database stays empty
        tables = ("from django.db import connection; "
                  "print(len(connection.introspection.table_names()))")
        assert a.manage("shell", "-c", tables).stdout.split()[-1] != "0"
        assert b.manage("shell", "-c", tables).stdout.split()[-1] == "0"
    else:
        assert first == second == ""
        assert _which(a) == f"sqlite {a.data_dir / 'db.sqlite3'}"
        assert _which(b) == f"sqlite {b.data_dir / 'db.sqlite3'}"


def test_an_empty_database_url_is_the_sqlite_file_whatever_the_environment_says(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SAMPAN_DATABASE_URL", "postgres://nobody@127.0.0.1:1/nothing")
    monkeypatch.setenv("SAMPAN_DB_PATH", str(tmp_path / "elsewhere.sqlite3"))
    stack = Stack(data_dir=tmp_path / "stack", database_url="")
    assert _which(stack) == f"sqlite {stack.data_dir / 'db.sqlite3'}"
    inherited = Stack(data_dir=tmp_path / "inherited")
    assert inherited.env()["SAMPAN_DATABASE_URL"] == "postgres://nobody@127.0.0.1:1/nothing"


def test_a_migrated_stack_database_is_a_copy_with_nothing_left_to_apply(tmp_path: Path) -> None:
    """The default: a copy of the session's migrated template; a second one is a database of its
    own (a table written in one is not in the other)."""
    first, second = stack_database_url(), stack_database_url()
    if chosen() != "postgres":  # SQLite: each stack migrates the file in its data folder
        assert first == second == ""
        return
    a = Stack(data_dir=tmp_path / "a", database_url=first)
    b = Stack(data_dir=tmp_path / "b", database_url=second)
    plan = a.manage("showmigrations", "--plan").stdout
    assert "[X]" in plan and "[ ]" not in plan, plan
    a.manage("shell", "-c", "from django.db import connection; "
             "connection.cursor().execute('CREATE TABLE only_here (id int)')")
    assert "only_here" not in b.manage("shell", "-c", "from django.db import connection; "
                                       "print(connection.introspection.table_names())").stdout
