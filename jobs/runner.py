"""Running a job: the one module that writes a job's status.

A :class:`JobRun` owns one job's record while the job runs. Entering marks the record running
and starts its heartbeat (the lease); the job body reports progress through it and returns or
raises; leaving marks the record finished, finished with failures or failed (every item failed),
failed with the exception's sentence, or interrupted on Ctrl-C or a stop signal, and then calls
the caller's ``on_stop`` hook with the record and the reason (an import marks its unfinished
sites failed with it; this app, the lowest layer, knows no sites).

* ``JobRun.resume(record_id)`` runs an RQ job, whose record ``job_enqueue`` made.
* ``JobRun.start(kind=…, queue=…)`` makes the record of work run in place: a command in a
  terminal ("terminal"), a hand-off from a page ("web"), the daily run's steps ("daily"),
  optionally keyed (``key``) and as a step of another job (``parent``).
* ``JobRun.claim(key=…)`` runs the job a key names once however many callers ask (the daily
  run, ``daily:<date>``): a new record, or a failed or dead one taken over, one attempt more.

Work reports its progress one way, a :class:`hacs.progress.Progress` value passed to
:meth:`JobRun.report` (the archive pipeline and the hand-offs take that method as their
callback). The Jobs page reads it from the record (done of total, as a percentage); a terminal
draws it as the one bar (:meth:`JobRun.bar`, ``jobs.bar``).

A fanned-out job (one RQ job per item, every one reporting to the same record) is finished by
its last item (:func:`job_item_done`). What finds stopped work is here too — RQ's failure
callback (:func:`job_rq_failed`), the sweep of expired leases (:func:`job_records_sweep`), the
check against Redis (:func:`job_records_sync_with_rq`) — so that no other module writes a status.
Several processes write to one record (a fan-out's workers, the sweep, the heartbeat), so every
change is made under the record's row lock.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import traceback
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timedelta
from types import TracebackType
from typing import Any, cast

import django_rq
import redis
from django.conf import settings
from django.db import DatabaseError, IntegrityError, OperationalError, connections, transaction
from django.db.models import F, Q
from django.utils import timezone
from rq.exceptions import AbandonedJobError
from rq.job import JobStatus
from rq.serializers import JSONSerializer

from hacs.progress import FAILURES_KEPT, Progress, ProgressState, Report, progress_apply
from jobs.bar import ProgressBar
from jobs.models import JobRecord
from jobs.services import QueuedJob, job_ids_in_redis, job_record_create

logger = logging.getLogger(__name__)

INTERRUPTED_REASON = (
    "Interrupted: its worker, Redis or terminal stopped before it finished; retry it."
)

StopHook = Callable[[JobRecord, str], object]
Listener = Callable[[JobRecord], object]


def exception_sentence(error: BaseException) -> str:
    """What a failed job's record says: the exception as Python prints its last line."""
    return "".join(traceback.format_exception_only(type(error), error)).strip()


# --- One job's run --------------------------------------------------------------------------------


class JobRun:
    """Context manager owning one job's record while the job runs (see the module docstring).

    ``on_stop(record, reason)`` runs once the record is marked failed or interrupted.
    """

    record: JobRecord

    def __init__(
        self,
        record_id: int | None = None,
        *,
        new: dict[str, Any] | None = None,
        items: Sequence[int] = (),
        on_stop: StopHook | None = None,
        thread: bool,
    ) -> None:
        self._record_id = record_id
        self._new = new
        self._items = list(items)
        self._on_stop = on_stop
        self._thread = thread
        self._beat: _Beat | None = None
        self._listeners: list[Listener] = []
        self._fanned_out = False
        self._ended = False
        # Every failure reported by this run, in order; the record keeps the last FAILURES_KEPT.
        self.failures: list[tuple[str, str]] = []

    @classmethod
    def resume(cls, record_id: int, *, on_stop: StopHook | None = None) -> JobRun:
        """The run of an RQ job. Its heartbeat thread runs inside a worker; a job function
        called directly (a test's transaction) gets the first beat only."""
        from rq import get_current_job

        return cls(record_id, on_stop=on_stop, thread=get_current_job() is not None)

    @classmethod
    def start(
        cls,
        *,
        kind: str,
        label: str,
        queue: str,
        total: int = 0,
        items: Sequence[int] = (),
        user: Any = None,
        on_stop: StopHook | None = None,
        key: str | None = None,
        parent: JobRecord | None = None,
    ) -> JobRun:
        """The run of work done in place, with a new record: ``queue`` says where it runs
        ("terminal", "web", "daily"; none is an RQ queue); ``items`` are the sites it works
        on, found and marked if it stops; ``key`` what it is the run of, ``parent`` the job it
        is a step of."""
        new = {
            "kind": kind,
            "label": label,
            "queue": queue,
            "total": total,
            "user": user,
            "key": key,
            "parent": parent,
        }
        return cls(new=new, items=items, on_stop=on_stop, thread=True)

    @classmethod
    def claim(
        cls, *, key: str, kind: str, label: str, queue: str, again: Q, now: datetime
    ) -> JobRun | None:
        """The run of the job ``key`` names if this caller may make it: a new record, or the
        record taken over when ``again`` selects it (failed, or dead), one attempt more; None
        when another caller has it or it is done. Of two callers, only one gets it."""
        if not JobRecord.objects.filter(key=key).exists():
            try:
                with transaction.atomic():
                    record = job_record_create(kind=kind, label=label, queue=queue, key=key)
                    claimed = {"status": JobRecord.Status.RUNNING, "heartbeat_at": now}
                    JobRecord.objects.filter(pk=record.pk).update(started_at=now, **claimed)
            except IntegrityError:  # another caller inserted it first
                pass
            else:
                return cls(record.pk, thread=True)
        # One UPDATE: of two callers taking over the same record, only one changes a row.
        taken = JobRecord.objects.filter(again, key=key).update(
            status=JobRecord.Status.RUNNING,
            attempts=F("attempts") + 1,
            started_at=now,
            heartbeat_at=now,
            finished_at=None,
            error="",
            done=0,
            counts={},
            failures=[],
        )
        if not taken:
            return None
        return cls(JobRecord.objects.get(key=key).pk, thread=True)

    # The way in and out.

    def __enter__(self) -> JobRun:
        if self._new is not None:
            self._record_id = job_record_create(**self._new).pk
        items = self._items

        def running(record: JobRecord) -> None:
            now = timezone.now()
            record.status = JobRecord.Status.RUNNING
            record.started_at = record.started_at or now
            record.heartbeat_at = now
            record.worker = _worker_name(record.queue)
            record.error = ""
            if items:
                record.items = items

        assert self._record_id is not None
        self.record = _record_change(self._record_id, running)
        if self._thread:
            self._beat = _Beat(self.record.pk)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._beat_stop()
        if self._ended:
            return
        if exc is not None:
            self._stop(exc)
        elif not (self._fanned_out and self.record.total):
            with self.ending():
                pass

    def _stop(self, error: BaseException) -> None:
        """The body raised: interrupted on Ctrl-C or a stop signal, else failed with the
        exception's sentence; then the ``on_stop`` hook."""
        if isinstance(error, KeyboardInterrupt | SystemExit):
            self.interrupt()
        else:
            with self.ending(error=exception_sentence(error)):
                pass

    @contextmanager
    def ending(self, *, error: str = "") -> Iterator[None]:
        """End the run now, in one transaction with what the block writes (a hand-off records
        its outcome whole): failed with ``error`` when given, else finished, finished with
        failures or failed by the counts. If the block raises, nothing of it is kept and the
        run ends failed with that exception instead."""
        self._beat_stop()  # first: on SQLite the transaction below holds the write lock

        def ended(record: JobRecord) -> None:
            if error:
                record.status = JobRecord.Status.FAILED
                record.error = error[:5000]
                record.finished_at = record.heartbeat_at = timezone.now()
            else:
                _ended_status(record)

        with transaction.atomic():
            self._change(ended)
            yield
        self._ended = True
        if error:
            self._stopped()

    def interrupt(self, reason: str = INTERRUPTED_REASON) -> None:
        """End the run interrupted now, with ``reason``; then the ``on_stop`` hook."""
        self._beat_stop()

        def interrupted(record: JobRecord) -> None:
            record.status = JobRecord.Status.INTERRUPTED
            record.error = reason[:5000]
            record.heartbeat_at = timezone.now()
            record.finished_at = None

        self._change(interrupted)
        self._ended = True
        self._stopped()

    def _stopped(self) -> None:
        if self._on_stop is not None:
            self._on_stop(self.record, self.record.error or INTERRUPTED_REASON)

    def _beat_stop(self) -> None:
        if self._beat is not None:
            self._beat.stop()
            self._beat = None

    # Progress.

    def report(self, progress: Progress) -> None:
        """The one way work tells its progress (:class:`hacs.progress.Progress`): added to the
        record under its row lock. A share that has not moved a whole unit, or items the
        record names already, write nothing. The pipeline and the hand-offs take this method
        as their ``report`` callback."""
        if progress.failure:
            self.failures.append((progress.item, progress.failure))
        changed = progress.against(self.record)
        if changed is None:
            return
        self._report(lambda record: _apply(record, changed))

    def fan_out(self, items: Sequence[int]) -> None:
        """The items will run as jobs of their own, each reporting with :func:`job_item_done`:
        the last one finishes the record, so leaving the block leaves it running (unless there
        is no item)."""
        self.report(Progress(total=len(items), started=items))
        self._fanned_out = True

    @contextmanager
    def bar(
        self, desc: str, *, unit: str = "it", count: str = "", of: str = "", postfix: str = ""
    ) -> Iterator[None]:
        """Draw the record on the terminal while the block runs (:class:`jobs.bar.ProgressBar`,
        nothing when stderr is not a terminal)."""
        shown = ProgressBar(desc, unit=unit, count=count, of=of, postfix=postfix)
        shown.draw(self.record)
        self._listeners.append(shown.draw)
        try:
            yield
        finally:
            self._listeners.remove(shown.draw)
            shown.close()

    def _report(self, change: Callable[[JobRecord], object]) -> None:
        """A progress report: the change, and a sign of life (see :func:`_alive`). A run this
        process ended takes no more reports: after Ctrl-C the import's threads still finishing
        a fetch must not make the interrupted record run again."""
        if self._ended:
            logger.debug("Job record %s ended; a late report is dropped", self.record.pk)
            return

        def reported(record: JobRecord) -> None:
            change(record)
            _alive(record)

        self._change(reported)

    def _change(self, change: Callable[[JobRecord], object]) -> None:
        self.record = _record_change(self.record.pk, change)
        for listener in self._listeners:
            listener(self.record)


def _worker_name(queue: str) -> str:
    if queue == "terminal":
        return f"{socket.gethostname()} (terminal, pid {os.getpid()})"
    return socket.gethostname()


# --- Changing a record ----------------------------------------------------------------------------


def _record_change(record_id: int, change: Callable[[JobRecord], object]) -> JobRecord:
    """Change the record under its row lock and save it: several processes write to one record,
    so none reads, modifies and writes it unlocked. Its progress goes to RQ's ``job.meta`` too."""
    with transaction.atomic():
        record = JobRecord.objects.select_for_update().get(pk=record_id)
        change(record)
        record.save()
    _publish_meta(record)
    return record


def _apply(record: JobRecord, progress: Progress) -> None:
    progress_apply(cast(ProgressState, record), progress)


def _alive(record: JobRecord) -> None:
    """A report is a sign of life: it renews the lease, and a record marked interrupted (or
    still queued) whose work reports after all runs again."""
    now = timezone.now()
    record.started_at = record.started_at or now
    record.heartbeat_at = now
    if record.status in (JobRecord.Status.QUEUED, JobRecord.Status.INTERRUPTED):
        record.status = JobRecord.Status.RUNNING
        record.error = ""


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


def _publish_meta(record: JobRecord) -> None:
    """Copy the record's progress into the running RQ job's ``meta`` (seen in RQ's own tools)."""
    from rq import get_current_job

    job = get_current_job()
    if job is not None:
        job.meta.update({"done": record.done, "total": record.total, **record.counts})
        job.save_meta()


# --- Fanned-out jobs ------------------------------------------------------------------------------


def job_item_done(record_id: int, progress: Progress) -> None:
    """One item of a fanned-out job is done (``progress`` names it, counted one unit): count
    it, and finish the record with the last one (an interrupted record runs again until then)."""
    if progress.done != 1 or not progress.item:
        raise ValueError("an item of a fanned-out job reports itself done, once")

    def change(record: JobRecord) -> None:
        _apply(record, progress)
        if record.done >= record.total:
            _ended_status(record)
        else:
            _alive(record)

    _record_change(record_id, change)


def job_item_interrupted(record_id: int, *, item: str, reason: str = INTERRUPTED_REASON) -> None:
    """An item's worker died: list the item among the failures (not counted as done), so that
    "Retry these sites" covers it; it is removed again if the item reports after all."""

    def change(record: JobRecord) -> None:
        if not any(f.get("item") == item for f in record.failures):
            entry = {"item": item, "reason": reason, "interrupted": True}
            record.failures = [*record.failures, entry][-FAILURES_KEPT:]

    _record_change(record_id, change)


@contextmanager
def job_item_run(record_id: int) -> Iterator[Report]:
    """The RQ job of one item of a fanned-out job: it keeps the shared record's lease while it
    runs and yields the pipeline's ``report`` callback: an item's end counts it done, its
    other reports (work inside the item) add up. A failure it does not catch is counted by its
    RQ failure callback."""

    def report(progress: Progress) -> None:
        if progress.item and progress.done:
            job_item_done(record_id, progress)
        else:
            _record_change(record_id, lambda record: _apply(record, progress))

    with job_heartbeat(record_id):
        yield report


# --- Heartbeats -----------------------------------------------------------------------------------


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


class _Beat:
    """A thread writing the record's heartbeat every ``HACS_JOB_HEARTBEAT_SECONDS`` until
    stopped; it dies with the process."""

    def __init__(self, record_id: int) -> None:
        self._stop = threading.Event()

        def beat() -> None:
            try:
                while not self._stop.wait(settings.HACS_JOB_HEARTBEAT_SECONDS):
                    _heartbeat_beat_waiting(record_id, self._stop)
            finally:
                connections.close_all()  # this thread's own connections

        self._thread = threading.Thread(
            target=beat, name=f"hacs-heartbeat-{record_id}", daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)


@contextmanager
def job_heartbeat(record_id: int, *, thread: bool | None = None) -> Iterator[None]:
    """Keep the record's lease while the block runs: a heartbeat now and then every
    ``HACS_JOB_HEARTBEAT_SECONDS`` from a thread (inside RQ workers, or when asked)."""
    from rq import get_current_job

    job_heartbeat_beat(record_id)
    if thread is None:
        thread = get_current_job() is not None
    beat = _Beat(record_id) if thread else None
    try:
        yield
    finally:
        if beat is not None:
            beat.stop()


# --- Finding what stopped -------------------------------------------------------------------------


def _stale() -> Q:
    """Records whose lease ran out: no heartbeat (or start) within ``HACS_JOB_LEASE_SECONDS``."""
    limit = timezone.now() - timedelta(seconds=settings.HACS_JOB_LEASE_SECONDS)
    return Q(heartbeat_at__lt=limit) | Q(heartbeat_at__isnull=True, created_at__lt=limit)


def job_rq_failed(
    rq_id: str, exc_type: type, exc: BaseException, *, on_stop: StopHook | None = None
) -> None:
    """RQ says the job ``rq_id`` failed (its failure callback): mark its record failed with the
    reason, then call ``on_stop`` if the record ended failed or interrupted.

    RQ says so with ``AbandonedJobError`` when the worker running the job stopped sending
    heartbeats (killed): the record is then interrupted, unless its own heartbeat shows that the
    job is still running (a SIGKILLed worker's work-horse goes on).
    """
    records = JobRecord.objects.filter(rq_id=rq_id).exclude(status__in=JobRecord.ENDED)
    if issubclass(exc_type, AbandonedJobError):
        records.filter(_stale()).update(
            status=JobRecord.Status.INTERRUPTED, error=INTERRUPTED_REASON
        )
    else:
        # An interrupted job keeps its more telling reason (the exception is then Redis's).
        records = records.exclude(status=JobRecord.Status.INTERRUPTED)
        message = "".join(traceback.format_exception_only(exc_type, exc)).strip()
        records.update(
            status=JobRecord.Status.FAILED, error=message[:5000], finished_at=timezone.now()
        )
    if on_stop is None:
        return
    record = JobRecord.objects.filter(rq_id=rq_id).first()
    stopped = (JobRecord.Status.INTERRUPTED, JobRecord.Status.FAILED)
    if record is not None and record.status in stopped:
        on_stop(record, record.error or INTERRUPTED_REASON)


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
    found = job_ids_in_redis()
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
        # Not a fanned-out job, whose first job ends long before its items, nor work run in
        # place (a terminal's, a page's, the daily run's), which has no RQ job.
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
