"""Only HACS can use its job queues, and what sits in them cannot make a worker run code.

Issue #24, item 1: as user nobody, ``redis-cli HSET rq:job:e data <pickle>`` and ``RPUSH
rq:queue:default e`` made a worker (root) run a command. The run command's Redis now asks for a
password kept owner-only in ``var/``, the queues hold JSON, and a worker runs only HACS's job
functions. Item 8: a heartbeat on a SQLite database that another writer holds locked waits quietly.
"""

from __future__ import annotations

import json
import logging
import pickle
import socket
import stat
import sys
import threading
import time
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psutil
import pytest
import redis
from django.db import connection, transaction
from django.utils import timezone
from rq.job import Job, JobStatus

from jobs.models import JobRecord
from jobs.runner import job_heartbeat
from jobs.services import JobQueue, JobRefused, job_function, queue_problem
from scripts.localservers import start_redis

pytestmark = pytest.mark.integration


class CreatesMarker:
    """Unpickling it calls ``open(path, "w")``, which creates the file: pickle runs code."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self) -> tuple[Any, tuple[str, str]]:
        return (open, (str(self.path), "w"))


def push_job(connection: redis.Redis, job_id: str, data: bytes, queue: str = "default") -> None:
    """Queue a job as an attacker who can write to Redis would: a job hash and its queue entry."""
    connection.hset(
        f"rq:job:{job_id}",
        mapping={
            "data": zlib.compress(data),
            "origin": queue,
            "status": "queued",
            "description": "an innocent-looking job",
            "created_at": "2026-01-01T00:00:00.000000Z",
            "enqueued_at": "2026-01-01T00:00:00.000000Z",
            "timeout": "60",
        },
    )
    connection.rpush(f"rq:queue:{queue}", job_id)


def failure(job: Job) -> str:
    """The traceback a failed job left (empty for one that did not fail)."""
    result = job.latest_result()
    return (result.exc_string or "") if result is not None else ""


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


# --- The queues hold JSON, and a worker runs HACS's job functions only --------------------------


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    "options",
    [(), ("--serializer", "rq.serializers.DefaultSerializer")],
    ids=["worker", "worker-told-to-unpickle"],
)
def test_a_pickled_job_pushed_onto_a_queue_is_refused_without_running(
    redis_url: str, run_worker: Any, tmp_path: Path, options: tuple[str, ...]
) -> None:
    marker = tmp_path / "pickle-ran"
    connection = redis.Redis.from_url(redis_url)
    push_job(connection, "evil", pickle.dumps((CreatesMarker(marker), None, [], {})))

    # A real worker as the run command starts it; even one told on its command line to read
    # pickles (django-rq's rqworker defaults to them) reads JSON.
    run_worker("default", *options)

    assert not marker.exists()
    job = JobQueue(connection=connection).fetch_job("evil")
    assert job is not None and job.get_status() == JobStatus.FAILED
    assert "DeserializationError" in failure(job)
    assert connection.llen("rq:queue:default") == 0


@pytest.mark.django_db(transaction=True)
def test_a_json_job_naming_a_function_outside_hacs_is_refused_without_running(
    redis_url: str, run_worker: Any, tmp_path: Path
) -> None:
    marker = tmp_path / "open-ran"
    connection = redis.Redis.from_url(redis_url)
    payload = ["builtins.open", None, [str(marker), "w"], {}]  # open(marker, "w")
    push_job(connection, "evil", json.dumps(payload).encode())

    run_worker("default")

    assert not marker.exists()
    job = JobQueue(connection=connection).fetch_job("evil")
    assert job is not None and job.get_status() == JobStatus.FAILED
    assert "JobRefused: 'builtins.open' is not one of HACS's job functions" in failure(job)


def test_only_functions_defined_in_hacss_job_modules_are_job_functions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from jobs.callbacks import job_record_failure
    from operations.jobs import import_site

    assert job_function("operations.jobs.import_site") is import_site
    assert job_function("jobs.callbacks.job_record_failure") is job_record_failure
    assert job_function("jobs.services.job_record_failure") is job_record_failure  # queued before
    for name in (
        "os.system",
        "builtins.open",
        "operations.jobs.os.system",  # a module imported into a job module
        "operations.jobs.job_enqueue",  # a function imported into one
        "operations.jobs.Path",  # a class, not a function
        "operations.refresh.sites_refresh",  # HACS's, but not a job
        "operations.jobs.no_such_function",
        "operations.jobs",
        "",
        None,
    ):
        with pytest.raises(JobRefused):
            job_function(name)
    # A refused module is not even imported (importing runs its code).
    (tmp_path / "sneaky.py").write_text("raise SystemExit('imported')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(JobRefused):
        job_function("sneaky.run")
    assert "sneaky" not in sys.modules


def test_every_periodic_job_is_a_job_function(redis_url: str) -> None:
    from rq.cron import CronScheduler

    scheduler = CronScheduler(connection=redis.Redis.from_url(redis_url))
    scheduler.load_config_from_file("operations.cron")
    assert len(scheduler.get_jobs()) >= 4
    for cron_job in scheduler.get_jobs():
        assert job_function(cron_job.func_name) is cron_job.func


@pytest.mark.django_db(transaction=True)
def test_the_cron_scheduler_stores_its_jobs_as_json_and_a_worker_runs_them(
    redis_url: str, run_worker: Any
) -> None:
    from rq.cron import CronScheduler

    connection = redis.Redis.from_url(redis_url)
    scheduler = CronScheduler(connection=connection)
    scheduler.load_config_from_file("operations.cron")
    [sweep] = [j for j in scheduler.get_jobs() if j.name == "sweep-interrupted"]

    queued = sweep.enqueue(connection)

    stored = zlib.decompress(connection.hget(queued.key, "data"))
    assert json.loads(stored)[0] == "operations.jobs.sweep_interrupted"
    run_worker("default")
    job = JobQueue(connection=connection).fetch_job(queued.id)
    assert job is not None and job.get_status() == JobStatus.FINISHED, failure(job)
    assert job.return_value() == 0


# --- Redis asks for a password, kept owner-only -------------------------------------------------


def test_the_run_commands_redis_refuses_a_client_without_its_password(tmp_path: Path) -> None:
    directory = tmp_path / "var" / "redis"
    with start_redis(directory, persistent=True) as server:
        # The attack as reported, over a raw socket: no password, no job.
        with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock:
            sock.sendall(b"HSET rq:job:e data x\r\nRPUSH rq:queue:default e\r\n")
            time.sleep(0.2)
            reply = sock.recv(4096)
        assert reply.startswith(b"-NOAUTH"), reply
        with pytest.raises(redis.AuthenticationError):
            redis.Redis(host="127.0.0.1", port=server.port, password="guessed").ping()

        client = redis.Redis.from_url(server.url())
        assert client.exists("rq:job:e", "rq:queue:default") == 0
        assert client.ping()
        assert server.url() == f"redis://:{server.password}@127.0.0.1:{server.port}/0"
        assert len(server.password) >= 32
        # The password is in the owner-only redis.conf, on no process list.
        conf = directory / "redis.conf"
        assert f'requirepass "{server.password}"' in conf.read_text()
        assert mode(conf) == 0o600 and mode(directory) == 0o700
        assert server.process is not None
        command_line = " ".join(psutil.Process(server.process.pid).cmdline())
        assert "redis-server" in command_line and server.password not in command_line
    with start_redis(directory, persistent=True) as again:
        assert again.password != server.password  # a new one at every start


def test_run_env_keeps_the_redis_password_owner_only(tmp_path: Path) -> None:
    from scripts.run import write_run_env

    run_env = tmp_path / "run.env"
    run_env.write_text("REDIS_URL=redis://127.0.0.1:1/0\n")
    run_env.chmod(0o644)  # as an older version may have left it

    write_run_env(run_env, {"REDIS_URL": "redis://:s3cret@127.0.0.1:6380/0"})

    assert mode(run_env) == 0o600
    assert "REDIS_URL=redis://:s3cret@127.0.0.1:6380/0" in run_env.read_text()


def test_a_wrong_redis_password_is_named_as_such(redis_url: str, settings: Any) -> None:
    url = redis_url.replace(redis_url.split("@")[0], "redis://:wrong")
    settings.RQ_QUEUES = {name: {**c, "URL": url} for name, c in settings.RQ_QUEUES.items()}
    problem = queue_problem()
    assert "refused HACS's password" in problem and "REDIS_URL" in problem
    assert "wrong" not in problem


# --- Item 8: a heartbeat waits quietly for a locked database ------------------------------------


@contextmanager
def record_locked(record_id: int) -> Iterator[None]:
    """Another connection holds the job's record locked while the block runs, as a worker's
    ``job_item_done`` does: a row lock on PostgreSQL, SQLite's one write lock (HACS's SQLite
    transactions begin IMMEDIATE)."""
    locked, release = threading.Event(), threading.Event()

    def hold() -> None:
        try:
            with transaction.atomic():
                JobRecord.objects.select_for_update().get(pk=record_id)
                locked.set()
                release.wait(30)
        finally:
            connection.close()  # this thread's connection

    holder = threading.Thread(target=hold, name="lock-holder")
    holder.start()
    assert locked.wait(10), "the lock holder never got its lock"
    try:
        yield
    finally:
        release.set()
        holder.join(10)


@pytest.mark.django_db(transaction=True)
def test_a_heartbeat_waits_quietly_for_a_locked_database_and_lands_once_it_is_free(
    settings: Any, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings.HACS_JOB_HEARTBEAT_SECONDS = 0.1
    if connection.vendor == "sqlite":
        # SQLite's busy timeout (30 s in HACS) shortened for the connections made from here on,
        # the heartbeat thread's: the lock below outlasts it many times over, as a long import's
        # transaction outlasts 30 s. (PostgreSQL's UPDATE simply waits for the row lock.)
        monkeypatch.setitem(connection.settings_dict["OPTIONS"], "timeout", 0.2)
    record = JobRecord.objects.create(
        rq_id="beating", kind=JobRecord.Kind.IMPORT, queue="terminal", status="running"
    )
    caplog.set_level(logging.DEBUG)

    with job_heartbeat(record.pk, thread=True):
        with record_locked(record.pk):
            before = JobRecord.objects.get(pk=record.pk).heartbeat_at
            time.sleep(1.5)  # fifteen beats' worth
            assert JobRecord.objects.get(pk=record.pk).heartbeat_at == before  # really locked
            released = timezone.now()
        deadline = time.monotonic() + 10
        while JobRecord.objects.get(pk=record.pk).heartbeat_at <= released:
            assert time.monotonic() < deadline, "no heartbeat after the lock was released"
            time.sleep(0.05)

    loud = [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR]
    assert loud == [], [r.getMessage() for r in loud]
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) <= 1, warnings  # one line for the whole wait, at most
    assert all("\n" not in w for w in warnings)
