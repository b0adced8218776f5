"""The training device setting (``SAMPAN_TRAINING_DEVICE``): what each value means, and that a
worker told to train on a GPU it does not have says so before any work. The CUDA path itself
runs on a GPU host: ``python -m workers.check_cuda`` (docs/deploy.md); CI has no GPU."""

from __future__ import annotations

import weakref
from pathlib import Path

import pytest
import torch

from workers.ml.detection.data import BoxSample
from workers.ml.devices import (DEVICE_ENV, device_name, replay_device, training_device,
                                training_on)


@pytest.fixture
def no_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker whose torch sees no GPU (the boundary: the CUDA driver)."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 0)


@pytest.fixture
def one_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)


def test_auto_and_unset_use_the_cpu_without_a_gpu(no_gpu: None,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(DEVICE_ENV, raising=False)
    assert training_device() == torch.device("cpu")
    for value in ("auto", " AUTO ", "", "cpu", "CPU"):
        assert training_device(value) == torch.device("cpu"), value
    assert device_name(torch.device("cpu")) == "cpu"


def test_auto_uses_the_first_gpu_when_there_is_one(one_gpu: None) -> None:
    assert training_device("auto") == torch.device("cuda", 0)
    assert training_device("cuda") == torch.device("cuda", 0)
    assert training_device("cuda:0") == torch.device("cuda", 0)
    # "cpu" stays the CPU on a GPU host (to keep a GPU for something else)
    assert training_device("cpu") == torch.device("cpu")


def test_the_environment_variable_is_read(no_gpu: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(DEVICE_ENV, "cuda")
    with pytest.raises(ValueError, match="SAMPAN_TRAINING_DEVICE='cuda'.*no CUDA GPU"):
        training_device()
    monkeypatch.setenv(DEVICE_ENV, "cpu")
    assert training_device() == torch.device("cpu")


@pytest.mark.parametrize("value", ["gpu", "tpu", "cuda:", "cuda:x", "cuda:-1", "mps", "cuda0",
                                   "cuda:\u00b2", "cuda:\u0661"])
def test_unknown_values_are_refused_by_name(value: str, one_gpu: None) -> None:
    with pytest.raises(ValueError) as refused:
        training_device(value)
    assert f"SAMPAN_TRAINING_DEVICE={value!r}" in str(refused.value)
    assert "auto, cpu, cuda or cuda:N" in str(refused.value)


def test_a_gpu_the_worker_does_not_have_is_refused(one_gpu: None) -> None:
    with pytest.raises(ValueError, match=r"'cuda:1'.*sees 1 GPU\(s\), numbered from 0"):
        training_device("cuda:1")


def test_detection_told_to_use_a_missing_gpu_fails_before_any_work(
        no_gpu: None, tmp_path: Path) -> None:
    """The job fails at once with the setting's name, not after decoding or hours on the CPU:
    nothing is written and the images are never opened (they do not exist)."""
    from workers.ml.detection.train import DetectRequest, train_detector

    missing = [BoxSample(str(tmp_path / f"{i}.jpg"), ((1, 1, 9, 9, 0),), str(i))
               for i in range(2)]
    events: list[dict] = []
    with pytest.raises(ValueError, match="SAMPAN_TRAINING_DEVICE='cuda'.*no CUDA GPU"):
        train_detector(DetectRequest(train=missing[:1], val=missing[1:], labels=["box"],
                                     out_dir=tmp_path / "out", budget_s=60.0, device="cuda"),
                       on_progress=events.append)
    assert not (tmp_path / "out").exists() and events == []


def test_classification_told_to_use_a_missing_gpu_fails_before_any_work(
        no_gpu: None, tmp_path: Path) -> None:
    from workers.ml.classification import train_image_classifier
    from workers.ml.specs import SampleRef, TrainRequest

    missing = [SampleRef(str(tmp_path / f"{i}.png"), i % 2, str(i)) for i in range(4)]
    events: list[dict] = []
    with pytest.raises(ValueError, match="SAMPAN_TRAINING_DEVICE='cuda:0'.*no CUDA GPU"):
        train_image_classifier(TrainRequest(train=missing[:2], val=missing[2:], labels=["a", "b"],
                                            out_dir=tmp_path / "out", budget_s=60.0,
                                            device="cuda:0"),
                               on_progress=events.append)
    assert not (tmp_path / "out").exists() and events == []


def test_a_recipe_replays_on_the_kind_of_device_it_was_recorded_on(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A CPU recipe replays on the CPU on a GPU worker (on the GPU it would train another
    model); older recipes (no or a blank ``device``) were CPU ones; a GPU recipe replays on a
    GPU: the worker's when its setting names one, else the first (the recording worker's index
    says nothing of this one's GPUs)."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    monkeypatch.setenv(DEVICE_ENV, "cuda:1")
    assert replay_device("cpu") == torch.device("cpu")
    assert replay_device(None) == replay_device(" ") == torch.device("cpu")
    assert replay_device("cuda:0 NVIDIA H200") == torch.device("cuda", 1)
    assert replay_device("cuda:3 NVIDIA H200") == torch.device("cuda", 1)
    monkeypatch.setenv(DEVICE_ENV, "cpu")  # a worker set to the CPU still replays a GPU recipe
    assert replay_device("cuda:1 NVIDIA H200") == torch.device("cuda", 0)
    monkeypatch.setenv(DEVICE_ENV, "tpu")  # a broken setting is the new runs' problem
    assert replay_device("cuda:0 X") == torch.device("cuda", 0)
    # the request's own device: of the recipe's kind, or refused
    assert replay_device("cuda:0 X", "cuda:1") == torch.device("cuda", 1)
    with pytest.raises(ValueError, match="recorded on 'cpu' and replays on the same kind of "
                                         "device, not on cuda:0"):
        replay_device("cpu", "cuda")
    with pytest.raises(ValueError, match="recorded on 'cuda:0 X'.*not on cpu"):
        replay_device("cuda:0 X", "cpu")


def test_a_gpu_recipe_on_a_worker_without_one_is_refused_by_the_recipe(
        no_gpu: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(DEVICE_ENV, "cuda")
    with pytest.raises(ValueError) as refused:
        replay_device("cuda:0 NVIDIA H200")
    message = str(refused.value)
    assert "recipe was recorded on 'cuda:0 NVIDIA H200' and replays only on a GPU" in message
    assert "sees none" in message and "SAMPAN_TRAINING_DEVICE" not in message


def test_classification_replaying_a_gpu_recipe_without_a_gpu_fails_before_any_work(
        no_gpu: None, tmp_path: Path) -> None:
    from workers.ml.classification import train_image_classifier
    from workers.ml.specs import SampleRef, TrainRequest

    missing = [SampleRef(str(tmp_path / f"{i}.png"), i % 2, str(i)) for i in range(4)]
    with pytest.raises(ValueError, match="recorded on 'cuda:0 NVIDIA H200'"):
        train_image_classifier(TrainRequest(train=missing[:2], val=missing[2:], labels=["a", "b"],
                                            out_dir=tmp_path / "out", budget_s=60.0,
                                            recipe={"device": "cuda:0 NVIDIA H200"}))
    assert not (tmp_path / "out").exists()


def test_training_on_a_gpu_tunes_cudnn_for_the_job_only_and_returns_its_memory(
        monkeypatch: pytest.MonkeyPatch) -> None:
    emptied: list[bool] = []
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: emptied.append(True))
    monkeypatch.setattr(torch.backends.cudnn, "benchmark", False)
    monkeypatch.setattr(torch.backends.cudnn, "allow_tf32", True)
    with training_on(torch.device("cpu")):
        assert torch.backends.cudnn.benchmark is False
        assert torch.backends.cudnn.allow_tf32 is True
    assert emptied == []

    class Weights:  # something a failed job's frame holds (on a GPU: its model)
        pass

    def job() -> None:
        held = Weights()
        alive.append(weakref.ref(held))
        assert torch.backends.cudnn.benchmark is True
        assert torch.backends.cudnn.allow_tf32 is False
        raise RuntimeError("the job failed")

    alive: list[weakref.ref[Weights]] = []
    with pytest.raises(RuntimeError, match="the job failed") as failed, \
            training_on(torch.device("cuda", 0)):
        job()
    # restored and emptied after a failed job too, and the job's frame no longer holds its
    # weights while the exception is still being handled
    assert torch.backends.cudnn.benchmark is False and torch.backends.cudnn.allow_tf32 is True
    assert emptied == [True]
    assert failed.value is not None and alive[0]() is None


def test_check_cuda_names_its_flag_and_defaults_to_the_workers_setting(
        no_gpu: None, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from workers import check_cuda

    # the session-25 tester: --device gpu0 was reported as SAMPAN_TRAINING_DEVICE='gpu0'
    assert check_cuda.main(["--device", "gpu0"]) == 2
    error = json.loads(capsys.readouterr().out)["error"]
    assert error.startswith("--device='gpu0': expected auto, cpu, cuda or cuda:N"), error
    # without --device it checks what the worker is set to (cuda when unset)
    monkeypatch.setenv(DEVICE_ENV, "cuda:1")
    assert check_cuda.main([]) == 2
    assert "--device='cuda:1': this worker's torch sees no CUDA GPU" in capsys.readouterr().out
    monkeypatch.delenv(DEVICE_ENV)
    assert check_cuda.main([]) == 2
    assert "--device='cuda': this worker's torch sees no CUDA GPU" in capsys.readouterr().out
