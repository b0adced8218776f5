"""Projects after creation: rename, archive / unarchive, delete (``sampan.accounts.lifecycle``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.conf import settings

from sampan.accounts.models import AuditEvent, Project
from sampan.datasets.models import Sample
from sampan.fleet.models import Device
from sampan.training.models import TrainingJob
from sampan.training.services import training_job_cancel
from tests.platform.accounts.conftest import World, png_upload

pytestmark = pytest.mark.django_db


def media(name: str) -> Path:
    return Path(settings.MEDIA_ROOT) / name


def test_owner_renames_and_describes_a_project_audited(world: World, api: Any) -> None:
    answer = api(world.users["owner"]).patch(world.url("projects/{p}/"),
                                             {"name": " Línea 2 ", "description": "new"},
                                             format="json")
    assert answer.status_code == 200, answer.json()
    assert answer.json()["name"] == "Línea 2" and answer.json()["description"] == "new"
    event = AuditEvent.objects.filter(project=world.project, action="project.update").get()
    assert event.details["name"] == {"from": "Project A", "to": "Línea 2"}


@pytest.mark.parametrize("body, field", [({"name": "a\nb"}, "name"), ({"name": ""}, "name"),
                                         ({"name": "x" * 201}, "name"),
                                         ({"description": "a\x00b"}, "description")])
def test_rename_validation_names_the_field(world: World, api: Any, body: dict[str, str],
                                           field: str) -> None:
    answer = api(world.users["owner"]).patch(world.url("projects/{p}/"), body, format="json")
    assert answer.status_code == 400
    assert answer.json()["error"]["field"] == field


@pytest.mark.parametrize("role", ["viewer", "editor"])
def test_only_owners_rename_archive_or_delete_a_project(world: World, api: Any,
                                                        role: str) -> None:
    client = api(world.users[role])
    assert client.patch(world.url("projects/{p}/"), {"name": "x"},
                        format="json").status_code == 403
    assert client.delete(world.url("projects/{p}/")).status_code == 403
    assert Project.objects.filter(pk=world.project.pk, name="Project A").exists()


def test_another_projects_user_gets_404(world: World, api: Any) -> None:
    client = api(world.users["outsider"])
    assert client.patch(world.url("projects/{p}/"), {"name": "x"},
                        format="json").status_code == 404
    assert client.delete(world.url("projects/{p}/")).status_code == 404


def test_archive_hides_refuses_new_work_and_unarchive_restores(world: World, api: Any) -> None:
    owner, editor = api(world.users["owner"]), api(world.users["editor"])
    answer = owner.patch(world.url("projects/{p}/"), {"archived": True}, format="json")
    assert answer.status_code == 200 and answer.json()["archived"] is True
    assert answer.json()["archived_at"] is not None
    assert [p["name"] for p in owner.get("/api/v1/projects/").json()] == []
    assert [p["name"] for p in owner.get("/api/v1/projects/?archived=true").json()] == [
        "Project A"]
    assert len(owner.get("/api/v1/projects/?archived=all").json()) == 1
    assert owner.get("/api/v1/projects/?archived=maybe").json()["error"]["field"] == "archived"
    assert owner.get(world.url("projects/{p}/")).json()["archived"] is True  # reads still work

    refused = [
        editor.post(world.url("projects/{p}/datasets/{dataset}/imports/"),
                    {"files": [png_upload("new.png", (1, 2, 3))]}, format="multipart"),
        editor.post(world.url("projects/{p}/training-jobs/"),
                    {"dataset_version_id": world.ids["dataset_version"], "budget_s": 60},
                    format="json"),
        editor.put(world.url("projects/{p}/samples/{sample}/label/"), {"class_label": "dog"},
                   format="json"),
        editor.post(world.url("projects/{p}/datasets/"), {"name": "more"}, format="json"),
    ]
    for answer in refused:
        assert answer.status_code == 409, answer.content
        error = answer.json()["error"]
        assert error["code"] == "archived" and "archived" in error["message"]
        assert error["details"]["archived"] == "project"

    assert owner.patch(world.url("projects/{p}/"), {"archived": False},
                       format="json").json()["archived"] is False
    assert [p["name"] for p in owner.get("/api/v1/projects/").json()] == ["Project A"]
    answer = editor.put(world.url("projects/{p}/samples/{sample}/label/"), {"class_label": "dog"},
                        format="json")
    assert answer.status_code == 200, answer.content
    actions = set(AuditEvent.objects.filter(project=world.project).values_list("action",
                                                                               flat=True))
    assert {"project.archive", "project.unarchive"} <= actions


def test_delete_is_refused_while_a_job_runs_and_while_a_device_runs_its_model(
        world: World, api: Any) -> None:
    owner = api(world.users["owner"])
    answer = owner.delete(world.url("projects/{p}/"))
    assert answer.status_code == 409
    error = answer.json()["error"]
    assert error["code"] == "delete_blocked"
    kinds = {b["kind"] for b in error["details"]["blockers"]}
    assert kinds == {"deployment", "training_job"}
    assert "shelf-camera" in error["message"] and "cancel" in error["message"]

    training_job_cancel(job=TrainingJob.objects.get(pk=world.ids["queued_job"]))
    error = owner.delete(world.url("projects/{p}/")).json()["error"]
    assert [b["kind"] for b in error["details"]["blockers"]] == ["deployment"]
    assert "remove those devices" in error["message"]
    assert Project.objects.filter(pk=world.project.pk).exists()


def test_delete_removes_rows_then_files_and_keeps_an_audit_event(
        world: World, api: Any, django_capture_on_commit_callbacks: Any) -> None:
    from sampan.datasets import imports
    from sampan.datasets.services import dataset_create

    training_job_cancel(job=TrainingJob.objects.get(pk=world.ids["queued_job"]))
    Device.objects.filter(pk=world.ids["device"]).delete()
    # project B holds one of A's images: the shared file must outlive A
    shared = Sample.objects.filter(dataset=world.objects["dataset"]).order_by("file").first()
    job = imports.import_job_create(dataset=world.objects["other_dataset"], label="cat",
                                    files=[png_upload("same.png", (250, 10, 10))])
    imports.import_job_run(job_id=job.pk)
    kept = Sample.objects.get(dataset=world.objects["other_dataset"]).file
    samples = set(Sample.objects.filter(dataset__project=world.project)
                  .values_list("file", flat=True))
    package = world.objects["model_version"].package_dir
    artifacts = f"jobs/training/{world.ids['training_job']}"
    media(artifacts + "/attempt-1").mkdir(parents=True)  # where the worker stores them
    media(artifacts + "/attempt-1/checkpoint.pt").write_bytes(b"weights")
    assert media(package).is_dir() and media(artifacts).is_dir() and kept in samples
    assert all(media(name).is_file() for name in samples)
    dataset_other = dataset_create(project=world.other, name="Unrelated")

    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        answer = api(world.users["owner"]).delete(world.url("projects/{p}/"))
    assert answer.status_code == 204, answer.content
    assert not Project.objects.filter(pk=world.project.pk).exists()
    assert media(package).is_dir()  # files wait for the commit
    for callback in callbacks:
        callback()
    assert not media(package).exists() and not media(artifacts).exists()
    assert [n for n in samples if media(n).exists()] == [kept]
    assert shared is not None and media(kept).is_file()

    event = AuditEvent.objects.get(action="project.delete")
    assert event.project is None and event.target_id == str(world.project.pk)
    assert event.details["name"] == "Project A" and event.actor_name == "owner"
    assert dataset_other.pk and Project.objects.filter(pk=world.other.pk).exists()
