"""Closed-loop replay on the demo archive: does the daily list find more changes than crawling in
turn, at random, with the paper's probability, on Nutch's adaptive schedule or at LambdaCrawl's
optimal rates? And how close does it come to a list that knows every site's true rate?

Run from the project root::

    .venv/bin/python -m bench.replay [--sites N] [--seeds 0,1,2] [--no-bursts] [--days 28]
                                     [--periods 3] [--budgets 0.02,0.05]
                                     [--level homepage|website] [--e-days E] [--learned]

For each seed it writes a demo archive with known truth (``hacs_demo``; ``--no-bursts``: pages
add links as plain Poisson processes) into a temporary directory, reads each site's
observations and update flags (DESIGN rules 1 and 3, as HACS stores them) and its true change
times from the archive's truth file, and replays ``--days`` days of crawling for each budget (a
share of the sites a day) from ``--periods`` start dates, the last ending with the archive
(``hacs.replay``). It prints, per budget, each policy's changes found and crawls made by seed
(summed over the periods), then the LWS measures summed over seeds and periods: bandwidth
utilisation (changes found per crawl), coverage and timeliness, and the largest number of days
any site was listed; last, per seed and budget, whether HACS's list found at least as many
changes as round-robin, Nutch adaptive (both readings of ``hacs.baselines``) and LambdaCrawl
and 95 % of the true-rate list's, every policy making all its k × days crawls. Same seeds, same
figures.

``--learned`` also replays the learned schedulers (``hacs.learning``), each trained afresh for
every period on the year of history before it (the period's own days never seen): GP4C (a score
function over 12-week windows, NDCG at a 5 % budget, the default generations and population)
and LWS (the regression of the wait for the next update, samples every 7 days).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from bench.common import END, START, before, bench_parser, demo_archive, load, read_truth
from hacs.defaults import E_DAYS
from hacs.evaluation import ObservationTable, reference_points
from hacs.learning import gp4c, lws
from hacs.replay import POLICIES, Policy, PolicyResult, ReplayState, replay
from hacs.sessions import session_probabilities


def sessions_policy(state: ReplayState) -> np.ndarray:
    """HACS's list read with sessions (``hacs.sessions``), the candidate weighed against the
    default (docs/readings.md, "Real scholarly homepages")."""
    times, flags, offsets = state.arrays()
    return session_probabilities(
        times, flags, offsets, t=state.list_instant, e=state.e_days, history_days=state.history_days
    )


#: Candidates replayed by name beside POLICIES (``--policies``).
CANDIDATES: dict[str, Policy] = {"hacs_sessions": sessions_policy}


def learned_policies(history: tuple[np.ndarray, ...], start: float, seed: int) -> dict[str, Policy]:
    """GP4C and LWS trained on the year before ``start`` (the module docstring)."""
    times, flags, offsets = history
    counts = np.diff(offsets)
    site = np.repeat(np.arange(counts.size), counts)
    index = np.arange(times.size) - np.repeat(offsets[:-1], counts)
    table = ObservationTable(
        site=site,
        page=site,
        time=times,
        page_index=index,
        link_floor=np.where(flags, -1, index - 1),
        n_sites=counts.size,
    )
    first = max(start - 365.0, 7.0 * 12)
    began = time.perf_counter()
    evolution = gp4c.learn_gp4c(table, start=first, end=start - 7.0, w_weeks=12, seed=seed)
    x, y, groups, _ = lws.lws_samples(
        times, flags, offsets, reference_points(first, start - 7.0, 7.0), horizon_end=start
    )
    model = lws.fit_lws(x, y, seed=seed, groups=groups, period=(first, start - 7.0))
    print(
        f"  learned for the period from day {start:g} in {time.perf_counter() - began:.0f} s: "
        f"GP4C {evolution.function.formula[:70]}"
    )
    return {
        "gp4c": gp4c.replay_policy(evolution.function, w_weeks=12),
        "lws": lws.replay_policy(model),
    }


def _arguments() -> argparse.Namespace:
    parser = bench_parser(__doc__, sites=400)
    parser.add_argument("--seeds", help="comma-separated seeds (default: --seed)")
    parser.add_argument("--days", type=int, default=28)
    parser.add_argument("--periods", type=int, default=3)
    parser.add_argument("--budgets", default="0.02,0.05")
    parser.add_argument("--level", choices=("homepage", "website"), default="homepage")
    parser.add_argument("--e-days", type=float, default=E_DAYS)
    parser.add_argument("--policies", default=",".join(POLICIES))
    parser.add_argument("--learned", action="store_true", help="also GP4C and LWS, trained")
    return parser.parse_args()


def replay_seed(
    args: argparse.Namespace,
    seed: int,
    starts: list[int],
    results: dict[float, dict[int, dict[str, list[PolicyResult]]]],
) -> None:
    """One seed's demo archive replayed from every start at every budget, into
    ``results[share][seed][policy]`` (one PolicyResult per period)."""
    began = time.perf_counter()
    bursts = "without bursts" if args.no_bursts else "with bursts"
    with demo_archive(args.sites, seed, bursts=not args.no_bursts) as demo:
        observed, changes, rates = load(read_truth(demo), args.level)
    print(
        f"Demo archive: {args.sites} sites, seed {seed}, {bursts}, {args.level} level "
        f"({time.perf_counter() - began:.0f} s to write and read)",
        flush=True,
    )
    learned = {
        start: learned_policies(before(observed, start), float(start), seed)
        for start in (starts if args.learned else [])
    }
    names = args.policies.split(",")
    extra = {name: CANDIDATES[name] for name in names if name in CANDIDATES}
    policies = [name for name in names if name not in CANDIDATES]
    for share, by_seed in results.items():
        totals = by_seed.setdefault(seed, {})
        for start in starts:
            for result in replay(
                history=before(observed, start),
                changes=changes,
                start=float(start),
                days=args.days,
                budget=max(1, round(share * args.sites)),
                policies=policies,
                e_days=args.e_days,
                true_rates=rates,
                seed=seed + start,
                extra={**extra, **learned.get(start, {})},
            ):
                totals.setdefault(result.policy, []).append(result)
    print(f"  replayed in {time.perf_counter() - began:.0f} s", flush=True)


def main() -> int:
    args = _arguments()
    seeds = [int(s) for s in args.seeds.split(",")] if args.seeds else [args.seed]
    shares = [float(b) for b in args.budgets.split(",")]
    span = (END - START).days
    starts = [span - args.days * (k + 1) for k in range(args.periods)]
    bursts = "without bursts" if args.no_bursts else "with bursts"
    results: dict[float, dict[int, dict[str, list[PolicyResult]]]] = {s: {} for s in shares}
    for seed in seeds:
        replay_seed(args, seed, starts, results)
    for share in shares:
        budget = max(1, round(share * args.sites))
        print(
            f"\nBudget {share:.0%} a day ({budget} sites), {args.periods} period(s) of "
            f"{args.days} days, e = {args.e_days:g}, {args.sites} sites {bursts}"
        )
        print_by_seed(results[share])
        print_measures(results[share])
    print_done_when(results, args.days * args.periods, args.sites)
    return 0


def print_by_seed(by_seed: dict[int, dict[str, list[PolicyResult]]]) -> None:
    """Changes found / crawls made per policy and seed, summed over the periods, and in all."""
    seeds = list(by_seed)
    names = list(by_seed[seeds[0]])
    print(
        f"{'changes found/crawls made':26}"
        + "".join(f"{f'seed {s}':>14}" for s in seeds)
        + f"{'all':>15}"
    )
    for name in names:
        cells = [_found_crawls(by_seed[s][name]) for s in seeds]
        found, crawls = sum(c[0] for c in cells), sum(c[1] for c in cells)
        print(
            f"{name:26}"
            + "".join(f"{f'{f}/{c}':>14}" for f, c in cells)
            + f"{f'{found}/{crawls}':>15}"
        )


def print_measures(by_seed: dict[int, dict[str, list[PolicyResult]]]) -> None:
    """The LWS measures per policy over every seed and period."""
    print("over every seed and period:")
    print(
        f"{'policy':16} {'found/crawls':>14} {'utilisation':>11} "
        f"{'coverage':>9} {'delay (d)':>9} {'max days':>8} {'overlisted':>10}"
    )
    for name in next(iter(by_seed.values())):
        rows = [r for seed in by_seed.values() for r in seed[name]]
        crawls = sum(r.crawls for r in rows)
        found = sum(r.found for r in rows)
        changes_total = sum(r.changes for r in rows)
        caught = sum(r.caught for r in rows)
        delays = [r.mean_delay_days * r.caught for r in rows if r.mean_delay_days is not None]
        delay = sum(delays) / caught if caught else float("nan")
        print(
            f"{name:16} {found:>6}/{crawls:<7} {found / max(crawls, 1):>11.3f} "
            f"{caught / max(changes_total, 1):>9.3f} {delay:>9.1f} "
            f"{max(r.most_days_listed for r in rows):>8} "
            f"{sum(r.overlisted_sites for r in rows):>10}"
        )


#: The peers the demo replay's done-when holds HACS against, cell by cell.
DONE_WHEN_PEERS = ("lambdacrawl", "nutch_fresh")


@dataclass(frozen=True)
class CellStanding:
    """In how many cells HACS found at least every peer, of how many cells with HACS and every
    peer, and the largest shortfall in the rest (1 − HACS ÷ the best peer; 0 when none)."""

    met: int
    total: int
    worst: float


def cells_at_least(
    cells: Mapping[tuple[float, int], Mapping[str, int]], peers: Sequence[str]
) -> CellStanding:
    """How HACS's changes found stand against ``peers`` in every cell (budget, seed) that holds
    HACS and all of them."""
    met = total = 0
    worst = 0.0
    for found in cells.values():
        if "hacs" not in found or any(p not in found for p in peers):
            continue
        total += 1
        best = max(found[p] for p in peers)
        if found["hacs"] >= best:
            met += 1
        else:
            worst = max(worst, 1.0 - found["hacs"] / best)
    return CellStanding(met, total, worst)


def print_done_when(
    results: dict[float, dict[int, dict[str, list[PolicyResult]]]], days: int, sites: int
) -> None:
    """Per budget and seed: HACS's changes found against round-robin's, Nutch adaptive's (both
    readings), LambdaCrawl's and 95 % of the true-rate list's, and whether every policy made
    its k × days crawls; then in how many cells HACS found at least every DONE_WHEN_PEERS."""
    print("\nHACS against the baselines (changes found; crawls made = k × days for all?)")
    cells: dict[tuple[float, int], dict[str, int]] = {}
    for share, by_seed in results.items():
        budget = max(1, round(share * sites))
        for seed, totals in by_seed.items():
            found = {name: _found_crawls(rows)[0] for name, rows in totals.items()}
            cells[share, seed] = found
            all_made = all(_found_crawls(rows)[1] == budget * days for rows in totals.values())
            if "hacs" not in found:
                continue
            checks = []
            for name in ("round_robin", "nutch_adaptive", "nutch_fresh", "lambdacrawl"):
                if name in found:
                    mark = "≥" if found["hacs"] >= found[name] else "<"
                    checks.append(f"{mark} {name} {found[name]}")
            if "true_rates" in found:
                ratio = found["hacs"] / max(found["true_rates"], 1)
                checks.append(f"{ratio:.1%} of true_rates{'' if ratio >= 0.95 else ' (< 95 %)'}")
            print(
                f"  {share:.0%}, seed {seed}: hacs {found['hacs']} "
                + ", ".join(checks)
                + f"; crawls {'all made' if all_made else 'MISSING'}"
            )
    standing = cells_at_least(cells, DONE_WHEN_PEERS)
    if standing.total:
        print(
            f"  HACS ≥ {' and ≥ '.join(DONE_WHEN_PEERS)} in {standing.met} of {standing.total} "
            f"cells (budget × seed); the largest shortfall {standing.worst:.1%}"
        )


def _found_crawls(rows: list[PolicyResult]) -> tuple[int, int]:
    return sum(r.found for r in rows), sum(r.crawls for r in rows)


if __name__ == "__main__":
    sys.exit(main())
