"""Sillo Dash settings, read from the environment.

Defaults are safe for production (DEBUG off, hosts limited to this machine);
`make run` turns on what development needs. See docs/settings.md.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from datetime import timedelta
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured
from django.utils.csp import CSP

BASE_DIR = Path(__file__).resolve().parent.parent
DATA_DIR = Path(os.environ.get("SILLO_DATA_DIR", BASE_DIR / "data"))


def env_bool(name: str, default: bool = False) -> bool:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    if value.lower() in ("1", "true", "yes", "on"):
        return True
    if value.lower() in ("0", "false", "no", "off"):
        return False
    raise ImproperlyConfigured(f"{name} must be true or false, got {value!r}")


def env_list(name: str, default: str) -> list[str]:
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


def _private_data_dir() -> None:
    """The data folder holds the SQLite database (password hashes, sessions) and the
    generated key: readable by this user only (0700, files 0600), however it was made."""
    DATA_DIR.mkdir(mode=0o700, parents=True, exist_ok=True)
    if DATA_DIR.stat().st_uid == os.getuid():
        DATA_DIR.chmod(0o700)
    for name in ("sillo.sqlite3", "sillo.sqlite3-wal", "sillo.sqlite3-shm", "secret_key"):
        path = DATA_DIR / name
        if path.exists() and path.stat().st_uid == os.getuid():
            path.chmod(0o600)


def _private_file(path: Path) -> None:
    """Create `path` empty with mode 0600 if missing: SQLite then keeps that mode, and
    gives its -wal and -shm files the same."""
    with contextlib.suppress(FileExistsError):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))


def _secret_key() -> str:
    """DJANGO_SECRET_KEY, or a key generated once and kept in the data folder.

    Nothing secret is ever committed; a deployment sets DJANGO_SECRET_KEY
    (`check --deploy` fails without it outside DEBUG: several hosts would each
    generate their own key), a development machine gets its own key.
    """
    key = os.environ.get("DJANGO_SECRET_KEY")
    if key:
        return key
    path = DATA_DIR / "secret_key"
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        _private_data_dir()
        key = secrets.token_urlsafe(50)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(key)
        return key


DEBUG = env_bool("DJANGO_DEBUG", False)
SECRET_KEY = _secret_key()
# Read by the deploy check (schedules.checks): a generated key is for one machine only.
SILLO_SECRET_KEY_FROM_ENV = bool(os.environ.get("DJANGO_SECRET_KEY"))
ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS", "localhost,127.0.0.1,[::1]")
CSRF_TRUSTED_ORIGINS = env_list("DJANGO_CSRF_TRUSTED_ORIGINS", "")

INSTALLED_APPS = [
    "daphne",  # first, so runserver is ASGI
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "channels",
    "django_htmx",
    "django_tasks_db",
    "axes",
    "schedules",
    # The reference project's demo tasks and its `demo` / `ensureadmin` commands:
    # not part of the reusable app, so a host gets none of them.
    "sillo_dash.demo",
]

# Where `dispatch="enqueue"` runs go: the database backend, run by
# `manage.py db_worker`. See docs/deploy.md for RQ or Celery.
TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend", "QUEUES": ["default"]}}

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.auth.middleware.LoginRequiredMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "schedules.web.middleware.OperatorTimezoneMiddleware",
    "django.middleware.csp.ContentSecurityPolicyMiddleware",
    # Last, as django-axes asks: it turns a lockout raised during login into its response.
    "axes.middleware.AxesMiddleware",
]

# Login throttling (django-axes) on /login/ and /admin/login/: after
# SILLO_LOGIN_FAILURE_LIMIT wrong passwords for one username from one address,
# that pair is refused for SILLO_LOGIN_COOLOFF_MINUTES (429, "too many attempts").
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = int(os.environ.get("SILLO_LOGIN_FAILURE_LIMIT", "5"))
AXES_COOLOFF_TIME = timedelta(minutes=float(os.environ.get("SILLO_LOGIN_COOLOFF_MINUTES", "15")))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_CALLABLE = "schedules.web.views.lockout.locked_out"

# Content Security Policy (Django's own): scripts and styles from this origin
# only; no inline scripts, handlers or styles anywhere (templates and htmx config).
SECURE_CSP = {
    "default-src": [CSP.SELF],
    "script-src": [CSP.SELF],
    "style-src": [CSP.SELF],
    "img-src": [CSP.SELF, "data:"],
    "connect-src": [CSP.SELF],
    "font-src": [CSP.SELF],
    "object-src": [CSP.NONE],
    "base-uri": [CSP.SELF],
    "form-action": [CSP.SELF],
    "frame-ancestors": [CSP.NONE],
}

ROOT_URLCONF = "sillo_dash.urls"
ASGI_APPLICATION = "sillo_dash.asgi.application"
WSGI_APPLICATION = None

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

# SQLite is the embedded default. WAL lets the web process read while the
# scheduler writes; IMMEDIATE transactions take the write lock up front so a
# busy database waits (timeout) instead of failing mid-transaction.
SQLITE_OPTIONS = {
    "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    "transaction_mode": "IMMEDIATE",
    "timeout": 20,
}
DATABASES = {
    "default": dj_database_url.config(
        env="DATABASE_URL",
        default=f"sqlite:///{DATA_DIR / 'sillo.sqlite3'}",
        conn_max_age=0,
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    DATABASES["default"].setdefault("OPTIONS", {}).update(SQLITE_OPTIONS)
    if not os.environ.get("DATABASE_URL"):
        _private_data_dir()
        _private_file(DATA_DIR / "sillo.sqlite3")

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

REDIS_URL = os.environ.get("REDIS_URL", "")
if REDIS_URL:
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            # redis-py's default 5 s socket timeout equals channels_redis' 5 s blocking
            # receive, so idle listeners would time out; give reads more room.
            "CONFIG": {"hosts": [{"address": REDIS_URL, "socket_timeout": 15}]},
        }
    }
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "schedules:home"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = os.environ.get("DJANGO_TIME_ZONE", "UTC")
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = Path(os.environ.get("DJANGO_STATIC_ROOT", BASE_DIR / "staticfiles"))
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"
        if DEBUG
        else "whitenoise.storage.CompressedManifestStaticFilesStorage"
    },
}
WHITENOISE_USE_FINDERS = DEBUG

# Production-safe transport defaults; a deployment behind TLS keeps them on.
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SECURE = env_bool("DJANGO_SECURE_COOKIES", not DEBUG)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
SECURE_SSL_REDIRECT = env_bool("DJANGO_SSL_REDIRECT", False)
SECURE_HSTS_SECONDS = int(os.environ.get("DJANGO_HSTS_SECONDS", "0"))
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("DJANGO_HSTS_INCLUDE_SUBDOMAINS", False)
SECURE_HSTS_PRELOAD = env_bool("DJANGO_HSTS_PRELOAD", False)
SECURE_PROXY_SSL_HEADER = (
    ("HTTP_X_FORWARDED_PROTO", "https") if env_bool("DJANGO_BEHIND_TLS_PROXY", False) else None
)

# Prometheus /metrics: "off" (default), "token" (Authorization: Bearer
# SILLO_METRICS_TOKEN) or "public" (for a scraper on a private network).
SILLO_METRICS = os.environ.get("SILLO_METRICS", "off")
if SILLO_METRICS not in ("off", "token", "public"):
    raise ImproperlyConfigured("SILLO_METRICS must be off, token or public")
SILLO_METRICS_TOKEN = os.environ.get("SILLO_METRICS_TOKEN", "")
# /health/ details (instances, hosts, counts) for staff, or for `Authorization:
# Bearer SILLO_HEALTH_TOKEN`; anonymous callers get the status and problems only.
SILLO_HEALTH_TOKEN = os.environ.get("SILLO_HEALTH_TOKEN", "")
if SILLO_METRICS == "token" and len(SILLO_METRICS_TOKEN) < 16:
    raise ImproperlyConfigured("SILLO_METRICS=token needs SILLO_METRICS_TOKEN of 16+ characters")

# Alerts (docs/alerts.md): channel URLs for every incident notification, and
# the address links in notifications point to.
SILLO_NOTIFY = env_list("SILLO_NOTIFY", "")
SILLO_BASE_URL = os.environ.get("SILLO_BASE_URL", "http://localhost:8000")

# Email (the `mailto:` channel) through Django's mailers.
MAILERS = {
    "default": {
        "BACKEND": "django.core.mail.backends.smtp.EmailBackend",
        "OPTIONS": {
            "host": os.environ.get("DJANGO_EMAIL_HOST", "localhost"),
            "port": int(os.environ.get("DJANGO_EMAIL_PORT", "25")),
            "username": os.environ.get("DJANGO_EMAIL_USER", ""),
            "password": os.environ.get("DJANGO_EMAIL_PASSWORD", ""),
            "use_tls": env_bool("DJANGO_EMAIL_USE_TLS", False),
            "use_ssl": env_bool("DJANGO_EMAIL_USE_SSL", False),
            "timeout": 10,
        },
    }
}
DEFAULT_FROM_EMAIL = os.environ.get("DJANGO_DEFAULT_FROM_EMAIL", "sillo@localhost")
SERVER_EMAIL = DEFAULT_FROM_EMAIL

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "plain": {
            "()": "sillo_dash.logfilters.PrintableFormatter",
            "format": "%(asctime)s %(levelname)s %(name)s: %(message)s",
        }
    },
    "filters": {
        "client_errors": {"()": "sillo_dash.logfilters.ClientErrorsWithoutTraceback"},
        "require_debug_false": {"()": "django.utils.log.RequireDebugFalse"},
    },
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "formatter": "plain",
            "filters": ["client_errors"],
        },
        # Django's default, kept: server errors mailed to ADMINS (none are set here).
        "mail_admins": {
            "level": "ERROR",
            "filters": ["require_debug_false"],
            "class": "django.utils.log.AdminEmailHandler",
        },
    },
    "root": {"handlers": ["console"], "level": os.environ.get("DJANGO_LOG_LEVEL", "INFO")},
    "loggers": {
        # Django's own console handler (DEBUG only) printed every django.* record a
        # second time beside the root's: it goes, and django.* reaches the root alone.
        "django": {"handlers": ["mail_admins"], "propagate": True},
        # django-axes announces itself on every start (every CLI call): keep its warnings only.
        "axes.apps": {"level": "WARNING"},
    },
}
