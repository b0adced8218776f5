"""The owner race of ``owner_race_postgres.py`` on a real PostgreSQL server (see there)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fixtures.postgres import postgres_url

REPO = Path(__file__).resolve().parents[3]


@pytest.mark.integration
def test_two_owners_demoting_each_other_at_once_leave_one_owner_on_postgresql() -> None:
    with postgres_url() as url:
        env = {**os.environ, "SAMPAN_DATABASE_URL": url}
        result = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
             str(Path(__file__).with_name("owner_race_postgres.py"))],
            cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert "1 passed" in result.stdout, result.stdout[-2000:]
