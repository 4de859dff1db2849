"""Django settings for HACS, read from the environment with working local defaults.

Every variable is listed in docs/operating.md ("Configuration"). A bad value stops start-up with
a message naming the variable (see ``hacs_site.env``).
"""

from __future__ import annotations

import importlib.util
import os
import stat
from datetime import timedelta
from pathlib import Path
from typing import Any

from django.core.exceptions import ImproperlyConfigured

from hacs import defaults
from hacs_site.env import (
    database_from_url,
    env_bool,
    env_cron,
    env_float,
    env_header,
    env_hosts,
    env_int,
    env_list,
    env_optional_float,
    env_optional_int,
    env_str,
    env_url,
    read_env_file,
)

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(env_str("HACS_VAR_DIR", str(BASE_DIR / "var")))


# --- Private files --------------------------------------------------------------------------------
# VAR_DIR holds the secret key, the SQLite database, Redis's data and run.env (whose DATABASE_URL
# may carry a password): only the user HACS runs as may read them. Modes are tightened at every
# start, so an installation made before HACS did so becomes private the next time it starts.
def _make_private(path: Path, mode: int) -> None:
    """Give ``path`` ``mode`` if it exists and lets its group or others in."""
    try:
        if path.stat().st_mode & 0o077:
            path.chmod(mode)
    except (FileNotFoundError, PermissionError):
        pass  # gone meanwhile, or another user's file: nothing HACS may change


def _make_var_dir_private(var_dir: Path) -> None:
    var_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    if var_dir.stat().st_mode & stat.S_ISVTX:
        return  # a shared directory such as /tmp: its other users' files are not HACS's
    _make_private(var_dir, 0o700)
    for name in ("secret_key", "run.env"):
        _make_private(var_dir / name, 0o600)
    for database in var_dir.glob("*.sqlite3*"):  # with its -wal and -shm files
        _make_private(database, 0o600)
    for root, _subdirectories, files in os.walk(var_dir / "redis"):
        _make_private(Path(root), 0o700)
        for name in files:
            _make_private(Path(root) / name, 0o600)


_make_var_dir_private(VAR_DIR)

# What the running app (scripts/run.py) left for a second terminal: its REDIS_URL and
# DATABASE_URL, used when the environment does not set them, so that `manage.py` beside the
# running app talks to the same Redis and database.
RUN_ENV_FILE = VAR_DIR / "run.env"
_run_env = read_env_file(RUN_ENV_FILE)

DEBUG = env_bool("DEBUG", False)
SECRET_KEY = env_str("SECRET_KEY", "")
if not SECRET_KEY:
    if not DEBUG and env_bool("HACS_REQUIRE_SECRET_KEY", False):
        raise ImproperlyConfigured("SECRET_KEY must be set (a long random string).")
    # A local installation gets a stable key kept beside its database, so logins survive restarts.
    _key_file = VAR_DIR / "secret_key"
    try:
        SECRET_KEY = _key_file.read_text().strip()
    except FileNotFoundError:
        import secrets

        SECRET_KEY = secrets.token_urlsafe(50)
        with open(os.open(_key_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as out:
            out.write(SECRET_KEY)

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.humanize",  # thousands separators in counts (intcomma)
    "django_rq",
    "axes",  # refuses logins after repeated failures (see "Logins" below)
    # HACS's apps, each importing only those above it (tests/test_layout.py keeps it so).
    "jobs",
    "archive",
    "scheduling",
    "handoff",
    "operations",
    "dashboard",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    # Before the CSRF check, the first to read a body: a body is refused by its declared length
    # and the user's role unread (so the user must be known first).
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "dashboard.request_limits.RequestBodyLimitMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django.contrib.auth.middleware.LoginRequiredMiddleware",
    # Last, as django-axes asks: it turns a refused login into the lockout page.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "hacs_site.urls"
WSGI_APPLICATION = "hacs_site.wsgi.application"

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
                "dashboard.roles.roles",
                "dashboard.context_processors.queue_status",
                "dashboard.context_processors.import_archive",
            ]
        },
    }
]

DATABASE_URL = env_str(
    "DATABASE_URL", _run_env.get("DATABASE_URL", f"sqlite:///{VAR_DIR.resolve() / 'hacs.sqlite3'}")
)
_database = database_from_url(DATABASE_URL, base_dir=BASE_DIR)
if _database["ENGINE"].endswith("sqlite3"):
    # Tests use a file (not memory) so that worker processes see the same test database.
    _name = Path(_database["NAME"])
    _database["TEST"] = {"NAME": str(_name.with_name(_name.stem + "-test.sqlite3"))}
    _name.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    # SQLite creates its -wal and -shm files with the database file's mode, so a database file
    # made here, empty and owner-only, keeps all three private.
    try:
        os.close(os.open(_name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except FileExistsError:
        for _suffix in ("", "-wal", "-shm"):
            _make_private(Path(f"{_name}{_suffix}"), 0o600)
    except PermissionError:
        pass  # SQLite names the file and the problem when it first opens it
DATABASES = {"default": _database}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

# --- Logins: throttling repeated failures (django-axes) -------------------------------------------
# After HACS_LOGIN_FAILURE_LIMIT failed attempts for one username from one address, on the login
# page or the admin's, further attempts for that username from that address are refused until
# HACS_LOGIN_COOLOFF_MINUTES have passed since the last one. Other users behind the same address
# (a library's office network) can still log in. `manage.py axes_reset_username NAME` lifts a lock.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",  # first: refuses a locked login before any check
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = env_int("HACS_LOGIN_FAILURE_LIMIT", 5, minimum=1)
AXES_COOLOFF_TIME = timedelta(minutes=env_int("HACS_LOGIN_COOLOFF_MINUTES", 15, minimum=1))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True  # a successful login forgets the user's earlier failures
AXES_LOCKOUT_TEMPLATE = "registration/locked.html"

LANGUAGE_CODE = "en-us"
TIME_ZONE = env_str("TIME_ZONE", "UTC")
USE_I18N = False
USE_TZ = True

# Static files are collected into VAR_DIR/static under hashed names (run.sh runs collectstatic),
# each with a gzip copy, so that WhiteNoise sends them compressed and cached for a year: Plotly
# alone is 4.8 MB, 1.4 MB gzipped, and a first visit no longer waits for it on every page.
STATIC_URL = "static/"
STATIC_ROOT = VAR_DIR / "static"
STATIC_ROOT.mkdir(mode=0o700, exist_ok=True)  # public files, but under VAR_DIR: owner-only
_make_private(STATIC_ROOT, 0o700)
STATICFILES_DIRS: list[Path | tuple[str, str]] = [BASE_DIR / "static"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
}
# plotly.js ships inside the plotly wheel; HACS serves that copy rather than a CDN. The package
# is found, not imported: importing it costs every HACS process ~10 MiB it never uses.
_plotly = importlib.util.find_spec("plotly")
if _plotly is not None and _plotly.origin:  # pragma: no branch - plotly is a pinned requirement
    STATICFILES_DIRS.append(("plotly", str(Path(_plotly.origin).parent / "package_data")))
# With DEBUG, files are served as they are edited, from the finders; otherwise only the
# collected, hashed and compressed copies are (WhiteNoise caches those for a year).
WHITENOISE_USE_FINDERS = DEBUG
WHITENOISE_AUTOREFRESH = DEBUG
WHITENOISE_KEEP_ONLY_HASHED_FILES = True

# A checked seed list is held in VAR_DIR/uploads, owner-only, for 24 hours so that *Add and
# import* can use it; adding it deletes it. Nothing uploaded is ever served back.
HACS_MAX_UPLOAD_BYTES = env_int("HACS_MAX_UPLOAD_BYTES", 5 * 1024 * 1024, minimum=1024)
HACS_MAX_SEED_LINES = env_int("HACS_MAX_SEED_LINES", 50_000, minimum=1)
# Held files are bounded, so that repeated checks cannot fill the disk: holding one more lets the
# oldest go (dashboard.views.upload). The total holds at least one file of the largest size.
HACS_UPLOAD_HOLD_PER_USER = env_int("HACS_UPLOAD_HOLD_PER_USER", 5, minimum=1)
HACS_UPLOAD_HOLD_TOTAL_BYTES = env_int(
    "HACS_UPLOAD_HOLD_TOTAL_BYTES", 10 * HACS_MAX_UPLOAD_BYTES, minimum=HACS_MAX_UPLOAD_BYTES
)
DATA_UPLOAD_MAX_MEMORY_SIZE = HACS_MAX_UPLOAD_BYTES + 1024 * 1024
FILE_UPLOAD_MAX_MEMORY_SIZE = HACS_MAX_UPLOAD_BYTES + 1024 * 1024
# A request body is refused by its declared length before it is read, and an uploaded file is
# held in memory, never in a temporary file (dashboard.request_limits).
FILE_UPLOAD_HANDLERS = ["dashboard.request_limits.MemoryOnlyUploadHandler"]
# Seconds a client has to send a request to the web server, one more for every 500 bytes that
# arrive (hacs_site.web_worker): a slow client is answered 408 and closed past them.
HACS_REQUEST_READ_SECONDS = env_int("HACS_REQUEST_READ_SECONDS", 20, minimum=1, maximum=3600)
# Should an upload ever be stored, it is stored owner-only, like everything else in VAR_DIR.
FILE_UPLOAD_PERMISSIONS = 0o600
FILE_UPLOAD_DIRECTORY_PERMISSIONS = 0o700

# --- Background jobs (RQ on Redis) ----------------------------------------------------------------
REDIS_URL = env_url(
    "REDIS_URL", _run_env.get("REDIS_URL", "redis://127.0.0.1:6379/0"), schemes=("redis", "rediss")
)
HACS_JOB_TIMEOUT = env_int("HACS_JOB_TIMEOUT", 6 * 3600, minimum=10)
# Work carries a lease: a job writes a heartbeat this often, and one silent for the lease is
# marked interrupted (its worker, Redis or terminal stopped).
HACS_JOB_HEARTBEAT_SECONDS = env_float("HACS_JOB_HEARTBEAT_SECONDS", 15.0, minimum=0.1)
HACS_JOB_LEASE_SECONDS = env_float("HACS_JOB_LEASE_SECONDS", 120.0, minimum=1)
if HACS_JOB_LEASE_SECONDS < 2 * HACS_JOB_HEARTBEAT_SECONDS:
    raise ImproperlyConfigured(
        f"HACS_JOB_LEASE_SECONDS={HACS_JOB_LEASE_SECONDS} must be at least twice "
        f"HACS_JOB_HEARTBEAT_SECONDS={HACS_JOB_HEARTBEAT_SECONDS}, or live jobs look stopped."
    )
# Whoever can write to Redis chooses what the workers run, so RQ never pickles (unpickling runs
# code): every queue stores jobs as JSON (their arguments are ids, ISO dates and option dicts), and
# a worker runs only the functions of HACS_JOB_MODULES. The queue and worker classes insist on
# both, so that a worker started without `--serializer` (django-rq's default is pickle), RQ's cron
# (operations.cron) and django-rq's own pages read JSON too.
RQ_QUEUES = {
    name: {
        "URL": REDIS_URL,
        "DEFAULT_TIMEOUT": HACS_JOB_TIMEOUT,
        "SERIALIZER": "rq.serializers.JSONSerializer",
    }
    for name in ("default", "import", "estimation", "evaluation")
}
RQ = {
    "COMMIT_MODE": "on_db_commit",
    "QUEUE_CLASS": "jobs.services.JobQueue",
    "JOB_CLASS": "jobs.services.QueuedJob",
    "WORKER_CLASS": "jobs.services.JobWorker",
}
# The modules whose functions are jobs (or RQ callbacks); a job naming any other is refused.
HACS_JOB_MODULES = ("jobs.callbacks", "operations.daily", "operations.jobs", "scheduling.jobs")

# --- Archives HACS reads (the only hosts it ever fetches) -----------------------------------------
# Both URLs must be ones requests can send (port 1-65535, a valid host, no user name, password or
# fragment): a bad one stops start-up here instead of failing every site's import.
HACS_CDX_URL = env_url("HACS_CDX_URL", "https://web.archive.org/cdx/search/cdx")
# Whether an operator chose the archive: pages say which archive an import will ask before it
# asks, and that it is the default when nobody chose one (dashboard.context_processors).
HACS_CDX_URL_CHOSEN = bool(env_str("HACS_CDX_URL", ""))
HACS_CDX_DIALECT = env_str("HACS_CDX_DIALECT", "ia")
if HACS_CDX_DIALECT not in ("ia", "pywb"):
    raise ImproperlyConfigured(f"HACS_CDX_DIALECT={HACS_CDX_DIALECT!r} must be 'ia' or 'pywb'.")
HACS_WAYBACK_URL = env_url("HACS_WAYBACK_URL", "https://web.archive.org/web")
# The defaults and why they are so: hacs/defaults.py ("Asking the archive").
HACS_CDX_RATE_PER_MINUTE = env_float(
    "HACS_CDX_RATE_PER_MINUTE", defaults.CDX_PER_MINUTE, minimum=0.1, maximum=6000
)
HACS_MEMENTO_RATE_PER_MINUTE = env_float(
    "HACS_MEMENTO_RATE_PER_MINUTE", defaults.MEMENTO_PER_MINUTE, minimum=0.1, maximum=60000
)
HACS_HTTP_TIMEOUT = env_float("HACS_HTTP_TIMEOUT", defaults.HTTP_TIMEOUT, minimum=1, maximum=600)
HACS_HTTP_RETRIES = env_int("HACS_HTTP_RETRIES", defaults.HTTP_RETRIES, minimum=0, maximum=20)
HACS_HTTP_BACKOFF_BASE = env_float(
    "HACS_HTTP_BACKOFF_BASE", defaults.HTTP_BACKOFF_BASE, minimum=0, maximum=600
)
HACS_MAX_MEMENTO_BYTES = env_int("HACS_MAX_MEMENTO_BYTES", defaults.MAX_MEMENTO_BYTES, minimum=1024)
HACS_HTTP_DEADLINE = env_float(
    "HACS_HTTP_DEADLINE", defaults.HTTP_DEADLINE, minimum=1, maximum=3600
)
HACS_CDX_MAX_PAGES = env_int("HACS_CDX_MAX_PAGES", defaults.CDX_MAX_PAGES, minimum=1)
HACS_MAX_CDX_BYTES = env_int("HACS_MAX_CDX_BYTES", defaults.MAX_CDX_BYTES, minimum=1024)
# Past it a slow site's query fails with a sentence and waits for import_archive --failed.
HACS_CDX_QUERY_DEADLINE = env_float(
    "HACS_CDX_QUERY_DEADLINE", defaults.CDX_QUERY_DEADLINE, minimum=1, maximum=86400
)
# The longest the archive takes to index a capture: a re-import asks for captures from this many
# days before the newest one the last answer held (a host query, from the lag measured on its
# host, with this once a month: hacs.index_lag).
HACS_CDX_INDEX_LAG_DAYS = env_float(
    "HACS_CDX_INDEX_LAG_DAYS", defaults.CDX_INDEX_LAG_DAYS, minimum=0, maximum=3650
)
# A refresh from the archive (archive.archive_import): queries and memento fetches in flight at
# once in one worker (the archive's rate limits still hold, shared through Redis), and when a
# grouped query's answer is too big, so that the next refresh splits the group.
HACS_ARCHIVE_PARALLEL = env_int(
    "HACS_ARCHIVE_PARALLEL", defaults.ARCHIVE_PARALLEL, minimum=1, maximum=8
)
# An import from the archive fetches the contents of each site's last HACS_HISTORY_DAYS of
# copies (what its estimates and the daily list read); the older ones are left to the history
# pass (HACS_FETCH_RETRY_CRON), which fetches them when no first import is under way.
HACS_OLDER_HISTORY_LATER = env_bool("HACS_OLDER_HISTORY_LATER", True)
HACS_REFRESH_GROUP_MAX_ROWS = env_int(
    "HACS_REFRESH_GROUP_MAX_ROWS", defaults.GROUP_MAX_ROWS, minimum=100
)
HACS_REFRESH_GROUP_MAX_PAGES = env_int(
    "HACS_REFRESH_GROUP_MAX_PAGES", defaults.GROUP_MAX_PAGES, minimum=1
)
# Index blocks (~3,000 lines) a group's key range may span, asked before the group (Internet
# Archive only): its server reads at most 150,000 lines a query and then cuts the answer short
# without a resume key. 0 never asks.
HACS_REFRESH_GROUP_MAX_BLOCKS = env_int(
    "HACS_REFRESH_GROUP_MAX_BLOCKS", defaults.GROUP_MAX_BLOCKS, minimum=0
)
# The recall audit: the share of grouped queries one of whose homepages is also asked exactly.
HACS_REFRESH_AUDIT_SHARE = env_float(
    "HACS_REFRESH_AUDIT_SHARE", defaults.AUDIT_SHARE, minimum=0, maximum=1
)
# The nightly refresh's CDX requests (0: the requests 40 minutes hold at HACS_CDX_RATE_PER_MINUTE,
# 960 at 24 a minute), the longest a site may wait between two checks, and the most of the
# budget that sites past their deadline may take (hacs.refresh_budget).
HACS_REFRESH_CDX_BUDGET = env_int("HACS_REFRESH_CDX_BUDGET", 0, minimum=0)
HACS_REFRESH_MAX_AGE_DAYS = env_float(
    "HACS_REFRESH_MAX_AGE_DAYS", defaults.REFRESH_MAX_AGE_DAYS, minimum=1, maximum=3650
)
HACS_REFRESH_DUE_SHARE = env_float(
    "HACS_REFRESH_DUE_SHARE", defaults.REFRESH_DUE_SHARE, minimum=0.01, maximum=1
)
HACS_USER_AGENT = env_header(
    "HACS_USER_AGENT", "HACS/0.1 (History-Aware Crawl Scheduler; archive research)"
)

# --- Hand-offs (docs/using.md "Handing the list to a crawler", docs/security.md) ------------------
# A Browsertrix hand-off is sent over https to public addresses only; a host listed here (host or
# host:port, comma-separated; a Browsertrix on this machine or the library's network) may also be
# reached over http and at loopback or private addresses. All of one hand-off's requests end
# within HACS_HTTP_DEADLINE together. Heritrix hand-offs write only into job directories that
# resolve (symlinks included) inside HACS_HERITRIX_ROOT; unset, no Heritrix hand-off writes.
HACS_BROWSERTRIX_ALLOWED_HOSTS = env_hosts("HACS_BROWSERTRIX_ALLOWED_HOSTS")
HACS_HERITRIX_ROOT = env_str("HACS_HERITRIX_ROOT", "")
if HACS_HERITRIX_ROOT and not os.path.isabs(HACS_HERITRIX_ROOT):
    raise ImproperlyConfigured(
        f"HACS_HERITRIX_ROOT={HACS_HERITRIX_ROOT!r} must be an absolute path, e.g. "
        "/opt/heritrix/jobs."
    )

# --- The crawl comes home (docs/using.md, "Reading the crawls back") ---------------------------
# What the library's crawlers fetched is imported back without a hand: the WARC files of every
# Heritrix hand-off's job, the WACZ files of every crawl a Browsertrix hand-off started (downloaded
# from the Browsertrix host or a storage host listed here, within HACS_MAX_CRAWL_FILE_BYTES and
# HACS_CRAWL_DOWNLOAD_SECONDS), and the files dropped into HACS_CRAWL_INBOX. A crawl that has not
# ended HACS_CRAWL_WAIT_HOURS after its hand-off is given up.
HACS_BROWSERTRIX_STORAGE_HOSTS = env_hosts("HACS_BROWSERTRIX_STORAGE_HOSTS")
HACS_CRAWL_INBOX = env_str("HACS_CRAWL_INBOX", "")
if HACS_CRAWL_INBOX and not os.path.isabs(HACS_CRAWL_INBOX):
    raise ImproperlyConfigured(
        f"HACS_CRAWL_INBOX={HACS_CRAWL_INBOX!r} must be an absolute path, e.g. /srv/hacs/inbox."
    )
HACS_CRAWL_INBOX_SETTLE_SECONDS = env_int("HACS_CRAWL_INBOX_SETTLE_SECONDS", 60, minimum=0)
HACS_CRAWL_WAIT_HOURS = env_float("HACS_CRAWL_WAIT_HOURS", 48.0, minimum=0.1, maximum=24 * 365)
HACS_MAX_CRAWL_FILE_BYTES = env_int("HACS_MAX_CRAWL_FILE_BYTES", 10 * 1024**3, minimum=1024 * 1024)
HACS_CRAWL_DOWNLOAD_SECONDS = env_float(
    "HACS_CRAWL_DOWNLOAD_SECONDS", 3600.0, minimum=10, maximum=7 * 86400
)
HACS_MAX_CRAWL_UPLOAD_BYTES = env_int(
    "HACS_MAX_CRAWL_UPLOAD_BYTES", 2 * 1024**3, minimum=1024 * 1024
)

# --- Method defaults (DESIGN "Method", rule 8) ----------------------------------------------------
HACS_HISTORY_DAYS = env_int("HACS_HISTORY_DAYS", defaults.HISTORY_DAYS, minimum=1)
HACS_E_DAYS = env_float("HACS_E_DAYS", defaults.E_DAYS, minimum=0)
# The daily list's budget k (unset: no limit) and threshold θ ("none": no threshold). A budget
# fills its k: with HACS_BUDGET set and HACS_THETA unset, the daily list has no threshold
# (DESIGN rule 8); both set, both apply.
HACS_BUDGET = env_optional_int("HACS_BUDGET", minimum=1)
HACS_THETA = env_optional_float(
    "HACS_THETA", None if HACS_BUDGET is not None else 0.5, minimum=0, maximum=1
)
if HACS_THETA is None and HACS_BUDGET is None:
    raise ImproperlyConfigured(
        "HACS_THETA=none lists every site every day; set HACS_BUDGET (the daily list's k) "
        "as well, or give HACS_THETA a threshold between 0 and 1."
    )
# --- Seed health (``hacs.health``; docs/using.md "Seed health") -----------------------------------
# A seed is moved or gone when at least this many of its newest decisive homepage captures, with
# no good one after them, redirect away or answer 404/410.
HACS_HEALTH_RECENT_CAPTURES = env_int("HACS_HEALTH_RECENT_CAPTURES", 3, minimum=1)
# Not captured lately: the newest good homepage capture is older than this many days. Default:
# the crawl list's history window, beyond which the site has no observation left to estimate.
HACS_STALE_AFTER_DAYS = env_int("HACS_STALE_AFTER_DAYS", HACS_HISTORY_DAYS, minimum=1)
# Stopped changing: observed without a new link for at least HACS_STOPPED_MIN_DAYS days and for
# no update at all or at least HACS_STOPPED_FACTOR mean intervals.
HACS_STOPPED_FACTOR = env_float("HACS_STOPPED_FACTOR", 5.0, minimum=1)
HACS_STOPPED_MIN_DAYS = env_int("HACS_STOPPED_MIN_DAYS", 365, minimum=1)
HACS_DAILY_CRAWL_LIST_CRON = env_cron("HACS_DAILY_CRAWL_LIST_CRON", "0 5 * * *")
HACS_FETCH_RETRY_CRON = env_cron("HACS_FETCH_RETRY_CRON", "0 4 * * *")
# "off": no nightly refresh; sites are then brought up to date only when someone imports them.
HACS_ARCHIVE_REFRESH_CRON = env_cron("HACS_ARCHIVE_REFRESH_CRON", "0 3 * * *", off=True)
# "off": crawls are read back only when imported by hand (import_warc, the inbox by read_back).
HACS_CRAWL_READBACK_CRON = env_cron("HACS_CRAWL_READBACK_CRON", "*/15 * * * *", off=True)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    # No log line holds a feed address's token (docs/using.md "Following changes in a feed reader").
    "filters": {
        "feed_tokens": {"()": "hacs_site.log_redaction.FeedTokenFilter"},
        "refusals": {"()": "hacs_site.log_redaction.RefusalWithoutTraceback"},
    },
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "formatter": "plain",
            "filters": ["feed_tokens", "refusals"],
        }
    },
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    "loggers": {
        "django.db.backends": {"level": "WARNING"},
        # Django's own handlers (its DEBUG console, runserver's request lines) would write past
        # the filter above: its messages go through the console handler instead.
        "django": {"handlers": [], "level": "INFO"},
        "django.server": {"handlers": ["console"], "level": "INFO", "propagate": False},
        # Failed logins and lockouts are warnings; every start and every login would be noise.
        "axes": {"level": "WARNING"},
    },
}

if not DEBUG:
    SESSION_COOKIE_HTTPONLY = True
    CSRF_COOKIE_HTTPONLY = False  # the pages' fetch() calls read it for POSTs
    X_FRAME_OPTIONS = "DENY"
    SECURE_CONTENT_TYPE_NOSNIFF = True

# --- HTTPS (docs/operating.md "Deploying behind HTTPS") -------------------------------------------
# Off by default: the local run command serves plain http on 127.0.0.1. HACS_HTTPS redirects http
# to https, keeps the session and CSRF cookies to https and sends HSTS. HACS_BEHIND_PROXY trusts
# the X-Forwarded-Proto and X-Forwarded-For headers of the one reverse proxy in front of HACS; set
# it only there, since without a proxy any client could send them.
HACS_HTTPS = env_bool("HACS_HTTPS", False)
HACS_BEHIND_PROXY = env_bool("HACS_BEHIND_PROXY", False)
SECURE_SSL_REDIRECT = HACS_HTTPS
SESSION_COOKIE_SECURE = HACS_HTTPS
CSRF_COOKIE_SECURE = HACS_HTTPS
SECURE_HSTS_SECONDS = env_int("HACS_HSTS_SECONDS", 31_536_000 if HACS_HTTPS else 0, minimum=0)
# Both bind more than HACS for as long as browsers remember them: every subdomain, and the
# browsers' built-in list of https-only sites (leaving it takes months). Hence opt-in.
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("HACS_HSTS_INCLUDE_SUBDOMAINS", False)
SECURE_HSTS_PRELOAD = env_bool("HACS_HSTS_PRELOAD", False)


def client_address_behind_proxy(request: Any) -> str | None:
    """The address the proxy received the request from: the last X-Forwarded-For entry, which
    the proxy appends (the entries before it come from the client and prove nothing)."""
    forwarded = request.META.get("HTTP_X_FORWARDED_FOR", "").rsplit(",", 1)[-1].strip()
    return forwarded or request.META.get("REMOTE_ADDR")


if HACS_BEHIND_PROXY:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    # Login throttling counts failures per client address, not per the proxy's own address.
    AXES_CLIENT_IP_CALLABLE = client_address_behind_proxy
