"""Enqueueing background jobs, and the queues and workers that run them.

Every job HACS queues goes through ``job_enqueue`` so that it has a ``JobRecord`` the dashboard
can show; the job then runs inside a ``jobs.runner.JobRun``, which owns the record's status,
heartbeat and progress.

Whoever can write to Redis can queue a job, so the queues store jobs as JSON, which cannot run
code when read (RQ's default, pickle, can), and a worker runs only the functions of
``HACS_JOB_MODULES`` (``JobQueue``, ``JobWorker``, ``QueuedJob``; settings name them for django-rq).
"""

from __future__ import annotations

import importlib
import inspect
import logging
import uuid
from collections.abc import Callable, Iterable
from typing import Any

import django_rq
import redis
from django.conf import settings
from django.core.management.base import CommandError
from django.db import transaction
from django_rq.queues import DjangoRQ
from rq import Callback, Worker
from rq.job import Job
from rq.registry import DeferredJobRegistry, ScheduledJobRegistry, StartedJobRegistry
from rq.serializers import JSONSerializer

from jobs.models import JobRecord

logger = logging.getLogger(__name__)

QUEUE_FOR_KIND = {
    JobRecord.Kind.HEALTH: "default",
    JobRecord.Kind.IMPORT: "import",
    JobRecord.Kind.ESTIMATION: "estimation",
    JobRecord.Kind.EVALUATION: "evaluation",
    JobRecord.Kind.LEARNING: "evaluation",  # beside evaluations: never behind imports
    JobRecord.Kind.CRAWL_LIST: "estimation",
    JobRecord.Kind.READ_BACK: "import",
}
# The order in which a worker serving every queue takes jobs: short and time-critical work
# (health checks, crawl lists and recomputes, evaluations) before imports, which can take hours.
QUEUE_PRIORITY = ["default", "estimation", "evaluation", "import"]
LIST_QUEUES = QUEUE_PRIORITY[:-1]


class QueueUnavailable(CommandError):
    """Redis cannot be reached, so no job can be queued.

    A ``CommandError`` so that every management command that enqueues ends with this one line
    instead of a traceback; views catch it and show the message.
    """


def queue_problem() -> str:
    """Empty when Redis answers, else one sentence saying what is wrong and what to do."""
    url = str(settings.RQ_QUEUES["default"]["URL"])
    client = redis.Redis.from_url(url, socket_connect_timeout=2, socket_timeout=2)
    try:
        client.ping()
    except redis.AuthenticationError:
        return (
            f"The job queue (Redis at {_where(url)}) refused HACS's password. Background jobs "
            "cannot be queued or run: REDIS_URL must carry the server's password "
            "(redis://:PASSWORD@host:port/db); scripts/run.sh leaves its own in var/run.env."
        )
    except redis.RedisError as error:
        return (
            f"The job queue (Redis at {_where(url)}) cannot be reached ({error}). Background "
            "jobs cannot be queued or run: start HACS with scripts/run.sh, or set REDIS_URL to "
            "the running server."
        )
    finally:
        client.close()
    return ""


def _where(url: str) -> str:
    """host:port/db of a Redis URL, without its password."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    return f"{parts.hostname}:{parts.port or 6379}{parts.path or '/0'}"


# --- What a worker runs ---------------------------------------------------------------------------


class JobRefused(Exception):
    """A queued job names a function outside ``HACS_JOB_MODULES``: it fails without running."""


def job_function(name: str | None) -> Callable[..., Any]:
    """The job function or RQ callback ``name`` (a dotted path) when it is one of HACS's.

    Checked before anything is imported, since importing a module runs it: the name must be a
    function defined in one of ``settings.HACS_JOB_MODULES`` itself (not a name imported into
    one, such as ``operations.jobs.os``). Raises ``JobRefused`` otherwise.
    """
    name = RENAMED.get(name or "", name)
    module_name, _, attribute = (name or "").rpartition(".")
    if module_name in settings.HACS_JOB_MODULES and attribute.isidentifier():
        found = getattr(importlib.import_module(module_name), attribute, None)
        if inspect.isfunction(found) and found.__module__ == module_name:
            return found
    raise JobRefused(f"{name!r} is not one of HACS's job functions; the job was not run.")


# RQ's failure callback of every queued job, named by its dotted path: the module that defines it
# builds on the runner, which builds on this one.
RECORD_FAILURE = "jobs.callbacks.job_record_failure"
# Jobs queued before the callback moved name it by an older path.
RENAMED = {
    "jobs.services.job_record_failure": RECORD_FAILURE,
    "jobs.services._record_failure": RECORD_FAILURE,
}


class QueuedJob(Job):
    """An RQ job that calls only HACS's job functions and callbacks (``job_function``).

    The stored job names its function and callbacks, and anyone who can write to Redis can
    name any function at all (``os.system``): RQ would import and call it.
    """

    @property
    def func(self) -> Callable[..., Any]:
        if self.instance is not None:
            raise JobRefused("A job calling a method of a stored object was not run.")
        return job_function(self.func_name)

    @property
    def success_callback(self) -> Callable[..., Any] | None:
        name = self._success_callback_name
        return job_function(name) if name else None

    @property
    def failure_callback(self) -> Callable[..., Any] | None:
        name = self._failure_callback_name
        return job_function(name) if name else None

    @property
    def stopped_callback(self) -> Callable[..., Any] | None:
        name = self._stopped_callback_name
        return job_function(name) if name else None


class JobQueue(DjangoRQ):
    """One of HACS's queues: django-rq's (enqueued on commit), keeping its jobs as JSON.

    It insists on its serializer and job class whatever it is given, so that every way a queue
    is made — django-rq from the settings, RQ's cron (``operations.cron``), the code below —
    reads and writes jobs the same safe way.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["serializer"] = JSONSerializer
        kwargs["job_class"] = QueuedJob
        super().__init__(*args, **kwargs)


class JobWorker(Worker):
    """An RQ worker that reads jobs as JSON and runs only HACS's job functions.

    ``manage.py rqworker`` gives a worker its ``--serializer``, pickle unless told otherwise, and
    a worker reads jobs with its own serializer, not its queues': the settings name this class
    (``RQ["WORKER_CLASS"]``) so that no command line can get it wrong.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["serializer"] = JSONSerializer
        kwargs["job_class"] = QueuedJob
        super().__init__(*args, **kwargs)


# --- Enqueueing ---------------------------------------------------------------------------------


def job_enqueue(
    *,
    kind: str,
    func: Callable[..., Any] | str,
    args: Iterable[Any] = (),
    label: str = "",
    user: Any = None,
    total: int = 0,
    on_failure: Callable[..., Any] | None = None,
    key: str | None = None,
) -> JobRecord:
    """Record a job and hand it to RQ once the surrounding transaction commits.

    The job's first argument is always the ``JobRecord`` id, so the job can report progress;
    ``args`` must be JSON-able (ids, ISO dates, option dicts), as the job is stored as JSON.
    Raises ``QueueUnavailable`` (and records nothing) when Redis cannot be reached.
    ``on_failure``, when given, is RQ's failure callback instead of
    ``jobs.callbacks.job_record_failure``; it marks the record through
    ``jobs.runner.job_rq_failed`` as that one does. ``key`` names what the job is the run of.
    """
    problem = queue_problem()
    if problem:
        raise QueueUnavailable(problem)
    record = job_record_create(kind=kind, label=label, user=user, total=total, key=key)
    queue = django_rq.get_queue(record.queue)

    def _enqueue() -> None:
        try:
            queue.enqueue(
                func,  # type: ignore[type-var]  # RQ takes a function or its dotted name
                record.pk,
                *args,
                job_id=record.rq_id,
                on_failure=Callback(on_failure or RECORD_FAILURE),
                result_ttl=7 * 24 * 3600,
                failure_ttl=30 * 24 * 3600,
            )
        except redis.RedisError as error:
            # Redis went away between the check above and the commit: leave no record that
            # would say "queued" forever.
            JobRecord.objects.filter(pk=record.pk).delete()
            raise QueueUnavailable(queue_problem() or str(error)) from error

    # django-rq's COMMIT_MODE already defers enqueueing to the commit; on_commit makes that
    # explicit here too, so a job never starts before the rows it reads exist.
    transaction.on_commit(_enqueue)
    return record


def job_record_create(
    *,
    kind: str,
    label: str = "",
    user: Any = None,
    total: int = 0,
    queue: str | None = None,
    key: str | None = None,
    parent: JobRecord | None = None,
) -> JobRecord:
    """A queued job's record (``job_enqueue``'s; ``JobRun.start`` makes one to run at once).
    ``key`` names what the job is the run of (unique: an ``IntegrityError`` when taken)."""
    return JobRecord.objects.create(
        rq_id=uuid.uuid4().hex,
        kind=kind,
        label=label[:300],
        queue=queue or QUEUE_FOR_KIND[JobRecord.Kind(kind)],
        total=total,
        key=key,
        parent=parent,
        created_by=user if getattr(user, "is_authenticated", False) else None,
    )


# --- What waits in Redis -------------------------------------------------------------------------


def job_ids_in_redis() -> tuple[set[str], set[str]] | None:
    """Ids of jobs waiting in any queue or registry, and of jobs started (None when Redis cannot
    be reached); RQ's abandoned jobs are cleaned up first so that their callbacks run."""
    connection = django_rq.get_connection("default")
    waiting: set[str] = set()
    started: set[str] = set()
    try:
        for name in settings.RQ_QUEUES:
            queue = JobQueue(name, connection=connection)
            # Its cleanup calls abandoned jobs' failure callbacks: only HACS's (QueuedJob).
            registry = StartedJobRegistry(queue=queue, job_class=queue.job_class)
            registry.cleanup()
            started.update(registry.get_job_ids())
            waiting.update(queue.get_job_ids())
            waiting.update(ScheduledJobRegistry(queue=queue).get_job_ids())
            waiting.update(DeferredJobRegistry(queue=queue).get_job_ids())
    except redis.RedisError:
        return None
    return waiting, started


WAITING_SHOWN = 50
KNOWN_FUNCTIONS = {
    "operations.daily.daily_crawl_list_and_hand_offs": "Daily crawl list (from the scheduler)",
    "operations.jobs.daily_fetch_retry": "Older history, failed fetches (from the scheduler)",
    "operations.jobs.nightly_refresh": "Nightly refresh from the archive (from the scheduler)",
    "operations.jobs.crawls_read_back": "Crawl read-back (from the scheduler)",
}
# Every few minutes, and most often a no-op: the sweep, and the daily list's catch-up (the list
# it builds shows with its own record).
HIDDEN_FUNCTIONS = {
    "operations.jobs.sweep_interrupted",
    "operations.daily.daily_catch_up",
    "operations.jobs.crawls_read_back",  # a job of its own only when it reads something
}


def jobs_waiting() -> list[dict[str, Any]]:
    """Jobs waiting in the queues that have no record yet (the scheduler's periodic jobs make
    theirs when they start), oldest first, so that the Jobs page shows them while they wait."""
    connection = django_rq.get_connection("default")
    found: list[dict[str, Any]] = []
    try:
        for name in QUEUE_PRIORITY:
            queue = JobQueue(name, connection=connection)
            ids = queue.get_job_ids(0, WAITING_SHOWN)
            prefixes = {i.split("-", 1)[0] for i in ids}
            recorded = set(
                JobRecord.objects.filter(rq_id__in=prefixes).values_list("rq_id", flat=True)
            )
            unrecorded = [i for i in ids if i.split("-", 1)[0] not in recorded]
            for job in queue.job_class.fetch_many(
                unrecorded, connection=connection, serializer=queue.serializer
            ):
                if job is None or job.func_name in HIDDEN_FUNCTIONS:
                    continue
                found.append(
                    {
                        "queue": name,
                        "label": KNOWN_FUNCTIONS.get(job.func_name or "", job.func_name),
                        "enqueued_at": job.enqueued_at,
                    }
                )
    except redis.RedisError:
        return []
    return found
