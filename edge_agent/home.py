"""The agent's home directory: ``agent.json`` (enrollment), ``state.json`` (deployment state),
``models/<version-id>/`` (model.onnx + manifest.json), ``downloads/`` (partial artifacts) and
``benchmarks/<id>/`` (a benchmark's package and inputs while it runs; removed afterwards).

Every JSON file is written atomically (temp file, fsync, ``os.replace``), so a crash leaves
either the old or the new content, never half of one.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["TRANSITIONS", "AgentConfig", "AgentHome", "AgentState", "DeploymentStatus",
           "default_home"]


def default_home() -> Path:
    """``$SAMPAN_AGENT_HOME`` or ``~/.sampan-agent`` (contracts.md)."""
    return Path(os.environ.get("SAMPAN_AGENT_HOME") or Path.home() / ".sampan-agent")


def write_json_atomic(path: Path, data: Any, mode: int = 0o644) -> None:
    """Write ``data`` as JSON to ``path`` atomically, with permission bits ``mode``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(data, handle, indent=2, sort_keys=True)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


@dataclass
class AgentConfig:
    """What enrollment returned (``agent.json``, mode 0600: it holds the device credential)."""

    server_url: str
    device_id: str
    credential: str
    signing_public_key: str
    heartbeat_interval_s: float = 30.0
    name: str = ""
    #: every public key (base64 raw Ed25519) whose signature this device accepts, as the control
    #: plane last sent them (enrollment, then each heartbeat reply); empty in an agent.json
    #: written before key rotation existed, when ``signing_public_key`` alone is trusted.
    trusted_signing_keys: list[str] = field(default_factory=list)

    def trusted_keys(self) -> list[str]:
        """The public keys a manifest may be signed with (base64 of 32 raw bytes each)."""
        return list(self.trusted_signing_keys) or [self.signing_public_key]


#: The agent's deployment states: state -> the states one apply may move it to (the same state
#: again records a retry's reason). An apply starts at ``downloading`` (unreported until its
#: first step); ``running`` and ``failed`` end it, and the next desired state starts a new one.
#: ``downloading -> running`` is a new deployment of the version already served (nothing to
#: fetch: a rollout's rollback to it); ``failed`` after ``verifying`` covers a health check that
#: failed after the swap (the agent went back to the version it served before).
TRANSITIONS: dict[str, frozenset[str]] = {
    "downloading": frozenset({"downloading", "verifying", "running", "failed"}),
    "verifying": frozenset({"verifying", "running", "failed"}),
    "running": frozenset(),
    "failed": frozenset(),
}


@dataclass
class DeploymentStatus:
    """The deployment the agent is converging on or last converged on.

    ``state`` is one of ``downloading``, ``verifying``, ``running``, ``failed`` (contracts.md);
    ``terminal`` marks a failure that retrying cannot fix (bad signature, wrong checksum, a model
    that does not load), which is reported but not retried for the same desired state.
    """

    deployment_id: str
    model_version_id: str
    sha256: str
    size: int
    state: str
    error: str | None = None
    terminal: bool = False

    def matches(self, desired: dict[str, Any]) -> bool:
        return (
            self.deployment_id == desired.get("deployment_id")
            and self.model_version_id == desired.get("model_version_id")
            and self.sha256 == desired.get("sha256")
        )

    def move(self, state: str, error: str | None = None) -> None:
        """Go to ``state`` (with ``error``, the reason of a failure or retry) as
        :data:`TRANSITIONS` allows. Raises ValueError for a move it does not allow."""
        if state not in TRANSITIONS.get(self.state, frozenset()):
            raise ValueError(f"deployment {self.deployment_id}: {self.state} -> {state} is not "
                             "an agent transition")
        self.state, self.error = state, error
        self.terminal = state == "failed"

    def report(self) -> dict[str, Any]:
        """The heartbeat's ``deployment`` object."""
        return {"deployment_id": self.deployment_id, "state": self.state, "error": self.error}


@dataclass
class AgentState:
    """``state.json``: the version being served, the one kept for rollback, the deployment."""

    current: str | None = None
    previous: str | None = None
    deployment: DeploymentStatus | None = field(default=None)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AgentState:
        deployment = data.get("deployment")
        return cls(
            current=data.get("current"),
            previous=data.get("previous"),
            deployment=DeploymentStatus(**deployment) if deployment else None,
        )


class AgentHome:
    """Paths and persistence under the agent's home directory (created with mode 0700)."""

    def __init__(self, root: Path | str) -> None:
        self.root = Path(root)
        self.config_path = self.root / "agent.json"
        self.state_path = self.root / "state.json"
        self.models_dir = self.root / "models"
        self.downloads_dir = self.root / "downloads"
        self.benchmarks_dir = self.root / "benchmarks"

    def ensure(self) -> None:
        self.root.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.models_dir.mkdir(exist_ok=True)
        self.downloads_dir.mkdir(exist_ok=True)

    def model_dir(self, version_id: str) -> Path:
        return self.models_dir / version_id

    def load_config(self) -> AgentConfig:
        """Raises FileNotFoundError when the agent is not enrolled, ValueError when corrupt."""
        data = json.loads(self.config_path.read_text(encoding="utf-8"))
        known = AgentConfig.__dataclass_fields__
        return AgentConfig(**{key: value for key, value in data.items() if key in known})

    def save_config(self, config: AgentConfig) -> None:
        self.ensure()
        write_json_atomic(self.config_path, asdict(config), mode=0o600)

    def load_state(self) -> AgentState:
        if not self.state_path.exists():
            return AgentState()
        return AgentState.from_dict(json.loads(self.state_path.read_text(encoding="utf-8")))

    def save_state(self, state: AgentState) -> None:
        self.ensure()
        write_json_atomic(self.state_path, asdict(state), mode=0o600)
