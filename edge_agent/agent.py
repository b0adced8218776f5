"""The agent: the model being served (swapped atomically under a lock) and its predictions.

The convergence loop (:mod:`edge_agent.deploy`) is the only writer of ``state.json`` and the only
caller of :meth:`Agent.swap`; HTTP request threads only call :meth:`Agent.predict`.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from dataclasses import replace
from importlib import metadata
from typing import Any

from edge_agent.home import AgentConfig, AgentHome, AgentState
from edge_agent.imaging import ImageDecodeError
from edge_agent.runtime import (
    DetectorSession,
    ManifestError,
    ModelLoadError,
    public_key_id,
    verify_files,
    verify_manifest,
)
from edge_agent.sessions import ModelSession, open_session
from edge_agent.telemetry import Telemetry
from edge_agent.text_session import DEFAULT_TOP_K, TextClassifierSession, image_model_got

__all__ = ["Agent", "NoModelError", "agent_version"]

log = logging.getLogger(__name__)


def agent_version() -> str:
    """The installed ``sampan`` distribution's version, or ``"0+unknown"`` from a bare checkout."""
    try:
        return metadata.version("sampan")
    except metadata.PackageNotFoundError:
        return "0+unknown"


class NoModelError(RuntimeError):
    """No model version is loaded yet (the HTTP API answers 503)."""


class Agent:
    """Serves the current model version of one enrolled device.

    ``threads`` is onnxruntime's intra-op thread count per session.
    """

    def __init__(self, home: AgentHome, config: AgentConfig, *, threads: int = 1) -> None:
        self.home = home
        self.config = config
        self.threads = threads
        self.telemetry = Telemetry()
        self._lock = threading.Lock()
        self._session: ModelSession | None = None

    @property
    def session(self) -> ModelSession | None:
        with self._lock:
            return self._session

    @property
    def current_version(self) -> str | None:
        session = self.session
        return session.version_id if session else None

    def load_package(self, version_id: str) -> ModelSession:
        """Verify (signature, sizes, sha256) and load ``models/<version_id>/`` with the session
        of its task (:func:`edge_agent.sessions.open_session`), then run one dummy input
        through it.

        Raises:
            ManifestError: missing/unreadable manifest, bad signature or checksum, a manifest
                for another version, or a task this agent does not serve
                (``UnsupportedTaskError``).
            ModelLoadError: onnxruntime cannot load or run it.
        """
        directory = self.home.model_dir(version_id)
        try:
            manifest = json.loads((directory / "manifest.json").read_text(encoding="utf-8"))
        except (OSError, ValueError) as error:
            raise ManifestError(f"cannot read the manifest of {version_id}: {error}") from error
        verify_manifest(manifest, self.config.trusted_keys())
        if (manifest.get("model") or {}).get("version_id") != version_id:
            raise ManifestError(f"manifest in models/{version_id} is for another version")
        verify_files(manifest, directory)
        session = open_session(directory / "model.onnx", manifest, threads=self.threads)
        session.self_test()
        return session

    def load_from_state(self, state: AgentState) -> AgentState:
        """Load ``state.current`` (or, if that fails, ``state.previous``) at start-up.

        Returns the state as it now stands (``current`` falls back to ``previous`` when only
        that one loads; both None when neither does). Never raises for a bad package: the agent
        then starts without a model and the convergence loop installs one.
        """
        for version_id in (state.current, state.previous):
            if not version_id:
                continue
            try:
                session = self.load_package(version_id)
            except (ManifestError, ModelLoadError) as error:
                log.error("cannot load installed model %s: %s", version_id, error)
                continue
            self.swap(session)
            if version_id != state.current:
                state.previous, state.current = None, version_id
            return state
        return AgentState(deployment=state.deployment)

    def trust(self, public_keys: list[str]) -> bool:
        """Trust exactly ``public_keys`` (base64 raw Ed25519) from now on, saved in agent.json.

        A model already loaded keeps serving; the next package is verified against the new set.
        Returns whether the set changed. Called by the convergence loop only.
        """
        if sorted(public_keys) == sorted(self.config.trusted_keys()):
            return False
        before = sorted(public_key_id(key) for key in self.config.trusted_keys())
        # saved first: a failed write (OSError) leaves the trusted keys as they were
        self.home.save_config(replace(self.config, trusted_signing_keys=list(public_keys),
                                      signing_public_key=public_keys[0]))
        self.config.trusted_signing_keys = list(public_keys)
        self.config.signing_public_key = public_keys[0]
        log.info("trusted signing keys: %s (were: %s)",
                 ", ".join(sorted(public_key_id(key) for key in public_keys)), ", ".join(before))
        return True

    def unload(self, session: ModelSession) -> None:
        """Stop serving ``session`` (if it is the one served): predictions answer 503 again."""
        with self._lock:
            if self._session is not session:
                return
            self._session = None
        self.telemetry.set_model(None)
        log.info("model version %s unloaded", session.version_id)

    def swap(self, session: ModelSession) -> None:
        """Serve ``session`` from now on; requests already running finish on the old one."""
        with self._lock:
            self._session = session
        self.telemetry.set_model(session.version_id, session.task)
        log.info("serving model version %s", session.version_id)

    def predict(self, data: bytes, top_k: int | None = None,
                score_threshold: float | None = None) -> dict[str, Any]:
        """A request body (image bytes; JSON for a text model) -> the served model's answer,
        by its task (docs/contracts.md, "Agent HTTP API"): ``{"model_version_id", "task":
        "image_classification", "predictions": [{"label", "index", "probability"}],
        "latency_ms"}`` (the ``top_k`` most probable), or ``{"model_version_id", "task":
        "object_detection", "width", "height", "tiles", "detections": [{"label", "index",
        "score", "box": [x1, y1, x2, y2]}], "latency_ms"}`` (boxes xyxy in px of the upright
        image; ``score_threshold`` replaces the manifest's), or for ``{"text"}`` to a text model
        ``{"model_version_id", "task": "text_classification", "predictions": [{"label",
        "index", "score"}], "truncated", "latency_ms"}`` and for ``{"texts": [...]}``
        ``{"model_version_id", "task", "results": [{"predictions", "truncated"}],
        "latency_ms"}``. ``top_k`` (None: the request's query string gave none; a text body may
        give it, else 5) is ignored by detectors and ``score_threshold`` by classifiers; both
        are checked. Latency in ms, decode to answer.

        Raises:
            NoModelError: no model is loaded.
            ImageDecodeError: the bytes are not a usable image.
            WrongInputError: JSON sent to an image model, an image sent to a text model.
            ValueError: ``top_k`` < 1 or ``score_threshold`` outside [0, 1]; a text request
                that is not valid (``edge_agent.text_session.parse_text_body``), an empty text.
            ModelLoadError: onnxruntime failed while running.
        """
        started = time.perf_counter()
        session = self.session
        outcome = "error"
        labels: list[str] = []
        answer: dict[str, Any] = {}
        try:
            if session is None:
                outcome = "no_model"
                raise NoModelError("no model is loaded yet")
            try:
                if top_k is not None and top_k < 1:
                    raise ValueError("top_k must be >= 1")
                if score_threshold is not None and not 0.0 <= score_threshold <= 1.0:
                    raise ValueError("score_threshold must be in [0, 1]")
                if isinstance(session, DetectorSession):
                    answer = session.predict_image(data, score_threshold=score_threshold)
                    labels = [found["label"] for found in answer["detections"]]
                elif isinstance(session, TextClassifierSession):
                    answer = session.answer(data, top_k=top_k)
                else:
                    answer = {"predictions": session.predict_image(
                        data, top_k=DEFAULT_TOP_K if top_k is None else top_k)}
            except (ImageDecodeError, ValueError) as error:
                outcome = "bad_request"
                if isinstance(error, ImageDecodeError):  # JSON sent to an image model?
                    wrong = image_model_got(session.task, data)
                    if wrong is not None:
                        raise wrong from None
                raise
            outcome = "ok"
        finally:
            elapsed = time.perf_counter() - started
            self.telemetry.record_request(outcome, elapsed)
        if isinstance(session, DetectorSession):
            self.telemetry.record_detections(labels)
            if answer["detections"]:
                self.telemetry.record_confidence(max(d["score"] for d in answer["detections"]))
        elif isinstance(session, TextClassifierSession):
            for result in answer.get("results", [answer]):  # each text is an answer
                self.telemetry.record_confidence(result["predictions"][0]["score"])
        elif answer["predictions"]:
            self.telemetry.record_confidence(answer["predictions"][0]["probability"])
        return {
            "model_version_id": session.version_id,
            "task": session.task,
            **answer,
            "latency_ms": round(elapsed * 1000.0, 3),
        }

    def health(self) -> dict[str, Any]:
        """``{"status": "ok" | "no_model", "model_version_id"}``."""
        version = self.current_version
        return {"status": "ok" if version else "no_model", "model_version_id": version}
