"""Reading HACS's configuration from environment variables.

Every helper raises ``ImproperlyConfigured`` with the variable's name and the offending value, so a
typo in a deployment's environment stops HACS at start-up with a message that says what to fix
instead of failing later in a worker.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import requests
import requests.utils
from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def _raw(name: str, environ: Mapping[str, str] | None) -> str | None:
    source = os.environ if environ is None else environ
    value = source.get(name)
    return None if value is None else value.strip()


def env_str(name: str, default: str, environ: Mapping[str, str] | None = None) -> str:
    value = _raw(name, environ)
    return default if value is None or value == "" else value


def env_bool(name: str, default: bool, environ: Mapping[str, str] | None = None) -> bool:
    value = _raw(name, environ)
    if value is None:
        return default
    lowered = value.lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise ImproperlyConfigured(
        f"{name}={value!r} is not a boolean; use one of 1/0, true/false, yes/no, on/off."
    )


def env_int(
    name: str,
    default: int,
    environ: Mapping[str, str] | None = None,
    *,
    minimum: int | None = None,
    maximum: int | None = None,
) -> int:
    value = _raw(name, environ)
    if value is None or value == "":
        return default
    try:
        number = int(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={value!r} is not a whole number.") from None
    _check_range(name, number, minimum, maximum)
    return number


def env_optional_int(
    name: str,
    environ: Mapping[str, str] | None = None,
    *,
    minimum: int | None = None,
    maximum: int | None = None,
) -> int | None:
    """A whole number, or None when the variable is unset, empty or ``none``."""
    value = _raw(name, environ)
    if value is None or value.lower() in ("", "none"):
        return None
    return env_int(name, 0, {name: value}, minimum=minimum, maximum=maximum)


def env_optional_float(
    name: str,
    default: float | None,
    environ: Mapping[str, str] | None = None,
    *,
    minimum: float | None = None,
    maximum: float | None = None,
) -> float | None:
    """A number; ``default`` when the variable is unset or empty, None when it is ``none``."""
    value = _raw(name, environ)
    if value is None or value == "":
        return default
    if value.lower() == "none":
        return None
    return env_float(name, 0.0, {name: value}, minimum=minimum, maximum=maximum)


def env_float(
    name: str,
    default: float,
    environ: Mapping[str, str] | None = None,
    *,
    minimum: float | None = None,
    maximum: float | None = None,
) -> float:
    value = _raw(name, environ)
    if value is None or value == "":
        return default
    try:
        number = float(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={value!r} is not a number.") from None
    if number != number or number in (float("inf"), float("-inf")):
        raise ImproperlyConfigured(f"{name}={value!r} must be a finite number.")
    _check_range(name, number, minimum, maximum)
    return number


def _check_range(name: str, number: float, minimum: float | None, maximum: float | None) -> None:
    if minimum is not None and number < minimum:
        raise ImproperlyConfigured(f"{name}={number} is below the minimum of {minimum}.")
    if maximum is not None and number > maximum:
        raise ImproperlyConfigured(f"{name}={number} is above the maximum of {maximum}.")


def env_cron(
    name: str, default: str, *, off: bool = False, environ: Mapping[str, str] | None = None
) -> str:
    """A cron expression of five fields (minute hour day month weekday), parsed now so that an
    impossible one (``0 25 * * *``) stops start-up naming its variable instead of leaving the
    scheduler to log a traceback and never run the job. ``off`` also accepts the word "off"."""
    from croniter import croniter  # imported here: only the settings' start-up parses crons

    value = env_str(name, default, environ)
    if off and value.lower() == "off":
        return "off"
    fields = value.split()
    if len(fields) != 5:
        raise ImproperlyConfigured(
            f"{name}={value!r} is not a cron expression of five fields "
            "(minute hour day month weekday)" + (", nor 'off'." if off else ".")
        )
    try:
        # The next time too: "0 5 31 2 *" parses but never comes.
        croniter(value, datetime(2000, 1, 1)).get_next(datetime)
    except (ValueError, KeyError) as error:  # croniter's own errors derive from ValueError
        raise ImproperlyConfigured(
            f"{name}={value!r} is not a cron expression HACS can schedule ({error})."
        ) from None
    return value


def env_list(name: str, default: list[str], environ: Mapping[str, str] | None = None) -> list[str]:
    value = _raw(name, environ)
    if value is None or value == "":
        return list(default)
    return [item.strip() for item in value.split(",") if item.strip()]


def env_hosts(name: str, environ: Mapping[str, str] | None = None) -> list[str]:
    """A comma-separated list of ``host`` or ``host:port`` (``[v6]:port``), lower-cased; a URL,
    a path or a bad port stops start-up naming the variable and the entry."""
    hosts = []
    for entry in env_list(name, [], environ):
        parts = urlsplit(f"//{entry}")
        try:
            port = parts.port
        except ValueError:
            port = -1
        if not parts.hostname or port == -1 or parts.path or parts.username or "/" in entry:
            raise ImproperlyConfigured(
                f"{name}={_raw(name, environ)!r}: {entry!r} is not a host or host:port "
                "(e.g. 127.0.0.1:8080 or btrix.library.example)."
            )
        host = parts.hostname.lower()
        host = f"[{host}]" if ":" in host else host
        hosts.append(f"{host}:{port}" if port is not None else host)
    return hosts


def env_url(
    name: str,
    default: str,
    environ: Mapping[str, str] | None = None,
    *,
    schemes: tuple[str, ...] = ("http", "https"),
) -> str:
    """An absolute URL with one of ``schemes`` and a host; a trailing slash is removed.

    An http(s) URL must also be one requests can send (``http_url_problem``): otherwise every
    request would fail, each on its own, long after start-up.
    """
    value = env_str(name, default, environ)
    try:
        parts = urlsplit(value)
    except ValueError:  # an unclosed IPv6 bracket: no host it could name
        parts = urlsplit("")
    if parts.scheme not in schemes or not parts.netloc:
        allowed = ", ".join(f"{s}://" for s in schemes)
        raise ImproperlyConfigured(
            f"{name}={value!r} is not a URL starting with {allowed} and naming a host."
        )
    value = value.rstrip("/")
    if set(schemes) <= {"http", "https"}:
        problem = http_url_problem(value)
        if problem is not None:
            raise ImproperlyConfigured(f"{name}={value!r} cannot be requested: {problem}.")
    return value


def http_url_problem(url: str) -> str | None:
    """Why HACS cannot send a GET to ``url``, or None when it can.

    The checks are the sender's own: requests prepares the URL (scheme, host, IDNA, port) as
    it would for the request, and the host must pass the IDNA encoding urllib3 applies when
    it connects (an empty or over-long label fails only there). On top, what requests would
    send wrongly: port 0 (requests drops it and sends to the scheme's default port), a user
    name or password (sent to the archive, and shown on the Jobs page and in every capture's
    source), a fragment (never sent, and what HACS appends to the URL would end up in it).
    """
    try:
        parts = urlsplit(url)
    except ValueError as error:  # an unclosed IPv6 bracket
        return f"it is malformed ({error})"
    if parts.scheme.lower() not in ("http", "https"):
        return "HACS speaks http:// and https:// only"
    try:
        port = parts.port
    except ValueError:  # not a number, or above 65535
        port = -1
    if port is not None and not 1 <= port <= 65535:
        return f"its port ({parts.netloc.rpartition(':')[2]}) is not a number from 1 to 65535"
    try:
        prepared = requests.Request("GET", url).prepare().url or ""
    except requests.RequestException as error:
        return f"requests refuses it ({type(error).__name__}: {error})"
    host = urlsplit(prepared).hostname or ""
    try:
        host.encode("idna")
    except UnicodeError:
        return f"its host name {host!r} has an empty or over-long label"
    if parts.username is not None or parts.password is not None:
        return "it holds a user name or password, which HACS would send and show"
    if parts.fragment or url.endswith("#"):
        return "it has a fragment (#...), which is never sent"
    return None


def env_header(name: str, default: str, environ: Mapping[str, str] | None = None) -> str:
    """A value for an HTTP header: one that requests will send (no line breaks in it)."""
    value = env_str(name, default, environ)
    try:
        requests.utils.check_header_validity(("X-Check", value))
    except requests.exceptions.InvalidHeader:
        raise ImproperlyConfigured(
            f"{name}={value!r} is not a valid HTTP header value (it may hold a line break)."
        ) from None
    return value


def database_from_url(url: str, *, base_dir: Path, name: str = "DATABASE_URL") -> dict[str, Any]:
    """Django's DATABASES entry for ``sqlite:///path`` or ``postgres://user:pw@host:port/db``.

    A relative SQLite path is taken relative to ``base_dir`` so that HACS finds the same file
    whatever directory a worker is started from.
    """
    scheme = urlsplit(url).scheme.lower()
    if scheme == "sqlite":
        return _sqlite_database(url, base_dir=base_dir, name=name)
    if scheme in ("postgres", "postgresql", "pgsql"):
        return _postgres_database(url, name=name)
    raise ImproperlyConfigured(
        f"{name}={url!r} is not supported; use sqlite:///path/to/file.sqlite3 or "
        "postgres://user:password@host:port/dbname."
    )


def _sqlite_database(url: str, *, base_dir: Path, name: str) -> dict[str, Any]:
    path = url[len("sqlite://") :]
    if path.startswith("/") and not path.startswith("//"):
        # sqlite:///var/hacs.sqlite3 → relative "var/hacs.sqlite3"; sqlite:////abs → absolute.
        path = path[1:]
    elif path.startswith("//"):
        path = path[1:]
    if not path:
        raise ImproperlyConfigured(f"{name}={url!r} names no SQLite file.")
    file = Path(path)
    if not file.is_absolute():
        file = base_dir / file
    return {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": str(file),
        # SQLite waits for a writer instead of failing at once when a worker holds the lock.
        "OPTIONS": {
            "timeout": 30,
            "transaction_mode": "IMMEDIATE",
            "init_command": (
                "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA cache_size=-65536;"
            ),
        },
    }


def _postgres_database(url: str, *, name: str) -> dict[str, Any]:
    parts = urlsplit(url)
    database = parts.path.lstrip("/")
    if not database:
        raise ImproperlyConfigured(f"{name}={url!r} names no database (…/dbname).")
    try:
        port = parts.port
    except ValueError:
        raise ImproperlyConfigured(f"{name}={url!r} has a bad port.") from None
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": database,
        "USER": parts.username or "",
        "PASSWORD": parts.password or "",
        "HOST": parts.hostname or "",
        "PORT": str(port or ""),
        "CONN_MAX_AGE": 60,
        "CONN_HEALTH_CHECKS": True,
    }


def read_env_file(path: Path) -> dict[str, str]:
    """``NAME=value`` lines of a file (empty when there is none); blank lines and ``#`` skipped."""
    try:
        text = path.read_text()
    except (FileNotFoundError, PermissionError):
        return {}
    pairs = (line.split("=", 1) for line in text.splitlines() if "=" in line)
    return {k.strip(): v.strip() for k, v in pairs if k.strip() and not k.startswith("#")}
