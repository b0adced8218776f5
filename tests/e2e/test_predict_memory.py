"""Fifty 40-megapixel predictions at once against the real web server process (uvicorn, as
production runs it): the process's peak memory stays within its inference slots' worth.

A PNG of one colour, 8000 x 5000 px (the largest the one image rule decodes: ``MAX_PIXELS``),
is ~120 kB on the wire and 160 MB decoded (Pillow keeps RGB in 4 bytes a pixel). Unbounded,
fifty at once would need several GB in one web process; ``SAMPAN_PREDICT_CONCURRENCY`` (2)
run at once and the rest wait ``SAMPAN_PREDICT_WAIT_S``, then get 429 with ``Retry-After``.
The peak is read from the kernel (``VmHWM`` of ``/proc/<pid>/status``, the resident
high-water mark), not estimated.
"""

from __future__ import annotations

import io
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from edge_agent.imaging import MAX_PIXELS
from sampan.devstack.stack import Stack
from tests.database import stack_database_url

REQUESTS = 50
CONCURRENCY = 2
#: what one prediction of a 40 MP image may hold at its peak: 160 MB decoded (Pillow's RGB is 4
#: bytes a pixel) and the resize's small working copies; one prediction alone measured +152 MB.
#: Before: the decode copied the image twice (Pillow's close() and exif_transpose) and freed
#: images stayed in glibc's per-thread arenas (sampan.core.memory): +1,137 MB for this test
PER_PREDICTION_MB = 250
SEED = r'''
import json
from pathlib import Path
from sampan.accounts.services import api_token_create, project_create, user_create
from sampan.registry.services import model_version_register
from tests.platform.training.test_training_services import tiny_onnx
user = user_create(username="mem", password="pw-mem-1")
project = project_create(user=user, name="memory")
version = model_version_register(
    project=project, model_name="m", task_type="image_classification", labels=["a", "b"],
    preprocessing={"size": [4, 4], "resize": "stretch", "mean": [0.5] * 3, "std": [0.5] * 3,
                   "colour_order": "RGB", "layout": "NCHW", "dtype": "float32"},
    onnx_path=tiny_onnx(Path(TMP) / "m.onnx"), input_shape=["N", 3, 4, 4], metrics={},
    lineage={}, onnx_info={"opset": 18, "ir_version": 9}, pretrained=False)
print(json.dumps({"token": api_token_create(user=user, name="t").secret,
                  "project": str(project.pk), "version": str(version.pk)}))
'''


def resident_mb(pid: int, field: str) -> float:
    """``VmRSS`` (now) or ``VmHWM`` (peak) of a process, in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024.0
    raise AssertionError(f"no {field} in /proc/{pid}/status")


def big_png() -> bytes:
    from PIL import Image

    width, height = 8000, MAX_PIXELS // 8000
    buffer = io.BytesIO()
    Image.new("RGB", (width, height), (40, 120, 200)).save(buffer, format="PNG")
    return buffer.getvalue()


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Stack, dict[str, Any]]]:
    root = tmp_path_factory.mktemp("predict-memory")
    with Stack(data_dir=root, database_url=stack_database_url(),
               extra_env={"SAMPAN_PREDICT_CONCURRENCY": str(CONCURRENCY),
                          "SAMPAN_PREDICT_WAIT_S": "5"}) as stack:
        stack.start(worker=False)
        seed = SEED.replace("TMP", repr(str(root)))
        seeded = json.loads(stack.manage("shell", "-c", seed).stdout.strip().splitlines()[-1])
        yield stack, seeded


def test_fifty_40_megapixel_predictions_at_once_stay_within_the_slots_memory(
        served: tuple[Stack, dict[str, Any]]) -> None:
    stack, seeded = served
    data = big_png()
    assert len(data) < 1_000_000  # small on the wire, 40 MP decoded
    url = (f"{stack.url}/api/v1/projects/{seeded['project']}/model-versions/"
           f"{seeded['version']}/predict/")
    headers = {"Authorization": f"Bearer {seeded['token']}"}
    # one prediction first: the model is loaded and the process's baseline includes it
    first = requests.post(url, headers=headers, files={"file": ("big.png", data)}, timeout=120)
    assert first.status_code == 200, first.text
    pid = stack.processes["web"].pid
    before = resident_mb(pid, "VmRSS")


    answers: list[requests.Response | BaseException] = []
    start = threading.Barrier(REQUESTS)

    def send() -> None:
        start.wait()
        try:
            answers.append(requests.post(url, headers=headers,
                                         files={"file": ("big.png", data)}, timeout=300))
        except requests.RequestException as error:
            answers.append(error)

    threads = [threading.Thread(target=send) for _ in range(REQUESTS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=400)
    peak = resident_mb(pid, "VmHWM")

    assert stack.processes["web"].poll() is None, stack.log_tail("web")
    statuses = sorted(a.status_code if isinstance(a, requests.Response) else repr(a)
                      for a in answers)
    assert len(statuses) == REQUESTS and set(statuses) <= {200, 429}, statuses
    assert statuses.count(200) >= CONCURRENCY, statuses
    for answer in answers:
        assert isinstance(answer, requests.Response)
        if answer.status_code == 429:
            assert answer.headers["Retry-After"] == "1"
            assert answer.json()["error"]["code"] == "busy"
        else:
            assert answer.json()["predictions"][0]["label"] in {"a", "b"}
    grown = peak - before
    print(f"web process: {before:.0f} MB before, peak {peak:.0f} MB (+{grown:.0f} MB) for "
          f"{REQUESTS} requests of {MAX_PIXELS / 1e6:.0f} MP; {statuses.count(200)} answered, "
          f"{statuses.count(429)} told to retry")
    assert grown <= CONCURRENCY * PER_PREDICTION_MB, (before, peak)
    # the process is still useful afterwards
    assert requests.get(stack.url + "/healthz", timeout=10).status_code == 200
