"""Uploads against the real web server process (uvicorn): body limits answered before the body is
read, resumable (tus) uploads that survive cut connections, duplicate and out-of-order chunks,
ownership, the import of a finished upload, and the web process's memory while bytes stream in.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import select
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
import requests

from sampan.devstack.client import ApiError, Client
from sampan.devstack.mainjob import SEEDS_DIR, zip_folder
from sampan.devstack.stack import Stack, wait_until
from tests.database import stack_database_url
from sampan.devstack.tus import TusClient, TusError
from tests.e2e.conftest import JobSocket

MiB = 1024 * 1024
GiB = 1024 * MiB
MULTIPART_LIMIT = 16 * MiB  # small, so that a chunked body passes it quickly


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """Redis, the web server and a worker for imports; the default upload limit (2 GiB)."""
    with Stack(data_dir=tmp_path_factory.mktemp("uploads"), database_url=stack_database_url(),
               extra_env={"SAMPAN_MULTIPART_MAX_BYTES": str(MULTIPART_LIMIT)}) as s:
        s.start(worker=False)
        s.start_worker("worker-default", queues="default,imports", pool="threads",
                       concurrency=2)
        yield s


def _user(stack: Stack, name: str) -> dict[str, Any]:
    # a password Django's validators accept (not the user name, not common, 8+ characters)
    return json.loads(stack.manage("sampan_user", "--username", name, "--password",
                                   f"tus-{name}-Upl0ads-7q"
                                   ).stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def alice(stack: Stack) -> dict[str, Any]:
    return _user(stack, "alice")


@pytest.fixture(scope="module")
def bob(stack: Stack) -> dict[str, Any]:
    return _user(stack, "bob")


@pytest.fixture(scope="module")
def dataset(stack: Stack, alice: dict[str, Any]) -> dict[str, Any]:
    api = Client(stack.url, alice["token"])
    project = api.post("/api/v1/projects/", {"name": "uploads"})
    p = f"/api/v1/projects/{project['id']}"
    return {"p": p, **api.post(p + "/datasets/", {"name": "digits"})}


def web_rss(stack: Stack) -> int:
    """Resident bytes of the web server process."""
    return int(psutil.Process(stack.processes["web"].pid).memory_info().rss)


def read_response(sock: socket.socket, timeout_s: float = 10.0) -> tuple[int, dict[str, str],
                                                                         bytes]:
    """Read an HTTP/1.1 response with a Content-Length from ``sock``."""
    sock.settimeout(timeout_s)
    data = b""
    while b"\r\n\r\n" not in data:
        part = sock.recv(65536)
        if not part:
            break
        data += part
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, _, v in (x.partition(":") for x in lines[1:])}
    while len(body) < int(headers.get("content-length", 0)):
        part = sock.recv(65536)
        if not part:
            break
        body += part
    return int(lines[0].split()[1]), headers, body


def file_of(size: int, path: Path) -> tuple[Path, str]:
    """``size`` random bytes in ``path``; returns (path, sha256 hex)."""
    digest = hashlib.sha256()
    with open(path, "wb") as handle:
        left = size
        while left:
            block = os.urandom(min(4 * MiB, left))
            digest.update(block)
            handle.write(block)
            left -= len(block)
    return path, digest.hexdigest()


def resume(tus: TusClient, path: str, handle: Any, offset: int, length: int,
           **options: Any) -> int | None:
    """PATCH from ``offset``; a 423 (the server still closing the cut request's file) is retried
    for a few seconds, as tus clients do."""
    deadline = time.monotonic() + 10
    while True:
        handle.seek(offset)
        try:
            return tus.patch(path, offset, handle, length, **options)
        except TusError as error:
            if error.status != 423 or time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def stored(stack: Stack, upload_path: str) -> Path:
    return stack.data_dir / "uploads" / f"{upload_path.rstrip('/').rsplit('/', 1)[1]}.part"


@pytest.mark.parametrize("method,target", [
    ("PATCH", "upload"), ("POST", "imports"), ("POST", "/api/v1/projects/")])
def test_a_10_gib_declared_body_is_refused_at_once_and_never_read(
        stack: Stack, alice: dict[str, Any], dataset: dict[str, Any], method: str,
        target: str) -> None:
    limits = {"upload": 2 * GiB, "imports": MULTIPART_LIMIT, "/api/v1/projects/": 64 * MiB}
    path = {"upload": lambda: TusClient(stack.url, alice["token"]).create(10),
            "imports": lambda: f"{dataset['p']}/datasets/{dataset['id']}/imports/",
            "/api/v1/projects/": lambda: target}[target]()
    before = web_rss(stack)
    with socket.create_connection(("127.0.0.1", stack.web_port)) as sock:
        began = time.monotonic()
        sock.sendall(
            f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {10 * GiB}\r\n"
            f"Authorization: Bearer {alice['token']}\r\nTus-Resumable: 1.0.0\r\n"
            "Upload-Offset: 0\r\nContent-Type: application/offset+octet-stream\r\n\r\n".encode()
            + b"\0" * 65536)
        status, headers, body = read_response(sock)
        elapsed = time.monotonic() - began
    assert status == 413, body
    assert json.loads(body) == {"error": {
        "code": "too_large", "message": f"request body is too large: the limit is "
                                        f"{limits[target]} bytes",
        "details": {"limit_bytes": limits[target]}}}
    assert headers["connection"] == "close"
    assert elapsed < 5.0
    assert web_rss(stack) - before < 16 * MiB


def test_a_chunked_body_without_length_is_refused_once_over_the_limit(
        stack: Stack, alice: dict[str, Any], dataset: dict[str, Any]) -> None:
    block = b"x" * MiB
    sent = 0
    with socket.create_connection(("127.0.0.1", stack.web_port)) as sock:
        sock.sendall(
            f"POST {dataset['p']}/datasets/{dataset['id']}/imports/ HTTP/1.1\r\n"
            f"Host: 127.0.0.1\r\nAuthorization: Bearer {alice['token']}\r\n"
            "Content-Type: multipart/form-data; boundary=b\r\n"
            "Transfer-Encoding: chunked\r\n\r\n".encode())
        for _ in range(128):  # 128 MiB offered; the limit is 16 MiB
            try:
                sock.sendall(f"{len(block):x}\r\n".encode() + block + b"\r\n")
            except (BrokenPipeError, ConnectionResetError):
                break
            sent += len(block)
            if select.select([sock], [], [], 0.02)[0]:
                break
        status, _, body = read_response(sock)
    assert status == 413, body
    assert json.loads(body)["error"]["details"] == {"limit_bytes": MULTIPART_LIMIT}
    assert sent < 48 * MiB  # answered while the client was still sending


@pytest.mark.parametrize("credentials", ["", "Authorization: Bearer not-a-token\r\n"],
                         ids=["anonymous", "wrong-token"])
def test_a_large_body_without_valid_credentials_is_refused_before_it_is_read(
        stack: Stack, dataset: dict[str, Any], credentials: str) -> None:
    # Django's ASGI handler spools a whole body to disk before a view checks who sent it: an
    # anonymous 1 GiB multipart POST would be written out. It is refused from its headers: the
    # answer comes while 64 KiB of the declared ~1 GiB have been sent (Django would wait for all).
    with socket.create_connection(("127.0.0.1", stack.web_port)) as sock:
        began = time.monotonic()
        sock.sendall(
            f"POST {dataset['p']}/datasets/{dataset['id']}/imports/ HTTP/1.1\r\n"
            f"Host: 127.0.0.1\r\nContent-Length: {MULTIPART_LIMIT - 1}\r\n{credentials}"
            "Content-Type: multipart/form-data; boundary=b\r\n\r\n".encode() + b"\0" * 65536)
        status, headers, body = read_response(sock)
        elapsed = time.monotonic() - began
    error = json.loads(body)["error"]
    assert status == 401, body
    assert error["code"] == ("authentication_failed" if credentials else "not_authenticated")
    assert error["message"].endswith(
        "a request body of more than 1048576 bytes is read only from a signed-in user")
    assert headers["connection"] == "close" and elapsed < 5.0


def test_a_small_anonymous_body_still_gets_the_apis_own_answer(
        stack: Stack, dataset: dict[str, Any]) -> None:
    response = requests.post(f"{stack.url}/api/v1/auth/login/",
                             json={"username": "nobody", "password": "x"}, timeout=10)
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "authentication_failed"


def test_an_upload_cut_mid_chunk_twice_resumes_and_completes_intact(
        stack: Stack, alice: dict[str, Any], tmp_path: Path) -> None:
    source, sha = file_of(40 * MiB, tmp_path / "blob.bin")
    tus = TusClient(stack.url, alice["token"])
    path = tus.create(40 * MiB, "blob.bin")
    with open(source, "rb") as handle:
        assert tus.patch(path, 0, handle, 16 * MiB) == 16 * MiB
        handle.seek(16 * MiB)
        assert tus.patch(path, 16 * MiB, handle, 16 * MiB, cut_after=5 * MiB + 123) is None
        first_cut = 21 * MiB + 123
        wait_until(lambda: tus.offset(path) == first_cut, timeout_s=20,
                   what="the server to keep the bytes of the cut PATCH")
        resume(tus, path, handle, first_cut, 40 * MiB - first_cut, cut_after=7 * MiB + 1)
        second_cut = first_cut + 7 * MiB + 1
        wait_until(lambda: tus.offset(path) == second_cut, timeout_s=20,
                   what="the server to keep the bytes of the second cut PATCH")
        assert resume(tus, path, handle, second_cut, 40 * MiB - second_cut) == 40 * MiB
    assert tus.offset(path) == 40 * MiB
    data = stored(stack, path).read_bytes()
    assert len(data) == 40 * MiB and hashlib.sha256(data).hexdigest() == sha


def test_a_chunk_sent_twice_is_409_with_the_offset_and_the_file_stays_intact(
        stack: Stack, alice: dict[str, Any]) -> None:
    a, b = os.urandom(256 * 1024), os.urandom(256 * 1024)
    tus = TusClient(stack.url, alice["token"])
    path = tus.create(3 * 256 * 1024)
    assert tus.patch(path, 0, io.BytesIO(a), len(a)) == len(a)
    assert tus.patch(path, len(a), io.BytesIO(b), len(b)) == 2 * len(a)
    with pytest.raises(TusError) as again:
        tus.patch(path, len(a), io.BytesIO(b), len(b))
    assert again.value.status == 409
    assert again.value.headers["upload-offset"] == str(2 * len(a))
    assert again.value.body["error"]["code"] == "offset_mismatch"
    assert again.value.body["error"]["details"] == {"offset": 2 * len(a)}
    assert stored(stack, path).read_bytes() == a + b


def test_chunks_out_of_order_are_409_and_nothing_is_written(
        stack: Stack, alice: dict[str, Any]) -> None:
    parts = [os.urandom(128 * 1024) for _ in range(3)]
    tus = TusClient(stack.url, alice["token"])
    path = tus.create(3 * 128 * 1024)
    with pytest.raises(TusError) as early:
        tus.patch(path, 2 * 128 * 1024, io.BytesIO(parts[2]), 128 * 1024)
    assert early.value.status == 409 and early.value.body["error"]["details"] == {"offset": 0}
    assert stored(stack, path).stat().st_size == 0
    assert tus.patch(path, 0, io.BytesIO(parts[0]), 128 * 1024) == 128 * 1024
    with pytest.raises(TusError) as skipped:
        tus.patch(path, 2 * 128 * 1024, io.BytesIO(parts[2]), 128 * 1024)
    assert skipped.value.status == 409
    assert skipped.value.body["error"]["details"] == {"offset": 128 * 1024}
    assert stored(stack, path).read_bytes() == parts[0]


def test_another_user_cannot_see_write_or_delete_my_upload(
        stack: Stack, alice: dict[str, Any], bob: dict[str, Any]) -> None:
    mine = TusClient(stack.url, alice["token"])
    path = mine.create(1024, "mine.bin")
    assert mine.patch(path, 0, io.BytesIO(b"a" * 512), 512) == 512
    theirs = TusClient(stack.url, bob["token"])
    assert theirs.request("HEAD", path)[0] == 404
    with pytest.raises(TusError) as patched:
        theirs.patch(path, 512, io.BytesIO(b"b" * 512), 512)
    assert patched.value.status == 404
    assert patched.value.body["error"]["code"] == "not_found"
    assert theirs.request("DELETE", path)[0] == 404
    anonymous = TusClient(stack.url, None)
    status, headers, body = anonymous.request("DELETE", path)
    assert status == 401 and body["error"]["code"] == "not_authenticated"
    assert headers["www-authenticate"] == "Bearer"
    assert mine.offset(path) == 512
    assert stored(stack, path).read_bytes() == b"a" * 512
    # an import may not take it either
    bob_api = Client(stack.url, bob["token"])
    project = bob_api.post("/api/v1/projects/", {"name": "bob's"})
    p = f"/api/v1/projects/{project['id']}"
    bob_dataset = bob_api.post(p + "/datasets/", {"name": "d"})
    with pytest.raises(ApiError) as taken:
        bob_api.post(f"{p}/datasets/{bob_dataset['id']}/imports/",
                     {"upload_id": path.rstrip("/").rsplit("/", 1)[1]})
    assert taken.value.status_code == 404 and taken.value.body["error"]["field"] == "upload_id"


def test_protocol_answers(stack: Stack, alice: dict[str, Any]) -> None:
    tus = TusClient(stack.url, alice["token"])
    status, headers, _ = tus.request("OPTIONS", "/api/v1/uploads/")
    assert status == 204
    assert (headers["tus-version"], headers["tus-max-size"], headers["tus-extension"]) == (
        "1.0.0", str(2 * GiB), "creation,termination,expiration")
    with pytest.raises(TusError) as big:
        tus.create(2 * GiB + 1)
    assert big.value.status == 413
    assert big.value.body["error"]["details"] == {"limit_bytes": 2 * GiB}
    assert big.value.body["error"]["field"] == "Upload-Length"
    status, _, body = tus.request("POST", "/api/v1/uploads/")
    assert status == 400 and body["error"]["field"] == "Upload-Length"
    old = TusClient(stack.url, alice["token"])
    status, headers, body = old.request("POST", "/api/v1/uploads/", {
        "Upload-Length": "10", "Tus-Resumable": "0.2.2"})
    assert status == 412 and headers["tus-version"] == "1.0.0"
    path = tus.create(10)
    status, _, body = tus.request("PATCH", path, {"Upload-Offset": "0",
                                                  "Content-Type": "text/plain"}, b"0123456789")
    assert status == 415 and body["error"]["field"] == "Content-Type"
    status, headers, _ = tus.request("PATCH", path, {
        "Upload-Offset": "0", "Content-Type": "application/offset+octet-stream"},
        b"0123456789" + b"past the end")
    assert status == 413
    assert tus.request("DELETE", path)[0] == 204
    assert not stored(stack, path).exists()
    assert tus.request("HEAD", path)[0] == 404


def test_an_import_from_a_finished_upload_imports_the_images(
        stack: Stack, alice: dict[str, Any], dataset: dict[str, Any], tmp_path: Path) -> None:
    archive = zip_folder(SEEDS_DIR / "mnist" / "train", tmp_path / "digits.zip")
    images = len([p for p in (SEEDS_DIR / "mnist" / "train").rglob("*") if p.is_file()])
    size = archive.stat().st_size
    tus = TusClient(stack.url, alice["token"])
    with open(archive, "rb") as handle:
        path = tus.upload(handle, size, filename="digits.zip", chunk_bytes=256 * 1024,
                          cuts=(size // 2 + 17,))
    upload_id = path.rstrip("/").rsplit("/", 1)[1]
    api = Client(stack.url, alice["token"])
    imports = f"{dataset['p']}/datasets/{dataset['id']}/imports/"
    job = api.post(imports, {"upload_id": upload_id})
    assert not stored(stack, path).exists()  # moved to the import, not copied
    socket_ = JobSocket(stack, "alice", "tus-alice-Upl0ads-7q", "import", job["id"])  # on uvicorn
    assert socket_.snapshot["status"] in ("QUEUED", "RUNNING", "SUCCEEDED")
    done = api.wait_job(f"{dataset['p']}/imports/{job['id']}/", timeout_s=120)
    socket_.close()
    assert done["status"] == "SUCCEEDED", done
    assert done["report"]["counts"] == {"imported": images, "duplicates": 0, "ignored": 0,
                                        "rejected": 0}
    labels = api.get(f"{dataset['p']}/datasets/{dataset['id']}/")["class_labels"]
    assert [c["name"] for c in labels] == [str(d) for d in range(10)]
    with pytest.raises(ApiError) as again:
        api.post(imports, {"upload_id": upload_id})
    assert again.value.status_code == 409


def test_the_web_process_stays_small_while_a_large_chunk_streams_in(
        stack: Stack, alice: dict[str, Any], tmp_path: Path) -> None:
    size = 160 * MiB
    source, sha = file_of(size, tmp_path / "large.bin")
    before = web_rss(stack)
    peak = [before]
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], web_rss(stack))
            done.wait(0.01)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    tus = TusClient(stack.url, alice["token"])
    path = tus.create(size, "large.bin")
    try:
        with open(source, "rb") as handle:
            assert tus.patch(path, 0, handle, size) == size  # ONE request of 160 MiB
    finally:
        done.set()
        sampler.join()
    assert peak[0] < 300 * MiB, f"web peak RSS {peak[0] / MiB:.0f} MiB"
    assert peak[0] - before < 48 * MiB, (before / MiB, peak[0] / MiB)
    digest = hashlib.sha256()
    with open(stored(stack, path), "rb") as handle:
        while block := handle.read(4 * MiB):
            digest.update(block)
    assert digest.hexdigest() == sha
