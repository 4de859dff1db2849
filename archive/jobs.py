"""Background jobs of the archive app. Each takes its JobRecord id first."""

from __future__ import annotations

import django_rq
from django.db.models import F

from archive.importers import site_import_from_archive, site_mark, snapshots_fetch, updates_compute
from archive.models import Site
from archive.wayback import ArchiveClient, ArchiveConfig, ArchiveError
from dashboard.models import JobRecord
from dashboard.services import JobProgress, job_enqueue, job_item_done
from scheduling.services import estimates_recompute


def archive_client() -> ArchiveClient:
    return ArchiveClient(ArchiveConfig.from_settings(), django_rq.get_connection("import"))


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
    site = Site.objects.get(pk=site_id)
    Site.objects.filter(pk=site_id).update(
        import_status=Site.ImportStatus.RUNNING, import_attempts=F("import_attempts") + 1
    )
    counts: dict[str, int] = {}
    failure = ""
    try:
        result = site_import_from_archive(site=site, client=archive_client())
        estimates_recompute(site_ids=[site_id])
        counts = {
            "captures added": result.captures.added,
            "fetches": result.fetches["fetched"],
            "fetch failures": result.fetches["fetch failed"],
            "bad CDX lines": result.bad_lines,
        }
        site_mark(site_id, Site.ImportStatus.DONE)
    except ArchiveError as error:
        failure = str(error)
        site_mark(site_id, Site.ImportStatus.FAILED, failure)
    job_item_done(record_id, item=site.seed_url, failure=failure, counts=counts)


def retry_snapshots(record_id: int, site_ids: list[int]) -> None:
    """A later pass over sites whose memento fetches failed."""
    with JobProgress(record_id) as progress:
        progress.set_total(len(site_ids))
        client = archive_client()
        for site_id in site_ids:
            fetched = snapshots_fetch(site_ids=[site_id], fetch=client.fetch_memento)
            updates_compute(site_ids=[site_id])
            estimates_recompute(site_ids=[site_id])
            progress.advance(1, fetches=fetched["fetched"])


def recompute_all_estimates(record_id: int) -> None:
    with JobProgress(record_id) as progress:
        progress.set_total(1)
        written = estimates_recompute()
        progress.advance(1, estimates=written)


def enqueue_import(site_ids: list[int], *, user: object = None, label: str = "") -> JobRecord:
    return job_enqueue(
        kind=JobRecord.Kind.IMPORT,
        func=import_sites,
        args=(list(site_ids),),
        label=label or f"{len(site_ids)} sites from the archive",
        user=user,
        total=len(site_ids),
    )


def import_files(record_id: int, kind: str, paths: list[str]) -> None:
    """Import WARC or CDX files that the workers can read (same machine or shared storage)."""
    from pathlib import Path

    from django.conf import settings

    from archive.importers import cdx_file_import, warc_import

    with JobProgress(record_id) as progress:
        progress.set_total(len(paths))
        for path in paths:
            if kind == "warc":
                report = warc_import(paths=[Path(path)], max_body=settings.HACS_MAX_MEMENTO_BYTES)
            else:
                report = cdx_file_import(paths=[Path(path)])
            for name, reason in report.failed_files:
                progress.fail_item(name, reason)
            sites = sorted(report.captures.sites)
            if kind == "cdx" and sites:
                client = archive_client()
                for site_id in sites:
                    snapshots_fetch(site_ids=[site_id], fetch=client.fetch_memento)
                    updates_compute(site_ids=[site_id])
            if sites:
                Site.objects.filter(pk__in=sites).update(import_status=Site.ImportStatus.DONE)
                estimates_recompute(site_ids=sites)
            progress.advance(1, captures=report.captures.added, sites=len(sites))


def enqueue_files(kind: str, paths: list[str], *, user: object = None) -> JobRecord:
    return job_enqueue(
        kind=JobRecord.Kind.IMPORT,
        func=import_files,
        args=(kind, [str(p) for p in paths]),
        label=f"{len(paths)} {kind.upper()} file{'s' if len(paths) != 1 else ''}",
        user=user,
        total=len(paths),
    )
