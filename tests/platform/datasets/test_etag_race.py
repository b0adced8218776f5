"""Two saves of one sample's boxes from the same copy, at the same moment: one is written, the
other gets 412. Never both (the second would overwrite the first unseen).

Real threads, real transactions on PostgreSQL (as tests/platform/accounts/test_owner_race.py).
Without the sample-row lock of ``sampan.datasets.services.sample_check_unchanged`` both saves read
the annotations before either wrote (READ COMMITTED), both matched the tag, and both were written.
Under ``SAMPAN_TEST_DB=sqlite`` the test runs itself again in a pytest process on PostgreSQL.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest
from django.db import connection

from sampan.core.errors import PreconditionFailed
from sampan.datasets import services
from sampan.datasets.etags import annotations_etag
from sampan.datasets.models import Annotation, AnnotationKind, Sample
from sampan.datasets.services import dataset_create, sample_boxes_set
from tests.database import run_on_postgresql



@pytest.mark.django_db(transaction=True)
def test_two_saves_from_one_copy_at_once_write_one(monkeypatch: Any, make_user: Any) -> None:
    if connection.vendor != "postgresql":
        run_on_postgresql(__file__, "test_two_saves_from_one_copy_at_once_write_one")
        return
    check = services.check_if_match
    checked = threading.Condition()
    passed = [0]

    def slow_check(*args: Any, **kwargs: Any) -> None:
        # hold the window between the check and the write open: each save waits until the other
        # passed its check too (the bug: both pass), or 0.5 s when the other waits on the lock
        check(*args, **kwargs)
        with checked:
            passed[0] += 1
            checked.notify_all()
            checked.wait_for(lambda: passed[0] >= 2, timeout=0.5)

    monkeypatch.setattr(services, "check_if_match", slow_check)
    from sampan.accounts.services import project_create

    project = project_create(user=make_user("ann"), name="street")
    dataset = dataset_create(project=project, name="street", task_type="object_detection",
                             labels=["car", "person"])
    sample = Sample.objects.create(dataset=dataset, content_sha256="a" * 64, file="samples/a.png",
                                   original_name="a.png", width=320, height=240)
    opened = annotations_etag(sample.pk, [])
    barrier = threading.Barrier(2)
    outcomes: list[str] = []

    def save(label: str) -> None:
        try:
            barrier.wait(timeout=10)
            sample_boxes_set(sample=Sample.objects.select_related("dataset").get(pk=sample.pk),
                             boxes=[{"x1": 1, "y1": 1, "x2": 50, "y2": 50, "class_label": label}],
                             if_match=f'"{opened}"')
            outcomes.append(f"saved {label}")
        except PreconditionFailed:
            outcomes.append("412")
        finally:
            connection.close()

    threads = [threading.Thread(target=save, args=(label,)) for label in ("car", "person")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert sorted(outcomes)[0] == "412" and len(outcomes) == 2, outcomes
    saved = outcomes[0] if outcomes[0] != "412" else outcomes[1]
    stored = list(Annotation.objects.filter(sample=sample, kind=AnnotationKind.BOX)
                  .values_list("class_label__name", flat=True))
    assert stored == [saved.removeprefix("saved ")]


