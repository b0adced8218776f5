"""Text classification training jobs: a text version trains in the worker (the real engine,
workers.ml.text), is evaluated on its test split and registered as a signed package whose
manifest carries the featurisation settings the device needs."""

from __future__ import annotations

import math
import random
from typing import Any

import pytest
from rest_framework.test import APIClient
from django.core.files.uploadedfile import SimpleUploadedFile

from edge_agent.runtime import verify_manifest
from sampan.core.jobs import JobStatus
from sampan.datasets.imports import import_job_create, import_job_run
from sampan.datasets.prelabel import prelabel_job_run
from sampan.datasets.models import TaskType
from sampan.datasets.services import dataset_create
from sampan.datasets.versions import dataset_version_create
from sampan.registry.signing import public_key_b64
from sampan.training import services
from sampan.training.budget import minimum_budget_s
from sampan.training.models import EvaluationReport, TrainingJob
from workers.tasks import heartbeat
from workers.tasks import training as task

pytestmark = pytest.mark.django_db

POSITIVE = ["好", "棒", "喜欢", "满意", "great", "love"]
NEGATIVE = ["差", "烂", "讨厌", "失望", "awful", "hate"]
FILLER = "的了是在我有这个们中来上大为和国地到以说时要就出会可也你对生能而子那得于着下自之"


def reviews(n: int, seed: int = 0) -> bytes:
    """A CSV of ``n`` short reviews per class: filler characters around a word of the class."""
    generator = random.Random(seed)
    rows = ["text,label"]
    for words, label in ((POSITIVE, "正面"), (NEGATIVE, "负面")):
        for _ in range(n):
            filler = "".join(generator.choice(FILLER) for _ in range(generator.randint(4, 12)))
            cut = generator.randint(0, len(filler))
            rows.append(f"{filler[:cut]}{generator.choice(words)}{filler[cut:]},{label}")
    return ("\n".join(rows) + "\n").encode()


def text_version(project: Any, n: int = 60) -> Any:
    dataset = dataset_create(project=project, name="reviews",
                             task_type=TaskType.TEXT_CLASSIFICATION)
    job = import_job_create(dataset=dataset, files=[SimpleUploadedFile("r.csv", reviews(n))])
    import_job_run(job_id=job.pk)
    return dataset_version_create(dataset=dataset, val_fraction=0.2, test_fraction=0.2)


def test_a_text_version_trains_evaluates_and_registers_a_text_package(
        project_with_roles: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    # the job's heartbeat thread has its own database connection, which does not see this test's
    # transaction: its first beat (after 5 s) would find no RUNNING job and stop the training as
    # "cancelled" (the engine now uses its budget: the character CNN fills what is left). The
    # heartbeat has its own tests (test_time_limit.py); this one is about the wiring.
    monkeypatch.setattr(heartbeat, "HEARTBEAT_INTERVAL_S", 3600.0)
    version = text_version(project_with_roles["project"])
    assert version.labels == ["正面", "负面"]
    budget = math.ceil(minimum_budget_s(sum(version.stats["splits"].values()),
                                        task_type=TaskType.TEXT_CLASSIFICATION))
    job = services.training_job_create(project=project_with_roles["project"],
                                       dataset_version=version, budget_s=budget)
    inputs_rows = services.dataset_version_text_rows(version)
    assert {len(r) for r in inputs_rows.values()} != {0}
    assert all(isinstance(text, str) and text for text, _, _ in inputs_rows["train"])
    task.run_training(str(job.pk))
    job = TrainingJob.objects.get(pk=job.pk)
    assert job.status == JobStatus.SUCCEEDED, job.error
    assert job.metrics["evaluated_on"] == "test"
    assert job.metrics["test_accuracy"] >= 0.75  # chance: 0.5
    report = EvaluationReport.objects.get(training_job=job)
    assert report.split == "test" and report.labels == ["正面", "负面"]
    assert job.history, "epoch ends are recorded as they happen"
    manifest = job.model_version.manifest
    verify_manifest(manifest, public_key_b64())
    assert manifest["task"] == "text_classification"
    assert manifest["labels"] == ["正面", "负面"]
    assert [i["name"] for i in manifest["inputs"]] == ["indices", "weights"]
    assert [i["dtype"] for i in manifest["inputs"]] == ["int64", "float32"]
    assert manifest["outputs"][0]["shape"] == ["N", 2]
    assert manifest["text"]["hash"] == "crc32" and manifest["text"]["buckets"] >= 2
    assert [len(case) for case in manifest["reference"]["cases"]] != [], \
        "the device's post-swap check has reference texts"

    # try it in the browser: the web process runs the package as a device does
    client = APIClient()
    client.force_authenticate(project_with_roles["viewer"])
    url = (f"/api/v1/projects/{project_with_roles['project'].pk}/model-versions/"
           f"{job.model_version.pk}/predict/")
    answer = client.post(url, {"text": "的了是喜欢在我", "top_k": 2}, format="multipart")
    assert answer.status_code == 200, answer.json()
    assert answer.json()["task"] == "text_classification"
    assert [p["label"] for p in answer.json()["predictions"]][0] == "正面"
    assert answer.json()["truncated"] is False
    # assisted labeling: the model suggests classes for the dataset's unlabeled texts
    dataset = version.dataset
    editor = APIClient()
    editor.force_authenticate(project_with_roles["editor"])
    unlabeled = "text\n很喜欢这个的了\n讨厌是在我\n"
    staged = import_job_create(dataset=dataset, files=[SimpleUploadedFile(
        "new.csv", unlabeled.encode())])
    import_job_run(job_id=staged.pk)
    base = f"/api/v1/projects/{project_with_roles['project'].pk}"
    started = editor.post(f"{base}/datasets/{dataset.pk}/prelabel-jobs/",
                          {"model_version_id": str(job.model_version.pk)}, format="json")
    assert started.status_code == 202, started.json()
    prelabel_job_run(job_id=started.json()["id"])
    done = editor.get(f"{base}/prelabel-jobs/{started.json()['id']}/").json()
    assert done["status"] == "SUCCEEDED" and done["report"]["counts"]["done"] == 2, done
    listed = editor.get(f"{base}/datasets/{dataset.pk}/samples/",
                        {"unlabeled": "true", "ordering": "-uncertainty"}).json()["results"]
    suggested = {s["text"]: s["suggestions"][0]["class_label"] for s in listed}
    assert suggested == {"很喜欢这个的了": "正面", "讨厌是在我": "负面"}, listed
    assert all(s["uncertainty"] is not None for s in listed)

    for data, field in (({"text": "   "}, "text"),
                        ({"file": SimpleUploadedFile("a.png", b"\x89PNG")}, "text"),
                        ({}, "file")):
        refused = client.post(url, data, format="multipart")
        assert refused.status_code == 400 and refused.json()["error"]["field"] == field, (
            data, refused.json())


def test_a_text_version_with_one_class_is_refused_before_training(
        project_with_roles: dict[str, Any]) -> None:
    dataset = dataset_create(project=project_with_roles["project"], name="one",
                             task_type=TaskType.TEXT_CLASSIFICATION)
    rows = "".join(f"text {i},only\n" for i in range(10))
    job = import_job_create(dataset=dataset, files=[SimpleUploadedFile(
        "one.csv", ("text,label\n" + rows).encode())])
    import_job_run(job_id=job.pk)
    version = dataset_version_create(dataset=dataset, val_fraction=0.2)
    with pytest.raises(Exception, match="at least 2 classes"):
        services.training_job_create(project=project_with_roles["project"],
                                     dataset_version=version, budget_s=60)
