"""The one import pipeline: bring sites up to date from any source, then mark them done or failed.

Every command, job and page that imports goes through :func:`sites_import` with one of four
sources:

* :class:`FromArchive` — query the configured CDX server, a site's whole history alone the
  first time and afterwards by host (``archive.archive_import``: several queries in flight, one
  site's or one group's failure never stops the others), store the captures, fetch the
  contents not seen before newest first across the sites, compute updates;
* :class:`FromCdxFiles` — CDX files of any dialect; then, unless told not to, fetch the touched
  sites' missing snapshots from the configured Wayback server, one site at a time (with
  ``fetch=False`` only the captures are stored, and the sites keep their status until a later
  :class:`FetchRetry` or an import that fetches finishes them); an archive that cannot be
  reached, or whose configured URL cannot be requested, stops the fetches at once, its sentence
  failing every site not yet done;
* :class:`FromWarcFiles` — WARC or WACZ files: captures and, from the same pass, their pages' links;
* :class:`FetchRetry` — the later pass for sites whose memento fetches failed, or (``history``)
  whose import left the contents of copies older than their window for later: fetch what is
  still missing and compute updates again.

A site's import begins in :func:`sites_start` (marked running) and ends in :func:`sites_finish`
(both in ``archive.status``), the one place that marks sites done (with ``imported_at``) or
failed (with the reason). A file import starts each site when its first captures are stored, in
the same transaction, and reports (a ``hacs.progress.Progress``) which sites it started and
how far it has read, batch by batch: the layer above records them, so that an import
interrupted mid-file leaves its sites to be marked interrupted, not waiting forever. Before
marking sites done the pipeline calls ``after(site_ids)``: the layer above
(``operations.refresh``) recomputes the sites' estimates there, so a site shown as imported
always has estimates from its new data.
Everything the pipeline writes is keyed by unique constraints and everything derived is
recomputed from what is stored, so an interrupted run, run again, ends with the data of a clean
run.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, cast

from django.db import transaction

from archive.archive_import import archive_import
from archive.captures import MAX_DEPTH, CaptureCounts, ScopeIndex, capture_limits, captures_store
from archive.models import Site
from archive.snapshots import snapshot_from_body, snapshots_fetch, snapshots_save, updates_compute
from archive.status import sites_finish, sites_start
from archive.wayback import ArchiveClient
from hacs.formats import cdx
from hacs.formats.wacz import WaczError, is_wacz, read_wacz
from hacs.formats.warc import WarcCapture, WarcError, WarcStats, read_warc
from hacs.progress import Progress, Report, report_nothing

log = logging.getLogger(__name__)

__all__ = [
    "FetchRetry",
    "FromArchive",
    "FromCdxFiles",
    "FromWarcFiles",
    "ImportReport",
    "sites_finish",
    "sites_import",
    "sites_start",
]


@dataclass(frozen=True)
class FromArchive:
    """Query the archive for the sites. A site already holding captures from this archive is
    asked, with the other such sites of its host, only for captures from ``index_lag_days``
    before it was last checked (``from``); with ``full`` each site's whole history is read
    again, one site a query."""

    site_ids: Sequence[int]
    full: bool = False
    defer_splits: bool = False  # the nightly refresh: a group split waits for the next night


@dataclass(frozen=True)
class FromCdxFiles:
    paths: Sequence[Path]
    fetch: bool = True  # then fetch the touched sites' snapshots from the Wayback server


@dataclass(frozen=True)
class FromWarcFiles:
    """WARC or WACZ files (told apart by their first bytes). ``sources`` names each file's
    captures (``Capture.source``; ``archive.sources``), by default ``warc:NAME`` or
    ``wacz:NAME``; ``opener`` opens a path when the caller must choose how (the crawl
    read-back opens files below a root without following symbolic links)."""

    paths: Sequence[Path]
    max_body: int = 5 * 1024 * 1024
    sources: Sequence[str] = ()
    opener: Callable[[Path], BinaryIO] | None = None


@dataclass(frozen=True)
class FetchRetry:
    """Fetch the contents the sites still lack. ``history``: the history pass, for the contents
    older than each site's window that its import left for later; the sites keep their import
    status whatever happens (a content that fails is asked again the next night)."""

    site_ids: Sequence[int]
    history: bool = False


Source = FromArchive | FromCdxFiles | FromWarcFiles | FetchRetry


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
    stopped: str = ""  # why a run stopped before its last site (``ArchiveUnreachableError``)


def sites_import(
    source: Source,
    *,
    client: ArchiveClient | None = None,
    after: Callable[[list[int]], object] | None = None,
    report: Report = report_nothing,
) -> ImportReport:
    """Bring the sites of ``source`` up to date (see the module docstring); never raises for
    one site's or one file's trouble, which the report and the sites' status record instead.

    ``client`` is needed for sources that talk to the archive (all but WARC files and CDX
    files with ``fetch=False``). ``report`` is told of each site or file as it ends (one unit
    done, its failure, counts to add up), and of the work inside a file import as it goes: the
    sites started and how far the file is read (told inside the transaction that starts the
    sites it names).
    """
    result = ImportReport()
    finish = after or _nothing
    if isinstance(source, FromArchive | FetchRetry):
        assert client is not None, "this source needs an archive client"
        _from_archive(source, client, result, finish, report)
    elif isinstance(source, FromWarcFiles):
        run = _FileRun(ScopeIndex.for_sites(), result, report, start=True)
        labels = list(source.sources) or [""] * len(source.paths)
        for path, label in zip(source.paths, labels, strict=True):
            in_file = _warc_file(path, source.max_body, run, label, source.opener)
            report(_file_done(result, path, in_file))
            _finish_touched(in_file, result, finish)
            run.running -= in_file
    else:
        run = _FileRun(ScopeIndex.for_sites(), result, report, start=source.fetch)
        touched: set[int] = set()
        for path in source.paths:
            in_file = _cdx_file(path, run)
            touched |= in_file
            report(_file_done(result, path, in_file))
        if source.fetch and touched:
            assert client is not None, "fetching snapshots needs an archive client"
            _fetch_touched(sorted(touched), client, run, finish)
    return result


# --- Sites from the archive --------------------------------------------------------------------


def _from_archive(
    source: FromArchive | FetchRetry,
    client: ArchiveClient,
    report: ImportReport,
    finish: Callable[[list[int]], object],
    notify: Report,
) -> None:
    """The archive's sites: queries planned by host and run in parallel, contents newest first
    (``archive.archive_import``); every site ends done or failed, told to ``notify``."""
    urls = dict(Site.objects.filter(pk__in=list(source.site_ids)).values_list("pk", "seed_url"))
    ids = sorted(urls)
    history = isinstance(source, FetchRetry) and source.history
    if not history:
        sites_start(ids)

    def told(site_id: int, failure: str, counts: dict[str, int]) -> None:
        if failure:
            report.failed[site_id] = failure
        else:
            report.done.append(site_id)
        notify(Progress(done=1, item=urls[site_id], failure=failure, counts=counts))

    captures, fetches, bad_lines, _failed = archive_import(
        ids,
        client,
        read_captures=isinstance(source, FromArchive),
        full=isinstance(source, FromArchive) and source.full,
        defer_splits=isinstance(source, FromArchive) and source.defer_splits,
        history=history,
        finish=finish,
        progress=told,
    )
    report.captures.merge(captures)
    report.fetches.update(fetches)
    report.bad_lines += bad_lines
    if client.unreachable is not None:
        report.stopped = str(client.unreachable)
    for site_id in sorted(set(source.site_ids) - set(urls)):
        # Deleted after the work was queued: say so, so that a job's count still completes.
        gone = "The site was deleted before its import ran."
        notify(Progress(done=1, item=f"site {site_id}", failure=gone))


# --- Files --------------------------------------------------------------------------------------


# Records stored per write while a file streams in: a damaged file keeps every batch before the
# damage, and memory stays bounded however large the file is.
CDX_BATCH = 50_000
WARC_BATCH = 1_000
# Bodies held per batch: pages are parsed for their links a batch at a time, and a batch's
# bodies and parse trees are most of an import's memory (bench.wacz_import).
WARC_BATCH_BYTES = 8 * 1024 * 1024


@dataclass
class _FileRun:
    """What the files of one import share: the seed index, the report, the progress callback
    ``tell``, whether storing a site's captures starts its import, and the sites running."""

    index: ScopeIndex
    report: ImportReport
    tell: Report
    start: bool
    running: set[int] = field(default_factory=set)

    def store(
        self,
        records: Sequence[cdx.CdxRecord],
        source: str,
        limits: cdx.RowLimits,
        read: dict[str, int],
    ) -> CaptureCounts:
        """Store a batch and start the sites it touched first, in one transaction, then tell
        ``tell``: killed anywhere, the run leaves every site it stored captures for either
        running and named by a report, or as it was before."""
        with transaction.atomic():
            counts = captures_store(records=records, source=source, index=self.index, limits=limits)
            started = sorted(counts.sites - self.running) if self.start else []
            if started:
                sites_start(started)
                self.running.update(started)
            self.tell(Progress(started=started, counts=dict(read)))
        self.report.captures.merge(counts)
        return counts


class _Reading:
    """How far a file has been read: records and bytes since the last report."""

    def __init__(self, stream: BinaryIO) -> None:
        self.stream = stream
        self.records = 0
        self.told_records = 0
        self.told_bytes = 0

    def since_last(self) -> dict[str, int]:
        try:
            position = self.stream.tell()
        except (OSError, ValueError):  # a pipe, or a closed file: records only
            position = self.told_bytes
        read = {
            "records read": self.records - self.told_records,
            "bytes read": max(position - self.told_bytes, 0),
        }
        self.told_records, self.told_bytes = self.records, max(position, self.told_bytes)
        return read


def _cdx_file(path: Path, run: _FileRun) -> set[int]:
    """Store one CDX file's rows (plain or gzip-compressed) as they are read; returns the sites
    it touched. Damage stops the file where it starts and is recorded as its failure, with the
    line; what came before is kept."""
    stats = cdx.CdxStats()
    limits = capture_limits()
    touched: set[int] = set()
    pending: list[cdx.CdxRecord] = []
    reading: _Reading | None = None

    def store() -> None:
        read = reading.since_last() if reading is not None else {}
        counts = run.store(pending, f"cdx:{path.name}", limits, read)
        touched.update(counts.sites)
        pending.clear()

    failure = ""
    try:
        with open(path, "rb") as stream:
            reading = _Reading(stream)
            for record in cdx.read_cdx_file(stream, stats, limits):
                pending.append(record)
                reading.records += 1
                if len(pending) >= CDX_BATCH:
                    store()
            store()
    except OSError as error:
        failure = f"cannot be read ({error.strerror or error})"
    except cdx.CdxError as error:
        where = error.line_number or 1
        failure = f"stopped at line {where:,}: {error.reason}" + _kept(stats.parsed)
    if pending:
        store()
    _file_report(run.report, path, "line", stats.skipped, stats.problems, failure)
    return touched


class _WarcBatches:
    """A WARC or WACZ file's captures stored as they are read, in batches with the link
    snapshots of their pages; memory stays bounded however large the file is."""

    def __init__(self, run: _FileRun, source: str, max_body: int) -> None:
        self.run = run
        self.source = source
        self.max_body = max_body
        self.limits = capture_limits()
        self.touched: set[int] = set()
        self.saved: set[tuple[str, str]] = set()
        self.pending: list[WarcCapture] = []
        self.pending_bytes = 0
        self.reading: _Reading | None = None
        self.captures = 0  # read from the file's WARC records so far

    def add(self, records: Iterable[WarcCapture]) -> None:
        for item in records:
            self.pending.append(item)
            self.captures += 1
            if self.reading is not None:
                self.reading.records += 1
            self.pending_bytes += len(item.body or b"")
            if len(self.pending) >= WARC_BATCH or self.pending_bytes >= WARC_BATCH_BYTES:
                self.store()

    def store(self) -> None:
        read = self.reading.since_last() if self.reading is not None else {}
        records = [item.record for item in self.pending]
        counts = self.run.store(records, self.source, self.limits, read)
        self.touched.update(counts.sites)
        index, max_body = self.run.index, self.max_body
        snapshots = {}
        for item in self.pending:
            matched = index.match(item.record.urlkey)
            if item.body is None or matched is None or matched[1] > MAX_DEPTH:
                continue
            key = (item.record.urlkey, item.record.digest)
            if key not in self.saved:
                self.saved.add(key)
                snapshots[key] = snapshot_from_body(
                    urlkey=key[0],
                    digest=key[1],
                    url=item.record.original,
                    body=item.body[:max_body],
                    content_type=item.content_type,
                    truncated=len(item.body) > max_body,
                )
        self.run.report.snapshots += snapshots_save(list(snapshots.values()))
        self.pending.clear()
        self.pending_bytes = 0


def _warc_file(
    path: Path,
    max_body: int,
    run: _FileRun,
    source: str = "",
    opener: Callable[[Path], BinaryIO] | None = None,
) -> set[int]:
    """Store one WARC or WACZ file's captures and the link snapshots of its pages as they are
    read; returns the sites. Damage stops the file (or a WACZ's WARC file) where it starts and
    is recorded as its failure, with the byte offset; the records before it are kept."""
    stats = WarcStats()
    batches = _WarcBatches(run, source, max_body)
    failure = ""
    try:
        with (opener or _open_file)(path) as stream:
            batches.reading = _Reading(stream)
            if is_wacz(stream):
                batches.source = source or f"wacz:{path.name}"
                failure = _wacz_records(stream, batches, stats)
            else:
                batches.source = source or f"warc:{path.name}"
                batches.add(
                    read_warc(stream, max_body=max_body, stats=stats, limits=batches.limits)
                )
            batches.store()
    except OSError as error:
        failure = f"cannot be read ({error.strerror or error})"
    except WarcError as error:
        failure = f"stopped at offset {error.offset:,}: {error.reason}" + _kept(stats.captures)
    except WaczError as error:
        failure = _wacz_failure(error, stats.captures)
    if batches.pending:
        batches.store()
    _file_report(run.report, path, "offset", stats.skipped, stats.problems, failure)
    updates_compute(site_ids=batches.touched)
    return batches.touched


def _open_file(path: Path) -> BinaryIO:
    return open(path, "rb")


def _wacz_records(stream: BinaryIO, batches: _WarcBatches, stats: WarcStats) -> str:
    """Store the captures of each WARC file inside a WACZ (``hacs.formats.wacz``); returns the
    failure of the first WARC file that could not be read to its end (the others are still
    read), or empty. Raises ``WaczError`` for a WACZ refused, or truncated."""
    failures: list[str] = []
    for entry, data in read_wacz(stream):
        before = stats.captures
        try:
            batches.add(
                read_warc(
                    cast(BinaryIO, data),
                    max_body=batches.max_body,
                    stats=stats,
                    limits=batches.limits,
                )
            )
        except WarcError as error:
            reason = data.failure or error.reason
            failures.append(
                f"{entry.name} stopped at offset {error.offset:,}: {reason}"
                + _kept(stats.captures - before)
            )
            continue
        if data.failure:
            failures.append(f"{entry.name}: {data.failure}")
    return "; ".join(failures[:3]) + (
        f" (and {len(failures) - 3} more)" if len(failures) > 3 else ""
    )


def _wacz_failure(error: WaczError, captures: int) -> str:
    """A refused or truncated WACZ in a sentence: a refused one stores nothing."""
    if error.truncated:
        return f"{error.reason} ({captures:,} captures read)"
    if captures:
        return f"stopped: {error.reason}" + _kept(captures)
    return f"refused: {error.reason}; nothing in it was stored"


def _kept(records: int) -> str:
    if not records:
        return "; nothing before it was read"
    if records == 1:
        return "; the record before it was read and kept"
    return f"; the {records:,} records before it were read and kept"


def _file_report(
    report: ImportReport,
    path: Path,
    unit: str,
    skipped: int,
    problems: Sequence[tuple[int, str]],
    failure: str,
) -> None:
    """Add a file's skipped records (each with its line or offset) and its failure, if any."""
    report.bad_lines += skipped
    report.problems += [f"{path.name} {unit} {where:,}: {why}" for where, why in problems]
    if skipped > len(problems):
        report.problems.append(
            f"{path.name}: {skipped - len(problems):,} more skipped records not listed"
        )
    if failure:
        report.failed_files.append((str(path), failure))


def _fetch_touched(
    site_ids: list[int], client: ArchiveClient, run: _FileRun, finish: Callable[[list[int]], object]
) -> None:
    """Fetch the missing snapshots of CDX files' sites one site at a time, then finish those
    fetched; an archive that cannot be reached stops the fetches and fails the rest with its
    sentence (no later site can do better)."""
    report = run.report
    fetched_sites: list[int] = []
    for number, site_id in enumerate(site_ids):
        fetched = snapshots_fetch(site_ids=[site_id], fetch=client.fetch_memento)
        report.fetches.update(fetched)
        unreachable = client.unreachable
        if unreachable is not None:
            report.stopped = str(unreachable)
            rest = {later: report.stopped for later in site_ids[number:]}
            report.failed.update(rest)
            sites_finish(failed=rest)
            break
        updates_compute(site_ids=[site_id])
        fetched_sites.append(site_id)
        run.tell(Progress(counts={"sites fetched": 1, "fetches": fetched["fetched"]}))
    _finish_touched(set(fetched_sites), report, finish)


def _finish_touched(
    touched: set[int], report: ImportReport, finish: Callable[[list[int]], object]
) -> None:
    if not touched:
        return
    ids = sorted(touched)
    finish(ids)
    report.done.extend(ids)
    sites_finish(done=ids)


def _file_done(result: ImportReport, path: Path, sites: set[int]) -> Progress:
    """A file read to its end, or failed with the reason its reader gave."""
    failure = next((reason for name, reason in result.failed_files if name == str(path)), "")
    return Progress(done=1, item=str(path), failure=failure, counts={"sites": len(sites)})


def _nothing(site_ids: list[int]) -> None:
    return None
