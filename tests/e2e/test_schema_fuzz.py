"""Schema-driven fuzzing: Schemathesis over every operation of docs/openapi.yaml, against the
real web server process (uvicorn, the stack's database, Redis; no workers: nothing here needs a
job to run), as a user of their own project.

Schemathesis is run as its command line (``schemathesis run``), as a user of the API would run
it, with a config file this test writes: the seeded ids (``fuzz_seed.py``) fill the path
parameters, so project routes reach real objects; everything else (bodies, query strings,
headers) is generated, valid and invalid. The run is seeded and deterministic, so CI sees the
same requests every time, and bounded (a few minutes on 2 cores). It passes when no answer is a
5xx and every answer is documented: its status code, its content type and its body's schema.

By hand, against ``make run``: ``schemathesis run docs/openapi.yaml --url http://127.0.0.1:8000
-H 'Authorization: Bearer spn_...'`` (the same checks: see ``CHECKS``).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sampan.devstack.stack import REPO_DIR, Stack
from tests.database import stack_database_url

pytestmark = pytest.mark.slow

SCHEMA = REPO_DIR / "docs" / "openapi.yaml"
CHECKS = ["not_a_server_error", "status_code_conformance", "content_type_conformance",
          "response_schema_conformance"]
SEED_SCRIPT = ("import json, sys; sys.path.insert(0, {repo!r}); "
               "from tests.e2e.fuzz_seed import seed; print(json.dumps(seed()))")

# Operations not fuzzed, and why (everything else is):
EXCLUDED: dict[str, str] = {}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    with Stack(data_dir=tmp_path_factory.mktemp("fuzz"),
               database_url=stack_database_url()) as stack:
        stack.start(worker=False)
        seeded = stack.manage("shell", "-c", SEED_SCRIPT.format(repo=str(REPO_DIR)), check=False)
        assert seeded.returncode == 0, seeded.stderr
        yield {"stack": stack, **json.loads(seeded.stdout.strip().splitlines()[-1])}


def toml_table(values: dict[str, str]) -> str:
    return "{ " + ", ".join(f"{key} = {json.dumps(value)}" for key, value in values.items()) + " }"


def config(seeded: dict[str, Any]) -> str:
    """schemathesis.toml: the seeded ids as path parameters (by the routes they belong to where
    one name means different objects), the device credential on the device API."""
    ids = seeded["ids"]
    common = {name: ids[name] for name in ("project_id", "dataset_id", "sample_id", "device_id",
                                          "deployment_id", "rule_id", "membership_id",
                                          "upload_id", "token_id")}
    per_route = {
        "/dataset-versions/": {"version_id": ids["dataset_version_id"]},
        "/model-versions/": {"version_id": ids["model_version_id"]},
        "/training-jobs/": {"job_id": ids["training_job_id"]},
        "/compression-jobs/": {"job_id": ids["compression_job_id"]},
    }
    lines = [
        "seed = 20240607",
        'hooks = "tests.e2e.fuzz_hooks"',
        f"headers = {toml_table({'Authorization': 'Bearer ' + seeded['token']})}",
        f"parameters = {toml_table(common)}",
        # no state kept between runs: no crash cache in the repository, the same run each time
        "[cache]",
        "enabled = false",
        "[generation]",
        "deterministic = true",
        'database = "none"',
        "max-examples = 5",
        "[phases]",
        "stateful.enabled = false",
        "[checks]",
        *[f"{check}.enabled = true" for check in CHECKS],
    ]
    for route, parameters in per_route.items():
        lines += ["[[operations]]", f"include-path-regex = {json.dumps(route)}",
                  f"parameters = {toml_table(parameters)}"]
    lines += ["[[operations]]", 'include-path-regex = "^/api/device/"',
              f"headers = {toml_table({'Authorization': 'Device ' + seeded['device_credential']})}"]
    return "\n".join(lines) + "\n"


def test_every_operation_answers_as_documented(server: dict[str, Any], tmp_path: Path) -> None:
    config_file = tmp_path / "schemathesis.toml"
    config_file.write_text(config(server))
    command = [sys.executable, "-m", "schemathesis.cli", "--config-file", str(config_file),
               "--no-color", "run", str(SCHEMA), "--url", server["stack"].url,
               "--checks", ",".join(CHECKS), "--workers", "1",
               "--report", "junit", "--report-dir", str(tmp_path / "report")]
    for operation in EXCLUDED:
        command += ["--exclude-name", operation]
    result = subprocess.run(command, cwd=REPO_DIR, capture_output=True, text=True, timeout=900)
    print(result.stdout[-20000:])
    assert result.returncode == 0, (result.stdout[-20000:] + result.stderr[-4000:]
                                    + server["stack"].log_tail("web", 60))
