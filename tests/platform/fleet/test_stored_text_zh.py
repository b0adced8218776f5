"""What the fleet stores in English outside a request (an alert's message, a rollback's reason
and comparison, a benchmark's error) is shown in the request's language through the API, names
and figures unchanged, while the alert's notifications keep the English they were sent with
(sampan.fleet.stored_texts)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.core import mail
from django.utils import timezone, translation
from rest_framework.test import APIClient

from sampan.fleet import benchmarks
from sampan.fleet.alerts import alerts_evaluate
from sampan.fleet.models import BenchmarkStatus, Device, Rollout
from sampan.fleet.rollouts import rollouts_advance
from tests.platform.fleet.test_benchmarks import package_manifest
from tests.platform.fleet.test_rollouts import NAMES, Fleet

CHINESE = {"HTTP_ACCEPT_LANGUAGE": "zh-hans"}


@pytest.fixture
def fleet(enrolled: Any, heartbeat: Any, owner_api: APIClient, project: Any,
          model_version: Any) -> tuple[Fleet, Any, Any]:
    v1, v2 = model_version(), model_version(b"new-onnx " * 100)
    built = Fleet(enrolled, heartbeat, owner_api, project, v1, NAMES)
    for _ in range(3):  # the previous version's record: 1 % errors, p95 10 ms, confidence 0.9
        for name in NAMES:
            built.beat(name)
    return built, v1, v2


def test_an_alert_reads_in_chinese_in_the_api_and_is_notified_in_english(
        owner_api: APIClient, project: Any, enrolled: Any, heartbeat: Any) -> None:
    created = owner_api.post(f"/api/v1/projects/{project.pk}/alert-rules/", {
        "name": "gone", "kind": "device_offline", "threshold": 10,
        "emails": ["ops@example.org"]}, format="json")
    assert created.status_code == 201, created.content
    device, client = enrolled("gate: north")
    heartbeat(client)
    Device.objects.filter(pk=device.pk).update(last_seen_at=timezone.now())
    with translation.override("zh-hans"):  # beat's language does not matter: stored in English
        assert alerts_evaluate(now=timezone.now() + timedelta(minutes=11))["fired"] == 1
    english = "gate: north: no heartbeat for 11 min (rule: 10 min)"
    assert mail.outbox[0].subject == f"[Sampan] Alert: {english}"
    url = f"/api/v1/projects/{project.pk}/alerts/"
    assert [a["message"] for a in owner_api.get(url).json()] == [english]
    assert [a["message"] for a in owner_api.get(url, **CHINESE).json()] == [
        "gate: north：11 分钟没有心跳（规则：10 分钟）"]


def test_an_error_rate_alert_keeps_its_percentages(owner_api: APIClient, project: Any,
                                                   enrolled: Any, heartbeat: Any) -> None:
    owner_api.post(f"/api/v1/projects/{project.pk}/alert-rules/", {
        "name": "errors", "kind": "error_rate", "threshold": 0.05, "window_minutes": 5},
        format="json")
    device, client = enrolled("cam")
    heartbeat(client, metrics={"requests": 100, "errors": 0})
    heartbeat(client, metrics={"requests": 200, "errors": 25})
    assert alerts_evaluate()["fired"] == 1
    url = f"/api/v1/projects/{project.pk}/alerts/"
    assert owner_api.get(url).json()[0]["message"] == (
        "cam: 25.0% of requests failed over 5 min (rule: 5.0%)")
    assert owner_api.get(url, **CHINESE).json()[0]["message"] == (
        "cam：5 分钟内 25.0% 的请求失败（规则：5.0%）")


def test_a_rollback_for_regressions_reads_in_chinese_with_its_figures(
        fleet: tuple[Fleet, Any, Any]) -> None:
    devices, v1, v2 = fleet
    body = devices.rollout(model_version_id=str(v2.pk), observe_minutes=30).json()
    devices.beat("cam-a")  # takes the new version
    for _ in range(3):
        devices.beat("cam-a", p95=25.0, confidence=0.6)
    assert rollouts_advance() == {"rolled_back": 1}
    url = f"/api/v1/projects/{devices.project.pk}/rollouts/{body['id']}/"
    english = devices.api.get(url).json()
    assert english["reason"] == ("p95 latency 25.0 ms against 10.0 ms before (allowed: x1.5); "
                                 "mean confidence 0.60 against 0.90 before (allowed: -0.10)")
    chinese = devices.api.get(url, **CHINESE).json()
    assert chinese["reason"] == ("p95 延迟 25.0 毫秒，之前为 10.0 毫秒（允许：x1.5）；"
                                 "平均置信度 0.60，之前为 0.90（允许：-0.10）")
    assert chinese["comparison"]["regressions"] == [
        "p95 延迟 25.0 毫秒，之前为 10.0 毫秒（允许：x1.5）",
        "平均置信度 0.60，之前为 0.90（允许：-0.10）"]
    assert chinese["comparison"]["candidate"] == english["comparison"]["candidate"]
    listed = devices.api.get(f"/api/v1/projects/{devices.project.pk}/rollouts/",
                             **CHINESE).json()
    rows = listed["results"] if isinstance(listed, dict) else listed
    assert rows[0]["reason"] == chinese["reason"]


def test_a_failed_deployment_rollback_keeps_the_agents_own_error(
        fleet: tuple[Fleet, Any, Any]) -> None:
    devices, v1, v2 = fleet
    body = devices.rollout(model_version_id=str(v2.pk), canary_devices=2).json()
    devices.beat("cam-a")
    devices.beat("cam-b", fail="health check failed: output differs from the reference")
    assert rollouts_advance() == {"rolled_back": 1}
    url = f"/api/v1/projects/{devices.project.pk}/rollouts/{body['id']}/"
    assert devices.api.get(url, **CHINESE).json()["reason"] == (
        "1 台设备无法运行新版本：cam-b：health check failed: output differs from the reference")


def test_a_rollback_by_hand_and_a_persons_own_reason(fleet: tuple[Fleet, Any, Any]) -> None:
    devices, v1, v2 = fleet
    base = f"/api/v1/projects/{devices.project.pk}/rollouts/"
    first = devices.rollout(model_version_id=str(v2.pk), canary_devices=1).json()
    devices.beat("cam-a")
    response = devices.api.post(f"{base}{first['id']}/rollback/", {}, format="json",
                                **CHINESE)
    assert response.status_code == 200, response.content
    assert Rollout.objects.get(pk=first["id"]).reason == "rolled back by hand"  # as stored
    assert devices.api.get(f"{base}{first['id']}/", **CHINESE).json()["reason"] == "已手动回滚"
    assert devices.api.get(f"{base}{first['id']}/").json()["reason"] == "rolled back by hand"

    second = devices.rollout(model_version_id=str(v2.pk), canary_devices=1).json()
    devices.api.post(f"{base}{second['id']}/rollback/", {"reason": "wrong labels; see #12"},
                     format="json")
    assert devices.api.get(f"{base}{second['id']}/", **CHINESE).json()["reason"] == (
        "wrong labels; see #12")


def test_a_benchmark_the_device_cannot_load_reads_in_chinese(
        enrolled: Any, heartbeat: Any, owner_api: APIClient, project: Any, tmp_path: Any
        ) -> None:
    from sampan.core import storage

    device, client = enrolled()
    heartbeat(client, runtime={"onnxruntime": "1.16.3", "providers": ["CPUExecutionProvider"]})
    device.refresh_from_db()
    onnx = tmp_path / "m.onnx"
    onnx.write_bytes(b"onnx" * 100)
    package = benchmarks.benchmark_package_store(
        project=project, onnx_path=onnx, manifest=package_manifest(
            onnx={"opset": 21, "ir_version": 10, "execution_providers": ["CUDAExecutionProvider"]}))
    inputs = [storage.save_bytes("benchmark-inputs/0.png", b"image")]
    values = {"package_dir": package.package_dir, "manifest": package.manifest,
              "model_sha256": package.model_sha256, "model_size": package.model_size,
              "inputs": inputs}
    with translation.override("zh-hans"):  # whoever asks: stored in English
        incompatible = benchmarks.device_benchmark_create(device=device, **values)
    assert incompatible.status == BenchmarkStatus.INCOMPATIBLE
    assert incompatible.error.startswith("the model needs onnxruntime >= 1.17.0; the device has "
                                         "1.16.3; the model uses ONNX opset 21")
    pending = benchmarks.device_benchmark_create(
        device=Device.objects.create(project=project, name="new", credential_sha256="0" * 64),
        **values)
    benchmarks.device_benchmark_expire(benchmark=pending,
                                       reason="not measured within the job's time budget")

    def errors(device: Any, **headers: str) -> list[str]:
        url = f"/api/v1/projects/{project.pk}/devices/{device.pk}/benchmarks/"
        return [b["error"] for b in owner_api.get(url, **headers).json()]

    assert errors(device) == [incompatible.error]
    url = "https://onnxruntime.ai/docs/reference/compatibility.html"
    assert errors(device, **CHINESE) == ["；".join([
        "模型需要 onnxruntime >= 1.17.0；设备上的版本为 1.16.3",
        f"模型使用 ONNX opset 21；onnxruntime 1.16.3 最高只支持 opset 19（{url}）",
        f"模型的 ONNX IR 版本为 10；onnxruntime 1.16.3 最高只支持 IR 版本 9（{url}）",
        "模型需要执行提供程序（execution provider）CUDAExecutionProvider；设备提供的是 "
        "CPUExecutionProvider"])]
    assert errors(pending.device, **CHINESE) == ["未在任务的时间预算内测量"]
