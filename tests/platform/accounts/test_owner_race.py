"""Two owners demoting each other at the same moment must leave the project an owner.

Real threads, real transactions (``transaction=True``) on PostgreSQL, the suite's database
(tests/database.py). Without the project-row lock of ``sampan.accounts.services`` each demotion
(READ COMMITTED) saw the other still an owner and both succeeded, leaving none; one of the two
must get the 409. Under ``SAMPAN_TEST_DB=sqlite`` the suite's in-memory SQLite cannot hold two
transactions at once ("database table is locked"), and SQLite serialises writers anyway, so
there the test runs itself again in a pytest process on PostgreSQL.
"""

from __future__ import annotations

import threading

import pytest
from django.contrib.auth import get_user_model
from django.db import connection

from sampan.accounts import services
from sampan.accounts.models import Membership, Role
from sampan.accounts.services import membership_set, project_create
from sampan.core.errors import Conflict
from tests.database import run_on_postgresql



@pytest.mark.django_db(transaction=True)
def test_two_owners_demoting_each_other_at_once_leave_one_owner(monkeypatch) -> None:
    if connection.vendor != "postgresql":
        run_on_postgresql(__file__, "test_two_owners_demoting_each_other_at_once_leave_one_owner")
        return
    check = services._ensure_other_owner

    checked = threading.Condition()
    passed = [0]

    def slow_check(*args, **kwargs):
        # hold the race window open between the check and the write: each thread waits until
        # the other has passed its check too (the bug: both pass), or 0.5 s when the other is
        # held by the owner-row lock (the fix)
        check(*args, **kwargs)
        with checked:
            passed[0] += 1
            checked.notify_all()
            checked.wait_for(lambda: passed[0] >= 2, timeout=0.5)

    monkeypatch.setattr(services, "_ensure_other_owner", slow_check)
    users = get_user_model()
    ann = users.objects.create_user("ann", password="correct horse battery")
    bob = users.objects.create_user("bob", password="correct horse battery")
    project = project_create(user=ann, name="shared")
    membership_set(project=project, username=bob.username, role=Role.OWNER)
    barrier = threading.Barrier(2)
    outcomes: list[str] = []

    def demote(username: str) -> None:
        try:
            barrier.wait(timeout=10)
            membership_set(project=project, username=username, role=Role.EDITOR)
            outcomes.append("demoted")
        except Conflict:
            outcomes.append("conflict")
        finally:
            connection.close()

    threads = [threading.Thread(target=demote, args=(name,)) for name in ("ann", "bob")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert sorted(outcomes) == ["conflict", "demoted"]
    assert Membership.objects.filter(project=project, role=Role.OWNER).count() == 1


