"""What HACS asks of the Internet Archive for a paper-scale collection, before and after issue #26.

``python -m bench.import_cost --paper-scale [--sites 20000] [--sample 500] [--nights 30]``.
It builds the synthetic collection of ``bench.collection`` (``--seed``), serves it from the fake
Internet Archive (``testbed.ia_server``, on 127.0.0.1, compressing its CDX answers as
the real one does) and measures:

1. **HACS itself, on a sample.** ``--sample`` seeds drawn from the collection go through the
   real commands in a throw-away SQLite database: ``import_seeds``, a first ``import_archive``
   (one query per seed, its whole history) and its history pass, then on each of the first
   ``SAMPLE_NIGHTS`` nights the archive indexes that night's captures and the sites holding
   captures from it are refreshed with ``import_archive`` (grouped by host, sized, audited; no
   budget: the budget is the nightly job's). Requests, bytes and mementos are counted at the
   server; per 1,000 sites and for the whole collection they are *extrapolated* from the
   sample, and labelled so.
   A second, smaller first import (``RATE_CHECK_SEEDS`` seeds, at rates slow enough that the
   rate limits set the pace) times whether HACS's CDX queries and memento fetches add up (in
   series) or overlap (in parallel): its wall time against requests / rate of each kind.
2. **The refresh at full scale, in process.** The fake's own query code (``cdx_answer``)
   answers in this process (no HTTP: thousands of requests a night would take minutes over the
   loopback), with the parameters HACS sends (``ArchiveClient.cdx_query_params``), resume keys
   followed. The state after a first import comes from every seed's whole-history query; then
   each night, two refreshes run side by side on the same archive (the nightly job, within its
   budget, is measured as shipped by ``python -m bench.nightly_refresh``):

   * **every** (HACS now, every site every night: ``import_archive`` by hand, which asks a
     split group's parts at once);
   * **seed** (HACS before: one prefix query per seed from its newest stored capture).

   What "runs" means is ``archive.archive_import`` step for step: a group not sized in
   ``SIZING_EVERY_DAYS`` first sends one ``showNumPages=true&pageSize=1`` request and, when its
   range touches more than ``SIZING_MAX_BLOCKS`` ZipNum blocks, is remembered as too big and
   split and asked in parts at once (every, and the sample's ``import_archive``); a split groups
   the seeds by one more character of the group's common path prefix (``plan_queries``:
   ``host/~`` into ``host/~a``, ``host/~b``…); a group's answer of more than ``GROUP_MAX_PAGES``
   pages or ``GROUP_MAX_ROWS`` rows is remembered and split on the next plan (at once when it
   failed for its size); a share of the groups (a hash of day and key, ``_audit_of``) also asks
   one member's homepage exactly, and a host whose group answer lacked captures the exact one had
   is asked seed by seed afterwards; rows go to the member whose scope holds them (longest path,
   ``SeedScope.contains``/``depth``, as ``ScopeIndex``; depth <= 2 stored), the rest are other
   people's pages; a site's ``from`` is the newest capture the answer of its last check held
   (every row, other people's too) or its own newest capture, whichever is later, less
   ``HACS_CDX_INDEX_LAG_DAYS``. The sample's night-1 requests, rows and ``from`` are checked
   against what the server logged for HACS. 3. **What a full pass would have cost grouped**
   before HACS grouped (the analysis that motivated it): by host or by host and path family,
   every group from its oldest seed's ``from``, for the first ``BEFORE_NIGHTS`` nights.

Hours are at the configured rates (``HACS_CDX_RATE_PER_MINUTE``, 24, and
``HACS_MEMENTO_RATE_PER_MINUTE``, 480, by default, or as set in the environment). Mementos of a
refresh at full scale are extrapolated from the sample's, per new capture stored. The first
import fetches the contents of each site's last ``HACS_HISTORY_DAYS`` (1,095) days of copies,
newest first; the sample's history pass (``import_archive --history``) then fetches the older
ones, measured apart. The "before" tables count both passes as one first import, as it was.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from bench.collection import Collection, CollectionSpec, describe, groups
from bench.paper_refresh import (
    Cost,
    FirstImport,
    Refresher,
    World,
    first_import,
    pass_cost,
    query_cost,
    since_of,
)
from bench.paper_report import Outcome, Shares, report

# HACS's settings, read as hacs_site/settings.py reads them (same names, same defaults).

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


class SampleRun:
    """Seeds in a throw-away SQLite database, run through HACS's commands."""

    def __init__(
        self,
        tmp: Path,
        archive: Any,
        redis_url: str,
        seeds: list[str],
        *,
        name: str = "sample",
        rates: tuple[float, float] | None = None,
    ) -> None:
        from bench.common import fake_archive_env

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

        done = subprocess.run(
            command, env=self.env, cwd=ROOT, capture_output=True, text=True, check=True
        )
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

    def history_pass(self) -> Cost:
        """The contents older than each site's window, which the first import left."""
        return self.measured([sys.executable, "manage.py", "import_archive", "--history"])

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


# --- The bench ----------------------------------------------------------------------------------


def run(*, sites: int, sample: int, nights: int, seed: int, redis_url: str, tmp: Path) -> None:
    import redis

    from archive.wayback import ArchiveClient, ArchiveConfig
    from testbed.ia_server import IAArchive

    started = time.perf_counter()
    collection = Collection(CollectionSpec(seeds=sites, seed=seed))
    history = collection.history_lines()
    print(f"Paper-scale collection, {sites:,} seeds (seed {seed}; bench.collection):")
    for line in describe(collection, len(history)):
        print(f"  {line}")
    rng = np.random.default_rng([seed, 26])
    chosen = sorted(rng.choice(len(collection.seeds), size=min(sample, sites), replace=False))
    scoped_history = _scoped_history(collection)
    timings: dict[str, float] = {}
    with IAArchive(gzip=True, body_for=collection.body_for) as archive:
        archive.add_lines(history)
        del history
        config = ArchiveConfig(cdx_url=archive.cdx_url, wayback_url=archive.wayback_url)
        client = ArchiveClient(config, redis.Redis.from_url(redis_url))
        timings["built"] = time.perf_counter() - started
        print(f"  (built and served in {timings['built']:,.0f} s)")

        # 1. The sample through HACS's commands; the rate check.
        runner, outcome = _sample_run(
            collection, chosen, tmp=tmp, archive=archive, redis_url=redis_url
        )
        outcome.sites, outcome.nights, outcome.scoped_history = sites, nights, scoped_history
        outcome.before_nights = min(nights, BEFORE_NIGHTS)
        outcome.sample_nights_n = min(nights, SAMPLE_NIGHTS)
        held_first = runner.held()

        # 2. The first import in process, then the refreshes night after night.
        loop = NightLoop(outcome, World(collection, archive.state, client), archive, runner, chosen)
        for night in range(1, nights + 1):
            loop.night(night)
        loop.finish(held_first)
    timings["in process"] = sum(outcome.in_process.values())
    report(outcome)
    _report_times(seed, started, timings, outcome)


def _sample_run(
    collection: Collection, chosen: list[int], *, tmp: Path, archive: Any, redis_url: str
) -> tuple[SampleRun, Outcome]:
    """The sample through HACS's commands (its first import and history pass), and the rate
    check on its archived seeds: the sample's runner, and what it measured."""
    runner = SampleRun(tmp, archive, redis_url, [collection.seeds[i].url for i in chosen])
    first = runner.first_import()
    first.sites = len(chosen)
    older = runner.history_pass()
    older.sites = len(chosen)
    archived = [i for i in chosen if collection.seeds[i].archived][:RATE_CHECK_SEEDS]
    rates = (RATE_CHECK_CDX, RATE_CHECK_MEMENTO)
    timed = SampleRun(
        tmp,
        archive,
        redis_url,
        [collection.seeds[i].url for i in archived],
        name="rates",
        rates=rates,
    ).first_import()
    outcome = Outcome(
        collection, first=first, older=older, timed=timed, rate_seeds=len(archived), rates=rates
    )
    return runner, outcome


class NightLoop:
    """The archive capturing night after night: the sample refreshed by HACS's commands, the
    whole collection's refreshes in process, the "before" groups, and the shares held."""

    def __init__(
        self, outcome: Outcome, world: World, archive: Any, runner: SampleRun, chosen: list[int]
    ) -> None:
        self.outcome = outcome
        self.world = world
        self.archive = archive
        self.runner = runner
        self.chosen = chosen
        outcome.full_first = first_import(world)
        held_sites = sorted(outcome.full_first.own)
        outcome.held_sites = len(held_sites)
        outcome.refreshers = {
            "every": Refresher(world, outcome.full_first, mode="every", wire_nights=outcome.nights),
            "seed": Refresher(
                world,
                outcome.full_first,
                mode="seed",
                wire_nights=outcome.before_nights,
                watch=set(chosen),
            ),
        }
        outcome.in_process = {name: 0.0 for name in outcome.refreshers}
        self.indexed: set[tuple[str, str]] = set()
        self.outside = 0
        self.refreshed = set(held_sites)
        self.sample_held = self.sample_visible = 0

    def night(self, night: int) -> None:
        """The archive indexes the night's captures, then every refresh runs."""
        collection = self.world.collection
        before = night <= self.outcome.before_nights
        if before:  # before: every archived seed, from its newest capture
            old = [i for i in range(len(collection.seeds)) if collection.newest[i] > 0]
            since = {i: since_of(collection.newest[i]) for i in old}
        lines = collection.night(night)
        self.outside += _index_night(collection, lines, self.indexed, self.refreshed)
        self.archive.add_lines(lines)
        if night <= self.outcome.sample_nights_n:
            self._sample_night(night)
        for name, refresher in self.outcome.refreshers.items():
            self._timed(name, refresher.night, night)
        if before:
            self._timed("before groups", self._before_groups, old, since)
        if night in (1, 7, self.outcome.nights):
            self.outcome.shares.append(self._shares(night))

    def _timed(self, name: str, step: Callable[..., object], *args: Any) -> None:
        clock = time.perf_counter()
        step(*args)
        in_process = self.outcome.in_process
        in_process[name] = in_process.get(name, 0.0) + (time.perf_counter() - clock)

    def _sample_night(self, night: int) -> None:
        """The sample's nightly refresh through HACS's commands (night 1 checked against the
        bench's plan; the last one's captures counted against the archive's)."""
        outcome = self.outcome
        outcome.sample_nights.append(self.runner.nightly_refresh())
        if night == 1:
            outcome.checks.append(
                _check(self.world, outcome.full_first, self.chosen, outcome.sample_nights[0])
            )
        if night == outcome.sample_nights_n:
            self.sample_held = self.runner.held()
            self.sample_visible = in_scope_visible(
                self.world.collection, self.world.state, self.world.client, self.chosen
            )

    def _before_groups(self, old: list[int], since: dict[int, str]) -> None:
        world = self.world
        for by, costs in self.outcome.before_groups.items():
            plan = groups(world.collection, old, by=by)
            costs.append(pass_cost(world.collection, world.state, world.client, plan, since))

    def _shares(self, night: int) -> Shares:
        """What each refresh holds of the archive's new captures after ``night``."""
        outcome, indexed = self.outcome, self.indexed
        first_held, scoped = outcome.full_first.held, outcome.scoped_history
        refreshers = outcome.refreshers
        return Shares(
            night,
            len(indexed),
            _made(self.world.collection, night),
            self.outside,
            {name: len(r.new & indexed) for name, r in refreshers.items()},
            {
                name: (first_held + len(r.new & indexed)) / (scoped + len(indexed))
                for name, r in refreshers.items()
            },
        )

    def finish(self, held_first: int) -> None:
        """The captures HACS stored for the sample, against the archive's."""
        outcome = self.outcome
        outcome.sample_new = self.sample_held - held_first
        outcome.checks.append(
            f"captures HACS holds of the sample after {outcome.sample_nights_n} nights: "
            f"{self.sample_held:,}; in the sample's scopes in the archive: "
            f"{self.sample_visible:,} ({self.sample_held / max(1, self.sample_visible):.1%})"
        )


def _index_night(
    collection: Collection, lines: list[str], indexed: set[tuple[str, str]], refreshed: set[int]
) -> int:
    """Add the night's new in-scope captures to ``indexed``; returns how many of them belong
    to seeds outside ``refreshed`` (none of their captures at the first import)."""
    outside = 0
    for line in lines:
        urlkey, stamp, _rest = line.split(" ", 2)
        page = collection.urlkey_page[urlkey]
        owner = collection.page_seed[page]
        if owner >= 0 and collection.depth[page] <= 2 and (urlkey, stamp) not in indexed:
            indexed.add((urlkey, stamp))
            outside += owner not in refreshed
    return outside


def _report_times(seed: int, started: float, timings: dict[str, float], outcome: Outcome) -> None:
    """Where the bench's time went."""
    sample_seconds = sum(c.seconds for c in outcome.sample_nights)
    print(
        f"(seed {seed}; {time.perf_counter() - started:,.0f} s in all: collection built and "
        f"served {timings['built']:,.0f} s, the sample's first import "
        f"{outcome.first.seconds:,.0f} s and history pass {outcome.older.seconds:,.0f} s, "
        f"the rate check {outcome.timed.seconds:,.0f} s, the sample's nights "
        f"{sample_seconds:,.0f} s, the first import in process "
        f"{outcome.full_first.seconds:,.0f} s, the refreshes in process "
        + ", ".join(f"{name} {sec:,.0f} s" for name, sec in outcome.in_process.items())
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
