"""``Idempotency-Key`` on the creates that start a job (training, compression): a retry answers
the first job and queues nothing, the key with another body is refused, bad keys are named, the
keys of one project do not reach another, and a concurrent duplicate loses to the unique
constraint."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sampan.compression.models import CompressionJob
from sampan.core.idempotency import IdempotencyKey, idempotent_create
from sampan.registry.services import model_version_register
from sampan.training import services
from sampan.training.models import TrainingJob
from tests.platform.training.test_training_services import labelled_version, tiny_onnx

pytestmark = pytest.mark.django_db


@pytest.fixture
def version(project_with_roles: dict[str, Any]) -> Any:
    return labelled_version(project_with_roles["project"], {"a": 5, "b": 5})


def _url(project: Any) -> str:
    return f"/api/v1/projects/{project.pk}/training-jobs/"


def test_a_retry_with_the_same_key_answers_the_first_job_and_queues_nothing(
        project_with_roles: dict[str, Any], version: Any, api: Any,
        django_capture_on_commit_callbacks: Any) -> None:
    editor = api(project_with_roles["editor"])
    body = {"dataset_version_id": str(version.pk), "budget_s": 30}
    url = _url(project_with_roles["project"])
    with django_capture_on_commit_callbacks() as sent:
        first = editor.post(url, body, format="json", HTTP_IDEMPOTENCY_KEY="run-1")
    assert first.status_code == 201 and len(sent) == 1, first.content
    assert "Idempotent-Replayed" not in first
    # the same body with its fields in another order is the same request
    with django_capture_on_commit_callbacks() as sent:
        again = editor.post(url, {"budget_s": 30, "dataset_version_id": str(version.pk)},
                            format="json", HTTP_IDEMPOTENCY_KEY="run-1")
    assert again.status_code == 200 and again["Idempotent-Replayed"] == "true"
    assert again.json()["id"] == first.json()["id"] and len(sent) == 0
    assert TrainingJob.objects.count() == 1
    # without a key, or with another key, a create is a new job
    assert editor.post(url, body, format="json").status_code == 201
    assert editor.post(url, body, format="json", HTTP_IDEMPOTENCY_KEY="run-2").status_code == 201
    assert TrainingJob.objects.count() == 3


def test_the_key_with_another_body_is_refused_naming_the_job(
        project_with_roles: dict[str, Any], version: Any, api: Any) -> None:
    editor = api(project_with_roles["editor"])
    url = _url(project_with_roles["project"])
    first = editor.post(url, {"dataset_version_id": str(version.pk), "budget_s": 30},
                        format="json", HTTP_IDEMPOTENCY_KEY="k")
    other = editor.post(url, {"dataset_version_id": str(version.pk), "budget_s": 60},
                        format="json", HTTP_IDEMPOTENCY_KEY="k")
    assert other.status_code == 422
    error = other.json()["error"]
    assert error["code"] == "idempotency_key_reused" and error["field"] == "Idempotency-Key"
    assert first.json()["id"] in error["message"]
    assert TrainingJob.objects.count() == 1


@pytest.mark.parametrize("key", ["x" * 129, "two words", "tab\there", "ключ", " "])
def test_a_malformed_key_is_a_400_naming_the_header(project_with_roles: dict[str, Any],
                                                     version: Any, api: Any, key: str) -> None:
    response = api(project_with_roles["editor"]).post(
        _url(project_with_roles["project"]),
        {"dataset_version_id": str(version.pk), "budget_s": 30}, format="json",
        HTTP_IDEMPOTENCY_KEY=key)
    assert response.status_code == 400, response.content
    assert response.json()["error"]["field"] == "Idempotency-Key"
    assert TrainingJob.objects.count() == 0


def test_a_retry_of_a_refused_create_is_refused_again(project_with_roles: dict[str, Any],
                                                      version: Any, api: Any) -> None:
    """A create that failed validation holds no key: its retry is validated again (400), and
    the corrected request with the same key then makes the job."""
    editor = api(project_with_roles["editor"])
    url = _url(project_with_roles["project"])
    bad = {"dataset_version_id": str(version.pk), "budget_s": 1}
    for _ in range(2):
        response = editor.post(url, bad, format="json", HTTP_IDEMPOTENCY_KEY="k")
        assert response.status_code == 400 and response.json()["error"]["field"] == "budget_s"
    good = editor.post(url, {**bad, "budget_s": 30}, format="json", HTTP_IDEMPOTENCY_KEY="k")
    assert good.status_code == 201


def test_keys_belong_to_one_project(project_with_roles: dict[str, Any], version: Any,
                                    api: Any) -> None:
    other = project_with_roles["other"]
    other_version = labelled_version(other, {"a": 5, "b": 5}, name="o")
    mine = api(project_with_roles["editor"]).post(
        _url(project_with_roles["project"]),
        {"dataset_version_id": str(version.pk), "budget_s": 30}, format="json",
        HTTP_IDEMPOTENCY_KEY="shared")
    theirs = api(project_with_roles["outsider"]).post(
        _url(other), {"dataset_version_id": str(other_version.pk), "budget_s": 30},
        format="json", HTTP_IDEMPOTENCY_KEY="shared")
    assert mine.status_code == theirs.status_code == 201
    assert mine.json()["id"] != theirs.json()["id"]


@pytest.mark.parametrize("queue_places", [10, 1])
def test_a_concurrent_duplicate_answers_the_winners_job(
        project_with_roles: dict[str, Any], version: Any, settings: Any,
        queue_places: int) -> None:
    """Two requests with one key that both found no job: the second insert breaks the
    database's unique (project, key) constraint, or (one place in the queue) the winner took the
    project's last place and the loser's quota check refuses it; either way the loser answers
    the first request's job, not an error."""
    settings.SAMPAN_MAX_QUEUED_JOBS_PER_PROJECT = queue_places
    project = project_with_roles["project"]
    key = IdempotencyKey("race", "f" * 64)
    won: dict[str, TrainingJob] = {}

    def create() -> TrainingJob:
        # the other request commits between our lookup and our insert
        won["job"] = services.training_job_create(project=project, dataset_version=version,
                                                  budget_s=30, idempotency=key)
        return services.training_job_create(project=project, dataset_version=version,
                                            budget_s=30, idempotency=key)

    job, created = idempotent_create(TrainingJob, project, key, create)
    assert not created and job.pk == won["job"].pk
    assert TrainingJob.objects.filter(project=project).count() == 1


def test_compression_jobs_take_the_key_too(project_with_roles: dict[str, Any], api: Any,
                                           tmp_path: Path) -> None:
    project = project_with_roles["project"]
    source = model_version_register(
        project=project, model_name="digits", task_type="image_classification",
        labels=["a", "b"], preprocessing={"size": [4, 4], "resize": "stretch",
                                          "mean": [0.5] * 3, "std": [0.5] * 3,
                                          "colour_order": "RGB", "layout": "NCHW",
                                          "dtype": "float32"},
        onnx_path=tiny_onnx(tmp_path / "m.onnx"), input_shape=["N", 3, 4, 4],
        metrics={"val_accuracy": 0.9}, lineage={}, onnx_info={"opset": 18, "ir_version": 9},
        pretrained=False, dataset_version=labelled_version(project, {"a": 6, "b": 6}))
    editor = api(project_with_roles["editor"])
    url = f"/api/v1/projects/{project.pk}/compression-jobs/"
    body = {"source_model_version_id": str(source.pk)}
    first = editor.post(url, body, format="json", HTTP_IDEMPOTENCY_KEY="c1")
    again = editor.post(url, body, format="json", HTTP_IDEMPOTENCY_KEY="c1")
    assert (first.status_code, again.status_code) == (201, 200), again.content
    assert first.json()["id"] == again.json()["id"]
    changed = editor.post(url, {**body, "budget_s": 900}, format="json",
                          HTTP_IDEMPOTENCY_KEY="c1")
    assert changed.status_code == 422
    assert CompressionJob.objects.count() == 1
