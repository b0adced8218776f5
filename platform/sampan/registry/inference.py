"""Try a registered model on one image in the control plane ("try it in the browser").

The web process runs the model package exactly as a device does: ``edge_agent.runtime``'s
onnxruntime session and the one image rule of ``edge_agent.imaging``. No torch here.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from typing import Any

from edge_agent.imaging import ImageDecodeError
from edge_agent.runtime import ClassifierSession, ManifestError, ModelLoadError
from sampan.core.errors import ApplicationError, ValidationFailed
from sampan.registry.models import ModelVersion
from sampan.registry.selectors import model_version_file

MAX_SESSIONS = 4  # loaded model versions kept in memory per web process
_sessions: OrderedDict[str, ClassifierSession] = OrderedDict()
_lock = threading.Lock()


class ModelUnavailable(ApplicationError):
    status_code = 409
    code = "model_unavailable"


def _session(version: ModelVersion) -> ClassifierSession:
    key = str(version.pk)
    with _lock:
        if key in _sessions:
            _sessions.move_to_end(key)
            return _sessions[key]
    try:
        session = ClassifierSession(model_version_file(version, "model.onnx"), version.manifest)
    except (ManifestError, ModelLoadError) as exc:
        raise ModelUnavailable(f"{version.label} cannot be loaded: {exc}") from None
    with _lock:
        _sessions[key] = session
        while len(_sessions) > MAX_SESSIONS:
            _sessions.popitem(last=False)
    return session


def model_version_predict(*, version: ModelVersion, data: bytes, top_k: int = 5
                          ) -> dict[str, Any]:
    """Top-k predictions of ``version`` for one image (any format the one image rule reads).

    Returns ``{"model_version_id", "predictions": [{"label", "index", "probability"}],
    "latency_ms"}`` — the same shape as the edge agent's ``POST /v1/predict``. Raises
    ValidationFailed (field ``file``) for an undecodable image, ModelUnavailable (409) when the
    package cannot be loaded or is not an image classifier.
    """
    if version.task_type != "image_classification":
        raise ModelUnavailable(f"trying {version.task_type} models is not available yet")
    session = _session(version)
    started = time.perf_counter()
    try:
        predictions = session.predict_image(data, top_k=top_k)
    except ImageDecodeError as exc:
        raise ValidationFailed(f"file: {exc}", field="file") from None
    return {"model_version_id": str(version.pk), "predictions": predictions,
            "latency_ms": round((time.perf_counter() - started) * 1000.0, 3)}
