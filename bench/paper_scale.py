"""What today's HACS asks of the Internet Archive for a paper-scale collection (issue #26).

``python -m bench.import_cost --paper-scale [--sites 20000] [--sample 500] [--nights 7]``.
It builds the synthetic collection of ``bench.collection`` (``--seed``), serves it from the fake
Internet Archive (``tests.support.ia_server``, on 127.0.0.1, compressing its CDX answers as
the real one does) and measures three things:

1. **HACS itself, on a sample.** ``--sample`` seeds drawn from the collection go through the
   real commands in a throw-away SQLite database: ``import_seeds``, a first ``import_archive``,
   then each night the archive indexes that night's captures and the nightly refresh's sites
   (those holding captures from the archive) are refreshed with ``import_archive``. Requests,
   bytes and mementos are counted at the server; per 1,000 sites and for the whole collection
   they are *extrapolated* from the sample, and labelled so.
2. **Today's per-seed refresh at full scale.** Every archived seed's query, with the
   parameters HACS sends (``ArchiveClient.cdx_query_params``: a prefix query from the newest
   capture less ``HACS_CDX_INDEX_LAG_DAYS``, 5,000 rows a page), answered by the fake's own
   query code in this process (no HTTP: 20,000 requests a night would take minutes over the
   loopback), resume keys followed. The sample's HTTP run checks it: the same queries for the
   sample's seeds must count what the server logged.
3. **What a full pass would cost grouped** by host (one host query a host) or by host and path
   family (``host/~``, ``host/people/``), Google Sites seeds one query each, with the same
   ``from`` (the group's oldest): requests, bytes, rows of other people's pages that would be
   read and thrown away, and groups whose answer the server's 150,000-line read cap cuts short
   without a resume key (``queryMaxLimit``: a ``from`` query still reads the host's history).

Hours are at the configured rates (``HACS_CDX_RATE_PER_MINUTE``, 24, and
``HACS_MEMENTO_RATE_PER_MINUTE``, 480, by default, or as set in the environment).
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from bench.collection import Collection, CollectionSpec, Group, describe, groups, timestamp_text

LAG_DAYS = float(os.environ.get("HACS_CDX_INDEX_LAG_DAYS", "30"))
CDX_RATE = float(os.environ.get("HACS_CDX_RATE_PER_MINUTE", "24"))
MEMENTO_RATE = float(os.environ.get("HACS_MEMENTO_RATE_PER_MINUTE", "480"))
PAGE_SIZE = 5_000  # ArchiveConfig.page_size: rows a CDX page
MAX_PAGES = 100  # HACS_CDX_MAX_PAGES

# The nightly refresh's sites, refreshed as the scheduler's job refreshes them.
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
    """HACS's ``from``: the newest capture it holds less the index lag (pipeline._refresh_from)."""
    moment = datetime.fromtimestamp(int(seconds), UTC) - timedelta(days=LAG_DAYS)
    return timestamp_text(int(moment.timestamp()))


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
    """A refresh of the groups in ``plan``, each from its oldest seed's ``from``."""
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
    """The sample's seeds in a throw-away SQLite database, run through HACS's commands."""

    def __init__(self, tmp: Path, archive: Any, redis_url: str, seeds: list[str]) -> None:
        from bench.import_cost import fake_archive_env

        self.archive = archive
        self.env = fake_archive_env(archive, redis_url, tmp / "paper-scale.sqlite3")
        seeds_path = tmp / "sample-seeds.txt"
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
        for entry in self.archive.requests_to("cdx"):
            cost.cdx += 1
            cost.cdx_wire += entry.sent
            cost.cdx_raw += entry.raw
            cost.rows += entry.rows
            cost.extra.setdefault("from", {})[entry.query.get("url")] = entry.query.get("from")
        web = self.archive.requests_to("web")
        cost.mementos = len(web)
        cost.memento_bytes = sum(e.sent for e in web)
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
    with IAArchive(gzip=True, body_for=collection.body_for) as archive:
        archive.add_lines(history)
        del history
        config = ArchiveConfig(cdx_url=archive.cdx_url, wayback_url=archive.wayback_url)
        client = ArchiveClient(config, redis.Redis.from_url(redis_url))
        state = archive.state
        print(f"  (built and served in {time.perf_counter() - started:,.0f} s)")

        runner = SampleRun(tmp, archive, redis_url, [collection.seeds[i].url for i in chosen])
        first = runner.first_import()
        first.sites = len(chosen)
        sample_nights: list[Cost] = []
        full_nights: dict[str, list[Cost]] = {"seed": [], "host": [], "prefix": []}
        checks: list[str] = []
        in_process = 0.0
        for night in range(1, nights + 1):
            held = [i for i in range(len(collection.seeds)) if collection.newest[i] > 0]
            since = {i: since_of(collection.newest[i]) for i in held}
            archive.add_lines(collection.night(night))
            sample_nights.append(runner.nightly_refresh())
            clock = time.perf_counter()
            for by, costs in full_nights.items():
                plan = groups(collection, held, by=by)
                costs.append(pass_cost(collection, state, client, plan, since))
            in_process += time.perf_counter() - clock
            if night == 1:
                checks.append(_check(collection, state, client, chosen, since, sample_nights[0]))
        held_captures = runner.held()
        visible = in_scope_visible(collection, state, client, chosen)
    _report(collection, sites, sample, first, sample_nights, full_nights, checks,
            held_captures, visible)  # fmt: skip
    print(f"(seed {seed}; {time.perf_counter() - started:,.0f} s in all, of which the sample's "
          f"first import {first.seconds:,.0f} s, its nights "
          f"{sum(c.seconds for c in sample_nights):,.0f} s, the in-process passes "
          f"{in_process:,.0f} s)")  # fmt: skip


def _check(
    collection: Collection, state: Any, client: Any, chosen: list[int], since: dict[int, str],
    measured: Cost,
) -> str:  # fmt: skip
    """Whether the in-process count of the sample's night-1 queries matches the server's log."""
    mine = [i for i in chosen if i in since]
    computed = pass_cost(collection, state, client, groups(collection, mine, by="seed"), since)
    sent = measured.extra.get("from", {})
    expected = {g.url: since[g.seeds[0]] for g in groups(collection, mine, by="seed")}
    same_from = sum(sent.get(url) == value for url, value in expected.items())
    return (
        f"in-process count of the sample's night-1 queries: {computed.cdx:,} requests, "
        f"{computed.rows:,} rows; the server logged {measured.cdx:,} and {measured.rows:,}; "
        f"HACS's 'from' equals the bench's for {same_from:,} of {len(expected):,} seeds"
    )


def _row(label: str, cost: Cost, note: str = "") -> str:
    cdx_hours, memento_hours = cost.hours
    return (
        f"  {label:<44} {cost.cdx:>9,.0f} {cost.cdx_wire / 1e6:>8,.1f} {cost.cdx_raw / 1e6:>8,.1f}"
        f" {cost.mementos:>10,.0f} {cdx_hours:>7,.1f} {memento_hours:>7,.1f}"
        + (f"  {note}" if note else "")
    )


def _report(
    collection: Collection, sites: int, sample: int, first: Cost, sample_nights: list[Cost],
    full_nights: dict[str, list[Cost]], checks: list[str], held: int, visible: int,
) -> None:  # fmt: skip
    size = int(first.sites) or 1
    per_site = 1_000 / size
    whole = sites / size
    week = Cost()
    for cost in sample_nights:
        week.add(cost)
    refreshed = max(1, sample_nights[0].sites)
    full_week = {by: Cost() for by in full_nights}
    for by, costs in full_nights.items():
        for cost in costs:
            full_week[by].add(cost)
    # Mementos of a full-scale refresh: the sample's, per refreshed site (extrapolated).
    held_sites = full_nights["seed"][0].sites
    memento_night = sample_nights[0].mementos / refreshed * held_sites
    memento_week = week.mementos / refreshed * held_sites
    nights = len(sample_nights)
    print(f"\nWhat today's HACS asks of the archive (hours at {CDX_RATE:g} CDX requests and "
          f"{MEMENTO_RATE:g} mementos a minute):")  # fmt: skip
    print(f"  {'':<44} {'CDX req':>9} {'MB wire':>8} {'MB raw':>8} {'mementos':>10} "
          f"{'CDX h':>7} {'mem. h':>7}")  # fmt: skip
    print(_row(f"first import, sample of {size:,} (measured)", first,
               f"{first.seconds:,.0f} s on this machine"))  # fmt: skip
    print(_row("first import per 1,000 sites (extrapolated)", first.scaled(per_site)))
    print(_row(f"first import, {sites:,} sites (extrapolated)", first.scaled(whole)))
    print(_row(f"nightly refresh 1, sample: {refreshed:,} sites (meas.)", sample_nights[0]))
    print(_row(f"{nights} nights, sample (measured)", week))
    night1 = full_nights["seed"][0]
    night1.mementos = memento_night
    print(_row(f"nightly refresh 1, {held_sites:,} sites", night1,
               "CDX in-process, mementos extrapolated"))  # fmt: skip
    full_week["seed"].mementos = memento_week
    print(_row(f"{nights} nights, {held_sites:,} sites", full_week["seed"],
               "CDX in-process, mementos extrapolated"))  # fmt: skip
    print(f"\nA full pass grouped (would cost; the same 'from' and mementos; night 1, then "
          f"{nights} night{'s' * (nights != 1)}):")  # fmt: skip
    for by, label in (("seed", "per seed (today)"), ("host", "one query a host"),
                      ("prefix", "one query a host and path family")):  # fmt: skip
        one, all_nights = full_nights[by][0], full_week[by]
        print(f"  {label:<34} night 1: {one.cdx:>6,.0f} requests "
              f"({one.cdx / CDX_RATE / 60:,.1f} h), {one.cdx_wire / 1e6:,.1f} MB, "
              f"{one.rows:,.0f} rows of which {one.other_rows:,.0f} thrown away, "
              f"{one.cut_short:,.0f} cut short by the read cap (one request read at most "
              f"{one.max_read:,} lines); {nights} nights: {all_nights.cdx:,.0f} requests, "
              f"{all_nights.cdx_wire / 1e6:,.1f} MB")  # fmt: skip
    print("\nChecks:")
    for line in checks:
        print(f"  {line}")
    print(
        f"  captures HACS holds of the sample after {nights} nights: {held:,}; in the "
        f"sample's scopes in the archive: {visible:,} ({held / max(1, visible):.1%})"
    )
