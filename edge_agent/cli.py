"""``sampan-agent``: ``enroll`` once, then ``run`` (local HTTP API + convergence loop); or,
without a platform, ``install-model`` a signed package, then ``run`` standalone.

Exit status: 0 on success, 1 on a runtime failure (message on stderr), 2 on bad usage.
"""

from __future__ import annotations

import argparse
import hashlib
import hmac
import logging
import os
import platform
import secrets
import signal
import socket
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from types import FrameType

import onnxruntime

from edge_agent.agent import Agent, agent_version
from edge_agent.benchmark import Benchmarker
from edge_agent.client import DeviceApiError, DeviceClient, enroll
from edge_agent.deploy import Converger
from edge_agent.home import AgentConfig, AgentHome, AgentState, default_home
from edge_agent.offline import OfflineInstallError, install_model, is_standalone
from edge_agent.runtime import ManifestError, parse_trusted_keys
from edge_agent.server import make_server

log = logging.getLogger("edge_agent")


def _device_info() -> dict[str, object]:
    return {
        "hostname": socket.gethostname(),
        "os": platform.platform(),
        "machine": platform.machine(),
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
        "onnxruntime": onnxruntime.__version__,
        "agent_version": agent_version(),
    }


#: Sampan's application id (a fixed random 128-bit value) for the recipe of systemd's
#: sd_id128_get_machine_app_specific(3): an id stable per machine that does not reveal
#: /etc/machine-id (HMAC-SHA256 keyed with it, of this id)
_APP_ID = bytes.fromhex("5a3d2f0e9c6b4b1f8e7d6c5b4a392817")


def machine_id(home: AgentHome) -> str:
    """This machine's id for Sampan: 32 hex digits, HMAC-SHA256(/etc/machine-id, app id) cut
    to 128 bits as systemd's ``sd_id128_get_machine_app_specific`` does; without a machine id
    (not systemd, a container), a random id kept in ``<home>/machine-id``. The platform
    recognises a re-enrollment by it (with the device name)."""
    for source in (Path("/etc/machine-id"), Path("/var/lib/dbus/machine-id")):
        try:
            raw = source.read_text(encoding="ascii").strip()
        except (OSError, UnicodeDecodeError):
            continue
        if len(raw) == 32:
            try:
                key = bytes.fromhex(raw)
            except ValueError:
                continue
            return hmac.new(key, _APP_ID, hashlib.sha256).hexdigest()[:32]
    kept = home.root / "machine-id"
    try:
        value = kept.read_text(encoding="ascii").strip()
        if len(value) == 32 and all(c in "0123456789abcdef" for c in value):
            return value
    except (OSError, UnicodeDecodeError):
        pass
    value = secrets.token_hex(16)
    home.root.mkdir(parents=True, exist_ok=True)
    kept.write_text(value + "\n", encoding="ascii")
    return value


def cmd_enroll(args: argparse.Namespace) -> int:
    """Trade a one-time enrollment token for a device credential, saved in ``agent.json``."""
    home = AgentHome(args.home)
    if home.config_path.exists() and not args.force:
        what, hint = "already enrolled", "enroll again"
        try:
            if is_standalone(home.load_config()):
                what, hint = "installed offline, with no platform", "enroll it with one"
        except (OSError, ValueError, TypeError):
            pass
        print(f"{what} ({home.config_path}); pass --force to {hint}", file=sys.stderr)
        return 1
    if not args.token:
        print("no enrollment token: pass --token or set SAMPAN_ENROLLMENT_TOKEN", file=sys.stderr)
        return 2
    name = args.name or socket.gethostname()
    try:
        reply = enroll(args.url, args.token, name, _device_info(), machine_id(home),
                       re_enroll=args.force)
    except DeviceApiError as error:
        print(f"enrollment failed: {error}", file=sys.stderr)
        return 1
    try:
        trusted = (parse_trusted_keys(reply["trusted_signing_keys"])
                   if "trusted_signing_keys" in reply else [])
    except ManifestError as error:
        print(f"enrollment failed: {error}", file=sys.stderr)
        return 1
    config = AgentConfig(
        server_url=args.url.rstrip("/"),
        device_id=str(reply["device_id"]),
        credential=str(reply["credential"]),
        signing_public_key=str(reply["signing_public_key"]),
        heartbeat_interval_s=float(reply.get("heartbeat_interval_s") or 30.0),
        name=name,
        trusted_signing_keys=trusted,
    )
    home.save_config(config)
    again = " again (the same device; its old credential no longer works)" if reply.get(
        "re_enrolled") else ""
    print(f"enrolled{again} as device {config.device_id}; credential saved in "
          f"{home.config_path}")
    return 0


def cmd_install_model(args: argparse.Namespace) -> int:
    """Install a signed model package offline and make it the current version."""
    home = AgentHome(args.home)
    try:
        installed = install_model(args.path, home, args.trust_key_file, machine_id=machine_id)
    except OfflineInstallError as error:
        print(f"install-model: {error}", file=sys.stderr)
        return 1
    except Exception as error:  # a refusal not foreseen: still one line, exit 1
        # install_model has undone its changes; the traceback is for --verbose
        log.debug("install-model: unexpected error", exc_info=True)
        unexpected = OfflineInstallError(f"{args.path}: refused: unexpected "
                                         f"{type(error).__name__}: {error} (--verbose for "
                                         "the traceback)")
        print(f"install-model: {unexpected}", file=sys.stderr)
        return 1
    where = "" if args.home == default_home() else f" --home {args.home}"
    # name and version come from the manifest, already without control characters; the key
    # id is the one `manage.py sampan_signing_key list` shows on the platform
    print(f"installed model {installed.name} v{installed.version} ({installed.version_id}), "
          f"signed by key {installed.key_id}; run: sampan-agent run{where}")
    return 0


def _platform_loop(
    agent: Agent, config: AgentConfig, state: AgentState
) -> tuple[Converger, Callable[[], None]]:
    """The convergence loop of an enrolled device and what closes its HTTP sessions."""
    client = DeviceClient(config.server_url, config.credential)
    # benchmarks run on their own thread, with their own HTTP session
    benchmark_client = DeviceClient(config.server_url, config.credential)
    benchmarker = Benchmarker(agent, benchmark_client)
    # deployments download on the apply thread, with their own HTTP session too
    apply_client = DeviceClient(config.server_url, config.credential)
    converger = Converger(agent, client, state, benchmarker, apply_client)

    def close() -> None:
        benchmarker.stop()
        client.close()
        apply_client.close()
        benchmark_client.close()

    return converger, close


def cmd_run(args: argparse.Namespace) -> int:
    """Serve the local HTTP API and converge on the desired state until SIGTERM or SIGINT (and
    SIGBREAK on Windows: Ctrl+Break, how service wrappers such as WinSW stop a console
    program); a standalone home (offline install: no ``server_url``) only serves, with no
    network at all."""
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        log.info("signal %d: stopping", signum)
        stop.set()

    for name in ("SIGTERM", "SIGINT", "SIGBREAK"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), on_signal)
    return serve(args, stop)


def serve(args: argparse.Namespace, stop: threading.Event) -> int:
    """``sampan-agent run``'s work until ``stop`` is set (from a signal handler, or from a
    service host's stop callback on another thread: a Windows service's ``SvcStop``); returns
    the exit status (0 after a clean stop, 1 when the home or the address is unusable). ``args``
    as :func:`build_parser` makes them for ``run``."""
    home = AgentHome(args.home)
    try:
        config = home.load_config()
    except FileNotFoundError:
        print(
            f"not enrolled: no {home.config_path}; run 'sampan-agent enroll' (or "
            "'sampan-agent install-model' without a platform) first", file=sys.stderr
        )
        return 1
    except (ValueError, TypeError) as error:
        print(f"cannot read {home.config_path}: {error}", file=sys.stderr)
        return 1
    home.ensure()
    agent = Agent(home, config, threads=args.threads)
    state = agent.load_from_state(home.load_state())
    home.save_state(state)
    api_key = None
    if args.api_key_file is not None:
        try:
            api_key = args.api_key_file.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as error:
            print(f"cannot read the API key file {args.api_key_file}: {error}", file=sys.stderr)
            return 1
        if len(api_key) < 16:
            print(f"the API key in {args.api_key_file} is {len(api_key)} characters; use at "
                  "least 16 (e.g. python3 -c 'import secrets; print(secrets.token_urlsafe(24))')",
                  file=sys.stderr)
            return 1
    try:
        server = make_server(agent, args.host, args.port, api_key)
    except OSError as error:
        print(f"cannot listen on {args.host}:{args.port}: {error}", file=sys.stderr)
        return 1
    loop: threading.Thread | None = None
    close: Callable[[], None] | None = None
    if is_standalone(config):
        serving = agent.current_version or "no model (install one with 'sampan-agent " \
                                           "install-model')"
        log.info("standalone: serving %s; no platform (offline install)", serving)
    else:
        converger, close = _platform_loop(agent, config, state)
        loop = threading.Thread(target=converger.run, args=(stop,), name="converge",
                                daemon=True)

    def stop_serving() -> None:
        stop.wait()
        server.shutdown()  # waits for serve_forever() to return: never on its own thread

    threading.Thread(target=stop_serving, name="stop", daemon=True).start()
    if loop is not None:
        loop.start()
    host, port = server.server_address[:2]
    log.info("device %s serving on http://%s:%d", config.device_id, host, port)
    try:
        server.serve_forever(poll_interval=0.2)
    finally:
        stop.set()
        server.server_close()
        if loop is not None:
            loop.join(timeout=5.0)
        if close is not None:
            close()
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="sampan-agent", description=__doc__)
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    commands = parser.add_subparsers(dest="command", required=True)

    def add_home(sub: argparse.ArgumentParser) -> None:
        sub.add_argument(
            "--home",
            type=Path,
            default=default_home(),
            help="agent state directory (default: $SAMPAN_AGENT_HOME or ~/.sampan-agent)",
        )

    enroll_parser = commands.add_parser("enroll", help="enroll this device once")
    enroll_parser.add_argument(
        "--url", required=True, help="control plane URL, e.g. http://host:8000"
    )
    enroll_parser.add_argument(
        "--token", default=os.environ.get("SAMPAN_ENROLLMENT_TOKEN"),
        help="one-time enrollment token (default: $SAMPAN_ENROLLMENT_TOKEN, which keeps it off "
             "the command line)")
    enroll_parser.add_argument("--name", help="device name (default: host name)")
    enroll_parser.add_argument(
        "--force", action="store_true",
        help="replace an existing enrollment (here, and this machine's device of the same name "
             "on the platform: its old credential stops working)"
    )
    add_home(enroll_parser)
    enroll_parser.set_defaults(func=cmd_enroll)

    run_parser = commands.add_parser("run", help="serve predictions and follow deployments")
    run_parser.add_argument("--host", default="127.0.0.1")
    run_parser.add_argument("--port", type=int, default=8700, help="0 picks a free port")
    run_parser.add_argument("--threads", type=int, default=1, help="onnxruntime intra-op threads")
    run_parser.add_argument(
        "--api-key-file", type=Path, default=None,
        help="a file holding the key /v1/predict and /metrics callers must send "
             "(Authorization: Bearer <key>); /healthz stays open")
    add_home(run_parser)
    run_parser.set_defaults(func=cmd_run)

    install_parser = commands.add_parser(
        "install-model", help="install a signed model package without a platform (air-gapped)")
    install_parser.add_argument(
        "path", type=Path,
        help="the package: a directory with manifest.json and model.onnx, or the platform's "
             "package zip")
    install_parser.add_argument(
        "--trust-key-file", type=Path, default=None,
        help="the platform's signing-key.pub (base64 of the raw Ed25519 public key): required "
             "on a device without agent.json; on one with agent.json it must be a key it "
             "already trusts")
    add_home(install_parser)
    install_parser.set_defaults(func=cmd_install_model)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
