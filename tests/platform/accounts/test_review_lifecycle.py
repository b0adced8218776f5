"""A reviewer's attacks on the project / dataset lifecycle and on the staff-created users: every
request goes through the real API (DRF's APIClient) against the ``world`` fixture."""

from __future__ import annotations

from typing import Any

import pytest

from sampan.accounts.models import AuditEvent, Membership, Project
from sampan.core.jobs import JobStatus
from sampan.datasets.models import ClassLabel, Dataset, ImportJob
from sampan.training.models import TrainingJob
from sampan.training.services import training_job_cancel
from tests.platform.accounts.conftest import World, png_upload

pytestmark = pytest.mark.django_db


def _archive(world: World, api: Any, what: str) -> None:
    url = (world.url("projects/{p}/") if what == "project"
           else world.url("projects/{p}/datasets/{dataset}/"))
    answer = api(world.users["owner"]).patch(url, {"archived": True}, format="json")
    assert answer.status_code == 200, answer.content


# --- cross-project ids ------------------------------------------------------------------------

def test_a_dataset_of_project_a_cannot_be_renamed_or_deleted_through_project_b(
        world: World, api: Any) -> None:
    """The outsider owns project B; A's dataset id under B's URL is not found, and stays."""
    outsider = api(world.users["outsider"])
    url = world.url("projects/{p}/datasets/{dataset}/", project=world.other)
    assert outsider.patch(url, {"name": "mine"}, format="json").status_code == 404
    assert outsider.patch(url, {"archived": True}, format="json").status_code == 404
    assert outsider.delete(url).status_code == 404
    dataset = Dataset.objects.get(pk=world.ids["dataset"])
    assert dataset.name == "Pets" and dataset.archived_at is None


def test_a_member_of_both_projects_cannot_reach_a_dataset_through_the_wrong_project(
        world: World, api: Any) -> None:
    """The editor of A made a viewer of B: B's URL with A's dataset id is a 404 (not A's
    editor rights applied through B), and B's dataset under A's URL is a 404 too."""
    from sampan.accounts.services import membership_set

    membership_set(project=world.other, username="editor", role="viewer")
    editor = api(world.users["editor"])
    through_b = world.url("projects/{p}/datasets/{dataset}/", project=world.other)
    assert editor.delete(through_b).status_code in (403, 404)
    b_under_a = world.url("projects/{p}/datasets/{other_dataset}/")
    assert editor.patch(b_under_a, {"name": "x"}, format="json").status_code == 404
    assert editor.delete(b_under_a).status_code == 404
    assert Dataset.objects.filter(pk__in=[world.ids["dataset"],
                                          world.ids["other_dataset"]]).count() == 2


# --- roles ------------------------------------------------------------------------------------

def test_a_viewer_can_neither_rename_archive_nor_delete_a_dataset(world: World, api: Any) -> None:
    viewer = api(world.users["viewer"])
    url = world.url("projects/{p}/datasets/{dataset}/")
    for answer in (viewer.patch(url, {"name": "x"}, format="json"),
                   viewer.patch(url, {"archived": True}, format="json"),
                   viewer.delete(url)):
        assert answer.status_code == 403, answer.content
    assert Dataset.objects.get(pk=world.ids["dataset"]).archived_at is None


def test_the_editor_cannot_unarchive_a_project_the_owner_archived(world: World, api: Any) -> None:
    _archive(world, api, "project")
    answer = api(world.users["editor"]).patch(world.url("projects/{p}/"), {"archived": False},
                                              format="json")
    assert answer.status_code == 403
    assert Project.objects.get(pk=world.project.pk).archived_at is not None


def test_users_create_ignores_is_staff_and_refuses_non_staff(world: World, api: Any) -> None:
    from rest_framework.test import APIClient

    from sampan.accounts.services import api_token_create

    owner = world.users["owner"]
    body = {"username": "mallory", "is_staff": True, "is_superuser": True}
    assert api(owner).post("/api/v1/users/", body, format="json").status_code == 403
    owner.is_staff = True
    owner.save(update_fields=["is_staff"])
    client = APIClient()  # a token, as a script would use it (one that expires cannot create
    # accounts: test_tokens.py)
    client.credentials(HTTP_AUTHORIZATION="Bearer " + api_token_create(
        user=owner, name="ci", expires_in_days=None).secret)
    answer = client.post("/api/v1/users/", body, format="json")
    assert answer.status_code == 201, answer.content
    from django.contrib.auth import get_user_model

    made = get_user_model().objects.get(username="mallory")
    assert not made.is_staff and not made.is_superuser


# --- blocked deletes --------------------------------------------------------------------------

def test_a_queued_import_blocks_the_dataset_and_the_project_delete(world: World, api: Any) -> None:
    from sampan.datasets import imports

    training_job_cancel(job=TrainingJob.objects.get(pk=world.ids["queued_job"]))
    job = imports.import_job_create(dataset=world.objects["dataset"],
                                    files=[png_upload("late.png", (3, 4, 5))], label="cat")
    ImportJob.objects.filter(pk=job.pk).update(status=JobStatus.QUEUED)
    owner = api(world.users["owner"])
    for url in (world.url("projects/{p}/datasets/{dataset}/"), world.url("projects/{p}/")):
        answer = owner.delete(url)
        assert answer.status_code == 409, answer.content
        kinds = {b["kind"] for b in answer.json()["error"]["details"]["blockers"]}
        assert "import_job" in kinds
    assert Dataset.objects.filter(pk=world.ids["dataset"]).exists()


# --- archived: no new work --------------------------------------------------------------------

@pytest.mark.parametrize("what", ["project", "dataset"])
def test_an_archived_dataset_takes_no_new_class_labels(world: World, api: Any, what: str) -> None:
    """Adding classes changes what can be labeled: new work, refused like a label write."""
    _archive(world, api, what)
    answer = api(world.users["editor"]).post(
        world.url("projects/{p}/datasets/{dataset}/class-labels/"), {"names": ["bird"]},
        format="json")
    assert answer.status_code == 409, answer.content
    assert answer.json()["error"]["code"] == "archived"
    assert not ClassLabel.objects.filter(dataset_id=world.ids["dataset"], name="bird").exists()


@pytest.mark.parametrize("what", ["project", "dataset"])
def test_an_archived_dataset_refuses_labels_boxes_versions_and_prelabel(
        world: World, api: Any, what: str) -> None:
    _archive(world, api, what)
    editor = api(world.users["editor"])
    answers = [
        editor.put(world.url("projects/{p}/samples/{sample}/label/"), {"class_label": "dog"},
                   format="json"),
        editor.post(world.url("projects/{p}/datasets/{dataset}/labels/bulk/"),
                    {"sample_ids": [world.ids["sample"]], "class_label": "dog"}, format="json"),
        editor.post(world.url("projects/{p}/datasets/{dataset}/versions/"), {"seed": 1},
                    format="json"),
        editor.post(world.url("projects/{p}/datasets/{dataset}/imports/"),
                    {"files": [png_upload("n.png", (1, 2, 3))]}, format="multipart"),
    ]
    for answer in answers:
        assert answer.status_code == 409, answer.content
        assert answer.json()["error"]["code"] == "archived"


def test_an_archived_project_takes_no_new_dataset_through_rename_either(
        world: World, api: Any) -> None:
    """Archive is undone by the owner only; the editor cannot unarchive a dataset to work in
    an archived project (the project's refusal still holds)."""
    _archive(world, api, "project")
    editor = api(world.users["editor"])
    answer = editor.put(world.url("projects/{p}/samples/{sample}/label/"), {"class_label": "dog"},
                        format="json")
    assert answer.status_code == 409


# --- names ------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["a\tb", "x" * 201, "   ", "a\u200bb", "\u202egnp.exe"])
def test_dataset_rename_refuses_bad_names(world: World, api: Any, name: str) -> None:
    answer = api(world.users["editor"]).patch(world.url("projects/{p}/datasets/{dataset}/"),
                                              {"name": name}, format="json")
    assert answer.status_code == 400, answer.content
    assert answer.json()["error"]["field"] == "name"
    assert Dataset.objects.get(pk=world.ids["dataset"]).name == "Pets"


def test_dataset_rename_onto_a_taken_name_with_spaces_is_a_conflict(world: World,
                                                                    api: Any) -> None:
    answer = api(world.users["editor"]).patch(world.url("projects/{p}/datasets/{dataset}/"),
                                              {"name": "  Shelf "}, format="json")
    assert answer.status_code == 409 and answer.json()["error"]["field"] == "name"


# --- users ------------------------------------------------------------------------------------

@pytest.fixture
def staff(world: World, api: Any) -> Any:
    owner = world.users["owner"]
    owner.is_staff = True
    owner.save(update_fields=["is_staff"])
    return api(owner)


def test_an_email_longer_than_the_column_is_a_400_naming_email(staff: Any) -> None:
    """User.email holds 254 characters; Django's validator lets 320 through (PostgreSQL then
    raised a DataError, a 500; SQLite stored it)."""
    address = "a" * 64 + "@" + ".".join(["b" * 60] * 4) + ".com"
    assert 254 < len(address) <= 320
    answer = staff.post("/api/v1/users/", {"username": "longmail", "email": address},
                        format="json")
    assert answer.status_code == 400, answer.content
    assert answer.json()["error"]["field"] == "email"


def test_email_case_differences_conflict_and_invite_finds_the_user(world: World, staff: Any,
                                                                   api: Any) -> None:
    made = staff.post("/api/v1/users/", {"username": "ana", "email": "Ana@Example.COM"},
                      format="json")
    assert made.status_code == 201, made.content
    again = staff.post("/api/v1/users/", {"username": "ana2", "email": "ana@example.com"},
                       format="json")
    assert again.status_code == 409 and again.json()["error"]["field"] == "email"
    twin = staff.post("/api/v1/users/", {"username": "ANA", "email": ""}, format="json")
    assert twin.status_code == 409 and twin.json()["error"]["field"] == "username"
    invited = staff.post(world.url("projects/{p}/members/"),
                         {"email": " ana@EXAMPLE.com ", "role": "viewer"}, format="json")
    assert invited.status_code == 200, invited.content
    assert invited.json()["username"] == "ana"


@pytest.mark.parametrize("password, why", [("short", "too short"), ("password123", "common"),
                                           ("12345678901", "numeric"), ("validuser1", "similar")])
def test_users_create_applies_the_password_validators(staff: Any, password: str,
                                                      why: str) -> None:
    answer = staff.post("/api/v1/users/", {"username": "validuser1", "password": password},
                        format="json")
    assert answer.status_code == 400, (why, answer.content)
    assert answer.json()["error"]["field"] == "password"


def test_a_non_owner_learns_nothing_about_which_users_exist(world: World, api: Any) -> None:
    """An editor's invite of an existing and of a missing user answer the same 403."""
    editor = api(world.users["editor"])
    url = world.url("projects/{p}/members/")
    known = editor.post(url, {"username": "newcomer", "role": "viewer"}, format="json")
    unknown = editor.post(url, {"username": "nobody-here", "role": "viewer"}, format="json")
    assert known.status_code == unknown.status_code == 403
    assert known.json() == unknown.json()
    by_mail = editor.post(url, {"email": "x@example.com", "role": "viewer"}, format="json")
    assert by_mail.status_code == 403
    outsider = api(world.users["outsider"])
    assert outsider.post(url, {"username": "newcomer", "role": "viewer"},
                         format="json").json() == outsider.post(
        url, {"username": "nobody-here", "role": "viewer"}, format="json").json()


def test_an_inactive_user_is_not_invited_by_username_either(world: World, api: Any) -> None:
    """Invite by e-mail skips deactivated accounts; invite by username must too (a deactivated
    account added to a project would come back with its access when reactivated by mistake)."""
    from django.contrib.auth import get_user_model

    get_user_model().objects.filter(username="newcomer").update(is_active=False)
    answer = api(world.users["owner"]).post(world.url("projects/{p}/members/"),
                                            {"username": "newcomer", "role": "editor"},
                                            format="json")
    assert answer.status_code == 400, answer.content
    assert answer.json()["error"]["field"] == "username"
    assert not Membership.objects.filter(project=world.project,
                                         user__username="newcomer").exists()


# --- audit after delete -----------------------------------------------------------------------

def test_the_audit_trail_of_a_deleted_dataset_stays_readable_by_the_owner(
        world: World, api: Any) -> None:
    owner = api(world.users["owner"])
    url = world.url("projects/{p}/datasets/{dataset}/")
    from sampan.datasets.services import dataset_create

    spare = dataset_create(project=world.project, name="Spare")
    answer = owner.delete(world.url("projects/{p}/datasets/") + f"{spare.pk}/")
    assert answer.status_code == 204, answer.content
    events = owner.get(world.url("projects/{p}/audit/") + "?action=dataset.").json()["results"]
    # newest first: the delete, then the creates (the world's datasets and the spare one)
    actions = [e["action"] for e in events]
    assert actions[0] == "dataset.delete" and set(actions[1:]) == {"dataset.create"}
    assert events[0]["details"]["name"] == "Spare" and events[0]["actor"] == "owner"
    assert owner.get(url).status_code == 200
    assert AuditEvent.objects.filter(action="dataset.delete").count() == 1


def test_an_import_queued_before_the_archive_still_adds_its_classes(world: World,
                                                                    api: Any) -> None:
    """Archive refuses new work, it does not break work already accepted: the class check is
    on the API's add, not on every class an import reads."""
    from sampan.datasets import imports

    job = imports.import_job_create(dataset=world.objects["dataset"], label="bird",
                                    files=[png_upload("bird.png", (7, 200, 7))])
    _archive(world, api, "dataset")
    imports.import_job_run(job_id=job.pk)
    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED, job.report
    assert ClassLabel.objects.filter(dataset_id=world.ids["dataset"], name="bird").exists()


def test_an_archived_project_refuses_compression_and_prelabel(world: World, api: Any) -> None:
    _archive(world, api, "project")
    editor = api(world.users["editor"])
    answers = [
        editor.post(world.url("projects/{p}/compression-jobs/"),
                    {"source_model_version_id": world.ids["model_version"]}, format="json"),
        editor.post(world.url("projects/{p}/datasets/{dataset}/prelabel-jobs/"),
                    {"model_version_id": world.ids["model_version"]}, format="json"),
    ]
    for answer in answers:
        assert answer.status_code == 409, answer.content
        assert answer.json()["error"]["code"] == "archived"


def test_a_dataset_delete_keeps_an_image_another_dataset_of_the_project_holds(
        world: World, api: Any, django_capture_on_commit_callbacks: Any) -> None:
    from pathlib import Path

    from django.conf import settings

    from sampan.datasets import imports
    from sampan.datasets.models import Sample
    from sampan.datasets.services import dataset_create

    training_job_cancel(job=TrainingJob.objects.get(pk=world.ids["queued_job"]))
    twin = dataset_create(project=world.project, name="Twin", labels=["cat"])
    job = imports.import_job_create(dataset=twin, label="cat",
                                    files=[png_upload("same.png", (250, 10, 10))])
    imports.import_job_run(job_id=job.pk)
    kept = Sample.objects.get(dataset=twin).file
    files = set(Sample.objects.filter(dataset=world.objects["dataset"])
                .values_list("file", flat=True))
    assert kept in files
    with django_capture_on_commit_callbacks(execute=True):
        answer = api(world.users["editor"]).delete(world.url("projects/{p}/datasets/{dataset}/"))
    assert answer.status_code == 204
    media = Path(settings.MEDIA_ROOT)
    assert [name for name in files if (media / name).exists()] == [kept]
    image = api(world.users["viewer"]).get(
        world.url("projects/{p}/samples/") + f"{Sample.objects.get(dataset=twin).pk}/image/")
    assert image.status_code in (200, 302)
