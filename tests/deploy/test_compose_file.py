"""docker-compose.yml and .env.example: the Compose Specification's schema and the topology.

The schema is the Compose Specification's own JSON schema (compose-spec/compose-spec,
``schema/compose-spec.json``) as the ``check-jsonschema`` package ships it (its vendored copy,
``check_jsonschema/builtin_schemas/vendor/compose-spec.json``), validated with ``jsonschema``.
"""

from __future__ import annotations

import copy
import json
import re
import subprocess
from importlib.resources import files
from typing import Any
from urllib.parse import urlsplit

import jsonschema
import pytest
from django.conf import settings

from tests.deploy.files import (
    COMPOSE_FILE,
    ENV_EXAMPLE,
    REPO_DIR,
    SHARED_SETTINGS,
    command_argv,
    container_variables,
    interpolated_variables,
    load_compose,
    option_value,
    read_env_file,
    service_environment,
)

LONG_RUNNING = {"postgres", "redis", "minio", "web", "worker-default", "worker-imports",
                "worker-training", "worker-compression", "beat", "agent"}
ONE_SHOT = {"minio-init", "migrate"}
QUEUE_WORKERS = {"default": "worker-default", "imports": "worker-imports",
                 "training": "worker-training", "compression": "worker-compression"}
#: Variables a container has without anyone setting them.
RUNTIME_VARIABLES = {"HOSTNAME"}


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return load_compose()


@pytest.fixture(scope="module")
def services(compose: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return compose["services"]


@pytest.fixture(scope="module")
def env_example() -> dict[str, str]:
    return read_env_file()


def compose_spec_validator() -> jsonschema.protocols.Validator:
    schema = json.loads(files("check_jsonschema.builtin_schemas.vendor")
                        .joinpath("compose-spec.json").read_text())
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema, format_checker=cls.FORMAT_CHECKER)


def schema_errors(document: dict[str, Any]) -> list[str]:
    return sorted(f"{error.json_path}: {error.message}"
                  for error in compose_spec_validator().iter_errors(document))


# ------------------------------------------------------------------------------------ schema
def test_compose_file_is_valid_against_the_compose_specification(compose: dict[str, Any]) -> None:
    assert schema_errors(compose) == []


@pytest.mark.parametrize("break_it, where", [
    (lambda c: c["services"]["web"].update(helthcheck={"test": ["CMD", "true"]}),
     "$.services.web"),
    (lambda c: c["services"]["web"]["depends_on"]["migrate"].update(condition="whenever"),
     "$.services.web.depends_on"),
    (lambda c: c["services"]["redis"]["healthcheck"].update(intervall="10s"),
     "$.services.redis.healthcheck"),
    (lambda c: c["volumes"].update(data=["not", "a", "mapping"]), "$.volumes.data"),
])
def test_the_schema_refuses_a_broken_compose_file(compose: dict[str, Any], break_it: Any,
                                                  where: str) -> None:
    broken = copy.deepcopy(compose)
    break_it(broken)
    errors = schema_errors(broken)
    assert errors and any(error.startswith(where) for error in errors), errors


# ------------------------------------------------------------------------------------ services
def test_every_service_of_the_topology_exists(services: dict[str, Any]) -> None:
    assert set(services) == LONG_RUNNING | ONE_SHOT
    assert re.fullmatch(r"postgres:16(\b.*)?", services["postgres"]["image"])
    assert re.fullmatch(r"redis:7(\b.*)?", services["redis"]["image"])
    assert "minio/minio:" in services["minio"]["image"]
    assert "minio/mc:" in services["minio-init"]["image"]


def test_long_running_services_restart_and_have_a_health_check_or_say_why(
        services: dict[str, Any]) -> None:
    for name in LONG_RUNNING:
        service = services[name]
        assert service.get("restart") == "unless-stopped", name
        reason = service.get("x-no-healthcheck", "")
        if "healthcheck" in service:
            assert not reason, f"{name}: a health check and a reason not to have one"
            test = service["healthcheck"]["test"]
            assert test[0] in {"CMD", "CMD-SHELL"} and len(test) > 1, name
        else:
            assert len(reason.split()) >= 10, f"{name}: no health check and no reason"


def test_one_shot_services_run_once_and_what_needs_them_waits_for_their_success(
        services: dict[str, Any]) -> None:
    for name in ONE_SHOT:
        assert services[name].get("restart") == "no", name
    for name, service in services.items():
        for dependency, condition in (service.get("depends_on") or {}).items():
            assert dependency in services, f"{name} depends on unknown {dependency}"
            expected = ("service_completed_successfully" if dependency in ONE_SHOT
                        else "service_healthy")
            assert condition["condition"] == expected, f"{name} -> {dependency}"
            assert dependency in ONE_SHOT or "healthcheck" in services[dependency], dependency
    for name in LONG_RUNNING - {"postgres", "redis", "minio", "agent"}:
        assert "migrate" in services[name]["depends_on"], name
    assert "minio-init" in services["migrate"]["depends_on"]


def test_web_runs_the_asgi_server_as_agreed(services: dict[str, Any]) -> None:
    web = services["web"]
    assert command_argv(web) == ["python", "-m", "uvicorn", "sampan.asgi:application",
                                 "--host", "0.0.0.0", "--port", "8000"]
    assert "8000:8000" in web["ports"]
    assert "/healthz" in " ".join(web["healthcheck"]["test"])


def _worker_queues(services: dict[str, Any]) -> dict[str, list[str]]:
    queues: dict[str, list[str]] = {}
    for name, service in services.items():
        argv = command_argv(service)
        if argv[:1] == ["celery"] and "worker" in argv:
            consumed = option_value(argv, "--queues", "-Q")
            assert consumed, f"{name}: a worker must name its queues"
            for queue in consumed.split(","):
                queues.setdefault(queue, []).append(name)
    return queues


def test_one_worker_service_per_queue_and_every_routed_queue_has_one(
        services: dict[str, Any]) -> None:
    routed = {route["queue"] for route in settings.CELERY_TASK_ROUTES.values()}
    routed.add(settings.CELERY_TASK_DEFAULT_QUEUE)
    assert routed == set(QUEUE_WORKERS)
    assert _worker_queues(services) == {queue: [name] for queue, name in QUEUE_WORKERS.items()}


def test_imports_go_to_their_own_queue() -> None:
    from sampan.celery import app

    assert app.amqp.router.route({}, "datasets.run_import")["queue"].name == "imports"
    assert app.amqp.router.route({}, "training.run")["queue"].name == "training"
    assert app.amqp.router.route({}, "core.reap_stale_jobs")["queue"].name == "default"


def test_workers_run_the_right_app_and_image(services: dict[str, Any]) -> None:
    for queue, name in QUEUE_WORKERS.items():
        service = services[name]
        argv = command_argv(service)
        ml = queue in {"training", "compression"}
        # the ML tasks are registered by workers.app (torch); the rest by the platform's app
        assert option_value(argv, "-A", "--app") == ("workers.app" if ml else "sampan.celery")
        assert service["build"]["target"] == ("worker" if ml else "web"), name
        assert option_value(argv, "--hostname", "-n") == f"{queue}@%h"
        if "healthcheck" in service:  # the ping asks this very node
            assert f"{queue}@$$HOSTNAME" in " ".join(service["healthcheck"]["test"])


@pytest.mark.parametrize("name", ["worker-training", "worker-compression"])
def test_ml_workers_take_one_task_at_a_time(services: dict[str, Any], name: str) -> None:
    argv = command_argv(services[name])
    assert option_value(argv, "--prefetch-multiplier") == "1"
    assert option_value(argv, "--concurrency", "-c") == "1"
    assert option_value(argv, "--pool", "-P") == "solo"


def test_beat_runs_once(services: dict[str, Any]) -> None:
    argv = command_argv(services["beat"])
    assert argv[:4] == ["celery", "-A", "sampan.celery", "beat"]
    assert "deploy" not in services["beat"], "beat must not be replicated"


def test_the_demo_agent_enrolls_itself_and_holds_no_platform_secret(
        services: dict[str, Any], env_example: dict[str, str]) -> None:
    agent = services["agent"]
    assert "env_file" not in agent
    script = command_argv(agent)[2]
    assert "sampan-agent enroll" in script and "exec sampan-agent run" in script
    token_file = agent["environment"]["SAMPAN_AGENT_ENROLLMENT_TOKEN_FILE"]
    assert token_file == services["migrate"]["environment"]["SAMPAN_DEMO_ENROLLMENT_TOKEN_FILE"]
    assert "enroll:/enroll:ro" in agent["volumes"] and "enroll:/enroll" in services["migrate"][
        "volumes"]
    server = urlsplit(agent["environment"]["SAMPAN_AGENT_SERVER_URL"])
    assert server.hostname in services
    assert server.hostname in env_example["SAMPAN_ALLOWED_HOSTS"].split(",")


def test_migrate_says_where_to_sign_in(services: dict[str, Any]) -> None:
    script = command_argv(services["migrate"])[2]
    published = {port.split(":")[-2] for port in services["web"]["ports"]}
    match = re.search(r"Sampan is at http://localhost:(\d+)/", script)
    assert match and match.group(1) in published
    assert "SAMPAN_ADMIN_PASSWORD" in script[match.start():]


# ------------------------------------------------------------------------------------ volumes
def test_named_volumes_are_declared_and_used(compose: dict[str, Any]) -> None:
    used = set()
    for name, service in compose["services"].items():
        for volume in service.get("volumes", []):
            source = volume.split(":")[0] if isinstance(volume, str) else volume["source"]
            if not source.startswith((".", "/", "~")):
                used.add(source)
                assert source in (compose.get("volumes") or {}), f"{name}: {source} undeclared"
    assert used == set(compose["volumes"])
    for name in ("postgres", "redis", "minio"):  # their state outlives the containers
        assert compose["services"][name]["volumes"], name


# ------------------------------------------------------------------------------------ variables
def test_env_example_parses_and_sets_every_shared_setting(env_example: dict[str, str]) -> None:
    assert [name for name in SHARED_SETTINGS if name not in env_example] == []


def test_every_variable_compose_substitutes_is_in_env_example(
        env_example: dict[str, str]) -> None:
    used = interpolated_variables(load_compose())
    assert used, "the check found no ${VARIABLE} at all"
    assert sorted(used - set(env_example)) == []


def test_every_variable_a_container_expands_is_in_its_environment(
        services: dict[str, Any], env_example: dict[str, str]) -> None:
    for name, service in services.items():
        expanded = container_variables({k: service.get(k) for k in
                                        ("command", "entrypoint", "healthcheck")})
        available = service_environment(service, env_example) | RUNTIME_VARIABLES
        assert sorted(expanded - available) == [], name


def test_every_variable_of_env_example_is_read_by_settings_or_compose(
        env_example: dict[str, str], services: dict[str, Any]) -> None:
    settings_source = (REPO_DIR / "platform" / "sampan" / "settings.py").read_text()
    compose_reads = interpolated_variables(load_compose()) | container_variables(services)
    unread = [name for name in env_example
              if name not in compose_reads and not re.search(rf"\b{name}\b", settings_source)]
    assert unread == []


def test_env_example_has_no_secret_and_compose_refuses_to_start_without_them(
        env_example: dict[str, str]) -> None:
    text = COMPOSE_FILE.read_text()
    for name in ("SAMPAN_SECRET_KEY", "SAMPAN_ADMIN_PASSWORD", "POSTGRES_PASSWORD",
                 "SAMPAN_S3_SECRET_ACCESS_KEY"):
        assert env_example[name] == "", f"{name} must be empty in {ENV_EXAMPLE.name}"
        assert re.search(r"\$\{" + name + r":\?[^}]*" + name, text), (
            f"compose must stop with a message naming {name} while it is empty")


def test_the_urls_of_env_example_point_at_compose_services(
        env_example: dict[str, str], services: dict[str, Any]) -> None:
    for name in ("SAMPAN_REDIS_URL", "SAMPAN_S3_ENDPOINT_URL"):
        assert urlsplit(env_example[name]).hostname in services, name
    database = services["web"]["environment"]["SAMPAN_DATABASE_URL"]
    default = re.fullmatch(r"\$\{SAMPAN_DATABASE_URL:-(postgres://.*)\}", database).group(1)
    postgres = services["postgres"]["environment"]
    assert default == (f"postgres://{postgres['POSTGRES_USER']}:${{POSTGRES_PASSWORD}}"
                       f"@postgres:5432/{postgres['POSTGRES_DB']}")
    # files live in compose's bucket; browsers and the demo agent reach it at the public name
    assert env_example["SAMPAN_STORAGE"] == "s3"
    public = urlsplit(env_example["SAMPAN_S3_PUBLIC_ENDPOINT_URL"])
    assert public.hostname.endswith(".localhost") and public.port == 9000
    assert f"{public.hostname}:host-gateway" in services["agent"]["extra_hosts"]
    assert any(str(port).startswith("9000:9000") for port in services["minio"]["ports"])
    assert env_example["SAMPAN_ENV"] == "production"
    assert env_example["SAMPAN_DEBUG"] == "false"


def test_the_variable_finders_tell_compose_from_container_variables() -> None:
    text = "${A:-postgres://${B}@h} $$C $D $$$E $${F} ${G:?set G}"
    assert interpolated_variables(text) == {"A", "B", "D", "E", "G"}
    assert container_variables(text) == {"C", "F"}  # $$$E: a literal $, then compose's E


def test_the_env_file_with_the_secrets_is_never_committed() -> None:
    ignored = subprocess.run(["git", "check-ignore", "--quiet", ".env"], cwd=REPO_DIR)
    assert ignored.returncode == 0
    assert ENV_EXAMPLE.name == ".env.example" and ENV_EXAMPLE.is_file()
