"""The main job and a key rotation on a production-shaped deployment (docker-compose.yml's
topology, every process as if on a host of its own).

Real servers: a PostgreSQL cluster (``tests.fixtures.postgres``), Redis, an S3-compatible store
(moto in server mode behind the credential and presigned-signature checks of a real store,
``tests.fixtures.s3``), the web server (uvicorn), one Celery worker per queue (default, imports,
training, compression), beat and a demo edge agent. Every platform process runs with
``SAMPAN_ENV=production`` and every setting that a real deployment provisions (docs/deploy.md):
a secret key (from a ``_FILE``), allowed hosts, the signing key file, the database URL,
``SAMPAN_STORAGE=s3``. Each process has a ``SAMPAN_DATA_DIR`` of its own (``Stack`` with
``separate_hosts``); the only folder they share is ``secrets/`` (the provisioned secret key and
model-signing key, as every host is given them). The agent gets no platform setting at all: a
device holds no platform secret and reaches the platform and the bucket over HTTP only.

The main job is ``run_main_job`` (import, version, train, register, deploy, predict on the
agent), driven through the REST API as ``make demo`` drives it. Then the model-signing key is
rotated with ``manage.py sampan_signing_key`` while the agent runs, a model trained after the
rotation (signed by the training worker with the new key) and one trained before it are both
deployed, and after the old key is retired the agent refuses what it signed.
"""

from __future__ import annotations

import io
import json
import os
import re
import secrets
import subprocess
import time
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import requests

from sampan.devstack.client import Client
from sampan.devstack.mainjob import (
    SEEDS_DIR,
    agent_serving,
    deploy_and_wait,
    heldout_images,
    run_main_job,
)
from sampan.devstack.stack import Stack, wait_until
from tests.fixtures.postgres import postgres_url
from tests.fixtures.s3 import S3, moto_server

pytestmark = pytest.mark.integration

#: docker-compose.yml's workers: (name, queue, Celery app, pool, concurrency)
WORKERS = [
    ("worker-default", "default", "sampan.celery", "prefork", 2),
    ("worker-imports", "imports", "sampan.celery", "prefork", 2),
    ("worker-training", "training", "workers.app", "solo", 1),
    ("worker-compression", "compression", "workers.app", "solo", 1),
]
#: the platform's processes ("migrate" and "manage" are one-shot manage.py runs on hosts of their
#: own: compose's migrate job and an operator's shell)
PLATFORM_HOSTS = ["migrate", "manage", "web", "beat", *(w[0] for w in WORKERS)]


@dataclass
class Deployment:
    stack: Stack
    client: Client
    s3: S3
    s3_log: Path
    secrets: Path


@pytest.fixture(scope="module")
def deployment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    root = tmp_path_factory.mktemp("production")
    # provisioned secrets, as an operator gives them to every host (docs/deploy.md)
    secrets_dir = root / "secrets"
    secrets_dir.mkdir(mode=0o700)
    key_file = secrets_dir / "signing-key.pem"
    subprocess.run(["openssl", "genpkey", "-algorithm", "ed25519", "-out", str(key_file)],
                   check=True, capture_output=True)
    key_file.chmod(0o600)
    (secrets_dir / "secret-key").write_text(secrets.token_urlsafe(50) + "\n")
    s3_log = root / "s3.log"
    with postgres_url() as database_url, moto_server(log_path=s3_log) as endpoint:
        s3 = S3.start(endpoint)
        platform_env = {
            "SAMPAN_ENV": "production",
            "SAMPAN_SECRET_KEY_FILE": str(secrets_dir / "secret-key"),
            "SAMPAN_ALLOWED_HOSTS": "127.0.0.1,localhost",
            "SAMPAN_SIGNING_KEY_FILE": str(key_file),
            "SAMPAN_DATABASE_URL": database_url,
            **s3.env(),
            "SAMPAN_DEVICE_HEARTBEAT_INTERVAL_S": "1",
        }
        stack = Stack(data_dir=root / "stack", separate_hosts=True,
                      host_env={host: platform_env for host in PLATFORM_HOSTS})
        with stack:
            stack.start_redis()
            stack.migrate()
            # the web image collects static files when it is built (Dockerfile)
            collected = stack.manage("collectstatic", "--noinput", "-v", "0", host="web",
                                     check=False)
            assert collected.returncode == 0, collected.stderr
            stack.start_web()
            stack.start_beat()
            for name, queue, app, pool, concurrency in WORKERS:
                stack.start_worker(name, queue, pool, concurrency, app=app, wait=False)
            for name, *_ in WORKERS:
                stack.wait_worker(name, timeout_s=180)
            user = stack.manage("sampan_user", "--username", "operator", "--password",
                                "production-e2e-password", check=False)
            assert user.returncode == 0, user.stderr
            token = json.loads(user.stdout.strip().splitlines()[-1])["token"]
            yield Deployment(stack, Client(stack.url, token), s3, s3_log, secrets_dir)


def _files(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())


def _manifest(client: Client, p: str, version_id: str) -> dict[str, Any]:
    package = client.get(f"{p}/model-versions/{version_id}/package/")
    with zipfile.ZipFile(io.BytesIO(package)) as archive:
        return json.loads(archive.read("manifest.json"))  # type: ignore[no-any-return]


def test_main_job_and_key_rotation_on_separate_hosts(deployment: Deployment) -> None:
    stack, client, s3 = deployment.stack, deployment.client, deployment.s3
    started = time.monotonic()

    # the web server in production mode: static files from its collected STATIC_ROOT
    docs = requests.get(stack.url + "/api/docs/", timeout=10)
    assert docs.status_code == 200
    css = re.search(r'(/static/[^"]+\.css)', docs.text)
    assert css, docs.text[:500]
    assert requests.get(stack.url + css.group(1), timeout=10).status_code == 200

    # ------------------------------------------------------------------ the main job
    recipe = json.loads((SEEDS_DIR / "demo.json").read_text())
    recipe["budget_s"] = 45  # as test_main_job: see there
    result = run_main_job(stack, client, recipe=recipe, say=lambda m: None)
    print("main job:", {k: result[k] for k in ("edge_accuracy", "report_accuracy",
                                               "train_wall_s", "pretrained", "stages_s")})
    assert result["imported"]["imported"] == 400 and result["imported"]["rejected"] == 0
    assert result["edge_samples"] == 200
    assert result["edge_accuracy"] >= 0.8, result
    first = result["model_version_id"]

    (project,) = client.get("/api/v1/projects/")
    p = f"/api/v1/projects/{project['id']}"
    # the package is a presigned URL on the bucket, not a file the web server reads
    answer = client.session.get(f"{client.base_url}{p}/model-versions/{first}/package/",
                                allow_redirects=False, timeout=30)
    assert answer.status_code == 302, answer.text
    location = answer.headers["Location"]
    assert location.startswith(f"{s3.endpoint_url}/{s3.bucket}/") and "X-Amz-Signature=" in (
        location)
    # the agent (which holds no S3 credential) fetched model.onnx from the bucket itself, with a
    # presigned URL that the store checked
    onnx_gets = [line for line in deployment.s3_log.read_text().splitlines()
                 if "GET /" + s3.bucket + "/" in line and "/model.onnx?" in line
                 and "X-Amz-Signature=" in line]
    assert onnx_gets and all('" 200 ' in line or '" 206 ' in line for line in onnx_gets), (
        onnx_gets)
    assert any(key.endswith("/model.onnx") for key in s3.keys())

    # nothing shared on disk: the web host holds its collected static files only (no sample,
    # upload, package or model), no host keeps an import, a training artifact or a package; the
    # training host keeps its cache of sample files (downloaded once from the bucket)
    hosts = stack.data_dir / "hosts"
    web_files = _files(hosts / "web")
    assert web_files and all(f.startswith("static/") for f in web_files), (
        [f for f in web_files if not f.startswith("static/")][:20])
    allowed = {"web": ("static/",), "beat": ("celerybeat-schedule",),
               "worker-training": ("cache/samples/",)}
    for host in PLATFORM_HOSTS:
        leftovers = [f for f in _files(hosts / host) if not f.startswith(allowed.get(host, ()))]
        assert not leftovers, (host, leftovers[:20])
    assert any(f.endswith(".png") for f in _files(hosts / "worker-training" / "cache"))
    assert not (hosts / "manage" / "keys").exists()  # no host made a key of its own

    # ------------------------------------------------------------------ key rotation
    (device,) = client.get(f"{p}/devices/")

    def deploy(version_id: str) -> dict[str, Any]:
        return deploy_and_wait(client, p, version_id, device["id"], timeout_s=90)

    def serving() -> str | None:
        return agent_serving(stack)

    def predicts() -> None:
        label, image = heldout_images(SEEDS_DIR / recipe["heldout_dir"])[0]
        answer = requests.post(stack.agent_url + "/v1/predict", data=image.read_bytes(),
                               timeout=10)
        assert answer.status_code == 200 and answer.json()["predictions"], answer.text

    def signing_key(*args: str) -> Any:
        done = stack.manage("sampan_signing_key", *args, check=False)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout.strip().splitlines()[-1])

    def trusted_by_agent() -> list[str]:
        return json.loads((stack.agent_home / "agent.json").read_text())["trusted_signing_keys"]

    old_key = _manifest(client, p, first)["signature"]["key_id"]
    rotated = signing_key("rotate")  # on an operator's host; writes the shared key file
    assert rotated["previous"] == old_key
    new_key = rotated["active"]
    assert new_key != old_key

    # train again on the same version: the training worker signs with the rotated key file
    job_id = client.get(f"{p}/model-versions/{first}/")["training_job_id"]
    dataset_version = client.get(f"{p}/training-jobs/{job_id}/")["dataset_version_id"]
    job = client.post(f"{p}/training-jobs/", {"dataset_version_id": dataset_version,
                                             "budget_s": 25, "seed": 1})
    job = client.wait_job(f"{p}/training-jobs/{job['id']}/", timeout_s=25 * 1.1 + 120)
    assert job["status"] == "SUCCEEDED", job["error"]
    second = job["model_version_id"]
    assert _manifest(client, p, second)["signature"]["key_id"] == new_key

    # signed after the rotation: the running agent learnt the new key from a heartbeat
    assert deploy(second)["state"] == "running" and serving() == second
    predicts()
    assert len(trusted_by_agent()) == 2
    # signed before the rotation: still installs
    assert deploy(first)["state"] == "running" and serving() == first
    predicts()

    # retire the old key: the agent drops it and refuses what it signed, and keeps serving
    assert deploy(second)["state"] == "running"
    assert signing_key("retire", old_key)["retired"] == old_key
    wait_until(lambda: len(trusted_by_agent()) == 1, timeout_s=30,
               what="the agent to drop the retired key")
    refused = deploy(first)
    assert refused["state"] == "failed"
    assert f"signed by another key ('{old_key}')" in refused["error"]
    assert serving() == second
    predicts()

    # every process is still up
    for name, process in stack.processes.items():
        assert process.poll() is None, (name, stack.log_tail(name))
    print(f"production topology: {time.monotonic() - started:.0f} s after start-up, "
          f"stages {result['stages_s']}")
    print("secrets:", sorted(os.listdir(deployment.secrets)))
