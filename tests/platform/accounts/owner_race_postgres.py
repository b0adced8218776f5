"""Two owners demoting each other at the same moment must leave the project an owner.

Run with real threads and real transactions (``transaction=True``) on PostgreSQL by
``test_owner_race.py``, which starts a cluster and runs this file in a pytest subprocess (the
suite's in-memory SQLite cannot hold two transactions at once: "database table is locked").
Without the project-row lock each demotion (READ COMMITTED) saw the other still an owner and
both succeeded. One of the two must get the 409.
"""

from __future__ import annotations

import threading
import time

import pytest
from django.contrib.auth import get_user_model
from django.db import connection

from sampan.accounts import services
from sampan.accounts.models import Membership, Role
from sampan.accounts.services import membership_set, project_create
from sampan.core.errors import Conflict


@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif(connection.vendor != "postgresql", reason="run by test_owner_race.py")
def test_two_owners_demoting_each_other_at_once_leave_one_owner(monkeypatch) -> None:
    check = services._ensure_other_owner

    def slow_check(*args, **kwargs):  # widen the race window between the check and the write
        check(*args, **kwargs)
        time.sleep(0.5)

    monkeypatch.setattr(services, "_ensure_other_owner", slow_check)
    users = get_user_model()
    ann = users.objects.create_user("ann", password="correct horse battery")
    bob = users.objects.create_user("bob", password="correct horse battery")
    project = project_create(user=ann, name="shared")
    membership_set(project=project, username="bob", role=Role.OWNER)
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
