"""Send Celery tasks by name, only after the surrounding transaction commits; read which jobs
the broker still holds.

The web process never imports the workers (docs/architecture.md): it sends tasks by name. A task
enqueued inside a transaction that rolls back is never sent, because the send is registered with
``transaction.on_commit``.
"""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING, Any

from django.db import transaction

if TYPE_CHECKING:
    from sampan.core.models import Job

log = logging.getLogger(__name__)


def enqueue_on_commit(task_name: str, *args: Any, queue: str | None = None) -> None:
    """Send ``task_name(*args)`` when the current transaction commits (at once outside one).

    Arguments must be ids or other JSON values, never model instances.
    """
    from sampan.celery import app

    def send() -> None:
        app.send_task(task_name, args=list(args), queue=queue)

    transaction.on_commit(send, robust=False)


def job_enqueue_on_commit(model: type[Job], pk: Any) -> None:
    """Send the task that runs job ``pk`` of ``model`` (``model.task_name`` on
    ``model.task_queue``) when the current transaction commits."""
    enqueue_on_commit(model.task_name, str(pk), queue=model.task_queue)


def broker_job_ids(queue: str) -> set[str] | None:
    """The first task argument (a job id) of every message the broker holds for ``queue``:
    waiting in the queue (each priority level) or delivered to a worker and not acknowledged yet
    (tasks are ``acks_late``: a running or reserved task stays unacknowledged).

    Reads kombu's Redis transport layout: a list per queue and priority, and the ``unacked``
    hash of ``[message, exchange, routing_key]``; each message's ``headers.argsrepr`` is the
    repr of the task's arguments (Celery message protocol 2). Returns None when the broker is
    not Redis or cannot be read (the caller then cannot tell a lost message from a waiting one).
    """
    from sampan.celery import app

    try:
        with app.connection_for_read() as connection:
            connection.ensure_connection(max_retries=1, timeout=5)
            channel = connection.default_channel
            client = getattr(channel, "client", None)
            if client is None or not hasattr(channel, "_q_for_pri"):
                return None
            raw = [m for priority in channel.priority_steps
                   for m in client.lrange(channel._q_for_pri(queue, priority), 0, -1)]
            unacked = client.hvals(channel.unacked_key)
    except Exception:  # a broker that does not answer: nothing can be told
        log.warning("could not read the broker's queue %s", queue, exc_info=True)
        return None
    messages: list[Any] = []
    for entry in raw:
        try:
            messages.append(json.loads(entry))
        except (TypeError, ValueError):
            continue  # not a message of ours
    for entry in unacked:  # [message, exchange, routing_key]
        try:
            messages.append(json.loads(entry)[0])
        except (TypeError, ValueError, IndexError, KeyError):
            continue
    ids: set[str] = set()
    for message in messages:
        try:
            headers = message.get("headers") or {}
        except AttributeError:
            continue
        argsrepr = str(headers.get("argsrepr", ""))
        ids.update(part.strip(" '\"") for part in argsrepr.strip("[]()").split(",") if part)
    return ids


def broker_queue_lengths(queues: list[str]) -> dict[str, int] | None:
    """Messages waiting in each of ``queues`` (every priority level; delivered ones are not
    counted), read from kombu's Redis lists as :func:`broker_job_ids` reads them. None when the
    broker is not Redis or cannot be read."""
    from sampan.celery import app

    try:
        # socket timeouts: a Redis that accepts and never answers must not hang the caller
        with app.connection_for_read(transport_options={
                "socket_timeout": 2, "socket_connect_timeout": 2}) as connection:
            connection.ensure_connection(max_retries=1, timeout=2)
            channel = connection.default_channel
            client = getattr(channel, "client", None)
            if client is None or not hasattr(channel, "_q_for_pri"):
                return None
            return {queue: sum(int(client.llen(channel._q_for_pri(queue, priority)))
                               for priority in channel.priority_steps)
                    for queue in queues}
    except Exception:  # a broker that does not answer
        log.warning("could not read the broker's queue lengths", exc_info=True)
        return None
