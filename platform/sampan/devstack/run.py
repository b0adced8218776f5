"""``make run``: the platform on embedded defaults, with the demo project loaded.

Migrates, starts Redis (embedded), the web server, one Celery worker and one local edge agent
enrolled as a device, imports the seed dataset into a "Digits demo" project (once), prints the URL
and a login, restarts a process that dies (sampan.devstack.supervise) and stops everything it
started on Ctrl-C. The admin account is created once with ``SAMPAN_ADMIN_PASSWORD`` (default
``sampan-dev``); later starts leave its password as it is.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from sampan.devstack.client import Client
from sampan.devstack.localagents import LocalAgents
from sampan.devstack.mainjob import SEEDS_DIR, zip_folder
from sampan.devstack.stack import REPO_DIR, Stack
from sampan.devstack.supervise import Supervisor


def load_demo_project(client: Client, recipe: dict[str, str]) -> dict[str, str]:
    """Create the demo project and import the seed dataset, unless it exists already."""
    for project in client.get("/api/v1/projects/"):
        if project["name"] == recipe["project"]:
            return project
    project = client.post("/api/v1/projects/", {"name": recipe["project"]})
    p = f"/api/v1/projects/{project['id']}"
    dataset = client.post(p + "/datasets/", {"name": recipe["dataset"]})
    with tempfile.TemporaryDirectory() as tmp:
        archive = zip_folder(SEEDS_DIR / recipe["train_dir"], Path(tmp) / "digits.zip")
        job = client.upload(f"{p}/datasets/{dataset['id']}/imports/", [archive])
    client.wait_job(f"{p}/imports/{job['id']}/", timeout_s=300)
    return project


def ensure_admin(stack: Stack, username: str, password: str) -> dict[str, Any]:
    """The admin account: created with ``password`` on the first start, its password left as it
    is on later ones. Returns ``sampan_user``'s JSON (``token``, ``created``, ...).

    Raises:
        RuntimeError: ``sampan_user`` refused (e.g. a password the validators reject).
    """
    result = stack.manage("sampan_user", "--username", username, "--password", password,
                          "--superuser", "--token-name", "make-run", "--replace-token",
                          check=False)
    if result.returncode != 0:
        raise RuntimeError(f"cannot set up the {username!r} account: {result.stderr.strip()}")
    user: dict[str, Any] = json.loads(result.stdout.strip().splitlines()[-1])
    return user


def lan_address() -> str | None:
    """This machine's address on its network: the source address of a route to a private
    address (a UDP "connect" sends nothing), or None without such a route."""
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("10.255.255.255", 1))
            address: str = probe.getsockname()[0]
        except OSError:
            return None
    return None if address.startswith("127.") or address == "0.0.0.0" else address


def network_env(host: str, port: int, environ: dict[str, str]) -> dict[str, str]:
    """Settings for a web server listening on ``host`` beyond loopback: the URL devices use
    (``SAMPAN_PUBLIC_URL``: ``http://<LAN address>:<port>``), and that address and this host's
    name in ``SAMPAN_ALLOWED_HOSTS`` and ``SAMPAN_CSRF_TRUSTED_ORIGINS``. A variable already
    set in ``environ`` is left as it is. Empty for a loopback ``host``."""
    import socket

    if host in ("127.0.0.1", "localhost", "::1"):
        return {}
    from urllib.parse import urlsplit

    address = host if host not in ("0.0.0.0", "::") else lan_address()
    names = [n for n in dict.fromkeys([address, socket.gethostname(), "127.0.0.1", "localhost"])
             if n]
    origins = [f"http://{n}:{port}" for n in names]
    env: dict[str, str] = {}
    public = environ.get("SAMPAN_PUBLIC_URL", "").strip().rstrip("/")
    if public:
        # the operator's URL: devices and browsers come by its host name
        parts = urlsplit(public)
        if parts.hostname:
            names.insert(0, parts.hostname)
            origins.insert(0, f"{parts.scheme}://{parts.netloc}")
    elif address:
        env["SAMPAN_PUBLIC_URL"] = f"http://{address}:{port}"
    if "SAMPAN_ALLOWED_HOSTS" not in environ:
        env["SAMPAN_ALLOWED_HOSTS"] = ",".join(dict.fromkeys(names))
    if "SAMPAN_CSRF_TRUSTED_ORIGINS" not in environ:
        env["SAMPAN_CSRF_TRUSTED_ORIGINS"] = ",".join(dict.fromkeys(origins))
    return env


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, default=int(os.environ.get("SAMPAN_PORT", "8000")))
    parser.add_argument("--host", default=os.environ.get("SAMPAN_HOST", "127.0.0.1"),
                        help="address the web server listens on; 0.0.0.0 lets devices on the "
                             "network reach it (make run HOST=0.0.0.0)")
    parser.add_argument("--agent-port", type=int,
                        default=int(os.environ.get("SAMPAN_AGENT_PORT", "8700")))
    parser.add_argument("--data-dir", default=os.environ.get("SAMPAN_DATA_DIR",
                                                             str(REPO_DIR / "var")))
    parser.add_argument("--username", default="admin")
    parser.add_argument("--password", default=os.environ.get("SAMPAN_ADMIN_PASSWORD", "sampan-dev"),
                        help="the admin's password when the account is created (never reset)")
    args = parser.parse_args(argv)

    network = network_env(args.host, args.port, dict(os.environ))
    # "use this machine as a device": the web process leaves requests here, the loop below
    # enrolls and starts those agents (sampan.fleet.local)
    # (SAMPAN_LOCAL_AGENTS_DIR= turns it off)
    local_dir = os.environ.get("SAMPAN_LOCAL_AGENTS_DIR",
                               str(Path(args.data_dir).resolve() / "local-agents")).strip()
    network["SAMPAN_LOCAL_AGENTS_DIR"] = local_dir
    stack = Stack(data_dir=Path(args.data_dir), web_port=args.port, agent_port=args.agent_port,
                  web_host=args.host, extra_env=network)
    stopping = {"flag": False}

    def on_signal(signum: int, frame: object) -> None:
        stopping["flag"] = True

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    try:
        print("starting Redis, web server and worker ...", flush=True)
        stack.start()
        user = ensure_admin(stack, args.username, args.password)
        client = Client(stack.url, user["token"])
        recipe = json.loads((SEEDS_DIR / "demo.json").read_text())
        print("loading the demo project ...", flush=True)
        project = load_demo_project(client, recipe)
        if not (stack.agent_home / "agent.json").exists():  # enrolled once, then reused
            token = client.post(f"/api/v1/projects/{project['id']}/enrollment-tokens/",
                                {"note": "local agent (make run)"})
            stack.enroll_agent(token["token"])
        stack.start_agent()
        login = (f"{args.username} / {args.password}" if user["created"] else
                 f"{args.username} (existing account, password unchanged; "
                 f"`manage.py changepassword {args.username}` changes it)")
        public = network.get("SAMPAN_PUBLIC_URL") or os.environ.get("SAMPAN_PUBLIC_URL")
        if public:
            print(f"\nDevices on the network enroll with --url {public}", flush=True)
        print(f"\nSampan is running at {stack.url}/\n  login: {login}\n"
              f"  API token: {user['token']}\n  API docs: {stack.url}/api/docs/\n"
              f"  local edge agent: {stack.agent_url}/healthz\n  data: {stack.data_dir}\n"
              "Press Ctrl-C to stop.", flush=True)
        supervisor = Supervisor(stack)
        local_agents = (LocalAgents(stack, Path(local_dir), supervisor) if local_dir
                        else None)
        if local_agents is not None:
            local_agents.start_existing()
        while not stopping["flag"]:
            supervisor.check()
            if local_agents is not None:
                local_agents.check()
            time.sleep(0.5)
        return 0
    finally:
        print("stopping ...", flush=True)
        stack.stop()


if __name__ == "__main__":
    sys.exit(main())
