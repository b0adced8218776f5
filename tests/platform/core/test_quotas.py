"""Quotas on jobs: how many training (and compression) jobs one project may have waiting, and
the longest training budget; both are settings, both answer what frees a place or the limit."""

from __future__ import annotations

from typing import Any

import pytest

from sampan.core.jobs import JobStatus, job_transition
from sampan.training import services
from sampan.training.models import TrainingJob
from tests.platform.training.test_training_services import labelled_version

pytestmark = pytest.mark.django_db


def test_a_project_may_have_only_so_many_training_jobs_waiting(
        project_with_roles: dict[str, Any], api: Any, settings: Any) -> None:
    settings.SAMPAN_MAX_QUEUED_JOBS_PER_PROJECT = 2
    project, other = project_with_roles["project"], project_with_roles["other"]
    version = labelled_version(project, {"a": 5, "b": 5})
    editor = api(project_with_roles["editor"])
    url = f"/api/v1/projects/{project.pk}/training-jobs/"
    body = {"dataset_version_id": str(version.pk), "budget_s": 30}
    first, second = (editor.post(url, body, format="json") for _ in range(2))
    assert first.status_code == second.status_code == 201
    refused = editor.post(url, body, format="json")
    assert refused.status_code == 429, refused.content
    error = refused.json()["error"]
    assert error["code"] == "quota_exceeded" and "2 training jobs waiting" in error["message"]
    assert "cancel one" in error["message"]
    assert TrainingJob.objects.filter(project=project).count() == 2
    # another project has its own places
    other_version = labelled_version(other, {"a": 5, "b": 5}, name="o")
    assert api(project_with_roles["outsider"]).post(
        f"/api/v1/projects/{other.pk}/training-jobs/",
        {"dataset_version_id": str(other_version.pk), "budget_s": 30},
        format="json").status_code == 201
    # a job that starts (RUNNING) or is cancelled frees its place
    assert job_transition(TrainingJob, first.json()["id"], JobStatus.RUNNING)
    assert editor.post(url, body, format="json").status_code == 201
    assert editor.post(url, body, format="json").status_code == 429
    cancel = editor.post(f"{url}{second.json()['id']}/cancel/")
    assert cancel.status_code == 200, cancel.content
    assert editor.post(url, body, format="json").status_code == 201


def test_the_longest_training_budget_is_a_setting_named_in_the_error(
        project_with_roles: dict[str, Any], settings: Any) -> None:
    from sampan.core.errors import ValidationFailed

    settings.SAMPAN_TRAINING_MAX_BUDGET_S = 3600.0
    version = labelled_version(project_with_roles["project"], {"a": 5, "b": 5})
    with pytest.raises(ValidationFailed) as error:
        services.training_job_create(project=project_with_roles["project"],
                                     dataset_version=version, budget_s=3601)
    assert error.value.field == "budget_s"
    assert error.value.message == ("budget_s 3601 is too long: at most 3600 s "
                                   "(1 h, SAMPAN_TRAINING_MAX_BUDGET_S)")
    assert services.training_job_create(project=project_with_roles["project"],
                                        dataset_version=version, budget_s=3600).budget_s == 3600
