"""CDX queries that cover many seeds at once: how a refresh asks an archive about a collection.

A refresh that asks one query per seed costs the paper's 19,977-seed collection about 14 hours
a night at the Internet Archive's pace. Seeds share hosts (a university's ``/~name/`` pages), so
:func:`plan_queries` asks once per host instead, by this rule:

1. **Alone**, with a prefix query on its own path as before: a seed with no ``since`` (HACS holds
   no capture of it from this archive: its first import reads its whole history), a seed on a
   shared platform (:data:`SHARED_HOSTS`, such as ``sites.google.com``, where a host query would
   read millions of other people's pages), and a seed alone on its host.
2. **Together**, the other seeds of one host: one prefix query on the longest path prefix all
   their paths share (``foo.edu/~`` for ``foo.edu/~a/`` and ``foo.edu/~b/``), or one host query
   (``matchType=host``) when they share nothing below the host or one of them is the whole host.
   The query asks ``from`` the earliest of their ``since``; a group the caller names in
   ``narrow`` (asked wide lately) asks from the earliest of their ``narrow`` instead.
3. **Split** when a group's query was too big (its range spans more index lines than the archive
   reads for one query, or its answer held more rows or pages than the caller's limit; the caller
   names those groups by :attr:`CdxQuery.key`): its seeds are grouped again by one more
   character than the group's common prefix holds (``foo.edu/~`` → ``/~a``, ``/~b``…: a prefix
   query matches key prefixes, so each part reads a slice of the range), each part planned by
   this same rule, down to single seeds. A host of 400 ``/~name`` seeds thus splits into about
   26 queries, not 400.

Every row of a group's answer belongs to the seed whose scope holds it (same host, longest path;
``archive.captures.ScopeIndex``); a row under no seed of the group is another person's page,
counted and never stored. Pure: no Django, no network.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from hacs.formats.canon import SeedScope
from hacs.formats.cdx import format_timestamp

__all__ = ["EARLIEST", "SHARED_HOSTS", "CdxQuery", "RefreshSeed", "plan_queries", "refresh_from"]

EARLIEST = datetime(1990, 1, 1, tzinfo=UTC)  # before any web archive

#: Host keys (SURT form, as ``SeedScope.host_key``) of platforms that hold many unrelated sites
#: under one host: a host or common-prefix query there would read other people's pages by the
#: million, so their seeds are always asked alone. Subdomain platforms (``name.github.io``,
#: ``name.wordpress.com``) give each user a host of their own and need no entry.
SHARED_HOSTS = frozenset(
    {
        "com,google,sites",
        "com,github",
        "com,gitlab",
        "com,wordpress",
        "com,blogspot",
        "org,archive",
        "com,academia",
        "net,researchgate,www",
        "net,researchgate",
        "com,google,scholar",
        "org,dblp",
        "org,orcid",
        "com,linkedin",
        "com,twitter",
        "com,x",
    }
)


@dataclass(frozen=True)
class RefreshSeed:
    """A seed to refresh: its site, its seed URL and the ``from`` timestamp to ask from (None:
    its whole history, for a seed with no capture from this archive yet), with the archive's
    longest indexing lag (:func:`refresh_from`); ``narrow``, the ``from`` with the lag the
    archive really shows on its host, for a group asked wide lately (None: ``since``)."""

    site_id: int
    seed_url: str
    since: str | None
    narrow: str | None = None


@dataclass(frozen=True)
class CdxQuery:
    """One CDX query of a refresh: ``url`` with ``matchType=match_type`` (``prefix`` or
    ``host``), from ``since`` (None: the whole history), answering for ``site_ids``.

    ``key`` names the group for the size memory (:func:`plan_queries`'s ``too_big``): the host
    key and the common path prefix, ``edu,foo)/~``; a query of one seed is keyed by its
    homepage.
    """

    url: str
    match_type: str
    site_ids: tuple[int, ...]
    since: str | None
    key: str
    wide: bool = False  # a group asked from its seeds' ``since`` (the longest lag), not ``narrow``

    @property
    def is_group(self) -> bool:
        return len(self.site_ids) > 1


def group_too_big(
    *, pages: int, rows: int, failed_for_size: bool, max_pages: int, max_rows: int
) -> bool:
    """Whether a host group's answer was too big to keep asking as one (its next plan splits
    it): more pages or rows than the limits, or a failure for its size."""
    return pages > max_pages or rows > max_rows or failed_for_size


def refresh_from(newest: datetime, *, margin_days: float) -> str:
    """The ``from`` a seed is asked from: ``margin_days`` before the newest capture the last
    answer held (the archive indexes captures late; a capture dated before that newest one but
    indexed after it is still found when the margin covers its lateness), 14 digits, never
    before 1990. Not the time of the check: an archive that ingests an old collection indexes
    captures years late, and those dated after the newest one held are still found."""
    moment = newest - timedelta(days=margin_days)
    return format_timestamp(max(moment, EARLIEST))


def plan_queries(
    seeds: Iterable[RefreshSeed],
    *,
    too_big: Collection[str] = (),
    shared_hosts: Collection[str] = SHARED_HOSTS,
    narrow: Collection[str] = (),
) -> list[CdxQuery]:
    """The CDX queries that refresh ``seeds`` by the module's rule, every seed in exactly one.

    A group whose key is in ``narrow`` asks from its seeds' ``narrow`` ``from``; any other group
    from their ``since``, marked ``wide``. Queries come out grouped by host, groups before single
    seeds, in a stable order. Raises ``ValueError`` (naming the URL) for a seed URL that is not
    an http(s) URL.
    """
    alone: list[tuple[RefreshSeed, SeedScope]] = []
    by_host: dict[str, list[tuple[RefreshSeed, SeedScope]]] = defaultdict(list)
    for seed in seeds:
        try:
            scope = SeedScope.from_url(seed.seed_url)
        except ValueError as error:
            raise ValueError(f"seed {seed.seed_url!r} of site {seed.site_id}: {error}") from None
        if seed.since is None or scope.host_key in shared_hosts:
            alone.append((seed, scope))
        else:
            by_host[scope.host_key].append((seed, scope))
    queries: list[CdxQuery] = []
    for host in sorted(by_host):
        members = sorted(by_host[host], key=lambda m: (m[1].path_prefix, m[0].site_id))
        queries.extend(_plan_host(members, too_big, narrow))
    queries.extend(_single(seed, scope) for seed, scope in alone)
    queries.sort(key=lambda q: (not q.is_group, q.key))
    return queries


def _plan_host(
    members: list[tuple[RefreshSeed, SeedScope]], too_big: Collection[str], narrow: Collection[str]
) -> list[CdxQuery]:
    """Rules 1–3 for the seeds of one host (sorted by path)."""
    if len(members) == 1:
        return [_single(*members[0])]
    host = members[0][1].host_key
    prefix = _common_prefix([scope.path_prefix for _seed, scope in members])
    key = f"{host}){prefix}"
    if key not in too_big:
        return [_group(members, host, prefix, key, key in narrow)]
    # One more character: "/~" into "/~a", "/~b", … (a prefix query matches key prefixes, so
    # each part reads a slice of the range); the longest common prefix guarantees two parts.
    parts: dict[str, list[tuple[RefreshSeed, SeedScope]]] = defaultdict(list)
    for member in members:
        parts[member[1].path_prefix[: len(prefix) + 1]].append(member)
    if len(parts) == 1:  # cannot happen for distinct paths; ask each seed alone
        return [_single(*member) for member in members]
    return [query for part in parts.values() for query in _plan_host(part, too_big, narrow)]


def _common_prefix(paths: list[str]) -> str:
    """The longest string prefix of every path ("" when one path is the whole host)."""
    if any(path == "" for path in paths):
        return ""
    first, last = min(paths), max(paths)
    n = 0
    while n < min(len(first), len(last)) and first[n] == last[n]:
        n += 1
    return first[:n]


def _dotted(host_key: str) -> str:
    host, _, port = host_key.partition(":")
    return ".".join(reversed(host.split(","))) + (f":{port}" if port else "")


def _group(
    members: list[tuple[RefreshSeed, SeedScope]], host: str, prefix: str, key: str, narrow: bool
) -> CdxQuery:
    if narrow:
        stamps = [s.narrow or s.since for s, _scope in members if (s.narrow or s.since)]
    else:
        stamps = [seed.since for seed, _scope in members if seed.since is not None]
    ids = tuple(seed.site_id for seed, _scope in members)
    since = min(stamps, key=lambda s: (s or "").ljust(14, "0")) if stamps else None
    wide = not narrow and since is not None
    if prefix in ("", "/"):
        return CdxQuery(_dotted(host), "host", ids, since, key, wide)
    return CdxQuery(_dotted(host) + prefix, "prefix", ids, since, key, wide)


def _single(seed: RefreshSeed, scope: SeedScope) -> CdxQuery:
    return CdxQuery(scope.cdx_query_url(), "prefix", (seed.site_id,), seed.since, scope.homepage)
