"""Reading HACS's configuration from environment variables.

Every helper raises ``ImproperlyConfigured`` with the variable's name and the offending value, so a
typo in a deployment's environment stops HACS at start-up with a message that says what to fix
instead of failing later in a worker.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

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


def env_list(name: str, default: list[str], environ: Mapping[str, str] | None = None) -> list[str]:
    value = _raw(name, environ)
    if value is None or value == "":
        return list(default)
    return [item.strip() for item in value.split(",") if item.strip()]


def env_url(
    name: str,
    default: str,
    environ: Mapping[str, str] | None = None,
    *,
    schemes: tuple[str, ...] = ("http", "https"),
) -> str:
    """An absolute URL with one of ``schemes`` and a host; a trailing slash is removed."""
    value = env_str(name, default, environ)
    parts = urlsplit(value)
    if parts.scheme not in schemes or not parts.netloc:
        allowed = ", ".join(f"{s}://" for s in schemes)
        raise ImproperlyConfigured(
            f"{name}={value!r} is not a URL starting with {allowed} and naming a host."
        )
    return value.rstrip("/")


def database_from_url(url: str, *, base_dir: Path, name: str = "DATABASE_URL") -> dict[str, Any]:
    """Django's DATABASES entry for ``sqlite:///path`` or ``postgres://user:pw@host:port/db``.

    A relative SQLite path is taken relative to ``base_dir`` so that HACS finds the same file
    whatever directory a worker is started from.
    """
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme == "sqlite":
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
    if scheme in ("postgres", "postgresql", "pgsql"):
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
    raise ImproperlyConfigured(
        f"{name}={url!r} is not supported; use sqlite:///path/to/file.sqlite3 or "
        "postgres://user:password@host:port/dbname."
    )


def read_env_file(path: Path) -> dict[str, str]:
    """``NAME=value`` lines of a file (empty when there is none); blank lines and ``#`` skipped."""
    try:
        text = path.read_text()
    except (FileNotFoundError, PermissionError):
        return {}
    pairs = (line.split("=", 1) for line in text.splitlines() if "=" in line)
    return {k.strip(): v.strip() for k, v in pairs if k.strip() and not k.startswith("#")}
