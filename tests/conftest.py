"""Shared fixtures: a real Redis server, real worker processes, users and small factories."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hacs_site.localservers import LocalServer, start_redis

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def redis_server() -> Iterator[LocalServer]:
    server = start_redis()
    yield server
    server.stop()


@pytest.fixture()
def redis_url(redis_server: LocalServer, settings: Any) -> Iterator[str]:
    """Point HACS's queues at the session's Redis server, emptied for this test."""
    import redis

    url = f"redis://127.0.0.1:{redis_server.port}/0"
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
    """Run a real RQ worker process in burst mode over the given queues until they are empty."""

    def run(*queues: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            [sys.executable, str(ROOT / "manage.py"), "rqworker", *(queues or ("default",)),
             "--burst"],
            env=worker_env, cwd=ROOT, capture_output=True, text=True, timeout=timeout,
        )  # fmt: skip
        assert result.returncode == 0, result.stdout + result.stderr
        return result

    return run


def make_user(username: str = "librarian", *, role: str = "librarian", **kw: Any) -> Any:
    from django.contrib.auth import get_user_model

    kw.setdefault("password", "correct horse battery staple")
    user_model = get_user_model()
    if role == "admin":
        return user_model.objects.create_superuser(username=username, email="", **kw)
    user = user_model.objects.create_user(username=username, **kw)
    if role == "librarian":
        from dashboard.roles import make_librarian

        make_librarian(user)
    return user


@pytest.fixture()
def user(db: None) -> Any:
    return make_user()


@pytest.fixture()
def logged_in_client(client: Any, user: Any) -> Any:
    client.force_login(user)
    return client


def make_site(**kw: Any) -> Any:
    from archive.models import Site

    n = Site.objects.count() + 1
    kw.setdefault("seed_url", f"http://www.cs.example.edu/~author{n}/")
    kw.setdefault("canonical_key", f"edu,example,cs)/~author{n}")
    kw.setdefault("author", f"Author {n}")
    return Site.objects.create(**kw)
