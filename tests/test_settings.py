"""Settings come from the environment; bad values stop start-up naming the variable."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from hacs_site.env import (
    database_from_url,
    env_bool,
    env_float,
    env_int,
    env_list,
    env_str,
    env_url,
)
from tests.support.commands import manage_check

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("1", True),
        ("true", True),
        ("Yes", True),
        ("on", True),
        ("0", False),
        ("off", False),
        ("", False),
        ("FALSE", False),
    ],
)
def test_env_bool_reads_common_spellings(raw: str, expected: bool) -> None:
    assert env_bool("DEBUG", not expected, {"DEBUG": raw}) is expected


def test_env_bool_rejects_other_words_naming_the_variable() -> None:
    with pytest.raises(ImproperlyConfigured, match=r"DEBUG='maybe' is not a boolean"):
        env_bool("DEBUG", False, {"DEBUG": "maybe"})


def test_defaults_apply_when_unset() -> None:
    assert env_bool("DEBUG", True, {}) is True
    assert env_int("N", 7, {}) == 7
    assert env_float("X", 2.5, {}) == 2.5
    assert env_str("S", "d", {}) == "d"
    assert env_list("L", ["a"], {}) == ["a"]


def test_env_int_parses_and_checks_range() -> None:
    assert env_int("HACS_JOB_TIMEOUT", 1, {"HACS_JOB_TIMEOUT": " 42 "}) == 42
    with pytest.raises(ImproperlyConfigured, match="HACS_JOB_TIMEOUT='4x' is not a whole number"):
        env_int("HACS_JOB_TIMEOUT", 1, {"HACS_JOB_TIMEOUT": "4x"})
    with pytest.raises(ImproperlyConfigured, match="HACS_JOB_TIMEOUT=3 is below the minimum of 10"):
        env_int("HACS_JOB_TIMEOUT", 100, {"HACS_JOB_TIMEOUT": "3"}, minimum=10)


def test_env_float_rejects_text_and_infinity() -> None:
    assert env_float("R", 1.0, {"R": "24.5"}) == 24.5
    with pytest.raises(ImproperlyConfigured, match="R='fast' is not a number"):
        env_float("R", 1.0, {"R": "fast"})
    with pytest.raises(ImproperlyConfigured, match="must be a finite number"):
        env_float("R", 1.0, {"R": "inf"})
    with pytest.raises(ImproperlyConfigured, match="above the maximum"):
        env_float("R", 1.0, {"R": "7"}, maximum=6)


def test_env_list_splits_on_commas() -> None:
    assert env_list("ALLOWED_HOSTS", [], {"ALLOWED_HOSTS": "a.org, b.org,,"}) == ["a.org", "b.org"]


def test_env_url_requires_scheme_and_host() -> None:
    assert env_url("HACS_CDX_URL", "", {"HACS_CDX_URL": "http://127.0.0.1:8080/cdx/"}) == (
        "http://127.0.0.1:8080/cdx"
    )
    with pytest.raises(ImproperlyConfigured, match="HACS_CDX_URL='web.archive.org/cdx'"):
        env_url("HACS_CDX_URL", "", {"HACS_CDX_URL": "web.archive.org/cdx"})
    with pytest.raises(ImproperlyConfigured, match="REDIS_URL="):
        env_url("REDIS_URL", "", {"REDIS_URL": "http://x:1"}, schemes=("redis",))


def test_sqlite_url_is_relative_to_the_project(tmp_path: Path) -> None:
    config = database_from_url("sqlite:///var/hacs.sqlite3", base_dir=tmp_path)
    assert config["ENGINE"] == "django.db.backends.sqlite3"
    assert config["NAME"] == str(tmp_path / "var" / "hacs.sqlite3")
    absolute = database_from_url("sqlite:////srv/hacs/db.sqlite3", base_dir=tmp_path)
    assert absolute["NAME"] == "/srv/hacs/db.sqlite3"


def test_postgres_url_gives_every_connection_field(tmp_path: Path) -> None:
    config = database_from_url("postgres://hacs:s3cret@db.example:6543/hacs", base_dir=tmp_path)
    assert config["ENGINE"] == "django.db.backends.postgresql"
    assert (config["NAME"], config["USER"], config["PASSWORD"]) == ("hacs", "hacs", "s3cret")
    assert (config["HOST"], config["PORT"]) == ("db.example", "6543")


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("mysql://x@y/z", "is not supported"),
        ("postgres://x@y:5432/", "names no database"),
        ("postgres://x@y:port/db", "has a bad port"),
        ("sqlite://", "names no SQLite file"),
    ],
)
def test_bad_database_urls_are_explained(url: str, message: str, tmp_path: Path) -> None:
    with pytest.raises(ImproperlyConfigured, match=message) as error:
        database_from_url(url, base_dir=tmp_path)
    assert "DATABASE_URL" in str(error.value)


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("DATABASE_URL", "oracle://nope"),
        ("REDIS_URL", "localhost:6379"),
        ("HACS_CDX_RATE_PER_MINUTE", "lots"),
        ("DEBUG", "perhaps"),
        ("HACS_CDX_DIALECT", "heritrix"),
        ("HACS_WAYBACK_URL", "ftp://archive.example/web"),
        ("HACS_LOGIN_FAILURE_LIMIT", "0"),
        ("HACS_LOGIN_COOLOFF_MINUTES", "soon"),
        ("HACS_HTTPS", "maybe"),
        ("HACS_HSTS_SECONDS", "-1"),
        ("HACS_ARCHIVE_REFRESH_CRON", "nightly"),
        ("HACS_DAILY_CRAWL_LIST_CRON", "0 25 * * *"),  # five fields, but no 25th hour
        ("HACS_FETCH_RETRY_CRON", "61 4 * * *"),
        ("HACS_ARCHIVE_REFRESH_CRON", "0 3 31 2 *"),  # parses, but never comes
        ("HACS_BROWSERTRIX_ALLOWED_HOSTS", "http://btrix.example/api"),
        ("HACS_BROWSERTRIX_ALLOWED_HOSTS", "127.0.0.1:99999"),
        ("HACS_THETA", "none"),  # with no HACS_BUDGET: every site every day
        ("HACS_BUDGET", "0"),
    ],
)
def test_a_bad_variable_stops_start_up_with_its_name(variable: str, value: str) -> None:
    env = {**os.environ, variable: value}
    env.pop("PYTEST_CURRENT_TEST", None)
    result = manage_check(env)
    assert result.returncode != 0
    assert f"{variable}=" in result.stderr
    assert "ImproperlyConfigured" in result.stderr


def test_good_settings_start_cleanly() -> None:
    env = {
        **os.environ,
        "HACS_CDX_RATE_PER_MINUTE": "12",
        "DEBUG": "0",
        "HACS_ARCHIVE_REFRESH_CRON": "off",
    }
    result = manage_check(env)
    assert result.returncode == 0, result.stderr
    assert "no issues" in result.stdout


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, "0.5 None"),
        ({"HACS_BUDGET": "40"}, "None 40"),  # a budget fills its k
        ({"HACS_BUDGET": "40", "HACS_THETA": "0.3"}, "0.3 40"),
        ({"HACS_BUDGET": "40", "HACS_THETA": "none"}, "None 40"),
    ],
)
def test_a_daily_budget_without_a_threshold_fills_its_k(env: dict[str, str], expected: str) -> None:
    environ = {k: v for k, v in os.environ.items() if k not in ("HACS_THETA", "HACS_BUDGET")}
    environ.pop("PYTEST_CURRENT_TEST", None)
    code = "from django.conf import settings as s; print(s.HACS_THETA, s.HACS_BUDGET)"
    result = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", code],
        cwd=ROOT,
        env={**environ, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == expected


def test_the_archive_settings_default_to_the_archive_clients_own_defaults(tmp_path: Path) -> None:
    """hacs/defaults.py holds each default once: a HACS started with no archive variable asks the
    archive exactly as an ``ArchiveConfig`` made without settings would."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HACS_", "DATABASE_URL"))}
    env.update(HACS_VAR_DIR=str(tmp_path), DJANGO_SETTINGS_MODULE="hacs_site.settings")
    script = (
        "import django; django.setup()\n"
        "from dataclasses import asdict\n"
        "from archive.wayback import ArchiveConfig\n"
        "shipped = ArchiveConfig.from_settings()\n"
        "bare = ArchiveConfig(cdx_url=shipped.cdx_url, wayback_url=shipped.wayback_url,"
        " user_agent=shipped.user_agent)\n"
        "print(sorted(k for k, v in asdict(shipped).items() if asdict(bare)[k] != v))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script],
        cwd=Path(__file__).resolve().parent.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
