"""Reference predictions: recorded from a model at registration, checked on the device after a
swap (edge_agent.reference); and the agent's deployment transitions."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from edge_agent.home import DeploymentStatus
from edge_agent.reference import HealthCheckError, reference_check, reference_record
from edge_agent.sessions import open_session


def session_of(tmp_path: Path, package) -> object:
    path = tmp_path / f"{package.version_id}.onnx"
    path.write_bytes(package.model_bytes)
    return open_session(path, package.manifest)


def test_a_model_matches_its_own_reference_and_not_another_models(
        tmp_path, package_factory, classifier) -> None:
    model = session_of(tmp_path, package_factory())
    reference = reference_record(model)
    assert reference["schema"] == "sampan.reference/1" and len(reference["cases"]) == 2
    assert reference_check(model, reference) is True
    assert reference_check(session_of(tmp_path, package_factory()), reference) is True  # same

    other = session_of(tmp_path, package_factory(model_bytes=classifier(gain=3.0)))
    with pytest.raises(HealthCheckError,
                       match=r"^reference input 1, output 0: value \d is \S+ instead of "):
        reference_check(other, reference)


def test_a_detector_is_fingerprinted_by_boxes_and_scores(
        tmp_path, detection_package_factory) -> None:
    detector = session_of(tmp_path, detection_package_factory())
    reference = reference_record(detector)
    assert [len(case) for case in reference["cases"]] == [2, 2]  # boxes, scores
    assert reference_check(detector, reference) is True
    moved = copy.deepcopy(reference)
    moved["cases"][1][0]["head"][2] += 1.0  # one box corner 1 px off
    with pytest.raises(HealthCheckError, match=r"^reference input 2, output 0: value 2 is "):
        reference_check(detector, moved)


def test_float_noise_passes_and_a_missing_or_malformed_reference_is_told_apart(
        tmp_path, package_factory) -> None:
    model = session_of(tmp_path, package_factory())
    reference = reference_record(model)
    noisy = copy.deepcopy(reference)
    for case in noisy["cases"]:
        case[0]["head"] = [v * (1 + 1e-5) for v in case[0]["head"]]
    assert reference_check(model, noisy) is True  # another CPU's rounding
    assert reference_check(model, None) is False  # an older package: nothing to check
    assert reference_check(model, {"schema": "something/9"}) is False
    with pytest.raises(HealthCheckError, match="malformed"):
        reference_check(model, {"schema": "sampan.reference/1", "seed": 1, "cases": []})
    shaped = copy.deepcopy(reference)
    shaped["cases"][0][0]["shape"] = [1, 4]
    with pytest.raises(HealthCheckError, match=r"shape \[1, 3\] instead of \[1, 4\]"):
        reference_check(model, shaped)


def test_the_agent_moves_a_deployment_only_as_its_transition_table_allows() -> None:
    status = DeploymentStatus("d1", "v1", "0" * 64, 10, "downloading")
    status.move("downloading", "timeout (retrying)")
    status.move("verifying")
    status.move("failed", "health check failed")
    assert (status.state, status.error, status.terminal) == ("failed", "health check failed",
                                                             True)
    with pytest.raises(ValueError, match="failed -> running is not an agent transition"):
        status.move("running")
    with pytest.raises(ValueError, match="verifying -> downloading"):
        DeploymentStatus("d2", "v1", "0" * 64, 10, "verifying").move("downloading")
    same = DeploymentStatus("d3", "v1", "0" * 64, 10, "downloading")
    same.move("running")  # the version already served, under a new deployment
    assert same.state == "running"
