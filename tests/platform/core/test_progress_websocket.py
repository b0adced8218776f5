"""Job progress reaches browsers over a Channels websocket; reconnecting reads the database."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator

from sampan.core.jobs import JobStatus, job_transition
from sampan.core.services import job_publish, job_report_progress
from sampan.datasets.models import ImportJob
from sampan.datasets.services import dataset_create


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
async def test_progress_is_pushed_and_snapshot_sent_on_connect(make_user: Any) -> None:
    from sampan.accounts.services import project_create
    from sampan.core.consumers import JobProgressConsumer

    @database_sync_to_async
    def setup() -> tuple[Any, Any, Any]:
        user = make_user("watcher")
        stranger = make_user("stranger")
        project = project_create(user=user, name="p")
        dataset = dataset_create(project=project, name="d")
        job = ImportJob.objects.create(project=project, dataset=dataset, staging_dir="/none")
        job_transition(ImportJob, job.pk, JobStatus.QUEUED)
        job_transition(ImportJob, job.pk, JobStatus.RUNNING)
        job_report_progress(ImportJob, job.pk, {"fraction": 0.25})
        return user, stranger, job

    user, stranger, job = await setup()

    def communicator(as_user: Any) -> WebsocketCommunicator:
        comm = WebsocketCommunicator(JobProgressConsumer.as_asgi(), f"/ws/jobs/import/{job.pk}/")
        comm.scope["user"] = as_user
        comm.scope["url_route"] = {"kwargs": {"kind": "import", "job_id": str(job.pk)}}
        return comm

    comm = communicator(user)
    connected, _ = await comm.connect()
    assert connected
    snapshot = await comm.receive_json_from(timeout=5)
    assert snapshot["status"] == "RUNNING" and snapshot["progress"] == {"fraction": 0.25}
    # events are throttled (at most one each 0.5 s per job); the next one may be dropped, the
    # database keeps it, and a forced event (a state change) always goes out
    # the worker passes the id as a string, as Celery delivers it
    await database_sync_to_async(job_report_progress)(ImportJob, str(job.pk), {"fraction": 0.5})
    await database_sync_to_async(job_publish)(ImportJob, str(job.pk),
                                              {"status": "RUNNING", "progress": {"fraction": 0.75}},
                                              force=True)
    event = await comm.receive_json_from(timeout=5)
    if event["progress"] == {"fraction": 0.5}:
        event = await comm.receive_json_from(timeout=5)
    assert event["progress"] == {"fraction": 0.75}
    # after the end (a cancel) the worker's last progress report is stored nowhere and sent to
    # no one: the socket's last word is the cancellation
    await database_sync_to_async(job_transition)(ImportJob, job.pk, JobStatus.CANCELLED)
    await database_sync_to_async(job_publish)(ImportJob, str(job.pk), {"status": "CANCELLED"},
                                              force=True)
    assert (await comm.receive_json_from(timeout=5)) == {"status": "CANCELLED"}
    await asyncio.sleep(0.6)  # past the throttle window
    alive = await database_sync_to_async(job_report_progress)(ImportJob, str(job.pk),
                                                              {"fraction": 0.9})
    assert alive is False
    assert await comm.receive_nothing(timeout=1)
    await comm.disconnect()

    outsider = communicator(stranger)
    connected, code = await outsider.connect()
    assert not connected and code == 4404
    # the consumer's own database calls leave their connection open until the next
    # database_sync_to_async call on that thread closes it (close_old_connections runs before
    # each call): one more call, so that no session holds the test database when it is dropped
    # (PostgreSQL refuses to drop a database in use)
    await database_sync_to_async(lambda: None)()
