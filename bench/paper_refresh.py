"""The nightly refresh at paper scale, in process, as HACS runs it (for ``bench.paper_scale``).

The settings HACS reads, what one CDX query costs answered by the fake Internet Archive's own
query code (``testbed.ia_server.cdx_answer``), and the refresh mirrored step by step from
``archive.archive_import`` and ``operations.refresh`` on HACS's pure functions
(``plan_queries``, ``choose_queries``, ``capture_rate``). ``bench.paper_scale`` runs it and
prints the tables."""

from __future__ import annotations

import calendar
import gzip
import json
import os
import time
from collections import deque
from collections.abc import Collection as Container
from collections.abc import Iterable
from dataclasses import dataclass, field, fields
from datetime import UTC, date, datetime, timedelta
from functools import lru_cache
from typing import Any

from bench.collection import DAY, Collection, Group, timestamp_text
from hacs import defaults
from hacs.formats.queries import SHARED_HOSTS, CdxQuery, RefreshSeed, group_too_big, plan_queries
from hacs.refresh_budget import audit_draw

# HACS's settings, read as hacs_site/settings.py reads them (same names, same defaults).

LAG_DAYS = float(os.environ.get("HACS_CDX_INDEX_LAG_DAYS", "30"))
CDX_RATE = float(os.environ.get("HACS_CDX_RATE_PER_MINUTE", "24"))
MEMENTO_RATE = float(os.environ.get("HACS_MEMENTO_RATE_PER_MINUTE", "480"))
PAGE_SIZE = 5_000  # ArchiveConfig.page_size: rows a CDX page
MAX_PAGES = int(os.environ.get("HACS_CDX_MAX_PAGES", "100"))
MAX_CDX_BYTES = 16 * 1024 * 1024  # HACS_MAX_CDX_BYTES
GROUP_MAX_ROWS = int(os.environ.get("HACS_REFRESH_GROUP_MAX_ROWS", defaults.GROUP_MAX_ROWS))
GROUP_MAX_PAGES = int(os.environ.get("HACS_REFRESH_GROUP_MAX_PAGES", defaults.GROUP_MAX_PAGES))
AUDIT_SHARE = float(os.environ.get("HACS_REFRESH_AUDIT_SHARE", defaults.AUDIT_SHARE))
MAX_AGE_DAYS = float(os.environ.get("HACS_REFRESH_MAX_AGE_DAYS", defaults.REFRESH_MAX_AGE_DAYS))
RATE_WINDOW_DAYS = 365.0  # operations.refresh.RATE_WINDOW_DAYS
# The daily list's history window (hacs.defaults.HISTORY_DAYS, three years): a first import
# fetches contents newest first and estimates a site as soon as those of this window are in
# (``archive_import._Run._estimate_early``).
HISTORY_DAYS = int(os.environ.get("HACS_HISTORY_DAYS", "1095"))
# The sizing request before a group is first asked (issue 26: the server reads at most 150,000
# index lines a query, ``from`` does not narrow that read, and it cuts an answer short with no
# resume key): a group over this many ZipNum blocks (~3,000 lines each) is split first (0: no
# sizing); a size is asked again after SIZING_EVERY_DAYS (archive_import.SIZE_MAX_AGE).
SIZING_MAX_BLOCKS = int(os.environ.get("HACS_REFRESH_GROUP_MAX_BLOCKS", "30"))
SIZING_EVERY_DAYS = 30


#: The figures of a ``Cost`` that add up over runs (``max_read`` is their largest).
_SUMMED = (
    "cdx",
    "cdx_wire",
    "cdx_raw",
    "rows",
    "mementos",
    "memento_bytes",
    "sites",
    "seconds",
    "other_rows",
    "cut_short",
)


@dataclass
class Cost:
    """What a run asks of the archive."""

    cdx: float = 0
    cdx_wire: float = 0  # bytes as sent (gzip)
    cdx_raw: float = 0
    rows: float = 0
    mementos: float = 0
    memento_bytes: float = 0
    sites: float = 0
    seconds: float = 0.0
    other_rows: float = 0  # rows of pages no refreshed seed holds (read, then thrown away)
    cut_short: float = 0  # queries the read cap ended without a resume key
    max_read: int = 0  # the most index lines one request read (the read cap counts them)
    extra: dict[str, Any] = field(default_factory=dict)

    def add(self, other: Cost) -> None:
        for name in _SUMMED:
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.max_read = max(self.max_read, other.max_read)

    def scaled(self, factor: float) -> Cost:
        result = Cost()
        for name in _SUMMED:
            if name == "seconds":  # a time is not scaled
                continue
            setattr(result, name, getattr(self, name) * factor)
        return result

    @property
    def hours(self) -> tuple[float, float]:
        return self.cdx / CDX_RATE / 60, self.mementos / MEMENTO_RATE / 60


def since_of(seconds: int) -> str:
    """HACS's ``from``: a moment less the index lag (``archive_import.refresh_seeds``)."""
    moment = datetime.fromtimestamp(int(seconds), UTC) - timedelta(days=LAG_DAYS)
    return timestamp_text(int(moment.timestamp()))


def seconds_of(stamp: str) -> int:
    """Seconds since 1970 of a 14-digit timestamp."""
    parts = (stamp[0:4], stamp[4:6], stamp[6:8], stamp[8:10], stamp[10:12], stamp[12:14])
    return calendar.timegm(tuple(int(p) for p in parts))


@lru_cache(maxsize=65_536)
def since_of_stamp(stamp: str) -> str:
    return since_of(seconds_of(stamp))


def query_cost(state: Any, client: Any, url: str, since: str | None, *, match_type: str) -> Cost:
    """One query followed through its resume keys as HACS follows them, answered in process."""
    from testbed.ia_server import cdx_answer

    cost = Cost()
    key: str | None = None
    for _ in range(MAX_PAGES):
        params = client.cdx_query_params(url, key, since)
        params["matchType"] = match_type
        answer = cdx_answer(state, params)
        cost.cdx += 1
        cost.cdx_raw += len(answer.body)
        cost.cdx_wire += len(gzip.compress(answer.body, 6))
        cost.rows += answer.rows
        cost.cut_short += answer.cut_short
        cost.max_read = max(cost.max_read, answer.read)
        rows = json.loads(answer.body) if answer.body else []
        cost.extra.setdefault("urlkeys", []).extend(row[0] for row in rows[1:] if len(row) > 1)
        if len(rows) < 2 or rows[-2] != []:
            break
        key = rows[-1][0]
    return cost


def pass_cost(
    collection: Collection, state: Any, client: Any, plan: list[Group], since: dict[int, str]
) -> Cost:
    """A refresh of the groups in ``plan``, each from its oldest seed's ``from`` (before)."""
    urlkey_page = collection.urlkey_page
    total = Cost()
    for group in plan:
        oldest = min(since[s] for s in group.seeds)
        cost = query_cost(state, client, group.url, oldest, match_type=group.match_type)
        members = set(group.seeds)
        for urlkey in cost.extra.pop("urlkeys", []):
            page = urlkey_page.get(urlkey)
            if page is None or collection.page_seed[page] not in members:
                cost.other_rows += 1
            elif collection.depth[page] > 2:
                cost.other_rows += 1
        cost.sites = len(group.seeds)
        total.add(cost)
    return total


# --- The refresh in process, as HACS runs it ----------------------------------------------------


@dataclass
class Answer:
    """One query's answer, every page of it: its rows as (urlkey, timestamp)."""

    rows: list[tuple[str, str]] = field(default_factory=list)
    requests: int = 0
    raw: int = 0
    wire: int = 0
    cut_short: int = 0
    max_read: int = 0
    failure: str = ""  # a query HACS gives up on (its words, as ``_too_big_failure`` reads them)


@dataclass
class GroupMemory:
    """What HACS's ``QueryMemory`` keeps of the host groups between nights, in memory: the pages
    each took, those too big to ask as one (split on their next plan) and when each was last
    asked wide. ``remember`` is ``archive.archive_import._Run._remember`` on an answer."""

    pages: dict[str, int] = field(default_factory=dict)
    too_big: set[str] = field(default_factory=set)
    wide_at: dict[str, int] = field(default_factory=dict)

    def remember(self, query: Any, answer: Answer, now: int) -> bool:
        """Record ``query``'s answer; True when the group must split at once (it was too big
        and failed for its size)."""
        too_big = group_too_big(
            pages=answer.requests,
            rows=len(answer.rows),
            failed_for_size=bool(answer.failure),
            max_pages=GROUP_MAX_PAGES,
            max_rows=GROUP_MAX_ROWS,
        )
        self.pages[query.key] = answer.requests
        if too_big:
            self.too_big.add(query.key)
        else:
            self.too_big.discard(query.key)
        if getattr(query, "wide", False) and not answer.failure:
            self.wide_at[query.key] = now
        return too_big and bool(answer.failure)


class World:
    """The collection, the fake archive's state and a client: what every refresh shares."""

    def __init__(self, collection: Collection, state: Any, client: Any) -> None:
        from hacs.formats.canon import SeedScope

        self.collection = collection
        self.state = state
        self.client = client
        self.scopes = [SeedScope.from_url(seed.url) for seed in collection.seeds]
        self.by_prefix: dict[tuple[str, str], list[int]] = {}
        for index, scope in enumerate(self.scopes):
            self.by_prefix.setdefault((scope.host_key, scope.path_prefix), []).append(index)
        self._owners: dict[str, tuple[tuple[int, int], ...]] = {}
        self.start = collection.end_s  # the first import's moment
        self.start_stamp = timestamp_text(self.start)

    def owners(self, urlkey: str) -> tuple[tuple[int, int], ...]:
        """Every seed whose scope holds the urlkey, with its depth, longest path first
        (``ScopeIndex.match`` keeps the first of these that is in the query). A scope holding a
        urlkey has a path prefix ending where the urlkey's path has a "/" (or ends), so only
        those prefixes are looked up; ``SeedScope.contains`` and ``depth`` decide."""
        found = self._owners.get(urlkey)
        if found is not None:
            return found
        host, _, path = urlkey.partition(")")
        ends = [0, *(i for i, char in enumerate(path) if char == "/" and i > 0), len(path)]
        candidates: list[tuple[int, int, int]] = []
        for end in dict.fromkeys(ends):
            for seed in self.by_prefix.get((host, path[:end]), ()):
                scope = self.scopes[seed]
                if scope.contains(urlkey):
                    candidates.append((-len(scope.path_prefix), seed, scope.depth(urlkey)))
        found = tuple((seed, depth) for _length, seed, depth in sorted(candidates))
        self._owners[urlkey] = found
        return found

    def owner(self, urlkey: str, members: Container[int]) -> tuple[int, int] | None:
        for seed, depth in self.owners(urlkey):
            if seed in members:
                return seed, depth
        return None

    def ask(self, url: str, since: str | None, *, match_type: str, wire: bool = False) -> Answer:
        """A query followed through its resume keys as ``ArchiveClient.cdx_pages`` follows
        them (at most ``MAX_PAGES`` pages and ``MAX_CDX_BYTES`` bytes), answered in process."""
        from testbed.ia_server import cdx_answer

        answer = Answer()
        key: str | None = None
        for _ in range(MAX_PAGES):
            params = self.client.cdx_query_params(url, key, since, match_type=match_type)
            reply = cdx_answer(self.state, params)
            answer.requests += 1
            answer.raw += len(reply.body)
            if wire:
                answer.wire += len(gzip.compress(reply.body, 6))
            answer.cut_short += reply.cut_short
            answer.max_read = max(answer.max_read, reply.read)
            if answer.raw > MAX_CDX_BYTES:
                answer.failure = "passed HACS_MAX_CDX_BYTES"
                return answer
            rows = json.loads(reply.body) if reply.body else []
            keyed = len(rows) >= 2 and rows[-2] == []
            answer.rows.extend((row[0], row[1]) for row in (rows[1:-2] if keyed else rows[1:]))
            if not keyed:
                return answer
            key = rows[-1][0]
        answer.failure = "kept sending more pages"
        return answer

    def blocks(self, url: str, match_type: str) -> int:
        """The sizing request: ZipNum blocks the query's key range touches."""
        from testbed.ia_server import cdx_answer

        params = {"url": url, "matchType": match_type, "showNumPages": "true", "pageSize": "1"}
        return int(cdx_answer(self.state, params).body)


@dataclass
class FirstImport:
    """What HACS holds after a first import: every seed's whole history, asked alone."""

    requests: int = 0
    rows: int = 0
    raw: int = 0
    seen: dict[int, str] = field(default_factory=dict)  # newest row of its answer (newest_seen)
    own: dict[int, str] = field(default_factory=dict)  # its newest stored (in-scope) capture
    times: dict[int, set[int]] = field(default_factory=dict)  # stored capture times, last year
    held: int = 0  # distinct in-scope captures stored
    seconds: float = 0.0
    most_pages: int = 0  # the most pages one seed's query took
    older: set[int] = field(default_factory=set)  # sites holding a capture older than a year


def first_import(world: World) -> FirstImport:
    """Every seed's first import (``plan_queries``: a seed with no capture is asked alone, its
    whole history), answered in process."""
    started = time.perf_counter()
    result = FirstImport()
    year_ago = timestamp_text(world.start - int(RATE_WINDOW_DAYS * DAY))
    for seed, scope in enumerate(world.scopes):
        answer = world.ask(scope.cdx_query_url(), None, match_type="prefix")
        result.requests += answer.requests
        result.most_pages = max(result.most_pages, answer.requests)
        result.rows += len(answer.rows)
        result.raw += answer.raw
        if not answer.rows:
            continue
        result.seen[seed] = max(stamp for _key, stamp in answer.rows)
        mine = {seed}
        stored = set()
        for row in answer.rows:
            found = world.owner(row[0], mine)
            if found is not None and found[1] <= 2:
                stored.add(row)
        if stored:
            result.own[seed] = max(stamp for _key, stamp in stored)
            result.held += len(stored)
            recent = (seconds_of(stamp) for _key, stamp in stored if stamp >= year_ago)
            result.times[seed] = set(recent)
            if min(stamp for _key, stamp in stored) < year_ago:
                result.older.add(seed)
    result.seconds = time.perf_counter() - started
    return result


@dataclass
class Night:
    """One night of one refresh (or a sum of nights)."""

    queries: int = 0  # first requests of the queries asked
    pages: int = 0  # further pages (resume keys)
    sizing: int = 0  # showNumPages requests
    audit: int = 0  # the recall audit's exact queries (all their pages)
    rows: int = 0  # rows received
    other: int = 0  # rows under no seed of their query: other people's pages, dropped
    deep: int = 0  # rows deeper than 2 below a seed, dropped
    cut_short: int = 0  # answers the read cap ended without a resume key
    max_read: int = 0
    raw: int = 0
    wire: int = 0
    checked: int = 0  # sites whose query was answered
    failed: int = 0  # sites whose query failed
    waiting: int = 0  # sites left for the budget
    due_left: int = 0  # sites checked MAX_AGE_DAYS ago or more left waiting
    kept: int = 1  # nights the max age was kept
    splits: int = 0  # groups split before being asked (sizing) or at once (failed too big)
    deferred: int = 0  # sites of groups sizing found too big, left for the next night
    new: int = 0  # captures stored that HACS did not hold

    @property
    def requests(self) -> int:
        return self.queries + self.pages + self.sizing + self.audit

    def add(self, other: Night) -> None:
        for item in fields(self):
            name = item.name
            if name == "max_read":
                self.max_read = max(self.max_read, other.max_read)
            else:
                setattr(self, name, getattr(self, name) + getattr(other, name))

    def cost(self) -> Cost:
        # Thrown away as ``pass_cost`` counts it: other people's pages and deeper ones.
        return Cost(
            cdx=self.requests,
            cdx_wire=self.wire,
            cdx_raw=self.raw,
            rows=self.rows,
            sites=self.checked,
            other_rows=self.other + self.deep,
            cut_short=self.cut_short,
            max_read=self.max_read,
        )


def total(nights: Iterable[Night]) -> Night:
    result = Night(kept=0)
    for night in nights:
        result.add(night)
    return result


@dataclass
class _Pass:
    """One night's run of the queries (``archive_import._Run``): the seeds, what is left to
    ask, the audits under way and the tallies."""

    seeds: dict[int, Any]
    now: int
    day: date  # the audit's day
    tally: Night
    watched: Night  # the watched sites' share of the tally
    wire: bool  # whether answers are gzipped to count their bytes
    pending: deque[Any]
    audits: dict[str, tuple[str, str, frozenset[str]]] = field(default_factory=dict)


def _count(answer: Answer, nights: tuple[Night, ...], *, audit: bool) -> None:
    """An answer's requests, rows and bytes, added to each of ``nights``."""
    for night in nights:
        if audit:
            night.audit += answer.requests
        else:
            night.queries += 1
            night.pages += answer.requests - 1
        night.rows += len(answer.rows)
        night.raw += answer.raw
        night.wire += answer.wire
        night.cut_short += answer.cut_short
        night.max_read = max(night.max_read, answer.max_read)


Audit = tuple[str, str, frozenset[str]]  # the host, the homepage, its captures the group held


def audit_of(
    world: World, query: Any, answer: Answer, day: date, share: float
) -> tuple[CdxQuery, Audit] | None:
    """``archive.archive_import._Run._audit_of``: for a share of the group answers (a hash of
    day and key), one member's homepage asked exactly, with what the group's answer held of it."""
    draw = audit_draw(day, query.key)
    if draw >= share:
        return None
    site = query.site_ids[int(draw * 2**32) % len(query.site_ids)]
    scope = world.scopes[site]
    held = frozenset(t for key, t in answer.rows if key == scope.homepage)
    audit = CdxQuery(
        world.collection.seeds[site].url, "exact", (site,), query.since, f"audit {scope.homepage}"
    )
    return audit, (scope.host_key, scope.homepage, held)


class Refresher:
    """HACS's refresh of ``sites`` night after night, in process (module docstring, part 2).

    ``mode``: "every" (every site every night, grouped, as ``import_archive`` by hand) or "seed"
    (before issue 26: one query per seed from its own newest capture). The nightly job within
    its budget is ``bench.shipped_refresh.Shipped``. ``sizing`` says whether
    groups are sized before they are asked; ``audit_day`` fixes the audit's day (the sample's
    check uses the day HACS ran); ``wire_nights`` the nights whose answers are gzipped to count
    their bytes; ``watch`` a set of sites whose queries are also tallied apart;
    ``defer_splits`` (as the nightly job's ``FromArchive(defer_splits=True)``) whether a group
    sizing finds too big waits for the next night instead of being asked in parts at once.
    """

    def __init__(
        self,
        world: World,
        first: FirstImport,
        *,
        mode: str,
        sites: Iterable[int] | None = None,
        sizing: bool = True,
        audit_day: date | None = None,
        wire_nights: int = 0,
        watch: Container[int] = (),
        defer_splits: bool = False,
    ) -> None:
        self.world = world
        self.mode = mode
        if mode not in ("every", "seed"):
            raise ValueError(f"mode must be 'every' or 'seed'; got {mode!r}")
        self.defer_splits = defer_splits
        self.sites = sorted(first.own if sites is None else sites)
        self.seen = {s: first.seen[s] for s in self.sites}
        self.own = {s: first.own[s] for s in self.sites}
        self.times = {s: set(first.times.get(s, ())) for s in self.sites}
        self.checked = dict.fromkeys(self.sites, world.start)
        self.sizing = sizing
        self.audit_day = audit_day
        self.wire_nights = wire_nights
        self.watch = watch
        self.memory = GroupMemory()
        self.sized: dict[str, int] = {}  # when a group was last sized
        self.per_seed: set[str] = set()  # hosts the audit found missing captures
        self.new: set[tuple[str, str]] = set()  # captures made after the first import, held
        self.nights: list[Night] = []
        self.watched: list[Night] = []
        self.sent: list[tuple[str, str, str | None]] = []  # (url, match type, from) asked

    # -- The plan ---------------------------------------------------------------------------
    def since(self, site: int) -> str:
        """``refresh_seeds``: the newest of the last answer's rows and of the site's own
        captures, less the lag; before issue 26, its own newest capture less the lag."""
        own = self.own[site]
        anchor = own if self.mode == "seed" else max(own, self.seen.get(site, own))
        return since_of_stamp(anchor)

    def plan(self, seeds: list[Any]) -> list[Any]:
        shared = SHARED_HOSTS | self.per_seed
        return plan_queries(seeds, too_big=self.memory.too_big, shared_hosts=shared)

    def night(self, n: int) -> Night:
        world = self.world
        now = world.start + n * DAY
        tally = Night()
        seeds = {
            s: RefreshSeed(s, world.collection.seeds[s].url, self.since(s)) for s in self.sites
        }
        if self.mode == "seed":
            queries = [
                CdxQuery(
                    world.scopes[s].cdx_query_url(),
                    "prefix",
                    (s,),
                    seed.since,
                    world.scopes[s].homepage,
                )
                for s, seed in seeds.items()
            ]
        else:
            queries = self.plan(list(seeds.values()))
        watched = Night()
        self._run(queries, seeds, now, tally, watched, wire=n <= self.wire_nights)
        self.nights.append(tally)
        self.watched.append(watched)
        return tally

    def _unsized(self, key: str, now: int) -> bool:
        """``_Run._unsized``: a group never sized, or sized more than ``SIZING_EVERY_DAYS``
        ago."""
        last = self.sized.get(key)
        fresh = last is not None and now - last <= SIZING_EVERY_DAYS * DAY
        return self.sizing and SIZING_MAX_BLOCKS > 0 and not fresh

    # -- The run (archive_import._Run) ----------------------------------------------------
    def _run(
        self,
        queries: list[Any],
        seeds: dict[int, Any],
        now: int,
        tally: Night,
        watched: Night,
        *,
        wire: bool,
    ) -> None:
        day = self.audit_day or datetime.fromtimestamp(now, UTC).date()
        run = _Pass(seeds, now, day, tally, watched, wire, deque(queries))
        while run.pending:
            self._ask(run, run.pending.popleft())

    def _ask(self, run: _Pass, query: Any) -> None:
        """One query of the night: sized first, asked, remembered, audited and stored."""
        part = run.watched if all(s in self.watch for s in query.site_ids) else Night()
        is_audit = query.key in run.audits
        grouped = self.mode != "seed" and query.is_group
        if grouped and not is_audit and self._unsized(query.key, run.now):
            if self._size(run, query, part):
                return
        answer = self.world.ask(query.url, query.since, match_type=query.match_type, wire=run.wire)
        if self.audit_day is not None:  # the sample's check compares them with HACS's
            self.sent.append((query.url, query.match_type, query.since))
        _count(answer, (run.tally, part), audit=is_audit)
        if is_audit:
            self._audited(run.audits.pop(query.key), query, answer, run.now, run.tally)
            return
        if grouped and self._remember(run, query, answer):
            return
        if answer.failure:
            run.tally.failed += len(query.site_ids)
            return
        if grouped and AUDIT_SHARE > 0:
            self._audit_of(run, query, answer)
        for night in (run.tally, part):
            night.checked += len(query.site_ids)
        self._store(query, answer, run.now, (run.tally, part))

    def _size(self, run: _Pass, query: Any, part: Night) -> bool:
        """``_Run._size`` and ``_sized``: the sizing request; True when the group is too big
        to be asked tonight as it is (split and asked in parts at once, or deferred)."""
        run.tally.sizing += 1
        part.sizing += 1
        self.sized[query.key] = run.now
        if self.world.blocks(query.url, query.match_type) <= SIZING_MAX_BLOCKS:
            self.memory.too_big.discard(query.key)
            return False
        self.memory.too_big.add(query.key)
        run.tally.splits += 1
        if self.defer_splits:
            # _Run._sized with defer_splits: not asked tonight; its sites keep their last check
            # and ``from``; the next plan splits it.
            run.tally.deferred += len(query.site_ids)
            part.deferred += len(query.site_ids)
            return True
        members = [run.seeds[s] for s in query.site_ids]
        run.pending.extendleft(reversed(plan_queries(members, too_big={query.key})))
        return True

    def _remember(self, run: _Pass, query: Any, answer: Answer) -> bool:
        """``_remember``: a group's answer too big is split on the next plan, at once when it
        failed for its size (True: its parts are queued)."""
        if self.memory.remember(query, answer, run.now):
            parts = plan_queries([run.seeds[s] for s in query.site_ids], too_big={query.key})
            if len(parts) > 1:
                run.tally.splits += 1
                run.pending.extend(parts)
                return True
        return False

    def _audit_of(self, run: _Pass, query: Any, answer: Answer) -> None:
        """``_audit_of``: a share of the groups also asks one member's homepage exactly."""
        audit = audit_of(self.world, query, answer, run.day, AUDIT_SHARE)
        if audit is not None:
            run.audits[audit[0].key] = audit[1]
            run.pending.append(audit[0])

    def _audited(
        self,
        audit: tuple[str, str, frozenset[str]],
        query: Any,
        answer: Answer,
        now: int,
        tally: Night,
    ) -> None:
        """``_Run._audited``: captures of the homepage the group's answer lacked."""
        host, homepage, held = audit
        if answer.failure:
            return
        exact = {t for key, t in answer.rows if key == homepage}
        if exact - held:
            self.per_seed.add(host)
        self._store(query, answer, now, (Night(),))

    def _store(self, query: Any, answer: Answer, now: int, tallies: tuple[Night, ...]) -> None:
        """``_Run._store_rows``: the rows of the members' scopes stored (depth <= 2), the rest
        counted; every member checked now, its ``newest_seen`` the answer's newest row."""
        world = self.world
        members = set(query.site_ids)
        start = world.start_stamp
        other = deep = new = 0
        for row in answer.rows:
            found = world.owner(row[0], members)
            if found is None:
                other += 1
                continue
            site, depth = found
            if depth > 2:
                deep += 1
                continue
            stamp = row[1]
            if stamp > self.own[site]:
                self.own[site] = stamp
            if stamp >= start and row not in self.new:
                self.new.add(row)
                self.times[site].add(seconds_of(stamp))
                new += 1
        for night in tallies:
            night.other += other
            night.deep += deep
            night.new += new
        newest = max((stamp for _key, stamp in answer.rows), default=None)
        for site in query.site_ids:
            self.checked[site] = now
            if newest is not None and newest > self.seen.get(site, ""):
                self.seen[site] = newest
