"""The Dockerfile, read statically (Docker does not run here): its stages, what each installs,
the console build, collectstatic at build time, and an unprivileged user in every image.

Parsed with ``dockerfile-parse`` (line continuations joined, build arguments substituted).
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import tomllib
from dataclasses import dataclass, field
from typing import Any

import pytest
from dockerfile_parse import DockerfileParser

from tests.deploy.files import DOCKERFILE, DOCKERIGNORE, REPO_DIR, load_compose

PYPROJECT = tomllib.loads((REPO_DIR / "pyproject.toml").read_text())


@dataclass
class Stage:
    name: str
    base: str  # an image, or the name of an earlier stage
    instructions: list[dict[str, Any]] = field(default_factory=list)

    def values(self, instruction: str) -> list[str]:
        return [i["value"] for i in self.instructions if i["instruction"] == instruction]


@pytest.fixture(scope="module")
def stages() -> dict[str, Stage]:
    parser = DockerfileParser(path=str(DOCKERFILE), cache_content=True)
    images = iter(parser.parent_images)  # FROM lines with the build arguments substituted
    result: dict[str, Stage] = {}
    current: Stage | None = None
    for instruction in parser.structure:
        if instruction["instruction"] == "FROM":
            words = instruction["value"].split()
            assert len(words) == 3 and words[1].upper() == "AS", instruction["content"]
            current = Stage(name=words[2], base=next(images))
            result[current.name] = current
        elif current is not None:
            current.instructions.append(instruction)
    return result


def chain(stages: dict[str, Stage], name: str) -> list[Stage]:
    """The stage and every stage it is built FROM, itself first."""
    out = [stages[name]]
    while out[-1].base in stages:
        out.append(stages[out[-1].base])
    return out


def installed_extras(stage: Stage) -> set[str]:
    return {extra for run in stage.values("RUN")
            for group in re.findall(r'pip install [^&]*?"\.\[([a-z0-9,]+)\]"', run)
            for extra in group.split(",")}


def test_the_stages_compose_builds_exist(stages: dict[str, Stage]) -> None:
    targets = {service["build"]["target"] for service in load_compose()["services"].values()
               if "build" in service}
    assert targets == {"web", "worker", "agent"}
    assert targets <= set(stages)
    assert list(stages)[-1] == "web", "a plain `docker build .` gives the web image"


def test_the_console_is_built_with_npm_from_its_sources_and_the_api_schema(
        stages: dict[str, Stage]) -> None:
    console = stages["console"]
    node_major = int(re.match(r"node:(\d+)", console.base).group(1))
    engines = json.loads((REPO_DIR / "frontend" / "package.json").read_text())["engines"]["node"]
    assert node_major >= int(re.search(r"\d+", engines).group(0))
    runs = " && ".join(console.values("RUN"))
    assert "npm ci" in runs and "npm run build" in runs
    copies = console.values("COPY")
    # `npm run build` generates the API types from ../docs/openapi.yaml
    assert any(c.startswith("docs/openapi.yaml ") for c in copies)
    assert any(c.startswith("frontend/package-lock.json") or "package-lock.json" in c
               for c in copies)
    web_copies = [c for stage in chain(stages, "web") for c in stage.values("COPY")]
    assert "--from=console /src/frontend/dist frontend/dist" in web_copies


def test_static_files_are_collected_at_build_time_into_the_static_root(
        stages: dict[str, Stage]) -> None:
    web = chain(stages, "web")
    assert any("manage.py collectstatic" in run for stage in web for run in stage.values("RUN"))
    env = " ".join(value for stage in web for value in stage.values("ENV"))
    assert "SAMPAN_STATIC_ROOT=/app/" in env, "static files live in the image, not in a volume"


@pytest.mark.parametrize("target", ["web", "worker", "agent"])
def test_every_image_runs_as_an_unprivileged_user(stages: dict[str, Stage], target: str) -> None:
    users = [user for stage in chain(stages, target) for user in stage.values("USER")]
    assert users, f"{target}: no USER, so it runs as root"
    assert users[0] not in {"root", "0"}  # the stage's own USER is listed first
    runs = " ".join(run for stage in chain(stages, target) for run in stage.values("RUN"))
    assert re.search(rf"useradd\b.*\b{re.escape(users[0])}\b", runs)


def test_only_the_worker_image_has_torch(stages: dict[str, Stage]) -> None:
    def extras(target: str) -> set[str]:
        return {e for stage in chain(stages, target) for e in installed_extras(stage)}

    # s3: object storage (django-storages, boto3) for every platform process
    assert extras("web") == {"platform", "postgres", "s3"}
    assert extras("worker") == {"platform", "postgres", "s3", "worker"}
    assert extras("agent") == {"edge"}
    for target in ("web", "agent"):
        text = " ".join(i["value"] for stage in chain(stages, target) for i in stage.instructions)
        assert "torch" not in text, target


def test_every_extra_the_images_install_exists(stages: dict[str, Stage]) -> None:
    # pip only warns about an unknown extra: the image would build without its packages
    installed = {e for stage in stages.values() for e in installed_extras(stage)}
    assert sorted(installed - set(PYPROJECT["project"]["optional-dependencies"])) == []


def test_torch_comes_from_a_wheel_index_at_the_versions_pyproject_pins(
        stages: dict[str, Stage]) -> None:
    run = next(r for r in stages["worker-deps"].values("RUN") if "TORCH_INDEX_URL" in r)
    substitution = re.search(r"\$\((grep .*?)\)\s+&&", run).group(1)
    printed = subprocess.run(["sh", "-c", substitution], cwd=REPO_DIR, capture_output=True,
                             text=True, check=True).stdout.split()
    pinned = [r for r in PYPROJECT["project"]["optional-dependencies"]["worker"]
              if re.match(r"torch(vision)?==", r)]
    assert printed == pinned and len(pinned) == 2
    args = " ".join(stages["worker-deps"].values("ARG"))
    assert "TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu" in args


def test_the_python_image_matches_requires_python(stages: dict[str, Stage]) -> None:
    version = re.match(r"python:(\d+\.\d+)", stages["python-base"].base).group(1)
    assert PYPROJECT["project"]["requires-python"] == f">={version}"
    assert stages["agent"].base == stages["python-base"].base


def test_every_copied_path_exists_and_is_sent_to_the_builder(stages: dict[str, Stage]) -> None:
    ignored = [line.strip().rstrip("/") for line in DOCKERIGNORE.read_text().splitlines()
               if line.strip() and not line.startswith("#")]
    for stage in stages.values():
        for copy in stage.values("COPY"):
            words = shlex.split(copy)
            if any(w.startswith("--from=") for w in words):
                continue
            for source in [w for w in words if not w.startswith("--")][:-1]:
                assert (REPO_DIR / source).exists(), f"{stage.name}: COPY {source}: missing"
                assert source.rstrip("/") not in ignored, f"{stage.name}: {source} is ignored"
    for secret_or_bulk in (".env", ".git", ".venv", "frontend/node_modules", "var"):
        assert secret_or_bulk in ignored
