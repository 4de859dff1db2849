"""Background jobs that import and estimate. Each takes its JobRecord id first.

RQ stores a queued job by the dotted path of its function; see the README ("Upgrading") for
draining the queues before an upgrade that moves job functions.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import django_rq
from django.conf import settings
from django.db import connection

from archive.models import Site
from archive.pipeline import FetchRetry, FromArchive, FromCdxFiles, FromWarcFiles
from jobs.models import JobRecord
from jobs.services import JobProgress, job_enqueue, job_item_done
from operations.refresh import archive_client, sites_refresh, sites_with_failed_fetches


def import_sites(record_id: int, site_ids: list[int]) -> None:
    """Fan a seed list out: one ``import_site`` job per site, all reporting to this record."""
    Site.objects.filter(pk__in=site_ids).update(import_status=Site.ImportStatus.QUEUED)
    record = JobRecord.objects.get(pk=record_id)
    record.total = len(site_ids)
    record.status = JobRecord.Status.RUNNING
    record.save(update_fields=["total", "status"])
    queue = django_rq.get_queue("import")
    for site_id in site_ids:
        queue.enqueue(import_site, record_id, site_id, job_id=f"{record.rq_id}-{site_id}")
    if not site_ids:
        with JobProgress(record_id):
            pass


def import_site(record_id: int, site_id: int) -> None:
    """Import one site from the configured archive; a failure marks the site, not the batch."""

    def report(item: str, failure: str = "", counts: dict[str, int] | None = None) -> None:
        job_item_done(record_id, item=item, failure=failure, counts=counts)

    sites_refresh(FromArchive([site_id]), client=archive_client(), progress=report)


def retry_fetches(record_id: int, site_ids: list[int]) -> None:
    """The later pass over sites whose memento fetches failed: fetch what is still missing."""
    with JobProgress(record_id) as progress:
        progress.set_total(len(site_ids))

        def report(item: str, failure: str = "", counts: dict[str, int] | None = None) -> None:
            if failure:
                progress.fail_item(item, failure)
            progress.advance(1, **(counts or {}))

        sites_refresh(FetchRetry(site_ids), client=archive_client(), progress=report)


def import_files(record_id: int, kind: str, paths: list[str]) -> None:
    """Import WARC or CDX files that the workers can read (same machine or shared storage)."""
    with JobProgress(record_id) as progress:
        progress.set_total(len(paths))

        def report(item: str, failure: str = "", counts: dict[str, int] | None = None) -> None:
            if failure:
                progress.fail_item(item, failure)
            progress.advance(1, **(counts or {}))

        files = [Path(p) for p in paths]
        if kind == "warc":
            source: FromWarcFiles | FromCdxFiles = FromWarcFiles(
                files, max_body=settings.HACS_MAX_MEMENTO_BYTES
            )
            result = sites_refresh(source, progress=report)
        else:
            result = sites_refresh(FromCdxFiles(files), client=archive_client(), progress=report)
        progress.advance(0, captures=result.captures.added)


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


__all__ = [
    "daily_fetch_retry",
    "enqueue_fetch_retry",
    "enqueue_files",
    "enqueue_import",
    "health_check",
    "import_files",
    "import_site",
    "import_sites",
    "retry_fetches",
]
