"""``make run``: the platform on embedded defaults, with the demo project loaded.

Migrates, starts Redis (embedded), the web server, one Celery worker and one local edge agent
enrolled as a device, imports the seed dataset into a "Digits demo" project (once), prints the URL
and a login, and stops everything it started on Ctrl-C.
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

from sampan.devstack.client import Client
from sampan.devstack.mainjob import SEEDS_DIR, zip_folder
from sampan.devstack.stack import REPO_DIR, Stack


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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, default=int(os.environ.get("SAMPAN_PORT", "8000")))
    parser.add_argument("--agent-port", type=int,
                        default=int(os.environ.get("SAMPAN_AGENT_PORT", "8700")))
    parser.add_argument("--data-dir", default=os.environ.get("SAMPAN_DATA_DIR",
                                                             str(REPO_DIR / "var")))
    parser.add_argument("--username", default="admin")
    parser.add_argument("--password", default=os.environ.get("SAMPAN_ADMIN_PASSWORD", "sampan"))
    args = parser.parse_args(argv)

    stack = Stack(data_dir=Path(args.data_dir), web_port=args.port, agent_port=args.agent_port)
    stopping = {"flag": False}

    def on_signal(signum: int, frame: object) -> None:
        stopping["flag"] = True

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    try:
        print("starting Redis, web server and worker ...", flush=True)
        stack.start()
        user = json.loads(stack.manage("sampan_user", "--username", args.username, "--password",
                                       args.password, "--superuser", "--token-name", "make-run"
                                       ).stdout.strip().splitlines()[-1])
        client = Client(stack.url, user["token"])
        recipe = json.loads((SEEDS_DIR / "demo.json").read_text())
        print("loading the demo project ...", flush=True)
        project = load_demo_project(client, recipe)
        if not (stack.agent_home / "agent.json").exists():  # enrolled once, then reused
            token = client.post(f"/api/v1/projects/{project['id']}/enrollment-tokens/",
                                {"note": "local agent (make run)"})
            stack.enroll_agent(token["token"])
        stack.start_agent()
        print(f"\nSampan is running at {stack.url}/\n  login: {args.username} / {args.password}\n"
              f"  API token: {user['token']}\n  API docs: {stack.url}/api/docs/\n"
              f"  local edge agent: {stack.agent_url}/healthz\n  data: {stack.data_dir}\n"
              "Press Ctrl-C to stop.", flush=True)
        while not stopping["flag"]:
            for name, process in stack.processes.items():
                if process.poll() is not None:
                    print(f"{name} exited ({process.returncode}):\n{stack.log_tail(name)}",
                          file=sys.stderr)
                    return 1
            time.sleep(0.5)
        return 0
    finally:
        print("stopping ...", flush=True)
        stack.stop()


if __name__ == "__main__":
    sys.exit(main())
