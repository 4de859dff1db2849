"""What an import that stopped leaves behind: its sites marked failed with the reason and
listed among its job's failures (so that "Retry these sites" covers them), and the sentence for
a crawl file that matched no seed. The import jobs (``operations.jobs``) and the crawl read-back
(``operations.readback``) both build on it."""

from __future__ import annotations

from django.db.models import QuerySet

from archive.models import Site
from archive.pipeline import sites_finish
from jobs.models import JobRecord
from jobs.runner import job_item_interrupted

NO_SEED_MATCHED = (
    "no capture in it belongs to a seed site HACS holds, so nothing was imported: add the seed "
    "list first (Upload seeds, or manage.py import_seeds), then import the file again"
)


def sites_interrupt(record: JobRecord, reason: str) -> None:
    """An import stopped (the runner's ``on_stop`` hook, and the sweep's): its queued or running
    sites end failed with the reason, unless a live job holds them."""
    live: set[int] = set()
    for items in JobRecord.objects.filter(
        kind__in=JobRecord.IMPORTING, status__in=JobRecord.ACTIVE
    ).values_list("items", flat=True):
        live.update(items)
    unfinished = (Site.ImportStatus.QUEUED, Site.ImportStatus.RUNNING)
    ids = set(record.items) - live
    sites_stopped(record.pk, Site.objects.filter(pk__in=ids, import_status__in=unfinished), reason)


def sites_stopped(record_id: int, sites: QuerySet[Site], reason: str) -> None:
    """Mark ``sites`` failed with the reason and list them among the job's failures, so that
    "Retry these sites" covers them."""
    for site in sites.only("seed_url"):
        sites_finish(failed={site.pk: reason})
        job_item_interrupted(record_id, item=site.seed_url, reason=reason)
