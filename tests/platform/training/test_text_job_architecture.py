"""A text training job stores no image architecture (its model families compete in the
engine); an image job keeps its backbone's. ``architecture`` is not a request field: one sent
when creating a job is ignored, for text as for images (TrainingJobOutput's help text)."""

from __future__ import annotations

import math
from typing import Any

import pytest

from sampan.datasets.models import TaskType
from sampan.training.budget import minimum_budget_s
from sampan.training.models import TrainingJob
from tests.platform.training.test_text_training import text_version
from tests.platform.training.test_training_services import labelled_version

pytestmark = pytest.mark.django_db


def create(api: Any, project_with_roles: dict[str, Any], version: Any, **extra: Any) -> Any:
    url = f"/api/v1/projects/{project_with_roles['project'].pk}/training-jobs/"
    budget = math.ceil(minimum_budget_s(sum(version.stats["splits"].values()),
                                        task_type=version.task_type)) + 30
    return api(project_with_roles["editor"]).post(
        url, {"dataset_version_id": str(version.pk), "budget_s": budget, **extra},
        format="json")


@pytest.mark.parametrize("extra", [{}, {"architecture": "mobilenet_v2"},
                                   {"architecture": "resnet50"}],
                         ids=["none sent", "an image architecture sent", "another sent"])
def test_a_text_job_has_no_image_architecture(project_with_roles: dict[str, Any], api: Any,
                                              extra: dict[str, Any]) -> None:
    version = text_version(project_with_roles["project"], n=20)
    assert version.task_type == TaskType.TEXT_CLASSIFICATION
    response = create(api, project_with_roles, version, **extra)
    assert response.status_code == 201, response.json()
    assert response.json()["architecture"] == ""
    job = TrainingJob.objects.get(pk=response.json()["id"])
    assert job.architecture == "" and job.task_type == TaskType.TEXT_CLASSIFICATION
    # read back as the console reads it
    detail = api(project_with_roles["viewer"]).get(
        f"/api/v1/projects/{project_with_roles['project'].pk}/training-jobs/{job.pk}/")
    assert detail.json()["architecture"] == ""


def test_an_image_job_keeps_its_backbone_and_ignores_one_sent(
        project_with_roles: dict[str, Any], api: Any) -> None:
    version = labelled_version(project_with_roles["project"], {"a": 5, "b": 5})
    for extra in ({}, {"architecture": "resnet50"}):
        response = create(api, project_with_roles, version, **extra)
        assert response.status_code == 201, response.json()
        assert response.json()["architecture"] == "mobilenet_v2"
        assert TrainingJob.objects.get(pk=response.json()["id"]).architecture == "mobilenet_v2"
