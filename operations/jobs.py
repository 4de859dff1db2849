"""Background jobs that import and estimate. Each takes its JobRecord id first.

RQ stores a queued job by the dotted path of its function; see the README ("Upgrading") for
draining the queues before an upgrade that moves job functions.
"""

from __future__ import annotations

import logging
import os
import socket
import traceback
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import django_rq
import redis
from django.conf import settings
from django.db import connection
from django.utils import timezone
from rq import Callback
from rq.exceptions import AbandonedJobError
from rq.job import Job

from archive.models import Site
from archive.pipeline import (
    FetchRetry,
    FromArchive,
    FromCdxFiles,
    FromWarcFiles,
    ImportReport,
    Progress,
    Step,
    sites_finish,
)
from archive.wayback import ArchiveConfig
from jobs.models import JobRecord
from jobs.services import (
    INTERRUPTED_REASON,
    JobProgress,
    job_enqueue,
    job_heartbeat,
    job_item_done,
    job_item_interrupted,
    job_record_create,
    job_record_failure,
    job_records_sweep,
)
from operations.refresh import (
    archive_client,
    sites_from_archive,
    sites_refresh,
    sites_with_failed_fetches,
)

logger = logging.getLogger(__name__)


def import_sites(record_id: int, site_ids: list[int]) -> None:
    """Fan a seed list out: one ``import_site`` job per site, all reporting to this record."""
    Site.objects.filter(pk__in=site_ids).update(import_status=Site.ImportStatus.QUEUED)
    record = JobRecord.objects.get(pk=record_id)
    record.total = len(site_ids)
    record.items = list(site_ids)
    record.status = JobRecord.Status.RUNNING
    # Elapsed time runs from here, not from the first site's end.
    record.started_at = record.started_at or timezone.now()
    record.heartbeat_at = timezone.now()
    record.save(update_fields=["total", "items", "status", "started_at", "heartbeat_at"])
    queue = django_rq.get_queue("import")
    for queued, site_id in enumerate(site_ids):
        try:
            queue.enqueue(
                import_site,
                record_id,
                site_id,
                job_id=f"{record.rq_id}-{site_id}",
                on_failure=Callback(import_site_failed),
            )
        except redis.RedisError:
            # Redis died mid fan-out: the sites never queued would wait forever.
            _fan_out_interrupted(record, site_ids[queued:], queued=queued)
            raise
    if not site_ids:
        with JobProgress(record_id):
            pass


def _fan_out_interrupted(record: JobRecord, rest: list[int], *, queued: int) -> None:
    reason = (
        f"Interrupted: Redis stopped while the import was being queued ({queued} of "
        f"{record.total} sites queued); retry the others."
    )
    JobRecord.objects.filter(pk=record.pk).update(
        status=JobRecord.Status.INTERRUPTED, error=reason, heartbeat_at=timezone.now()
    )
    for site in Site.objects.filter(pk__in=rest).only("seed_url"):
        sites_finish(failed={site.pk: reason})
        job_item_interrupted(record.pk, item=site.seed_url, reason=reason)


def import_site(record_id: int, site_id: int) -> None:
    """Import one site from the configured archive; a failure marks the site, not the batch."""

    def report(item: str, failure: str = "", counts: dict[str, int] | None = None) -> None:
        job_item_done(record_id, item=item, failure=failure, counts=counts)

    with job_heartbeat(record_id):
        sites_refresh(FromArchive([site_id]), client=archive_client(), progress=report)


def import_site_failed(
    job: Job, connection: Any, exc_type: type, exc: BaseException, tb: Any
) -> None:
    """RQ failure callback of ``import_site``: the site ends failed with the reason.

    An exception the pipeline did not catch counts as the site's failure; a job RQ found
    abandoned (its worker was killed) leaves the site interrupted, not counted, so that the
    site's import can still report if its work-horse lives on.
    """
    record_id, site_id = job.args[0], job.args[1]
    site = Site.objects.filter(pk=site_id).only("seed_url").first()
    item = site.seed_url if site is not None else f"site {site_id}"
    if issubclass(exc_type, AbandonedJobError):
        reason = INTERRUPTED_REASON
        job_item_interrupted(record_id, item=item)
    else:
        reason = "".join(traceback.format_exception_only(exc_type, exc)).strip()
        job_item_done(record_id, item=item, failure=reason)
    if site is not None:
        unfinished = (Site.ImportStatus.QUEUED, Site.ImportStatus.RUNNING)
        if Site.objects.filter(pk=site_id, import_status__in=unfinished).exists():
            sites_finish(failed={site_id: reason})


def sweep_interrupted(*, rq_cleanup: bool = True) -> int:
    """Find jobs whose worker, Redis or terminal stopped, mark them interrupted and their
    unfinished sites failed (so that ``import_archive --failed`` and "Retry failed" cover them).

    Run every minute by the cron scheduler (which also lets RQ find its abandoned jobs) and
    whenever the Jobs page is read (``rq_cleanup=False``: Redis is asked only when a job's
    lease ran out). Returns how many jobs it marked.
    """
    stopped = job_records_sweep(rq_cleanup=rq_cleanup)
    site_jobs = [r for r in stopped if r.kind == JobRecord.Kind.IMPORT and r.items]
    if site_jobs:
        sites_interrupt(site_jobs)
    return len(stopped)


def sites_interrupt(records: list[JobRecord], *, reason: str = INTERRUPTED_REASON) -> None:
    """Mark failed the queued or running sites of interrupted jobs, unless a live job holds them."""
    live: set[int] = set()
    for items in JobRecord.objects.filter(
        kind=JobRecord.Kind.IMPORT, status__in=JobRecord.ACTIVE
    ).values_list("items", flat=True):
        live.update(items)
    unfinished = (Site.ImportStatus.QUEUED, Site.ImportStatus.RUNNING)
    for record in records:
        ids = set(record.items) - live
        sites = Site.objects.filter(pk__in=ids, import_status__in=unfinished).only("seed_url")
        for site in sites:
            sites_finish(failed={site.pk: reason})
            job_item_interrupted(record.pk, item=site.seed_url, reason=reason)


@contextmanager
def import_in_foreground(site_ids: Sequence[int], *, label: str) -> Iterator[Progress]:
    """A command's import in the terminal, kept as a job: recorded (the Jobs page shows its
    progress), with a heartbeat, and on Ctrl-C, a stop signal or an error marked interrupted or
    failed on the way out, with its unfinished sites failed so that ``--failed`` finds them.

    Yields the progress callback to hand to ``sites_refresh`` (or to call from one's own).
    """
    record = job_record_create(
        kind=JobRecord.Kind.IMPORT, label=label, total=len(site_ids), queue="terminal"
    )
    now = timezone.now()
    JobRecord.objects.filter(pk=record.pk).update(
        items=list(site_ids), status=JobRecord.Status.RUNNING, started_at=now, heartbeat_at=now,
        worker=f"{socket.gethostname()} (terminal, pid {os.getpid()})",
    )  # fmt: skip

    def report(item: str, failure: str = "", counts: dict[str, int] | None = None) -> None:
        job_item_done(record.pk, item=item, failure=failure, counts=counts)

    try:
        with job_heartbeat(record.pk, thread=True):
            yield report
    except BaseException as error:
        stopped = isinstance(error, KeyboardInterrupt | SystemExit)
        reason = INTERRUPTED_REASON if stopped else f"{type(error).__name__}: {error}"
        status = JobRecord.Status.INTERRUPTED if stopped else JobRecord.Status.FAILED
        JobRecord.objects.filter(pk=record.pk).update(
            status=status, error=reason[:5000], heartbeat_at=timezone.now(),
            finished_at=None if stopped else timezone.now(),
        )  # fmt: skip
        record.refresh_from_db()
        sites_interrupt([record], reason=reason)
        raise
    if not site_ids:
        with JobProgress(record.pk):
            pass


def retry_fetches(record_id: int, site_ids: list[int]) -> None:
    """The later pass over sites whose memento fetches failed: fetch what is still missing."""
    JobRecord.objects.filter(pk=record_id).update(items=list(site_ids))
    with JobProgress(record_id) as progress:
        progress.set_total(len(site_ids))

        def report(item: str, failure: str = "", counts: dict[str, int] | None = None) -> None:
            if failure:
                progress.fail_item(item, failure)
            progress.advance(1, **(counts or {}))

        sites_refresh(FetchRetry(site_ids), client=archive_client(), progress=report)


class FileImportJob:
    """A file import's progress as a job: files done (``item``), and inside a file the records
    and bytes read and the sites started (``step``), which become the job's items so that its
    interruption finds them."""

    def __init__(self, progress: JobProgress) -> None:
        self.progress = progress

    def item(self, item: str, failure: str = "", counts: dict[str, int] | None = None) -> None:
        if failure:
            self.progress.fail_item(item, failure)
        self.progress.advance(1, **(counts or {}))

    def step(self, step: Step) -> None:
        self.progress.add_items(step.started)
        if step.counts:
            self.progress.advance(0, **step.counts)

    def stopped(self, reason: str) -> None:
        """The archive could not be reached while the pages were fetched."""
        self.progress.fail_item("fetching the pages' links", reason)


@contextmanager
def _sites_fail_with_job(record_id: int) -> Iterator[None]:
    """On the way out of a file import that did not end (Ctrl-C, a stop signal, an error),
    mark its running sites failed with the reason, after the job's record was marked."""
    try:
        yield
    except BaseException as error:
        stopped = isinstance(error, KeyboardInterrupt | SystemExit)
        reason = INTERRUPTED_REASON if stopped else f"{type(error).__name__}: {error}"
        sites_interrupt([JobRecord.objects.get(pk=record_id)], reason=reason)
        raise


def file_import_run(
    job: FileImportJob, kind: str, paths: Sequence[Path], *, fetch: bool = True,
    step: Callable[[Step], None] | None = None,
) -> ImportReport:  # fmt: skip
    """Import WARC (``kind="warc"``) or CDX files, reporting to ``job``; ``step`` is told too."""

    def told(event: Step) -> None:
        job.step(event)
        if step is not None:
            step(event)

    job.progress.advance(0, **{"bytes in files": sum(_size(p) for p in paths)})
    if kind == "warc":
        source: FromWarcFiles | FromCdxFiles = FromWarcFiles(
            paths, max_body=settings.HACS_MAX_MEMENTO_BYTES
        )
        result = sites_refresh(source, progress=job.item, step=told)
    else:
        client = archive_client() if fetch else None
        source = FromCdxFiles(paths, fetch=fetch)
        result = sites_refresh(source, client=client, progress=job.item, step=told)
    if result.stopped:
        job.stopped(result.stopped)
    job.progress.advance(0, captures=result.captures.added)
    return result


def _size(path: Path) -> int:
    try:
        return path.stat().st_size if path.is_file() else 0
    except OSError:
        return 0


def import_files(record_id: int, kind: str, paths: list[str]) -> None:
    """Import WARC or CDX files that the workers can read (same machine or shared storage)."""
    with _sites_fail_with_job(record_id), JobProgress(record_id) as progress:
        progress.set_total(len(paths))
        file_import_run(FileImportJob(progress), kind, [Path(p) for p in paths])


def import_files_failed(
    job: Job, connection: Any, exc_type: type, exc: BaseException, tb: Any
) -> None:
    """RQ failure callback of ``import_files``: the record as for any job, then the sites it
    started, once the record is marked interrupted or failed (a work-horse that outlived its
    killed worker keeps them until its lease runs out and the sweep finds it)."""
    job_record_failure(job, connection, exc_type, exc, tb)
    record = JobRecord.objects.filter(rq_id=job.id).first()
    stopped = (JobRecord.Status.INTERRUPTED, JobRecord.Status.FAILED)
    if record is not None and record.items and record.status in stopped:
        sites_interrupt([record], reason=record.error or INTERRUPTED_REASON)


@contextmanager
def files_import_in_foreground(paths: Sequence[Path], *, label: str) -> Iterator[FileImportJob]:
    """A command's file import in the terminal, kept as a job like ``import_in_foreground``:
    the Jobs page shows its progress inside each file, and Ctrl-C, a stop signal, an error or
    a closed terminal leaves the sites it started failed with the reason."""
    record = job_record_create(
        kind=JobRecord.Kind.IMPORT, label=label, total=len(paths), queue="terminal"
    )
    with (
        _sites_fail_with_job(record.pk),
        JobProgress(record.pk, heartbeat_thread=True) as progress,
    ):
        progress.record.worker = f"{socket.gethostname()} (terminal, pid {os.getpid()})"
        progress.record.save(update_fields=["worker"])
        yield FileImportJob(progress)


def health_check(record_id: int) -> dict[str, object]:
    """Prove the round trip web → Redis → worker → database by writing to the job's record."""
    with JobProgress(record_id) as progress:
        progress.set_total(1)
        result = {"database": connection.vendor, "sites": Site.objects.count()}
        progress.advance(1, checks=1)
        progress.record.counts.update(result)
        progress.record.save(update_fields=["counts"])
    return result


# --- Enqueueing -----------------------------------------------------------------------------------


def enqueue_import(site_ids: Sequence[int], *, user: object = None, label: str = "") -> JobRecord:
    return job_enqueue(
        kind=JobRecord.Kind.IMPORT,
        func=import_sites,
        args=(list(site_ids),),
        label=label or f"{len(site_ids)} sites from the archive",
        user=user,
        total=len(site_ids),
    )


def enqueue_files(kind: str, paths: Sequence[str], *, user: object = None) -> JobRecord:
    return job_enqueue(
        kind=JobRecord.Kind.IMPORT,
        func=import_files,
        args=(kind, [str(p) for p in paths]),
        label=f"{len(paths)} {kind.upper()} file{'s' if len(paths) != 1 else ''}",
        user=user,
        total=len(paths),
        on_failure=import_files_failed,
    )


def enqueue_fetch_retry(*, user: object = None) -> JobRecord | None:
    """Queue the retry pass for every site with failed memento fetches (None when there is none)."""
    site_ids = sites_with_failed_fetches()
    if not site_ids:
        return None
    return job_enqueue(
        kind=JobRecord.Kind.IMPORT,
        func=retry_fetches,
        args=(site_ids,),
        label=f"retry of failed fetches of {len(site_ids)} sites",
        user=user,
        total=len(site_ids),
    )


def daily_fetch_retry() -> int:
    """The nightly retry pass (RQ cron): returns how many sites it queued."""
    record = enqueue_fetch_retry()
    return record.total if record is not None else 0


NIGHTLY_REFRESH = "Nightly refresh"


def nightly_refresh() -> int:
    """The nightly refresh from the configured archive (RQ cron, ``HACS_ARCHIVE_REFRESH_CRON``):
    an incremental import of every site holding captures read from that archive, so that the
    morning's list counts the copies the archive made since. Returns how many sites it queued:
    none when no site came from the archive (a collection imported from files is never sent to
    it), or while the previous night's refresh is still under way."""
    running = JobRecord.objects.filter(
        kind=JobRecord.Kind.IMPORT, status__in=JobRecord.ACTIVE, label__startswith=NIGHTLY_REFRESH
    )
    if running.exists():
        logger.warning("The previous nightly refresh is still under way; not starting another.")
        return 0
    config = ArchiveConfig.from_settings()
    site_ids = sites_from_archive(config)
    if not site_ids:
        return 0
    sites = f"{len(site_ids)} site{'s' if len(site_ids) != 1 else ''}"
    label = f"{NIGHTLY_REFRESH} of {sites} from {config.cdx_host}"
    return enqueue_import(site_ids, label=label).total


__all__ = [
    "daily_fetch_retry",
    "enqueue_fetch_retry",
    "enqueue_files",
    "enqueue_import",
    "file_import_run",
    "files_import_in_foreground",
    "health_check",
    "nightly_refresh",
    "import_files",
    "import_files_failed",
    "import_in_foreground",
    "import_site",
    "import_site_failed",
    "import_sites",
    "retry_fetches",
    "sweep_interrupted",
]
