"""BaitBench settings: one file, read from the environment (DESIGN section 8)."""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

BASE_DIR = Path(__file__).resolve().parent.parent


def envbool(name: str, default: bool) -> bool:
    return os.environ.get(name, str(default)).strip().lower() in {"1", "true", "yes", "on"}


def envint(name: str, default: int) -> int:
    return int(os.environ.get(name, default))


def database_from_url(url: str) -> dict:
    """`sqlite:///relative/or/absolute.db` or `postgres://user:pass@host:port/name`."""
    parts = urlsplit(url)
    if parts.scheme == "sqlite":
        path = unquote(parts.path)
        # sqlite:///var/x.db is relative to the project; sqlite:////tmp/x.db is absolute.
        name = path[1:]
        if not Path(name).is_absolute():
            name = str(BASE_DIR / name)
        return {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": name,
            "OPTIONS": {
                # Queue workers write concurrently: WAL lets readers continue during a
                # write, IMMEDIATE takes the write lock at BEGIN (no upgrade deadlocks),
                # and the timeout makes a second writer wait instead of failing.
                "transaction_mode": "IMMEDIATE",
                "timeout": 30,
                "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
            },
            "TEST": {"NAME": os.environ.get("BAITBENCH_TEST_SQLITE")},
        }
    if parts.scheme in {"postgres", "postgresql", "pgsql"}:
        options = {key: values[-1] for key, values in parse_qs(parts.query).items()}
        return {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": unquote(parts.path.lstrip("/")),
            "USER": unquote(parts.username or ""),
            "PASSWORD": unquote(parts.password or ""),
            "HOST": parts.hostname or "",
            "PORT": str(parts.port or ""),
            "OPTIONS": options,
            "CONN_MAX_AGE": 0,
            # Lets parallel checkouts on one server keep their test databases apart.
            "TEST": {"NAME": os.environ.get("BAITBENCH_TEST_DB")},
        }
    raise ValueError(f"DATABASE_URL: unsupported scheme {parts.scheme!r}")


SECRET_KEY = os.environ.get("SECRET_KEY", "baitbench-insecure-development-key")
DEBUG = envbool("DEBUG", False)
ALLOWED_HOSTS = os.environ.get("ALLOWED_HOSTS", "127.0.0.1,localhost,testserver").split(",")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "django_q",
    "scenarios_app",
    "runs_app",
    "audits_app",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "baitbench_site.urls"
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]
WSGI_APPLICATION = "baitbench_site.wsgi.application"

DATABASES = {
    "default": database_from_url(os.environ.get("DATABASE_URL", "sqlite:///var/baitbench.sqlite3"))
}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

LANGUAGE_CODE = "en"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True
STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "var" / "static"
# Uploaded files (the arena's ethics decision letters); served by views that check who asks,
# never as public static files.
MEDIA_ROOT = Path(os.environ.get("BAITBENCH_MEDIA_ROOT", BASE_DIR / "var" / "media"))
MEDIA_URL = "media/"
LOGIN_URL = "/admin/login/"

REST_FRAMEWORK = {
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.LimitOffsetPagination",
    "PAGE_SIZE": 100,
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.AllowAny"],
}
SPECTACULAR_SETTINGS = {
    "TITLE": "BaitBench API",
    "DESCRIPTION": "Published BaitBench releases: leaderboards, per-text scores, scenarios.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
}

# django-q2: the ORM broker by default (no server needed), Redis when REDIS_URL is set.
# `timeout` stays below `retry` so a task is never redelivered while it still runs, and
# `max_attempts` bounds redelivery: the queue delivers at least once, and the work tables
# (not the queue) decide what still needs doing (DESIGN section 5).
Q_CLUSTER: dict = {
    # The queue's name (and, on Redis, its key): separate clusters sharing a broker use
    # different names.
    "name": os.environ.get("BAITBENCH_Q_NAME", "baitbench"),
    "workers": envint("BAITBENCH_Q_WORKERS", 2),
    "timeout": envint("BAITBENCH_Q_TIMEOUT", 1800),
    "retry": envint("BAITBENCH_Q_RETRY", 2100),
    "max_attempts": 3,
    "save_limit": 250,
    "catch_up": False,
    "poll": 0.5,
    "label": "Background work",
}
# A drain task stops claiming after this long, well inside `timeout`, so the calls it has in
# flight finish and are written before django-q would kill it; the stage goes on in a new task.
BAITBENCH_DRAIN_SECONDS = envint("BAITBENCH_DRAIN_SECONDS", int(Q_CLUSTER["timeout"] * 0.6))
if os.environ.get("REDIS_URL"):
    Q_CLUSTER["redis"] = os.environ["REDIS_URL"]
else:
    Q_CLUSTER["orm"] = "default"

BAITBENCH_PROVIDER = os.environ.get("BAITBENCH_PROVIDER", "fixture")
SCENARIOS_DIR = BASE_DIR / "scenarios"
RELEASES_DIR = Path(os.environ.get("BAITBENCH_RELEASES_DIR", BASE_DIR / "releases"))
# How long a claimed row stays claimed before another worker may take it over.
BAITBENCH_LEASE_SECONDS = envint("BAITBENCH_LEASE_SECONDS", 1200)
# Model calls in flight per draining worker (the provider also caps its own concurrency).
BAITBENCH_CONCURRENCY = envint("BAITBENCH_CONCURRENCY", 50)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "loggers": {
        "baitbench": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
    },
}
