"""``make run`` (sampan.devstack.run): the admin account is created once and its password is
never reset by a later start."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sampan.devstack.run import ensure_admin
from sampan.devstack.stack import Stack
from tests.database import stack_database_url

CHECK = ("from django.contrib.auth import get_user_model; "
         "u = get_user_model().objects.get(username='admin'); "
         "print(u.check_password('{password}'), u.is_superuser)")


def test_a_second_start_leaves_the_admin_password(tmp_path: Path) -> None:
    stack = Stack(data_dir=tmp_path / "stack", database_url=stack_database_url())
    stack.migrate()
    first = ensure_admin(stack, "admin", "sampan-dev")
    assert first["created"] is True

    second = ensure_admin(stack, "admin", "another-default-password")

    assert second["created"] is False and second["password_set"] is False
    assert second["token"] != first["token"]
    check = stack.manage("shell", "-c", CHECK.format(password="sampan-dev"))
    assert check.stdout.strip().splitlines()[-1] == "True True"


def test_network_settings_for_a_server_on_every_interface(monkeypatch: Any) -> None:
    import sampan.devstack.run as run

    monkeypatch.setattr(run, "lan_address", lambda: "192.168.1.20")
    env = run.network_env("0.0.0.0", 8000, {})
    assert env["SAMPAN_PUBLIC_URL"] == "http://192.168.1.20:8000"
    hosts = env["SAMPAN_ALLOWED_HOSTS"].split(",")
    assert hosts[0] == "192.168.1.20" and "127.0.0.1" in hosts and "localhost" in hosts
    assert "http://192.168.1.20:8000" in env["SAMPAN_CSRF_TRUSTED_ORIGINS"].split(",")
    # what the operator set stays as it is; loopback needs nothing
    kept = run.network_env("0.0.0.0", 8000, {"SAMPAN_PUBLIC_URL": "https://sampan.lan",
                                              "SAMPAN_ALLOWED_HOSTS": "sampan.lan"})
    assert "SAMPAN_PUBLIC_URL" not in kept and "SAMPAN_ALLOWED_HOSTS" not in kept
    # an operator's public URL is a host browsers and devices use: allowed, a trusted origin
    named = run.network_env("0.0.0.0", 8000, {"SAMPAN_PUBLIC_URL": "http://sampan.lan:8000/"})
    assert named["SAMPAN_ALLOWED_HOSTS"].split(",")[0] == "sampan.lan"
    assert named["SAMPAN_CSRF_TRUSTED_ORIGINS"].split(",")[0] == "http://sampan.lan:8000"
    assert "SAMPAN_PUBLIC_URL" not in named
    assert run.network_env("127.0.0.1", 8000, {}) == {}
    # a named address is the public one
    assert run.network_env("10.1.2.3", 9000, {})["SAMPAN_PUBLIC_URL"] == "http://10.1.2.3:9000"


def test_make_run_host_listens_beyond_loopback(tmp_path: Path) -> None:
    """``web_host="0.0.0.0"`` (``make run HOST=0.0.0.0``): the web server answers on an address
    other than 127.0.0.1 (127.0.0.2 reaches this machine, but not a server bound to
    127.0.0.1 only), as the stack's own processes still reach it on 127.0.0.1."""
    import requests

    from sampan.devstack.run import network_env
    from sampan.devstack.stack import free_port

    port = free_port()
    env = network_env("0.0.0.0", port, {})
    env["SAMPAN_ALLOWED_HOSTS"] += ",127.0.0.2"
    stack = Stack(data_dir=tmp_path / "stack", database_url=stack_database_url(), web_port=port,
                  web_host="0.0.0.0", extra_env=env)
    try:
        stack.migrate()
        stack.start_web()  # waits for 127.0.0.1
        assert requests.get(f"http://127.0.0.2:{port}/healthz", timeout=5).status_code == 200
    finally:
        stack.stop()


def test_the_loopback_default_is_not_reachable_on_other_addresses(tmp_path: Path) -> None:
    """The default (127.0.0.1) refuses 127.0.0.2: what the test above relies on."""
    import requests

    stack = Stack(data_dir=tmp_path / "stack", database_url=stack_database_url())
    try:
        stack.migrate()
        stack.start_web()
        try:
            requests.get(f"http://127.0.0.2:{stack.web_port}/healthz", timeout=5)
        except requests.ConnectionError:
            pass
        else:
            raise AssertionError("a server bound to 127.0.0.1 answered on 127.0.0.2")
    finally:
        stack.stop()
