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
from sampan.training.budget import minimum_budget_s
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


def labelled_version(project: Any, counts: dict[str, int], name: str = "d") -> Any:
    dataset = dataset_create(project=project, name=name)
    for label, count in counts.items():
        for i in range(count):
            sample = Sample.objects.create(dataset=dataset,
                                           content_sha256=f"{label}-{i:04d}".ljust(64, "0"),
                                           file=f"samples/{label}{i}.png", original_name=f"{i}",
                                           width=4, height=4)
            sample_label_set(sample=sample, label=label)
    return dataset_version_create(dataset=dataset)


@pytest.fixture
def version(project_with_roles: dict[str, Any]) -> Any:
    return labelled_version(project_with_roles["project"], {"a": 5, "b": 5})


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
    from sampan.accounts.models import AuditEvent  # the audit log says a model was trained
    registered = AuditEvent.objects.get(action="model_version.register")
    assert (registered.project, registered.target_id) == (job.project, str(model_version.pk))
    assert registered.details["training_job_id"] == str(job.pk)
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


def test_minimum_budget_grows_with_the_images() -> None:
    assert minimum_budget_s(0) == 15.0
    assert minimum_budget_s(400) == 19.0
    assert minimum_budget_s(11) == pytest.approx(15.11)
    # the decode of big photos counts: 1,000 photos of 12 megapixels
    assert minimum_budget_s(1000, 1000 * 12_000_000) == pytest.approx(205.0)


def test_a_version_records_its_pixels_and_older_versions_sum_them_from_the_samples(
        version: Any) -> None:
    from sampan.datasets.models import DatasetVersionItem
    from sampan.datasets.selectors import dataset_version_pixels

    expected = sum(item.sample.width * item.sample.height
                   for item in DatasetVersionItem.objects.filter(version=version)
                   .select_related("sample"))
    assert expected > 0 and version.stats["pixels"] == expected
    sides = sorted(min(item.sample.width, item.sample.height)
                   for item in DatasetVersionItem.objects.filter(version=version)
                   .select_related("sample"))
    import statistics
    assert version.stats["shorter_side_median"] == int(statistics.median(sides)) > 0
    del version.stats["pixels"]  # frozen before the pixels were recorded
    assert dataset_version_pixels(version) == expected


def test_budget_for_big_photos_is_refused_with_their_size_named(
        project_with_roles: dict[str, Any], version: Any) -> None:
    version.stats["pixels"] = 10 * 12_000_000  # as if each image were a 12-megapixel photo
    version.save()
    with pytest.raises(ValidationFailed) as error:
        services.training_job_create(project=project_with_roles["project"],
                                     dataset_version=version, budget_s=16)
    # 15 + 10 * 0.01 + 1.2e8 * 1.5e-8 = 16.9 -> 17
    assert error.value.message == ("budget_s 16 is too short for 10 images of 12.0 megapixels "
                                   "on average: at least 17 s")


# the minimum users are told is whole seconds (15.1 -> "at least 16 s"): that is what is enforced
@pytest.mark.parametrize("budget, accepted", [(8, False), (15.1, False), (15.99, False),
                                              (16, True)])
def test_budget_below_the_versions_minimum_is_refused_before_queueing(
        project_with_roles: dict[str, Any], version: Any, budget: float, accepted: bool) -> None:
    project = project_with_roles["project"]
    if accepted:
        job = services.training_job_create(project=project, dataset_version=version,
                                           budget_s=budget)
        assert job.status == JobStatus.QUEUED
        return
    with pytest.raises(ValidationFailed) as error:
        services.training_job_create(project=project, dataset_version=version, budget_s=budget)
    assert error.value.field == "budget_s"
    assert error.value.message == (f"budget_s {budget:g} is too short for 10 images: at least "
                                   "16 s")
    assert TrainingJob.objects.count() == 0


def test_tiny_dataset_trains_on_train_and_val_without_a_test_split(
        project_with_roles: dict[str, Any], tmp_path: Path) -> None:
    project = project_with_roles["project"]
    version = labelled_version(project, {"cat": 5, "dog": 3, "fox": 2, "owl": 1}, name="tiny")
    assert version.stats["splits"] == {"train": 8, "val": 3}
    assert [f["code"] for f in version.flags] == ["no_test_split", "class_too_small",
                                                  "class_imbalance"]
    with pytest.raises(ValidationFailed, match="too short for 11 images: at least 16 s"):
        services.training_job_create(project=project, dataset_version=version, budget_s=15)
    job = services.training_job_create(project=project, dataset_version=version, budget_s=16)
    inputs = services.training_job_start(job_id=job.pk)
    assert inputs is not None
    assert (len(inputs.train), len(inputs.val), inputs.test) == (8, 3, [])
    assert sorted({c for _, c, _ in inputs.train}) == [0, 1, 2, 3]  # owl trains, unvalidated
    # what an engine reports without a test split: evaluated on val, no test figures
    result = result_for(tiny_onnx(tmp_path / "m.onnx", classes=4))
    result["metrics"] = {"evaluated_on": "val", "val_accuracy": 0.67, "macro_f1": 0.5,
                         "best_epoch": 1, "best_phase": "head"}
    result["report"] = {"accuracy": 0.67, "split": "val",
                        "validation": {"accuracy": 0.67, "macro_f1": 0.5, "n": 3}}
    model_version = services.training_job_complete(job_id=job.pk, result=result)
    assert model_version is not None
    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED and job.evaluation.split == "val"
    assert "test_accuracy" not in model_version.manifest["metrics"]


def test_test_split_reaches_the_engine_and_its_figures_the_manifest(
        project_with_roles: dict[str, Any], tmp_path: Path, api: Any) -> None:
    project = project_with_roles["project"]
    version = labelled_version(project, {"a": 12, "b": 10})
    assert version.stats["splits"] == {"train": 14, "val": 4, "test": 4}
    job = services.training_job_create(project=project, dataset_version=version, budget_s=60,
                                       augmentation="light", model_preference="faster")
    inputs = services.training_job_start(job_id=job.pk)
    assert inputs is not None
    assert (len(inputs.train), len(inputs.val), len(inputs.test)) == (14, 4, 4)
    assert (inputs.augmentation, inputs.model_preference) == ("light", "faster")
    test_ids = {i for _, _, i in inputs.test}
    assert not test_ids & {i for _, _, i in (*inputs.train, *inputs.val)}
    result = result_for(tiny_onnx(tmp_path / "m.onnx"))
    result["metrics"] = {"evaluated_on": "test", "test_accuracy": 0.75, "test_macro_f1": 0.7,
                         "val_accuracy": 1.0, "macro_f1": 1.0, "best_epoch": 3,
                         "best_phase": "finetune"}
    result["report"] = {"accuracy": 0.75, "macro_f1": 0.7, "split": "test",
                        "validation": {"accuracy": 1.0, "macro_f1": 1.0, "n": 4}}
    model_version = services.training_job_complete(job_id=job.pk, result=result)
    assert model_version is not None
    assert model_version.manifest["metrics"]["test_accuracy"] == 0.75
    assert model_version.manifest["metrics"]["test_macro_f1"] == 0.7
    assert model_version.manifest["metrics"]["evaluated_on"] == "test"
    verify_manifest(model_version.manifest, public_key_b64())
    viewer = api(project_with_roles["viewer"])
    base = f"/api/v1/projects/{project.pk}/training-jobs/{job.pk}"
    report = viewer.get(f"{base}/report/").json()
    assert report["split"] == "test"
    assert report["report"]["validation"] == {"accuracy": 1.0, "macro_f1": 1.0, "n": 4}
    body = viewer.get(f"{base}/").json()
    assert body["metrics"]["test_accuracy"] == 0.75
    assert (body["augmentation"], body["model_preference"]) == ("light", "faster")


def test_older_results_without_split_keep_a_val_report(project_with_roles: dict[str, Any],
                                                       version: Any, tmp_path: Path) -> None:
    job = start(project_with_roles["project"], version)
    services.training_job_complete(job_id=job.pk,
                                   result=result_for(tiny_onnx(tmp_path / "m.onnx")))
    job.refresh_from_db()
    assert job.evaluation.split == "val" and job.evaluation.report == {"accuracy": 0.5}


def test_create_api_takes_the_options_with_defaults(project_with_roles: dict[str, Any],
                                                    version: Any, api: Any) -> None:
    url = f"/api/v1/projects/{project_with_roles['project'].pk}/training-jobs/"
    editor = api(project_with_roles["editor"])
    body = editor.post(url, {"dataset_version_id": str(version.pk), "budget_s": 30},
                       format="json").json()
    assert (body["augmentation"], body["model_preference"], body["allow_flips"]) == (
        "auto", "more_accurate", True)
    body = editor.post(url, {"dataset_version_id": str(version.pk), "budget_s": 30,
                             "augmentation": "none", "model_preference": "faster",
                             "allow_flips": False}, format="json").json()
    assert (body["augmentation"], body["model_preference"], body["allow_flips"]) == (
        "none", "faster", False)
    job = TrainingJob.objects.get(pk=body["id"])
    assert (job.augmentation, job.model_preference, job.allow_flips) == ("none", "faster", False)
    # and the worker receives it
    inputs = services.training_job_start(job_id=job.pk)
    assert inputs is not None and inputs.allow_flips is False


@pytest.mark.parametrize("field, value", [("augmentation", "sideways"),
                                          ("model_preference", "smallest"),
                                          ("augmentation", None)])
def test_create_api_refuses_unknown_options_naming_the_field(
        project_with_roles: dict[str, Any], version: Any, api: Any, field: str, value: Any
        ) -> None:
    url = f"/api/v1/projects/{project_with_roles['project'].pk}/training-jobs/"
    response = api(project_with_roles["editor"]).post(
        url, {"dataset_version_id": str(version.pk), "budget_s": 30, field: value},
        format="json")
    assert response.status_code == 400 and response.json()["error"]["field"] == field
    assert TrainingJob.objects.count() == 0


def test_service_refuses_unknown_options_naming_the_field(project_with_roles: dict[str, Any],
                                                          version: Any) -> None:
    with pytest.raises(ValidationFailed) as error:
        services.training_job_create(project=project_with_roles["project"],
                                     dataset_version=version, budget_s=30,
                                     model_preference="tiny")
    assert error.value.field == "model_preference" and "more_accurate, faster" in \
        error.value.message


def test_budget_too_short_through_the_api_names_the_minimum(project_with_roles: dict[str, Any],
                                                            version: Any, api: Any) -> None:
    url = f"/api/v1/projects/{project_with_roles['project'].pk}/training-jobs/"
    response = api(project_with_roles["editor"]).post(
        url, {"dataset_version_id": str(version.pk), "budget_s": 8}, format="json")
    assert response.status_code == 400
    assert response.json()["error"] == {
        "code": "invalid", "field": "budget_s",
        "message": "budget_s 8 is too short for 10 images: at least 16 s"}


def test_a_job_cancelled_while_registering_leaves_no_version_and_no_files(
        project_with_roles: dict[str, Any], version: Any, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The job's completion is a compare-and-set: when it loses (a cancel or the reaper
    committed meanwhile, from another connection; here the set is made to lose), the version's
    row is rolled back and its stored package deleted."""
    from django.conf import settings

    job = start(project_with_roles["project"], version)
    register, transition = services.model_version_register, services.job_transition
    packages: list[str] = []

    def register_and_remember(**kwargs: Any) -> ModelVersion:
        made = register(**kwargs)
        packages.append(made.package_dir)
        assert (Path(settings.MEDIA_ROOT) / made.package_dir / "model.onnx").is_file()
        return made

    def lost_race(model: Any, pk: Any, to: str, **fields: Any) -> bool:
        return False if to == JobStatus.SUCCEEDED else transition(model, pk, to, **fields)

    monkeypatch.setattr(services, "model_version_register", register_and_remember)
    monkeypatch.setattr(services, "job_transition", lost_race)
    assert services.training_job_complete(
        job_id=job.pk, result=result_for(tiny_onnx(tmp_path / "m.onnx"))) is None
    job.refresh_from_db()
    assert job.status != JobStatus.SUCCEEDED and job.model_version_id is None
    assert ModelVersion.objects.count() == 0
    assert len(packages) == 1 and not (Path(settings.MEDIA_ROOT) / packages[0]).exists()


def test_an_error_after_the_version_is_stored_leaves_neither_row_nor_files(
        project_with_roles: dict[str, Any], version: Any, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Registration is atomic: the package is stored under a fresh version id before its row
    commits (a row never points at missing files); when the transaction then rolls back for any
    reason (here the job's transition raises), the stored package is deleted with it."""
    from django.conf import settings

    job = start(project_with_roles["project"], version)
    register = services.model_version_register
    packages: list[str] = []

    def register_and_remember(**kwargs: Any) -> ModelVersion:
        made = register(**kwargs)
        packages.append(made.package_dir)
        return made

    def broken(*args: Any, **kwargs: Any) -> bool:
        raise RuntimeError("the database went away")

    monkeypatch.setattr(services, "model_version_register", register_and_remember)
    monkeypatch.setattr(services, "job_transition", broken)
    with pytest.raises(RuntimeError, match="went away"):
        services.training_job_complete(job_id=job.pk,
                                       result=result_for(tiny_onnx(tmp_path / "m.onnx")))
    assert ModelVersion.objects.count() == 0
    assert len(packages) == 1 and not (Path(settings.MEDIA_ROOT) / packages[0]).exists()


def test_training_errors_are_answered_in_the_language_the_client_asks_for(
        project_with_roles: dict[str, Any], version: Any, api: Any) -> None:
    project = project_with_roles["project"]
    url = f"/api/v1/projects/{project.pk}/training-jobs/"
    body = {"dataset_version_id": str(version.pk), "budget_s": 8}
    editor = api(project_with_roles["editor"])

    chinese = editor.post(url, body, format="json", HTTP_ACCEPT_LANGUAGE="zh-CN")
    assert chinese.status_code == 400 and chinese["Content-Language"] == "zh-hans"
    assert chinese.json()["error"] == {
        "code": "invalid", "field": "budget_s",
        "message": "budget_s 8 对 10 张图像来说太短：至少需要 16 秒"}
    missing = editor.get(f"{url}00000000-0000-0000-0000-000000000000/",
                         HTTP_ACCEPT_LANGUAGE="zh-CN,zh;q=0.9")
    assert missing.status_code == 404
    assert missing.json()["error"]["message"] == "找不到训练任务"

    # English stays the default
    english = editor.post(url, body, format="json")
    assert english.json()["error"]["message"] == \
        "budget_s 8 is too short for 10 images: at least 16 s"
    assert editor.get(f"{url}00000000-0000-0000-0000-000000000000/").json()["error"][
        "message"] == "training job not found"
    assert TrainingJob.objects.count() == 0
