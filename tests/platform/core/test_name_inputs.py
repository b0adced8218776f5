"""Every input that names something refuses control characters with a 400 naming the field, and
creates nothing; names stored before the rule existed still render."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from sampan.accounts.models import ApiToken, Project
from sampan.datasets.models import ClassLabel, Dataset, ImportJob, Sample
from sampan.fleet.models import Device, EnrollmentToken
from sampan.fleet.services import enrollment_token_create
from tests.fixtures import images

pytestmark = pytest.mark.django_db

BAD = "two\nlines"


@pytest.fixture
def ctx(project_with_roles: dict[str, Any], api: Any) -> dict[str, Any]:
    owner = project_with_roles["owner"]
    client = api(owner)
    project = project_with_roles["project"]
    base = f"/api/v1/projects/{project.pk}"
    dataset = client.post(f"{base}/datasets/", {"name": "d", "labels": ["cat"]},
                          format="json").json()
    return {"client": client, "base": base, "dataset": dataset, "project": project,
            "owner": owner}


def refused(response: Any, field: str) -> str:
    assert response.status_code == 400, response.content
    body = response.json()["error"]
    assert body["code"] == "invalid"
    assert body["field"] == field
    assert f"{field}: contains U+" in body["message"]
    return str(body["message"])


def test_project_name_and_description(ctx: dict[str, Any]) -> None:
    client = ctx["client"]
    before = Project.objects.count()
    message = refused(client.post("/api/v1/projects/", {"name": BAD}, format="json"), "name")
    assert message.startswith("name: contains U+000A")
    refused(client.post("/api/v1/projects/", {"name": "ok", "description": "a\x00b"},
                        format="json"), "description")
    assert Project.objects.count() == before
    several_lines = client.post("/api/v1/projects/", {"name": "ok", "description": "a\nb"},
                                format="json")
    assert several_lines.status_code == 201 and several_lines.json()["description"] == "a\nb"


def test_dataset_name_labels_and_class_labels(ctx: dict[str, Any]) -> None:
    client, base = ctx["client"], ctx["base"]
    refused(client.post(f"{base}/datasets/", {"name": BAD}, format="json"), "name")
    refused(client.post(f"{base}/datasets/", {"name": "e", "labels": ["ok", "bi\u202edi"]},
                        format="json"), "labels")
    refused(client.post(f"{base}/datasets/{ctx['dataset']['id']}/class-labels/",
                        {"names": ["fine", BAD]}, format="json"), "names")
    assert Dataset.objects.count() == 1
    assert list(ClassLabel.objects.values_list("name", flat=True)) == ["cat"]


def test_sample_labels_and_boxes(ctx: dict[str, Any]) -> None:
    client, base = ctx["client"], ctx["base"]
    dataset = Dataset.objects.get()
    sample = Sample.objects.create(dataset=dataset, content_sha256="0" * 64, file="x.png",
                                   original_name="x.png", width=10, height=10)
    refused(client.put(f"{base}/samples/{sample.pk}/label/", {"class_label": BAD},
                       format="json"), "class_label")
    response = client.put(f"{base}/samples/{sample.pk}/boxes/", {"boxes": [
        {"x1": 0, "y1": 0, "x2": 5, "y2": 5, "class_label": BAD}]}, format="json")
    assert response.status_code == 400 and response.json()["error"]["field"] == "boxes"
    assert "U+000A" in response.json()["error"]["message"]
    assert list(ClassLabel.objects.values_list("name", flat=True)) == ["cat"]


def test_import_label_is_checked_before_anything_is_staged(ctx: dict[str, Any]) -> None:
    response = ctx["client"].post(
        f"{ctx['base']}/datasets/{ctx['dataset']['id']}/imports/",
        {"files": [SimpleUploadedFile("a.png", images.png_bytes())], "label": BAD},
        format="multipart")
    refused(response, "label")
    assert ImportJob.objects.count() == 0


def test_model_name_of_a_training_job(ctx: dict[str, Any]) -> None:
    response = ctx["client"].post(f"{ctx['base']}/training-jobs/", {
        "dataset_version_id": str(uuid.uuid4()), "model_name": BAD}, format="json")
    refused(response, "model_name")


def test_api_token_name(ctx: dict[str, Any]) -> None:
    refused(ctx["client"].post("/api/v1/auth/tokens/", {"name": BAD}, format="json"), "name")
    assert ApiToken.objects.count() == 0


def test_device_name_at_enrollment_keeps_the_token_usable(ctx: dict[str, Any], api: Any) -> None:
    issued = enrollment_token_create(project=ctx["project"], user=ctx["owner"],
                                     expires_in=timedelta(hours=1))
    device_api = api()
    bad = device_api.post("/api/device/v1/enroll", {"token": issued.secret, "name": BAD},
                          format="json")
    refused(bad, "name")
    good = device_api.post("/api/device/v1/enroll", {"token": issued.secret, "name": "cam 1"},
                           format="json")
    assert good.status_code == 201
    assert list(Device.objects.values_list("name", flat=True)) == ["cam 1"]


def test_enrollment_token_note_and_version_note(ctx: dict[str, Any]) -> None:
    client, base = ctx["client"], ctx["base"]
    refused(client.post(f"{base}/enrollment-tokens/", {"note": "a\x00"}, format="json"), "note")
    assert EnrollmentToken.objects.count() == 0
    refused(client.post(f"{base}/datasets/{ctx['dataset']['id']}/versions/", {"note": "x\x00"},
                        format="json"), "note")


def test_services_apply_the_same_rule(ctx: dict[str, Any]) -> None:
    from sampan.accounts.services import project_create
    from sampan.core.errors import ValidationFailed
    from sampan.datasets.services import dataset_create

    with pytest.raises(ValidationFailed) as error:
        project_create(user=ctx["owner"], name="a\u202eb")
    assert error.value.field == "name"
    with pytest.raises(ValidationFailed) as error:
        dataset_create(project=ctx["project"], name="x", description="\x07")
    assert error.value.field == "description"


def test_names_stored_before_the_rule_still_render(ctx: dict[str, Any]) -> None:
    project = ctx["project"]
    Project.objects.filter(pk=project.pk).update(name="old\nproject")
    dataset = Dataset.objects.create(project=project, name="old\u202edataset")
    ClassLabel.objects.create(dataset=dataset, name="old\x1blabel", position=0)

    projects = ctx["client"].get("/api/v1/projects/")
    datasets = ctx["client"].get(f"{ctx['base']}/datasets/")

    assert projects.status_code == 200
    assert "old\nproject" in [p["name"] for p in projects.json()]
    assert datasets.status_code == 200
    shown = {d["name"]: [c["name"] for c in d["class_labels"]] for d in datasets.json()}
    assert shown["old\u202edataset"] == ["old\x1blabel"]


@pytest.mark.parametrize("query", ["action=a%00", "a%00b=1", "action=x&q=%00"])
def test_a_nul_in_a_query_parameter_is_a_400_naming_it(ctx: dict[str, Any], query: str) -> None:
    # a view read ?action= straight into a filter: PostgreSQL refused NUL with a 500 (review)
    response = ctx["client"].get(f"{ctx['base']}/audit/?{query}")
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    name = query.split("&")[-1].split("=")[0].replace("%00", "\x00")
    assert error["code"] == "invalid"
    assert error["field"] == (ascii(name) if "\x00" in name else name)
    assert "contains U+0000 (a control character) at position" in error["message"]
    assert ctx["client"].get(f"{ctx['base']}/audit/?action=member.").status_code == 200
