"""Deleting a device while one of its heartbeats is being written (the fast path writes in
batches every 0.2 s): the delete waits for the write and removes its row too, never a 500.

Real threads, real transactions on PostgreSQL (as tests/platform/datasets/test_etag_race.py).
Without the device-row lock of ``sampan.fleet.services.device_delete`` Django collected the
device's telemetry before the heartbeat's row was committed, then deleted the device: the
foreign key from that row failed (IntegrityError, a 500 in CI's run of
tests/e2e/test_heartbeat_fastpath.py). Under ``SAMPAN_TEST_DB=sqlite`` the test runs itself
again in a pytest process on PostgreSQL.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from django.db import connection, connections, transaction
from django.db.models.signals import post_delete
from django.utils import timezone

from sampan.fleet.models import Deployment, Device, Telemetry
from sampan.fleet.services import device_delete
from tests.database import run_on_postgresql






def _waiting_on_a_lock() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                       "AND datname = current_database()")
        return int(cursor.fetchone()[0])


@pytest.mark.django_db(transaction=True)
def test_a_device_deleted_while_its_heartbeat_is_written_goes_with_it(
        project: Any, model_version: Any) -> None:
    if connection.vendor != "postgresql":
        run_on_postgresql(__file__,
                          "test_a_device_deleted_while_its_heartbeat_is_written_goes_with_it")
        return
    device = Device.objects.create(project=project, name="door", credential_sha256="e" * 64)
    # a deployment of the device: Django deletes it after the device's telemetry and before
    # the device, and its post_delete signal holds the delete in that window
    Deployment.objects.create(project=project, device=device, model_version=model_version())
    inserted, committing = threading.Event(), threading.Event()
    outcomes: dict[str, str] = {}

    def heartbeat() -> None:
        try:
            with transaction.atomic():
                Telemetry.objects.create(device_id=device.pk, received_at=timezone.now(),
                                         metrics={"requests": 1})
                inserted.set()
                committing.wait(timeout=20)
            outcomes["heartbeat"] = "written"
        except Exception as error:  # noqa: BLE001 - the device went first: refused alone
            outcomes["heartbeat"] = type(error).__name__
        finally:
            connections.close_all()

    def collected(sender: Any, instance: Any, **kwargs: Any) -> None:
        # the device's telemetry is deleted, the device not yet: the heartbeat commits now
        # (or, with the device's row locked, waits on that lock until the delete is done)
        if instance.device_id == device.pk:
            committing.set()
            deadline = time.monotonic() + 10
            while writer.is_alive() and _waiting_on_a_lock() == 0:
                assert time.monotonic() < deadline
                time.sleep(0.05)

    def delete() -> None:
        try:
            device_delete(device=Device.objects.get(pk=device.pk))
            outcomes["delete"] = "deleted"
        except Exception as error:  # noqa: BLE001 - the bug: IntegrityError, a 500
            outcomes["delete"] = f"{type(error).__name__}: {error}"
        finally:
            connections.close_all()

    writer = threading.Thread(target=heartbeat)
    writer.start()
    assert inserted.wait(timeout=20)
    post_delete.connect(collected, sender=Deployment, weak=False)
    try:
        deleter = threading.Thread(target=delete)
        deleter.start()
        deleter.join(timeout=30)
        writer.join(timeout=30)
    finally:
        post_delete.disconnect(collected, sender=Deployment)
    assert outcomes["delete"] == "deleted", outcomes
    assert outcomes["heartbeat"] in ("written", "IntegrityError"), outcomes
    assert not Device.objects.filter(pk=device.pk).exists()
    assert not Telemetry.objects.filter(device_id=device.pk).exists()
