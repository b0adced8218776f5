"""Which session serves a model package: chosen by the manifest's ``task`` (shared by the agent,
its benchmark child and the platform's "try it").

``image_classification`` -> :class:`edge_agent.runtime.ClassifierSession`, ``object_detection``
-> :class:`edge_agent.runtime.DetectorSession`, ``text_classification`` ->
:class:`edge_agent.text_session.TextClassifierSession` (docs/contracts.md, "Model package",
"Detection models" and "Text models"). A package of another task is refused with
:class:`UnsupportedTaskError` before onnxruntime sees it, so a deployment of it fails with that
reason and the model being served keeps serving.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from edge_agent.runtime import (
    MANIFEST_FILE,
    MODEL_FILE,
    ClassifierSession,
    DetectorSession,
    ManifestError,
)
from edge_agent.text_session import TextClassifierSession

__all__ = ["SESSIONS", "ModelSession", "UnsupportedTaskError", "manifest_task", "open_session"]

#: A loaded model package of any task this agent serves.
ModelSession = ClassifierSession | DetectorSession | TextClassifierSession

#: task -> session class, for every task this agent serves.
SESSIONS: dict[str, type[ClassifierSession] | type[DetectorSession]
               | type[TextClassifierSession]] = {
    ClassifierSession.task: ClassifierSession,
    DetectorSession.task: DetectorSession,
    TextClassifierSession.task: TextClassifierSession,
}


class UnsupportedTaskError(ManifestError):
    """The manifest's task is not one this agent serves (a benchmark of it is ``incompatible``,
    a deployment of it ``failed``)."""


def manifest_task(manifest: dict[str, Any]) -> str:
    """The manifest's ``task`` (``task_type`` is read too); a manifest with neither is an image
    classifier, the only task packages had before the field was read.

    Raises:
        UnsupportedTaskError: a task this agent does not serve (the message names it and the
            ones it serves).
    """
    task = manifest.get("task", manifest.get("task_type"))
    if task is None:
        return ClassifierSession.task
    if task not in SESSIONS:
        raise UnsupportedTaskError(
            f"unsupported task {task!r}: this agent serves {', '.join(sorted(SESSIONS))}")
    return str(task)


def open_session(source: Path | str, manifest: dict[str, Any] | None = None, *,
                 threads: int = 1) -> ModelSession:
    """Load a model package with the session of its task: ``source`` is a package directory
    (``model.onnx`` + ``manifest.json``), or the model file when ``manifest`` is given.
    No signature or checksum check here (``edge_agent.runtime.verify_manifest`` and
    ``verify_files`` come first).

    Raises:
        UnsupportedTaskError: the manifest's task is not served here.
        ManifestError: the manifest cannot be read or is invalid for its task.
        ModelLoadError: onnxruntime cannot load the model, or its graph does not match the task.
    """
    path = Path(source)
    if manifest is None:
        try:
            manifest = json.loads((path / MANIFEST_FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError) as error:
            raise ManifestError(f"cannot read {path / MANIFEST_FILE}: {error}") from error
        if not isinstance(manifest, dict):
            raise ManifestError(f"{path / MANIFEST_FILE} is not a JSON object")
        path = path / MODEL_FILE
    return SESSIONS[manifest_task(manifest)](path, manifest, threads=threads)
