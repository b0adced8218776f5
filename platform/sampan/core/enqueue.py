"""Send Celery tasks by name, only after the surrounding transaction commits.

The web process never imports the workers (docs/architecture.md): it sends tasks by name. A task enqueued
inside a transaction that rolls back is never sent, because the send is registered with
``transaction.on_commit``.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction


def enqueue_on_commit(task_name: str, *args: Any, queue: str | None = None) -> None:
    """Send ``task_name(*args)`` when the current transaction commits (at once outside one).

    Arguments must be ids or other JSON values, never model instances.
    """
    from sampan.celery import app

    def send() -> None:
        app.send_task(task_name, args=list(args), queue=queue)

    transaction.on_commit(send, robust=False)
