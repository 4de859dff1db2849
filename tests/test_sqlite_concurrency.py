"""Logins during imports on SQLite, the embedded default, which lets one connection write at a time.

HACS opens SQLite in WAL mode (readers never wait for the writer), begins every transaction
IMMEDIATE (a writer waits for the lock at its start, never half-way) and waits 30 s for the
lock; and an import writes in short transactions. Before, an import finished a batch of sites
(their updates and estimates) in one transaction: a login that came meanwhile waited for the
whole batch, and past 30 s it failed with 500 ("database is locked"). ``bench.login_load``
measures logins and pages under a real import load; here, a login is made while the import is
in the middle of finishing its sites, and must succeed. No test measures a time.
"""

from __future__ import annotations

import io
import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.db import connection
from django.db.utils import ConnectionHandler
from django.test import Client

from archive.models import Site
from archive.pipeline import FromArchive, sites_import
from archive.wayback import ArchiveClient, ArchiveConfig
from hacs_demo import build_demo_archive
from hacs_site.env import database_from_url
from scheduling.estimates import estimates_recompute
from testbed.ia_server import IAArchive, ia_rows_and_bodies
from tests.factories import PASSWORD, make_user

GUARD = 120  # seconds a test waits at most for a login (SQLite's own wait is 30 s)


@pytest.fixture()
def sqlite_file(tmp_path: Path, django_db_blocker: Any) -> Any:
    """A SQLite file of this test's own (on either test database): connections to it are
    allowed."""
    with django_db_blocker.unblock():
        yield tmp_path / "hacs.sqlite3"


def sqlite_connection(path: Path) -> Any:
    """A Django connection to a SQLite file, configured as HACS configures its database."""
    settings = database_from_url(f"sqlite:///{path}", base_dir=path.parent)
    return ConnectionHandler({"default": settings})["default"]


def test_sqlite_is_opened_in_wal_mode_with_a_30_s_busy_timeout(sqlite_file: Path) -> None:
    db = sqlite_connection(sqlite_file)
    try:
        with db.cursor() as cursor:
            cursor.execute("PRAGMA journal_mode")
            assert cursor.fetchone()[0] == "wal"
            cursor.execute("PRAGMA busy_timeout")
            assert cursor.fetchone()[0] == 30_000
        assert db.transaction_mode == "IMMEDIATE"
    finally:
        db.close()


def test_a_transaction_holds_the_write_lock_from_its_start_and_readers_still_read(
    sqlite_file: Path,
) -> None:
    """IMMEDIATE: a transaction that has not written yet already keeps other writers out (so
    it never fails half-way for want of the lock), and WAL lets readers in meanwhile."""
    path = sqlite_file
    db = sqlite_connection(path)
    try:
        with db.cursor() as cursor:
            cursor.execute("CREATE TABLE t (n INTEGER)")
            cursor.execute("INSERT INTO t VALUES (1)")
        other = sqlite3.connect(path, timeout=0, isolation_level=None)
        with _atomic(db):
            with pytest.raises(sqlite3.OperationalError, match="locked"):
                other.execute("INSERT INTO t VALUES (2)")
            assert other.execute("SELECT count(*) FROM t").fetchone()[0] == 1
        other.execute("INSERT INTO t VALUES (3)")  # the lock is free again
        other.close()
    finally:
        db.close()


class _atomic:
    """A transaction on a connection outside ``django.db.connections``, begun as Django
    begins one (``BEGIN`` in the configured mode) and committed at the end."""

    def __init__(self, db: Any) -> None:
        self.db = db

    def __enter__(self) -> None:
        self.db.ensure_connection()
        self.db.set_autocommit(False, force_begin_transaction_with_broken_autocommit=True)

    def __exit__(self, *exc: object) -> None:
        self.db.commit()
        self.db.set_autocommit(True)


def log_in(answers: list[Any]) -> None:
    """Log in through the login page, in this thread's own database connection."""
    try:
        answer = Client().post("/accounts/login/", {"username": "reader", "password": PASSWORD})
        answers.append(answer.status_code)
    except Exception as error:  # "database is locked", on the old import
        answers.append(repr(error))
    finally:
        connection.close()


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_a_login_succeeds_while_an_import_finishes_its_sites(
    tmp_path: Path, redis_url: str
) -> None:
    import redis

    demo = build_demo_archive(tmp_path / "demo", sites=4, seed=5)
    call_command("import_seeds", str(demo.seeds_path), stdout=io.StringIO())
    make_user("reader", role="viewer")
    answers: list[Any] = []

    def finish(site_ids: list[int]) -> None:
        """What an import does as it finishes sites (their estimates), and a login meanwhile."""
        estimates_recompute(site_ids=site_ids)
        login = threading.Thread(target=log_in, args=(answers,))
        login.start()
        login.join(timeout=GUARD)

    rows, bodies = ia_rows_and_bodies(demo)
    with IAArchive(rows, bodies) as archive:
        config = ArchiveConfig(
            cdx_url=archive.cdx_url,
            wayback_url=archive.wayback_url,
            cdx_per_minute=6000,
            memento_per_minute=60000,
        )
        client = ArchiveClient(config, redis.Redis.from_url(redis_url))
        ids = list(Site.objects.values_list("pk", flat=True))
        report = sites_import(FromArchive(ids), client=client, after=finish)
    assert sorted(report.done) == sorted(ids)
    assert answers, "no site was finished"
    assert answers == [302] * len(answers)  # each login went through to the Overview
