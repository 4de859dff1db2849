"""The one import pipeline: bring sites up to date from any source, then mark them done or failed.

Every command, job and page that imports goes through :func:`sites_import` with one of four
sources:

* :class:`FromArchive` — query the configured CDX server for each site, store its captures,
  fetch the mementos of contents not seen before, compute updates (one site at a time, so one
  site's failure never stops the others);
* :class:`FromCdxFiles` — CDX files of any dialect; then, unless told not to, fetch the touched
  sites' missing snapshots from the configured Wayback server (with ``fetch=False`` only the
  captures are stored, and the sites keep their status until a later :class:`FetchRetry` or an
  import that fetches finishes them);
* :class:`FromWarcFiles` — WARC files: captures and, from the same pass, their pages' links;
* :class:`FetchRetry` — the later pass for sites whose memento fetches failed: fetch what is
  still missing and compute updates again.

Each ends in :func:`sites_finish`, the one place that marks sites done (with ``imported_at``) or
failed (with the reason). Before marking sites done the pipeline calls ``after(site_ids)``:
the layer above (``operations.refresh``) recomputes the sites' estimates there, so a site shown
as imported always has estimates from its new data. Everything the pipeline writes is keyed by
unique constraints and everything derived is recomputed from what is stored, so an interrupted
run, run again, ends with the data of a clean run.
"""

from __future__ import annotations

import gzip
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from django.db.models import F
from django.utils import timezone

from archive.captures import MAX_DEPTH, CaptureCounts, ScopeIndex, captures_store
from archive.models import Site
from archive.snapshots import snapshot_from_body, snapshots_fetch, snapshots_save, updates_compute
from archive.wayback import ArchiveClient, ArchiveError
from hacs.formats import cdx
from hacs.formats.canon import SeedScope
from hacs.formats.warc import read_warc

__all__ = [
    "FetchRetry",
    "FromArchive",
    "FromCdxFiles",
    "FromWarcFiles",
    "ImportReport",
    "Progress",
    "sites_finish",
    "sites_import",
]


@dataclass(frozen=True)
class FromArchive:
    site_ids: Sequence[int]


@dataclass(frozen=True)
class FromCdxFiles:
    paths: Sequence[Path]
    fetch: bool = True  # then fetch the touched sites' snapshots from the Wayback server


@dataclass(frozen=True)
class FromWarcFiles:
    paths: Sequence[Path]
    max_body: int = 5 * 1024 * 1024


@dataclass(frozen=True)
class FetchRetry:
    site_ids: Sequence[int]


Source = FromArchive | FromCdxFiles | FromWarcFiles | FetchRetry


class Progress(Protocol):
    """Told once per unit of work (a site, or a file): its name, why it failed if it did, and
    counts to add up (``captures added``, ``fetches`` …)."""

    def __call__(
        self, item: str, failure: str = "", counts: dict[str, int] | None = None
    ) -> None: ...


@dataclass
class ImportReport:
    captures: CaptureCounts = field(default_factory=CaptureCounts)
    fetches: Counter[str] = field(default_factory=Counter)
    snapshots: int = 0  # pages parsed from WARC bodies
    bad_lines: int = 0
    problems: list[str] = field(default_factory=list)
    failed_files: list[tuple[str, str]] = field(default_factory=list)
    done: list[int] = field(default_factory=list)
    failed: dict[int, str] = field(default_factory=dict)  # site id → reason


def sites_import(
    source: Source,
    *,
    client: ArchiveClient | None = None,
    after: Callable[[list[int]], None] | None = None,
    progress: Progress | None = None,
) -> ImportReport:
    """Bring the sites of ``source`` up to date (see the module docstring); never raises for
    one site's or one file's trouble, which the report and the sites' status record instead.

    ``client`` is needed for sources that talk to the archive (all but WARC files and CDX
    files with ``fetch=False``).
    """
    report = ImportReport()
    notify = progress or _quiet
    finish = after or _nothing
    if isinstance(source, FromArchive | FetchRetry):
        assert client is not None, "this source needs an archive client"
        sites = Site.objects.filter(pk__in=list(source.site_ids)).order_by("pk")
        found = list(sites.only("pk", "seed_url"))
        for site in found:
            _one_site(site, source, client, report, finish, notify)
        for site_id in sorted(set(source.site_ids) - {site.pk for site in found}):
            # Deleted after the work was queued: say so, so that a job's count still completes.
            notify(f"site {site_id}", "The site was deleted before its import ran.", {})
    elif isinstance(source, FromWarcFiles):
        for path in source.paths:
            touched = _warc_file(path, source.max_body, report)
            notify(str(path), _file_failure(report, path), {"sites": len(touched)})
            _finish_touched(touched, report, finish)
    else:
        index = ScopeIndex.for_sites()
        touched: set[int] = set()
        for path in source.paths:
            in_file = _cdx_file(path, index, report)
            touched |= in_file
            notify(str(path), _file_failure(report, path), {"sites": len(in_file)})
        if source.fetch and touched:
            assert client is not None, "fetching snapshots needs an archive client"
            for site_id in sorted(touched):
                report.fetches.update(
                    snapshots_fetch(site_ids=[site_id], fetch=client.fetch_memento)
                )
                updates_compute(site_ids=[site_id])
            _finish_touched(touched, report, finish)
    return report


def sites_finish(*, done: Sequence[int] = (), failed: dict[int, str] | None = None) -> None:
    """The one place that ends an import: sites done (stamped ``imported_at``) or failed."""
    if done:
        Site.objects.filter(pk__in=list(done)).update(
            import_status=Site.ImportStatus.DONE, import_error="", imported_at=timezone.now()
        )
    for site_id, reason in (failed or {}).items():
        Site.objects.filter(pk=site_id).update(
            import_status=Site.ImportStatus.FAILED, import_error=reason[:5000]
        )


# --- One site from the archive ------------------------------------------------------------------


def _one_site(
    site: Site,
    source: FromArchive | FetchRetry,
    client: ArchiveClient,
    report: ImportReport,
    finish: Callable[[list[int]], None],
    notify: Progress,
) -> None:
    Site.objects.filter(pk=site.pk).update(
        import_status=Site.ImportStatus.RUNNING, import_attempts=F("import_attempts") + 1
    )
    counts: dict[str, int] = {}
    failure = ""
    try:
        if isinstance(source, FromArchive):
            added, bad_lines = _captures_from_archive(site, client, report)
            counts.update({"captures added": added, "bad CDX lines": bad_lines})
        fetched = snapshots_fetch(site_ids=[site.pk], fetch=client.fetch_memento)
        report.fetches.update(fetched)
        updates_compute(site_ids=[site.pk])
        counts.update({"fetches": fetched["fetched"], "fetch failures": fetched["fetch failed"]})
        finish([site.pk])
    except ArchiveError as error:
        failure = str(error)
        report.failed[site.pk] = failure
        sites_finish(failed={site.pk: failure})
    else:
        report.done.append(site.pk)
        sites_finish(done=[site.pk])
    notify(site.seed_url, failure, counts)


def _captures_from_archive(
    site: Site, client: ArchiveClient, report: ImportReport
) -> tuple[int, int]:
    """Query the archive for the site's captures and store them; (captures added, bad lines).

    The site's captures are written in one transaction after every CDX page has been read, so
    an interrupted query leaves nothing half-written.
    """
    scope = SeedScope.from_url(site.seed_url)
    records: list[cdx.CdxRecord] = []
    bad_lines = 0

    def parse(text: str) -> tuple[cdx.CdxParseResult, str | None]:
        result = cdx.parse_cdx(text)
        return result, result.resume_key

    for page in client.cdx_pages(scope.cdx_query_url(), parse):
        records.extend(page.records)
        bad_lines += page.skipped
    index = ScopeIndex([(site.pk, site.seed_url)])
    host = client.config.cdx_url.split("://", 1)[-1].split("/", 1)[0]
    counts = captures_store(records=records, source=f"cdx:{host}", index=index)
    report.captures.merge(counts)
    report.bad_lines += bad_lines
    return counts.added, bad_lines


# --- Files --------------------------------------------------------------------------------------


def _cdx_file(path: Path, index: ScopeIndex, report: ImportReport) -> set[int]:
    """Store one CDX file's rows (plain or gzip-compressed); returns the sites it touched."""
    try:
        raw = path.read_bytes()
        if raw[:2] == b"\x1f\x8b":
            raw = gzip.decompress(raw)
    except OSError as error:
        report.failed_files.append((str(path), str(error)))
        return set()
    parsed = cdx.parse_cdx(raw)
    report.bad_lines += parsed.skipped
    report.problems += [f"{path.name} line {n}: {why}" for n, why in parsed.problems]
    counts = captures_store(records=parsed.records, source=f"cdx:{path.name}", index=index)
    report.captures.merge(counts)
    return set(counts.sites)


def _warc_file(path: Path, max_body: int, report: ImportReport) -> set[int]:
    """Store one WARC file's captures and the link snapshots of its pages; returns the sites."""
    index = ScopeIndex.for_sites()
    try:
        with open(path, "rb") as stream:
            items = list(read_warc(stream, max_body=max_body))
    except Exception as error:  # a broken file must not stop the others
        report.failed_files.append((str(path), f"{type(error).__name__}: {error}"))
        return set()
    counts = captures_store(
        records=(i.record for i in items), source=f"warc:{path.name}", index=index
    )
    report.captures.merge(counts)
    snapshots = {}
    for item in items:
        matched = index.match(item.record.urlkey)
        if item.body is None or matched is None or matched[1] > MAX_DEPTH:
            continue
        key = (item.record.urlkey, item.record.digest)
        if key not in snapshots:
            snapshots[key] = snapshot_from_body(
                urlkey=key[0], digest=key[1], url=item.record.original,
                body=item.body[:max_body], content_type=item.content_type,
                truncated=len(item.body) > max_body,
            )  # fmt: skip
    report.snapshots += snapshots_save(list(snapshots.values()))
    updates_compute(site_ids=counts.sites)
    return set(counts.sites)


def _finish_touched(
    touched: set[int], report: ImportReport, finish: Callable[[list[int]], None]
) -> None:
    if not touched:
        return
    ids = sorted(touched)
    finish(ids)
    report.done.extend(ids)
    sites_finish(done=ids)


def _file_failure(report: ImportReport, path: Path) -> str:
    return next((reason for name, reason in report.failed_files if name == str(path)), "")


def _quiet(item: str, failure: str = "", counts: dict[str, int] | None = None) -> None:
    return None


def _nothing(site_ids: list[int]) -> None:
    return None
