"""Authorization by construction, object ids: for every route under
``/api/v1/projects/<project_id>/`` with object ids in its path, the OWNER of project B calls
B's URL with the real ids of project A's objects, with every method the route serves, and gets
404 each time; nothing of A (no row, no file) changes. Then A's owner calls A's same URL and is
served (not 404): the ids are the right kind of object for the route, the test is not passing
on ids that would be unknown anywhere.

Which object a path parameter names depends on the route (``version_id`` is a dataset version
under ``dataset-versions/`` and a model version under ``model-versions/``; ``job_id`` is an
import, a training, a compression or a pre-labeling job): :data:`OBJECT_KINDS` maps (the path
segment before the parameter, its name) to a kind of object. A new route with a parameter this
map does not know fails ``test_every_path_parameter_names_a_known_object``, naming the route.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from collections.abc import Callable
from typing import Any

import pytest
from django.apps import apps
from django.conf import settings
from rest_framework.test import APIClient

from tests.platform.core.project_routes import (PROJECT_ROUTES, route_parameters, route_url,
                                                view_methods)

pytestmark = pytest.mark.django_db

#: (segment before the parameter, parameter) -> the kind of object of project A it names
OBJECT_KINDS: dict[tuple[str, str], str] = {
    ("alert-rules", "rule_id"): "alert_rule",
    ("compression-jobs", "job_id"): "compression_job",
    ("dataset-versions", "version_id"): "dataset_version",
    ("datasets", "dataset_id"): "dataset",
    ("deployments", "deployment_id"): "deployment",
    ("devices", "device_id"): "device",
    ("files", "name"): "model_file",
    ("imports", "job_id"): "import_job",
    ("members", "membership_id"): "membership",
    ("model-versions", "version_id"): "model_version",
    ("prelabel-jobs", "job_id"): "prelabel_job",
    ("rollouts", "rollout_id"): "rollout",
    ("samples", "sample_id"): "sample",
    ("training-jobs", "job_id"): "training_job",
}

#: the query a GET needs to be served (the same on B's URL: the object's lookup comes first)
QUERIES: dict[str, Callable[[dict[str, str]], dict[str, str]]] = {
    "dataset-versions/<uuid:version_id>/items/": lambda objects: {"sample_id": objects["sample"]},
}
#: what A's owner is answered on A's URL when not 200 or 302 (no agent wheelhouse in tests)
SERVED_OTHERWISE = {"model-versions/<uuid:version_id>/offline-bundle/": 409}

OBJECT_ROUTES = [(route, callback) for route, callback in PROJECT_ROUTES
                 if route_parameters(route)]

@pytest.fixture
def objects_of_a(project_with_roles: dict[str, Any]) -> dict[str, str]:
    """One object of each kind in :data:`OBJECT_KINDS`, in project A; no job runs."""
    from sampan.accounts.services import membership_set
    from sampan.compression.services import compression_job_create
    from sampan.datasets.models import ImportJob, PrelabelJob
    from sampan.fleet.models import AlertKind, AlertRule
    from sampan.fleet.rollouts import rollout_create
    from sampan.fleet.services import deployment_create, device_enroll, enrollment_token_create
    from sampan.training.models import EvaluationReport
    from sampan.training.services import training_job_create
    from tests.fixtures.registered import labelled_dataset_and_model

    project, owner = project_with_roles["project"], project_with_roles["owner"]
    made = labelled_dataset_and_model(project, images=4, folder="a")
    dataset, samples = made["dataset"], made["samples"]
    dataset_version, model_version = made["dataset_version"], made["model_version"]
    devices = []
    for name in ("edge-1", "edge-2"):
        token = enrollment_token_create(project=project, user=owner,
                                        expires_in=timedelta(days=1))
        devices.append(device_enroll(token=token.secret, name=name, info={}).device)
    deployment = deployment_create(project=project, user=owner, model_version_id=model_version.pk,
                                   device_ids=[devices[0].pk])[0]
    rollout = rollout_create(project=project, user=owner, model_version_id=model_version.pk,
                             device_ids=[devices[1].pk])
    rule = AlertRule.objects.create(project=project, name="offline",
                                    kind=AlertKind.choices[0][0], threshold=1.0)
    member = membership_set(project=project, username="editor", role="viewer")
    import_job = ImportJob.objects.create(project=project, dataset=dataset,
                                          staging_dir="staging/import-a")
    prelabel_job = PrelabelJob.objects.create(project=project, dataset=dataset,
                                              model_version=model_version)
    training = training_job_create(project=project, dataset_version=dataset_version,
                                   budget_s=60, user=owner)
    EvaluationReport.objects.create(training_job=training, labels=["cat", "dog"],
                                    report={"accuracy": 1.0})
    compression = compression_job_create(project=project, source=model_version, device=None,
                                         user=owner)
    return {
        "alert_rule": str(rule.pk), "compression_job": str(compression.pk),
        "dataset_version": str(dataset_version.pk), "dataset": str(dataset.pk),
        "deployment": str(deployment.pk), "device": str(devices[0].pk),
        "model_file": "model.onnx", "import_job": str(import_job.pk),
        "membership": str(member.pk), "model_version": str(model_version.pk),
        "prelabel_job": str(prelabel_job.pk), "rollout": str(rollout.pk),
        "sample": str(samples[0].pk), "training_job": str(training.pk),
    }


def _url(route: str, project_id: Any, objects: dict[str, str]) -> str:
    def fill(converter: str, name: str, segment: str) -> str:
        if name == "project_id":
            return str(project_id)
        return objects[OBJECT_KINDS[(segment, name)]]
    return route_url(route, fill)


def _everything() -> dict[str, Any]:
    """Every row of every Sampan table and every stored file (path -> size, mtime)."""
    rows: dict[str, Any] = {}
    for model in apps.get_models():
        if model.__module__.startswith("sampan."):
            rows[model._meta.label] = list(model.objects.order_by("pk").values())
    for root in (Path(settings.MEDIA_ROOT), Path(settings.DATA_DIR)):
        for path in sorted(root.rglob("*")):
            if path.is_file():
                rows[str(path)] = (path.stat().st_size, path.stat().st_mtime_ns)
    return rows


def _unknown_parameters(routes: list[str]) -> list[str]:
    return [f"{route}: <{name}> after {segment}/" for route in routes
            for segment, name in route_parameters(route) if (segment, name) not in OBJECT_KINDS]


def test_every_path_parameter_names_a_known_object() -> None:
    assert len(OBJECT_ROUTES) >= 30  # the suite sees the routes (not an empty loop)
    assert _unknown_parameters([route for route, _ in OBJECT_ROUTES]) == [], (
        "routes with a path parameter OBJECT_KINDS does not map to a kind of object (add it, "
        "and the object to objects_of_a)")


def test_a_new_route_with_an_unknown_parameter_is_named() -> None:
    routes = ["api/v1/projects/<uuid:project_id>/widgets/<uuid:widget_id>/",
              "api/v1/projects/<uuid:project_id>/datasets/<uuid:dataset_id>/runs/<uuid:job_id>/",
              "api/v1/projects/<uuid:project_id>/datasets/<uuid:dataset_id>/"]
    assert _unknown_parameters(routes) == [
        "api/v1/projects/<uuid:project_id>/widgets/<uuid:widget_id>/: <widget_id> after widgets/",
        "api/v1/projects/<uuid:project_id>/datasets/<uuid:dataset_id>/runs/<uuid:job_id>/: "
        "<job_id> after runs/"]


@pytest.mark.parametrize("route, callback", OBJECT_ROUTES,
                         ids=[route for route, _ in OBJECT_ROUTES])
def test_the_owner_of_another_project_never_reaches_an_object_by_its_id(
        route: str, callback: Any, project_with_roles: dict[str, Any],
        objects_of_a: dict[str, str]) -> None:
    assert _unknown_parameters([route]) == [], "add the parameter to OBJECT_KINDS"
    owner_of_b, owner_of_a = APIClient(), APIClient()
    owner_of_b.force_authenticate(project_with_roles["outsider"])
    owner_of_a.force_authenticate(project_with_roles["owner"])
    tail = route.split("<uuid:project_id>/", 1)[1]
    query = QUERIES.get(tail, lambda objects: {})(objects_of_a)
    foreign = _url(route, project_with_roles["other"].pk, objects_of_a)
    before = _everything()
    for method in view_methods(callback):
        data = query if method in ("get", "head") else {}
        answer = getattr(owner_of_b, method)(foreign, data, format="json")
        assert answer.status_code == 404, (method, foreign, answer.status_code,
                                           answer.content[:300])
    assert _everything() == before, f"{route}: a refused call changed something"
    # the same ids on A's own URL are found: the map gave the right kind of object
    own = _url(route, project_with_roles["project"].pk, objects_of_a)
    for method in view_methods(callback):
        if method in ("get", "head"):
            answer = getattr(owner_of_a, method)(own, query)
            served = {SERVED_OTHERWISE.get(tail, 200), 302}
            assert answer.status_code in served, (method, own, answer.status_code,
                                                  answer.content[:300])
        else:
            answer = getattr(owner_of_a, method)(own, {}, format="json")
            assert answer.status_code != 404, (method, own, answer.content[:300])
