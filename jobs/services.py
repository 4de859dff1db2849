"""Enqueueing background jobs and recording their progress for the Jobs page.

Every job HACS runs goes through ``job_enqueue`` so that it has a ``JobRecord`` the dashboard can
show, and every job function reports through ``JobProgress`` so that the record and RQ's
``job.meta`` agree.

Work carries a lease: whoever runs a job writes ``heartbeat_at`` every
``HACS_JOB_HEARTBEAT_SECONDS`` (a thread beside the job). A running job whose heartbeat is older
than ``HACS_JOB_LEASE_SECONDS`` and of which nothing waits in a queue has lost its worker, Redis
or terminal: ``job_records_sweep`` marks it interrupted, whether or not RQ noticed (RQ cannot
notice anything while Redis is down, and a SIGKILLed worker's work-horse may still be running).

Whoever can write to Redis can queue a job, so the queues store jobs as JSON, which cannot run
code when read (RQ's default, pickle, can), and a worker runs only the functions of
``HACS_JOB_MODULES`` (``JobQueue``, ``JobWorker``, ``QueuedJob``; settings name them for django-rq).
"""

from __future__ import annotations

import importlib
import inspect
import logging
import socket
import threading
import traceback
import uuid
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from types import TracebackType
from typing import Any

import django_rq
import redis
from django.conf import settings
from django.core.management.base import CommandError
from django.db import DatabaseError, OperationalError, connections, transaction
from django.utils import timezone
from django_rq.queues import DjangoRQ
from rq import Callback, Worker
from rq.exceptions import AbandonedJobError
from rq.job import Job, JobStatus
from rq.registry import DeferredJobRegistry, ScheduledJobRegistry, StartedJobRegistry
from rq.serializers import JSONSerializer

from jobs.models import JobRecord

logger = logging.getLogger(__name__)

QUEUE_FOR_KIND = {
    JobRecord.Kind.HEALTH: "default",
    JobRecord.Kind.IMPORT: "import",
    JobRecord.Kind.ESTIMATION: "estimation",
    JobRecord.Kind.EVALUATION: "evaluation",
    JobRecord.Kind.CRAWL_LIST: "estimation",
}
# The order in which a worker serving every queue takes jobs: short and time-critical work
# (health checks, crawl lists and recomputes, evaluations) before imports, which can take hours.
QUEUE_PRIORITY = ["default", "estimation", "evaluation", "import"]
LIST_QUEUES = QUEUE_PRIORITY[:-1]

INTERRUPTED_REASON = (
    "Interrupted: its worker, Redis or terminal stopped before it finished; retry it."
)


class QueueUnavailable(CommandError):
    """Redis cannot be reached, so no job can be queued.

    A ``CommandError`` so that every management command that enqueues ends with this one line
    instead of a traceback; views catch it and show the message.
    """


def queue_problem() -> str:
    """Empty when Redis answers, else one sentence saying what is wrong and what to do."""
    url = settings.RQ_QUEUES["default"]["URL"]
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
    module_name, _, attribute = (name or "").rpartition(".")
    if module_name in settings.HACS_JOB_MODULES and attribute.isidentifier():
        found = getattr(importlib.import_module(module_name), attribute, None)
        if inspect.isfunction(found) and found.__module__ == module_name:
            return found
    raise JobRefused(f"{name!r} is not one of HACS's job functions; the job was not run.")


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
) -> JobRecord:
    """Record a job and hand it to RQ once the surrounding transaction commits.

    The job's first argument is always the ``JobRecord`` id, so the job can report progress;
    ``args`` must be JSON-able (ids, ISO dates, option dicts), as the job is stored as JSON.
    Raises ``QueueUnavailable`` (and records nothing) when Redis cannot be reached.
    ``on_failure``, when given, is RQ's failure callback instead of :func:`job_record_failure`,
    which it calls first.
    """
    problem = queue_problem()
    if problem:
        raise QueueUnavailable(problem)
    record = job_record_create(kind=kind, label=label, user=user, total=total)
    queue = django_rq.get_queue(record.queue)

    def _enqueue() -> None:
        try:
            queue.enqueue(
                func,
                record.pk,
                *args,
                job_id=record.rq_id,
                on_failure=Callback(on_failure or job_record_failure),
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
    *, kind: str, label: str = "", user: Any = None, total: int = 0, queue: str | None = None
) -> JobRecord:
    """The record of a job that RQ runs without ``job_enqueue`` (a cron job runs in place)."""
    return JobRecord.objects.create(
        rq_id=uuid.uuid4().hex,
        kind=kind,
        label=label[:300],
        queue=queue or QUEUE_FOR_KIND[JobRecord.Kind(kind)],
        total=total,
        created_by=user if getattr(user, "is_authenticated", False) else None,
    )


def job_record_failure(
    job: Job, connection: Any, exc_type: type, exc: BaseException, tb: Any
) -> None:
    """RQ failure callback: mark the job's record failed with the reason.

    RQ calls it with ``AbandonedJobError`` when the worker running the job stopped sending
    heartbeats (killed): the record is then interrupted, unless its own heartbeat shows that the
    job is still running (a SIGKILLed worker's work-horse goes on).
    """
    records = JobRecord.objects.filter(rq_id=job.id).exclude(status__in=JobRecord.ENDED)
    if issubclass(exc_type, AbandonedJobError):
        records.filter(_stale()).update(
            status=JobRecord.Status.INTERRUPTED, error=INTERRUPTED_REASON
        )
        return
    # An interrupted job keeps its more telling reason (the exception is then Redis's).
    records = records.exclude(status=JobRecord.Status.INTERRUPTED)
    message = "".join(traceback.format_exception_only(exc_type, exc)).strip()
    records.update(status=JobRecord.Status.FAILED, error=message[:5000], finished_at=timezone.now())


# Jobs queued before the callback was renamed name it by its old dotted path.
_record_failure = job_record_failure


# --- Heartbeats ---------------------------------------------------------------------------------


def job_heartbeat_beat(record_id: int) -> None:
    JobRecord.objects.filter(pk=record_id).update(heartbeat_at=timezone.now())


def _database_locked(error: DatabaseError) -> bool:
    """SQLite's "database is locked": another connection held its one write lock past the busy
    timeout (a long import's transaction, in this process or another)."""
    return isinstance(error, OperationalError) and "locked" in str(error)


def _heartbeat_beat_waiting(record_id: int, stop: threading.Event) -> None:
    """One beat of the heartbeat thread.

    SQLite lets one connection write at a time and a long import holds the lock for a while:
    the beat waits for it, retrying with a short backoff until it lands or the job ends, and
    says so in one line, once. Any other database error skips the beat, in one line: the lease
    outlasts two beats.
    """
    delay = 0.05
    waiting = False
    while True:
        try:
            job_heartbeat_beat(record_id)
            return
        except DatabaseError as error:
            if not _database_locked(error):
                logger.warning("Job record %s: heartbeat skipped (%s)", record_id, error)
                connections.close_all()  # the next beat connects afresh
                return
            if not waiting:
                logger.warning(
                    "Job record %s: heartbeat waiting for the database, which another writer "
                    "holds locked",
                    record_id,
                )
                waiting = True
        if stop.wait(delay):
            return
        delay = min(2 * delay, settings.HACS_JOB_HEARTBEAT_SECONDS)


@contextmanager
def job_heartbeat(record_id: int, *, thread: bool | None = None) -> Iterator[None]:
    """Keep the record's lease while the block runs: a heartbeat now and then every
    ``HACS_JOB_HEARTBEAT_SECONDS`` from a thread, which dies with the process.

    The thread runs inside RQ workers (and when asked, for a command in the foreground); a job
    function called directly, in a test's transaction, gets the first beat only.
    """
    from rq import get_current_job

    job_heartbeat_beat(record_id)
    if thread is None:
        thread = get_current_job() is not None
    if not thread:
        yield
        return
    stop = threading.Event()

    def beat() -> None:
        try:
            while not stop.wait(settings.HACS_JOB_HEARTBEAT_SECONDS):
                _heartbeat_beat_waiting(record_id, stop)
        finally:
            connections.close_all()  # this thread's own connections

    beater = threading.Thread(target=beat, name=f"hacs-heartbeat-{record_id}", daemon=True)
    beater.start()
    try:
        yield
    finally:
        stop.set()
        beater.join(timeout=5)


def _stale() -> Any:
    """Records whose lease ran out: no heartbeat (or start) within ``HACS_JOB_LEASE_SECONDS``."""
    from django.db.models import Q

    limit = timezone.now() - timedelta(seconds=settings.HACS_JOB_LEASE_SECONDS)
    return Q(heartbeat_at__lt=limit) | Q(heartbeat_at__isnull=True, created_at__lt=limit)


# --- Progress -----------------------------------------------------------------------------------


def _ended_status(record: JobRecord) -> None:
    """Finish a record: finished, partial (some items failed) or failed (all of them did)."""
    failed = int(record.counts.get("failed", 0))
    record.finished_at = timezone.now()
    record.heartbeat_at = record.finished_at
    if failed and failed >= record.done:
        record.status = JobRecord.Status.FAILED
        record.error = record.error or f"All {failed} failed; the reasons are listed below."
    elif failed:
        record.status = JobRecord.Status.PARTIAL
        record.error = ""
    else:
        record.status = JobRecord.Status.FINISHED
        record.error = ""


class JobProgress:
    """Context manager a job function uses to report progress.

    Entering marks the record running and starts its heartbeat; ``advance`` and ``set_total``
    update its counts (and RQ's ``job.meta``); leaving marks it finished (partial or failed when
    items failed), failed with the exception's message, or interrupted on Ctrl-C or a stop.
    """

    def __init__(self, record_id: int, *, heartbeat_thread: bool | None = None) -> None:
        self.record = JobRecord.objects.get(pk=record_id)
        self._heartbeat = job_heartbeat(record_id, thread=heartbeat_thread)

    def __enter__(self) -> JobProgress:
        self.record.status = JobRecord.Status.RUNNING
        self.record.started_at = self.record.started_at or timezone.now()
        self.record.worker = socket.gethostname()
        self.record.error = ""
        self.record.save(update_fields=["status", "started_at", "worker", "error"])
        self._heartbeat.__enter__()
        return self

    def set_total(self, total: int) -> None:
        self.record.total = total
        self._save(["total"])

    def add_items(self, ids: Iterable[int]) -> None:
        """Name more items (sites) the job works on, so that they are found if it stops."""
        known = set(self.record.items)
        new = [i for i in ids if i not in known]
        if new:
            self.record.items = [*self.record.items, *new]
            self.record.save(update_fields=["items"])

    def advance(self, done: int = 1, **counts: int) -> None:
        self.record.done += done
        for name, value in counts.items():
            self.record.counts[name] = self.record.counts.get(name, 0) + value
        self._save(["done", "counts"])

    def fail_item(self, item: str, reason: str) -> None:
        self.record.failures = [*self.record.failures, {"item": item, "reason": reason}][-500:]
        self.record.counts["failed"] = self.record.counts.get("failed", 0) + 1
        self._save(["failures", "counts"])

    def _save(self, fields: list[str]) -> None:
        self.record.save(update_fields=fields)
        _publish_meta(self.record)

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._heartbeat.__exit__(exc_type, exc, tb)
        if exc is None:
            _ended_status(self.record)
        elif isinstance(exc, KeyboardInterrupt | SystemExit):
            self.record.status = JobRecord.Status.INTERRUPTED
            self.record.error = INTERRUPTED_REASON
            self.record.heartbeat_at = timezone.now()
        else:
            self.record.finished_at = timezone.now()
            self.record.status = JobRecord.Status.FAILED
            self.record.error = "".join(traceback.format_exception_only(exc_type, exc)).strip()
        self.record.save(update_fields=["status", "finished_at", "error", "heartbeat_at"])


def job_item_done(
    record_id: int, *, item: str, failure: str = "", counts: dict[str, int] | None = None
) -> None:
    """One item of a fanned-out job is done: count it, and finish the record with the last one.

    Several workers report to the same record at once, so the counters are updated inside a
    row lock rather than read-modified-written. An item marked interrupted earlier (its worker
    seemed dead) that reports after all loses that mark, and an interrupted record runs again.
    """
    with transaction.atomic():
        record = JobRecord.objects.select_for_update().get(pk=record_id)
        record.failures = [
            f for f in record.failures if not (f.get("item") == item and f.get("interrupted"))
        ]
        record.done += 1
        for name, value in (counts or {}).items():
            record.counts[name] = record.counts.get(name, 0) + value
        if failure:
            record.failures = [*record.failures, {"item": item, "reason": failure}][-500:]
            record.counts["failed"] = record.counts.get("failed", 0) + 1
        record.started_at = record.started_at or timezone.now()
        record.heartbeat_at = timezone.now()
        if record.done >= record.total:
            _ended_status(record)
        elif record.status in (JobRecord.Status.QUEUED, JobRecord.Status.INTERRUPTED):
            record.status = JobRecord.Status.RUNNING
            record.error = ""
        record.save()
    _publish_meta(record)


def job_item_interrupted(record_id: int, *, item: str, reason: str = INTERRUPTED_REASON) -> None:
    """An item's worker died: list the item among the failures (not counted as done), so that
    "Retry these sites" covers it; it is removed again if the item reports after all."""
    with transaction.atomic():
        record = JobRecord.objects.select_for_update().get(pk=record_id)
        if any(f.get("item") == item for f in record.failures):
            return
        entry = {"item": item, "reason": reason, "interrupted": True}
        record.failures = [*record.failures, entry][-500:]
        record.save(update_fields=["failures"])


def _publish_meta(record: JobRecord) -> None:
    """Copy the record's progress into the running RQ job's ``meta`` (seen in RQ's own tools)."""
    from rq import get_current_job

    job = get_current_job()
    if job is not None:
        job.meta.update({"done": record.done, "total": record.total, **record.counts})
        job.save_meta()


# --- Finding what stopped -----------------------------------------------------------------------


def job_records_sync_with_rq(records: Iterable[JobRecord]) -> bool:
    """Mark records failed whose RQ job failed, or vanished from Redis while running, without
    the job reporting back.

    Returns False (and changes nothing) when Redis cannot be reached.
    """
    pending = [r for r in records if r.status in JobRecord.ACTIVE]
    if not pending:
        return True
    connection = django_rq.get_connection("default")
    try:
        jobs = QueuedJob.fetch_many(
            [r.rq_id for r in pending], connection=connection, serializer=JSONSerializer
        )
    except redis.RedisError:
        return False
    for record, job in zip(pending, jobs, strict=True):
        failed = job is not None and job.get_status(refresh=False) == JobStatus.FAILED
        # A running job that Redis no longer knows (Redis lost its data): it cannot report.
        # Not a fanned-out job, whose first job ends long before its items, nor a terminal's.
        lost = (
            job is None
            and record.status == JobRecord.Status.RUNNING
            and not record.items
            and record.queue in settings.RQ_QUEUES
        )
        if failed or lost:
            record.status = JobRecord.Status.FAILED
            record.error = record.error or "The worker stopped before the job finished."
            record.finished_at = record.finished_at or timezone.now()
            record.save(update_fields=["status", "error", "finished_at"])
    return True


def job_records_sweep(*, rq_cleanup: bool = True) -> list[JobRecord]:
    """Mark interrupted every active record whose lease ran out and of which nothing waits in a
    queue; returns them (the caller marks their items).

    First lets RQ find its abandoned jobs (workers that stopped sending heartbeats), which
    calls their failure callbacks. With Redis down nothing can wait or run, so a stale record
    is interrupted; if Redis comes back with the job, the job's next report revives it.
    """
    candidates = list(
        JobRecord.objects.filter(status__in=JobRecord.ACTIVE).filter(_stale()).order_by("pk")
    )
    if not candidates and not rq_cleanup:
        return []
    found = _waiting_job_ids()
    interrupted = []
    for record in candidates:
        if record.status == JobRecord.Status.QUEUED and found is None:
            continue  # never started: it may still be in Redis when Redis is back
        waiting, started = found or (set(), set())
        # A queued record's job may have just started; a running one has its own heartbeat.
        ids = waiting | started if record.status == JobRecord.Status.QUEUED else waiting
        if record.rq_id in ids or any(i.startswith(f"{record.rq_id}-") for i in ids):
            continue
        changed = (
            JobRecord.objects.filter(pk=record.pk, status__in=JobRecord.ACTIVE)
            .filter(_stale())
            .update(status=JobRecord.Status.INTERRUPTED, error=INTERRUPTED_REASON)
        )
        if changed:
            record.refresh_from_db()
            interrupted.append(record)
    return interrupted


def _waiting_job_ids() -> tuple[set[str], set[str]] | None:
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
    "operations.jobs.daily_fetch_retry": "Retry of failed fetches (from the scheduler)",
    "operations.jobs.nightly_refresh": "Nightly refresh from the archive (from the scheduler)",
}
# Every few minutes, and most often a no-op: the sweep, and the daily list's catch-up (the list
# it builds shows with its own record).
HIDDEN_FUNCTIONS = {"operations.jobs.sweep_interrupted", "operations.daily.daily_catch_up"}


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
                        "label": KNOWN_FUNCTIONS.get(job.func_name, job.func_name),
                        "enqueued_at": job.enqueued_at,
                    }
                )
    except redis.RedisError:
        return []
    return found
