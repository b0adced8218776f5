"""Heartbeats at fleet scale: ``make bench BENCH=heartbeats``.

A real stack (Redis, migrations, the uvicorn web server; the database of ``make run``: SQLite,
or ``--database-url``) with ``--devices`` devices enrolled in one project (created in bulk with
their credentials, as enrollment would leave them). An open-loop load generator on loopback (an
asyncio client over keep-alive connections: each device heartbeats every ``--interval-s``
seconds at its own phase, whether or not earlier answers came back) sends the heartbeat of a
converged agent (contracts.md: its counters, latency percentiles, CPU, memory, its runtime and
its running deployment's report, as edge_agent.deploy sends them on every beat; each device runs
a deployed model version) for
``--seconds`` after one untimed round. Latency is measured from the scheduled send time, so
queueing counts (no coordinated omission). The same load is offered to the platform's plain
Django heartbeat view (``SAMPAN_HEARTBEAT_FAST_PATH=0``), the baseline, for ``--baseline-s``
with ``--baseline-devices`` (1,000: at 10,000 it answers nothing in the timed window).

Prints one JSON line: ``{"bench": "heartbeats", "devices", "offered_per_s", "rate_per_s",
"p50_ms", "p99_ms", "errors", "baseline": {"devices", "rate_per_s", "p99_ms", "errors"},
"rate_ratio", ...}`` (``rate_per_s``: answered 200 per second over the timed window;
``rate_ratio``: ours over the baseline's sustained rate).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from sampan.devstack.stack import Stack

CREATE = """
import json, hashlib
from sampan.accounts.models import Project
from django.contrib.auth import get_user_model
from sampan.fleet.models import Deployment, Device
from sampan.registry.models import ModelVersion, RegisteredModel
owner = get_user_model().objects.create_user("fleet-bench", password="fleet-bench-secret-1")
project = Project.objects.create(name="fleet bench", created_by=owner)
model = RegisteredModel.objects.create(project=project, name="bench",
                                       task_type="image_classification")
version = ModelVersion.objects.create(project=project, model=model, version=1,
                                      task_type="image_classification", labels=["a", "b"],
                                      manifest={{}}, package_dir="models/bench",
                                      model_sha256="0" * 64, model_size=1)
count = {count}
devices = Device.objects.bulk_create(
    [Device(project=project, name=f"device-{{i:05d}}", current_model_version=version,
            runtime={runtime},
            credential_sha256=hashlib.sha256(f"bench-credential-{{i}}".encode()).hexdigest())
     for i in range(count)], batch_size=1000)
deployments = Deployment.objects.bulk_create(
    [Deployment(project=project, device=device, model_version=version, state="running")
     for device in devices], batch_size=1000)
print(json.dumps({{"version": str(version.pk),
                   "deployments": [str(d.pk) for d in deployments]}}))
"""
#: what the agent reports of its runtime on every beat (edge_agent.benchmark.runtime_info)
RUNTIME = {"onnxruntime": "1.32.0", "providers": ["CPUExecutionProvider"]}


def _request(index: int, host: str, beat: int, fleet: dict[str, Any]) -> bytes:
    """The heartbeat a converged agent sends (edge_agent.deploy.Converger._heartbeat): its
    runtime and its running deployment's report on every beat."""
    body = json.dumps({
        "device_time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "agent_version": "0.1.0", "current_model_version_id": fleet["version"],
        "runtime": RUNTIME, "buffered": [], "buffered_dropped": 0,
        "metrics": {"requests": 100 * beat, "errors": beat // 10,
                    "latency_ms": {"p50": 4.5, "p95": 9.0, "p99": 12.2},
                    "latency_window_s": 60.0, "cpu_percent": 3.5, "cpu_count": 4,
                    "memory_bytes": 50_000_000, "confidence_mean": 0.91},
        "deployment": {"deployment_id": fleet["deployments"][index], "state": "running",
                       "error": None}}, separators=(",", ":")).encode()
    return (f"POST /api/device/v1/heartbeat HTTP/1.1\r\nHost: {host}\r\n"
            f"Authorization: Device bench-credential-{index}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
            ).encode() + body


async def _read_response(reader: asyncio.StreamReader) -> int:
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    status = int(lines[0].split()[1])
    length = 0
    for line in lines[1:]:
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":", 1)[1])
    if length:
        await reader.readexactly(length)
    return status


async def _load(port: int, devices: int, interval_s: float, warmup_s: float, seconds: float,
                connections: int, fleet: dict[str, Any]) -> dict[str, Any]:
    """Open-loop: device i beats at ``start + (i / devices + k) * interval_s``."""
    host = f"127.0.0.1:{port}"
    queue: asyncio.Queue[tuple[float, int, int]] = asyncio.Queue()
    start = time.monotonic() + 0.5
    end = start + warmup_s + seconds
    timed_from = start + warmup_s
    latencies: list[float] = []
    statuses: dict[int, int] = {}
    errors = in_window = 0

    async def schedule() -> None:
        beat = 0
        while True:
            for index in range(devices):
                due = start + (index / devices + beat) * interval_s
                if due >= end:
                    return
                delay = due - time.monotonic()
                if delay > 0:
                    await asyncio.sleep(delay)
                queue.put_nowait((due, index, beat))
            beat += 1

    async def worker() -> None:
        nonlocal errors, in_window
        reader = writer = None
        while True:
            due, index, beat = await queue.get()
            try:
                if writer is None:
                    reader, writer = await asyncio.open_connection("127.0.0.1", port)
                writer.write(_request(index, host, beat, fleet))
                await writer.drain()
                status = await asyncio.wait_for(_read_response(reader), 30)  # type: ignore
            except (TimeoutError, OSError, asyncio.IncompleteReadError, ValueError):
                status = 0
                if writer is not None:
                    writer.close()
                reader = writer = None
            finished = time.monotonic()
            if status == 200 and timed_from <= finished < timed_from + seconds:
                in_window += 1
            if due >= timed_from:
                statuses[status] = statuses.get(status, 0) + 1
                if status == 200:
                    latencies.append((finished - due) * 1000.0)
                else:
                    errors += 1
            queue.task_done()

    workers = [asyncio.create_task(worker()) for _ in range(connections)]
    await schedule()
    try:  # what is still queued or in flight gets a bounded time to finish
        await asyncio.wait_for(queue.join(), timeout=60)
    except TimeoutError:
        errors += queue.qsize()
        statuses[-1] = queue.qsize()  # never sent: the server fell that far behind
    for task in workers:
        task.cancel()
    window = seconds
    def percentile(q: float) -> float | None:
        return round(float(np.percentile(latencies, q)), 1) if latencies else None

    return {"offered_per_s": round(devices / interval_s, 1),
            # answers (200) that came back within the timed window, per second
            "rate_per_s": round(in_window / window, 1),
            "p50_ms": percentile(50), "p99_ms": percentile(99),
            "errors": errors, "statuses": {str(k): v for k, v in sorted(statuses.items())}}


def _run(devices: int, interval_s: float, warmup_s: float, seconds: float, connections: int,
         fast: bool, database_url: str | None) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bench-heartbeats-") as tmp, Stack(
            data_dir=Path(tmp), database_url=database_url if database_url is not None else "",
            extra_env={"SAMPAN_HEARTBEAT_FAST_PATH": "1" if fast else "0",
                       "SAMPAN_DEVICE_HEARTBEAT_INTERVAL_S": str(interval_s)}) as stack:
        stack.start(worker=False)
        result = stack.manage("shell", "-c", CREATE.format(count=devices, runtime=RUNTIME),
                              check=False)
        if result.returncode != 0:
            raise RuntimeError(result.stderr)
        fleet = json.loads(result.stdout.strip().splitlines()[-1])
        figures = asyncio.run(_load(stack.web_port, devices, interval_s, warmup_s, seconds,
                                    connections, fleet))
        if os.environ.get("BENCH_HEARTBEATS_LOG"):
            print(stack.log_tail("web", 4000), file=sys.stderr)
        pid = stack.processes["web"].pid
        figures["web_cpu_s"] = _cpu_seconds(pid)
        return figures


def _cpu_seconds(pid: int) -> float | None:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return round((int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK"), 1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m workers.bench_heartbeats",
                                     description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--devices", type=int, default=10_000)
    parser.add_argument("--interval-s", type=float, default=10.0)
    parser.add_argument("--seconds", type=float, default=30.0, help="timed seconds")
    parser.add_argument("--baseline-s", type=float, default=20.0,
                        help="timed seconds of the baseline (0: skip it)")
    parser.add_argument("--baseline-devices", type=int, default=1000, help=(
        "devices of the baseline run (at 10,000 it answers nothing in the timed window: the "
        "first round's backlog never clears; a tenth of the fleet measures what it sustains)"))
    parser.add_argument("--connections", type=int, default=64)
    parser.add_argument("--database-url", default=None,
                        help="a postgres:// URL (default: the SQLite file of make run)")
    args = parser.parse_args(argv)
    ours = _run(args.devices, args.interval_s, args.interval_s, args.seconds, args.connections,
                True, args.database_url)
    baseline = (_run(args.baseline_devices, args.interval_s, args.interval_s, args.baseline_s,
                     args.connections, False, args.database_url) if args.baseline_s else None)
    if baseline is not None:
        baseline["devices"] = args.baseline_devices
    print(json.dumps({
        "bench": "heartbeats", "devices": args.devices, "interval_s": args.interval_s,
        **ours, "baseline": baseline,
        "rate_ratio": (round(ours["rate_per_s"] / baseline["rate_per_s"], 2)
                       if baseline and baseline["rate_per_s"] else None),
        "database": "postgresql" if args.database_url else "sqlite",
        "cpus": len(os.sched_getaffinity(0)), "load_1m": round(os.getloadavg()[0], 2),
    }, sort_keys=True), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
