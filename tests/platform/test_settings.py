"""Settings from the environment (sampan.settings): dev defaults, production refusals, the
database URL, the TLS proxy, and ``manage.py check --deploy`` in production mode.

Each case imports the settings in a fresh process with exactly the environment under test.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from sampan.registry import keyfile

REPO = Path(__file__).resolve().parents[2]
PLATFORM = REPO / "platform"
SECRET = "x7Vq-" * 12  # 60 characters, 5+ different ones

_PRINT = """
import json, sampan.settings as s
db = s.DATABASES["default"]
print(json.dumps({
    "env": s.SAMPAN_ENV, "debug": s.DEBUG, "hosts": s.ALLOWED_HOSTS,
    "csrf_origins": s.CSRF_TRUSTED_ORIGINS,
    "proxy_header": getattr(s, "SECURE_PROXY_SSL_HEADER", None),
    "session_secure": getattr(s, "SESSION_COOKIE_SECURE", False),
    "csrf_secure": getattr(s, "CSRF_COOKIE_SECURE", False),
    "hsts": s.SECURE_HSTS_SECONDS, "validators": len(s.AUTH_PASSWORD_VALIDATORS),
    "db": {k: db.get(k) for k in ("ENGINE", "NAME", "USER", "PASSWORD", "HOST", "PORT",
                                  "CONN_MAX_AGE", "CONN_HEALTH_CHECKS", "OPTIONS")},
    "key_file": str(s.SAMPAN_SIGNING_KEY_FILE), "upload_max": s.SAMPAN_UPLOAD_MAX_BYTES,
    "finders": s.WHITENOISE_USE_FINDERS,
}))
"""


def _env(tmp_path: Path, **values: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SAMPAN_", "DJANGO_"))}
    env.update({"PYTHONPATH": os.pathsep.join([str(REPO), str(PLATFORM)]),
                "SAMPAN_DATA_DIR": str(tmp_path / "data")})
    env.update(values)
    return env


def _production(tmp_path: Path, **values: str) -> dict[str, str]:
    key = tmp_path / "signing-key.pem"
    if not key.exists():
        keyfile.create_private_key_file(key)
    base = {"SAMPAN_ENV": "production", "SAMPAN_SECRET_KEY": SECRET,
            "SAMPAN_ALLOWED_HOSTS": "sampan.example.org,web",
            "SAMPAN_SIGNING_KEY_FILE": str(key),
            "SAMPAN_DATABASE_URL": "postgres://sampan:pw@db:5432/sampan",
            "SAMPAN_REDIS_URL": "redis://redis:6379/0"}
    return _env(tmp_path, **{**base, **values})


def _settings(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", _PRINT], env=env, cwd=PLATFORM,
                          capture_output=True, text=True, timeout=60)


def _loaded(env: dict[str, str]) -> dict[str, Any]:
    result = _settings(env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)  # type: ignore[no-any-return]


def _refused(env: dict[str, str]) -> str:
    result = _settings(env)
    assert result.returncode != 0, result.stdout
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("django.core.exceptions.ImproperlyConfigured: "), result.stderr
    return last.removeprefix("django.core.exceptions.ImproperlyConfigured: ")


def test_dev_defaults_need_nothing_set(tmp_path: Path) -> None:
    loaded = _loaded(_env(tmp_path))
    assert loaded["env"] == "dev" and loaded["debug"] is False
    assert loaded["hosts"] == ["127.0.0.1", "localhost", "testserver"]
    assert loaded["db"]["ENGINE"] == "django.db.backends.sqlite3"
    assert loaded["db"]["NAME"] == str(tmp_path / "data" / "db.sqlite3")
    assert loaded["key_file"] == str(tmp_path / "data" / "keys" / "manifest_ed25519.pem")
    assert loaded["validators"] == 4
    assert loaded["upload_max"] == 2 * 1024**3
    assert loaded["finders"] is True
    assert loaded["proxy_header"] is None and loaded["session_secure"] is False


def test_production_with_everything_set_starts(tmp_path: Path) -> None:
    loaded = _loaded(_production(tmp_path, SAMPAN_CSRF_TRUSTED_ORIGINS=(
        "https://sampan.example.org,https://other.example.org")))
    assert loaded["env"] == "production" and loaded["validators"] == 4
    assert loaded["hosts"] == ["sampan.example.org", "web"]
    assert loaded["csrf_origins"] == ["https://sampan.example.org", "https://other.example.org"]
    assert loaded["finders"] is False  # collectstatic fills STATIC_ROOT instead


_S3 = {"SAMPAN_STORAGE": "s3", "SAMPAN_S3_BUCKET": "sampan", "SAMPAN_S3_ACCESS_KEY_ID": "key",
       "SAMPAN_S3_SECRET_ACCESS_KEY": "secret", "SAMPAN_S3_REGION": "us-east-1",
       "SAMPAN_S3_ENDPOINT_URL": "http://minio:9000"}


@pytest.mark.parametrize(("values", "message"), [
    ({"SAMPAN_SECRET_KEY": ""}, "SAMPAN_SECRET_KEY must be set to a random value"),
    ({"SAMPAN_SECRET_KEY": "sampan-dev-insecure-change-me"},
     "SAMPAN_SECRET_KEY must be set to a random value"),
    ({"SAMPAN_SECRET_KEY": "too-short-a-secret"}, "at least 50 characters"),
    ({"SAMPAN_DEBUG": "true"}, "SAMPAN_DEBUG must be off when SAMPAN_ENV=production"),
    ({"SAMPAN_ALLOWED_HOSTS": ""}, "SAMPAN_ALLOWED_HOSTS must be set when SAMPAN_ENV=production"),
    ({"SAMPAN_SIGNING_KEY_FILE": ""},
     "SAMPAN_SIGNING_KEY_FILE must be set when SAMPAN_ENV=production"),
    ({"SAMPAN_ENV": "prod"}, "SAMPAN_ENV must be 'dev' or 'production', not 'prod'"),
    # dev's SQLite file and embedded Redis port are never silent choices in production
    ({"SAMPAN_DATABASE_URL": ""}, "SAMPAN_DATABASE_URL must be set when SAMPAN_ENV=production"),
    ({"SAMPAN_REDIS_URL": ""}, "SAMPAN_REDIS_URL must be set when SAMPAN_ENV=production"),
    ({"SAMPAN_STORAGE": "nfs"}, "SAMPAN_STORAGE must be 'local' or 's3', not 'nfs'"),
    ({**_S3, "SAMPAN_S3_BUCKET": ""}, "SAMPAN_S3_BUCKET must be set when SAMPAN_STORAGE=s3"),
    ({**_S3, "SAMPAN_S3_ACCESS_KEY_ID": ""},
     "SAMPAN_S3_ACCESS_KEY_ID must be set when SAMPAN_STORAGE=s3"),
    ({**_S3, "SAMPAN_S3_SECRET_ACCESS_KEY": ""},
     "SAMPAN_S3_SECRET_ACCESS_KEY must be set when SAMPAN_STORAGE=s3"),
    ({**_S3, "SAMPAN_S3_REGION": ""}, "SAMPAN_S3_REGION must be set when SAMPAN_STORAGE=s3"),
    ({**_S3, "SAMPAN_S3_URL_EXPIRE_S": "10"}, "SAMPAN_S3_URL_EXPIRE_S must be between 60"),
    ({**_S3, "SAMPAN_S3_ADDRESSING_STYLE": "sideways"},
     "SAMPAN_S3_ADDRESSING_STYLE must be path, virtual or auto"),
    # values that do not parse name their variable (a bare ValueError before)
    ({"SAMPAN_UPLOAD_MAX_BYTES": "2G"}, "SAMPAN_UPLOAD_MAX_BYTES must be an int: invalid literal"),
    ({**_S3, "SAMPAN_S3_URL_EXPIRE_S": "abc"}, "SAMPAN_S3_URL_EXPIRE_S must be an int"),
    ({"SAMPAN_BEHIND_TLS_PROXY": "maybe"},
     "SAMPAN_BEHIND_TLS_PROXY must be true or false (or 1/0, yes/no, on/off), not 'maybe'"),
    ({"SAMPAN_DATABASE_URL": "notaurl"}, "SAMPAN_DATABASE_URL is not a database URL"),
    ({**_S3, "SAMPAN_S3_ENDPOINT_URL": "minio:9000"},
     "SAMPAN_S3_ENDPOINT_URL must be an http:// or https:// URL, not 'minio:9000'"),
])
def test_production_refuses_to_start_naming_the_variable(tmp_path: Path, values: dict[str, str],
                                                         message: str) -> None:
    env = _production(tmp_path, **values)
    if not values.get("SAMPAN_SECRET_KEY", "x"):
        env.pop("SAMPAN_SECRET_KEY")
    assert message in _refused(env)


def test_s3_storage_is_the_bucket_and_downloads_are_signed_for_the_public_endpoint(
        tmp_path: Path) -> None:
    script = ("import json, sampan.settings as s; print(json.dumps({k: s.STORAGES[k] for k in "
              "('default', 'downloads')}, default=lambda c: {'connect_timeout': c.connect_timeout,"
              " 'read_timeout': c.read_timeout, 's3': c.s3, 'retries': c.retries}))")
    env = _production(tmp_path, **_S3, SAMPAN_S3_PUBLIC_ENDPOINT_URL="https://s3.example.org")
    result = subprocess.run([sys.executable, "-c", script], env=env, cwd=PLATFORM,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    storages = json.loads(result.stdout)
    assert storages["default"]["BACKEND"] == "storages.backends.s3.S3Storage"
    assert storages["default"]["OPTIONS"]["bucket_name"] == "sampan"
    assert storages["default"]["OPTIONS"]["endpoint_url"] == "http://minio:9000"
    assert storages["downloads"]["OPTIONS"]["endpoint_url"] == "https://s3.example.org"
    assert storages["default"]["OPTIONS"]["querystring_expire"] == 3600
    # bounded waits on an endpoint that hangs, and the addressing style kept in the client config
    assert storages["default"]["OPTIONS"]["client_config"] == {
        "connect_timeout": 5, "read_timeout": 30, "s3": {"addressing_style": "path"},
        "retries": {"max_attempts": 3, "mode": "standard"}}
    local = subprocess.run([sys.executable, "-c", script], env=_env(tmp_path), cwd=PLATFORM,
                           capture_output=True, text=True, timeout=60)
    assert json.loads(local.stdout)["default"]["BACKEND"] == (
        "django.core.files.storage.FileSystemStorage")


def test_production_refuses_a_missing_or_unusable_signing_key_file(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere.pem"
    assert _refused(_production(tmp_path, SAMPAN_SIGNING_KEY_FILE=str(missing))) == (
        f"SAMPAN_SIGNING_KEY_FILE: {missing} does not exist")
    garbage = tmp_path / "garbage.pem"
    garbage.write_text("not a key")
    assert _refused(_production(tmp_path, SAMPAN_SIGNING_KEY_FILE=str(garbage))).startswith(
        f"SAMPAN_SIGNING_KEY_FILE: {garbage} is not an unencrypted PEM private key")
    assert not missing.exists()  # never generated outside dev


def test_production_refuses_a_signing_key_other_users_can_read(tmp_path: Path) -> None:
    key = tmp_path / "shared-key.pem"
    keyfile.create_private_key_file(key)
    key.chmod(0o644)
    assert _refused(_production(tmp_path, SAMPAN_SIGNING_KEY_FILE=str(key))) == (
        f"SAMPAN_SIGNING_KEY_FILE: {key} can be read or written by other users (mode 0644): "
        f"chmod 600 {key} (as a Docker or Kubernetes secret: mode 0400, or defaultMode: 0400)")
    key.chmod(0o400)  # read-only for its owner, as a mounted secret
    assert _loaded(_production(tmp_path, SAMPAN_SIGNING_KEY_FILE=str(key)))["key_file"] == str(key)


def test_database_url_is_parsed_with_health_checks_and_no_persistent_connections(
        tmp_path: Path) -> None:
    db = _loaded(_production(tmp_path, SAMPAN_DATABASE_URL=(
        "postgres://sampan:s%40cret@db.internal:5433/sampan")))["db"]
    assert db == {"ENGINE": "django.db.backends.postgresql", "NAME": "sampan", "USER": "sampan",
                  "PASSWORD": "s@cret", "HOST": "db.internal", "PORT": 5433,
                  "CONN_MAX_AGE": 0, "CONN_HEALTH_CHECKS": True,
                  "OPTIONS": {"connect_timeout": 5}}  # a hung server fails a connect in 5 s
    worker_db = _loaded(_production(tmp_path, SAMPAN_DATABASE_URL=(
        "postgres://sampan:pw@db:5432/sampan?conn_max_age=60&connect_timeout=20")))["db"]
    assert worker_db["CONN_MAX_AGE"] == 60 and worker_db["CONN_HEALTH_CHECKS"] is True
    assert worker_db["OPTIONS"] == {"connect_timeout": 20}  # the URL's own value wins


def test_behind_a_tls_proxy_cookies_are_secure_and_the_forwarded_scheme_is_trusted(
        tmp_path: Path) -> None:
    loaded = _loaded(_production(tmp_path, SAMPAN_BEHIND_TLS_PROXY="true"))
    assert loaded["proxy_header"] == ["HTTP_X_FORWARDED_PROTO", "https"]
    assert loaded["session_secure"] is True and loaded["csrf_secure"] is True
    assert loaded["hsts"] == 0  # opt-in (docs/deploy.md)
    assert _loaded(_production(tmp_path, SAMPAN_HSTS_SECONDS="31536000"))["hsts"] == 31536000


def test_check_deploy_passes_in_production_behind_a_tls_proxy(tmp_path: Path) -> None:
    env = _production(tmp_path, SAMPAN_BEHIND_TLS_PROXY="true")
    result = subprocess.run([sys.executable, "manage.py", "check", "--deploy", "--fail-level",
                             "WARNING"], env=env, cwd=PLATFORM, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues" in result.stdout, result.stdout
    # served over plain HTTP the same check names the insecure cookies
    plain = subprocess.run([sys.executable, "manage.py", "check", "--deploy"], env=_production(
        tmp_path), cwd=PLATFORM, capture_output=True, text=True, timeout=120)
    assert "security.W012" in plain.stderr + plain.stdout


def test_values_may_come_from_files_as_docker_secrets_do(tmp_path: Path) -> None:
    secret_file = tmp_path / "secret_key"
    secret_file.write_text(SECRET + "\n")
    url_file = tmp_path / "database_url"
    url_file.write_text("postgres://sampan:pw@db:5432/sampan\n")
    env = _production(tmp_path, SAMPAN_SECRET_KEY_FILE=str(secret_file),
                      SAMPAN_DATABASE_URL_FILE=str(url_file))
    env.pop("SAMPAN_SECRET_KEY")
    db = _loaded(env)["db"]
    assert (db["NAME"], db["HOST"], db["PORT"]) == ("sampan", "db", 5432)


def test_allowed_hosts_of_only_separators_is_refused(tmp_path: Path) -> None:
    message = _refused(_production(tmp_path, SAMPAN_ALLOWED_HOSTS=" , "))
    assert message.startswith("SAMPAN_ALLOWED_HOSTS names no host")


def test_an_unreadable_secret_file_is_refused_naming_the_variable(tmp_path: Path) -> None:
    env = _production(tmp_path, SAMPAN_SECRET_KEY_FILE=str(tmp_path / "nope"))
    del env["SAMPAN_SECRET_KEY"]
    message = _refused(env)
    assert message.startswith(f"SAMPAN_SECRET_KEY_FILE='{tmp_path / 'nope'}'")
    assert "No such file" in message


@pytest.mark.parametrize(("url", "why"), [
    ("sampan.lan:8000", "an http(s) URL"),
    ("ftp://sampan.lan", "an http(s) URL"),
    ("http://sampan.lan:notaport", "whose port is a number"),
    ("http://admin:pw@sampan.lan:8000", "no user or password"),
    ("http://:8000", "with a host name"),
])
def test_a_public_url_devices_cannot_use_is_refused_naming_it(tmp_path: Path, url: str,
                                                               why: str) -> None:
    message = _refused(_env(tmp_path, SAMPAN_PUBLIC_URL=url))
    assert message.startswith("SAMPAN_PUBLIC_URL must be") and why in message
    assert "pw@" not in message or url in message


def test_a_usable_public_url_starts(tmp_path: Path) -> None:
    for url in ("http://192.168.1.20:8000", "https://sampan.example.org/", "http://[fd00::5]:80"):
        result = _settings(_env(tmp_path, SAMPAN_PUBLIC_URL=url))
        assert result.returncode == 0, (url, result.stderr)
