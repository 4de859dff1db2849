"""Bringing archive history into HACS: seeds, captures, link snapshots and update data.

Glue between the pure readers (``hacs.formats.seeds``, ``hacs.formats.cdx``, ``hacs.formats.links``,
``hacs.formats.canon``, ``hacs.updates``) and the database. Every function here is idempotent:
rows are keyed by unique constraints and written with ``ignore_conflicts``, and everything derived
(capture kinds, snapshot links, update data) is recomputed from what is stored, so an import that
was interrupted at any point and run again ends with exactly the data of a clean import.
"""

from __future__ import annotations

import gzip
import logging
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO

from django.db import connection, transaction
from django.db.models import OuterRef, Subquery
from django.utils import timezone

from archive.models import Capture, LinkSnapshot, Site, Tag
from hacs.formats import cdx
from hacs.formats.canon import SeedScope, canonical_url, homepage_key
from hacs.formats.links import decode_html, extract_links
from hacs.formats.seeds import SeedList, parse_seed_list
from hacs.updates import OBSERVATION_KINDS, classify, link_floors, new_link_counts

log = logging.getLogger(__name__)

MAX_DEPTH = 2
BATCH = 2000


# --- Seeds -------------------------------------------------------------------------------------
@dataclass
class SeedImportReport:
    parsed: SeedList
    added: list[Site] = field(default_factory=list)
    already_stored: list[tuple[int, str, int]] = field(default_factory=list)  # line, url, site id

    @property
    def rejected(self) -> int:
        return len(self.parsed.rejected)

    def summary(self) -> str:
        return (
            f"{len(self.added)} added, {len(self.already_stored)} already stored, "
            f"{len(self.parsed.merged)} merged duplicate lines, {self.rejected} rejected"
        )


def seeds_import(
    *,
    data: bytes | str,
    max_bytes: int = 5 * 1024 * 1024,
    max_lines: int = 50_000,
    user_directories_only: bool = False,
    extra_tags: Sequence[str] = (),
    dry_run: bool = False,
) -> SeedImportReport:
    """Add the sites of a seed list; existing sites are left as they are (tags are added).

    Raises ``hacs.formats.seeds.SeedFileError`` when the file as a whole cannot be read; nothing is
    written then.
    """
    parsed = parse_seed_list(
        data, max_bytes=max_bytes, max_lines=max_lines, user_directories_only=user_directories_only
    )
    report = SeedImportReport(parsed=parsed)
    existing = _site_ids_by_key([row.key for row in parsed.rows])
    new_rows = [row for row in parsed.rows if row.key not in existing]
    report.already_stored = [
        (r.line, r.url, existing[r.key]) for r in parsed.rows if r.key in existing
    ]
    if dry_run:
        report.added = [
            Site(seed_url=r.url, canonical_key=r.key, author=r.author) for r in new_rows
        ]
        return report
    with transaction.atomic():
        Site.objects.bulk_create(
            [Site(seed_url=r.url, canonical_key=r.key, author=r.author) for r in new_rows],
            batch_size=BATCH,
            ignore_conflicts=True,
        )
        stored = _site_ids_by_key([r.key for r in new_rows])
        ids = {**existing, **stored}
        tag_names = {t for r in parsed.rows for t in r.tags} | set(extra_tags)
        Tag.objects.bulk_create([Tag(name=n) for n in tag_names], ignore_conflicts=True)
        tag_ids = dict(Tag.objects.filter(name__in=tag_names).values_list("name", "pk"))
        through = Site.tags.through
        links = [
            through(site_id=ids[r.key], tag_id=tag_ids[name])
            for r in parsed.rows
            for name in (*r.tags, *extra_tags)
        ]
        through.objects.bulk_create(links, ignore_conflicts=True, batch_size=BATCH)
    report.added = list(Site.objects.filter(pk__in=list(stored.values())).order_by("pk"))
    return report


def _site_ids_by_key(keys: Sequence[str]) -> dict[str, int]:
    found: dict[str, int] = {}
    for start in range(0, len(keys), 900):  # SQLite allows 999 parameters per query
        chunk = keys[start : start + 900]
        found.update(
            Site.objects.filter(canonical_key__in=chunk).values_list("canonical_key", "pk")
        )
    return found


# --- Which site does a URL belong to ----------------------------------------------------------
class ScopeIndex:
    """Finds the seed site a capture belongs to: same host, longest path prefix."""

    def __init__(self, sites: Iterable[tuple[int, str]]) -> None:
        self._by_host: dict[str, list[tuple[int, int, SeedScope]]] = defaultdict(list)
        for site_id, seed_url in sites:
            scope = SeedScope.from_url(seed_url)
            self._by_host[scope.host_key].append((len(scope.path_prefix), site_id, scope))
        for entries in self._by_host.values():
            entries.sort(key=lambda e: -e[0])

    @classmethod
    def for_sites(cls, site_ids: Iterable[int] | None = None) -> ScopeIndex:
        sites = Site.objects.all() if site_ids is None else Site.objects.filter(pk__in=site_ids)
        return cls(sites.values_list("pk", "seed_url"))

    def match(self, urlkey: str) -> tuple[int, int] | None:
        """(site id, depth) of the urlkey's page, or None when it is under no seed."""
        host = urlkey.partition(")")[0]
        for _length, site_id, scope in self._by_host.get(host, ()):
            if scope.contains(urlkey):
                return site_id, scope.depth(urlkey)
        return None


# --- Captures ---------------------------------------------------------------------------------
@dataclass
class CaptureCounts:
    read: int = 0
    added: int = 0
    skipped: Counter[str] = field(default_factory=Counter)
    sites: set[int] = field(default_factory=set)

    def skipped_summary(self) -> str:
        """The skipped rows by reason, most common first (``"none"`` when nothing was skipped)."""
        return ", ".join(f"{n} {why}" for why, n in self.skipped.most_common()) or "none"

    def merge(self, other: CaptureCounts) -> None:
        self.read += other.read
        self.added += other.added
        self.skipped.update(other.skipped)
        self.sites |= other.sites


def _normalised(record: cdx.CdxRecord) -> tuple[str, int | None]:
    """Mimetype and status as stored: a revisit is ``warc/revisit`` with no status of its own.

    Archives differ here (the Internet Archive prints ``-``, pywb the revisit's HTTP status);
    storing one form makes captures from every source compare equal.
    """
    if record.is_revisit and record.status in (None, 200):
        return cdx.REVISIT_TYPE, None
    return record.mimetype, record.status


def _digest(value: str) -> str:
    value = value.strip()
    return value.split(":", 1)[1] if value.lower().startswith("sha1:") else value


_UNPLACED = (-1, -1, "")


def captures_store(
    *,
    records: Iterable[cdx.CdxRecord],
    source: str,
    index: ScopeIndex,
) -> CaptureCounts:
    """Store CDX records as captures of the sites they fall under (depth ≤ 2), idempotently.

    Kinds (DESIGN rule 1) are decided before writing, over the new rows together with the
    site's stored ones, so a revisit whose original came in an earlier import is recognised and
    an earlier orphan revisit is promoted when its original arrives. Rows are written with one
    ``INSERT … ON CONFLICT DO NOTHING`` per batch: this is the hot path of an import.
    """
    counts = CaptureCounts()
    placements: dict[str, tuple[int, int, str]] = {}
    by_site: dict[int, list[tuple[cdx.CdxRecord, int, str]]] = defaultdict(list)
    for record in records:
        counts.read += 1
        urlkey = record.urlkey
        place = placements.get(urlkey)
        if place is None:
            place = _place(urlkey, record.original, index)
            placements[urlkey] = place
        site_id, depth, page_key = place
        if site_id < 0:
            counts.skipped["outside every seed"] += 1
            continue
        if depth > MAX_DEPTH:
            counts.skipped[f"deeper than {MAX_DEPTH}"] += 1
            continue
        by_site[site_id].append((record, depth, page_key))
    counts.sites = set(by_site)
    stored = _stored_captures(counts.sites)
    rows: list[tuple[Any, ...]] = []
    kind_changes: list[tuple[str, bool, int]] = []
    adapt = _datetime_adapter()
    for site_id, items in by_site.items():
        old = stored.get(site_id, [])
        already = {(c.urlkey, c.timestamp) for c, _pk, _kind in old}
        seen: set[tuple[str, datetime]] = set()
        fresh: list[tuple[cdx.CdxRecord, int, str]] = []
        for record, depth, page_key in items:
            key = (record.urlkey, record.timestamp)
            if key in already:
                counts.skipped["already stored"] += 1
                continue
            if key in seen:
                counts.skipped["repeated (url, timestamp)"] += 1
                continue
            seen.add(key)
            mimetype, status = _normalised(record)
            fresh.append((_stored_form(record, mimetype, status), depth, page_key))
        if not fresh:
            continue
        kinds = classify([c for c, _pk, _kind in old] + [f[0] for f in fresh])
        for (_record, pk, kind), new_kind in zip(old, kinds, strict=False):
            if kind != new_kind:
                kind_changes.append((str(new_kind), new_kind in OBSERVATION_KINDS, pk))
        for (record, depth, page_key), kind in zip(fresh, kinds[len(old) :], strict=True):
            rows.append(
                (
                    site_id, record.original, record.urlkey, page_key, adapt(record.timestamp),
                    depth, record.mimetype[:200], record.status, record.digest[:100],
                    record.length, source[:200], str(kind), kind in OBSERVATION_KINDS,
                )
            )  # fmt: skip
    with transaction.atomic():
        counts.added = _insert_ignoring_conflicts(rows)
        if kind_changes:
            table = Capture._meta.db_table
            with connection.cursor() as cursor:
                cursor.executemany(
                    f"UPDATE {table} SET kind = %s, is_observation = %s WHERE id = %s",
                    kind_changes,
                )
    return counts


def _place(urlkey: str, original: str, index: ScopeIndex) -> tuple[int, int, str]:
    """(site id, depth, page key) of a urlkey, or ``_UNPLACED``."""
    if not urlkey:
        try:
            urlkey = canonical_url(original)
        except ValueError:
            return _UNPLACED
    matched = index.match(urlkey)
    if matched is None:
        return _UNPLACED
    return matched[0], matched[1], homepage_key(urlkey)


def _datetime_adapter() -> Callable[[datetime], Any]:
    """How the database takes a UTC datetime in raw SQL (Django's own adapter, but fast).

    Django stores aware datetimes in SQLite as naive UTC text; formatting that text directly
    avoids a time-zone conversion per row on the import's hot path.
    """
    if connection.vendor != "sqlite":
        return connection.ops.adapt_datetimefield_value

    def adapt(moment: datetime) -> str:
        if moment.tzinfo is UTC and not moment.microsecond:
            return str(moment)[:19]  # "YYYY-MM-DD HH:MM:SS+00:00" without the offset
        return str(connection.ops.adapt_datetimefield_value(moment))

    return adapt


def _stored_form(record: cdx.CdxRecord, mimetype: str, status: int | None) -> cdx.CdxRecord:
    """The record as stored: revisits normalised, ``sha1:`` dropped from digests."""
    if (
        mimetype == record.mimetype
        and status == record.status
        and record.urlkey
        and not record.digest[:5].lower() == "sha1:"
    ):
        return record
    urlkey = record.urlkey or canonical_url(record.original)
    return cdx.CdxRecord(
        urlkey=urlkey, timestamp=record.timestamp, original=record.original, mimetype=mimetype,
        status=status, digest=_digest(record.digest), length=record.length,
    )  # fmt: skip


def _stored_captures(site_ids: set[int]) -> dict[int, list[tuple[cdx.CdxRecord, int, str]]]:
    """The sites' stored captures as records, with their ids and kinds."""
    found: dict[int, list[tuple[cdx.CdxRecord, int, str]]] = defaultdict(list)
    ids = sorted(site_ids)
    for start in range(0, len(ids), 500):
        rows = Capture.objects.filter(site_id__in=ids[start : start + 500]).values_list(
            "site_id", "id", "urlkey", "timestamp", "url", "mimetype", "status", "digest",
            "length", "kind",
        )  # fmt: skip
        for site_id, pk, urlkey, moment, url, mimetype, status, digest, length, kind in rows:
            record = cdx.CdxRecord(urlkey, moment, url, mimetype, status, digest, length)
            found[site_id].append((record, pk, kind))
    return found


_CAPTURE_COLUMNS = (
    "site_id", "url", "urlkey", "page_key", "timestamp", "depth", "mimetype", "status", "digest",
    "length", "source", "kind", "is_observation",
)  # fmt: skip


def _insert_ignoring_conflicts(rows: Sequence[tuple[Any, ...]]) -> int:
    """Insert capture rows, skipping any that already exist; returns how many were added."""
    if not rows:
        return 0
    table = Capture._meta.db_table
    columns = ", ".join(_CAPTURE_COLUMNS)
    marks = ", ".join(["%s"] * len(_CAPTURE_COLUMNS))
    sql = (
        f"INSERT INTO {table} ({columns}) VALUES ({marks}) "
        "ON CONFLICT (site_id, urlkey, timestamp) DO NOTHING"
    )
    added = 0
    with connection.cursor() as cursor:
        for start in range(0, len(rows), 10_000):
            cursor.executemany(sql, rows[start : start + 10_000])
            added += max(cursor.rowcount, 0)
    return added


def captures_classify(*, site_ids: Iterable[int]) -> int:
    """Re-apply DESIGN rule 1 to every stored capture of the sites; returns rows changed."""
    changes: list[tuple[str, bool, int]] = []
    for rows in _stored_captures(set(site_ids)).values():
        kinds = classify([record for record, _pk, _kind in rows])
        for (_record, pk, kind), new_kind in zip(rows, kinds, strict=True):
            if kind != new_kind:
                changes.append((str(new_kind), new_kind in OBSERVATION_KINDS, pk))
    if changes:
        with connection.cursor() as cursor:
            cursor.executemany(
                f"UPDATE {Capture._meta.db_table} SET kind = %s, is_observation = %s WHERE id = %s",
                changes,
            )
    return len(changes)


# --- Link snapshots ---------------------------------------------------------------------------
@dataclass(frozen=True)
class SnapshotWanted:
    urlkey: str
    digest: str
    url: str
    timestamp: str  # 14 digits


def snapshots_missing(*, site_ids: Iterable[int]) -> list[SnapshotWanted]:
    """Distinct (urlkey, digest) of the sites' 200 HTML captures with no usable snapshot yet.

    Revisits carry the digest of an earlier 200 capture of the same URL, so they never need a
    fetch of their own. A snapshot whose fetch failed is wanted again (retried in a later pass).
    """
    done = set(
        LinkSnapshot.objects.filter(
            status__in=[LinkSnapshot.Status.OK, LinkSnapshot.Status.TOO_LARGE],
            urlkey__in=Subquery(
                Capture.objects.filter(site_id__in=list(site_ids)).values("urlkey")
            ),
        ).values_list("urlkey", "digest")
    )
    wanted: dict[tuple[str, str], SnapshotWanted] = {}
    rows = (
        Capture.objects.filter(site_id__in=list(site_ids), kind=Capture.Kind.OBSERVATION)
        .order_by("timestamp")
        .values_list("urlkey", "digest", "url", "timestamp")
    )
    for urlkey, digest, url, moment in rows:
        key = (urlkey, digest)
        if key in done or key in wanted:
            continue
        wanted[key] = SnapshotWanted(urlkey, digest, url, moment.strftime("%Y%m%d%H%M%S"))
    return list(wanted.values())


def snapshot_from_body(
    *, urlkey: str, digest: str, url: str, body: bytes, content_type: str | None,
    truncated: bool = False,
) -> LinkSnapshot:  # fmt: skip
    """A parsed snapshot (not saved) from a page's raw bytes."""
    if truncated:
        return LinkSnapshot(
            urlkey=urlkey, digest=digest, status=LinkSnapshot.Status.TOO_LARGE,
            error="The archived page is larger than HACS_MAX_MEMENTO_BYTES.",
        )  # fmt: skip
    links = sorted(extract_links(decode_html(body, content_type), url))
    return LinkSnapshot(
        urlkey=urlkey, digest=digest, status=LinkSnapshot.Status.OK,
        links="\n".join(links), link_count=len(links),
    )  # fmt: skip


def snapshots_save(snapshots: Sequence[LinkSnapshot]) -> int:
    """Save snapshots, replacing earlier failed attempts at the same content."""
    if not snapshots:
        return 0
    good = [s for s in snapshots if s.status != LinkSnapshot.Status.FAILED]
    with transaction.atomic():
        for s in good:
            LinkSnapshot.objects.filter(
                urlkey=s.urlkey, digest=s.digest, status=LinkSnapshot.Status.FAILED
            ).delete()
        LinkSnapshot.objects.bulk_create(snapshots, batch_size=BATCH, ignore_conflicts=True)
    return len(snapshots)


def snapshots_fetch(
    *,
    site_ids: Iterable[int],
    fetch: Callable[[str, str], Any],
    on_fetch: Callable[[], None] | None = None,
) -> Counter[str]:
    """Fetch and parse each missing snapshot once; ``fetch(timestamp, url)`` returns a memento."""
    from archive.wayback import ArchiveError

    counts: Counter[str] = Counter()
    pending: list[LinkSnapshot] = []
    for wanted in snapshots_missing(site_ids=site_ids):
        try:
            memento = fetch(wanted.timestamp, wanted.url)
            snapshot = snapshot_from_body(
                urlkey=wanted.urlkey, digest=wanted.digest, url=wanted.url, body=memento.body,
                content_type=memento.content_type, truncated=memento.truncated,
            )  # fmt: skip
            counts["fetched"] += 1
        except ArchiveError as error:
            snapshot = LinkSnapshot(
                urlkey=wanted.urlkey, digest=wanted.digest, status=LinkSnapshot.Status.FAILED,
                error=str(error)[:2000],
            )  # fmt: skip
            counts["fetch failed"] += 1
        pending.append(snapshot)
        if on_fetch is not None:
            on_fetch()
        if len(pending) >= 50:
            snapshots_save(pending)
            pending = []
    snapshots_save(pending)
    return counts


# --- Update data ------------------------------------------------------------------------------
def updates_compute(*, site_ids: Iterable[int]) -> int:
    """Link each observation to its snapshot and recompute the per-page update data.

    Per page (``page_key``), observations with a parsed snapshot are numbered in time order
    (``page_index``); ``link_floor`` and ``new_links`` follow DESIGN's speed hint (see
    ``hacs.updates``). Observations whose content could not be read get no index and so
    take no part in estimates until a later pass fetches them.
    """
    site_ids = list(site_ids)
    snapshot_id = Subquery(
        LinkSnapshot.objects.filter(urlkey=OuterRef("urlkey"), digest=OuterRef("digest")).values(
            "pk"
        )[:1]
    )
    changed: list[Capture] = []
    with transaction.atomic():
        Capture.objects.filter(site_id__in=site_ids, is_observation=True).update(
            snapshot_id=snapshot_id
        )
        for site_id in site_ids:
            captures = list(
                Capture.objects.filter(site_id=site_id, is_observation=True)
                .select_related("snapshot")
                .order_by("page_key", "timestamp", "urlkey")
            )
            by_page: dict[str, list[Capture]] = defaultdict(list)
            for capture in captures:
                snapshot = capture.snapshot
                usable = snapshot is not None and snapshot.status == LinkSnapshot.Status.OK
                if usable:
                    by_page[capture.page_key].append(capture)
                elif capture.page_index is not None or capture.link_floor is not None:
                    capture.page_index = capture.link_floor = capture.new_links = None
                    changed.append(capture)
            for page in by_page.values():
                link_sets = [c.snapshot.link_set() for c in page if c.snapshot is not None]
                floors = link_floors(link_sets)
                fresh = new_link_counts(link_sets)
                for i, capture in enumerate(page):
                    values = (i, int(floors[i]), int(fresh[i]))
                    if (capture.page_index, capture.link_floor, capture.new_links) != values:
                        capture.page_index, capture.link_floor, capture.new_links = values
                        changed.append(capture)
        Capture.objects.bulk_update(
            changed, ["page_index", "link_floor", "new_links"], batch_size=BATCH
        )
    return len(changed)


# --- WARC files -------------------------------------------------------------------------------
@dataclass
class WarcCapture:
    record: cdx.CdxRecord
    body: bytes | None
    content_type: str | None


def read_warc(stream: BinaryIO, *, max_body: int) -> Iterator[WarcCapture]:
    """Captures (responses and revisits) of a WARC file, with the HTML body of 200 responses.

    ``length`` is the record's compressed length in the file, as CDX indexers print it.
    """
    from warcio.archiveiterator import ArchiveIterator

    iterator = ArchiveIterator(stream)
    for record in iterator:
        if record.rec_type not in ("response", "revisit"):
            continue
        url = record.rec_headers.get_header("WARC-Target-URI") or ""
        date = record.rec_headers.get_header("WARC-Date") or ""
        try:
            moment = _warc_date(date)
            urlkey = canonical_url(url)
        except ValueError:
            continue
        http = record.http_headers
        status = int(http.get_statuscode()) if http is not None and http.get_statuscode() else None
        content_type = http.get_header("Content-Type") if http is not None else None
        digest = _digest(record.rec_headers.get_header("WARC-Payload-Digest") or "-")
        body: bytes | None = None
        if record.rec_type == "revisit":
            mimetype = cdx.REVISIT_TYPE
        else:
            mimetype = (content_type or "unk").partition(";")[0].strip().lower() or "unk"
            if status == 200 and cdx.is_html_type(mimetype):
                body = record.content_stream().read(max_body + 1)
        iterator.read_to_end(record)
        length = iterator.get_record_length()
        yield WarcCapture(
            record=cdx.CdxRecord(
                urlkey=urlkey, timestamp=moment, original=url, mimetype=mimetype,
                status=status, digest=digest, length=length,
            ),
            body=body,
            content_type=content_type,
        )  # fmt: skip


def _warc_date(text: str) -> datetime:
    digits = "".join(ch for ch in text if ch.isdigit())[:14]
    return cdx.parse_timestamp(digits)


@dataclass
class FileImportReport:
    captures: CaptureCounts = field(default_factory=CaptureCounts)
    snapshots: int = 0
    bad_lines: int = 0
    problems: list[str] = field(default_factory=list)
    failed_files: list[tuple[str, str]] = field(default_factory=list)


def warc_import(*, paths: Sequence[Path], max_body: int = 5 * 1024 * 1024) -> FileImportReport:
    """Import WARC files: captures and, from the same pass, the link snapshots of their pages."""
    report = FileImportReport()
    index = ScopeIndex.for_sites()
    for path in paths:
        try:
            with open(path, "rb") as stream:
                items = list(read_warc(stream, max_body=max_body))
        except Exception as error:  # a broken file must not stop the others
            report.failed_files.append((str(path), f"{type(error).__name__}: {error}"))
            continue
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
    return report


def cdx_file_import(*, paths: Sequence[Path]) -> FileImportReport:
    """Import CDX files of any supported dialect (plain or gzip-compressed)."""
    report = FileImportReport()
    index = ScopeIndex.for_sites()
    for path in paths:
        try:
            raw = path.read_bytes()
            if raw[:2] == b"\x1f\x8b":
                raw = gzip.decompress(raw)
        except OSError as error:
            report.failed_files.append((str(path), str(error)))
            continue
        parsed = cdx.parse_cdx(raw)
        report.bad_lines += parsed.skipped
        report.problems += [f"{path.name} line {n}: {why}" for n, why in parsed.problems]
        counts = captures_store(records=parsed.records, source=f"cdx:{path.name}", index=index)
        report.captures.merge(counts)
    return report


def site_mark(site_id: int, status: str, error: str = "") -> None:
    values: dict[str, Any] = {"import_status": status, "import_error": error[:5000]}
    if status == Site.ImportStatus.DONE:
        values["imported_at"] = timezone.now()
    Site.objects.filter(pk=site_id).update(**values)


# --- A whole site from a CDX server -----------------------------------------------------------
@dataclass
class SiteImportResult:
    captures: CaptureCounts
    fetches: Counter[str]
    bad_lines: int


def site_import_from_archive(*, site: Site, client: Any) -> SiteImportResult:
    """Query the archive for the site's captures, fetch missing snapshots, recompute updates.

    The site's captures are written in one transaction after every CDX page has been read, so
    an interrupted query leaves nothing half-written; snapshots are independent rows keyed by
    content, so an interrupted fetch pass resumes where it stopped.
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
    source = client.config.cdx_url.split("://", 1)[-1].split("/", 1)[0]
    counts = captures_store(records=records, source=f"cdx:{source}", index=index)
    fetches = snapshots_fetch(site_ids=[site.pk], fetch=client.fetch_memento)
    updates_compute(site_ids=[site.pk])
    return SiteImportResult(captures=counts, fetches=fetches, bad_lines=bad_lines)
