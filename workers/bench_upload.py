"""``make bench BENCH=upload``: a large resumable upload into the real web server, and the old
single multipart POST as the baseline, side by side in one run.

On a fresh data folder it starts Redis and the web server exactly as ``make run`` does
(``sampan.devstack.stack``: uvicorn), then:

- Sampan: a ``--bytes`` file (default 2 GiB of random bytes) uploaded with the tus protocol over
  loopback in ``--chunk-mib`` PATCH requests (``sampan.devstack.tus.TusClient``), the connection
  cut once in the middle of a chunk and the upload resumed from the offset the server reports;
  the stored file's sha256 is checked against the source;
- the baseline: ``--baseline-mib`` (default 256 MiB) sent as one multipart POST to the dataset
  import endpoint (``requests``), the path the console used for every file before;
- the old server, when the ``daphne`` package is still installed: ``--daphne-mib`` (default
  64 MiB; never more than a few hundred: daphne holds the whole body in memory, about 13 times
  over, and 2 GiB killed a 24 GB machine) as the same multipart POST to a daphne process serving
  the same application and database.

While each runs, the web process's resident memory is sampled every 10 ms (psutil); the peak
of the whole process life (``VmHWM`` of /proc/<pid>/status) is reported too. Throughput is
bytes / wall seconds from the first request to the last answer, in MB/s (10^6 bytes). Prints one
JSON line ``{"bench": "upload", "bytes", "web_peak_rss_mb", "mb_per_s", "resumed": true,
"baseline": {...}, ...}``; nothing is asserted. The files are deleted at the end.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psutil
import requests

from sampan.devstack.stack import Stack, free_port, wait_until
from sampan.devstack.tus import TusClient

MiB = 1024 * 1024
MB = 1_000_000


def write_random(path: Path, size: int) -> str:
    """``size`` random bytes into ``path``; returns their sha256 hex."""
    digest = hashlib.sha256()
    with open(path, "wb") as handle:
        left = size
        while left:
            block = os.urandom(min(8 * MiB, left))
            digest.update(block)
            handle.write(block)
            left -= len(block)
    return digest.hexdigest()


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(8 * MiB):
            digest.update(block)
    return digest.hexdigest()


def high_water_mark(pid: int) -> int:
    """VmHWM of ``pid``: its peak resident bytes since it started (Linux)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmHWM for pid {pid}")


@contextmanager
def rss_sampler(pid: int, every_s: float = 0.01) -> Iterator[dict[str, int]]:
    """Samples ``pid``'s resident bytes on a thread; yields {"before", "peak"} (bytes)."""
    process = psutil.Process(pid)
    figures = {"before": int(process.memory_info().rss)}
    figures["peak"] = figures["before"]
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            figures["peak"] = max(figures["peak"], int(process.memory_info().rss))
            done.wait(every_s)

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    try:
        yield figures
    finally:
        done.set()
        thread.join()


def measured(pid: int, run: Callable[[], Any]) -> dict[str, Any]:
    with rss_sampler(pid) as rss:
        began = time.perf_counter()
        result = run()
        seconds = time.perf_counter() - began
    return {"result": result, "seconds": seconds, "rss_before": rss["before"],
            "rss_peak": rss["peak"]}


def bench(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    stack = Stack(data_dir=work / "data")
    try:
        stack.start(worker=False)
        user = json.loads(stack.manage("sampan_user", "--username", "bench", "--password",
                                       "bench-Upl0ad-7q").stdout.strip().splitlines()[-1])
        token = user["token"]
        pid = stack.processes["web"].pid
        size = args.bytes
        source = work / "upload.bin"
        sha = write_random(source, size)
        cut = size // 2 + args.chunk_mib * MiB // 3  # inside a chunk, not on its edge
        tus = TusClient(stack.url, token, timeout_s=600)

        def upload() -> str:
            with open(source, "rb") as handle:
                return tus.upload(handle, size, filename="upload.bin",
                                  chunk_bytes=args.chunk_mib * MiB, cuts=(cut,))

        sampan = measured(pid, upload)
        stored = stack.data_dir / "uploads" / (sampan["result"].rstrip("/").rsplit("/", 1)[1]
                                               + ".part")
        sha_ok = file_sha256(stored) == sha
        stored.unlink()
        source.unlink()

        api = requests.Session()
        api.headers["Authorization"] = f"Bearer {token}"
        project = api.post(stack.url + "/api/v1/projects/", json={"name": "bench"}).json()
        p = f"{stack.url}/api/v1/projects/{project['id']}"
        dataset = api.post(p + "/datasets/", json={"name": "bench"}).json()
        base_size = args.baseline_mib * MiB
        base_source = work / "baseline.bin"
        write_random(base_source, base_size)

        def multipart() -> int:
            with open(base_source, "rb") as handle:
                reply = api.post(f"{p}/datasets/{dataset['id']}/imports/",
                                 files={"files": ("baseline.bin", handle)}, timeout=600)
            reply.raise_for_status()
            return reply.status_code

        baseline = measured(pid, multipart)
        base_source.unlink()
        hwm = high_water_mark(pid)
        daphne = old_server(stack, args, work, token, f"{p}/datasets/{dataset['id']}/imports/"
                            .replace(stack.url, ""))
    finally:
        stack.stop()
    return {
        "daphne_baseline": daphne,
        "bench": "upload", "bytes": size, "chunk_bytes": args.chunk_mib * MiB,
        "web_peak_rss_mb": round(sampan["rss_peak"] / MB, 1),
        "web_rss_before_mb": round(sampan["rss_before"] / MB, 1),
        "mb_per_s": round(size / sampan["seconds"] / MB, 1),
        "seconds": round(sampan["seconds"], 2), "resumed": True, "cut_at": cut,
        "sha256_ok": sha_ok, "server": "uvicorn",
        "web_lifetime_peak_rss_mb": round(hwm / MB, 1),
        "baseline": {
            "name": "one multipart POST to .../imports/ (the console's path before tus)",
            "bytes": base_size, "web_peak_rss_mb": round(baseline["rss_peak"] / MB, 1),
            "web_rss_before_mb": round(baseline["rss_before"] / MB, 1),
            "mb_per_s": round(base_size / baseline["seconds"] / MB, 1),
            "seconds": round(baseline["seconds"], 2), "resumable": False},
        "peak_rss_growth_mb": round((sampan["rss_peak"] - sampan["rss_before"]) / MB, 1),
        "baseline_peak_rss_growth_mb": round((baseline["rss_peak"] - baseline["rss_before"])
                                             / MB, 1),
        "throughput_per_baseline": round((size / sampan["seconds"])
                                         / (base_size / baseline["seconds"]), 3),
    }


def old_server(stack: Stack, args: argparse.Namespace, work: Path, token: str,
               imports_path: str) -> dict[str, Any] | None:
    """The multipart POST of ``--daphne-mib`` through daphne (the server before uvicorn), or None
    when daphne is not installed or the size is 0."""
    import importlib.util

    if args.daphne_mib <= 0 or importlib.util.find_spec("daphne") is None:
        return None
    port = free_port()
    process = stack._spawn("daphne", [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p",
                                      str(port), "sampan.asgi:application"])
    url = f"http://127.0.0.1:{port}"
    wait_until(lambda: requests.get(url + "/healthz", timeout=2).ok, timeout_s=60,
               what="daphne")
    size = args.daphne_mib * MiB
    source = work / "daphne.bin"
    write_random(source, size)

    def multipart() -> int:
        with open(source, "rb") as handle:
            reply = requests.post(url + imports_path, files={"files": ("daphne.bin", handle)},
                                  headers={"Authorization": f"Bearer {token}"}, timeout=600)
        reply.raise_for_status()
        return reply.status_code

    run = measured(process.pid, multipart)
    source.unlink()
    return {"name": "the same multipart POST through daphne (the server before uvicorn)",
            "bytes": size, "web_peak_rss_mb": round(run["rss_peak"] / MB, 1),
            "web_rss_before_mb": round(run["rss_before"] / MB, 1),
            "peak_rss_growth_per_body_byte": round((run["rss_peak"] - run["rss_before"]) / size,
                                                   2),
            "mb_per_s": round(size / run["seconds"] / MB, 1)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m workers.bench_upload", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bytes", type=int, default=2 * 1024**3, help="size of the tus upload")
    parser.add_argument("--chunk-mib", type=int, default=64, help="bytes per PATCH, MiB")
    parser.add_argument("--baseline-mib", type=int, default=256,
                        help="size of the multipart baseline, MiB")
    parser.add_argument("--daphne-mib", type=int, default=64,
                        help="size of the daphne baseline, MiB (0: skip; keep it small)")
    parser.add_argument("--work-dir", type=Path, default=None,
                        help="where the data folder and the files go (default: a temporary "
                             "folder); needs about bytes + baseline free, twice over")
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="sampan-bench-upload-", dir=args.work_dir))
    try:
        print(json.dumps(bench(args, work), sort_keys=True))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
