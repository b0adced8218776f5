"""Try a registered model on one image in the control plane ("try it in the browser").

The web process runs the model package exactly as a device does: the session of the manifest's
task (``edge_agent.sessions.open_session``: an image classifier or an object detector, with the
detector's post-processing of ``edge_agent.detection``) and the one image rule of
``edge_agent.imaging``. No torch here. Answers have the shape of the agent's ``POST
/v1/predict`` (docs/contracts.md, "Agent HTTP API").
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from typing import Any

from django.conf import settings
from django.utils.translation import gettext, gettext_noop
from django.utils.translation import gettext as _

from edge_agent.imaging import ImageDecodeError
from edge_agent.runtime import DetectorSession, ManifestError, ModelLoadError
from edge_agent.sessions import ModelSession, open_session
from edge_agent.text import TextFeaturesError
from edge_agent.text_session import TextClassifierSession, TextInputError, text_input
from sampan.core.errors import ApplicationError, ValidationFailed
from sampan.registry.models import ModelVersion
from sampan.registry.selectors import model_version_file

MAX_SESSIONS = 4  # loaded model versions kept in memory per web process
_sessions: OrderedDict[str, ModelSession] = OrderedDict()
_lock = threading.Lock()
_slots: tuple[int, threading.BoundedSemaphore] | None = None


class ModelUnavailable(ApplicationError):
    status_code = 409
    code = "model_unavailable"


class TooBusy(ApplicationError):
    """429: every inference slot of this web process is taken (``details.retry_after_s``)."""

    status_code = 429
    code = "busy"


# why an uploaded image cannot be used, by ImageDecodeError.kind (the English reads as the
# error's own message, "file: " before it)
_IMAGE_PROBLEMS = {
    "empty": gettext_noop("file: empty file"),
    "unsupported": gettext_noop("file: unsupported format '%(format)s'"),
    "too_large_size": gettext_noop(
        "file: image too large (%(width)dx%(height)d px; at most %(limit)d pixels)"),
    "too_large_pixels": gettext_noop(
        "file: image too large (%(pixels)d pixels; at most %(limit)d pixels)"),
    "too_large": gettext_noop("file: image too large (at most %(limit)d pixels)"),
    "corrupt": gettext_noop("file: corrupt %(format)s image"),
    "truncated": gettext_noop("file: truncated image"),
}


def image_problem(error: ImageDecodeError) -> str:
    """The message for an image that cannot be used, in the active language."""
    key = error.kind
    if key == "too_large":
        key = ("too_large_size" if "width" in error.params else
               "too_large_pixels" if "pixels" in error.params else "too_large")
    return (_translated(_IMAGE_PROBLEMS.get(key), error.params)
            or _("file: %(reason)s") % {"reason": error})


def _translated(template: str | None, params: dict[str, Any]) -> str | None:
    """``template`` in the active language filled with ``params``; None when there is no
    template or the params do not fit it (the caller then says the error as it came)."""
    try:
        return gettext(template) % params if template is not None else None
    except (KeyError, TypeError, ValueError):
        return None


# why a text cannot be tried, by TextInputError.kind (edge_agent.text_session.text_input, the
# agent's rule; the field is always ``text``)
_TEXT_PROBLEMS = {
    "empty": gettext_noop("the text is empty once whitespace is removed"),
    "not_utf8": gettext_noop("text: not valid UTF-8 (byte 0x%(byte)02x at offset %(offset)d)"),
    "surrogate": gettext_noop("text: not valid Unicode (a lone surrogate U+%(code)04X at "
                              "character %(index)d)"),
    "not_string": gettext_noop("text: must be a string"),
}


def text_problem(error: TextInputError) -> str:
    """The message for a text a text model does not take, in the active language."""
    return (_translated(_TEXT_PROBLEMS.get(error.kind), error.params)
            or _("text: %(reason)s") % {"reason": error})


def _inference_slots() -> threading.BoundedSemaphore:
    """The process's inference slots, ``settings.SAMPAN_PREDICT_CONCURRENCY`` of them (made
    again when the setting changes)."""
    global _slots
    count = max(1, int(settings.SAMPAN_PREDICT_CONCURRENCY))
    with _lock:
        if _slots is None or _slots[0] != count:
            _slots = (count, threading.BoundedSemaphore(count))
        return _slots[1]


def _session(version: ModelVersion) -> ModelSession:
    """The version's loaded session; a version never changes, so it is cached by its id."""
    key = str(version.pk)
    with _lock:
        if key in _sessions:
            _sessions.move_to_end(key)
            return _sessions[key]
    try:
        session = open_session(model_version_file(version, "model.onnx"), version.manifest)
    except (ManifestError, ModelLoadError) as exc:  # an unknown task is a ManifestError
        raise ModelUnavailable(_("%(version)s cannot be loaded: %(error)s")
                               % {"version": version.label, "error": exc}) from None
    with _lock:
        _sessions[key] = session
        while len(_sessions) > MAX_SESSIONS:
            _sessions.popitem(last=False)
    return session


def model_version_predict(*, version: ModelVersion, data: bytes, top_k: int = 5,
                          score_threshold: float | None = None,
                          text: str | bytes | None = None) -> dict[str, Any]:
    """Run ``version`` on one image (any format the one image rule reads), or a text model on
    ``text``, as a device would.

    Returns, by the package's task: ``{"model_version_id", "task": "image_classification",
    "predictions": [{"label", "index", "probability"}], "latency_ms"}`` (the ``top_k`` most
    probable), or ``{"model_version_id", "task": "object_detection", "width", "height",
    "tiles", "detections": [{"label", "index", "score", "box": [x1, y1, x2, y2]}],
    "latency_ms"}`` (boxes xyxy in px of the upright image, best first; ``score_threshold``
    replaces the manifest's ``detection.score_threshold``), or ``{"model_version_id", "task":
    "text_classification", "predictions": [{"label", "index", "score"}], "truncated",
    "latency_ms"}``. ``text`` (a string, or the bytes sent) goes through the agent's text rule
    (:func:`edge_agent.text_session.text_input`: UTF-8, no lone surrogate, NULs removed, not
    empty, any length), so a text is taken or refused as a device would. Raises
    ValidationFailed (field ``file``) for an undecodable image or a text sent to an image
    model, (field ``text``) for an image sent to a text model, a text the rule refuses or one
    empty after normalisation, ModelUnavailable (409) when the package cannot be loaded or its
    task is not one the agent serves, TooBusy (429, ``Retry-After``) when the
    process's ``SAMPAN_PREDICT_CONCURRENCY`` inferences are running and none ends within
    ``SAMPAN_PREDICT_WAIT_S``: an image may decode to 40 megapixels (~290 MB while it is
    worked on), so the number at once is what bounds the process's memory.
    """
    slots = _inference_slots()
    if not slots.acquire(timeout=settings.SAMPAN_PREDICT_WAIT_S):
        raise TooBusy(_("this server is already running %(count)s predictions; try again in a "
                        "moment") % {"count": settings.SAMPAN_PREDICT_CONCURRENCY},
                      details={"retry_after_s": 1})
    try:
        session = _session(version)
        started = time.perf_counter()
        try:
            if isinstance(session, TextClassifierSession):
                if text is None:
                    raise ValidationFailed(_("this is a text classification model: send text, "
                                             "not an image"), field="text")
                answer = session.predict_texts([text_input(text)], top_k=top_k)[0]
            elif text is not None:
                raise ValidationFailed(_("this is an image model (%(task)s): send an image "
                                         "file, not text") % {"task": session.task},
                                       field="file")
            elif isinstance(session, DetectorSession):
                answer = session.predict_image(data, score_threshold=score_threshold)
            else:
                answer = {"predictions": session.predict_image(data, top_k=top_k)}
        except ImageDecodeError as exc:
            raise ValidationFailed(image_problem(exc), field="file") from None
        except TextInputError as exc:
            raise ValidationFailed(text_problem(exc), field="text") from None
        except TextFeaturesError:
            raise ValidationFailed(_("the text is empty once whitespace is removed"),
                                   field="text") from None
    finally:
        slots.release()
    return {"model_version_id": str(version.pk), "task": session.task, **answer,
            "latency_ms": round((time.perf_counter() - started) * 1000.0, 3)}
