"""Background jobs that import and estimate. Each takes its JobRecord id first and runs inside
``jobs.runner.JobRun`` (a fanned-out import's sites, in ``job_item_run``).

RQ stores a queued job by the dotted path of its function; see CHANGELOG.md for
draining the queues before an upgrade that moves job functions.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import django_rq
import redis
from django.conf import settings
from django.db import connection
from rq import Callback
from rq.exceptions import AbandonedJobError
from rq.job import Job

from archive.models import ArchiveCheck, Site
from archive.pipeline import (
    FetchRetry,
    FromArchive,
    FromCdxFiles,
    FromWarcFiles,
    ImportReport,
    sites_finish,
)
from archive.plan import refresh_plan
from archive.status import sites_import_status
from archive.wayback import ArchiveConfig
from hacs.formats.queries import CdxQuery
from hacs.progress import Progress, inside_units
from jobs.models import JobRecord
from jobs.runner import (
    INTERRUPTED_REASON,
    JobRun,
    exception_sentence,
    job_item_done,
    job_item_interrupted,
    job_item_run,
    job_records_sweep,
    job_rq_failed,
)
from jobs.services import job_enqueue
from operations.refresh import (
    archive_client,
    nightly_budget,
    provisional_list,
    refresh_choice,
    refresh_policy,
    sites_from_archive,
    sites_refresh,
    sites_with_failed_fetches,
    sites_with_older_history,
)
from operations.stops import NO_SEED_MATCHED, sites_interrupt, sites_stopped

logger = logging.getLogger(__name__)


def import_sites(
    record_id: int, site_ids: list[int], counts: dict[str, int] | None = None, nightly: bool = False
) -> None:
    """Fan a seed list out, all reporting to this record: one ``import_site`` job per site not
    yet read from the archive (its whole history), and one per host group, or per few hosts of
    single seeds, for the sites a refresh brings up to date (``import_chunks``)."""
    sites_import_status(site_ids, Site.ImportStatus.QUEUED)
    # Elapsed time runs from here, not from the first site's end.
    with JobRun.resume(record_id) as run:
        run.fan_out(site_ids)
        if counts:
            run.report(Progress(counts=counts))
        queue = django_rq.get_queue("import")
        chunks = import_chunks(site_ids)
        queued = 0
        for chunk in chunks:
            try:
                queue.enqueue(
                    import_site,
                    record_id,
                    chunk,
                    nightly,
                    job_id=f"{run.record.rq_id}-{chunk[0]}",
                    on_failure=Callback(import_site_failed),
                )
            except redis.RedisError:
                # Redis died mid fan-out: the sites never queued would wait forever.
                reason = (
                    f"Interrupted: Redis stopped while the import was being queued ({queued} of "
                    f"{len(site_ids)} sites queued); retry the others."
                )
                run.interrupt(reason)
                waiting = [site_id for rest in chunks[chunks.index(chunk) :] for site_id in rest]
                sites_stopped(record_id, Site.objects.filter(pk__in=waiting), reason)
                raise
            queued += len(chunk)


#: Single-seed refresh queries one ``import_site`` job runs, several in flight at once.
CHUNK_QUERIES = 25


def import_chunks(site_ids: Sequence[int]) -> list[list[int]]:
    """The sites of each ``import_site`` job: a site never asked of the archive alone; the
    others by the refresh's plan (``archive.plan.refresh_plan``), every query of one
    host in the same job (so that the job plans them alike), hosts of single seeds together up
    to :data:`CHUNK_QUERIES` queries a job."""
    config = ArchiveConfig.from_settings()
    queries = refresh_plan(site_ids, config.source, config.index_lag_days)
    # A seed asked before without a capture (its first import found none) is asked again as
    # cheaply as a refresh: with the small ones, not in a job of its own.
    asked = set(
        ArchiveCheck.objects.filter(site_id__in=site_ids, source=config.source).values_list(
            "site_id", flat=True
        )
    )
    chunks: list[list[int]] = []
    by_host: dict[str, list[CdxQuery]] = {}
    for query in queries:
        if query.since is None and query.site_ids[0] not in asked:
            chunks.append(list(query.site_ids))
        else:
            by_host.setdefault(query.key.partition(")")[0], []).append(query)
    small: list[int] = []
    small_queries = 0
    for host_queries in by_host.values():
        ids = [site_id for query in host_queries for site_id in query.site_ids]
        if any(query.is_group for query in host_queries):
            chunks.append(ids)
            continue
        small.extend(ids)
        small_queries += len(host_queries)
        if small_queries >= CHUNK_QUERIES:
            chunks.append(small)
            small, small_queries = [], 0
    if small:
        chunks.append(small)
    planned = {site_id for chunk in chunks for site_id in chunk}
    chunks.extend([site_id] for site_id in site_ids if site_id not in planned)  # deleted since
    return chunks


def import_site(record_id: int, site_ids: list[int] | int, nightly: bool = False) -> None:
    """Import sites from the configured archive (one site, or a host group: ``import_chunks``);
    a failure marks the site, not the batch. ``nightly``: within the nightly budget, a group
    found too big waits for the next night's choice (``FromArchive.defer_splits``)."""
    ids = site_ids if isinstance(site_ids, list) else [site_ids]
    with job_item_run(record_id) as report:
        source = FromArchive(ids, defer_splits=nightly)
        sites_refresh(source, client=archive_client(), report=report)


def import_site_failed(
    job: Job, connection: Any, exc_type: type, exc: BaseException, tb: Any
) -> None:
    """RQ failure callback of ``import_site``: the site ends failed with the reason.

    An exception the pipeline did not catch counts as the site's failure; a job RQ found
    abandoned (its worker was killed) leaves the site interrupted, not counted, so that the
    site's import can still report if its work-horse lives on.
    """
    record_id, chosen = job.args[0], job.args[1]
    for site_id in chosen if isinstance(chosen, list) else [chosen]:
        site = Site.objects.filter(pk=site_id).only("seed_url", "import_status").first()
        item = site.seed_url if site is not None else f"site {site_id}"
        unfinished = (Site.ImportStatus.QUEUED, Site.ImportStatus.RUNNING)
        if site is not None and site.import_status not in unfinished:
            continue  # this site ended before the job failed: it was counted then
        if issubclass(exc_type, AbandonedJobError):
            reason = INTERRUPTED_REASON
            job_item_interrupted(record_id, item=item)
        else:
            reason = exception_sentence(exc)
            job_item_done(record_id, Progress(done=1, item=item, failure=reason))
        if site is not None:
            sites_finish(failed={site_id: reason})


def sweep_interrupted(*, rq_cleanup: bool = True) -> int:
    """Find jobs whose worker, Redis or terminal stopped, mark them interrupted and their
    unfinished sites failed (so that ``import_archive --failed`` and "Retry failed" cover them).

    Run every minute by the cron scheduler (which also lets RQ find its abandoned jobs) and
    whenever the Jobs page is read (``rq_cleanup=False``: Redis is asked only when a job's
    lease ran out). Returns how many jobs it marked.
    """
    stopped = job_records_sweep(rq_cleanup=rq_cleanup)
    for record in stopped:
        if record.kind in JobRecord.IMPORTING and record.items:
            sites_interrupt(record, INTERRUPTED_REASON)
    return len(stopped)


def retry_fetches(record_id: int, site_ids: list[int]) -> None:
    """The later pass over sites whose memento fetches failed: fetch what is still missing."""
    with JobRun.resume(record_id) as run:
        run.report(Progress(total=len(site_ids), started=site_ids))
        sites_refresh(FetchRetry(site_ids), client=archive_client(), report=run.report)


def fetch_older_history(record_id: int, site_ids: list[int]) -> None:
    """The history pass: the contents of copies older than each site's window, which its import
    left for later. The sites keep their import status; a content that fails waits for the
    next pass."""
    with JobRun.resume(record_id) as run:
        run.report(Progress(total=len(site_ids), started=site_ids))
        sites_refresh(
            FetchRetry(site_ids, history=True), client=archive_client(), report=run.report
        )


def file_import_run(
    run: JobRun, kind: str, paths: Sequence[Path], *, fetch: bool = True
) -> ImportReport:
    """Import WARC (``kind="warc"``) or CDX files, reporting to ``run``: the files done, and
    inside a file the records and bytes read and the sites started (which become the job's
    items, so that its interruption finds them)."""
    run.report(Progress(counts={"bytes in files": sum(_size(p) for p in paths)}))
    if kind == "warc":
        source: FromWarcFiles | FromCdxFiles = FromWarcFiles(
            paths, max_body=settings.HACS_MAX_MEMENTO_BYTES
        )
        result = sites_refresh(source, report=run.report)
    else:
        client = archive_client() if fetch else None
        source = FromCdxFiles(paths, fetch=fetch)
        result = sites_refresh(source, client=client, report=run.report)
    if result.stopped:  # the archive could not be reached while the pages were fetched
        run.report(Progress(item="fetching the pages' links", failure=result.stopped))
    elif not (result.done or result.failed or result.failed_files):
        # Not a success to show in green: nothing in the files was for a seed HACS holds.
        names = ", ".join(p.name for p in paths)
        run.report(Progress(item=names, failure=NO_SEED_MATCHED))
    run.report(Progress(counts={"captures": result.captures.added}))
    return result


def _sites(n: int) -> str:
    return f"{n:,} site" if n == 1 else f"{n:,} sites"


def _size(path: Path) -> int:
    try:
        return path.stat().st_size if path.is_file() else 0
    except OSError:
        return 0


def import_files(record_id: int, kind: str, paths: list[str]) -> None:
    """Import WARC or CDX files that the workers can read (same machine or shared storage)."""
    with JobRun.resume(record_id, on_stop=sites_interrupt) as run:
        run.report(Progress(total=len(paths)))
        file_import_run(run, kind, [Path(p) for p in paths])


def import_files_failed(
    job: Job, connection: Any, exc_type: type, exc: BaseException, tb: Any
) -> None:
    """RQ failure callback of ``import_files``: the record as for any job, then the sites it
    started, once the record is marked interrupted or failed (a work-horse that outlived its
    killed worker keeps them until its lease runs out and the sweep finds it)."""
    job_rq_failed(job.id, exc_type, exc, on_stop=sites_interrupt)


def health_check(record_id: int) -> dict[str, object]:
    """Prove the round trip web → Redis → worker → database by writing to the job's record."""
    with JobRun.resume(record_id) as run:
        result: dict[str, object] = {"database": connection.vendor, "sites": Site.objects.count()}
        run.report(Progress(done=1, total=1, counts={"checks": 1}, notes=result))
    return result


# --- Enqueueing -----------------------------------------------------------------------------------


def enqueue_import(
    site_ids: Sequence[int],
    *,
    user: object = None,
    label: str = "",
    counts: dict[str, int] | None = None,
    nightly: bool = False,
) -> JobRecord:
    """Queue an import of ``site_ids``; ``counts`` start the job's counts (the nightly
    refresh's plan); ``nightly`` keeps the refresh within its budget (``import_site``)."""
    return job_enqueue(
        kind=JobRecord.Kind.IMPORT,
        func=import_sites,
        args=(list(site_ids), counts or {}, nightly),
        label=label or f"{_sites(len(site_ids))} from the archive",
        user=user,
        total=len(site_ids),
    )


def enqueue_files(kind: str, paths: Sequence[str], *, user: object = None) -> JobRecord:
    return job_enqueue(
        kind=JobRecord.Kind.IMPORT,
        func=import_files,
        args=(kind, [str(p) for p in paths]),
        label=f"{len(paths)} {_file_kind(kind, paths)} file{'s' if len(paths) != 1 else ''}",
        user=user,
        total=len(paths),
        on_failure=import_files_failed,
    )


def _file_kind(kind: str, paths: Sequence[str]) -> str:
    """ "WARC", "WACZ", "WARC or WACZ" or "CDX", as the job's label names its files."""
    if kind != "warc":
        return kind.upper()
    wacz = {str(p).lower().endswith(".wacz") for p in paths}
    return "WARC or WACZ" if len(wacz) > 1 else ("WACZ" if wacz == {True} else "WARC")


def import_uploaded_crawl(record_id: int, path: str, name: str) -> None:
    """Import a WARC or WACZ file uploaded on the Upload page (kept owner-only under
    ``HACS_VAR_DIR``), its captures named after the file as uploaded, then delete it."""
    kind = "wacz" if name.lower().endswith(".wacz") else "warc"
    with JobRun.resume(record_id, on_stop=sites_interrupt) as run:
        run.report(Progress(total=1))
        source = FromWarcFiles(
            [Path(path)], max_body=settings.HACS_MAX_MEMENTO_BYTES, sources=[f"{kind}:{name}"]
        )
        result = sites_refresh(source, report=inside_units(run.report))
        failure = next((reason for _file, reason in result.failed_files), "")
        if not failure and not result.captures.sites:
            failure = NO_SEED_MATCHED
        counts = {
            "captures": result.captures.added,
            "captures outside every seed": result.captures.skipped["outside every seed"],
        }
        run.report(Progress(done=1, item=name, failure=failure, counts=counts))
    Path(path).unlink(missing_ok=True)


def enqueue_uploaded_crawl(path: str, name: str, *, user: object = None) -> JobRecord:
    return job_enqueue(
        kind=JobRecord.Kind.IMPORT,
        func=import_uploaded_crawl,
        args=(path, name),
        label=f"Uploaded {name}",
        user=user,
        total=1,
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
        label=f"retry of failed fetches of {_sites(len(site_ids))}",
        user=user,
        total=len(site_ids),
    )


def enqueue_history_pass(*, user: object = None, without: Sequence[int] = ()) -> JobRecord | None:
    """Queue the history pass for every site whose import left older contents for later; None
    when there is none, or while an import is under way (a first import's own window comes
    first: the archive's memento rate is shared) or the previous history pass still runs."""
    if JobRecord.objects.filter(kind=JobRecord.Kind.IMPORT, status__in=JobRecord.ACTIVE).exists():
        logger.info("An import is under way; the older history waits for the next pass.")
        return None
    left_out = set(without)  # the retry pass's sites: it fetches their older contents too
    site_ids = [i for i in sites_with_older_history() if i not in left_out]
    if not site_ids:
        return None
    return job_enqueue(
        kind=JobRecord.Kind.IMPORT,
        func=fetch_older_history,
        args=(site_ids,),
        label=f"Older history of {_sites(len(site_ids))}: contents before their last "
        f"{settings.HACS_HISTORY_DAYS:,} days of copies",
        user=user,
        total=len(site_ids),
    )


def daily_fetch_retry() -> int:
    """The nightly retry pass (RQ cron): the history pass for the older contents imports left
    for later (when no import is under way), and the retry of failed fetches. Returns how many
    sites it queued."""
    history = enqueue_history_pass(without=sites_with_failed_fetches())
    record = enqueue_fetch_retry()
    return sum(r.total for r in (history, record) if r is not None)


NIGHTLY_REFRESH = "Nightly refresh"
PAGE_SLACK = 0.02  # of the nightly budget, kept for pages beyond a query's estimate


def nightly_refresh() -> int:
    """The nightly refresh from the configured archive (RQ cron, ``HACS_ARCHIVE_REFRESH_CRON``):
    an incremental import of the sites holding captures read from that archive, and of the seeds
    it had not captured when first asked, so that the morning's list counts the copies the
    archive made since. Within ``HACS_REFRESH_CDX_BUDGET`` requests, by the rule
    ``hacs.refresh_budget.choose_queries`` (``operations.refresh.refresh_choice``): the sites
    past their deadline from a share of the budget, then every query by what its sites'
    captures are worth to tomorrow's list; the job's counts say how many were checked, how many
    waited and why. Returns how many sites it queued: none when no site came from the archive
    (a collection imported from files is never sent to it), or while the previous night's
    refresh is still under way."""
    running = JobRecord.objects.filter(
        kind=JobRecord.Kind.IMPORT, status__in=JobRecord.ACTIVE, label__startswith=NIGHTLY_REFRESH
    )
    if running.exists():
        logger.warning("The previous nightly refresh is still under way; not starting another.")
        return 0
    _inbox_first()
    config = ArchiveConfig.from_settings()
    site_ids = sites_from_archive(config)
    if not site_ids:
        return 0
    budget = nightly_budget(config)
    stakes = provisional_list()
    policy = refresh_policy()
    # The recall audit's exact queries are priced with the groups they sample (query_costs);
    # a sliver is kept for pages a query takes beyond last time's (its first after an import).
    planned = budget - math.ceil(PAGE_SLACK * budget) if budget > 1 else budget
    choice = refresh_choice(site_ids, config, budget=planned, policy=policy, stakes=stakes)
    chosen = list(choice.checked_sites)
    if not chosen:
        return 0
    sites = f"{len(chosen):,} of {len(site_ids):,} site{'s' if len(site_ids) != 1 else ''}"
    label = f"{NIGHTLY_REFRESH} of {sites} from {config.cdx_host}"
    counts = {
        "sites on the provisional list": len(stakes),
        "CDX requests planned": choice.requests,
        "CDX budget": budget,
        "of which for sites past their deadline": choice.due_requests,
        "sites waiting for the budget": len(choice.left_out),
        "seeds without captures asked again": choice.unarchived_asked,
    }
    if choice.overdue_left:
        counts[f"sites past {policy.max_age_days:g} days left waiting"] = choice.overdue_left
    return enqueue_import(chosen, label=label, counts=counts, nightly=True).total


def _inbox_first() -> None:
    """The crawl inbox is read before the nightly refresh (``operations.readback``), so that
    the refresh and the morning's list count what the library's crawlers fetched; its trouble
    never stops the refresh."""
    from operations.readback import inbox_read_back  # it builds on this module

    try:
        inbox_read_back()
    except Exception:
        logger.exception("The crawl inbox could not be read before the nightly refresh")


def crawls_read_back() -> int:
    """The crawl read-back (RQ cron, ``HACS_CRAWL_READBACK_CRON``): the Heritrix jobs and
    Browsertrix crawls hand-offs sent lists to, and the crawl inbox (``operations.readback``).
    Returns how many read-back jobs it made."""
    from operations.readback import crawl_read_back  # it builds on this module

    return crawl_read_back()


__all__ = [
    "crawls_read_back",
    "daily_fetch_retry",
    "enqueue_fetch_retry",
    "enqueue_history_pass",
    "fetch_older_history",
    "enqueue_files",
    "enqueue_uploaded_crawl",
    "import_uploaded_crawl",
    "enqueue_import",
    "file_import_run",
    "health_check",
    "nightly_refresh",
    "import_files",
    "import_files_failed",
    "import_site",
    "import_chunks",
    "import_site_failed",
    "import_sites",
    "retry_fetches",
    "sweep_interrupted",
]
