"""Enqueueing background jobs and recording their progress for the Jobs page.

Every job HACS runs goes through ``job_enqueue`` so that it has a ``JobRecord`` the dashboard can
show, and every job function reports through ``JobProgress`` so that the record and RQ's
``job.meta`` agree.
"""

from __future__ import annotations

import socket
import traceback
import uuid
from collections.abc import Callable, Iterable
from types import TracebackType
from typing import Any

import django_rq
from django.db import transaction
from django.utils import timezone
from rq import Callback
from rq.job import Job, JobStatus

from jobs.models import JobRecord

QUEUE_FOR_KIND = {
    JobRecord.Kind.HEALTH: "default",
    JobRecord.Kind.IMPORT: "import",
    JobRecord.Kind.ESTIMATION: "estimation",
    JobRecord.Kind.EVALUATION: "evaluation",
    JobRecord.Kind.CRAWL_LIST: "estimation",
}


def job_enqueue(
    *,
    kind: str,
    func: Callable[..., Any],
    args: Iterable[Any] = (),
    label: str = "",
    user: Any = None,
    total: int = 0,
) -> JobRecord:
    """Record a job and hand it to RQ once the surrounding transaction commits.

    The job's first argument is always the ``JobRecord`` id, so the job can report progress.
    """
    record = job_record_create(kind=kind, label=label, user=user, total=total)
    queue = django_rq.get_queue(record.queue)

    def _enqueue() -> None:
        queue.enqueue(
            func,
            record.pk,
            *args,
            job_id=record.rq_id,
            on_failure=Callback(_record_failure),
            result_ttl=7 * 24 * 3600,
            failure_ttl=30 * 24 * 3600,
        )

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


def _record_failure(job: Job, connection: Any, exc_type: type, exc: BaseException, tb: Any) -> None:
    """RQ failure callback: mark the job's record failed with the reason."""
    message = "".join(traceback.format_exception_only(exc_type, exc)).strip()
    JobRecord.objects.filter(rq_id=job.id).exclude(status=JobRecord.Status.FINISHED).update(
        status=JobRecord.Status.FAILED, error=message[:5000], finished_at=timezone.now()
    )


class JobProgress:
    """Context manager a job function uses to report progress.

    Entering marks the record running; ``advance`` and ``set_total`` update its counts (and RQ's
    ``job.meta``); leaving marks it finished, or failed with the exception's message.
    """

    def __init__(self, record_id: int) -> None:
        self.record = JobRecord.objects.get(pk=record_id)

    def __enter__(self) -> JobProgress:
        self.record.status = JobRecord.Status.RUNNING
        self.record.started_at = self.record.started_at or timezone.now()
        self.record.worker = socket.gethostname()
        self.record.error = ""
        self.record.save(update_fields=["status", "started_at", "worker", "error"])
        return self

    def set_total(self, total: int) -> None:
        self.record.total = total
        self._save(["total"])

    def advance(self, done: int = 1, **counts: int) -> None:
        self.record.done += done
        for name, value in counts.items():
            self.record.counts[name] = self.record.counts.get(name, 0) + value
        self._save(["done", "counts"])

    def fail_item(self, item: str, reason: str) -> None:
        self.record.failures = [*self.record.failures, {"item": item, "reason": reason}][-500:]
        self._save(["failures"])

    def _save(self, fields: list[str]) -> None:
        self.record.save(update_fields=fields)
        _publish_meta(self.record)

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.record.finished_at = timezone.now()
        if exc is None:
            self.record.status = JobRecord.Status.FINISHED
        else:
            self.record.status = JobRecord.Status.FAILED
            self.record.error = "".join(traceback.format_exception_only(exc_type, exc)).strip()
        self.record.save(update_fields=["status", "finished_at", "error"])


def job_item_done(
    record_id: int, *, item: str, failure: str = "", counts: dict[str, int] | None = None
) -> None:
    """One item of a fanned-out job is done: count it, and finish the record with the last one.

    Several workers report to the same record at once, so the counters are updated inside a
    row lock rather than read-modified-written.
    """
    with transaction.atomic():
        record = JobRecord.objects.select_for_update().get(pk=record_id)
        record.done += 1
        for name, value in (counts or {}).items():
            record.counts[name] = record.counts.get(name, 0) + value
        if failure:
            record.failures = [*record.failures, {"item": item, "reason": failure}][-500:]
        if record.started_at is None:
            record.started_at = timezone.now()
        if record.done >= record.total:
            record.status = JobRecord.Status.FINISHED
            record.finished_at = timezone.now()
        elif record.status == JobRecord.Status.QUEUED:
            record.status = JobRecord.Status.RUNNING
        record.save()
    _publish_meta(record)


def _publish_meta(record: JobRecord) -> None:
    """Copy the record's progress into the running RQ job's ``meta`` (seen in RQ's own tools)."""
    from rq import get_current_job

    job = get_current_job()
    if job is not None:
        job.meta.update({"done": record.done, "total": record.total, **record.counts})
        job.save_meta()


def job_records_sync_with_rq(records: Iterable[JobRecord]) -> None:
    """Mark records failed whose RQ job failed or vanished without the job reporting back.

    A worker killed mid-job cannot update its record; RQ notices the lost job and marks it
    failed, and this brings the record into line so the Jobs page offers a retry.
    """
    pending = [
        r for r in records if r.status in (JobRecord.Status.QUEUED, JobRecord.Status.RUNNING)
    ]
    if not pending:
        return
    connection = django_rq.get_connection("default")
    jobs = Job.fetch_many([r.rq_id for r in pending], connection=connection)
    for record, job in zip(pending, jobs, strict=True):
        status = job.get_status(refresh=False) if job is not None else None
        if status == JobStatus.FAILED or (
            job is None and record.status == JobRecord.Status.RUNNING
        ):
            record.status = JobRecord.Status.FAILED
            record.error = record.error or "The worker stopped before the job finished."
            record.finished_at = record.finished_at or timezone.now()
            record.save(update_fields=["status", "error", "finished_at"])
