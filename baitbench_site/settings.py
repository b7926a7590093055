"""BaitBench settings: one file, read from the environment (DESIGN section 8).

Development or production: the site is in development only when told so, by `DEBUG=1` or
`BAITBENCH_DEV=1` (which `make demo`, `manage.py demo` and the tests set). Everything else is
production: it refuses to start on the published development key, a weak key or
`ALLOWED_HOSTS=*` (one line naming what to set, `baitbench_site.production`), sends cookies
over HTTPS only, asks browsers for HSTS and serves static files from hashed, compressed copies.
The README's "Production" section lists every setting.
"""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

import dj_database_url

from baitbench_site.production import DEVELOPMENT_KEY, UnsafeSettings, unsafe_setting

BASE_DIR = Path(__file__).resolve().parent.parent


def envbool(name: str, default: bool) -> bool:
    return os.environ.get(name, str(default)).strip().lower() in {"1", "true", "yes", "on"}


def envint(name: str, default: int) -> int:
    return int(os.environ.get(name, default))


def envfloat(name: str, default: float) -> float:
    return float(os.environ.get(name, default))


def envlist(name: str, default: str = "") -> list[str]:
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


SQLITE_SCHEMES = {"sqlite"}
POSTGRES_SCHEMES = {"postgres", "postgresql", "pgsql"}


def database_from_url(url: str) -> dict:
    """`sqlite:///relative/or/absolute.db` or `postgres://user:pass@host:port/name`.

    dj-database-url parses the URL (quoting, ports, `?sslmode=...` options); what is ours is
    the project-relative SQLite path, SQLite's concurrency options and the test-name hooks.
    """
    scheme = url.partition("://")[0]
    if scheme not in SQLITE_SCHEMES | POSTGRES_SCHEMES:
        raise ValueError(f"DATABASE_URL: unsupported scheme {scheme!r} "
                         "(use sqlite:///path or postgres://user:pass@host:port/name)")
    config = dj_database_url.parse(url, conn_max_age=0)
    if scheme in POSTGRES_SCHEMES:
        # Lets parallel checkouts on one server keep their test databases apart.
        config["TEST"] = {"NAME": os.environ.get("BAITBENCH_TEST_DB")}
        return config
    # sqlite:///var/x.db is relative to the project; sqlite:////tmp/x.db is absolute.
    if config["NAME"] != ":memory:" and not Path(config["NAME"]).is_absolute():
        config["NAME"] = str(BASE_DIR / config["NAME"])
    config["OPTIONS"] = {
        # Queue workers write concurrently: WAL lets readers continue during a
        # write, IMMEDIATE takes the write lock at BEGIN (no upgrade deadlocks),
        # and the timeout makes a second writer wait instead of failing.
        "transaction_mode": "IMMEDIATE",
        "timeout": 30,
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        **config.get("OPTIONS", {}),
    }
    config["TEST"] = {"NAME": os.environ.get("BAITBENCH_TEST_SQLITE")}
    return config


DEBUG = envbool("DEBUG", False)
DEVELOPMENT = DEBUG or envbool("BAITBENCH_DEV", False)
SECRET_KEY = os.environ.get("SECRET_KEY", "") or (DEVELOPMENT_KEY if DEVELOPMENT else "")
ALLOWED_HOSTS = envlist("ALLOWED_HOSTS", "127.0.0.1,localhost,testserver")
if not DEVELOPMENT and (problem := unsafe_setting(secret_key=SECRET_KEY,
                                                   allowed_hosts=ALLOWED_HOSTS)):
    raise UnsafeSettings(problem)

# HTTPS. Production runs behind a proxy that terminates TLS (README, "Production"); with
# BAITBENCH_BEHIND_PROXY=1 its X-Forwarded-Proto says whether the visitor used HTTPS, and its
# X-Forwarded-For who the visitor is (for the login throttle and the arena's rate limits:
# `baitbench_site.security.client_address`). Never set it without such a
# proxy: a visitor could then claim HTTPS, or any address, with a header of their own.
BEHIND_PROXY = envbool("BAITBENCH_BEHIND_PROXY", False)
if BEHIND_PROXY:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_SSL_REDIRECT = envbool("SECURE_SSL_REDIRECT", not DEVELOPMENT)
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = not DEVELOPMENT
SECURE_HSTS_SECONDS = envint("SECURE_HSTS_SECONDS", 0 if DEVELOPMENT else 365 * 24 * 3600)
SECURE_HSTS_INCLUDE_SUBDOMAINS = envbool("SECURE_HSTS_INCLUDE_SUBDOMAINS", True)
SECURE_HSTS_PRELOAD = envbool("SECURE_HSTS_PRELOAD", True)
CSRF_TRUSTED_ORIGINS = envlist("CSRF_TRUSTED_ORIGINS")

# Sessions: two weeks for anyone; a staff login ends BAITBENCH_STAFF_SESSION_SECONDS after it
# began, however active it was (`baitbench_site.security.staff_session_expiry`).
SESSION_COOKIE_AGE = envint("SESSION_COOKIE_AGE", 14 * 24 * 3600)
BAITBENCH_STAFF_SESSION_SECONDS = envint("BAITBENCH_STAFF_SESSION_SECONDS", 8 * 3600)

# Staff passwords (`manage.py staff_add`, `demo --password`, the admin's password forms): at
# least 12 characters, not a common password, not all digits, not like the user name, and no
# pattern a guesser tries first (baitbench_site.passwords). Logins reach unpublished releases
# and the writers of blind pairs.
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator",
     "OPTIONS": {"min_length": 12}},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
    # Repeats, keyboard runs, few different characters, the login name inside it.
    {"NAME": "baitbench_site.passwords.PatternValidator"},
]

# Login throttle (django-axes): after AXES_FAILURE_LIMIT failed logins from one address, or
# for one user name from anywhere, further logins are refused (429) for the cool-off time; a
# successful login clears the count. Tests log in with `force_login`, which never reaches it.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = envint("BAITBENCH_LOGIN_FAILURES", 5)
AXES_COOLOFF_TIME = timedelta(minutes=envint("BAITBENCH_LOGIN_COOLOFF_MINUTES", 30))
AXES_LOCKOUT_PARAMETERS = ["ip_address", "username"]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_TEMPLATE = "lockout.html"
if BEHIND_PROXY:
    AXES_CLIENT_IP_CALLABLE = "baitbench_site.security.client_ip_behind_proxy"

INSTALLED_APPS = [
    # django.contrib.admin, whose discovery commands that never use it skip (manage.py).
    "baitbench_site.apps.SiteAdminConfig",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    # Before staticfiles: `runserver` leaves static files to WhiteNoise, as production does.
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "axes",
    "scenarios_app",
    "runs_app",
    "audits_app",
    "baitbench_site.apps.SiteConfig",
    # Form widgets render from the same template directories as pages, so templates/ can
    # mend a widget of the admin's (templates/admin/widgets/split_datetime.html).
    "django.forms",
    # After runs_app: the first app naming a management command wins, and runs_app's
    # `qcluster` (which stops within seconds on SIGTERM) replaces django-q2's.
    "django_q",
]
FORM_RENDERER = "django.forms.renderers.TemplatesSetting"

MIDDLEWARE = [
    # First, so that it sees every response, with every cookie set: `private, no-store` unless
    # a view made it cacheable for an anonymous reader (WhiteNoise's files keep their own).
    "baitbench_site.cache_headers.CacheControlMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    # Before the CSRF check: a method the view does not take is a 405, not a 403.
    "baitbench_site.methods.MethodNotAllowedFirstMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # The admin's read-only relations link only for a user who may open them (admin_links).
    "baitbench_site.admin_links.AdminRequestMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "baitbench_site.errors.RefusedChangeMiddleware",
    "baitbench_site.errors.MethodNotAllowedMiddleware",
    # Last, as django-axes asks: it turns a throttled login into the lockout page.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "baitbench_site.urls"
CSRF_FAILURE_VIEW = "baitbench_site.errors.csrf_failure"
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
                "baitbench_site.navigation.navigation",
            ],
        },
    },
]
WSGI_APPLICATION = "baitbench_site.wsgi.application"

DATABASES = {
    "default": database_from_url(os.environ.get("DATABASE_URL", "sqlite:///var/baitbench.sqlite3"))
}
# Connections are closed after each request unless BAITBENCH_DB_CONN_MAX_AGE (seconds) says to
# keep them: gunicorn.conf.py keeps them for the web workers, where opening a PostgreSQL
# connection (a server process forked per connection) cost more than most arena requests.
# A kept connection is checked before a request uses it.
DATABASES["default"]["CONN_MAX_AGE"] = envint("BAITBENCH_DB_CONN_MAX_AGE", 0)
DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

LANGUAGE_CODE = "en"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True
STATIC_URL = "static/"
STATIC_ROOT = Path(os.environ.get("BAITBENCH_STATIC_ROOT", BASE_DIR / "var" / "static"))
STATICFILES_DIRS = [BASE_DIR / "static"]
# Production serves `collectstatic`'s hashed, compressed copies (cached for a year); development
# serves the files where they lie, so neither the demo nor the tests need `collectstatic`.
# Production's storage is WhiteNoise's, each file's URL worked out once per process.
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"
                    if DEVELOPMENT
                    else "baitbench_site.static_storage.CompressedManifestStaticFilesStorage"},
}
# Development looks files up per request (edits show at once, no scan at start-up).
WHITENOISE_USE_FINDERS = WHITENOISE_AUTOREFRESH = DEVELOPMENT
# Uploaded files (the arena's ethics decision letters); served by views that check who asks,
# never as public static files.
MEDIA_ROOT = Path(os.environ.get("BAITBENCH_MEDIA_ROOT", BASE_DIR / "var" / "media"))
MEDIA_URL = "media/"
LOGIN_URL = "/admin/login/"
LOGIN_REDIRECT_URL = "/staff/"  # baitbench_site.navigation: each role's own landing page

REST_FRAMEWORK = {
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.LimitOffsetPagination",
    "PAGE_SIZE": 100,
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.AllowAny"],
    # A query parameter's value the API does not accept (`?format=xml`, `?limit=abc`, a filter
    # no text has) is a 400 naming it: `audits_app.query_params`.
    "DEFAULT_CONTENT_NEGOTIATION_CLASS": "audits_app.api.errors.FormatNegotiation",
    "EXCEPTION_HANDLER": "audits_app.api.errors.exception_handler",
    # Staff see drafts and held-out texts through their admin login (throttled, expiring);
    # the API takes no password of its own, so the login form is the one place to guess at.
    "DEFAULT_AUTHENTICATION_CLASSES": ["rest_framework.authentication.SessionAuthentication"],
}
SPECTACULAR_SETTINGS = {
    "TITLE": "BaitBench API",
    "DESCRIPTION": "Published BaitBench releases: leaderboards, per-text scores, scenarios. "
                   "Every endpoint is public and answers without signing in; staff signed in "
                   "to the site also see drafts and held-out material. The simulated public "
                   "supports ranking only, never effect sizes.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    # /api/v1/docs/ loads Swagger UI from our own static files (drf-spectacular-sidecar), and
    # asks no outside validator about the schema: the page makes no request off the site.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # No deep links: Swagger UI draws each operation's link inside its summary button, a
    # link inside a button that keyboards and screen readers cannot reach (axe-core).
    "SWAGGER_UI_SETTINGS": {"deepLinking": False, "validatorUrl": None},
    # Every endpoint answers anonymously (published data); a staff session sees drafts and
    # held-out material too. Listing the session as a security scheme put a padlock and an
    # "Authorize" button on endpoints that need neither.
    "AUTHENTICATION_WHITELIST": [],
    # Every operation refuses a parameter it does not take with a 400: the schema says so.
    "POSTPROCESSING_HOOKS": ["drf_spectacular.hooks.postprocess_schema_enums",
                             "audits_app.api.errors.document_refused_parameters"],
    # One name for the compare answer's reasons, used by two fields (each would name it).
    "ENUM_NAME_OVERRIDES": {
        "ComparabilityFieldEnum": "audits_app.leaderboard.compare.COMPARABILITY_FIELDS"},
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
    # Seconds an idle cluster waits between looks at the ORM queue (the Redis broker blocks
    # instead): a run's drains start up to this long after they are queued, each cluster at
    # its own phase, and a stage shared by N workers ends no sooner than its last drain's
    # start plus its share (bench/scaleout.py). One small query per look: an idle cluster of
    # one worker used 1.9 % of a core at 0.5, 2.3 % at 0.2, 3.4 % at 0.1.
    "poll": float(os.environ.get("BAITBENCH_Q_POLL", 0.2)),
    "label": "Background work",
}
# A drain task stops claiming after this long, well inside `timeout`, so the calls it has in
# flight finish and are written before django-q would kill it; the stage goes on in a new task.
BAITBENCH_DRAIN_SECONDS = envint("BAITBENCH_DRAIN_SECONDS", int(Q_CLUSTER["timeout"] * 0.6))
if os.environ.get("REDIS_URL"):
    Q_CLUSTER["redis"] = os.environ["REDIS_URL"]
else:
    Q_CLUSTER["orm"] = "default"

# The cache holds the arena's rate-limit counts: every web process must count in the same one,
# or each process allows the limit on its own. BAITBENCH_CACHE_URL (or else REDIS_URL) puts it
# on Redis; without either it is per process (fine for one process: `make demo`, the tests).
CACHE_URL = os.environ.get("BAITBENCH_CACHE_URL") or os.environ.get("REDIS_URL", "")
if CACHE_URL:
    CACHES = {"default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": CACHE_URL,
        # Instances sharing one Redis keep their counts apart.
        "KEY_PREFIX": os.environ.get("BAITBENCH_CACHE_PREFIX", "baitbench"),
    }}
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
# The workers' heartbeat (django-q2's cluster status, saved every half second) must be kept
# where the site can read it: on Redis when the broker or the cache is there; on the embedded
# SQLite database, whose workers all run on its machine, in a directory beside its file. On
# PostgreSQL without Redis there is no store that workers on other machines share, and the
# run page says the heartbeat cannot be read rather than guess.
embedded_database = DATABASES["default"]["ENGINE"].endswith("sqlite3")
if not CACHE_URL and "redis" not in Q_CLUSTER and embedded_database:
    CACHES["workers"] = {"BACKEND": "baitbench_site.caches.LazyDirectoryFileCache",
                         "LOCATION": f"{DATABASES['default']['NAME']}.workers"}
    Q_CLUSTER["cache"] = "workers"

BAITBENCH_PROVIDER = os.environ.get("BAITBENCH_PROVIDER", "fixture")
SCENARIOS_DIR = BASE_DIR / "scenarios"
RELEASES_DIR = Path(os.environ.get("BAITBENCH_RELEASES_DIR", BASE_DIR / "releases"))
# How long a claimed row stays claimed before another worker may take it over.
BAITBENCH_LEASE_SECONDS = envint("BAITBENCH_LEASE_SECONDS", 1200)
# OpenRouter's models list (preflight: ids, limits, prices) is fetched again when the cached
# copy is older than this many hours.
BAITBENCH_MODELS_LIST_HOURS = envint("BAITBENCH_MODELS_LIST_HOURS", 24)
# Model calls in flight per draining worker (the provider also caps its own concurrency).
BAITBENCH_CONCURRENCY = envint("BAITBENCH_CONCURRENCY", 50)
# At most this many drain tasks of one release are queued or running at once. A django-q2
# cluster takes up to W + W^2 + 1 tasks off the queue before it can run them (W running, W^2
# in its own queue, one in its pusher's hand; W = BAITBENCH_Q_WORKERS), so clusters that start
# first hold the tickets and a later one gets none: set it to at least that sum over the
# qcluster processes on every machine (3 per single-worker cluster). bench/scaleout.py: four
# single-worker clusters drained with 3 of 4 at 8 tickets, with all 4 at 12.
BAITBENCH_DRAINS_PER_RELEASE = envint("BAITBENCH_DRAINS_PER_RELEASE", 8)
# A drain that runs out of work while other workers still hold rows of its release waits
# this long (seconds) for the work their results plan (a text's next stage) before it ends.
BAITBENCH_DRAIN_WAIT = envint("BAITBENCH_DRAIN_WAIT", 30)
# A running drain records a heartbeat at least this often (seconds, fractions allowed); one
# silent for six beats is taken for dead and its rows go to other workers.
BAITBENCH_DRAIN_HEARTBEAT_SECONDS = envfloat("BAITBENCH_DRAIN_HEARTBEAT_SECONDS", 10)
# A queued drain no worker has started after this long (seconds, fractions allowed) is taken
# as lost by the queue.
BAITBENCH_QUEUED_STALE_SECONDS = envfloat("BAITBENCH_QUEUED_STALE_SECONDS", 60)

# Everything goes to stderr, which gunicorn and the service manager keep. A server error is
# logged once, with its traceback and the reference its page shows (`baitbench_site.errors`);
# `django.security` reports refused hosts and CSRF failures, `axes` locked-out logins.
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "loggers": {
        "baitbench": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
        "django.security": {"handlers": ["console"], "level": "WARNING", "propagate": False},
        "axes": {"handlers": ["console"], "level": "WARNING", "propagate": False},
    },
}

# Reading studies (DESIGN section 10): the URL parameters a recruitment platform sends (the
# participant's id first; Prolific's by default) and the key their HMACs are made with. Only
# the keyed hashes are stored; without BAITBENCH_STUDY_ID_KEY the key derives from SECRET_KEY.
STUDY_PLATFORM_PARAMETERS = envlist("BAITBENCH_STUDY_PLATFORM_PARAMETERS",
                                    "PROLIFIC_PID,STUDY_ID,SESSION_ID")
STUDY_ID_KEY = os.environ.get("BAITBENCH_STUDY_ID_KEY", "")

# Release archives (audits_app/archive/signing.py): the path of the PEM file holding this
# instance's Ed25519 private key, which signs every archive it exports (none: unsigned), and
# the public keys whose archives it imports as verified: OpenSSH lines (`ssh-ed25519 AAAA…
# name`, as `manage.py archive_key` prints them), separated by commas or new lines.
ARCHIVE_SIGNING_KEY_FILE = os.environ.get("BAITBENCH_ARCHIVE_SIGNING_KEY", "")
ARCHIVE_TRUSTED_KEYS = os.environ.get("BAITBENCH_ARCHIVE_TRUSTED_KEYS", "")
