"""What a nightly CDX request budget costs in changes found (issue 26, points 2 and 6): the
closed-loop replay with the archive capturing during the period, refreshed every night, on a
budget, or never.

Run from the project root::

    .venv/bin/python -m bench.refresh_replay [--sites 1200] [--seed 0] [--days 28] [--periods 3]
        [--crawl-budget 0.05] [--budgets 0.02,0.05,0.10] [--max-age 30] [--index-lag 0]
        [--realdata ../shared/realdata]

It writes a demo archive with known truth (``hacs_demo``, as ``bench.replay``) and replays
``--days`` days of crawling ``--crawl-budget`` of the sites a day with HACS's list (``hacs``)
from ``--periods`` start dates, the last ending with the archive (``hacs.replay`` with
``archive=``). The archive keeps capturing during the period (the demo's own homepage captures)
and HACS learns a capture only when the nightly refresh has checked its site:

* ``every night``: every site checked each night (the requests a full pass costs);
* ``budget``: ``--budgets`` CDX requests a night, as a share of the sites, chosen by
  ``hacs.refresh_budget.choose_queries`` (capture rates from ``capture_rate``, ``--max-age``);
* ``never``: the floor.

Each runs with one query per site, and with the queries ``plan_queries`` makes of the demo's
seeds (one per host, ``by host``). At the start of a period every site was last checked at a
time drawn uniformly over the ``--max-age`` days before (the steady state of a refresh that keeps
the max age): the history is what the archive held by then, the captures since are the stream.
Every refresh policy replays the same sites, captures, truth and crawl budget; what a crawl finds
does not depend on the refresh (``hacs.replay``), so they differ only in what the list knows.

The table: CDX requests a night (budget, spent), changes found and crawls summed over the
periods, the loss against every night and where it comes from: the changes lost on the sites
whose captures of the period this refresh learned late (more than a day after they were made,
``hacs.replay.LATE_DAYS``: ``late``) and on the others (``other``: the crawls the list moved);
then the *blind* crawls (of a site whose newest archive capture HACS had not learned), those of
them that found nothing (the archive held the change already), the due site-nights the budget
left waiting (the max age not kept), and the mean delay from a capture made in the period to the
check that learned it.

``--realdata`` repeats it on real capture times: the three Archive-It collections of
``offtopic-goldstandard`` (590 seeds' memento timelines, no bodies, so no truth). The changes are
simulated there (Poisson, each seed's rate drawn from a Gamma of mean 1/141.5 a day, the paper's
homepage mean interval, shape 0.5, ``--seed``), and the history's update flags read from them:
real capture times, simulated changes. One query per seed.
"""

from __future__ import annotations

import argparse
import csv
import sys
import time
from collections import defaultdict
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import END, ROOT, START, Observed, bench_parser, demo_archive, load, read_truth
from hacs.defaults import E_DAYS
from hacs.formats.queries import CdxQuery, RefreshSeed, plan_queries
from hacs.refresh_budget import RefreshPolicy
from hacs.replay import ArchiveStream, PolicyResult, Refresh, replay

REALDATA = ROOT.parent / "shared" / "realdata"
OFFTOPIC = ("1068", "2358", "2950")
PAPER_HOMEPAGE_INTERVAL_DAYS = 141.5  # the HACS paper's mean interval between homepage updates
CHANGE_RATE_SHAPE = 0.5  # an assumption: rates spread over an order of magnitude and more


def split(
    observed: Observed, cut: np.ndarray
) -> tuple[tuple[np.ndarray, np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]:
    """Each site's observations before its last check ``cut[i]`` (the history, its first
    observation the baseline) and from it on (the archive's stream)."""
    h_times: list[float] = []
    h_flags: list[bool] = []
    h_offsets = [0]
    s_times: list[float] = []
    s_offsets = [0]
    for (times, flags), at in zip(observed, cut, strict=True):
        kept = [i for i, t in enumerate(times) if t < at]
        h_times += [times[i] for i in kept]
        kept_flags = [flags[i] for i in kept]
        if kept_flags:
            kept_flags[0] = False
        h_flags += kept_flags
        h_offsets.append(len(h_times))
        s_times += [t for t in times if t >= at]
        s_offsets.append(len(s_times))
    history = (np.array(h_times), np.array(h_flags, dtype=bool), np.array(h_offsets))
    return history, (np.array(s_times), np.array(s_offsets))


class Runs:
    """The replays of one data set, summed over periods, by (refresh, queries, budget)."""

    def __init__(self) -> None:
        self.rows: dict[tuple[str, str, float], list[PolicyResult]] = defaultdict(list)
        self.budget: dict[tuple[str, str, float], set[int]] = defaultdict(set)
        self.nights = 0

    def run(
        self,
        observed: Observed,
        changes: list[list[float]],
        *,
        start: float,
        days: int,
        crawl_budget: int,
        groupings: dict[str, list[CdxQuery] | None],
        shares: Sequence[float],
        max_age: float,
        index_lag: float,
        seed: int,
        e_days: float,
    ) -> None:
        rng = np.random.default_rng(seed)
        checked = start - rng.uniform(0.0, max_age, size=len(observed))
        history, (s_times, s_offsets) = split(observed, checked)
        self.nights += days
        for grouping, queries in groupings.items():
            archive = ArchiveStream(s_times, s_offsets, queries=queries, checked=checked)
            for name, share, refresh in self._plans(
                grouping, shares, len(observed), max_age=max_age, index_lag=index_lag
            ):
                (result,) = replay(
                    history=history,
                    changes=changes,
                    start=start,
                    days=days,
                    budget=crawl_budget,
                    policies=["hacs"],
                    e_days=e_days,
                    seed=seed,
                    archive=archive,
                    refresh=refresh,
                )
                self.rows[(name, grouping, share)].append(result)

    def _plans(
        self,
        grouping: str,
        shares: Sequence[float],
        sites: int,
        *,
        max_age: float,
        index_lag: float,
    ) -> list[tuple[str, float, Refresh]]:
        """The refreshes replayed: every night, never, and on each budget (a share of the
        sites' requests a night) with HACS's rule, alone and with the list's weight."""
        plans = [
            ("every night", 0.0, Refresh("every_night", index_lag_days=index_lag)),
            ("never", 0.0, Refresh("never")),
        ]
        rule = RefreshPolicy(max_age_days=max_age)
        for share in shares:
            requests = max(1, round(share * sites))
            # "budget+list" is HACS's rule: the sites on tonight's provisional list (twice the
            # crawl budget) weigh by their probability (hacs.refresh_budget.site_price).
            for name, list_share in (("budget", None), ("budget+list", 2.0)):
                refresh = Refresh(
                    "budget",
                    budget=requests,
                    rule=rule,
                    index_lag_days=index_lag,
                    list_share=list_share,
                )
                plans.append((name, share, refresh))
                self.budget[(name, grouping, share)].add(requests)
        return plans

    def print(self, title: str) -> None:
        print(f"\n{title}")
        print(
            f"{'refresh':12} {'queries':7} {'CDX budget':>12} {'spent/night':>11} "
            f"{'found/crawls':>12} {'loss':>6} {'late':>6} {'other':>6} {'blind':>6} "
            f"{'nothing':>7} {'due waits':>9} {'learn (d)':>9}"
        )
        for (name, grouping, share), rows in self.rows.items():
            every = self.rows[("every night", grouping, 0.0)]
            found = sum(r.found for r in rows)
            base = sum(r.found for r in every)
            # The loss by site: on the sites this refresh learned late, and on the others.
            late = other = 0
            for r, e in zip(rows, every, strict=True):
                lost = np.array(e.found_by_site) - np.array(r.found_by_site)
                on_late = np.zeros(lost.size, dtype=bool)
                on_late[list(r.late_sites)] = True
                late += int(lost[on_late].sum())
                other += int(lost[~on_late].sum())
            blind = sum(r.blind_crawls for r in rows)
            nothing = blind - sum(r.blind_found for r in rows)
            learned = sum(r.captures_learned for r in rows)
            delay = sum((r.mean_learn_delay_days or 0.0) * r.captures_learned for r in rows)
            sizes = self.budget[(name, grouping, share)]
            budget = (
                "-"
                if not name.startswith("budget")
                else f"{share:.0%}" + (f" = {min(sizes):,}" if len(sizes) == 1 else "")
            )
            spent = sum(r.cdx_requests for r in rows) / self.nights
            print(
                f"{name:12} {grouping:7} {budget:>12} {spent:>11,.0f} "
                f"{found:>5}/{sum(r.crawls for r in rows):<6} "
                f"{100 * (base - found) / max(base, 1):>5.1f}% {late:>6} {other:>6} "
                f"{blind:>6} {nothing:>7} {sum(r.due_waits for r in rows):>9,} "
                f"{delay / learned if learned else float('nan'):>9.1f}"
            )


def demo_queries(truth: dict[str, Any]) -> list[CdxQuery]:
    """``plan_queries`` over the demo's seeds, site indices as ids, every seed refreshed from
    the archive's start (so that seeds of one host are grouped)."""
    since = START.strftime("%Y%m%d")
    seeds = [RefreshSeed(i, site["seed_url"], since) for i, site in enumerate(truth["sites"])]
    return plan_queries(seeds)


def offtopic(path: Path, seed: int) -> tuple[Observed, list[list[float]]]:
    """One Archive-It collection's seeds: their memento times (days since 1970, each instant
    once), simulated changes over the collection's span, and update flags read from them."""
    stamps: dict[str, set[float]] = defaultdict(set)
    with path.open(encoding="utf-8", newline="") as handle:
        for row in csv.DictReader(handle, delimiter="\t"):
            moment = datetime.strptime(row["date"].strip(), "%Y%m%d%H%M%S").replace(tzinfo=UTC)
            stamps[row["id"].strip()].add(moment.timestamp() / 86400.0)
    first = min(min(s) for s in stamps.values())
    last = max(max(s) for s in stamps.values())
    rng = np.random.default_rng(seed)
    observed: Observed = []
    changes: list[list[float]] = []
    for key in sorted(stamps, key=int):
        times = sorted(stamps[key])
        rate = rng.gamma(CHANGE_RATE_SHAPE, 1 / (PAPER_HOMEPAGE_INTERVAL_DAYS * CHANGE_RATE_SHAPE))
        count = rng.poisson(rate * (last + 1 - first))
        change = np.sort(rng.uniform(first, last + 1, size=count))
        flags = [
            i > 0 and bool(np.any((change > times[i - 1]) & (change <= t)))
            for i, t in enumerate(times)
        ]
        observed.append((times, flags))
        changes.append(change.tolist())
    return observed, changes


def main() -> int:
    parser = bench_parser(__doc__, sites=1200)
    parser.add_argument("--days", type=int, default=28)
    parser.add_argument("--periods", type=int, default=3)
    parser.add_argument("--crawl-budget", type=float, default=0.05, help="share of sites a day")
    parser.add_argument(
        "--budgets", default="0.02,0.05,0.10", help="CDX requests a night, as shares of the sites"
    )
    parser.add_argument("--max-age", type=float, default=30.0)
    parser.add_argument("--index-lag", type=float, default=0.0)
    parser.add_argument("--e-days", type=float, default=E_DAYS)
    parser.add_argument("--realdata", type=Path, default=REALDATA)
    parser.add_argument("--skip-demo", action="store_true")
    args = parser.parse_args()
    shares = [float(b) for b in args.budgets.split(",")]
    options = dict(
        days=args.days,
        shares=shares,
        max_age=args.max_age,
        index_lag=args.index_lag,
        e_days=args.e_days,
    )

    began = time.perf_counter()
    if not args.skip_demo:
        _demo(args, options, began)
    folder = args.realdata / "offtopic-goldstandard"
    if not folder.is_dir():
        print(f"\nReal capture times: {folder} is absent; skipped.")
    else:
        _real(args, options, folder)
    print(f"\n{time.perf_counter() - began:.0f} s in all")
    return 0


def _demo(args: argparse.Namespace, options: dict[str, Any], began: float) -> None:
    """The replays on the demo archive, by site and by host."""
    with demo_archive(args.sites, args.seed, bursts=not args.no_bursts) as demo:
        truth = read_truth(demo)
    observed, changes, _rates = load(truth, "homepage")
    by_host = demo_queries(truth)
    groupings: dict[str, list[CdxQuery] | None] = {"site": None, "host": by_host}
    print(
        f"Demo archive: {args.sites} sites, seed {args.seed}, homepage level, "
        f"{len(by_host)} host queries; keeping a max age of {args.max_age:g} d takes "
        f"{args.sites / args.max_age:.0f} requests a night by site, "
        f"{len(by_host) / args.max_age:.0f} by host "
        f"({time.perf_counter() - began:.0f} s to write and read)"
    )
    del truth
    runs = Runs()
    span = (END - START).days
    for k in range(args.periods):
        start = span - args.days * (k + 1)
        runs.run(
            observed,
            changes,
            start=float(start),
            crawl_budget=max(1, round(args.crawl_budget * args.sites)),
            groupings=groupings,
            seed=args.seed + start,
            **options,
        )
    runs.print(
        f"Demo: crawl {args.crawl_budget:.0%} a day, {args.periods} periods of {args.days} "
        f"days, max age {args.max_age:g} d, index lag {args.index_lag:g} d, e = "
        f"{args.e_days:g}; seed {args.seed}"
    )
    print(f"({time.perf_counter() - began:.0f} s so far)")


def _real(args: argparse.Namespace, options: dict[str, Any], folder: Path) -> None:
    """The replays on real capture times, one query per seed."""
    runs = Runs()
    sites = 0
    for name in OFFTOPIC:
        observed, changes = offtopic(folder / f"{name}_label_gold.tsv", args.seed)
        sites += len(observed)
        last = max(t for times, _ in observed for t in times)
        end = float(np.floor(last)) + 1.0
        for k in range(args.periods):
            start = end - args.days * (k + 1)
            runs.run(
                observed,
                changes,
                start=start,
                crawl_budget=max(1, round(args.crawl_budget * len(observed))),
                groupings={"site": None},
                seed=args.seed + k,
                **options,
            )
    runs.print(
        f"Real capture times (offtopic-goldstandard, {sites} seeds in 3 Archive-It "
        f"collections, the last {args.periods} × {args.days} days of each), simulated "
        f"changes; seed {args.seed}"
    )


if __name__ == "__main__":
    sys.exit(main())
