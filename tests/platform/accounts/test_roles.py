"""Every project-scoped endpoint of the user API against every role.

viewer reads, editor writes, owner manages members; anonymous requests get 401; a user of another
project gets 404 for the project and every object of it, also through their own project's URLs.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from tests.platform.accounts.conftest import LABELS, World, png_upload, zip_names

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@dataclass(frozen=True)
class Endpoint:
    """One method on one URL. ``path`` is formatted with ``p`` (the project id) and World.ids;
    ``check`` asserts the successful response's content."""

    method: str
    path: str
    status: int = 200
    body: Callable[[World], dict[str, Any]] | None = None
    multipart: bool = False
    check: Callable[[Any, World], None] = lambda response, w: None

    @property
    def id(self) -> str:
        return f"{self.method} {self.path}"

    @property
    def addresses_object(self) -> bool:
        """The path names an object of the project besides the project itself."""
        return "{" in self.path.replace("{p}", "")


def call(client: Any, w: World, endpoint: Endpoint, project: Any = None) -> Any:
    url = w.url(endpoint.path, project)
    method = getattr(client, endpoint.method.lower())
    if endpoint.body is None:
        return method(url)
    if endpoint.multipart:
        return method(url, endpoint.body(w), format="multipart")
    return method(url, endpoint.body(w), format="json")


def _json(response: Any) -> Any:
    return json.loads(response.content)


def _ids(response: Any) -> set[str]:
    body = _json(response)
    rows = body["results"] if isinstance(body, dict) else body
    return {row["id"] for row in rows}


def _lists(key: str) -> Callable[[Any, World], None]:
    def check(response: Any, w: World) -> None:
        assert w.ids[key] in _ids(response)
    return check


def _is(key: str) -> Callable[[Any, World], None]:
    def check(response: Any, w: World) -> None:
        assert _json(response)["id"] == w.ids[key]
    return check


def _has(**expected: Any) -> Callable[[Any, World], None]:
    def check(response: Any, w: World) -> None:
        body = _json(response)
        assert {key: body[key] for key in expected} == expected
    return check


def _equals(expected: Any) -> Callable[[Any, World], None]:
    def check(response: Any, w: World) -> None:
        assert _json(response) == expected
    return check


def _image(response: Any, w: World) -> None:
    assert response["Content-Type"] == "image/png"
    assert b"".join(response.streaming_content).startswith(PNG_SIGNATURE)


def _package(response: Any, w: World) -> None:
    assert response["Content-Type"] == "application/zip"
    assert zip_names(response.content) == ["manifest.json", "model.onnx"]


def _onnx_file(response: Any, w: World) -> None:
    import hashlib

    data = b"".join(response.streaming_content)
    assert hashlib.sha256(data).hexdigest() == w.objects["model_version"].model_sha256


def _manifest_file(response: Any, w: World) -> None:
    manifest = json.loads(b"".join(response.streaming_content))
    assert manifest["model"]["version_id"] == w.ids["model_version"]
    assert manifest["signature"]["algorithm"] == "ed25519"


def _report(response: Any, w: World) -> None:
    body = _json(response)
    assert body["training_job_id"] == w.ids["training_job"]
    assert body["labels"] == LABELS


READS = [
    Endpoint("GET", "projects/{p}/", check=_has(name="Project A")),
    Endpoint("GET", "projects/{p}/members/", check=_lists("viewer_membership")),
    Endpoint("GET", "projects/{p}/datasets/", check=_lists("dataset")),
    Endpoint("GET", "projects/{p}/datasets/{dataset}/", check=_is("dataset")),
    Endpoint("GET", "projects/{p}/datasets/{dataset}/samples/", check=_lists("sample")),
    Endpoint("GET", "projects/{p}/datasets/{dataset}/versions/", check=_lists("dataset_version")),
    Endpoint("GET", "projects/{p}/imports/{import_job}/", check=_is("import_job")),
    Endpoint("GET", "projects/{p}/samples/{sample}/", check=_is("sample")),
    Endpoint("GET", "projects/{p}/samples/{sample}/image/", check=_image),
    Endpoint("GET", "projects/{p}/dataset-versions/{dataset_version}/",
             check=_is("dataset_version")),
    Endpoint("GET", "projects/{p}/training-jobs/", check=_lists("training_job")),
    Endpoint("GET", "projects/{p}/training-jobs/{training_job}/", check=_is("training_job")),
    Endpoint("GET", "projects/{p}/training-jobs/{training_job}/report/", check=_report),
    Endpoint("GET", "projects/{p}/models/", check=_lists("model")),
    Endpoint("GET", "projects/{p}/model-versions/", check=_lists("model_version")),
    Endpoint("GET", "projects/{p}/model-versions/{model_version}/", check=_is("model_version")),
    Endpoint("GET", "projects/{p}/model-versions/{model_version}/package/", check=_package),
    Endpoint("GET", "projects/{p}/model-versions/{model_version}/files/model.onnx",
             check=_onnx_file),
    Endpoint("GET", "projects/{p}/model-versions/{model_version}/files/manifest.json",
             check=_manifest_file),
    Endpoint("GET", "projects/{p}/enrollment-tokens/", check=_lists("enrollment_token")),
    Endpoint("GET", "projects/{p}/devices/", check=_lists("device")),
    Endpoint("GET", "projects/{p}/devices/{device}/", check=_is("device")),
    Endpoint("GET", "projects/{p}/devices/{device}/telemetry/", check=_equals([])),
    Endpoint("GET", "projects/{p}/deployments/", check=_lists("deployment")),
    Endpoint("GET", "projects/{p}/deployments/{deployment}/", check=_is("deployment")),
]


def _created_dataset(response: Any, w: World) -> None:
    body = _json(response)
    assert (body["name"], [c["name"] for c in body["class_labels"]]) == ("Birds", ["sparrow"])


def _sample_class(label: str) -> Callable[[Any, World], None]:
    def check(response: Any, w: World) -> None:
        classes = [a["class_label"] for a in _json(response)["annotations"] if a["kind"] == "class"]
        assert classes == [label]
    return check


def _class_labels(names: list[str]) -> Callable[[Any, World], None]:
    def check(response: Any, w: World) -> None:
        assert [c["name"] for c in _json(response)] == names
    return check


def _boxes(response: Any, w: World) -> None:
    boxes = [(a["x1"], a["y1"], a["x2"], a["y2"], a["class_label"])
             for a in _json(response)["annotations"] if a["kind"] == "box"]
    assert boxes == [(0.0, 1.0, 4.0, 5.0, "cat")]


def _new_version(response: Any, w: World) -> None:
    body = _json(response)
    assert (body["number"], body["seed"], body["labels"]) == (2, 7, LABELS)


def _queued_training(response: Any, w: World) -> None:
    body = _json(response)
    assert (body["status"], body["dataset_version_id"], body["budget_s"]) == (
        "QUEUED", w.ids["dataset_version"], 30.0)


def _import_queued(response: Any, w: World) -> None:
    body = _json(response)
    assert (body["status"], body["dataset_id"]) == ("QUEUED", w.ids["dataset"])


def _enrollment_token(response: Any, w: World) -> None:
    body = _json(response)
    assert body["token"].startswith("spe_") and body["note"] == "loading dock"


def _deployed(response: Any, w: World) -> None:
    (body,) = _json(response)
    assert (body["device_id"], body["model_version"]["id"], body["state"]) == (
        w.ids["device"], w.ids["model_version"], "pending")


WRITES = [
    Endpoint("POST", "projects/{p}/datasets/", 201, check=_created_dataset,
             body=lambda w: {"name": "Birds", "labels": ["sparrow"]}),
    Endpoint("POST", "projects/{p}/datasets/{dataset}/class-labels/",
             body=lambda w: {"names": ["bird"]},
             check=_class_labels([*LABELS, "bird"])),
    Endpoint("POST", "projects/{p}/datasets/{dataset}/imports/", 202, multipart=True,
             body=lambda w: {"files": [png_upload("new.png", (0, 250, 0))], "label": "cat"},
             check=_import_queued),
    Endpoint("POST", "projects/{p}/datasets/{dataset}/labels/bulk/",
             body=lambda w: {"sample_ids": [w.ids["sample"]], "class_label": "dog"},
             check=_equals({"labeled": 1})),
    Endpoint("PUT", "projects/{p}/samples/{sample}/label/",
             body=lambda w: {"class_label": "dog"}, check=_sample_class("dog")),
    Endpoint("PUT", "projects/{p}/samples/{box_sample}/boxes/",
             body=lambda w: {"boxes": [{"x1": 0, "y1": 1, "x2": 4, "y2": 5, "class_label": "cat"}]},
             check=_boxes),
    Endpoint("POST", "projects/{p}/datasets/{dataset}/versions/", 201,
             body=lambda w: {"seed": 7}, check=_new_version),
    Endpoint("POST", "projects/{p}/training-jobs/", 201,
             body=lambda w: {"dataset_version_id": w.ids["dataset_version"], "budget_s": 30},
             check=_queued_training),
    Endpoint("POST", "projects/{p}/training-jobs/{queued_job}/cancel/",
             check=_has(status="CANCELLED", error="cancelled by user")),
    Endpoint("POST", "projects/{p}/enrollment-tokens/", 201,
             body=lambda w: {"note": "loading dock"}, check=_enrollment_token),
    Endpoint("POST", "projects/{p}/deployments/", 201, check=_deployed,
             body=lambda w: {"model_version_id": w.ids["model_version"],
                             "device_ids": [w.ids["device"]]}),
    Endpoint("DELETE", "projects/{p}/devices/{device}/", 204),
]

OWNER_ONLY = [
    Endpoint("POST", "projects/{p}/members/",
             body=lambda w: {"username": "newcomer", "role": "viewer"},
             check=_has(username="newcomer", role="viewer")),
    Endpoint("DELETE", "projects/{p}/members/{viewer_membership}/", 204),
]

ALL = READS + WRITES + OWNER_ONLY


def _grid(endpoints: list[Endpoint], roles: list[str]) -> Any:
    return pytest.mark.parametrize(
        ("endpoint", "role"), [(e, r) for e in endpoints for r in roles],
        ids=[f"{r}-{e.id}" for e in endpoints for r in roles])


@_grid(READS, ["viewer", "editor", "owner"])
def test_members_read(world: World, api: Any, endpoint: Endpoint, role: str) -> None:
    response = call(api(world.users[role]), world, endpoint)

    assert response.status_code == endpoint.status, getattr(response, "content", b"")[:300]
    endpoint.check(response, world)


@_grid(WRITES, ["editor", "owner"])
def test_editors_write(world: World, api: Any, endpoint: Endpoint, role: str) -> None:
    response = call(api(world.users[role]), world, endpoint)

    assert response.status_code == endpoint.status, response.content[:300]
    endpoint.check(response, world)


@_grid(WRITES, ["viewer"])
def test_viewer_writes_are_forbidden(world: World, api: Any, endpoint: Endpoint,
                                     role: str) -> None:
    before = _snapshot()

    response = call(api(world.users[role]), world, endpoint)

    assert response.status_code == 403, response.content[:300]
    assert _json(response)["error"] == {
        "code": "forbidden",
        "message": "this needs the editor role in the project; you are viewer"}
    assert _snapshot() == before


@_grid(OWNER_ONLY, ["owner"])
def test_owner_manages_members(world: World, api: Any, endpoint: Endpoint, role: str) -> None:
    response = call(api(world.users[role]), world, endpoint)

    assert response.status_code == endpoint.status, response.content[:300]
    endpoint.check(response, world)


@_grid(OWNER_ONLY, ["editor", "viewer"])
def test_only_the_owner_manages_members(world: World, api: Any, endpoint: Endpoint,
                                        role: str) -> None:
    before = _snapshot()

    response = call(api(world.users[role]), world, endpoint)

    assert response.status_code == 403
    assert _json(response)["error"]["message"] == (
        f"this needs the owner role in the project; you are {role}")
    assert _snapshot() == before


@pytest.mark.parametrize("endpoint", ALL, ids=[e.id for e in ALL])
def test_anonymous_gets_401(world: World, api: Any, endpoint: Endpoint) -> None:
    before = _snapshot()

    response = call(api(), world, endpoint)

    assert response.status_code == 401
    assert response["WWW-Authenticate"] == "Bearer"
    assert _json(response)["error"]["code"] == "not_authenticated"
    assert _snapshot() == before


@pytest.mark.parametrize("endpoint", ALL, ids=[e.id for e in ALL])
def test_outsider_gets_404_on_the_project(world: World, api: Any, endpoint: Endpoint) -> None:
    before = _snapshot()

    response = call(api(world.users["outsider"]), world, endpoint)

    assert response.status_code == 404
    assert _json(response)["error"] == {"code": "not_found", "message": "project not found"}
    assert _snapshot() == before


THROUGH_OWN_PROJECT = [e for e in ALL if e.addresses_object]


@pytest.mark.parametrize("endpoint", THROUGH_OWN_PROJECT, ids=[e.id for e in THROUGH_OWN_PROJECT])
def test_outsider_gets_404_through_their_own_project(world: World, api: Any,
                                                     endpoint: Endpoint) -> None:
    """/projects/<B>/samples/<sample of A>/: B's owner passes the role check; the object lookup
    is scoped to B and finds nothing."""
    before = _snapshot()

    response = call(api(world.users["outsider"]), world, endpoint, project=world.other)

    assert response.status_code == 404, response.content[:300]
    assert _json(response)["error"]["code"] == "not_found"
    assert "project" not in _json(response)["error"]["message"]
    assert _snapshot() == before


# --- references to project A's objects inside project B's requests -----------------------------

def test_training_job_on_another_projects_dataset_version_is_404(world: World, api: Any) -> None:
    response = api(world.users["outsider"]).post(
        world.url("projects/{p}/training-jobs/", world.other),
        {"dataset_version_id": world.ids["dataset_version"], "budget_s": 30}, format="json")

    assert response.status_code == 404
    assert _json(response)["error"]["message"] == "dataset version not found"
    assert world.other.training_jobs.count() == 0


def test_bulk_label_of_another_projects_samples_is_rejected(world: World, api: Any) -> None:
    from sampan.datasets.models import Annotation

    labels_before = list(Annotation.objects.filter(sample_id=world.ids["sample"])
                         .values_list("class_label__name", flat=True))

    response = api(world.users["outsider"]).post(
        world.url("projects/{p}/datasets/{other_dataset}/labels/bulk/", world.other),
        {"sample_ids": [world.ids["sample"]], "class_label": "dog"}, format="json")

    assert response.status_code == 400
    assert _json(response)["error"] == {
        "code": "invalid", "field": "sample_ids",
        "message": f"sample {world.ids['sample']} is not in this dataset"}
    assert list(Annotation.objects.filter(sample_id=world.ids["sample"])
                .values_list("class_label__name", flat=True)) == labels_before == ["cat"]


def test_sample_list_filtered_by_another_projects_version_is_404(world: World, api: Any) -> None:
    response = api(world.users["outsider"]).get(
        world.url("projects/{p}/datasets/{other_dataset}/samples/", world.other),
        {"version": world.ids["dataset_version"], "split": "train"})

    assert response.status_code == 404
    assert _json(response)["error"]["message"] == "dataset version not found"


def test_model_versions_filtered_by_another_projects_model_is_404(world: World, api: Any) -> None:
    response = api(world.users["outsider"]).get(
        world.url("projects/{p}/model-versions/", world.other), {"model": world.ids["model"]})

    assert response.status_code == 404
    assert _json(response)["error"]["message"] == "model not found"


def test_deploying_another_projects_model_version_is_404(world: World, api: Any) -> None:
    response = api(world.users["outsider"]).post(
        world.url("projects/{p}/deployments/", world.other),
        {"model_version_id": world.ids["model_version"], "device_ids": [world.ids["device"]]},
        format="json")

    assert response.status_code == 404
    assert _json(response)["error"]["field"] == "model_version_id"
    assert world.other.deployments.count() == 0


def test_deployments_filtered_by_another_projects_device_is_404(world: World, api: Any) -> None:
    response = api(world.users["outsider"]).get(
        world.url("projects/{p}/deployments/", world.other), {"device": world.ids["device"]})

    assert response.status_code == 404
    assert _json(response)["error"]["message"] == "device not found"


@pytest.mark.parametrize(("path", "params", "field"), [
    ("projects/{p}/datasets/{dataset}/samples/", {"version": "not-a-uuid"}, "version"),
    ("projects/{p}/model-versions/", {"model": "not-a-uuid"}, "model"),
])
def test_malformed_id_filter_is_400_naming_the_parameter(world: World, api: Any, path: str,
                                                         params: dict[str, str],
                                                         field: str) -> None:
    response = api(world.users["viewer"]).get(world.url(path), params)

    assert response.status_code == 400
    assert _json(response)["error"]["field"] == field


# --- what a member may change ------------------------------------------------------------------

def _snapshot() -> dict[str, list[Any]]:
    """Every row a user-API write could touch, to prove a refused request changed nothing."""
    from sampan.accounts.models import Membership
    from sampan.datasets.models import Annotation, ClassLabel, Dataset, DatasetVersion, ImportJob
    from sampan.fleet.models import Deployment, Device, EnrollmentToken
    from sampan.training.models import TrainingJob

    def rows(model: Any, *fields: str) -> list[Any]:
        return sorted(map(str, model.objects.values_list("pk", *fields)))

    return {
        "memberships": rows(Membership, "role"), "datasets": rows(Dataset),
        "class_labels": rows(ClassLabel), "annotations": rows(Annotation, "class_label_id", "x1"),
        "imports": rows(ImportJob), "versions": rows(DatasetVersion),
        "training_jobs": rows(TrainingJob, "status"), "tokens": rows(EnrollmentToken),
        "devices": rows(Device), "deployments": rows(Deployment, "state"),
    }


def test_demoting_the_last_owner_is_409(world: World, api: Any) -> None:
    owner = api(world.users["owner"])

    response = owner.post(world.url("projects/{p}/members/"),
                          {"username": "owner", "role": "editor"}, format="json")

    assert response.status_code == 409
    assert _json(response)["error"] == {"code": "conflict", "field": "role",
                                        "message": "a project needs at least one owner"}
    assert world.project.memberships.get(user=world.users["owner"]).role == "owner"


def test_removing_the_last_owner_is_409(world: World, api: Any) -> None:
    membership = world.project.memberships.get(user=world.users["owner"])

    response = api(world.users["owner"]).delete(
        world.url(f"projects/{{p}}/members/{membership.pk}/"))

    assert response.status_code == 409
    assert _json(response)["error"]["message"] == "a project needs at least one owner"
    assert world.project.memberships.filter(role="owner").count() == 1


def test_an_owner_can_step_down_once_another_owner_exists(world: World, api: Any) -> None:
    owner = api(world.users["owner"])
    members = world.url("projects/{p}/members/")

    promoted = owner.post(members, {"username": "editor", "role": "owner"}, format="json")
    stepped_down = owner.post(members, {"username": "owner", "role": "editor"}, format="json")
    now_editor = owner.post(members, {"username": "newcomer", "role": "viewer"}, format="json")

    assert (promoted.status_code, _json(promoted)["role"]) == (200, "owner")
    assert (stepped_down.status_code, _json(stepped_down)["role"]) == (200, "editor")
    assert now_editor.status_code == 403
    roles = dict(world.project.memberships.values_list("user__username", "role"))
    assert roles == {"owner": "editor", "editor": "owner", "viewer": "viewer"}


def test_adding_an_unknown_user_is_400_naming_the_field(world: World, api: Any) -> None:
    response = api(world.users["owner"]).post(world.url("projects/{p}/members/"),
                                              {"username": "nobody", "role": "viewer"},
                                              format="json")

    assert response.status_code == 400
    error = _json(response)["error"]
    assert (error["code"], error["field"]) == ("invalid", "username")
    assert error["message"].startswith("no user named 'nobody': ")


def test_project_list_shows_only_the_users_projects(world: World, api: Any) -> None:
    mine = api(world.users["viewer"]).get("/api/v1/projects/")
    theirs = api(world.users["outsider"]).get("/api/v1/projects/")

    assert [p["name"] for p in _json(mine)] == ["Project A"]
    assert [p["name"] for p in _json(theirs)] == ["Project B"]
