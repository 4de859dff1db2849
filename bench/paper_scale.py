"""What HACS asks of the Internet Archive for a paper-scale collection, before and after issue #26.

``python -m bench.import_cost --paper-scale [--sites 20000] [--sample 500] [--nights 30]``.
It builds the synthetic collection of ``bench.collection`` (``--seed``), serves it from the fake
Internet Archive (``tests.support.ia_server``, on 127.0.0.1, compressing its CDX answers as
the real one does) and measures:

1. **HACS itself, on a sample.** ``--sample`` seeds drawn from the collection go through the
   real commands in a throw-away SQLite database: ``import_seeds``, a first ``import_archive``
   (one query per seed, its whole history), then on each of the first ``SAMPLE_NIGHTS`` nights
   the archive indexes that night's captures and the sites holding captures from it are
   refreshed with ``import_archive`` (grouped by host, sized, audited; no budget: the budget is
   the nightly job's). Requests, bytes and mementos are counted at the server; per 1,000 sites
   and for the whole collection they are *extrapolated* from the sample, and labelled so.
   A second, smaller first import (``RATE_CHECK_SEEDS`` seeds, at rates slow enough that the
   rate limits set the pace) times whether HACS's CDX queries and memento fetches add up (in
   series) or overlap (in parallel): its wall time against requests / rate of each kind.
2. **The refresh at full scale, in process.** The fake's own query code (``cdx_answer``)
   answers in this process (no HTTP: thousands of requests a night would take minutes over the
   loopback), with the parameters HACS sends (``ArchiveClient.cdx_query_params``), resume keys
   followed. The state after a first import comes from every seed's whole-history query; then
   each night, three refreshes run side by side on the same archive:

   * **budget** (HACS now, the nightly job): ``hacs.formats.queries.plan_queries`` over every
     site holding captures, ``hacs.refresh_budget.choose_queries`` within the budget
     (``default_budget`` less the recall audit's share; a group costs its pages of last time,
     one more when its size is to be asked; ``weight`` None, every site alike: HACS weighs
     sites by tonight's provisional crawl list, ``hacs.refresh_budget.list_weights``, and the
     bench has no estimates to build one), then the import job plans the chosen sites again
     (``archive_import`` → ``refresh_plan``) and runs them with ``defer_splits``
     (``FromArchive(defer_splits=True)``): a group its size finds too big is not asked tonight;
     its sites keep their last check and ``from``, and the next night's plan splits it and the
     choice prices the parts;
   * **every** (HACS now, every site every night: ``import_archive`` by hand, which asks a
     split group's parts at once);
   * **seed** (HACS before: one prefix query per seed from its newest stored capture).

   What "runs" means is ``archive.archive_import`` step for step: a group not sized in
   ``SIZING_EVERY_DAYS`` first sends one ``showNumPages=true&pageSize=1`` request and, when its
   range touches more than ``SIZING_MAX_BLOCKS`` ZipNum blocks, is remembered as too big and
   either left for the next night (budget) or split and asked in parts at once (every, and the
   sample's ``import_archive``); a split groups the seeds by one more character of the group's
   common path prefix (``plan_queries``: ``host/~`` into ``host/~a``, ``host/~b``…); a
   group's answer of more than ``GROUP_MAX_PAGES`` pages or ``GROUP_MAX_ROWS`` rows is
   remembered and split on the next plan (at once when it failed for its size); a share of the
   groups (a hash of day and key, ``_audit_of``) also asks one member's homepage exactly, and a
   host whose group answer lacked captures the exact one had is asked seed by seed afterwards;
   rows go to the member whose scope holds them (longest path, ``SeedScope.contains``/``depth``,
   as ``ScopeIndex``; depth <= 2 stored), the rest are other people's pages; a site's ``from``
   is the newest capture the answer of its last check held (every row, other people's too) or
   its own newest capture, whichever is later, less ``HACS_CDX_INDEX_LAG_DAYS``. The sample's
   night-1 requests, rows and ``from`` are checked against what the server logged for HACS.
3. **What a full pass would have cost grouped** before HACS grouped (the analysis that
   motivated it): by host or by host and path family, every group from its oldest seed's
   ``from``, for the first ``BEFORE_NIGHTS`` nights.

Hours are at the configured rates (``HACS_CDX_RATE_PER_MINUTE``, 24, and
``HACS_MEMENTO_RATE_PER_MINUTE``, 480, by default, or as set in the environment). Mementos of a
refresh at full scale are extrapolated from the sample's, per new capture stored. The first
import fetches contents newest first and estimates a site as soon as those of the daily list's
window are in (``HACS_HISTORY_DAYS``, 1,095 days, before the first import, here the collection's
end): the sample's mementos captured within it, extrapolated, at the memento rate say when.
"""

from __future__ import annotations

import calendar
import gzip
import hashlib
import json
import os
import subprocess
import sys
import time
from collections import deque
from collections.abc import Collection as Container
from collections.abc import Iterable
from dataclasses import dataclass, field, fields
from datetime import UTC, date, datetime, timedelta
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from bench.collection import (
    DAY,
    Collection,
    CollectionSpec,
    Group,
    describe,
    groups,
    timestamp_text,
)

# HACS's settings, read as hacs_site/settings.py reads them (same names, same defaults).
LAG_DAYS = float(os.environ.get("HACS_CDX_INDEX_LAG_DAYS", "30"))
CDX_RATE = float(os.environ.get("HACS_CDX_RATE_PER_MINUTE", "24"))
MEMENTO_RATE = float(os.environ.get("HACS_MEMENTO_RATE_PER_MINUTE", "480"))
PAGE_SIZE = 5_000  # ArchiveConfig.page_size: rows a CDX page
MAX_PAGES = int(os.environ.get("HACS_CDX_MAX_PAGES", "100"))
MAX_CDX_BYTES = 16 * 1024 * 1024  # HACS_MAX_CDX_BYTES
GROUP_MAX_ROWS = int(os.environ.get("HACS_REFRESH_GROUP_MAX_ROWS", "20000"))
GROUP_MAX_PAGES = int(os.environ.get("HACS_REFRESH_GROUP_MAX_PAGES", "4"))
AUDIT_SHARE = float(os.environ.get("HACS_REFRESH_AUDIT_SHARE", "0.05"))
MAX_AGE_DAYS = float(os.environ.get("HACS_REFRESH_MAX_AGE_DAYS", "30"))
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

SAMPLE_NIGHTS = 7  # nights the sample runs through HACS's commands (each takes ~20 s)
BEFORE_NIGHTS = 7  # nights of the "before" tables, as the before figures had
RATE_CHECK_SEEDS = 24  # seeds of the first import timed at slow rates
RATE_CHECK_CDX, RATE_CHECK_MEMENTO = 60.0, 3_000.0  # its rates (a minute): both phases ~25 s

# The nightly refresh's sites, refreshed as ``import_archive`` run by hand refreshes them.
NIGHT_SCRIPT = r"""
import django
django.setup()
from django.core.management import call_command
from archive.models import Site
from operations.refresh import sites_from_archive
urls = Site.objects.filter(pk__in=sites_from_archive()).values_list("seed_url", flat=True)
args = [part for url in urls for part in ("--site", url)]
call_command("import_archive", *args, stdout=open("/dev/null", "w"), stderr=open("/dev/null", "w"))
print(len(urls))
"""

# Captures HACS holds of the sample from the archive, for the recall check.
HELD_SCRIPT = r"""
import django
django.setup()
from archive.models import Capture
print(Capture.objects.filter(source__startswith="cdx:").count())
"""


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
        for name in ("cdx", "cdx_wire", "cdx_raw", "rows", "mementos", "memento_bytes",
                     "sites", "seconds", "other_rows", "cut_short"):  # fmt: skip
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.max_read = max(self.max_read, other.max_read)

    def scaled(self, factor: float) -> Cost:
        result = Cost()
        for name in ("cdx", "cdx_wire", "cdx_raw", "rows", "mementos", "memento_bytes",
                     "sites", "other_rows", "cut_short"):  # fmt: skip
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
    from tests.support.ia_server import cdx_answer

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


class SampleRun:
    """Seeds in a throw-away SQLite database, run through HACS's commands."""

    def __init__(
        self, tmp: Path, archive: Any, redis_url: str, seeds: list[str], *, name: str = "sample",
        rates: tuple[float, float] | None = None,
    ) -> None:  # fmt: skip
        from bench.import_cost import fake_archive_env

        self.archive = archive
        self.env = fake_archive_env(archive, redis_url, tmp / f"{name}.sqlite3")
        if rates is not None:
            self.env["HACS_CDX_RATE_PER_MINUTE"] = f"{rates[0]:g}"
            self.env["HACS_MEMENTO_RATE_PER_MINUTE"] = f"{rates[1]:g}"
        seeds_path = tmp / f"{name}-seeds.txt"
        seeds_path.write_text("\n".join(seeds) + "\n")
        self._run([sys.executable, "manage.py", "migrate", "--verbosity", "0"])
        self._run([sys.executable, "manage.py", "import_seeds", str(seeds_path)])

    def _run(self, command: list[str]) -> str:
        from bench.common import ROOT

        done = subprocess.run(command, env=self.env, cwd=ROOT, capture_output=True, text=True,
                              check=True)  # fmt: skip
        return done.stdout

    def measured(self, command: list[str]) -> Cost:
        """Run ``command`` and count what reached the archive."""
        with self.archive.state.lock:
            self.archive.state.log.clear()
        started = time.perf_counter()
        out = self._run(command)
        cost = Cost(seconds=time.perf_counter() - started)
        sizing = 0
        for entry in self.archive.requests_to("cdx"):
            cost.cdx += 1
            cost.cdx_wire += entry.sent
            cost.cdx_raw += entry.raw
            cost.rows += entry.rows
            cost.cut_short += entry.cut_short
            if entry.query.get("showNumPages") == "true":
                sizing += 1
                continue
            key = (entry.query.get("url"), entry.query.get("matchType"))
            cost.extra.setdefault("from", {})[key] = entry.query.get("from")
        cost.extra["sizing"] = sizing
        web = self.archive.requests_to("web")
        cost.mementos = len(web)
        cost.memento_bytes = sum(e.sent for e in web)
        # Each content is fetched at its first capture: /web/<timestamp>id_/<url>.
        cost.extra["memento stamps"] = [e.path[len("/web/") :].partition("id_/")[0] for e in web]
        cost.extra["out"] = out
        return cost

    def first_import(self) -> Cost:
        return self.measured([sys.executable, "manage.py", "import_archive"])

    def nightly_refresh(self) -> Cost:
        cost = self.measured([sys.executable, "-c", NIGHT_SCRIPT])
        cost.sites = int(cost.extra["out"].strip().splitlines()[-1])
        return cost

    def held(self) -> int:
        return int(self._run([sys.executable, "-c", HELD_SCRIPT]).strip().splitlines()[-1])


def in_scope_visible(collection: Collection, state: Any, client: Any, seeds: list[int]) -> int:
    """Captures the archive now shows in these seeds' scopes (depth <= 2), duplicates once."""
    count = 0
    for index in seeds:
        scope_url = groups(collection, [index], by="seed")[0].url
        cost = query_cost(state, client, scope_url, None, match_type="prefix")
        for urlkey in cost.extra["urlkeys"]:
            page = collection.urlkey_page.get(urlkey)
            if page is not None and collection.page_seed[page] == index:
                count += collection.depth[page] <= 2
    return count


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
        from tests.support.ia_server import cdx_answer

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
        from tests.support.ia_server import cdx_answer

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


def first_import(world: World) -> FirstImport:
    """Every seed's first import (``plan_queries``: a seed with no capture is asked alone, its
    whole history), answered in process."""
    started = time.perf_counter()
    result = FirstImport()
    year_ago = timestamp_text(world.start - int(RATE_WINDOW_DAYS * DAY))
    for seed, scope in enumerate(world.scopes):
        answer = world.ask(scope.cdx_query_url(), None, match_type="prefix")
        result.requests += answer.requests
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
        return Cost(cdx=self.requests, cdx_wire=self.wire, cdx_raw=self.raw, rows=self.rows,
                    sites=self.checked, other_rows=self.other + self.deep,
                    cut_short=self.cut_short, max_read=self.max_read)  # fmt: skip


def total(nights: Iterable[Night]) -> Night:
    result = Night(kept=0)
    for night in nights:
        result.add(night)
    return result


def audit_draw(day: date, key: str) -> float:
    """The recall audit's draw for a group on a day (``archive_import._Run._audit_of``)."""
    return int(hashlib.sha256(f"{day.isoformat()} {key}".encode()).hexdigest()[:8], 16) / 2**32


class Refresher:
    """HACS's refresh of ``sites`` night after night, in process (module docstring, part 2).

    ``mode``: "budget" (the nightly job), "every" (every site every night, grouped) or "seed"
    (before issue 26: one query per seed from its own newest capture). ``sizing`` says whether
    groups are sized before they are asked; ``audit_day`` fixes the audit's day (the sample's
    check uses the day HACS ran); ``wire_nights`` the nights whose answers are gzipped to count
    their bytes; ``watch`` a set of sites whose queries are also tallied apart;
    ``defer_splits`` (by default in "budget" mode, as the nightly job's
    ``FromArchive(defer_splits=True)``) whether a group sizing finds too big waits for the next
    night instead of being asked in parts at once.
    """

    def __init__(
        self, world: World, first: FirstImport, *, mode: str, sites: Iterable[int] | None = None,
        sizing: bool = True, audit_day: date | None = None, wire_nights: int = 0,
        watch: Container[int] = (), defer_splits: bool | None = None,
    ) -> None:  # fmt: skip
        self.world = world
        self.mode = mode
        self.defer_splits = mode == "budget" if defer_splits is None else defer_splits
        self.sites = sorted(first.own if sites is None else sites)
        self.seen = {s: first.seen[s] for s in self.sites}
        self.own = {s: first.own[s] for s in self.sites}
        self.times = {s: set(first.times.get(s, ())) for s in self.sites}
        self.checked = dict.fromkeys(self.sites, world.start)
        self.sizing = sizing
        self.audit_day = audit_day
        self.wire_nights = wire_nights
        self.watch = watch
        self.too_big: set[str] = set()
        self.pages: dict[str, int] = {}  # a group's pages the last time (QueryMemory)
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
        from hacs.formats.queries import SHARED_HOSTS, plan_queries

        return plan_queries(seeds, too_big=self.too_big, shared_hosts=SHARED_HOSTS | self.per_seed)

    def states(self, now: int) -> dict[int, Any]:
        """``refresh_choice``: each site's capture rate over the last year and last check."""
        from hacs.refresh_budget import SiteState, capture_rate

        low = now - int(RATE_WINDOW_DAYS * DAY)
        today = now / DAY
        states = {}
        for site in self.sites:
            days = sorted(t / DAY for t in self.times[site] if t >= low)
            rate = capture_rate(days, today, window_days=RATE_WINDOW_DAYS)
            states[site] = SiteState(site, rate, min(self.checked[site] / DAY, today))
        return states

    def night(self, n: int) -> Night:
        from hacs.formats.queries import CdxQuery, RefreshSeed
        from hacs.refresh_budget import choose_queries, default_budget

        world = self.world
        now = world.start + n * DAY
        tally = Night()
        seeds = {
            s: RefreshSeed(s, world.collection.seeds[s].url, self.since(s)) for s in self.sites
        }
        if self.mode == "seed":
            queries = [
                CdxQuery(world.scopes[s].cdx_query_url(), "prefix", (s,), seed.since,
                         world.scopes[s].homepage)
                for s, seed in seeds.items()
            ]  # fmt: skip
        else:
            queries = self.plan(list(seeds.values()))
        if self.mode == "budget":
            budget = default_budget(CDX_RATE)
            # operations.jobs.nightly_refresh: the audit's exact queries come out of the budget.
            for_queries = max(1, int(budget * (1 - AUDIT_SHARE)))
            # refresh_choice: a group costs its pages of last time, and one request more when
            # its size is to be asked.
            cost = {key: max(1, pages) for key, pages in self.pages.items()}
            for query in queries:
                if query.is_group and self._unsized(query.key, now):
                    cost[query.key] = cost.get(query.key, 1) + 1
            # weight=None: every site alike (HACS weighs them by tonight's provisional list,
            # ``list_weights``; the bench has no estimates to build one).
            choice = choose_queries(
                queries, self.states(now), now=now / DAY, budget=for_queries,
                max_age_days=MAX_AGE_DAYS, cost=cost, weight=None,
            )  # fmt: skip
            tally.waiting = len(choice.left_out)
            tally.due_left = choice.due_left
            tally.kept = int(choice.max_age_kept)
            # The job imports the chosen sites, and the import plans them again.
            queries = self.plan([seeds[s] for s in choice.checked_sites])
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
        self, queries: list[Any], seeds: dict[int, Any], now: int, tally: Night, watched: Night,
        *, wire: bool,
    ) -> None:  # fmt: skip
        from hacs.formats.queries import CdxQuery, plan_queries

        world = self.world
        grouped = self.mode != "seed"
        day = self.audit_day or datetime.fromtimestamp(now, UTC).date()
        pending = deque(queries)
        audits: dict[str, tuple[str, str, frozenset[str]]] = {}
        while pending:
            query = pending.popleft()
            part = watched if all(s in self.watch for s in query.site_ids) else Night()
            is_audit = query.key in audits
            if grouped and query.is_group and not is_audit and self._unsized(query.key, now):
                tally.sizing += 1  # _Run._size and _sized
                part.sizing += 1
                self.sized[query.key] = now
                if world.blocks(query.url, query.match_type) > SIZING_MAX_BLOCKS:
                    self.too_big.add(query.key)
                    tally.splits += 1
                    if self.defer_splits:
                        # _Run._sized with defer_splits: not asked tonight; its sites keep
                        # their last check and ``from``; the next plan splits it.
                        tally.deferred += len(query.site_ids)
                        part.deferred += len(query.site_ids)
                        continue
                    members = [seeds[s] for s in query.site_ids]
                    pending.extendleft(reversed(plan_queries(members, too_big={query.key})))
                    continue
                self.too_big.discard(query.key)
            answer = world.ask(query.url, query.since, match_type=query.match_type, wire=wire)
            if self.audit_day is not None:  # the sample's check compares them with HACS's
                self.sent.append((query.url, query.match_type, query.since))
            for night in (tally, part):
                if is_audit:
                    night.audit += answer.requests
                else:
                    night.queries += 1
                    night.pages += answer.requests - 1
                night.rows += len(answer.rows)
                night.raw += answer.raw
                night.wire += answer.wire
                night.cut_short += answer.cut_short
                night.max_read = max(night.max_read, answer.max_read)
            if is_audit:
                self._audited(audits.pop(query.key), query, answer, now, tally)
                continue
            if grouped and query.is_group:  # _remember
                too_big = (
                    answer.requests > GROUP_MAX_PAGES or len(answer.rows) > GROUP_MAX_ROWS
                    or bool(answer.failure)
                )  # fmt: skip
                self.pages[query.key] = answer.requests
                if too_big:
                    self.too_big.add(query.key)
                else:
                    self.too_big.discard(query.key)
                if too_big and answer.failure:
                    parts = plan_queries([seeds[s] for s in query.site_ids], too_big={query.key})
                    if len(parts) > 1:
                        tally.splits += 1
                        pending.extend(parts)
                        continue
            if answer.failure:
                tally.failed += len(query.site_ids)
                continue
            if grouped and query.is_group and AUDIT_SHARE > 0:  # _audit_of
                draw = audit_draw(day, query.key)
                if draw < AUDIT_SHARE:
                    site = query.site_ids[int(draw * 2**32) % len(query.site_ids)]
                    scope = world.scopes[site]
                    held = frozenset(t for key, t in answer.rows if key == scope.homepage)
                    audit = CdxQuery(world.collection.seeds[site].url, "exact", (site,),
                                     query.since, f"audit {scope.homepage}")  # fmt: skip
                    audits[audit.key] = (scope.host_key, scope.homepage, held)
                    pending.append(audit)
            for night in (tally, part):
                night.checked += len(query.site_ids)
            self._store(query, answer, now, (tally, part))

    def _audited(
        self, audit: tuple[str, str, frozenset[str]], query: Any, answer: Answer, now: int,
        tally: Night,
    ) -> None:  # fmt: skip
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


# --- The bench ----------------------------------------------------------------------------------


@dataclass
class Shares:
    """The share of new captures each refresh holds after a night, and its recall."""

    night: int
    indexed: int  # in-scope captures made after the first import and indexed by then
    made: int  # ... made by then, indexed or not
    outside: int  # indexed ones of seeds no refresh asks about (no capture at the first import)
    held: dict[str, int]
    recall: dict[str, float]


def run(*, sites: int, sample: int, nights: int, seed: int, redis_url: str, tmp: Path) -> None:
    import redis

    from archive.wayback import ArchiveClient, ArchiveConfig
    from tests.support.ia_server import IAArchive

    started = time.perf_counter()
    collection = Collection(CollectionSpec(seeds=sites, seed=seed))
    history = collection.history_lines()
    count = len(history)
    print(f"Paper-scale collection, {sites:,} seeds (seed {seed}; bench.collection):")
    for line in describe(collection, count):
        print(f"  {line}")
    rng = np.random.default_rng([seed, 26])
    chosen = sorted(rng.choice(len(collection.seeds), size=min(sample, sites), replace=False))
    sample_nights_n = min(nights, SAMPLE_NIGHTS)
    before_nights = min(nights, BEFORE_NIGHTS)
    scoped_history = _scoped_history(collection)
    timings: dict[str, float] = {}
    with IAArchive(gzip=True, body_for=collection.body_for) as archive:
        archive.add_lines(history)
        del history
        config = ArchiveConfig(cdx_url=archive.cdx_url, wayback_url=archive.wayback_url)
        client = ArchiveClient(config, redis.Redis.from_url(redis_url))
        state = archive.state
        timings["built"] = time.perf_counter() - started
        print(f"  (built and served in {timings['built']:,.0f} s)")

        # 1. The sample through HACS's commands; the rate check.
        runner = SampleRun(tmp, archive, redis_url, [collection.seeds[i].url for i in chosen])
        first = runner.first_import()
        first.sites = len(chosen)
        held_first = runner.held()
        archived = [i for i in chosen if collection.seeds[i].archived][:RATE_CHECK_SEEDS]
        rates = (RATE_CHECK_CDX, RATE_CHECK_MEMENTO)
        timed = SampleRun(tmp, archive, redis_url, [collection.seeds[i].url for i in archived],
                          name="rates", rates=rates).first_import()  # fmt: skip

        # 2. The first import in process, then the three refreshes night after night.
        world = World(collection, state, client)
        full_first = first_import(world)
        held_sites = sorted(full_first.own)
        watch = set(chosen)
        refreshers = {
            "budget": Refresher(world, full_first, mode="budget", wire_nights=nights),
            "every": Refresher(world, full_first, mode="every", wire_nights=nights),
            "seed": Refresher(world, full_first, mode="seed", wire_nights=before_nights,
                              watch=watch),
        }  # fmt: skip
        in_process = {name: 0.0 for name in refreshers}
        sample_nights: list[Cost] = []
        before_groups: dict[str, list[Cost]] = {"host": [], "prefix": []}
        checks: list[str] = []
        shares: list[Shares] = []
        indexed: set[tuple[str, str]] = set()
        outside = 0
        sample_held = sample_visible = 0
        refreshed = set(held_sites)
        for night in range(1, nights + 1):
            if night <= before_nights:  # before: every archived seed, from its newest capture
                old = [i for i in range(len(collection.seeds)) if collection.newest[i] > 0]
                since = {i: since_of(collection.newest[i]) for i in old}
            lines = collection.night(night)
            for line in lines:
                urlkey, stamp, _rest = line.split(" ", 2)
                page = collection.urlkey_page[urlkey]
                owner = collection.page_seed[page]
                if owner >= 0 and collection.depth[page] <= 2 and (urlkey, stamp) not in indexed:
                    indexed.add((urlkey, stamp))
                    outside += owner not in refreshed
            archive.add_lines(lines)
            if night <= sample_nights_n:
                sample_nights.append(runner.nightly_refresh())
                if night == 1:
                    checks.append(_check(world, full_first, chosen, sample_nights[0]))
                if night == sample_nights_n:
                    sample_held = runner.held()
                    sample_visible = in_scope_visible(collection, state, client, chosen)
            for name, refresher in refreshers.items():
                clock = time.perf_counter()
                refresher.night(night)
                in_process[name] += time.perf_counter() - clock
            if night <= before_nights:
                clock = time.perf_counter()
                for by, costs in before_groups.items():
                    costs.append(pass_cost(collection, state, client,
                                           groups(collection, old, by=by), since))  # fmt: skip
                in_process["before groups"] = in_process.get("before groups", 0.0) + (
                    time.perf_counter() - clock
                )
            if night in (1, 7, nights):
                made = _made(collection, night)
                shares.append(Shares(
                    night, len(indexed), made, outside,
                    {name: len(r.new & indexed) for name, r in refreshers.items()},
                    {name: (full_first.held + len(r.new & indexed))
                     / (scoped_history + len(indexed)) for name, r in refreshers.items()},
                ))  # fmt: skip
        sample_new = sample_held - held_first
        checks.append(
            f"captures HACS holds of the sample after {sample_nights_n} nights: "
            f"{sample_held:,}; in the sample's scopes in the archive: {sample_visible:,} "
            f"({sample_held / max(1, sample_visible):.1%})"
        )
    timings["in process"] = sum(in_process.values())
    _report(
        collection=collection, sites=sites, first=first, timed=timed, rate_seeds=len(archived),
        sample_nights=sample_nights, sample_new=sample_new, full_first=full_first,
        refreshers=refreshers, before_groups=before_groups, before_nights=before_nights,
        shares=shares, checks=checks, held_sites=len(held_sites), scoped_history=scoped_history,
    )  # fmt: skip
    sample_seconds = sum(c.seconds for c in sample_nights)
    print(
        f"(seed {seed}; {time.perf_counter() - started:,.0f} s in all: collection built and "
        f"served {timings['built']:,.0f} s, the sample's first import {first.seconds:,.0f} s, "
        f"the rate check {timed.seconds:,.0f} s, the sample's nights {sample_seconds:,.0f} s, "
        f"the first import in process {full_first.seconds:,.0f} s, the refreshes in process "
        + ", ".join(f"{name} {sec:,.0f} s" for name, sec in in_process.items())
        + ")"
    )


def _scoped_history(collection: Collection) -> int:
    """Distinct in-scope captures (seeds' own pages, depth <= 2) the archive holds at the
    first import."""
    pages, seconds = collection.history
    scoped = (np.asarray(collection.page_seed)[pages] >= 0) & (
        np.asarray(collection.depth)[pages] <= 2
    )
    return len(np.unique(pages[scoped] << 40 | seconds[scoped]))


def _made(collection: Collection, night: int) -> int:
    """In-scope captures made on nights 1..``night``, indexed or not."""
    seeds, depth = np.asarray(collection.page_seed), np.asarray(collection.depth)
    made = 0
    for pages, _seconds in collection._night_times[:night]:
        made += int(((seeds[pages] >= 0) & (depth[pages] <= 2)).sum())
    return made


def _check(world: World, first: FirstImport, chosen: list[int], measured: Cost) -> str:
    """Whether the in-process plan of the sample's night-1 refresh sends what HACS sent."""
    mine = [i for i in chosen if i in first.own]
    sizing = measured.extra.get("sizing", 0) > 0
    today = datetime.now(UTC).date()
    refresher = Refresher(world, first, mode="every", sites=mine, sizing=sizing, audit_day=today)
    night = refresher.night(1)
    sent = measured.extra.get("from", {})
    same = sum(sent.get((url, kind), "missing") == since for url, kind, since in refresher.sent)
    return (
        f"the sample's night-1 refresh of {len(mine):,} sites, planned in process as HACS plans "
        f"it: {night.requests:,} requests ({night.queries:,} queries, {night.pages:,} more "
        f"pages, {night.sizing:,} sizing, {night.audit:,} audit), {night.rows:,} rows; the "
        f"server logged {measured.cdx:,.0f} requests ({measured.extra.get('sizing', 0):,} "
        f"sizing) and {measured.rows:,.0f} rows; HACS's 'from' equals the bench's for "
        f"{same:,} of the {len(refresher.sent):,} queries"
        + ("" if sizing else " (HACS sent no sizing request, so none was counted here)")
    )


# --- The report -------------------------------------------------------------------------------

HEAD = (
    f"  {'':<48} {'CDX req':>9} {'MB wire':>8} {'MB raw':>8} {'mementos':>10} "
    f"{'CDX h':>7} {'mem. h':>7}"
)


def _row(label: str, cost: Cost, note: str = "") -> str:
    cdx_hours, memento_hours = cost.hours
    return (
        f"  {label:<48} {cost.cdx:>9,.0f} {cost.cdx_wire / 1e6:>8,.1f} {cost.cdx_raw / 1e6:>8,.1f}"
        f" {cost.mementos:>10,.0f} {cdx_hours:>7,.1f} {memento_hours:>7,.1f}"
        + (f"  {note}" if note else "")
    )


def _with_mementos(night: Night, per_capture: float) -> Cost:
    cost = night.cost()
    cost.mementos = night.new * per_capture
    return cost


def _report(
    *, collection: Collection, sites: int, first: Cost, timed: Cost, rate_seeds: int,
    sample_nights: list[Cost], sample_new: int, full_first: FirstImport,
    refreshers: dict[str, Refresher], before_groups: dict[str, list[Cost]], before_nights: int,
    shares: list[Shares], checks: list[str], held_sites: int, scoped_history: int,
) -> None:  # fmt: skip
    size = int(first.sites) or 1
    per_site = 1_000 / size
    whole = sites / size
    week = Cost()
    for cost in sample_nights:
        week.add(cost)
    sample_n = len(sample_nights)
    nights = len(refreshers["budget"].nights)
    # Mementos of a refresh at full scale: the sample's per new capture it stored.
    per_capture = week.mementos / max(1, sample_new)
    seed = refreshers["seed"]
    budget, every = refreshers["budget"], refreshers["every"]
    b_nights = seed.nights[:before_nights]
    w_nights = seed.watched[:before_nights]
    extrapolated = "CDX in process, mementos extrapolated"

    print(f"\nBefore issue 26: one CDX query per seed every night (hours at {CDX_RATE:g} CDX "
          f"requests and {MEMENTO_RATE:g} mementos a minute):")  # fmt: skip
    print(HEAD)
    print(_row(f"first import, sample of {size:,} (measured)", first,
               f"{first.seconds:,.0f} s on this machine"))  # fmt: skip
    print(_row("first import per 1,000 sites (extrapolated)", first.scaled(per_site)))
    print(_row(f"first import, {sites:,} sites (extrapolated)", first.scaled(whole)))
    label = f"nightly refresh 1, sample: {w_nights[0].checked:,} sites"
    print(_row(label, _with_mementos(w_nights[0], per_capture), "in process (*)"))
    print(_row(f"{before_nights} nights, sample", _with_mementos(total(w_nights), per_capture),
               "in process (*)"))  # fmt: skip
    print(_row(f"nightly refresh 1, {b_nights[0].checked:,} sites",
               _with_mementos(b_nights[0], per_capture), extrapolated))  # fmt: skip
    print(_row(f"{before_nights} nights, {b_nights[0].checked:,} sites",
               _with_mementos(total(b_nights), per_capture), extrapolated))  # fmt: skip
    print("  (*) HACS now groups, so the sample's per-seed nights are counted in process; "
          "the issue's before run\n      checked that count against the server's log: "
          "equal.")  # fmt: skip

    print(f"\nA full pass grouped, as it would have cost before HACS grouped (the seeds' "
          f"own 'from', each group from its oldest; night 1, then {before_nights} "
          "nights):")  # fmt: skip
    rows = [("per seed (before)", [n.cost() for n in b_nights])]
    rows += [("one query a host", before_groups["host"]),
             ("one query a host and path family", before_groups["prefix"])]  # fmt: skip
    for label, costs in rows:
        one = costs[0]
        all_nights = Cost()
        for cost in costs:
            all_nights.add(cost)
        print(f"  {label:<34} night 1: {one.cdx:>6,.0f} requests "
              f"({one.cdx / CDX_RATE / 60:,.1f} h), {one.cdx_wire / 1e6:,.1f} MB, "
              f"{one.rows:,.0f} rows of which {one.other_rows:,.0f} thrown away, "
              f"{one.cut_short:,.0f} cut short by the read cap (one request read at most "
              f"{one.max_read:,} lines); {before_nights} nights: {all_nights.cdx:,.0f} requests, "
              f"{all_nights.cdx_wire / 1e6:,.1f} MB")  # fmt: skip

    print(f"\nAfter: HACS now (grouped by host, sized, audited; the nightly job within "
          f"{_budget()} requests):")  # fmt: skip
    print(HEAD)
    print(_row(f"first import, sample of {size:,} (measured)", first,
               f"{first.seconds:,.0f} s on this machine (one query a seed, as "
               "before)"))  # fmt: skip
    print(_row("first import per 1,000 sites (extrapolated)", first.scaled(per_site)))
    print(_row(f"first import, {sites:,} sites (extrapolated)", first.scaled(whole)))
    full = Cost(cdx=full_first.requests, cdx_raw=full_first.raw,
                mementos=first.mementos * whole)  # fmt: skip
    print(_row(f"first import, {sites:,} sites", full, "CDX in process (no MB wire), "
               "mementos extrapolated"))  # fmt: skip
    print(_row(f"nightly refresh 1, sample: {sample_nights[0].sites:,.0f} sites (meas.)",
               sample_nights[0], "import_archive, every site, no budget"))  # fmt: skip
    print(_row(f"{sample_n} nights, sample (measured)", week))
    spans = {1: "nightly refresh 1"}
    for span in (min(7, nights), nights):
        spans.setdefault(span, f"{span} nights")
    for span, label in spans.items():
        night = total(budget.nights[:span])
        label = f"{label}, {held_sites:,} sites, budget"
        print(_row(label, _with_mementos(night, per_capture), extrapolated))
    print(_row("a full pass after grouping (night 1, no budget)",
               _with_mementos(every.nights[0], per_capture), extrapolated))  # fmt: skip
    print(_row(f"{nights} nights, every site every night, grouped",
               _with_mementos(total(every.nights), per_capture), extrapolated))  # fmt: skip

    print(f"\nThe nightly refresh with its budget, {held_sites:,} sites, in process:")
    print(f"  {'':<22} {'CDX req':>8} {'queries':>8} {'pages':>6} {'sizing':>6} {'audit':>6} "
          f"{'hours':>6} {'rows read':>10} {'others':>8} {'cut':>4} {'checked':>8} "
          f"{'waiting':>8} {'deferred':>8} {'max age':>8}")  # fmt: skip
    picks = [(f"night {n}", budget.nights[n - 1]) for n in (1, 7, nights) if n <= nights]
    picks = list(dict(picks).items())
    picks.append((f"all {nights} nights", total(budget.nights)))
    picks.append(("full pass, night 1", every.nights[0]))
    picks.append((f"every night, {nights} nights", total(every.nights)))
    for label, night in picks:
        kept = (
            ("yes" if night.kept else f"no ({night.due_left:,})")
            if not label.startswith(("all", "every", "full"))
            else (f"{night.kept}/{nights}" if label.startswith("all") else "-")
        )
        waiting = "-" if label.startswith(("every", "full")) else f"{night.waiting:,}"
        deferred = "-" if label.startswith(("every", "full")) else f"{night.deferred:,}"
        print(f"  {label:<22} {night.requests:>8,} {night.queries:>8,} {night.pages:>6,} "
              f"{night.sizing:>6,} {night.audit:>6,} {night.requests / CDX_RATE / 60:>6,.2f} "
              f"{night.rows:>10,} {night.other:>8,} {night.cut_short:>4,} {night.checked:>8,} "
              f"{waiting:>8} {deferred:>8} {kept:>8}")  # fmt: skip
    worst = max(budget.nights, key=lambda n: n.requests)
    print(f"  most requests in one night: {worst.requests:,} (night "
          f"{budget.nights.index(worst) + 1}); groups split: {total(budget.nights).splits:,}; "
          f"hosts asked seed by seed after an audit: {len(budget.per_seed):,}; one request "
          f"read at most {total(budget.nights).max_read:,} index lines")  # fmt: skip
    from hacs.refresh_budget import default_budget

    limit = default_budget(CDX_RATE)
    over = [(n, night) for n, night in enumerate(budget.nights, 1) if night.requests > limit]
    print(f"  nights over the budget of {limit:,} requests: "
          + (", ".join(f"{n} ({night.requests:,}: {night.sizing:,} sizing, {night.audit:,} "
                       f"audit)" for n, night in over) or "none"))  # fmt: skip
    deferring = [(n, night.deferred) for n, night in enumerate(budget.nights, 1) if night.deferred]
    print("  sites whose group sizing found too big, left for the next night ('deferred'): "
          + (", ".join(f"night {n}: {d:,}" for n, d in deferring) or "none"))  # fmt: skip
    broken = [(n, night.due_left) for n, night in enumerate(budget.nights, 1) if not night.kept]
    print("  nights the max age was not kept (due sites waiting): "
          + (", ".join(f"{n} ({d:,})" for n, d in broken) or "none"))  # fmt: skip
    print("  per night (requests): "
          + " ".join(f"{night.requests:,}" for night in budget.nights))  # fmt: skip

    print("\nShare of new captures in HACS (seeds' own pages, depth <= 2, made after the first "
          "import and indexed by then):")  # fmt: skip
    print(f"  {'':<44}" + "".join(f"{'night ' + str(s.night):>14}" for s in shares))
    print(f"  {'new captures the archive indexed':<44}"
          + "".join(f"{s.indexed:>14,}" for s in shares))  # fmt: skip
    print(f"  {'  (made, indexed or not)':<44}" + "".join(f"{s.made:>14,}" for s in shares))
    print(f"  {'  (of seeds with no capture at first import)':<44}"
          + "".join(f"{s.outside:>14,}" for s in shares))  # fmt: skip
    for name, label in (("budget", "(a) the budgeted nightly refresh"),
                        ("every", "(b) every seed every night, grouped"),
                        ("seed", "(c) per seed every night (before)")):  # fmt: skip
        print(f"  {label:<44}"
              + "".join(f"{s.held[name] / max(1, s.indexed):>14.1%}" for s in shares))  # fmt: skip
    print("  capture recall against everything in the archive (first import's captures too):")
    for name, label in (("budget", "(a)"), ("every", "(b)"), ("seed", "(c)")):
        print(f"  {'  ' + label:<44}" + "".join(f"{s.recall[name]:>14.2%}" for s in shares))
    print(f"  (the first import stored {full_first.held:,} of the {scoped_history:,} in-scope "
          f"captures the archive held: {full_first.held / scoped_history:.2%})")  # fmt: skip

    _report_first_import(first, timed, rate_seeds, per_site, whole, sites, collection.end_s)

    print("\nChecks:")
    for line in checks:
        print(f"  {line}")
    print(f"  new captures stored for the sample in {sample_n} nights: {sample_new:,} by HACS, "
          f"{total(seed.watched[:sample_n]).new:,} in process (per seed)")  # fmt: skip
    print(f"  mementos a new capture (the sample's {sample_n} nights): {week.mementos:,.0f} "
          f"fetched for {sample_new:,} captures stored = {per_capture:.2f}")  # fmt: skip


def _budget() -> str:
    from hacs.refresh_budget import default_budget

    budget = default_budget(CDX_RATE)
    queries = max(1, int(budget * (1 - AUDIT_SHARE)))
    return f"{budget:,} ({queries:,} for queries, the rest for audits)"


def _report_first_import(
    first: Cost, timed: Cost, rate_seeds: int, per_site: float, whole: float, sites: int,
    end: int,
) -> None:  # fmt: skip
    """A first import at the documented rates, whether its phases add up or overlap, and when
    the daily list's window is in (contents go newest first, so those captured within
    ``HISTORY_DAYS`` of the first import come before any older one)."""
    cdx_s = timed.cdx / RATE_CHECK_CDX * 60
    mem_s = timed.mementos / RATE_CHECK_MEMENTO * 60
    series, parallel = cdx_s + mem_s, max(cdx_s, mem_s)
    holds = "in series" if abs(timed.seconds - series) < abs(timed.seconds - parallel) else (
        "in parallel")  # fmt: skip
    print(f"\nA first import at the documented rates ({CDX_RATE:g} CDX requests and "
          f"{MEMENTO_RATE:g} mementos a minute):")  # fmt: skip
    print(f"  {'':<16} {'CDX req':>9} {'mementos':>10} {'CDX h':>7} {'mem. h':>7} "
          f"{'in series h':>12} {'in parallel h':>14}")  # fmt: skip
    for label, factor in (("per 1,000 sites", per_site), (f"{sites:,} sites", whole)):
        cost = first.scaled(factor)
        cdx_h, mem_h = cost.hours
        print(f"  {label:<16} {cost.cdx:>9,.0f} {cost.mementos:>10,.0f} {cdx_h:>7,.1f} "
              f"{mem_h:>7,.1f} {cdx_h + mem_h:>12,.1f} {max(cdx_h, mem_h):>14,.1f}")  # fmt: skip
    cost = first.scaled(whole)
    cdx_h, mem_h = cost.hours
    wall = cdx_h + mem_h if holds == "in series" else max(cdx_h, mem_h)
    print(f"  which holds, timed on {rate_seeds} of the sample's archived seeds at "
          f"{RATE_CHECK_CDX:g} CDX requests and {RATE_CHECK_MEMENTO:g} mementos a minute: "
          f"{timed.cdx:,.0f} CDX requests ({cdx_s:,.0f} s at that rate) and "
          f"{timed.mementos:,.0f} mementos ({mem_s:,.0f} s): the import took "
          f"{timed.seconds:,.0f} s, against {series:,.0f} s in series and {parallel:,.0f} s in "
          f"parallel: {holds} holds")  # fmt: skip
    print(f"  a first import of {sites:,} sites takes ~{wall:,.1f} h at these rates: it "
          f"{'fits' if wall <= 24 else 'does not fit'} in 24 h")  # fmt: skip
    horizon = timestamp_text(end - HISTORY_DAYS * DAY)
    stamps = first.extra.get("memento stamps", [])
    recent = sum(stamp >= horizon for stamp in stamps)
    years = HISTORY_DAYS / 365
    window = f"{years:g}-year" if years == int(years) else f"{HISTORY_DAYS:,}-day"
    print(f"  the daily list's window (HACS_HISTORY_DAYS {HISTORY_DAYS:,}: contents first "
          f"captured from {horizon[:4]}-{horizon[4:6]}-{horizon[6:8]}, the first import being "
          f"the collection's end): {recent:,} of the sample's {len(stamps):,} mementos, "
          "measured through HACS, extrapolated:")  # fmt: skip
    for label, factor in (("per 1,000 sites", per_site), (f"{sites:,} sites", whole)):
        hours = recent * factor / MEMENTO_RATE / 60
        print(f"  {label:<16} the daily list's {window} window is in after ~{hours:,.1f} h "
              f"({recent * factor:,.0f} of {len(stamps) * factor:,.0f} mementos, "
              f"{100 * recent / max(1, len(stamps)):.1f} %)")  # fmt: skip
