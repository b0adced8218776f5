"""The deployment files read as data: docker-compose.yml, .env.example, the Dockerfile.

Docker does not run on our machines, so tests/deploy checks these files without it: against the
Compose Specification's JSON schema, against the topology the platform needs, and by running
their shell commands natively.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import yaml

REPO_DIR = Path(__file__).resolve().parents[2]
COMPOSE_FILE = REPO_DIR / "docker-compose.yml"
ENV_EXAMPLE = REPO_DIR / ".env.example"
DOCKERFILE = REPO_DIR / "Dockerfile"
DOCKERIGNORE = REPO_DIR / ".dockerignore"

#: The settings every part of the platform agreed on; .env.example sets each of them.
SHARED_SETTINGS = (
    "SAMPAN_ENV", "SAMPAN_SECRET_KEY", "SAMPAN_DEBUG", "SAMPAN_ALLOWED_HOSTS",
    "SAMPAN_CSRF_TRUSTED_ORIGINS", "SAMPAN_BEHIND_TLS_PROXY", "SAMPAN_DATABASE_URL",
    "SAMPAN_REDIS_URL", "SAMPAN_DATA_DIR", "SAMPAN_SIGNING_KEY_FILE", "SAMPAN_UPLOAD_MAX_BYTES",
    "SAMPAN_STORAGE", "SAMPAN_S3_ENDPOINT_URL", "SAMPAN_S3_BUCKET", "SAMPAN_S3_ACCESS_KEY_ID",
    "SAMPAN_S3_SECRET_ACCESS_KEY", "SAMPAN_S3_REGION", "SAMPAN_S3_PUBLIC_ENDPOINT_URL",
    "SAMPAN_S3_URL_EXPIRE_S", "SAMPAN_ADMIN_PASSWORD",
)

# Compose interpolation: ${NAME...} or $NAME, but not $$ (a literal dollar for the container)
_INTERPOLATION = re.compile(
    r"(?<!\$)(?:\$\$)*\$(?:\{([A-Za-z_][A-Za-z0-9_]*)|([A-Za-z_][A-Za-z0-9_]*))")
# $$NAME or $${NAME}: expanded by the container's shell, from the container's environment
_CONTAINER_VARIABLE = re.compile(r"(?<!\$)(?:\$\$)+\{?([A-Za-z_][A-Za-z0-9_]*)")
_ENV_LINE = re.compile(r"^([A-Z][A-Z0-9_]*)=(\S*)$")


def load_compose() -> dict[str, Any]:
    """docker-compose.yml as compose reads it (YAML anchors and merge keys resolved)."""
    return yaml.safe_load(COMPOSE_FILE.read_text())


def read_env_file(path: Path = ENV_EXAMPLE) -> dict[str, str]:
    """``NAME=value`` lines of a dotenv file, in order. Raises ValueError naming the line for a
    line that is neither that, a comment nor blank: values carry no quotes and no spaces, so
    compose, django-environ and a shell read the file alike."""
    values: dict[str, str] = {}
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        match = _ENV_LINE.match(line)
        if match is None:
            raise ValueError(f"{path.name}:{number}: not NAME=value without spaces: {line!r}")
        if match.group(1) in values:
            raise ValueError(f"{path.name}:{number}: {match.group(1)} is set twice")
        values[match.group(1)] = match.group(2)
    return values


def _strings(node: Any) -> list[str]:
    if isinstance(node, str):
        return [node]
    if isinstance(node, dict):
        return [s for key, value in node.items() for s in _strings(key) + _strings(value)]
    if isinstance(node, list):
        return [s for item in node for s in _strings(item)]
    return []


def interpolated_variables(node: Any) -> set[str]:
    """Names compose substitutes in the strings of ``node`` (``${NAME}``, ``${NAME:-x}``,
    ``$NAME``), nested defaults included; ``$$NAME`` is left to the container."""
    return {a or b for s in _strings(node) for a, b in _INTERPOLATION.findall(s)}


def container_variables(node: Any) -> set[str]:
    """Names a service's shell expands at run time (``$$NAME`` in the compose file)."""
    return {name for s in _strings(node) for name in _CONTAINER_VARIABLE.findall(s)}


def service_environment(service: dict[str, Any], env_example: dict[str, str]) -> set[str]:
    """The variables a service's container has: its ``environment`` plus, with ``env_file:
    .env``, every variable of .env.example."""
    environment = service.get("environment") or {}
    names = set(environment if isinstance(environment, dict)
                else (item.split("=", 1)[0] for item in environment))
    env_files = service.get("env_file") or []
    if isinstance(env_files, str):
        env_files = [env_files]
    if ".env" in env_files:
        names |= set(env_example)
    return names


def command_argv(service: dict[str, Any]) -> list[str]:
    command = service.get("command") or []
    return shlex.split(command) if isinstance(command, str) else [str(a) for a in command]


def option_value(argv: list[str], *names: str) -> str | None:
    """The value of the first of ``names`` in ``argv`` (``--name value`` or ``--name=value``)."""
    for index, arg in enumerate(argv):
        for name in names:
            if arg == name and index + 1 < len(argv):
                return argv[index + 1]
            if arg.startswith(name + "="):
                return arg.split("=", 1)[1]
    return None


def shell_script(service: dict[str, Any]) -> str:
    """The script of a ``/bin/sh -ec SCRIPT`` service as its shell receives it ($$ -> $)."""
    argv = command_argv(service)
    if argv[:2] != ["/bin/sh", "-ec"] or len(argv) != 3:
        raise ValueError(f"not a /bin/sh -ec script: {argv[:2]}")
    return argv[2].replace("$$", "$")
