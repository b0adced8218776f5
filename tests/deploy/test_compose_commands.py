"""The commands of docker-compose.yml, run natively on real processes (Docker does not run here).

The one-shot ``migrate`` script, the demo agent's enroll-then-run script, the imports worker's
command line and its health check are taken from docker-compose.yml as the container's shell
would receive them and run against a real Redis and web server (sampan.devstack.stack), in
production settings, on a PostgreSQL database of their own as in compose (SQLite in the data
folder under SAMPAN_TEST_DB=sqlite: tests/database.py). Only paths and the agent's listening
address differ from the containers': files go to a temporary folder instead of the named
volumes, and the agent binds 127.0.0.1 on a free port instead of 0.0.0.0:8700.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import socket
import stat
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import requests
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from sampan.devstack.client import Client
from sampan.devstack.stack import PLATFORM_DIR, REPO_DIR, Stack, wait_until
from tests.database import stack_database_url
from tests.deploy.files import command_argv, load_compose, shell_script
from tests.fixtures.images import png_bytes

pytestmark = pytest.mark.integration

ADMIN_PASSWORD = "compose-admin-Tr4in-Deploy"
BIN_DIR = str(Path(sys.executable).parent)  # python, celery, sampan-agent of this environment


@dataclass
class Deployment:
    stack: Stack
    files: Path
    first_run: subprocess.CompletedProcess[str]

    @property
    def key_file(self) -> Path:
        return self.files / "keys" / "signing-key.pem"

    @property
    def token_file(self) -> Path:
        return self.files / "enroll" / "token"

    def migrate_env(self, admin_password: str) -> dict[str, str]:
        env = self.stack.env()
        env.update(PATH=BIN_DIR + os.pathsep + env.get("PATH", ""),
                   SAMPAN_ADMIN_PASSWORD=admin_password,
                   SAMPAN_DEMO_ENROLLMENT_TOKEN_FILE=str(self.token_file))
        return env

    def run_migrate(self, admin_password: str) -> subprocess.CompletedProcess[str]:
        script = shell_script(load_compose()["services"]["migrate"])
        return subprocess.run(["/bin/sh", "-ec", script], cwd=PLATFORM_DIR,
                              env=self.migrate_env(admin_password), capture_output=True,
                              text=True, timeout=300)

    def login(self, password: str) -> requests.Response:
        return requests.post(self.stack.url + "/api/v1/auth/login/",
                             json={"username": "admin", "password": password}, timeout=10)

    def admin_client(self) -> Client:
        session = requests.Session()
        assert session.post(self.stack.url + "/api/v1/auth/login/", timeout=10, json={
            "username": "admin", "password": ADMIN_PASSWORD}).status_code == 200
        token = session.post(self.stack.url + "/api/v1/auth/tokens/", json={"name": "test"},
                             headers={"X-CSRFToken": session.cookies["csrftoken"]}, timeout=10)
        assert token.status_code == 201, token.text
        return Client(self.stack.url, token.json()["token"])


@pytest.fixture(scope="module")
def deployment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    files = tmp_path_factory.mktemp("compose")
    production = {
        "SAMPAN_ENV": "production",
        "SAMPAN_SECRET_KEY": secrets.token_urlsafe(50),
        "SAMPAN_DEBUG": "false",
        "SAMPAN_ALLOWED_HOSTS": "127.0.0.1,localhost",
        "SAMPAN_SIGNING_KEY_FILE": str(files / "keys" / "signing-key.pem"),
    }
    # production names its database: on a SQLite test run, a SQLite file named by URL
    database_url = stack_database_url() or f"sqlite:///{files}/db.sqlite3"
    with Stack(data_dir=files / "data", database_url=database_url,
               extra_env=production) as stack:
        deployment = Deployment(stack=stack, files=files, first_run=subprocess.CompletedProcess(
            [], 0))
        deployment.first_run = deployment.run_migrate(ADMIN_PASSWORD)
        assert deployment.first_run.returncode == 0, (deployment.first_run.stdout
                                                      + deployment.first_run.stderr)
        stack.start_redis()
        stack.start_web()
        yield deployment


def test_migrate_provisions_the_key_the_admin_and_a_token_and_says_where_to_sign_in(
        deployment: Deployment) -> None:
    out = deployment.first_run.stdout
    assert out.rstrip().splitlines()[-1] == ("Sampan is at http://localhost:8000/ - sign in as "
                                             "admin with the password SAMPAN_ADMIN_PASSWORD "
                                             "from .env")
    assert json.loads(out.splitlines()[-3]) == {"username": "admin", "created": True}
    key = serialization.load_pem_private_key(deployment.key_file.read_bytes(), password=None)
    assert isinstance(key, Ed25519PrivateKey)
    assert stat.S_IMODE(deployment.key_file.stat().st_mode) == 0o600
    assert stat.S_IMODE(deployment.token_file.stat().st_mode) == 0o600
    assert deployment.token_file.read_text().startswith("spe_")
    assert deployment.login(ADMIN_PASSWORD).status_code == 200


def test_migrate_again_keeps_the_admin_password_the_key_and_the_unused_token(
        deployment: Deployment) -> None:
    key, token = deployment.key_file.read_bytes(), deployment.token_file.read_text()
    again = deployment.run_migrate("another-Passw0rd-that-is-ignored")
    assert again.returncode == 0, again.stdout + again.stderr
    lines = again.stdout.rstrip().splitlines()
    assert json.loads(lines[-3]) == {"username": "admin", "created": False}
    assert lines[-1].endswith("sign in as admin with the password it already had "
                              "(SAMPAN_ADMIN_PASSWORD only sets it when the account is created; "
                              "python manage.py changepassword admin changes it)")
    assert json.loads(lines[-2])["reused"] is True
    assert "created the model-signing key" not in again.stdout
    assert deployment.key_file.read_bytes() == key
    assert deployment.token_file.read_text() == token
    assert deployment.login(ADMIN_PASSWORD).status_code == 200
    assert deployment.login("another-Passw0rd-that-is-ignored").status_code == 401


def _start_agent(deployment: Deployment, name: str) -> subprocess.Popen[bytes]:
    stack = deployment.stack
    script = shell_script(load_compose()["services"]["agent"])
    assert "--host 0.0.0.0 --port 8700" in script
    script = script.replace("--host 0.0.0.0 --port 8700",
                            f"--host 127.0.0.1 --port {stack.agent_port}")
    env = {"PATH": BIN_DIR + os.pathsep + os.environ.get("PATH", ""),
           "PYTHONPATH": str(REPO_DIR), "HOME": str(deployment.files),
           "SAMPAN_AGENT_HOME": str(deployment.files / "agent"),
           "SAMPAN_AGENT_SERVER_URL": stack.url,
           "SAMPAN_AGENT_ENROLLMENT_TOKEN_FILE": str(deployment.token_file)}
    log = open(stack.data_dir / "logs" / f"{name}.log", "wb")
    process = subprocess.Popen(["/bin/sh", "-ec", script], cwd=REPO_DIR, env=env, stdout=log,
                               stderr=subprocess.STDOUT, start_new_session=True)
    log.close()

    def healthy() -> bool:
        if process.poll() is not None:
            raise RuntimeError(f"the agent exited: {stack.log_tail(name)}")
        return requests.get(stack.agent_url + "/healthz", timeout=2).status_code == 200

    wait_until(healthy, timeout_s=60, what="the demo agent")
    return process


def _stop(process: subprocess.Popen[bytes]) -> None:
    os.killpg(process.pid, signal.SIGTERM)
    process.wait(timeout=20)


def test_the_demo_agent_enrolls_once_then_restarts_without_a_new_token(
        deployment: Deployment) -> None:
    first = _start_agent(deployment, "agent")
    try:
        client = deployment.admin_client()
        project = next(p for p in client.get("/api/v1/projects/") if p["name"] == "Demo devices")
        devices = client.get(f"/api/v1/projects/{project['id']}/devices/")
        devices = devices["results"] if isinstance(devices, dict) else devices
        assert [d["name"] for d in devices] == ["demo-agent"]
    finally:
        _stop(first)
    # the token is spent: a second enrollment would fail and the script would exit non-zero
    second = _start_agent(deployment, "agent-restarted")
    try:
        assert "enrolled as device" not in deployment.stack.log_tail("agent-restarted", 200)
    finally:
        _stop(second)


def test_the_imports_worker_of_compose_consumes_imports_and_answers_its_health_check(
        deployment: Deployment) -> None:
    services = load_compose()["services"]
    argv = command_argv(services["worker-imports"])
    stack = deployment.stack
    env = stack.env()
    env["PATH"] = BIN_DIR + os.pathsep + env.get("PATH", "")
    log = open(stack.data_dir / "logs" / "worker-imports.log", "wb")
    worker = subprocess.Popen(argv, cwd=PLATFORM_DIR, env=env, stdout=log,
                              stderr=subprocess.STDOUT, start_new_session=True)
    log.close()
    try:
        wait_until(lambda: worker.poll() is None
                   and "ready." in stack.log_tail("worker-imports", 300),
                   timeout_s=120, what="the imports worker")
        check = services["worker-imports"]["healthcheck"]["test"]
        assert check[0] == "CMD-SHELL"
        ping = subprocess.run(["/bin/sh", "-c", check[1].replace("$$", "$")], cwd=PLATFORM_DIR,
                              env={**env, "HOSTNAME": socket.gethostname()},
                              capture_output=True, text=True, timeout=60)
        assert ping.returncode == 0, ping.stdout + ping.stderr

        client = deployment.admin_client()
        project = client.post("/api/v1/projects/", {"name": "Imports via compose"})
        p = f"/api/v1/projects/{project['id']}"
        dataset = client.post(p + "/datasets/", {"name": "colours"})
        archive = deployment.files / "colours.zip"
        with zipfile.ZipFile(archive, "w") as z:
            for label, colour in (("red", (200, 10, 10)), ("blue", (10, 10, 200))):
                for i in range(3):
                    z.writestr(f"{label}/{i}.png", png_bytes(colour, size=(8 + i, 6)))
        job = client.upload(f"{p}/datasets/{dataset['id']}/imports/", [archive])
        done = client.wait_job(f"{p}/imports/{job['id']}/", timeout_s=120)
        assert done["status"] == "SUCCEEDED", done
        assert client.get(f"{p}/datasets/{dataset['id']}/")["sample_count"] == 6
    finally:
        _stop(worker)
