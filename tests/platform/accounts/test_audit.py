"""The audit log: members changed, a training job started, a deployment and tokens are
recorded with who, when and what; owners read the project's log, no one else does; a change
that is refused leaves no event."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest
from django.utils import timezone

from sampan.accounts import services
from sampan.accounts.models import AuditEvent
from sampan.core.errors import Conflict
from sampan.fleet.models import Device
from sampan.fleet.services import deployment_create
from sampan.registry.services import model_version_register
from sampan.training import services as training
from tests.platform.training.test_training_services import labelled_version, tiny_onnx

pytestmark = pytest.mark.django_db


def test_who_did_what_is_recorded_and_shown_to_owners_only(
        project_with_roles: dict[str, Any], api: Any, make_user: Any, tmp_path: Any) -> None:
    project, owner = project_with_roles["project"], project_with_roles["owner"]
    editor = project_with_roles["editor"]
    make_user("carol")
    base = f"/api/v1/projects/{project.pk}"
    assert api(owner).post(f"{base}/members/", {"username": "carol", "role": "viewer"},
                           format="json").status_code == 200
    carol = api(owner).get(f"{base}/members/").json()
    carol_id = next(m["id"] for m in carol if m["username"] == "carol")
    assert api(owner).delete(f"{base}/members/{carol_id}/").status_code == 204
    version = labelled_version(project, {"a": 5, "b": 5})
    training.training_job_create(project=project, dataset_version=version, budget_s=30,
                                 user=editor)
    model = model_version_register(
        project=project, model_name="m", task_type="image_classification", labels=["a", "b"],
        preprocessing={"size": [4, 4], "resize": "stretch", "mean": [0.5] * 3,
                       "std": [0.5] * 3, "colour_order": "RGB", "layout": "NCHW",
                       "dtype": "float32"}, onnx_path=tiny_onnx(tmp_path / "m.onnx"),
        input_shape=["N", 3, 4, 4], metrics={}, lineage={},
        onnx_info={"opset": 18, "ir_version": 9}, pretrained=False)
    device = Device.objects.create(project=project, name="cam-1",
                                   credential_sha256=hashlib.sha256(b"c").hexdigest(),
                                   last_seen_at=timezone.now())
    deployment_create(project=project, user=editor, model_version_id=model.pk,
                      device_ids=[device.pk])

    log = api(owner).get(f"{base}/audit/").json()["results"]
    actions = [(e["actor"], e["action"]) for e in reversed(log)]
    # the fixture adds the editor and the viewer through the service, with no actor (system)
    assert actions == [("owner", "project.create"), ("", "member.set"),
                       ("", "member.set"), ("owner", "member.set"),
                       ("owner", "member.remove"),
                       # labelled_version creates and freezes through the services (no actor)
                       ("", "dataset.create"), ("", "dataset_version.create"),
                       ("editor", "training.create"),
                       ("editor", "deployment.create")]
    assert log[0]["details"]["devices"] == ["cam-1"]
    assert log[2]["details"]["version"] == 1 and log[3]["details"]["task_type"] == (
        "image_classification")
    assert log[4]["details"] == {"username": "carol", "role": "viewer"}
    assert log[5]["details"] == {"username": "carol", "role": "viewer", "previous_role": None}
    for user in ("editor", "viewer", "outsider"):
        assert api(project_with_roles[user]).get(f"{base}/audit/").status_code in (403, 404)


def test_tokens_are_audited_and_a_refused_change_leaves_no_event(make_user: Any) -> None:
    ana = make_user("ana")
    issued = services.api_token_create(user=ana, name="ci")
    services.api_token_revoke(user=ana, token_id=issued.token.pk)
    events = list(AuditEvent.objects.filter(actor=ana).order_by("id")
                  .values_list("action", "target_id"))
    assert events == [("token.create", str(issued.token.pk)),
                      ("token.revoke", str(issued.token.pk))]
    project = services.project_create(user=ana, name="P")
    before = AuditEvent.objects.count()
    with pytest.raises(Conflict):  # the last owner cannot become a viewer
        services.membership_set(project=project, username="ana", role="viewer", actor=ana)
    assert AuditEvent.objects.count() == before
