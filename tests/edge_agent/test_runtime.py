from __future__ import annotations

import copy
import io
import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from edge_agent.runtime import (
    ClassifierSession,
    ManifestError,
    ModelLoadError,
    canonical_json,
    parse_trusted_keys,
    verify_files,
    verify_manifest,
)


def png(colour: tuple[int, int, int]) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (20, 12), colour).save(buffer, "PNG")
    return buffer.getvalue()


def write_package(directory: Path, package) -> Path:  # noqa: ANN001 - conftest ModelPackage
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "model.onnx").write_bytes(package.model_bytes)
    (directory / "manifest.json").write_text(json.dumps(package.manifest), encoding="utf-8")
    return directory


def test_canonical_json_is_sorted_compact_utf8() -> None:
    assert canonical_json({"b": 1, "a": ["é", None]}) == '{"a":["é",null],"b":1}'.encode()


def test_signed_manifest_verifies_and_tampering_fails(signing_key, package_factory) -> None:
    package = package_factory()
    verify_manifest(package.manifest, signing_key.public_b64)

    tampered = copy.deepcopy(package.manifest)
    tampered["labels"][0] = "cat"
    with pytest.raises(ManifestError, match="^bad signature$"):
        verify_manifest(tampered, signing_key.public_b64)

    unsigned = {k: v for k, v in package.manifest.items() if k != "signature"}
    with pytest.raises(ManifestError, match="not signed"):
        verify_manifest(unsigned, signing_key.public_b64)


def test_manifest_signed_by_another_key_fails(package_factory, key_factory) -> None:
    other = key_factory()
    with pytest.raises(ManifestError, match="signed by another key"):
        verify_manifest(package_factory().manifest, other.public_b64)


def test_verify_files_checks_size_and_sha256(tmp_path: Path, package_factory) -> None:
    package = package_factory()
    directory = write_package(tmp_path / "pkg", package)
    verify_files(package.manifest, directory)

    (directory / "model.onnx").write_bytes(package.model_bytes[:-1] + b"\x00")
    with pytest.raises(ManifestError, match="sha256 mismatch"):
        verify_files(package.manifest, directory)
    (directory / "model.onnx").write_bytes(package.model_bytes + b"x")
    with pytest.raises(ManifestError, match=rf"size {len(package.model_bytes) + 1} bytes"):
        verify_files(package.manifest, directory)
    evil = {"files": {"../model.onnx": {"sha256": package.sha256, "size": 1}}}
    with pytest.raises(ManifestError, match="unsafe name"):
        verify_files(evil, directory)


def test_session_predicts_labels(tmp_path: Path, package_factory: Callable) -> None:
    package = package_factory()
    session = ClassifierSession(write_package(tmp_path / "pkg", package))
    assert session.version_id == package.version_id
    session.self_test()

    top = session.predict_image(png((0, 0, 255)), top_k=2)
    # Red and green tie; the stable order puts the lower index first.
    assert [p["label"] for p in top] == ["blue", "red"]
    assert top[0]["index"] == 2
    assert top[0]["probability"] > 0.99
    assert len(top) == 2

    x = np.stack([np.full((3, 8, 8), v, dtype=np.float32) for v in (-1.0, 1.0)])
    x[0, 1] = 1.0  # green channel high, others low
    probabilities = session.predict_batch(x)
    assert probabilities.shape == (2, 3)
    np.testing.assert_allclose(probabilities.sum(axis=1), [1.0, 1.0], atol=1e-5)
    assert int(probabilities[0].argmax()) == 1
    np.testing.assert_allclose(probabilities[1], [1 / 3] * 3, atol=1e-5)


def test_session_from_path_and_manifest(tmp_path: Path, package_factory) -> None:
    package = package_factory()
    write_package(tmp_path / "pkg", package)
    session = ClassifierSession(tmp_path / "pkg" / "model.onnx", package.manifest, threads=1)
    assert session.predict_image(png((0, 255, 0)), top_k=1)[0]["label"] == "green"
    with pytest.raises(ValueError, match=r"expected \(N, 3, 8, 8\) float32"):
        session.predict_batch(np.zeros((1, 3, 8, 8), dtype=np.float64))


def test_garbage_model_raises_model_load_error(tmp_path: Path, package_factory) -> None:
    package = package_factory(model_bytes=b"this is not an onnx model")
    with pytest.raises(ModelLoadError, match="cannot load"):
        ClassifierSession(write_package(tmp_path / "pkg", package))


def test_label_count_must_match_outputs(tmp_path: Path, package_factory, classifier) -> None:
    package = package_factory(model_bytes=classifier(), labels=["a", "b"])
    session = ClassifierSession(write_package(tmp_path / "pkg", package))
    with pytest.raises(ModelLoadError, match="C=2 labels"):
        session.self_test()


def test_a_manifest_verifies_against_the_trusted_key_it_names(
    signing_key, package_factory, key_factory
) -> None:
    other = key_factory()
    manifest = package_factory().manifest
    verify_manifest(manifest, [other.public_b64, signing_key.public_b64])
    with pytest.raises(ManifestError) as refused:
        verify_manifest(manifest, [other.public_b64])
    assert str(refused.value) == (
        f"manifest signed by another key ('{signing_key.key_id}'); this device trusts "
        f"'{other.key_id}'"
    )
    with pytest.raises(ManifestError, match="this device trusts no key"):
        verify_manifest(manifest, [])


def test_parse_trusted_keys_checks_every_entry(signing_key, key_factory) -> None:
    other = key_factory()
    entries = [
        {"key_id": signing_key.key_id, "public_key": signing_key.public_b64},
        {"key_id": other.key_id, "public_key": other.public_b64},
    ]
    assert parse_trusted_keys(entries) == [signing_key.public_b64, other.public_b64]
    with pytest.raises(ManifestError, match="must be a non-empty list"):
        parse_trusted_keys([])
    with pytest.raises(ManifestError, match=r"trusted_signing_keys\[1\] has no public_key"):
        parse_trusted_keys([entries[0], {"key_id": other.key_id}])
    with pytest.raises(ManifestError, match=r"trusted_signing_keys\[0\]: key_id .* is not that"):
        parse_trusted_keys([{"key_id": other.key_id, "public_key": signing_key.public_b64}])
    with pytest.raises(ManifestError, match="not valid base64"):
        parse_trusted_keys([{"key_id": "x", "public_key": "%%%"}])
