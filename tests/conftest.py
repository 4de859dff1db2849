"""Shared fixtures: a real Redis server, real worker processes, a logged-in librarian.

Rows are made by ``tests.factories``; ``make_site`` and ``make_user`` are imported here too so
that modules still importing them from ``tests.conftest`` keep working.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings as hypothesis_settings

from scripts.localservers import LocalServer, start_redis
from tests.factories import make_site, make_user

__all__ = ["make_site", "make_user"]

# The Chromium page fixture (``browser_page``) for every browser test module.
pytest_plugins = ["tests.support.browser"]

ROOT = Path(__file__).resolve().parent.parent

# No test may depend on the machine's speed: Hypothesis's per-example deadline (200 ms) is off.
hypothesis_settings.register_profile("hacs", deadline=None)
hypothesis_settings.load_profile("hacs")


@pytest.fixture(scope="session", autouse=True)
def collected_static() -> None:
    """Pages name their static files by content hash (the manifest storage, settings.STORAGES):
    collected once a session into the session's VAR_DIR, as run.sh collects them; files already
    collected and unchanged are skipped."""
    import fcntl

    from django.conf import settings
    from django.contrib.staticfiles.handlers import StaticFilesHandler
    from django.core.management import call_command

    # One collector at a time: pytest-xdist's workers share the session's VAR_DIR.
    with open(Path(settings.VAR_DIR) / ".collectstatic.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        call_command("collectstatic", "--no-input", verbosity=0)
    # The live server of the browser tests serves static files as HACS does, through WhiteNoise's
    # hashed and compressed copies, not through Django's development handler, which reads the
    # source folders and knows no hashed name.
    StaticFilesHandler._should_handle = lambda self, path: False  # type: ignore[method-assign]


@pytest.fixture(scope="session")
def redis_server() -> Iterator[LocalServer]:
    """The session's Redis, with a password like the run command's (``redis_url`` carries it)."""
    server = start_redis()
    yield server
    server.stop()


@pytest.fixture()
def redis_url(redis_server: LocalServer, settings: Any) -> Iterator[str]:
    """Point HACS's queues at the session's Redis server, emptied for this test."""
    import redis

    url = redis_server.url()
    redis.Redis.from_url(url).flushdb()
    settings.REDIS_URL = url
    settings.RQ_QUEUES = {
        name: {**config, "URL": url} for name, config in settings.RQ_QUEUES.items()
    }
    yield url


def database_url_of_test_db() -> str:
    """A DATABASE_URL that makes another process use this test run's database."""
    from django.db import connection

    data = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{Path(data['NAME']).resolve()}"
    user = data.get("USER") or ""
    password = f":{data['PASSWORD']}" if data.get("PASSWORD") else ""
    auth = f"{user}{password}@" if user else ""
    return f"postgres://{auth}{data['HOST']}:{data['PORT']}/{data['NAME']}"


@pytest.fixture()
def worker_env(redis_url: str) -> dict[str, str]:
    """Environment for a HACS worker process sharing this test's Redis and database."""
    env = dict(os.environ)
    env["DATABASE_URL"] = database_url_of_test_db()
    env["REDIS_URL"] = redis_url
    env["DJANGO_SETTINGS_MODULE"] = "hacs_site.settings"
    return env


@pytest.fixture()
def run_worker(worker_env: dict[str, str]) -> Any:
    """Run a real RQ worker process in burst mode over the given queues until they are empty
    (``rqworker`` options may follow the queues)."""

    def run(*queues: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            [
                sys.executable,
                str(ROOT / "manage.py"),
                "rqworker",
                *(queues or ("default",)),
                "--burst",
            ],
            env=worker_env,
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        assert result.returncode == 0, result.stdout + result.stderr
        return result

    return run


@pytest.fixture()
def user(db: None) -> Any:
    return make_user()


@pytest.fixture()
def logged_in_client(client: Any, user: Any) -> Any:
    client.force_login(user)
    return client
