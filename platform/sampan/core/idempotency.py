"""``Idempotency-Key`` on the requests that start a job: a client that retries a create (a
timeout, a lost response, a double click) gets the job its first request made, never a second.

The rule follows the IETF HTTPAPI draft "The Idempotency-Key HTTP Header Field"
(draft-ietf-httpapi-idempotency-key-header) and Stripe's API:

- the key is chosen by the client (a UUID is typical): 1-128 visible ASCII characters, else 400
  naming the header;
- a create with a key that a job of the same project already holds answers that job (200, header
  ``Idempotent-Replayed: true``) and starts nothing;
- the same key with a different request body is a client error: 422 ``idempotency_key_reused``
  naming the job that holds the key (the draft's "reused with a different payload");
- two requests with the same key at the same time create one job: the database's unique
  constraint (project, key) decides, the loser answers the winner's job.

The body is compared by a SHA-256 of its canonical JSON (keys sorted), so the order of the
fields does not matter. Keys live as long as their job.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from django.db import IntegrityError, models
from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop

from sampan.core.errors import ApplicationError, QuotaExceeded, ValidationFailed
from sampan.core.language import phrase

HEADER = "Idempotency-Key"
REPLAYED_HEADER = "Idempotent-Replayed"
MAX_LENGTH = 128
#: the ``kind`` callers of idempotent_create name their jobs by, for the catalogue
#: (``sampan.core.language.phrase``)
KINDS = (gettext_noop("job"), gettext_noop("training job"), gettext_noop("compression job"))

JobT = TypeVar("JobT", bound=models.Model)


class IdempotencyKeyReused(ApplicationError):
    """422: the key already started a job with a different request body."""

    status_code = 422
    code = "idempotency_key_reused"


@dataclass(frozen=True)
class IdempotencyKey:
    """A request's key and the SHA-256 (hex) of its canonical JSON body."""

    key: str
    fingerprint: str


def idempotency_key(request: Any) -> IdempotencyKey | None:
    """The request's ``Idempotency-Key`` (None without the header).

    Raises ValidationFailed (field ``Idempotency-Key``) for an empty key, one longer than
    ``MAX_LENGTH`` or one with characters outside visible ASCII (0x21-0x7E)."""
    raw = request.headers.get(HEADER)
    if raw is None:
        return None
    key = raw.strip()
    if not key or len(key) > MAX_LENGTH or any(not 0x21 <= ord(c) <= 0x7E for c in key):
        raise ValidationFailed(_("%(header)s must be 1 to %(limit)d visible ASCII characters "
                                 "(a UUID is a good choice)")
                               % {"header": HEADER, "limit": MAX_LENGTH}, field=HEADER)
    body = json.dumps(request.data, sort_keys=True, separators=(",", ":"), default=str)
    return IdempotencyKey(key, hashlib.sha256(body.encode()).hexdigest())


def _replay(job: JobT, key: IdempotencyKey, kind: str) -> JobT:
    if getattr(job, "idempotency_fingerprint", "") != key.fingerprint:
        raise IdempotencyKeyReused(
            _("%(header)s %(key)r already started %(kind)s %(job)s with a different request; "
              "send a new key for a new job")
            % {"header": HEADER, "key": key.key, "kind": phrase(kind), "job": job.pk},
            field=HEADER, details={"job_id": str(job.pk)})
    return job


def idempotent_create(model: type[JobT], project: Any, key: IdempotencyKey | None,
                      create: Callable[[], JobT], *, kind: str = "job") -> tuple[JobT, bool]:
    """``(job, created)``: ``create()`` when ``key`` is None or new in ``project``, else the job
    that holds it (``created`` False).

    ``create`` must store ``key.key`` and ``key.fingerprint`` on the job it makes
    (``idempotency_key``, ``idempotency_fingerprint``) inside its own transaction: the unique
    constraint on (project, idempotency_key) turns a concurrent duplicate into an IntegrityError
    (or, when the winner took the queue's last place, a QuotaExceeded), answered here with the
    job that won. Raises IdempotencyKeyReused when the key's job was made
    from a different request body; whatever ``create`` raises otherwise."""
    if key is None:
        return create(), True
    existing = model._default_manager.filter(project=project, idempotency_key=key.key).first()
    if existing is not None:
        return _replay(existing, key, kind), False
    try:
        return create(), True
    except (IntegrityError, QuotaExceeded):
        # a concurrent request with the key won: the unique constraint refused our row, or the
        # winner's job took the project's last place in the queue (review)
        winner = model._default_manager.filter(project=project,
                                               idempotency_key=key.key).first()
        if winner is None:
            raise
        return _replay(winner, key, kind), False


def idempotency_fields(key: IdempotencyKey | None) -> dict[str, str]:
    """The model fields that record ``key`` on a new job (none without a key)."""
    if key is None:
        return {}
    return {"idempotency_key": key.key, "idempotency_fingerprint": key.fingerprint}


__all__ = ["HEADER", "REPLAYED_HEADER", "IdempotencyKey", "IdempotencyKeyReused",
           "idempotency_fields", "idempotency_key", "idempotent_create"]
