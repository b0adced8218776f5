"""Actions done through the API that left no audit event (found by a reviewer, issue 12: "An
audit log: who created, trained, deployed, rolled back, changed members, created or revoked
tokens"). Each case does one action as the project's owner through the REST API and expects the
event, with the owner as its actor."""
from typing import Any

import pytest
from rest_framework.test import APIClient

from sampan.accounts.models import AuditEvent

pytestmark = pytest.mark.django_db


def _did(world: Any, do: Any) -> tuple[int, list[str]]:
    """(status, the actions of the events the request added, each by the owner)."""
    owner = APIClient()
    owner.force_authenticate(world.users["owner"])
    before = set(AuditEvent.objects.values_list("pk", flat=True))
    answer = do(owner, world.project.pk, world.ids)
    assert answer.status_code < 300, (answer.status_code, answer.content[:300])
    new = list(AuditEvent.objects.exclude(pk__in=before))
    assert all(e.actor == world.users["owner"] for e in new)
    return answer.status_code, [e.action for e in new]


def test_creating_a_dataset_is_audited(world: Any) -> None:
    _, actions = _did(world, lambda c, p, ids: c.post(
        f"/api/v1/projects/{p}/datasets/", {"name": "Birds", "labels": ["a", "b"]},
        format="json"))
    assert actions == ["dataset.create"]


def test_deleting_a_device_is_audited(world: Any) -> None:
    # deleting the device stops the model it runs: that is what unblocks a project's delete
    _, actions = _did(world, lambda c, p, ids: c.delete(
        f"/api/v1/projects/{p}/devices/{ids['device']}/"))
    assert actions == ["device.delete"]


def test_cancelling_a_training_job_is_audited(world: Any) -> None:
    _, actions = _did(world, lambda c, p, ids: c.post(
        f"/api/v1/projects/{p}/training-jobs/{ids['queued_job']}/cancel/"))
    assert actions == ["training.cancel"]


def test_freezing_a_dataset_version_is_audited(world: Any) -> None:
    _, actions = _did(world, lambda c, p, ids: c.post(
        f"/api/v1/projects/{p}/datasets/{ids['dataset']}/versions/", {"seed": 1},
        format="json"))
    assert actions == ["dataset_version.create"]
