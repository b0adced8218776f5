"""On-device benchmarks of candidate models, measured without disturbing what the device serves.

The control plane lists a device's open benchmarks in each heartbeat reply (``benchmarks``,
docs/contracts.md); the convergence loop hands them to :class:`Benchmarker`, whose own thread
runs them one at a time (a benchmark already done or in progress is not started again):

1. report ``running``; a benchmark the platform no longer wants (expired, cancelled) stops here;
2. download the signed manifest, ``model.onnx`` (HTTP Range resume) and the input images into
   ``<home>/benchmarks/<id>/``, and verify the signature against the trusted keys and every
   file's size and sha256, as a deployment does; a bad signature -> ``failed`` with the reason;
3. measure in a CHILD PROCESS at lower priority (``os.nice(10)`` first thing in the child), so
   the model being served keeps its CPU: ``python -m edge_agent.benchmark <dir> --warmup W
   --runs R`` loads the model with the session of its task (``ClassifierSession`` or
   ``DetectorSession``, :func:`edge_agent.sessions.open_session`; one intra-op thread;
   ``load_s``), runs ``W`` untimed then ``R`` timed ``predict_image`` calls (decode,
   preprocess, batch 1; a detector's include its post-processing: NMS, boxes back to the
   image's pixels, tiles) cycling through the inputs, and prints ONE JSON line; a text model
   (``TextClassifierSession``) is timed on the agent's own :data:`BENCHMARK_TEXTS` instead,
   one text per run (featurised and classified, as ``POST /v1/predict`` with ``{"text"}``
   does), the request's inputs unused, and its result adds ``p95_ms``;
4. report ``succeeded`` with p50/p99/mean latency (ms), throughput (images/s = runs / timed
   seconds), peak memory (the child's VmHWM), onnxruntime version and providers, plus the p99
   and count of the ``/v1/predict`` requests this agent served while the child ran
   (``serving_p99_ms``, null when none, ``serving_requests``); ``incompatible`` when onnxruntime
   cannot load the model or its task is not one this agent serves; ``failed`` for anything
   else, a child killed after its timeout (``base_timeout_s`` + ``per_run_timeout_s`` x
   (warmup + runs)) included. The folder is removed.

This module imports nothing heavy at import time: the child lowers its priority before it loads
onnxruntime.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import subprocess
import sys
import threading
import time
from collections import OrderedDict, deque
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from edge_agent.agent import Agent
    from edge_agent.client import DeviceClient

__all__ = ["Benchmarker", "main", "measure", "runtime_info"]

log = logging.getLogger(__name__)

#: How much lower the measuring child's priority is (``os.nice`` increment).
CHILD_NICENESS = 10
#: Largest input image accepted, bytes.
MAX_INPUT_BYTES = 32 * 1024 * 1024
#: Benchmark ids remembered as done (or in progress) so a re-listed one is not run again.
REMEMBERED = 1024
_SPEC_KEYS = ("benchmark_id", "manifest_url", "artifact_url", "sha256", "size", "inputs",
              "warmup", "runs")
#: Seconds between attempts of a download or a report that failed retryably.
RETRY_DELAYS_S = (1.0, 4.0, 15.0)
#: What a text model is timed on, one text per run in this order (cycling): the reference
#: texts (Chinese, English, mixed, emoji) and longer ones, a review and a paragraph past the
#: default 4,096 characters, so a text's featurisation is measured over typical lengths.
BENCHMARK_TEXTS = (
    "这家餐厅的菜很好吃，服务也很周到，下次还会再来！",
    "The battery died after two days and support never answered my emails.",
    "物流太慢了😡 but the quality is great 👍👍 五星好评",
    "🎉🎉 Happy New Year 2026! 新年快乐，万事如意 🧧",
    "I ordered the 13-inch model in March. The screen is bright and sharp, the keyboard is "
    "quiet, and the fan only spins up when I export video. Two complaints: the charger is "
    "bulky and the webcam is grainy in a dim room. For the price it is still the best laptop "
    "I have owned, and the battery lasts a full working day.",
    "收到货后第一时间试用了，做工扎实，包装也很用心。" * 20
    + " Overall: would buy again, 推荐给朋友。" * 100,
)


def runtime_info() -> dict[str, Any]:
    """The heartbeat's ``runtime``: ``{"onnxruntime": version, "providers": [...]}``."""
    import onnxruntime

    return {
        "onnxruntime": onnxruntime.__version__,
        "providers": list(onnxruntime.get_available_providers()),
    }


class BenchmarkFailed(Exception):
    """The benchmark ends with ``status`` (``failed`` or ``incompatible``) and this reason."""

    def __init__(self, status: str, reason: str) -> None:
        super().__init__(reason)
        self.status = status


def _valid_spec(spec: Any) -> bool:
    if not isinstance(spec, dict) or any(spec.get(key) in (None, "") for key in _SPEC_KEYS):
        return False
    return (
        isinstance(spec["inputs"], list)
        and bool(spec["inputs"])
        and all(isinstance(url, str) for url in spec["inputs"])
        and all(
            isinstance(spec[key], int) and not isinstance(spec[key], bool)
            for key in ("size", "warmup", "runs")
        )
    )


class Benchmarker:
    """Runs the benchmarks the control plane asks of this device, one at a time, on its own
    thread. ``client`` should be a DeviceClient of its own (requests sessions are not shared
    between threads)."""

    def __init__(
        self,
        agent: Agent,
        client: DeviceClient,
        *,
        base_timeout_s: float = 120.0,
        per_run_timeout_s: float = 1.0,
        retry_delays_s: tuple[float, ...] = RETRY_DELAYS_S,
        python: str = sys.executable,
    ) -> None:
        self.agent, self.client = agent, client
        self.home = agent.home
        self.base_timeout_s, self.per_run_timeout_s = base_timeout_s, per_run_timeout_s
        self.retry_delays_s = retry_delays_s
        self.python = python
        self._lock = threading.Lock()
        self._queue: deque[dict[str, Any]] = deque()
        self._seen: OrderedDict[str, None] = OrderedDict()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._child: subprocess.Popen[bytes] | None = None
        # leftovers of a run the agent did not finish (it was stopped or crashed)
        shutil.rmtree(self.home.benchmarks_dir, ignore_errors=True)

    # --- the queue ----------------------------------------------------------------------------

    def offer(self, benchmarks: Any) -> None:
        """Queue the heartbeat reply's ``benchmarks`` that are new; start the thread if needed."""
        if not isinstance(benchmarks, list) or not benchmarks:
            return
        added = False
        with self._lock:
            for spec in benchmarks:
                if not _valid_spec(spec):
                    log.error("ignoring a malformed benchmark request: %r", spec)
                    continue
                benchmark_id = str(spec["benchmark_id"])
                if benchmark_id in self._seen:
                    continue
                self._seen[benchmark_id] = None
                while len(self._seen) > REMEMBERED:
                    self._seen.popitem(last=False)
                self._queue.append(spec)
                added = True
            if added and (self._thread is None or not self._thread.is_alive()):
                self._thread = threading.Thread(target=self._loop, name="benchmark", daemon=True)
                self._thread.start()
        if added:
            self._wake.set()

    def stop(self, timeout_s: float = 10.0) -> None:
        """Stop: a running child is killed, the thread joined."""
        self._stop.set()
        self._wake.set()
        child = self._child
        if child is not None and child.poll() is None:
            child.kill()
        thread = self._thread
        if thread is not None:
            thread.join(timeout_s)

    def _loop(self) -> None:
        while not self._stop.is_set():
            with self._lock:
                spec = self._queue.popleft() if self._queue else None
                if spec is None:
                    self._wake.clear()
            if spec is None:
                self._wake.wait(5.0)
                continue
            try:
                self.run(spec)
            except Exception:  # never let one benchmark stop the thread
                log.exception("benchmark %s crashed", spec.get("benchmark_id"))

    # --- one benchmark ------------------------------------------------------------------------

    def run(self, spec: dict[str, Any]) -> dict[str, Any] | None:
        """Run one benchmark and report it. Returns the body reported last (None when the
        platform no longer wanted it). Never raises for device API or package errors."""
        from edge_agent.client import DeviceApiError

        benchmark_id = str(spec["benchmark_id"])
        stored = self._report(benchmark_id, {"status": "running", "error": None, "result": None})
        if stored not in ("pending", "running"):
            log.info("benchmark %s is %s; not running it", benchmark_id, stored or "unknown")
            return None
        directory = self.home.benchmarks_dir / benchmark_id
        log.info("benchmark %s: %d runs", benchmark_id, spec["runs"])
        try:
            try:
                self._fetch(spec, directory)
                result = self._measure(spec, directory)
                body: dict[str, Any] = {"status": "succeeded", "error": None, "result": result}
            except BenchmarkFailed as error:
                body = {"status": error.status, "error": str(error), "result": None}
            except DeviceApiError as error:
                body = {"status": "failed", "error": str(error), "result": None}
            except OSError as error:  # local disk trouble
                body = {"status": "failed", "error": f"on the device: {error}", "result": None}
        finally:
            shutil.rmtree(directory, ignore_errors=True)
        if self._stop.is_set():
            # not reported: the platform still lists it, and the agent runs it after a restart
            log.info("benchmark %s interrupted: the agent is stopping", benchmark_id)
            return None
        log.info("benchmark %s %s%s", benchmark_id, body["status"],
                 f": {body['error']}" if body["error"] else "")
        if body["error"]:  # the platform keeps 4000 characters and takes reports up to 64 KiB
            body["error"] = str(body["error"])[:4000]
        self._report(benchmark_id, body)
        return body

    def _retrying(self, what: str, call: Any) -> Any:
        from edge_agent.client import RetryableError

        for delay in (*self.retry_delays_s, None):
            try:
                return call()
            except RetryableError as error:
                if delay is None or self._stop.is_set():
                    raise
                log.warning("%s failed, retrying in %.0f s: %s", what, delay, error)
                self._stop.wait(delay)
        raise AssertionError("unreachable")

    def _report(self, benchmark_id: str, body: dict[str, Any]) -> str | None:
        """POST the report (retried); the stored status, or None when it could not be sent."""
        from edge_agent.client import DeviceApiError

        try:
            reply = self._retrying(
                f"benchmark {benchmark_id} report",
                lambda: self.client.report_benchmark(benchmark_id, body),
            )
        except DeviceApiError as error:
            log.warning("could not report benchmark %s %s: %s", benchmark_id, body["status"], error)
            return None
        return str(reply.get("status") or "") or None

    def _fetch(self, spec: dict[str, Any], directory: Path) -> None:
        """Download and verify the package and inputs into ``directory``."""
        from edge_agent.runtime import ManifestError, verify_files, verify_manifest

        shutil.rmtree(directory, ignore_errors=True)
        (directory / "inputs").mkdir(parents=True)
        manifest = self._retrying(
            "benchmark manifest", lambda: self.client.get_json(spec["manifest_url"], "manifest")
        )
        try:
            # nothing in an unverified manifest is trusted, not even the size to download
            verify_manifest(manifest, self.agent.config.trusted_keys())
            entry = (manifest.get("files") or {}).get("model.onnx") or {}
            if entry.get("sha256") != spec["sha256"] or entry.get("size") != spec["size"]:
                raise ManifestError(
                    f"the benchmark's model ({spec['sha256']}, {spec['size']} bytes) is not the "
                    f"one the signed manifest lists ({entry.get('sha256')}, {entry.get('size')})"
                )
        except ManifestError as error:
            raise BenchmarkFailed("failed", str(error)) from error
        (directory / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
        target = directory / "model.onnx"
        self._retrying(
            "benchmark model",
            lambda: self.client.download(spec["artifact_url"], target, spec["size"]),
        )
        try:
            verify_files(manifest, directory)
        except ManifestError as error:
            raise BenchmarkFailed("failed", str(error)) from error
        for index, url in enumerate(spec["inputs"]):
            data = self._retrying(
                f"benchmark input {index}",
                lambda url=url, index=index: self.client.get_bytes(
                    url, f"input {index}", MAX_INPUT_BYTES
                ),
            )
            (directory / "inputs" / str(index)).write_bytes(data)

    def timeout_s(self, spec: dict[str, Any]) -> float:
        runs = int(spec["warmup"]) + int(spec["runs"])  # ints, checked by _valid_spec
        return self.base_timeout_s + self.per_run_timeout_s * runs

    def _measure(self, spec: dict[str, Any], directory: Path) -> dict[str, Any]:
        """Run the measuring child; its result plus the serving figures of the same window."""
        import numpy as np

        package_root = str(Path(__file__).resolve().parents[1])
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(
            part for part in (package_root, env.get("PYTHONPATH")) if part
        )
        command = [
            self.python, "-m", "edge_agent.benchmark", str(directory),
            "--warmup", str(spec["warmup"]), "--runs", str(spec["runs"]),
        ]
        timeout = self.timeout_s(spec)
        telemetry = self.agent.telemetry
        mark = telemetry.mark()
        child = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
            env=env,
        )
        self._child = child
        try:
            stdout, stderr = child.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            child.kill()
            child.communicate()
            raise BenchmarkFailed(
                "failed", f"the benchmark did not finish within {timeout:g} s and was stopped"
            ) from None
        finally:
            self._child = None
        served = telemetry.latencies_since(mark)
        if self._stop.is_set():
            raise BenchmarkFailed("failed", "the agent stopped during the benchmark")
        lines = [line for line in stdout.decode("utf-8", "replace").splitlines() if line.strip()]
        try:
            outcome = json.loads(lines[-1])
            if not isinstance(outcome, dict):
                raise ValueError("not an object")
        except (IndexError, ValueError):
            tail = stderr.decode("utf-8", "replace").strip()[-500:]
            raise BenchmarkFailed(
                "failed", f"the benchmark process exited with status {child.returncode}: "
                f"{tail or 'no output'}"
            ) from None
        status = outcome.get("status")
        if status != "succeeded":
            raise BenchmarkFailed(
                "incompatible" if status == "incompatible" else "failed",
                str(outcome.get("error") or f"benchmark process: {status}"),
            )
        result = dict(outcome.get("result") or {})
        result["serving_requests"] = len(served)
        result["serving_p99_ms"] = (
            round(float(np.percentile(served, 99)), 3) if served else None
        )
        return result


# --- the measuring child ----------------------------------------------------------------------


def peak_memory_bytes() -> int | None:
    """This process's peak resident set: VmHWM of /proc/self/status, else ru_maxrss."""
    try:
        with open("/proc/self/status", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        import resource

        scale = 1 if sys.platform == "darwin" else 1024  # bytes on macOS, KiB elsewhere
        return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * scale
    except (ImportError, OSError):
        return None


def measure(directory: Path, warmup: int, runs: int) -> dict[str, Any]:
    """Load ``directory``'s package and time ``runs`` predictions of its ``inputs/<n>`` images.

    Returns ``{"status": "succeeded", "result": {...}}``, or ``{"status": "incompatible" |
    "failed", "error"}``: onnxruntime cannot load the model or its task is not served here
    (``incompatible``), an input does not decode, the model fails to run (``failed``).
    Classifiers and detectors alike: each run is the session's ``predict_image`` with its
    defaults (a detector's includes its post-processing). A text model's run is one of
    :data:`BENCHMARK_TEXTS` through ``predict_texts`` (featurisation included); the images
    are not used, and the result adds ``p95_ms``.
    """
    import numpy as np

    from edge_agent.imaging import ImageDecodeError
    from edge_agent.runtime import ManifestError, ModelLoadError
    from edge_agent.sessions import UnsupportedTaskError, open_session
    from edge_agent.text_session import TASK as TEXT_TASK
    from edge_agent.text_session import TextClassifierSession

    inputs_dir = directory / "inputs"
    paths = sorted(inputs_dir.iterdir(), key=lambda path: int(path.name)) if (
        inputs_dir.is_dir()) else []
    images = [path.read_bytes() for path in paths]
    if not images and _package_task(directory) != TEXT_TASK:
        return {"status": "failed", "error": "the benchmark has no input images"}
    started = time.perf_counter()
    try:
        session = open_session(directory, threads=1)
    except (ModelLoadError, UnsupportedTaskError) as error:
        return {"status": "incompatible", "error": str(error)}
    except ManifestError as error:
        return {"status": "failed", "error": str(error)}
    load_s = time.perf_counter() - started
    latencies = np.empty(runs, dtype=np.float64)
    index = 0
    if isinstance(session, TextClassifierSession):
        try:
            for index in range(warmup):
                session.predict_texts([BENCHMARK_TEXTS[index % len(BENCHMARK_TEXTS)]])
            timed = time.perf_counter()
            for index in range(runs):
                begin = time.perf_counter()
                session.predict_texts([BENCHMARK_TEXTS[index % len(BENCHMARK_TEXTS)]])
                latencies[index] = time.perf_counter() - begin
            total_s = time.perf_counter() - timed
        except ModelLoadError as error:
            return {"status": "failed", "error": str(error)}
        return _succeeded(latencies, total_s, load_s, runs, warmup, p95=True)
    try:
        for index in range(warmup):
            session.predict_image(images[index % len(images)])
        timed = time.perf_counter()
        for index in range(runs):
            begin = time.perf_counter()
            session.predict_image(images[index % len(images)])
            latencies[index] = time.perf_counter() - begin
        total_s = time.perf_counter() - timed
    except ImageDecodeError as error:
        return {"status": "failed", "error": f"input {index % len(images)}: {error}"}
    except ModelLoadError as error:
        return {"status": "failed", "error": str(error)}
    return _succeeded(latencies, total_s, load_s, runs, warmup)


def _package_task(directory: Path) -> str | None:
    """The ``task`` of ``directory/manifest.json`` (None when it cannot be read)."""
    from edge_agent.sessions import manifest_task

    try:
        manifest = json.loads((directory / "manifest.json").read_text(encoding="utf-8"))
        return manifest_task(manifest) if isinstance(manifest, dict) else None
    except (OSError, ValueError):  # ManifestError is a ValueError
        return None


def _succeeded(latencies: Any, total_s: float, load_s: float, runs: int, warmup: int,
               p95: bool = False) -> dict[str, Any]:
    """The child's ``succeeded`` outcome for ``latencies`` (s) of ``runs`` timed runs."""
    import numpy as np
    import onnxruntime

    latencies_ms = latencies * 1000.0
    p50, p95_ms, p99 = (float(value) for value in np.percentile(latencies_ms, [50, 95, 99]))
    figures = {"p95_ms": round(p95_ms, 4)} if p95 else {}
    return {
        "status": "succeeded",
        "result": {
            "p50_ms": round(p50, 4),
            **figures,
            "p99_ms": round(p99, 4),
            "mean_ms": round(float(latencies_ms.mean()), 4),
            "throughput_ips": round(runs / total_s, 3) if total_s > 0 else None,
            "load_s": round(load_s, 4),
            "peak_memory_bytes": peak_memory_bytes(),
            "runs": runs,
            "warmup": warmup,
            "onnxruntime": onnxruntime.__version__,
            "providers": list(onnxruntime.get_available_providers()),
        },
    }


def main(argv: list[str] | None = None) -> int:
    """``python -m edge_agent.benchmark DIR --warmup W --runs R``: one JSON line on stdout."""
    os.nice(CHILD_NICENESS)  # before onnxruntime is even imported
    parser = argparse.ArgumentParser(prog="python -m edge_agent.benchmark")
    parser.add_argument("directory", type=Path)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--runs", type=int, default=50)
    args = parser.parse_args(argv)
    if args.runs < 1 or args.warmup < 0:
        parser.error("--runs must be >= 1 and --warmup >= 0")
    try:
        outcome = measure(args.directory, args.warmup, args.runs)
    except Exception as error:  # reported, not a traceback: the parent reads one line
        outcome = {"status": "failed", "error": f"{type(error).__name__}: {error}"}
    print(json.dumps(outcome), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
