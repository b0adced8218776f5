"""Writes for the registry: registering immutable model versions as signed model packages."""

from __future__ import annotations

import json
import logging
import math
import re
import shutil
import tempfile
import uuid
import zipfile
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from edge_agent.runtime import file_sha256
from edge_agent.text_session import manifest_inputs
from sampan.accounts.models import Project
from sampan.core import storage
from sampan.core.errors import Conflict, ValidationFailed
from sampan.registry.models import ModelVersion, RegisteredModel
from sampan.registry.signing import sign_manifest

log = logging.getLogger(__name__)

PACKAGE_SCHEMA = "sampan.model-package/1"
MIN_ONNXRUNTIME = "1.17.0"


def package_dir_name(model_id: Any, version_id: Any) -> str:
    """Storage folder of a version's package: ``models/<model id>/<version id>``."""
    return f"models/{model_id}/{version_id}"


def model_get_or_create(*, project: Project, name: str, task_type: str) -> RegisteredModel:
    model, _created = RegisteredModel.objects.get_or_create(
        project=project, name=name, defaults={"task_type": task_type})
    return model


def package_manifest(*, model: dict[str, Any], task_type: str, labels: list[str],
                     preprocessing: dict[str, Any], input_shape: list[Any],
                     metrics: dict[str, Any], lineage: dict[str, Any], sha256: str, size: int,
                     onnx_info: dict[str, Any], detection: dict[str, Any] | None = None,
                     reference: dict[str, Any] | None = None,
                     text: dict[str, Any] | None = None) -> dict[str, Any]:
    """The unsigned manifest of a model package (format in docs/contracts.md); ``model`` is its
    ``{"id", "name", "version", "version_id"}``. An ``object_detection`` package has the graph
    ``images`` -> ``boxes``, ``scores`` and a ``detection`` object (the post-processing settings
    of ``edge_agent.detection.DetectionSettings``, required for that task). ``reference``:
    the model's outputs on the reference inputs (:func:`edge_agent.reference.reference_record`),
    the device's health check after a swap. A ``text_classification`` package has the graph
    ``indices``, ``weights`` -> ``probabilities`` and a ``text`` object (the featurisation
    settings of ``edge_agent.text.TextFeatures``, required for that task)."""
    manifest = {
        "schema": PACKAGE_SCHEMA,
        "model": model,
        "task": task_type,
        "labels": list(labels),
        "preprocessing": preprocessing,
        "inputs": [{"name": "input", "shape": input_shape, "dtype": "float32"}],
        "outputs": [{"name": "probabilities", "shape": ["N", len(labels)], "dtype": "float32"}],
        "metrics": metrics,
        "lineage": lineage,
        "files": {"model.onnx": {"sha256": sha256, "size": size}},
        "onnx": onnx_info,
        "min_onnxruntime": MIN_ONNXRUNTIME,
        "created_at": timezone.now().strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    if task_type == "object_detection":
        if detection is None:
            raise ValueError("an object_detection package needs its detection settings")
        manifest["detection"] = detection
        manifest["inputs"] = [{"name": "images", "shape": input_shape, "dtype": "float32"}]
        manifest["outputs"] = [
            {"name": "boxes", "shape": ["N", "A", 4], "dtype": "float32"},
            {"name": "scores", "shape": ["N", "A", len(labels)], "dtype": "float32"}]
    if task_type == "text_classification":
        if text is None:
            raise ValueError("a text_classification package needs its text settings")
        manifest["text"] = text
        manifest["inputs"] = manifest_inputs(input_shape)
    if reference is not None:
        manifest["reference"] = reference
    return manifest


def _reference(onnx_path: Path, manifest: dict[str, Any]) -> dict[str, Any] | None:
    """The reference predictions of the model at ``onnx_path`` (edge_agent.reference), after
    the load test a device runs (the session of the package's task, its ``self_test``); None
    when that cannot be done on this host for a reason of the host (logged; the device then
    only runs its load test): onnxruntime older than the package needs, an operator or
    execution provider this build lacks, an internal onnxruntime failure, memory.

    Raises ValidationFailed (naming the file or field) when the package itself can never load,
    on any device (:func:`_package_fault`): a manifest its task's session refuses
    (``ManifestError``: text settings that are not valid, inputs/outputs that are not the
    task's); a WordPiece text model without its vocabulary in ``model.onnx``, with another one
    than ``text.vocab_sha256`` names (``VocabularyError``) or with one the tokenizer cannot use
    (``WordPieceError``: no [PAD]/[UNK]/[CLS]/[SEP]); a graph that onnxruntime refuses as
    invalid or whose inputs and outputs are not the task's; a load test or reference prediction
    that the graph refuses (onnxruntime ``InvalidArgument``: an n-gram index past the graph's
    table, ``text.buckets`` larger than it) or answers with something that is not the task's
    output."""
    from edge_agent.reference import reference_record
    from edge_agent.runtime import ManifestError, ModelLoadError
    from edge_agent.sessions import open_session
    from edge_agent.text import TextFeaturesError
    from edge_agent.text_session import TextClassifierSession, VocabularyError
    from edge_agent.wordpiece import WordPieceError

    session: Any = None
    try:
        session = open_session(onnx_path, manifest)
        session.self_test()  # what a device runs before it serves the package
        record = reference_record(session)
    except VocabularyError as error:
        if error.kind == "missing":
            raise ValidationFailed(_(
                "model.onnx: this WordPiece text model has no vocabulary in its ONNX metadata "
                "%(key)s, so no device could load it; the package is not registered")
                % {"key": error.params.get("key", "")}, field="model.onnx") from None
        raise ValidationFailed(_(
            "text.vocab_sha256: the vocabulary in model.onnx (sha256 %(found)s) is not the one "
            "the text settings name (%(expected)s), so no device could load it; the package is "
            "not registered") % {"found": str(error.params.get("found", ""))[:12],
                                 "expected": str(error.params.get("expected", ""))[:12]},
            field="text.vocab_sha256") from None
    except ManifestError as error:
        field = _manifest_field(error)
        raise ValidationFailed(_(
            "%(field)s: the manifest is not valid for a %(task)s package, so no device could "
            "load it; the package is not registered (%(error)s)")
            % {"field": field, "task": manifest.get("task", ""), "error": error},
            field=field) from None
    except (WordPieceError, TextFeaturesError) as error:
        raise ValidationFailed(_(
            "model.onnx: this text model cannot read a text with its own vocabulary and "
            "settings (%(error)s), so no device could load it; the package is not registered")
            % {"error": error}, field="model.onnx") from None
    except ModelLoadError as error:
        if not _package_fault(error):
            log.warning("no reference predictions for %s: %s", onnx_path, error)
            return None
        if isinstance(session, TextClassifierSession) and session.settings.kind != "wordpiece" \
                and _ort_kind(error) == "InvalidArgument":
            raise ValidationFailed(_(
                "text.buckets: model.onnx does not run on the features of its text settings "
                "(%(buckets)d hash buckets; its table may have fewer rows), so no device could "
                "load it; the package is not registered (%(error)s)")
                % {"buckets": session.settings.buckets, "error": error},
                field="text.buckets") from None
        raise ValidationFailed(_(
            "model.onnx: the model does not load or run as its manifest says, so no device "
            "could load it; the package is not registered (%(error)s)") % {"error": error},
            field="model.onnx") from None
    except ValueError as error:
        log.warning("no reference predictions for %s: %s", onnx_path, error)
        return None
    numbers = [v for case in record["cases"] for fingerprint in case
               for v in (*fingerprint["head"], fingerprint["sum"], fingerprint["abs_sum"])]
    if not all(math.isfinite(v) for v in numbers):
        # the random inputs drove this model outside its range (real images may not): devices
        # could never match NaN, and the database refuses it in JSON; load-tested only
        log.warning("no reference predictions for %s: its outputs on the reference inputs are "
                    "not finite", onnx_path)
        return None
    return record


#: onnxruntime error classes that say the graph itself is wrong (any host refuses it):
#: a malformed file, an invalid graph, an input the graph refuses (an index past a table).
#: The others (Fail, RuntimeException, EngineError, NotImplemented: an operator or opset this
#: build lacks; EPFail: an execution provider; NoSuchFile; MemoryError) are about this host.
_PACKAGE_ORT_ERRORS = frozenset({"InvalidArgument", "InvalidGraph", "InvalidProtobuf"})


def _ort_kind(error: BaseException) -> str | None:
    """The class name of the onnxruntime error behind a ModelLoadError (its ``__cause__``);
    None when the session raised it itself, ``""`` for any other cause."""
    cause = error.__cause__
    if cause is None:
        return None
    return type(cause).__name__ if type(cause).__module__.startswith("onnxruntime") else ""


def _package_fault(error: BaseException) -> bool:
    """Whether a ModelLoadError of the load test is the package's own fault: raised by the
    session itself (the graph's inputs or outputs are not the task's, its output is not a
    probability vector), about its WordPiece vocabulary, or an onnxruntime error of
    :data:`_PACKAGE_ORT_ERRORS`. Not: the package needs a newer onnxruntime than this host has
    (``min_onnxruntime``), any other onnxruntime error, a system error."""
    from edge_agent.text import TextFeaturesError
    from edge_agent.wordpiece import WordPieceError

    if str(error).startswith("model needs onnxruntime >="):
        return False
    if isinstance(error.__cause__, (WordPieceError, TextFeaturesError)):
        return True
    kind = _ort_kind(error)
    return kind is None or kind in _PACKAGE_ORT_ERRORS


_MANIFEST_FIELD = re.compile(r"^([A-Za-z_][A-Za-z0-9_.]*):")


def _manifest_field(error: BaseException) -> str:
    """The manifest field a ManifestError is about: the one its message starts with (``text:
    ...`` -> ``text``), ``text.<setting>`` for a text setting that is not valid, else
    ``manifest.json``."""
    from edge_agent.text import TextFeaturesError

    found = _MANIFEST_FIELD.match(str(error))
    field = found.group(1) if found else "manifest.json"
    cause = error.__cause__
    if field == "text" and isinstance(cause, TextFeaturesError) and cause.params.get("field"):
        field = f"text.{cause.params['field']}"
    return field


def model_version_register(*, project: Project, model_name: str, task_type: str,
                           labels: list[str], preprocessing: dict[str, Any], onnx_path: Path,
                           input_shape: list[Any], metrics: dict[str, Any],
                           lineage: dict[str, Any], onnx_info: dict[str, Any],
                           pretrained: bool, dataset_version: Any = None,
                           training_job: Any = None, parent: ModelVersion | None = None,
                           detection: dict[str, Any] | None = None,
                           text: dict[str, Any] | None = None) -> ModelVersion:
    """Register ``onnx_path`` as the next immutable version of ``model_name``.

    Stores the file as ``models/<model id>/<version id>/model.onnx`` in the shared storage
    (``sampan.core.storage``: MEDIA_ROOT or the bucket), the signed ``manifest.json`` beside it
    (format in docs/contracts.md), and creates the row. The package is built in a local
    temporary folder; its files are stored under a fresh version id before the row commits, and
    removed again when it does not, so a failure leaves no row without its files. Version
    numbers are unique per model; a concurrent registration retries (bounded). Raises
    Conflict, StorageUnavailable; ValidationFailed (naming the file or field) for a package
    that no device could load because of the package itself (:func:`_reference`), before
    anything is written: no model, no version, no stored file.
    """
    version_id = uuid.uuid4()
    sha256 = file_sha256(onnx_path)
    size = Path(onnx_path).stat().st_size
    # first: a package that can never load is refused before anything is written (the
    # model's id is not part of what the session reads)
    reference = _reference(Path(onnx_path), package_manifest(
        model={"id": "", "name": model_name, "version": 0, "version_id": str(version_id)},
        task_type=task_type, labels=labels, preprocessing=preprocessing,
        input_shape=input_shape, metrics=metrics, lineage=lineage, sha256=sha256,
        size=size, onnx_info=onnx_info, detection=detection, text=text))
    model = model_get_or_create(project=project, name=model_name, task_type=task_type)
    scratch = Path(settings.DATA_DIR) / "staging"
    scratch.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix="package-", dir=scratch))
    final = package_dir_name(model.pk, version_id)
    stored = False
    try:
        stored = True  # outside the transaction: a big upload holds no database lock
        storage.save_file(f"{final}/model.onnx", Path(onnx_path))
        for attempt in range(5):
            try:
                with transaction.atomic():
                    number = (model.versions.order_by("-version")
                              .values_list("version", flat=True).first() or 0) + 1
                    manifest = sign_manifest(package_manifest(
                        model={"id": str(model.pk), "name": model.name, "version": number,
                               "version_id": str(version_id)},
                        task_type=task_type, labels=labels, preprocessing=preprocessing,
                        input_shape=input_shape, metrics=metrics, lineage=lineage,
                        sha256=sha256, size=size, onnx_info=onnx_info, detection=detection,
                        text=text, reference=reference))
                    (staging / "manifest.json").write_text(
                        json.dumps(manifest, indent=2, ensure_ascii=False), encoding="utf-8")
                    storage.save_file(f"{final}/manifest.json", staging / "manifest.json")
                    version = ModelVersion.objects.create(
                        id=version_id, project=project, model=model, version=number,
                        task_type=task_type, labels=list(labels), metrics=metrics,
                        manifest=manifest, package_dir=final,
                        model_sha256=sha256, model_size=size, pretrained=pretrained,
                        dataset_version=dataset_version, training_job=training_job,
                        parent=parent)
                stored = False  # committed: the files are the version's now
                if storage.is_remote():
                    _package_zip_store(version, staging / "manifest.json", Path(onnx_path))
                return version
            except IntegrityError:
                if attempt == 4:
                    raise Conflict(_("could not allocate a model version number")) from None
        raise AssertionError("unreachable")
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        if stored:  # the row did not commit: its files must not linger
            storage.delete_tree(final)


def model_version_package_zip(version: ModelVersion) -> str:
    """Storage name of the version's package as one zip (``manifest.json`` + ``model.onnx``):
    ``<package_dir>/package.zip``, built once from the stored files (streamed through a local
    temporary file, never whole in memory) and kept, since a version never changes. Raises
    NotFound when a package file is missing, StorageUnavailable."""
    from sampan.registry.selectors import model_version_file

    name = _package_zip_name(version)
    if storage.exists(name):
        return name
    scratch = Path(settings.DATA_DIR) / "staging"
    scratch.mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix="package-zip-", dir=scratch))
    try:
        # the package files are fetched into the temporary folder, not the host's cache: a web
        # host keeps no copy of a model it only zipped
        files = {member: (model_version_file(version, member, cache=folder / "files")
                          if storage.is_remote() else model_version_file(version, member))
                 for member in ("manifest.json", "model.onnx")}
        target = folder / "package.zip"
        _write_package_zip(target, files["manifest.json"], files["model.onnx"])
        storage.save_file(name, target, move=True)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return name


def _package_zip_name(version: ModelVersion) -> str:
    return f"{version.package_dir.rstrip('/')}/package.zip"


def _write_package_zip(target: Path, manifest: Path, onnx: Path) -> None:
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.write(manifest, arcname="manifest.json")
        archive.write(onnx, arcname="model.onnx")


def _package_zip_store(version: ModelVersion, manifest: Path, onnx: Path) -> None:
    """Store the package zip of a version just registered, from the files the registering host
    holds, so that the web server never downloads a model to zip it (the bucket only: with
    local storage the web process zips the files on its own disk). A failure is only logged:
    :func:`model_version_package_zip` builds the zip on the first download instead."""
    target = manifest.parent / "package.zip"
    try:
        _write_package_zip(target, manifest, onnx)
        storage.save_file(_package_zip_name(version), target, move=True)
    except (OSError, storage.StorageUnavailable) as error:
        log.warning("could not store the package zip of %s (built on first download): %s",
                    version.label, error)
