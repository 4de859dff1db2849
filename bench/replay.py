"""Closed-loop replay on the demo archive: does the daily list find more changes than crawling in
turn, at random, or with the paper's probability? And how close does it come to a list that
knows every site's true rate?

Run from the project root::

    .venv/bin/python -m bench.replay [--sites N] [--seed S] [--days 28] [--periods 3]
                                     [--budgets 0.02,0.05] [--level homepage|website] [--e-days E]
                                     [--learned]

It writes a demo archive with known truth (``hacs_demo``) into a temporary directory, reads each
site's observations and update flags (DESIGN rules 1 and 3, as HACS stores them) and its true
change times from the archive's truth file, and replays ``--days`` days of crawling for each
budget (a share of the sites a day) from ``--periods`` start dates, the last ending with the
archive (``hacs.replay``). It prints, per policy, the LWS measures summed over the periods:
bandwidth utilisation (changes found per crawl), coverage and timeliness, and the largest number
of days any site was listed. Same seed, same figures.

``--learned`` also replays the learned schedulers (``hacs.learning``), each trained afresh for
every period on the year of history before it (the period's own days never seen): GP4C (a score
function over 12-week windows, NDCG at a 5 % budget, the default generations and population)
and LWS (the regression of the wait for the next update, samples every 7 days).
"""

from __future__ import annotations

import sys
import time

import numpy as np

from bench.common import END, START, before, bench_parser, demo_archive, load, read_truth
from hacs.defaults import E_DAYS
from hacs.evaluation import ObservationTable, reference_points
from hacs.learning import gp4c, lws
from hacs.replay import POLICIES, Policy, PolicyResult, replay


def learned_policies(history: tuple[np.ndarray, ...], start: float, seed: int) -> dict[str, Policy]:
    """GP4C and LWS trained on the year before ``start`` (the module docstring)."""
    times, flags, offsets = history
    counts = np.diff(offsets)
    site = np.repeat(np.arange(counts.size), counts)
    index = np.arange(times.size) - np.repeat(offsets[:-1], counts)
    table = ObservationTable(
        site=site, page=site, time=times, page_index=index,
        link_floor=np.where(flags, -1, index - 1), n_sites=counts.size,
    )  # fmt: skip
    first = max(start - 365.0, 7.0 * 12)
    began = time.perf_counter()
    evolution = gp4c.learn_gp4c(table, start=first, end=start - 7.0, w_weeks=12, seed=seed)
    x, y, groups, _ = lws.lws_samples(
        times, flags, offsets, reference_points(first, start - 7.0, 7.0), horizon_end=start
    )
    model = lws.fit_lws(x, y, seed=seed, groups=groups, period=(first, start - 7.0))
    print(f"  learned for the period from day {start:g} in {time.perf_counter() - began:.0f} s: "
          f"GP4C {evolution.function.formula[:70]}")  # fmt: skip
    return {
        "gp4c": gp4c.replay_policy(evolution.function, w_weeks=12),
        "lws": lws.replay_policy(model),
    }


def main() -> int:
    parser = bench_parser(__doc__, sites=400)
    parser.add_argument("--days", type=int, default=28)
    parser.add_argument("--periods", type=int, default=3)
    parser.add_argument("--budgets", default="0.02,0.05")
    parser.add_argument("--level", choices=("homepage", "website"), default="homepage")
    parser.add_argument("--e-days", type=float, default=E_DAYS)
    parser.add_argument("--policies", default=",".join(POLICIES))
    parser.add_argument("--learned", action="store_true", help="also GP4C and LWS, trained")
    args = parser.parse_args()

    began = time.perf_counter()
    with demo_archive(args.sites, args.seed) as demo:
        observed, changes, rates = load(read_truth(demo), args.level)
        print(f"Demo archive: {args.sites} sites, seed {args.seed}, {args.level} level "
              f"({time.perf_counter() - began:.0f} s to write and read)")  # fmt: skip
    span = (END - START).days
    starts = [span - args.days * (k + 1) for k in range(args.periods)]
    policies = args.policies.split(",")
    learned = {
        start: learned_policies(before(observed, start), float(start), args.seed)
        for start in (starts if args.learned else [])
    }
    for share in (float(b) for b in args.budgets.split(",")):
        budget = max(1, round(share * args.sites))
        names = policies + (["gp4c", "lws"] if args.learned else [])
        totals: dict[str, list[PolicyResult]] = {name: [] for name in names}
        for start in starts:
            results = replay(
                history=before(observed, start), changes=changes, start=float(start),
                days=args.days, budget=budget, policies=policies, e_days=args.e_days,
                true_rates=rates, seed=args.seed + start, extra=learned.get(start),
            )  # fmt: skip
            for result in results:
                totals[result.policy].append(result)
        print(f"\nBudget {share:.0%} a day ({budget} sites), {args.periods} periods of "
              f"{args.days} days, e = {args.e_days:g}")  # fmt: skip
        print(f"{'policy':16} {'found/crawls':>14} {'utilisation':>11} {'coverage':>9} "
              f"{'delay (d)':>9} {'max days':>8} {'overlisted':>10}")  # fmt: skip
        for name, rows in totals.items():
            crawls = sum(r.crawls for r in rows)
            found = sum(r.found for r in rows)
            changes_total = sum(r.changes for r in rows)
            caught = sum(r.caught for r in rows)
            delays = [r.mean_delay_days * r.caught for r in rows if r.mean_delay_days is not None]
            delay = sum(delays) / caught if caught else float("nan")
            print(f"{name:16} {found:>6}/{crawls:<7} {found / crawls:>11.3f} "
                  f"{caught / max(changes_total, 1):>9.3f} {delay:>9.1f} "
                  f"{max(r.most_days_listed for r in rows):>8} "
                  f"{sum(r.overlisted_sites for r in rows):>10}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
