"""Datasets after creation: rename, archive / unarchive, delete (``sampan.datasets.lifecycle``).
Lives beside the project tests for the ``world`` fixture (a project with one of everything)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.conf import settings

from sampan.accounts.models import AuditEvent
from sampan.datasets.models import Dataset, ImportJob, Sample
from sampan.registry.models import ModelVersion
from sampan.training.models import TrainingJob
from sampan.training.services import training_job_cancel
from tests.platform.accounts.conftest import World, png_upload

pytestmark = pytest.mark.django_db


def media(name: str) -> Path:
    return Path(settings.MEDIA_ROOT) / name


def test_editor_renames_a_dataset_with_the_create_rules(world: World, api: Any) -> None:
    editor = api(world.users["editor"])
    url = world.url("projects/{p}/datasets/{dataset}/")
    answer = editor.patch(url, {"name": "Pets 2"}, format="json")
    assert answer.status_code == 200 and answer.json()["name"] == "Pets 2"
    for body, status in (({"name": "Shelf"}, 409), ({"name": "a\u202eb"}, 400),
                         ({"name": ""}, 400)):
        answer = editor.patch(url, body, format="json")
        assert answer.status_code == status, answer.content
        assert answer.json()["error"]["field"] == "name"
    assert api(world.users["viewer"]).patch(url, {"name": "x"}, format="json").status_code == 403
    assert api(world.users["outsider"]).patch(url, {"name": "x"},
                                              format="json").status_code == 404
    event = AuditEvent.objects.get(project=world.project, action="dataset.update")
    assert event.details["name"] == {"from": "Pets", "to": "Pets 2"}


def test_archived_dataset_is_hidden_refuses_imports_and_training_and_comes_back(
        world: World, api: Any) -> None:
    editor = api(world.users["editor"])
    url = world.url("projects/{p}/datasets/{dataset}/")
    assert editor.patch(url, {"archived": True}, format="json").json()["archived"] is True
    names = [d["name"] for d in editor.get(world.url("projects/{p}/datasets/")).json()]
    assert names == ["Shelf"]
    names = [d["name"] for d in
             editor.get(world.url("projects/{p}/datasets/") + "?archived=true").json()]
    assert names == ["Pets"]
    imported = editor.post(url + "imports/", {"files": [png_upload("n.png", (1, 2, 3))]},
                           format="multipart")
    trained = editor.post(world.url("projects/{p}/training-jobs/"),
                          {"dataset_version_id": world.ids["dataset_version"], "budget_s": 60},
                          format="json")
    for answer in (imported, trained):
        assert answer.status_code == 409, answer.content
        assert answer.json()["error"]["code"] == "archived"
        assert answer.json()["error"]["details"] == {"archived": "dataset",
                                                     "id": world.ids["dataset"]}
        assert "dataset 'Pets' is archived" in answer.json()["error"]["message"]
    assert editor.patch(url, {"archived": False}, format="json").json()["archived"] is False
    answer = editor.post(url + "imports/", {"files": [png_upload("n.png", (1, 2, 3))]},
                         format="multipart")
    assert answer.status_code == 202, answer.content


def test_delete_is_refused_while_an_import_or_a_training_runs_on_it(world: World,
                                                                    api: Any) -> None:
    editor = api(world.users["editor"])
    url = world.url("projects/{p}/datasets/{dataset}/")
    queued_import = editor.post(url + "imports/", {"files": [png_upload("n.png", (1, 2, 3))]},
                                format="multipart").json()
    answer = editor.delete(url)
    assert answer.status_code == 409
    error = answer.json()["error"]
    assert error["code"] == "delete_blocked" and "cancel those jobs" in error["message"]
    assert {(b["kind"], b["id"]) for b in error["details"]["blockers"]} == {
        ("import_job", queued_import["id"]), ("training_job", world.ids["queued_job"])}
    # the device running a model trained on it does not block: the model version stays
    ImportJob.objects.filter(pk=queued_import["id"]).update(status="failed")
    training_job_cancel(job=TrainingJob.objects.get(pk=world.ids["queued_job"]))
    assert editor.delete(url).status_code == 204


def test_delete_removes_the_dataset_then_its_files_and_keeps_its_models(
        world: World, api: Any, django_capture_on_commit_callbacks: Any) -> None:
    training_job_cancel(job=TrainingJob.objects.get(pk=world.ids["queued_job"]))
    dataset = world.objects["dataset"]
    files = set(Sample.objects.filter(dataset=dataset).values_list("file", flat=True))
    assert files and all(media(name).is_file() for name in files)
    artifacts = media(f"jobs/training/{world.ids['training_job']}/attempt-1")
    artifacts.mkdir(parents=True)
    (artifacts / "checkpoint.pt").write_bytes(b"weights")
    url = world.url("projects/{p}/datasets/{dataset}/")
    assert api(world.users["viewer"]).delete(url).status_code == 403
    assert api(world.users["outsider"]).delete(url).status_code == 404

    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        assert api(world.users["editor"]).delete(url).status_code == 204
    assert not Dataset.objects.filter(pk=dataset.pk).exists()
    assert all(media(name).is_file() for name in files)  # not before the commit
    for callback in callbacks:
        callback()
    assert [name for name in files if media(name).exists()] == []
    assert not artifacts.exists()
    version = ModelVersion.objects.get(pk=world.objects["model_version"].pk)
    assert version.dataset_version is None and media(version.package_dir).is_dir()
    assert Dataset.objects.filter(project=world.project, name="Shelf").exists()
    event = AuditEvent.objects.get(project=world.project, action="dataset.delete")
    assert event.target_id == str(dataset.pk) and event.details["name"] == "Pets"
    assert event.details["samples"] == 4 and event.actor_name == "editor"


def test_a_dataset_in_use_by_a_compression_job_is_not_deleted(world: Any) -> None:
    """A compression job calibrates and evaluates on its source model's dataset version: the
    dataset's delete waits for it, as the project's does (found by a reviewer, issue 12)."""
    from rest_framework.test import APIClient

    from sampan.compression.services import compression_job_create
    from sampan.training import services as training
    from sampan.training.models import TrainingJob

    training.training_job_cancel(job=TrainingJob.objects.get(pk=world.ids["queued_job"]))
    job = compression_job_create(project=world.project, source=world.objects["model_version"],
                                 device=None, user=world.users["owner"])
    assert job.source.dataset_version_id == world.objects["dataset_version"].pk
    editor = APIClient()
    editor.force_authenticate(world.users["editor"])
    answer = editor.delete(f"/api/v1/projects/{world.project.pk}/datasets/{world.ids['dataset']}/")
    assert answer.status_code == 409, (answer.status_code, job.status)
    assert str(job.pk) in answer.json()["error"]["message"]
