"""Storing CDX rows as captures of the seed sites they fall under.

* :class:`ScopeIndex` finds the seed site and depth of a URL (same host, longest path prefix);
* :func:`captures_store` writes records idempotently, deciding each capture's kind (DESIGN rule
  1, ``hacs.updates.classify``) over the new rows together with the site's stored ones;
* :func:`capture_limits` says what a row may hold (``hacs.formats.cdx.RowLimits``): the column
  sizes read from the ``Capture`` model, and capture times from 1996 to tomorrow.

Every record is checked against those limits before it is written, so one bad row (a NUL byte,
a 3,000-character urlkey, status 99999, a capture dated 2099) is skipped and counted instead of
failing the whole batch on PostgreSQL, and never stretches a site's intervals.

Every write is keyed by the unique (site, urlkey, timestamp), so an import that was interrupted
and run again ends with exactly the rows of a clean import.
"""

from __future__ import annotations

import dataclasses
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from django.db import connection, transaction
from django.db.backends.base.operations import BaseDatabaseOperations

from archive.models import Capture, Site
from hacs.formats import cdx
from hacs.formats.canon import SeedScope, canonical_url, homepage_key
from hacs.updates import OBSERVATION_KINDS, CaptureKind, classify

MAX_DEPTH = 2


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


@dataclass
class CaptureCounts:
    read: int = 0
    added: int = 0
    skipped: Counter[str] = field(default_factory=Counter)
    sites: set[int] = field(default_factory=set)
    # New rows written per site (a row another import wrote meanwhile counts here, not in added).
    written: Counter[int] = field(default_factory=Counter)
    # Their capture times, per site, when the caller asked for them (``keep_times``); not merged.
    new_times: dict[int, list[datetime]] = field(default_factory=dict)

    def skipped_summary(self) -> str:
        """The skipped rows by reason, most common first (``"none"`` when nothing was skipped)."""
        return ", ".join(f"{n} {why}" for why, n in self.skipped.most_common()) or "none"

    def merge(self, other: CaptureCounts) -> None:
        self.read += other.read
        self.added += other.added
        self.skipped.update(other.skipped)
        self.sites |= other.sites
        self.written.update(other.written)


def _normalised(record: cdx.CdxRecord) -> tuple[str, int | None]:
    """Mimetype and status as stored: a revisit is ``warc/revisit`` with no status of its own.

    Archives differ here (the Internet Archive prints ``-``, pywb the revisit's HTTP status);
    storing one form makes captures from every source compare equal.
    """
    if record.is_revisit and record.status in (None, 200):
        return cdx.REVISIT_TYPE, None
    return record.mimetype, record.status


_UNPLACED = (-1, -1, "")
_FOREIGN_ORIGINAL = (-2, -1, "")
_UNREADABLE_ORIGINAL = (-3, -1, "")
#: How a row that is no seed's page is counted, by the site id ``_place`` gives it.
_MISPLACED = {
    -2: "invalid original (outside its urlkey's seed)",
    -3: "invalid original (not a URL)",
}


def capture_limits(*, now: datetime | None = None) -> cdx.RowLimits:
    """What a ``Capture`` row may hold: its columns' sizes and ranges, capture times to tomorrow.

    Integer ranges are Django's portable ones (not the connected database's), so a row is
    refused alike on SQLite, which would store anything, and on PostgreSQL, which would fail.
    """
    field = Capture._meta.get_field
    ranges = BaseDatabaseOperations.integer_field_ranges
    status_low, status_high = ranges[field("status").get_internal_type()]
    length_low, length_high = ranges[field("length").get_internal_type()]
    base = cdx.RowLimits.until_tomorrow(now)
    http_low, http_high = base.status
    return dataclasses.replace(
        base,
        urlkey=min(_max_length("urlkey"), _max_length("page_key")),
        mimetype=_max_length("mimetype"),
        digest=_max_length("digest"),
        status=(max(status_low, http_low), min(status_high, http_high)),
        length=(max(length_low, 0), length_high),
    )


def _max_length(name: str) -> int:
    size = getattr(Capture._meta.get_field(name), "max_length", None)
    assert size is not None, f"Capture.{name} has no max_length"
    return size


def captures_store(
    *,
    records: Iterable[cdx.CdxRecord],
    source: str,
    index: ScopeIndex,
    limits: cdx.RowLimits | None = None,
    keep_times: bool = False,
) -> CaptureCounts:
    """Store CDX records as captures of the sites they fall under (depth ≤ 2), idempotently.

    Kinds (DESIGN rule 1) are decided before writing, over the new rows together with the
    site's stored ones, so a revisit whose original came in an earlier import is recognised and
    an earlier orphan revisit is promoted when its original arrives. Rows are written with one
    ``INSERT … ON CONFLICT DO NOTHING`` per batch: this is the hot path of an import.

    A record that the table cannot hold (``limits``, by default :func:`capture_limits`) is
    skipped and counted as ``invalid <field>``; the parsers report such lines with their
    numbers, this is the guard for every source. ``keep_times`` keeps the new rows' capture
    times per site in ``new_times`` (a refresh measures the archive's indexing lag from them).
    """
    counts = CaptureCounts()
    limits = limits if limits is not None else capture_limits()
    by_site = _placed(records, index, limits, counts)
    counts.sites = set(by_site)
    wanted = {
        site_id: {record.urlkey for record, _d, _k in items} for site_id, items in by_site.items()
    }
    stored = _stored_captures(wanted)
    rows: list[tuple[Any, ...]] = []
    kind_changes: list[tuple[str, bool, int]] = []
    adapt = _datetime_adapter()
    for site_id, items in by_site.items():
        old = stored.get(site_id, [])
        fresh = _fresh(items, old, counts)
        if not fresh:
            continue
        counts.written[site_id] += len(fresh)
        if keep_times:
            counts.new_times[site_id] = [f[0].timestamp for f in fresh]
        kinds = classify([c for c, _pk, _kind in old] + [f[0] for f in fresh])
        for (_record, pk, kind), new_kind in zip(old, kinds, strict=False):
            if kind != new_kind:
                kind_changes.append((str(new_kind), new_kind in OBSERVATION_KINDS, pk))
        for (record, depth, page_key), kind in zip(fresh, kinds[len(old) :], strict=True):
            rows.append(_row(site_id, record, depth, page_key, kind, source, adapt))
    counts.added = _write(rows, kind_changes)
    return counts


_Placed = tuple[cdx.CdxRecord, int, str]  # a record, its depth and its page key


def _placed(
    records: Iterable[cdx.CdxRecord],
    index: ScopeIndex,
    limits: cdx.RowLimits,
    counts: CaptureCounts,
) -> dict[int, list[_Placed]]:
    """The records that can be stored, by the site they fall under; the others counted."""
    problem_of = cdx.row_problem
    placements: dict[tuple[str, str], tuple[int, int, str]] = {}
    by_site: dict[int, list[_Placed]] = defaultdict(list)
    for record in records:
        counts.read += 1
        problem = problem_of(record, limits)
        if problem is not None:
            counts.skipped[f"invalid {problem.field}"] += 1
            continue
        key = (record.urlkey, record.original)
        place = placements.get(key)
        if place is None:
            place = _place(record.urlkey, record.original, index)
            placements[key] = place
        site_id, depth, page_key = place
        if site_id < 0:
            counts.skipped[_MISPLACED.get(site_id, "outside every seed")] += 1
            continue
        if depth > MAX_DEPTH:
            counts.skipped[f"deeper than {MAX_DEPTH}"] += 1
            continue
        by_site[site_id].append((record, depth, page_key))
    return by_site


def _fresh(
    items: list[_Placed], old: list[tuple[cdx.CdxRecord, int, str]], counts: CaptureCounts
) -> list[_Placed]:
    """A site's records not stored yet, each (urlkey, timestamp) once, in their stored form."""
    already = {(c.urlkey, c.timestamp) for c, _pk, _kind in old}
    seen: set[tuple[str, datetime]] = set()
    fresh: list[_Placed] = []
    for record, depth, page_key in items:
        stamp = (record.urlkey, record.timestamp)
        if stamp in already:
            counts.skipped["already stored"] += 1
            continue
        if stamp in seen:
            counts.skipped["repeated (url, timestamp)"] += 1
            continue
        seen.add(stamp)
        mimetype, status = _normalised(record)
        fresh.append((_stored_form(record, mimetype, status), depth, page_key))
    return fresh


def _row(
    site_id: int,
    record: cdx.CdxRecord,
    depth: int,
    page_key: str,
    kind: CaptureKind,
    source: str,
    adapt: Callable[[datetime], Any],
) -> tuple[Any, ...]:
    """A capture row in ``_CAPTURE_COLUMNS`` order."""
    return (
        site_id,
        record.original,
        record.urlkey,
        page_key,
        adapt(record.timestamp),
        depth,
        record.mimetype[:200],
        record.status,
        record.digest[:100],
        record.length,
        source[:200],
        str(kind),
        kind in OBSERVATION_KINDS,
        record.location or None,
    )


def _write(rows: Sequence[tuple[Any, ...]], kind_changes: list[tuple[str, bool, int]]) -> int:
    """Insert the new rows and change the stored rows' kinds, at once; returns the rows added."""
    with transaction.atomic():
        added = _insert_ignoring_conflicts(rows)
        if kind_changes:
            table = Capture._meta.db_table
            with connection.cursor() as cursor:
                cursor.executemany(
                    f"UPDATE {table} SET kind = %s, is_observation = %s WHERE id = %s", kind_changes
                )
    return added


def _place(urlkey: str, original: str, index: ScopeIndex) -> tuple[int, int, str]:
    """(site id, depth, page key) of a row, or ``_UNPLACED``, ``_FOREIGN_ORIGINAL`` or
    ``_UNREADABLE_ORIGINAL``.

    The urlkey places the row, and its original URL, canonicalised (dot segments resolved,
    ``www.`` and scheme dropped), must lie in the same seed's scope: an archive that files
    ``foo.edu/~ann/../~zed/`` or a page of another host under ``~ann``'s urlkey has its row
    refused as a bad row, not stored as ``~ann``'s page.
    """
    try:
        original_key = canonical_url(original) if original else None
    except ValueError:
        return _UNREADABLE_ORIGINAL if urlkey else _UNPLACED
    if not urlkey:
        if original_key is None:
            return _UNPLACED
        urlkey = original_key
    matched = index.match(urlkey)
    if matched is None:
        return _UNPLACED
    if original_key is not None and original_key != urlkey:
        by_original = index.match(original_key)
        if by_original is None or by_original[0] != matched[0]:
            return _FOREIGN_ORIGINAL
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
        urlkey=urlkey,
        timestamp=record.timestamp,
        original=record.original,
        mimetype=mimetype,
        status=status,
        digest=cdx.bare_digest(record.digest),
        length=record.length,
        location=record.location,
    )


#: A batch naming at most this many (site, page) pairs reads only those pages' stored captures;
#: a larger one (a CDX file's 50,000-row batches) reads its sites' whole history in one pass.
PAGES_READ_ALONE = 10_000


def _stored_captures(
    wanted: dict[int, set[str]],
) -> dict[int, list[tuple[cdx.CdxRecord, int, str]]]:
    """The stored captures, with their ids and kinds, that decide the kinds of a batch's rows:
    those of the same pages (a row's kind depends on its urlkey's captures alone,
    ``hacs.updates.classify``). A batch of few pages reads only theirs, so that a crawl read
    back batch by batch does not read its sites' whole history again at every batch (its
    memory and time grew with the history)."""
    pairs = [(site_id, key) for site_id, keys in wanted.items() for key in keys]
    if len(pairs) > PAGES_READ_ALONE:
        return _stored_of_sites(set(wanted))
    found: dict[int, list[tuple[cdx.CdxRecord, int, str]]] = defaultdict(list)
    pairs.sort()
    for start in range(0, len(pairs), 400):
        chunk = set(pairs[start : start + 400])
        rows = Capture.objects.filter(
            site_id__in={site_id for site_id, _key in chunk}, urlkey__in={k for _s, k in chunk}
        )
        for site_id, pk, urlkey, *rest in rows.values_list(*_STORED_FIELDS):
            if (site_id, urlkey) in chunk:
                found[site_id].append(_stored_record(pk, urlkey, *rest))
    return found


_STORED_FIELDS = (
    "site_id",
    "id",
    "urlkey",
    "timestamp",
    "url",
    "mimetype",
    "status",
    "digest",
    "length",
    "kind",
)


def _stored_record(pk: int, urlkey: str, *rest: Any) -> tuple[cdx.CdxRecord, int, str]:
    moment, url, mimetype, status, digest, length, kind = rest
    return cdx.CdxRecord(urlkey, moment, url, mimetype, status, digest, length), pk, kind


def _stored_of_sites(site_ids: set[int]) -> dict[int, list[tuple[cdx.CdxRecord, int, str]]]:
    """The sites' stored captures as records, with their ids and kinds."""
    found: dict[int, list[tuple[cdx.CdxRecord, int, str]]] = defaultdict(list)
    ids = sorted(site_ids)
    for start in range(0, len(ids), 500):
        rows = Capture.objects.filter(site_id__in=ids[start : start + 500])
        for site_id, pk, urlkey, *rest in rows.values_list(*_STORED_FIELDS):
            found[site_id].append(_stored_record(pk, urlkey, *rest))
    return found


_CAPTURE_COLUMNS = (
    "site_id",
    "url",
    "urlkey",
    "page_key",
    "timestamp",
    "depth",
    "mimetype",
    "status",
    "digest",
    "length",
    "source",
    "kind",
    "is_observation",
    "location",
)


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
