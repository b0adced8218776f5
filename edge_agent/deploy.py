"""The one exclusive convergence loop: heartbeat, read ``desired``, converge, report.

Steps for a new desired model version (state persisted to ``state.json`` before each step):
``downloading`` (manifest, signature check, artifact to ``downloads/<id>.part`` with HTTP Range
resume) -> ``verifying`` (size and sha256 of every file, test-load with the session of the
manifest's task and one dummy input; a task this agent does not serve fails here) -> files
moved into ``models/<id>/`` with ``os.replace`` -> predictor swapped -> ``running``.
Any failure -> ``failed`` with the reason; the current model keeps serving throughout. Retryable
failures (network, 5xx) back off exponentially; terminal ones (bad signature, checksum, a model
that does not load) are reported and not retried until the desired state changes.
"""

from __future__ import annotations

import itertools
import json
import logging
import random
import shutil
import threading
import time
from collections import deque
from datetime import UTC, datetime
from typing import Any

from edge_agent.agent import Agent, agent_version
from edge_agent.benchmark import Benchmarker, runtime_info
from edge_agent.client import (
    Cancelled,
    DeviceApiError,
    DeviceClient,
    RetryableError,
    TerminalError,
)
from edge_agent.home import AgentState, DeploymentStatus
from edge_agent.reference import HealthCheckError, reference_check
from edge_agent.sessions import ModelSession
from edge_agent.runtime import (
    ManifestError,
    ModelLoadError,
    parse_trusted_keys,
    verify_files,
    verify_manifest,
)

__all__ = ["Backoff", "Converger"]

log = logging.getLogger(__name__)

_DESIRED_KEYS = (
    "deployment_id",
    "model_version_id",
    "manifest_url",
    "artifact_url",
    "sha256",
    "size",
)


#: telemetry samples kept while the platform cannot be reached (an hour at one beat every 5 s;
#: the oldest are dropped first, and counted), and how many one heartbeat carries (contracts.md)
BUFFER_SAMPLES = 720
BUFFER_PER_HEARTBEAT = 120
#: answers that refuse a heartbeat's body itself (a buffered sample the platform will not take)
_REFUSED_BODY = frozenset({400, 413, 422})
#: longest an apply step waits for the heartbeat that reports it (seconds); past it, the
#: deployment goes on and a later beat reports its state
REPORT_WAIT_S = 10.0


class Backoff:
    """Exponential backoff in seconds: initial, x2 per failure, capped, with +/-20 % jitter."""

    def __init__(self, initial_s: float = 1.0, maximum_s: float = 60.0) -> None:
        self.initial_s, self.maximum_s, self._failures = initial_s, maximum_s, 0

    def next(self) -> float:
        # the exponent capped: 2**1024 overflows a float (after ~17 h of 60 s retries)
        delay = min(self.maximum_s, self.initial_s * 2.0 ** min(self._failures, 64))
        self._failures += 1
        return delay * random.uniform(0.8, 1.2)

    def reset(self) -> None:
        self._failures = 0


class Converger:
    """Heartbeats and converges ``agent`` on the control plane's desired state.

    :meth:`run` heartbeats on the calling thread and applies deployments on a second one
    (``apply``), so a long download never delays a heartbeat (the device would look offline)
    and telemetry keeps flowing while a model is fetched. Only the apply thread writes
    ``state.json`` and swaps models; only the heartbeat thread talks to the heartbeat endpoint:
    the apply thread's steps are saved, then sent by an early heartbeat. :meth:`run_once` does a
    single heartbeat and, inline, one convergence attempt (what tests drive directly).
    """

    def __init__(
        self,
        agent: Agent,
        client: DeviceClient,
        state: AgentState,
        benchmarker: Benchmarker | None = None,
        apply_client: DeviceClient | None = None,
    ) -> None:
        self.agent, self.client, self.state = agent, client, state
        # the apply thread's own HTTP session (a requests.Session is not shared across threads)
        self.apply_client = apply_client or client
        self.benchmarker = benchmarker
        self.home = agent.home
        self.interval_s = float(agent.config.heartbeat_interval_s)
        self._heartbeat_backoff = Backoff()
        self._deploy_backoff = Backoff(initial_s=2.0, maximum_s=300.0)
        self._retry_at = 0.0
        self._refetched: set[str] = set()
        # guards self.state (read by the heartbeat, written by the apply thread) and the hand-off
        self._lock = threading.RLock()
        self._sent = threading.Condition(self._lock)
        self._step_seq = 0  # steps saved so far
        self._sent_seq = 0  # steps a heartbeat has carried (or tried to)
        self._background = False
        self._beat_thread: threading.Thread | None = None
        self._applying = False
        self._pending: dict[str, Any] | None = None
        self._buffer: deque[dict[str, Any]] = deque(maxlen=BUFFER_SAMPLES)
        self._dropped = 0  # samples that fell out of the full buffer, not reported yet
        self._resend_plain = False  # a beat with buffered samples was refused (4xx)
        self._stop = threading.Event()  # set when run() ends: an apply left running gives up
        self._latest: dict[str, Any] | None = None  # the newest heartbeat reply's desired state
        self._handed_key: tuple[str, str, str] | None = None  # the desired state last taken up
        self._handed = threading.Event()  # a desired state waits for the apply thread
        self._beat_now = threading.Event()  # the apply thread has a step to report

    # --- the loop -----------------------------------------------------------------------------

    def run(self, stop: threading.Event) -> None:
        """Heartbeat until ``stop`` is set, applying deployments on a second thread; never
        raises for device API or package errors. Returns within ~0.25 s of ``stop`` (an
        apply in progress is left to its daemon thread; ``state.json`` makes it resumable)."""
        self._background = True
        self._stop = stop
        self._beat_thread = threading.current_thread()
        applier = threading.Thread(target=self._apply_loop, args=(stop,), name="apply",
                                   daemon=True)
        applier.start()
        try:
            while not stop.is_set():
                try:
                    wait = self.run_once()
                except Exception:  # never let heartbeating end: the device would look dead
                    log.exception("heartbeat loop: unexpected error")
                    wait = self._heartbeat_backoff.next()
                deadline = time.monotonic() + wait
                while not stop.is_set() and not self._beat_now.is_set():
                    left = deadline - time.monotonic()
                    if left <= 0:
                        break
                    self._beat_now.wait(min(left, 0.25))
                self._beat_now.clear()
        finally:
            with self._sent:
                self._background = False
                self._sent.notify_all()
            self._handed.set()
            applier.join(timeout=1.0)

    def _apply_loop(self, stop: threading.Event) -> None:
        while not stop.is_set():
            if not self._handed.wait(0.25):
                continue
            with self._lock:
                self._handed.clear()
                desired, self._pending = self._pending, None
            if desired is None:
                continue
            woke = True
            try:
                self.apply(desired)
            except Exception:  # never let the apply thread die: retried after a backoff
                log.exception("deployment %s: unexpected error", desired.get("deployment_id"))
                self._retry_at = time.monotonic() + self._deploy_backoff.next()
                woke = False  # the next heartbeat at its interval, not at once
            finally:
                with self._lock:
                    self._applying = False
                if woke:
                    self._beat_now.set()

    @property
    def applying(self) -> bool:
        """Whether the apply thread is working on a deployment (downloading, verifying)."""
        with self._lock:
            return self._applying

    def run_once(self) -> float:
        """One heartbeat and, if the desired state differs, one convergence attempt.

        Returns the number of seconds to wait before the next call.
        """
        try:
            reply = self._heartbeat()
        except RetryableError as error:
            log.warning("heartbeat failed, backing off: %s", error)
            return self._heartbeat_backoff.next()
        except TerminalError as error:
            log.error("heartbeat refused: %s", error)
            if self._resend_plain:  # refused with buffered samples: again at once, without
                self._resend_plain = False
                return 0.0
            return max(self.interval_s, 60.0)
        self._heartbeat_backoff.reset()
        if "trusted_signing_keys" in reply:
            # before anything desired: a package signed with a new key comes with that key
            try:
                self.agent.trust(parse_trusted_keys(reply["trusted_signing_keys"]))
            except (ManifestError, OSError) as error:  # OSError: agent.json not writable
                log.error("ignoring the trusted signing keys of the heartbeat reply: %s", error)
        interval = reply.get("heartbeat_interval_s")
        if isinstance(interval, int | float) and interval > 0:
            self.interval_s = float(interval)
        if self.benchmarker is not None:
            # handed over before converging: the benchmarker's own thread runs them, so a
            # deployment (or its download) never waits for a benchmark, nor the reverse
            self.benchmarker.offer(reply.get("benchmarks"))
        desired = reply.get("desired")
        inline = None
        with self._lock:
            self._latest = desired if isinstance(desired, dict) else None
            if (
                not self._applying
                and isinstance(desired, dict)
                and self._needs_apply(desired)
                and time.monotonic() >= self._retry_at
            ):
                if not self._background:
                    inline = desired
                else:
                    self._applying, self._pending = True, desired
                    self._handed.set()
        if inline is not None:
            self.apply(inline)
        return self.interval_s

    def _heartbeat(self) -> dict[str, Any]:
        with self._lock:
            deployment = self.state.deployment
            report = deployment.report() if deployment else None
            carried = self._step_seq
            buffered = list(itertools.islice(self._buffer, BUFFER_PER_HEARTBEAT))
            dropped = self._dropped
        payload = {
            "device_time": datetime.now(UTC).isoformat().replace("+00:00", "Z"),
            "agent_version": agent_version(),
            "current_model_version_id": self.agent.current_version,
            "metrics": self.agent.telemetry.snapshot(),
            "deployment": report,
            "runtime": runtime_info(),
            "buffered": buffered,
            "buffered_dropped": dropped,
        }
        try:
            reply = self.client.heartbeat(payload)
        except TerminalError as error:
            self.agent.telemetry.record_heartbeat(False)
            if buffered and error.status in _REFUSED_BODY:
                # refused (4xx) with samples on board: one the platform will not take must not
                # block every later heartbeat, so the buffer goes (counted) and the next beat
                # is the plain one
                with self._lock:
                    self._dropped += len(self._buffer)
                    self._buffer.clear()
                log.warning("heartbeat refused with %d buffered samples: dropped them",
                            len(buffered))
                self._resend_plain = True
            raise
        except DeviceApiError:
            self.agent.telemetry.record_heartbeat(False)
            with self._lock:  # kept for when the platform answers again
                if len(self._buffer) == self._buffer.maxlen:
                    self._dropped += 1  # the oldest falls out
                self._buffer.append({"device_time": payload["device_time"],
                                     "metrics": payload["metrics"]})
            raise
        finally:
            with self._sent:
                self._sent_seq = max(self._sent_seq, carried)
                self._sent.notify_all()
        self.agent.telemetry.record_heartbeat(True)
        with self._lock:  # delivered: the samples sent and the count of the dropped ones
            for _ in buffered:
                self._buffer.popleft()
            self._dropped -= dropped
        return reply

    @staticmethod
    def _key(desired: dict[str, Any]) -> tuple[str, str, str]:
        return (str(desired.get("deployment_id")), str(desired.get("model_version_id")),
                str(desired.get("sha256")))

    def _needs_apply(self, desired: dict[str, Any]) -> bool:
        missing = [key for key in _DESIRED_KEYS if desired.get(key) in (None, "")]
        if missing:
            log.error("ignoring desired state without %s", missing)
            return False
        size = desired["size"]
        if not isinstance(size, int) or isinstance(size, bool) or size < 0:
            log.error("ignoring desired state with size %r (not a byte count)", size)
            return False
        current = self.state.deployment
        if current is not None and current.matches(desired):
            if current.state == "running":
                # Reinstall only if the version did not load at start-up.
                return self.agent.current_version != current.model_version_id
            return not (current.state == "failed" and current.terminal)
        if self._key(desired) != self._handed_key:
            # A new desired state: a fresh backoff and one more chance to re-download on a bad
            # hash (the same one again, e.g. after an error before its first step, keeps both)
            self._handed_key = self._key(desired)
            self._retry_at = 0.0
            self._deploy_backoff.reset()
            self._refetched.clear()
        if desired["model_version_id"] == self.agent.current_version:
            # Same model version under a new deployment: nothing to install.
            self._step(self._status(desired), "running")
            return False
        return True

    # --- one convergence attempt --------------------------------------------------------------

    @staticmethod
    def _status(desired: dict[str, Any]) -> DeploymentStatus:
        return DeploymentStatus(
            deployment_id=str(desired["deployment_id"]),
            model_version_id=str(desired["model_version_id"]),
            sha256=str(desired["sha256"]),
            size=int(desired["size"]),
            state="downloading",
        )

    def _step(self, status: DeploymentStatus, state: str, error: str | None = None) -> None:
        """Persist, then report (best effort: the next heartbeat carries it anyway). Under
        :meth:`run` the report is the heartbeat thread's next beat, brought forward."""
        with self._lock:
            status.move(state, error)
            self.state.deployment = status
            self.home.save_state(self.state)
            self._step_seq += 1
            seq = self._step_seq
        if self._stop.is_set():
            return  # run() has ended: saved, and reported by the next process's heartbeat
        if self._background:
            # the heartbeat thread sends it now; wait (bounded) until a beat has carried it,
            # so every step reaches the platform in order, as a synchronous report would
            self._beat_now.set()
            if threading.current_thread() is self._beat_thread:
                return  # a step taken while handling a heartbeat reply: the next beat carries it
            with self._sent:
                self._sent.wait_for(lambda: self._sent_seq >= seq or not self._background,
                                    timeout=REPORT_WAIT_S)
            return
        try:
            self._heartbeat()
        except DeviceApiError as error:
            log.warning("could not report %s: %s", state, error)

    def apply(self, desired: dict[str, Any]) -> None:
        """Converge on ``desired`` once. Never raises for network or package errors."""
        status = self._status(desired)
        version_id = status.model_version_id
        log.info("deploying model version %s (deployment %s)", version_id, status.deployment_id)
        try:
            if version_id == self.state.previous and self.home.model_dir(version_id).is_dir():
                self._step(status, "verifying")  # rollback: the package is still on disk
                session = self.agent.load_package(version_id)
            else:
                session = self._download_and_install(desired, status)
            if self._abandoned(status):
                raise Cancelled("not swapped in")
        except Cancelled as error:
            # a newer desired state (or the end of run()): what was fetched stays on disk for
            # a resume, and the next heartbeat takes up what is desired now
            log.info("deployment %s abandoned: %s", status.deployment_id, error)
            return
        except (RetryableError, OSError) as error:
            # OSError: local disk trouble (full, permissions), which may clear up.
            delay = self._deploy_backoff.next()
            self._retry_at = time.monotonic() + delay
            log.warning(
                "deployment %s will retry in %.0f s: %s", status.deployment_id, delay, error
            )
            self._step(status, status.state, f"{error} (retrying)")
            return
        except (TerminalError, ManifestError, ModelLoadError) as error:
            log.error("deployment %s failed: %s", status.deployment_id, error)
            self.agent.telemetry.record_deployment("failed")
            self._step(status, "failed", str(error))
            self._prune()
            return
        before = self.agent.session
        self.agent.swap(session)
        try:
            # the health check runs on the session now serving: Mender's commit or roll back
            checked = reference_check(session, session.manifest.get("reference"))
        except Exception as error:  # noqa: BLE001 - whatever went wrong, the check failed
            if not isinstance(error, HealthCheckError):
                error = HealthCheckError(f"the check could not run: {error}")
            restored = self._roll_back(before, session)
            log.error("deployment %s failed its health check: %s; %s", status.deployment_id,
                      error, restored)
            self.agent.telemetry.record_deployment("rolled_back")
            self._step(status, "failed", f"health check failed after the swap: {error}; "
                                         f"{restored}")
            self._prune()
            return
        if not checked:
            log.info("model version %s ships no reference predictions: not checked", version_id)
        with self._lock:
            if self.state.current != version_id:
                self.state.previous, self.state.current = self.state.current, version_id
        self.agent.telemetry.record_deployment("running")
        self._step(status, "running")
        self._prune()

    def _roll_back(self, before: ModelSession | None, failed: ModelSession) -> str:
        """Serve ``before`` again after ``failed`` failed its health check (state.json was not
        changed: current is still ``before``'s version). Returns what now serves, in words."""
        if before is not None:
            self.agent.swap(before)
            return f"rolled back to model version {before.version_id}"
        self.agent.unload(failed)
        return "no model is served (there was none before)"

    def _download_and_install(
        self, desired: dict[str, Any], status: DeploymentStatus
    ) -> ModelSession:
        version_id = status.model_version_id
        self._step(status, "downloading")
        manifest = self.apply_client.get_json(desired["manifest_url"], "manifest")
        # Nothing in an unverified manifest is trusted, not even the size to download.
        verify_manifest(manifest, self.agent.config.trusted_keys())
        self._check_consistent(desired, manifest)
        part = self.home.downloads_dir / f"{version_id}.part"
        self.home.ensure()
        self.apply_client.download(desired["artifact_url"], part, status.size,
                                   should_stop=lambda: self._abandoned(status))

        self._step(status, "verifying")
        staging = self.home.models_dir / f".staging-{version_id}"
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        (staging / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
        part.replace(staging / "model.onnx")
        try:
            verify_files(manifest, staging)
        except ManifestError as error:
            shutil.rmtree(staging, ignore_errors=True)
            if version_id not in self._refetched:
                # A corrupted transfer or resume: download once more from scratch, then give up.
                self._refetched.add(version_id)
                raise RetryableError(f"{error}; downloading again") from error
            raise
        target = self.home.model_dir(version_id)
        if target.exists():
            shutil.rmtree(target)  # leftovers of an earlier failed attempt; never current
        staging.replace(target)
        return self.agent.load_package(version_id)

    def _abandoned(self, status: DeploymentStatus) -> bool:
        """Whether the apply of ``status`` should give up: run() has ended, or (under run())
        the newest heartbeat reply desires something else."""
        if self._stop.is_set():
            return True
        if not self._background:
            return False
        with self._lock:
            latest = self._latest
        return latest is None or self._key(latest) != (
            status.deployment_id, status.model_version_id, status.sha256)

    @staticmethod
    def _check_consistent(desired: dict[str, Any], manifest: dict[str, Any]) -> None:
        if (manifest.get("model") or {}).get("version_id") != desired["model_version_id"]:
            raise ManifestError("manifest is for another model version")
        entry = (manifest.get("files") or {}).get("model.onnx") or {}
        if entry.get("sha256") != desired["sha256"]:
            raise ManifestError(
                f"desired sha256 {desired['sha256']} does not match the signed manifest's "
                f"{entry.get('sha256')}"
            )
        if entry.get("size") != desired["size"]:
            raise ManifestError(
                f"desired size {desired['size']} bytes does not match the signed manifest's "
                f"{entry.get('size')}"
            )

    def _prune(self) -> None:
        """Delete installed versions other than current and previous, and stale downloads."""
        keep = {self.state.current, self.state.previous}
        for path in self.home.models_dir.iterdir() if self.home.models_dir.exists() else ():
            if path.name not in keep:
                shutil.rmtree(path, ignore_errors=True)
        deployment = self.state.deployment
        resumable = (
            deployment.model_version_id if deployment and deployment.state != "failed" else None
        )
        for path in self.home.downloads_dir.glob("*.part"):
            if path.stem != resumable:
                path.unlink(missing_ok=True)
