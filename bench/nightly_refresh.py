"""The nightly refresh as shipped, at paper scale, night after night: what it asks of the archive,
what it keeps of the archive's new captures, how long sites wait, and what the crawl list loses.

Run from the project root::

    .venv/bin/python -m bench.nightly_refresh [--sites 20000] [--nights 90] [--seed 0]
        [--lists 0.02,0.05] [--gains 10] [--budget-minutes 40]

It builds the synthetic collection of ``bench.collection`` (``--seed``; the host mix of real
scholarly homepages: university hosts of Zipf-sized departments beside other people's pages,
personal domains, ``github.io``, Google Sites, 13 % of seeds never captured), with two more
things a paper-scale archive holds: a tenth of the never-captured seeds that the archive starts
capturing during the nights, and the first seed of each of the three largest hosts with 3,000
more pages (its first import runs past 5,000 rows a page, and its host's group must split). The
archive answers in this process with the fake Internet Archive's own code; every night it
indexes that night's captures (60 % the same night, the rest up to 30 nights late).

Then, for each crawl-list budget of ``--lists`` (a share of the seeds crawled a day) and each
list gain of ``--gains`` (``hacs.refresh_budget.RefreshPolicy.list_gain``), HACS's nightly
refresh runs ``--nights`` nights as shipped (``bench.shipped_refresh.Shipped``: the nightly job's
choice, ``hacs.refresh_budget.choose_queries``, on the states the job builds, its stakes from
that run's own provisional list), within ``default_budget`` of ``--budget-minutes`` at 24
requests a minute scaled to the collection (960 × sites / 20,000), the recall audit's share
apart; each morning that run's list is built from what HACS holds and crawled. Beside it, the
same list fed by a full refresh every night (HACS knows every capture the archive indexed).

Printed, per run: CDX requests a night (and at 20,000 seeds when the collection is smaller: the
budget is scaled, so requests scale with it), group queries a night, the share of the archive's
new captures (in the seeds' scopes, made after the first import) HACS holds, read two ways
(``bench.held_captures``): on nights 1, 7, 30, 60 and 90 of the run (of those indexed by then),
and 1, 7 and 30 nights after the archive indexed each; overall, for the seeds alone on their
host and per kind of host; the longest wait between two checks, the seeds without captures
asked again and how often, rows read per new capture, the longest query in pages and rows; and
the changes the budgeted list found against the list of a full refresh, over the first 28
nights and all of them. ``--seed`` repeats every figure.
"""

from __future__ import annotations

import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import redis

from bench.collection import DAY, Collection, CollectionSpec, describe
from bench.common import argument_parser
from bench.held_captures import HeldCaptures
from bench.paper_refresh import CDX_RATE, FirstImport, World, first_import, seconds_of
from bench.shipped_refresh import CRAWL_AT, ListWorld, Shipped, Tally, homepage_truth
from hacs.refresh_budget import RefreshPolicy, default_budget

KINDS = ("grouped", "institution alone", "personal", "github", "google")
MARKS = (1, 7, 30, 60, 90)
LIST_DAYS = 28  # the shortest span the list comparison is told over


@dataclass
class Run:
    """One shipped refresh with its list, and the list of a full refresh beside it."""

    name: str
    refresh: Shipped
    budgeted: ListWorld
    full: ListWorld
    held: dict[int, dict[str, float]] = field(default_factory=dict)  # night → kind → share
    held_at: dict[tuple[str, str], int] = field(default_factory=dict)  # row → night first held
    waits: list[float] = field(default_factory=list)  # the longest wait after each night (days)
    past: list[int] = field(default_factory=list)  # sites past 35 days after each night
    seconds: float = 0.0


def kinds_of(collection: Collection, first: FirstImport) -> list[str]:
    """Each seed's kind of host: a university seed asked with others of its host (grouped) or
    alone, a personal domain, ``github.io``, Google Sites."""
    captured = Counter(collection.seeds[s].host for s in first.own)
    kinds = []
    for seed in collection.seeds:
        if seed.kind == "institution":
            kinds.append("grouped" if captured[seed.host] >= 2 else "institution alone")
        else:
            kinds.append(seed.kind)
    return kinds


def main() -> int:
    args = _arguments()
    began = time.perf_counter()
    collection, late, history = _collection(args)
    world = _world(collection, history)
    del history
    first = first_import(world)
    print(
        f"First import in process: {first.requests:,} requests for {args.sites:,} seeds "
        f"({first.rows:,} rows; {first.seconds:,.0f} s)"
    )
    scale = 20_000 / args.sites
    budget = max(1, round(default_budget(CDX_RATE, args.budget_minutes) / scale))
    runs = _runs(args, collection, world, first, budget)
    kinds = kinds_of(collection, first)
    full = default_budget(CDX_RATE, args.budget_minutes)
    print(
        f"Budget: {budget:,} requests a night ({full:,} × {args.sites:,} / 20,000), "
        f"{len(runs)} runs; {runs[0].refresh.policy}"
    )
    held = HeldCaptures(lambda urlkey: kinds[collection.page_seed[collection.urlkey_page[urlkey]]])
    _nights(collection, world, runs, args.nights, held)
    _report(runs, first, late, args, scale, budget, held)
    print(
        f"\n(seed {args.seed}; {time.perf_counter() - began:,.0f} s in all: "
        + ", ".join(f"{run.name} {run.seconds:,.0f} s" for run in runs)
        + ")"
    )
    return 0


def _arguments() -> Any:
    parser = argument_parser(__doc__)
    parser.add_argument("--sites", type=int, default=20_000)
    parser.add_argument("--nights", type=int, default=90)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--lists", default="0.02,0.05", help="crawl-list budgets, shares a day")
    parser.add_argument("--gains", default="", help="list gains in days (default: shipped)")
    parser.add_argument("--budget-minutes", type=float, default=40.0)
    parser.add_argument("--due-share", type=float, help="default: shipped")
    parser.add_argument("--unarchived", help="back-off intervals in days, e.g. 7,14,30")
    return parser.parse_args()


def _collection(args: Any) -> tuple[Collection, set[int], list[str]]:
    """The synthetic collection with its late and heavy seeds, described; the late seeds and
    the archive's history."""
    spec = CollectionSpec(
        seeds=args.sites,
        seed=args.seed,
        horizon_nights=args.nights + 40,
        late_share=0.1,
        late_nights=args.nights,
        heavy_seeds=3,
    )
    collection = Collection(spec)
    print(f"Collection (bench.collection, seed {args.seed}; late seeds and heavy seeds on):")
    history = collection.history_lines()
    for line in describe(collection, len(history)):
        print(f"  {line}")
    late = {collection.page_seed[p] for p in collection.first_capture}
    print(
        f"  {len(late):,} never-captured seeds that the archive starts capturing during the "
        f"{args.nights} nights; {spec.heavy_seeds} seeds with {spec.heavy_pages:,} more "
        "pages"
    )
    return collection, late, history


def _runs(
    args: Any, collection: Collection, world: World, first: FirstImport, budget: int
) -> list[Run]:
    """A shipped refresh for each list budget and gain, each with its list and a full
    refresh's list beside it, on the homepages with a capture in the list's window."""
    lists = [float(x) for x in args.lists.split(",") if x]
    gains = [float(x) for x in args.gains.split(",") if x] or [RefreshPolicy().list_gain]
    collection.draw(args.nights)
    listed = sorted(first.own)
    hist, made, versions = homepage_truth(collection, listed, args.nights)
    keep = [i for i, h in enumerate(hist) if h.size and h[-1] >= world.start / DAY - 1095]
    sites = [listed[i] for i in keep]
    truth = ([hist[i] for i in keep], [made[i] for i in keep], [versions[i] for i in keep])
    print(f"Lists of {len(sites):,} sites")
    runs = []
    for share in lists:
        k = max(1, round(share * len(sites)))
        for gain in gains:
            runs.append(
                Run(
                    f"list {share:.0%}, gain {gain:g}",
                    Shipped(world, first, budget=budget, policy=_policy(args, gain)),
                    ListWorld.start(sites, *truth, k, world.start / DAY),
                    ListWorld.start(sites, *truth, k, world.start / DAY),
                )
            )
    return runs


def _policy(args: Any, gain: float) -> RefreshPolicy:
    """The shipped rule, with the list gain and any setting given on the command line."""
    shipped = RefreshPolicy()
    return RefreshPolicy(
        max_age_days=shipped.max_age_days,
        due_share=args.due_share or shipped.due_share,
        list_gain=gain,
        spread_from=shipped.spread_from,
        unarchived_intervals=(
            tuple(float(x) for x in args.unarchived.split(","))
            if args.unarchived
            else shipped.unarchived_intervals
        ),
    )


def _world(collection: Collection, history: list[str]) -> World:
    from archive.wayback import ArchiveClient, ArchiveConfig
    from testbed.ia_server import IAState

    state = IAState(lines=sorted(history))
    config = ArchiveConfig(
        cdx_url="http://127.0.0.1:9/cdx/search/cdx", wayback_url="http://127.0.0.1:9/web"
    )
    # The client only builds parameters here (no request is sent, so Redis is never reached).
    return World(collection, state, ArchiveClient(config, redis.Redis(port=9)))


def _nights(
    collection: Collection, world: World, runs: list[Run], nights: int, held: HeldCaptures
) -> None:
    """Every night: the archive indexes, each run refreshes and its list is crawled, the full
    lists learn everything indexed and are crawled too; at the marked nights, the share of the
    new captures indexed that each run holds, per kind of host."""
    homes = {collection.seeds[s].pages[0]: s for s in range(len(collection.seeds))}
    for n in range(1, nights + 1):
        lines = collection.night(n)
        world.state.add_lines(lines)
        now = world.start + n * DAY
        seen_home = _index(collection, world, lines, homes, n, held)
        for run in runs:
            clock = time.perf_counter()
            _step(run, world, n, now, seen_home)
            run.seconds += time.perf_counter() - clock
        if n in MARKS or n == nights:
            for run in runs:
                run.held[n] = held.on_night(run.refresh.new, n, KINDS)
        if n % 10 == 0:
            print(
                f"  night {n}: "
                + "; ".join(
                    f"{r.name}: {r.refresh.nights[-1].requests:,} requests, "
                    f"{r.held.get(n, {}).get('all', float('nan')):.1%} held"
                    for r in runs
                ),
                flush=True,
            )


def _index(
    collection: Collection,
    world: World,
    lines: list[str],
    homes: dict[int, int],
    night: int,
    held: HeldCaptures,
) -> list[tuple[int, float]]:
    """Tonight's indexed lines: the new captures in the seeds' scopes counted visible, and the
    homepage observations a full refresh learns (seed, day made)."""
    start = world.start_stamp
    rows: list[tuple[str, str]] = []
    seen_home: list[tuple[int, float]] = []
    for line in lines:
        urlkey, stamp, _url, _mime, status, _rest = line.split(" ", 5)
        page = collection.urlkey_page[urlkey]
        owner = collection.page_seed[page]
        if owner < 0 or collection.depth[page] > 2 or stamp < start:
            continue
        rows.append((urlkey, stamp))
        if page in homes and status in ("200", "-"):
            seen_home.append((owner, seconds_of(stamp) / DAY))
    held.index(night, rows)
    return seen_home


def _step(run: Run, world: World, n: int, now: int, seen_home: list[tuple[int, float]]) -> None:
    """One run's night: the refresh with the list's stakes, what it learned, both lists'
    crawls, and the waits."""
    stakes = run.budgeted.stakes(now / DAY)
    run.refresh.night(n, stakes)
    for seed, urlkey, stamp in run.refresh.learned:
        run.held_at.setdefault((urlkey, stamp), n)
        if urlkey == world.scopes[seed].homepage:
            run.budgeted.learn(seed, seconds_of(stamp) / DAY)
    for seed, moment in seen_home:
        run.full.learn(seed, moment)
    run.budgeted.crawl(now / DAY + CRAWL_AT)
    run.full.crawl(now / DAY + CRAWL_AT)
    checked = np.array([run.refresh.checked[s] for s in run.refresh.sites])
    run.waits.append(float((now - checked.min()) / DAY))
    run.past.append(int(((now - checked) > 35 * DAY).sum()))


def _report(
    runs: list[Run],
    first: FirstImport,
    late: set[int],
    args: Any,
    scale: float,
    budget: int,
    held: HeldCaptures,
) -> None:
    print(
        f"\nThe first import: one query a seed, {first.requests:,} requests, "
        f"{first.rows:,} rows; the longest took {first.most_pages} pages "
        f"(5,000 rows a page, resume keys)"
    )
    for run in runs:
        print(
            f"\n{run.name}: the nightly refresh as shipped, {args.nights} nights, budget {budget:,}"
        )
        _requests(run, scale)
        print(
            f"  longest wait between checks: {max(run.waits):.1f} days (night "
            f"{int(np.argmax(run.waits)) + 1}); sites past 35 days on any night: "
            f"{max(run.past):,}"
        )
        _unarchived(run, first, late)
        _held(run, held, args.nights)
        _lists(run, args.nights)


def _requests(run: Run, scale: float) -> None:
    """What the run asked of the archive, night by night and in all, what it read, and the
    indexing lag it measured."""
    tallies = run.refresh.nights
    requests = [t.requests for t in tallies]
    print(
        f"  CDX requests a night: min {min(requests):,}, median "
        f"{int(np.median(requests)):,}, max {max(requests):,}"
        + (f" (at 20,000 seeds: max {max(requests) * scale:,.0f})" if scale != 1 else "")
        + f"; group queries a night: min {min(t.groups for t in tallies):,}, "
        f"nights without one: {sum(t.groups == 0 for t in tallies)}"
    )
    whole = Tally()
    for t in tallies:
        whole.add(t)
    print(
        f"  requests in all: {whole.queries:,} queries ({whole.groups:,} grouped, "
        f"{whole.wide:,} of them wide), {whole.pages:,} more pages, {whole.sizing:,} "
        f"size questions, {whole.audit:,} audit; the due share paid "
        f"{whole.due_requests:,} (most in a night "
        f"{max(t.due_requests for t in tallies):,})"
    )
    print(
        f"  rows read {whole.rows:,} for {whole.new:,} new captures: "
        f"{whole.rows / max(1, whole.new):.1f} a new capture; longest query "
        f"{whole.most_pages} pages, {whole.most_rows:,} rows; splits {whole.splits}, "
        f"sites deferred {whole.deferred:,}; captures found late {whole.late:,}"
    )
    lags, pooled = run.refresh.lags()
    own = sorted(lags.values())
    print(
        f"  the indexing lag measured: {pooled:g} days over every host"
        + (
            f"; {len(own):,} hosts with late captures counted, their margins "
            f"{own[0]:g}-{own[-1]:g} days"
            if own
            else ""
        )
    )


def _held(run: Run, held: HeldCaptures, nights: int) -> None:
    """Both readings of the new captures held (``bench.held_captures``), per kind of host."""
    marks = sorted(run.held)
    print("  new captures held on night N of the run (of those indexed by then):")
    _table(marks, [run.held[m] for m in marks], "night")
    after = [m for m in MARKS if m <= nights]
    print("  new captures held N nights after the archive indexed them:")
    _table(after, [held.after_visible(run.held_at, m, nights, KINDS) for m in after], "after")


def _table(marks: list[int], shares: list[dict[str, float]], label: str) -> None:
    print("    " + f"{'':<20}" + "".join(f"{label + ' ' + str(m):>10}" for m in marks))
    for kind in ("all", "lone", *KINDS):
        print("    " + f"{kind:<20}" + "".join(f"{s[kind]:>10.1%}" for s in shares))


def _unarchived(run: Run, first: FirstImport, late: set[int]) -> None:
    """The seeds the first import found no capture of: how often they were asked again, and
    how many of those the archive started capturing HACS now holds."""
    refresh = run.refresh
    asks = refresh.asks
    gaps = [b - a for s in asks for a, b in zip(asks[s], asks[s][1:], strict=False)]
    end = refresh.world.start + len(refresh.nights) * DAY
    still = [s for s in refresh.sites if s not in refresh.captured]
    waiting = [end - max(asks.get(s, [refresh.world.start])) for s in still]
    found = (refresh.captured - set(first.own)) & late
    print(
        f"  seeds without captures at the first import: "
        f"{len(refresh.sites) - len(first.own):,}; asked again "
        f"{sum(len(a) - 1 for a in asks.values()):,} times, the longest between two asks "
        f"{max(gaps, default=0) / DAY:.1f} days, the longest since the last ask at the end "
        f"{max(waiting, default=0) / DAY:.1f} days; of the {len(late):,} the archive started "
        f"capturing, HACS holds captures of {len(found):,}"
    )


def _lists(run: Run, nights: int) -> None:
    spans = [(1, min(LIST_DAYS, nights))]
    if nights > LIST_DAYS:
        spans += [(LIST_DAYS + 1, nights), (1, nights)]
    for first, last in spans:
        b, f = sum(run.budgeted.found[first - 1 : last]), sum(run.full.found[first - 1 : last])
        blind = sum(run.budgeted.blind[first - 1 : last])
        print(
            f"  crawl list of {run.budgeted.k:,} a day, nights {first}-{last}: changes found "
            f"{b:,} after budgeted nights, {f:,} after full refreshes: {b / max(1, f):.1%} "
            f"({blind:,} crawls of a site whose newest archive copy HACS had not learned, "
            f"against {sum(run.full.blind[first - 1 : last]):,})"
        )


if __name__ == "__main__":
    sys.exit(main())
