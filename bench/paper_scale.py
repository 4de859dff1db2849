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
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from bench.collection import Collection, CollectionSpec, describe, groups
from bench.paper_refresh import (
    CDX_RATE,
    HISTORY_DAYS,
    MEMENTO_RATE,
    Cost,
    FirstImport,
    Night,
    Refresher,
    World,
    first_import,
    pass_cost,
    query_cost,
    since_of,
    total,
)

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
    from testbed.ia_server import IAArchive

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
        runner, first, older, timed, archived = _sample_run(
            collection, chosen, tmp=tmp, archive=archive, redis_url=redis_url
        )
        held_first = runner.held()

        # 2. The first import in process, then the three refreshes night after night.
        world = World(collection, state, client)
        full_first = first_import(world)
        held_sites = sorted(full_first.own)
        watch = set(chosen)
        refreshers = {
            "every": Refresher(world, full_first, mode="every", wire_nights=nights),
            "seed": Refresher(
                world, full_first, mode="seed", wire_nights=before_nights, watch=watch
            ),
        }
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
            outside += _index_night(collection, lines, indexed, refreshed)
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
                    costs.append(
                        pass_cost(collection, state, client, groups(collection, old, by=by), since)
                    )
                in_process["before groups"] = in_process.get("before groups", 0.0) + (
                    time.perf_counter() - clock
                )
            if night in (1, 7, nights):
                shares.append(
                    _shares(
                        collection,
                        night,
                        indexed,
                        outside,
                        refreshers,
                        full_first.held,
                        scoped_history,
                    )
                )
        sample_new = sample_held - held_first
        checks.append(
            f"captures HACS holds of the sample after {sample_nights_n} nights: "
            f"{sample_held:,}; in the sample's scopes in the archive: {sample_visible:,} "
            f"({sample_held / max(1, sample_visible):.1%})"
        )
    timings["in process"] = sum(in_process.values())
    _report(
        collection=collection,
        sites=sites,
        first=first,
        older=older,
        timed=timed,
        rate_seeds=len(archived),
        sample_nights=sample_nights,
        sample_new=sample_new,
        full_first=full_first,
        refreshers=refreshers,
        before_groups=before_groups,
        before_nights=before_nights,
        shares=shares,
        checks=checks,
        held_sites=len(held_sites),
        scoped_history=scoped_history,
    )
    _report_times(
        seed, started, timings, first, older, timed, sample_nights, full_first, in_process
    )


def _sample_run(
    collection: Collection, chosen: list[int], *, tmp: Path, archive: Any, redis_url: str
) -> tuple[SampleRun, Cost, Cost, Cost, list[int]]:
    """The sample through HACS's commands (its first import and history pass), and the rate
    check on its archived seeds: (the sample's runner, the two costs, the rate check's cost,
    the seeds it timed)."""
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
    return runner, first, older, timed, archived


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


def _report_times(
    seed: int,
    started: float,
    timings: dict[str, float],
    first: Cost,
    older: Cost,
    timed: Cost,
    sample_nights: list[Cost],
    full_first: FirstImport,
    in_process: dict[str, float],
) -> None:
    """Where the bench's time went."""
    sample_seconds = sum(c.seconds for c in sample_nights)
    print(
        f"(seed {seed}; {time.perf_counter() - started:,.0f} s in all: collection built and "
        f"served {timings['built']:,.0f} s, the sample's first import {first.seconds:,.0f} s "
        f"and history pass {older.seconds:,.0f} s, "
        f"the rate check {timed.seconds:,.0f} s, the sample's nights {sample_seconds:,.0f} s, "
        f"the first import in process {full_first.seconds:,.0f} s, the refreshes in process "
        + ", ".join(f"{name} {sec:,.0f} s" for name, sec in in_process.items())
        + ")"
    )


def _shares(
    collection: Collection,
    night: int,
    indexed: set[tuple[str, str]],
    outside: int,
    refreshers: dict[str, Refresher],
    first_held: int,
    scoped_history: int,
) -> Shares:
    """What each refresh holds of the archive's new captures after ``night``."""
    return Shares(
        night,
        len(indexed),
        _made(collection, night),
        outside,
        {name: len(r.new & indexed) for name, r in refreshers.items()},
        {
            name: (first_held + len(r.new & indexed)) / (scoped_history + len(indexed))
            for name, r in refreshers.items()
        },
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
    *,
    collection: Collection,
    sites: int,
    first: Cost,
    older: Cost,
    timed: Cost,
    rate_seeds: int,
    sample_nights: list[Cost],
    sample_new: int,
    full_first: FirstImport,
    refreshers: dict[str, Refresher],
    before_groups: dict[str, list[Cost]],
    before_nights: int,
    shares: list[Shares],
    checks: list[str],
    held_sites: int,
    scoped_history: int,
) -> None:
    size = int(first.sites) or 1
    # Before, a first import fetched every content at once: the window and the older history.
    one_pass = Cost(sites=first.sites)
    one_pass.add(first)
    one_pass.add(older)
    one_pass.sites = first.sites
    per_site = 1_000 / size
    whole = sites / size
    week = Cost()
    for cost in sample_nights:
        week.add(cost)
    sample_n = len(sample_nights)
    # Mementos of a refresh at full scale: the sample's per new capture it stored.
    per_capture = week.mementos / max(1, sample_new)
    seed = refreshers["seed"]
    every = refreshers["every"]
    b_nights = seed.nights[:before_nights]
    w_nights = seed.watched[:before_nights]
    _report_before(
        sites=sites,
        size=size,
        one_pass=one_pass,
        per_site=per_site,
        whole=whole,
        b_nights=b_nights,
        w_nights=w_nights,
        per_capture=per_capture,
        before_nights=before_nights,
        before_groups=before_groups,
    )
    _report_after(
        sites=sites,
        size=size,
        first=first,
        older=older,
        full_first=full_first,
        per_site=per_site,
        whole=whole,
        sample_nights=sample_nights,
        week=week,
        every=every,
        per_capture=per_capture,
        held_sites=held_sites,
    )
    _report_shares(shares, full_first, scoped_history)

    _report_first_import(first, older, timed, rate_seeds, per_site, whole, sites)

    print("\nChecks:")
    for line in checks:
        print(f"  {line}")
    print(
        f"  new captures stored for the sample in {sample_n} nights: {sample_new:,} by HACS, "
        f"{total(seed.watched[:sample_n]).new:,} in process (per seed)"
    )
    print(
        f"  mementos a new capture (the sample's {sample_n} nights): {week.mementos:,.0f} "
        f"fetched for {sample_new:,} captures stored = {per_capture:.2f}"
    )


def _report_before(
    *,
    sites: int,
    size: int,
    one_pass: Cost,
    per_site: float,
    whole: float,
    b_nights: list[Any],
    w_nights: list[Any],
    per_capture: float,
    before_nights: int,
    before_groups: dict[str, list[Cost]],
) -> None:
    """What a first import and the nights cost before HACS grouped its queries."""
    extrapolated = "CDX in process, mementos extrapolated"
    print(
        f"\nBefore issue 26: one CDX query per seed every night (hours at {CDX_RATE:g} CDX "
        f"requests and {MEMENTO_RATE:g} mementos a minute):"
    )
    print(HEAD)
    print(
        _row(
            f"first import, sample of {size:,} (measured)",
            one_pass,
            f"{one_pass.seconds:,.0f} s on this machine, every content",
        )
    )
    print(_row("first import per 1,000 sites (extrapolated)", one_pass.scaled(per_site)))
    print(_row(f"first import, {sites:,} sites (extrapolated)", one_pass.scaled(whole)))
    label = f"nightly refresh 1, sample: {w_nights[0].checked:,} sites"
    print(_row(label, _with_mementos(w_nights[0], per_capture), "in process (*)"))
    print(
        _row(
            f"{before_nights} nights, sample",
            _with_mementos(total(w_nights), per_capture),
            "in process (*)",
        )
    )
    print(
        _row(
            f"nightly refresh 1, {b_nights[0].checked:,} sites",
            _with_mementos(b_nights[0], per_capture),
            extrapolated,
        )
    )
    print(
        _row(
            f"{before_nights} nights, {b_nights[0].checked:,} sites",
            _with_mementos(total(b_nights), per_capture),
            extrapolated,
        )
    )
    print(
        "  (*) HACS now groups, so the sample's per-seed nights are counted in process; "
        "the issue's before run\n      checked that count against the server's log: "
        "equal."
    )

    print(
        f"\nA full pass grouped, as it would have cost before HACS grouped (the seeds' "
        f"own 'from', each group from its oldest; night 1, then {before_nights} "
        "nights):"
    )
    rows = [("per seed (before)", [n.cost() for n in b_nights])]
    rows += [
        ("one query a host", before_groups["host"]),
        ("one query a host and path family", before_groups["prefix"]),
    ]
    for label, costs in rows:
        one = costs[0]
        all_nights = Cost()
        for cost in costs:
            all_nights.add(cost)
        print(
            f"  {label:<34} night 1: {one.cdx:>6,.0f} requests "
            f"({one.cdx / CDX_RATE / 60:,.1f} h), {one.cdx_wire / 1e6:,.1f} MB, "
            f"{one.rows:,.0f} rows of which {one.other_rows:,.0f} thrown away, "
            f"{one.cut_short:,.0f} cut short by the read cap (one request read at most "
            f"{one.max_read:,} lines); {before_nights} nights: {all_nights.cdx:,.0f} requests, "
            f"{all_nights.cdx_wire / 1e6:,.1f} MB"
        )


def _report_after(
    *,
    sites: int,
    size: int,
    first: Cost,
    older: Cost,
    full_first: FirstImport,
    per_site: float,
    whole: float,
    sample_nights: list[Cost],
    week: Cost,
    every: Refresher,
    per_capture: float,
    held_sites: int,
) -> None:
    """What they cost now, grouped by host, sized and audited."""
    extrapolated = "CDX in process, mementos extrapolated"
    sample_n = len(sample_nights)
    nights = len(every.nights)
    print("\nAfter: HACS now (grouped by host, sized, audited):")
    print(HEAD)
    print(
        _row(
            f"first import, sample of {size:,} (measured)",
            first,
            f"{first.seconds:,.0f} s on this machine (one query a seed, as before; the "
            "contents of each site's window)",
        )
    )
    print(_row("first import per 1,000 sites (extrapolated)", first.scaled(per_site)))
    print(_row(f"first import, {sites:,} sites (extrapolated)", first.scaled(whole)))
    full = Cost(cdx=full_first.requests, cdx_raw=full_first.raw, mementos=first.mementos * whole)
    print(
        _row(
            f"first import, {sites:,} sites",
            full,
            "CDX in process (no MB wire), mementos extrapolated",
        )
    )
    print(
        _row(
            f"history pass, sample of {size:,} (measured)",
            older,
            f"{older.seconds:,.0f} s on this machine (no CDX; the older contents)",
        )
    )
    print(_row("history pass per 1,000 sites (extrapolated)", older.scaled(per_site)))
    print(_row(f"history pass, {sites:,} sites (extrapolated)", older.scaled(whole)))
    print(
        _row(
            f"nightly refresh 1, sample: {sample_nights[0].sites:,.0f} sites (meas.)",
            sample_nights[0],
            "import_archive, every site, no budget",
        )
    )
    print(_row(f"{sample_n} nights, sample (measured)", week))
    print(
        _row(
            "a full pass after grouping (night 1, no budget)",
            _with_mementos(every.nights[0], per_capture),
            extrapolated,
        )
    )
    print(
        _row(
            f"{nights} nights, every site every night, grouped",
            _with_mementos(total(every.nights), per_capture),
            extrapolated,
        )
    )

    print(
        f"\nRefreshing every site every night, {held_sites:,} sites, in process (the nightly "
        "job within its budget: python -m bench.nightly_refresh):"
    )
    print(
        f"  {'':<22} {'CDX req':>8} {'queries':>8} {'pages':>6} {'sizing':>6} {'audit':>6} "
        f"{'hours':>6} {'rows read':>10} {'others':>8} {'cut':>4} {'checked':>8}"
    )
    for label, night in (
        ("full pass, night 1", every.nights[0]),
        (f"every night, {nights} nights", total(every.nights)),
    ):
        print(
            f"  {label:<22} {night.requests:>8,} {night.queries:>8,} {night.pages:>6,} "
            f"{night.sizing:>6,} {night.audit:>6,} {night.requests / CDX_RATE / 60:>6,.2f} "
            f"{night.rows:>10,} {night.other:>8,} {night.cut_short:>4,} "
            f"{night.checked:>8,}"
        )


def _report_shares(shares: list[Shares], full_first: FirstImport, scoped_history: int) -> None:
    """The share of the archive's new captures HACS holds, night by night."""
    print(
        "\nShare of new captures in HACS (seeds' own pages, depth <= 2, made after the first "
        "import and indexed by then):"
    )
    print(f"  {'':<44}" + "".join(f"{'night ' + str(s.night):>14}" for s in shares))
    print(
        f"  {'new captures the archive indexed':<44}" + "".join(f"{s.indexed:>14,}" for s in shares)
    )
    print(f"  {'  (made, indexed or not)':<44}" + "".join(f"{s.made:>14,}" for s in shares))
    print(
        f"  {'  (of seeds with no capture at first import)':<44}"
        + "".join(f"{s.outside:>14,}" for s in shares)
    )
    for name, label in (
        ("every", "(b) every seed every night, grouped"),
        ("seed", "(c) per seed every night (before)"),
    ):
        print(
            f"  {label:<44}" + "".join(f"{s.held[name] / max(1, s.indexed):>14.1%}" for s in shares)
        )
    print("  capture recall against everything in the archive (first import's captures too):")
    for name, label in (("every", "(b)"), ("seed", "(c)")):
        print(f"  {'  ' + label:<44}" + "".join(f"{s.recall[name]:>14.2%}" for s in shares))
    print(
        f"  (the first import stored {full_first.held:,} of the {scoped_history:,} in-scope "
        f"captures the archive held: {full_first.held / scoped_history:.2%})"
    )


def _report_first_import(
    first: Cost,
    older: Cost,
    timed: Cost,
    rate_seeds: int,
    per_site: float,
    whole: float,
    sites: int,
) -> None:
    """A first import at the documented rates, whether its phases add up or overlap, and the
    history pass after it (the contents of copies older than each site's window)."""
    cdx_s = timed.cdx / RATE_CHECK_CDX * 60
    mem_s = timed.mementos / RATE_CHECK_MEMENTO * 60
    series, parallel = cdx_s + mem_s, max(cdx_s, mem_s)
    holds = (
        "in series"
        if abs(timed.seconds - series) < abs(timed.seconds - parallel)
        else ("in parallel")
    )
    years = HISTORY_DAYS / 365
    window = f"{years:g} years" if years == int(years) else f"{HISTORY_DAYS:,} days"
    print(
        f"\nA first import at the documented rates ({CDX_RATE:g} CDX requests and "
        f"{MEMENTO_RATE:g} mementos a minute), fetching the contents of each site's last "
        f"{window} of copies (HACS_HISTORY_DAYS {HISTORY_DAYS:,}), then the history pass:"
    )
    print(
        f"  {'':<30} {'CDX req':>9} {'mementos':>10} {'CDX h':>7} {'mem. h':>7} "
        f"{'in series h':>12} {'in parallel h':>14}"
    )
    for label, factor in (("per 1,000 sites", per_site), (f"{sites:,} sites", whole)):
        cost = first.scaled(factor)
        cdx_h, mem_h = cost.hours
        print(
            f"  {'first import, ' + label:<30} {cost.cdx:>9,.0f} {cost.mementos:>10,.0f} "
            f"{cdx_h:>7,.1f} {mem_h:>7,.1f} {cdx_h + mem_h:>12,.1f} "
            f"{max(cdx_h, mem_h):>14,.1f}"
        )
        cost = older.scaled(factor)
        cdx_h, mem_h = cost.hours
        print(
            f"  {'history pass, ' + label:<30} {cost.cdx:>9,.0f} {cost.mementos:>10,.0f} "
            f"{cdx_h:>7,.1f} {mem_h:>7,.1f}"
        )
    cost = first.scaled(whole)
    cdx_h, mem_h = cost.hours
    wall = cdx_h + mem_h if holds == "in series" else max(cdx_h, mem_h)
    print(
        f"  which holds, timed on {rate_seeds} of the sample's archived seeds at "
        f"{RATE_CHECK_CDX:g} CDX requests and {RATE_CHECK_MEMENTO:g} mementos a minute: "
        f"{timed.cdx:,.0f} CDX requests ({cdx_s:,.0f} s at that rate) and "
        f"{timed.mementos:,.0f} mementos ({mem_s:,.0f} s): the import took "
        f"{timed.seconds:,.0f} s, against {series:,.0f} s in series and {parallel:,.0f} s in "
        f"parallel: {holds} holds"
    )
    print(
        f"  a first import of {sites:,} sites takes ~{wall:,.1f} h at these rates: it "
        f"{'fits' if wall <= 24 else 'does not fit'} in 24 h"
    )
    later = older.scaled(whole).hours[1]
    share = first.mementos / max(1, first.mementos + older.mementos)
    print(
        f"  the history pass then fetches the older {older.scaled(whole).mementos:,.0f} "
        f"contents in ~{later:,.1f} h (nightly, when no import is under way): every content "
        f"is in ~{wall + later:,.1f} h after the first import began; the first import "
        f"fetched {share:.1%} of them"
    )
