"""Training jobs: creation rules, cancel, the export gate and registration of a model version."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import onnx
import pytest
from onnx import TensorProto, helper

from edge_agent.runtime import verify_manifest
from sampan.core.errors import ValidationFailed
from sampan.core.jobs import JobStatus, job_transition
from sampan.datasets.models import Sample
from sampan.datasets.services import dataset_create, sample_label_set
from sampan.datasets.versions import dataset_version_create
from sampan.registry.models import ModelVersion
from sampan.registry.signing import public_key_b64
from sampan.training import services
from sampan.training.models import TrainingJob

pytestmark = pytest.mark.django_db


def tiny_onnx(path: Path, classes: int = 2) -> Path:
    node_flat = helper.make_node("Flatten", ["input"], ["flat"])
    node_mm = helper.make_node("MatMul", ["flat", "w"], ["logits"])
    node_sm = helper.make_node("Softmax", ["logits"], ["probabilities"], axis=1)
    w = helper.make_tensor("w", TensorProto.FLOAT, [3 * 4 * 4, classes],
                           [0.01 * (i % 7) for i in range(48 * classes)])
    graph = helper.make_graph(
        [node_flat, node_mm, node_sm], "tiny",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["N", 3, 4, 4])],
        [helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, ["N", classes])],
        [w])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 9
    onnx.save(model, path)
    return path


@pytest.fixture
def version(project_with_roles: dict[str, Any]) -> Any:
    dataset = dataset_create(project=project_with_roles["project"], name="d")
    for label in ("a", "b"):
        for i in range(5):
            sample = Sample.objects.create(dataset=dataset, content_sha256=f"{label}{i}".ljust(64, "0"),
                                           file=f"samples/{label}{i}.png", original_name=f"{i}",
                                           width=4, height=4)
            sample_label_set(sample=sample, label=label)
    return dataset_version_create(dataset=dataset)


def result_for(onnx_path: Path, passed: bool = True) -> dict[str, Any]:
    return {"onnx_path": str(onnx_path), "pretrained": False, "weights_note": "random init",
            "preprocessing": {"size": [4, 4], "resize": "stretch", "mean": [0.5] * 3,
                              "std": [0.5] * 3, "colour_order": "RGB", "layout": "NCHW",
                              "dtype": "float32"},
            "metrics": {"val_accuracy": 0.5, "macro_f1": 0.4}, "history": [{"epoch": 1}],
            "report": {"accuracy": 0.5}, "recipe": {"epochs": 1},
            "parity": {"n": 2, "top1_agree": passed, "max_abs_diff": 0.0 if passed else 0.3,
                       "passed": passed},
            "onnx": {"opset": 18, "ir_version": 9}}


def start(project: Any, version: Any) -> TrainingJob:
    job = services.training_job_create(project=project, dataset_version=version, budget_s=30)
    assert services.training_job_start(job_id=job.pk) is not None
    return job


def test_success_registers_a_signed_immutable_model_version(project_with_roles: dict[str, Any],
                                                            version: Any, tmp_path: Path) -> None:
    job = start(project_with_roles["project"], version)
    model_version = services.training_job_complete(
        job_id=job.pk, result=result_for(tiny_onnx(tmp_path / "m.onnx")))
    assert model_version is not None and model_version.version == 1
    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED and job.model_version_id == model_version.pk
    manifest = model_version.manifest
    verify_manifest(manifest, public_key_b64())
    assert manifest["labels"] == ["a", "b"]
    assert manifest["lineage"]["dataset_version_digest"] == version.digest
    assert manifest["lineage"]["training_job_id"] == str(job.pk)
    assert manifest["files"]["model.onnx"]["size"] == (tmp_path / "m.onnx").stat().st_size
    on_disk = json.loads((Path(model_version.package_dir) if Path(model_version.package_dir)
                          .is_absolute() else Path(__import__("django.conf").conf.settings
                          .MEDIA_ROOT) / model_version.package_dir / "manifest.json").read_text())
    assert on_disk == manifest
    second = start(project_with_roles["project"], version)
    again = services.training_job_complete(job_id=second.pk,
                                           result=result_for(tiny_onnx(tmp_path / "n.onnx")))
    assert again is not None and again.version == 2


def test_failed_export_gate_fails_the_job_and_registers_nothing(
        project_with_roles: dict[str, Any], version: Any, tmp_path: Path) -> None:
    job = start(project_with_roles["project"], version)
    assert services.training_job_complete(
        job_id=job.pk, result=result_for(tiny_onnx(tmp_path / "m.onnx"), passed=False)) is None
    job.refresh_from_db()
    assert job.status == JobStatus.FAILED
    assert "export gate failed" in job.error and "0.3" in job.error
    assert ModelVersion.objects.count() == 0
    assert job.evaluation.parity["passed"] is False  # the report still shows the difference


def test_second_delivery_does_not_start_twice(project_with_roles: dict[str, Any],
                                              version: Any) -> None:
    job = start(project_with_roles["project"], version)
    assert services.training_job_start(job_id=job.pk) is None
    job.refresh_from_db()
    assert job.attempt == 1


def test_cancel_queued_and_running_jobs(project_with_roles: dict[str, Any], version: Any) -> None:
    project = project_with_roles["project"]
    queued = services.training_job_create(project=project, dataset_version=version, budget_s=30)
    assert services.training_job_cancel(job=queued).status == JobStatus.CANCELLED
    running = start(project, version)
    services.training_job_cancel(job=running)
    assert services.training_job_progress(job_id=running.pk, progress={"epoch": 1}) is False
    with pytest.raises(ValidationFailed, match="already ended"):
        services.training_job_cancel(job=running)


@pytest.mark.parametrize("budget", [1, 10**6])
def test_budget_out_of_range_is_a_clear_error(project_with_roles: dict[str, Any], version: Any,
                                              budget: float) -> None:
    with pytest.raises(ValidationFailed) as error:
        services.training_job_create(project=project_with_roles["project"],
                                     dataset_version=version, budget_s=budget)
    assert error.value.field == "budget_s"


def test_version_with_one_class_is_refused_with_a_message(project_with_roles: dict[str, Any]
                                                          ) -> None:
    dataset = dataset_create(project=project_with_roles["project"], name="one")
    for i in range(3):
        sample = Sample.objects.create(dataset=dataset, content_sha256=f"x{i}".ljust(64, "0"),
                                       file="x", original_name="x", width=1, height=1)
        sample_label_set(sample=sample, label="only")
    version = dataset_version_create(dataset=dataset)
    with pytest.raises(ValidationFailed, match="at least 2 classes"):
        services.training_job_create(project=project_with_roles["project"],
                                     dataset_version=version, budget_s=30)


def test_job_transition_table_rejects_running_from_pending(project_with_roles: dict[str, Any],
                                                           version: Any) -> None:
    job = TrainingJob.objects.create(project=project_with_roles["project"],
                                     dataset_version=version, task_type=version.task_type,
                                     model_name="m", budget_s=30)
    assert not job_transition(TrainingJob, job.pk, JobStatus.RUNNING)


def test_epoch_ends_are_kept_in_history_while_running(project_with_roles: dict[str, Any],
                                                      version: Any) -> None:
    job = start(project_with_roles["project"], version)
    services.training_job_progress(job_id=job.pk, progress={"phase": "head", "step": 3})
    services.training_job_progress(job_id=job.pk, progress={"phase": "head", "epoch": 1,
                                                            "loss": 0.9, "val_accuracy": 0.5})
    services.training_job_progress(job_id=job.pk, progress={"phase": "head", "epoch": 2,
                                                            "loss": 0.4, "val_accuracy": 0.75})
    job.refresh_from_db()
    assert [h["val_accuracy"] for h in job.history] == [0.5, 0.75]
    assert job.progress["epoch"] == 2


def test_model_version_api_names_its_dataset_version_and_job(project_with_roles: dict[str, Any],
                                                             version: Any, tmp_path: Path,
                                                             api: Any) -> None:
    project = project_with_roles["project"]
    job = start(project, version)
    model_version = services.training_job_complete(
        job_id=job.pk, result=result_for(tiny_onnx(tmp_path / "m.onnx")))
    assert model_version is not None
    viewer = api(project_with_roles["viewer"])
    body = viewer.get(f"/api/v1/projects/{project.pk}/model-versions/{model_version.pk}/").json()
    assert body["dataset_version"] == {"id": str(version.pk), "dataset_id": str(version.dataset_id),
                                       "dataset_name": "d", "number": version.number}
    assert body["training_job_id"] == str(job.pk)
    job_body = viewer.get(f"/api/v1/projects/{project.pk}/training-jobs/{job.pk}/").json()
    assert job_body["dataset_version"] == body["dataset_version"]
    listed = viewer.get(f"/api/v1/projects/{project.pk}/model-versions/").json()
    assert [v["dataset_version"]["dataset_name"] for v in listed] == ["d"]
