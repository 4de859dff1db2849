"""What Evaluation 2 rewards: rankings that know the demo's truth, scored as HACS's default is.

Run from the project root::

    .venv/bin/python -m bench.oracles [--sites 1200] [--seed 0] [--replay-sites 500]
                                      [--skip-evaluation] [--skip-replay] [--level website]

HACS's default ranks a site by the chance that it changed since the newest copy HACS holds.
Evaluation 2 (DESIGN rule 10) counts a site as positive only when *the archive* holds a copy in
(t, t + e] that adds a link. This bench scores, beside HACS's posterior, Cho–Garcia-Molina and
Last-Obs, rankings that know what no estimator can (the demo archive's ``truth.json``), at
homepage level, w = 1 … 12 weeks, e = 7 days, every reference point of the period:

* ``true rate`` — p with each site's true rate: 1 − exp(−λ (t + e − c)), c the newest copy in
  the window (the best any reading of a steady rate can do);
* ``changed since copy`` — whether the homepage truly added a link in (c, t + e] (what the
  crawl list is for, known exactly), ties by the true-rate p;
* ``changes this week`` — whether it truly adds a link in (t, t + e];
* ``true bursts, from copies`` — the demo's own model of each site (its rate between bursts
  λ (1 − n), its branching ratio n and follow-up delay d) read on the archive's copies alone:
  every update seen brings n more changes, an Exponential delay of mean d after the link went
  up (uniform in the interval before the copy), as the retired ``bench.experiments.bursts``
  read them with one (n, d) for all sites (the best a burst model fitted on copies could do);
* ``captured × true rate`` — the true-rate p, but only for the sites the archive does capture
  in (t, t + e] (what the evaluation also asks: will the archive look?), 0 for the rest.

``--level website`` scores the same rankings at website level (the site's true rate the sum
of its pages', a link added on any page at depth ≤ 2, a copy of any page; no burst reading)
beside HACS's website posterior, and skips the replay.

Each row prints its mean weighted P@K and its wins: the w where it is above both
Cho–Garcia-Molina and Last-Obs, to three decimals. The closed-loop replay (``hacs.replay``,
homepage, 3 × 28 days, budgets 2 % and 5 %, e as the crawl list's) then runs the
``true bursts, from copies`` reading as a daily policy beside HACS's, round-robin, random and
the true-rate list: changes found / crawls, and the sites listed on more than half the days
while changed on fewer of them. Same seed, same figures.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from bench.common import (
    EVAL_E_DAYS,
    START_DAYS,
    FloatArray,
    Scorer,
    Windows,
    add_evaluation_and_replay_options,
    bench_parser,
    demo_archive,
    demo_tables,
    load,
    pak_windows,
    print_pak,
    read_truth,
    replay_cells,
    replay_totals,
)
from hacs.evaluation import ObservationTable
from hacs.replay import ReplayState

TIE = 1e-3  # the true-rate p breaks ties within an indicator, never crosses it


def burst_chance(
    times: FloatArray,
    flags: np.ndarray,
    offsets: np.ndarray,
    copy: FloatArray,
    until: float,
    rate: FloatArray,
    n: FloatArray,
    d: FloatArray,
) -> FloatArray:
    """Each timeline's chance of a change in (c, until] under its own Hawkes model (long-run
    rate, branching ratio n, follow-up delay d), read on its copies: the rate between bursts
    λ (1 − n), and n follow-ups of every update seen, each link uniform in the interval before
    its copy. ``copy`` is each timeline's newest copy c."""
    count = np.diff(offsets)
    owner = np.repeat(np.arange(count.size), count)
    first = np.zeros(times.size, dtype=bool)
    first[offsets[:-1][count > 0]] = True
    gap = np.r_[0.0, np.diff(times)]
    update = flags & ~first
    u, o = times[update], owner[update]
    delay, length = d[o], np.maximum(gap[update], 1e-9)
    share = delay / length * -np.expm1(-length / delay)
    weight = share * (np.exp(-(copy[o] - u) / delay) - np.exp(-(until - u) / delay))
    pending = np.bincount(o, weight, minlength=count.size)
    x = rate * (1.0 - n) * np.maximum(until - copy, 0.0) + n * pending
    p: FloatArray = -np.expm1(-x)
    return p


class Truth:
    """Each site's true homepage rate and link-adding times, in the table's days."""

    def __init__(self, truth: dict[str, Any], table: ObservationTable, level: str) -> None:
        sites = sorted(truth["sites"], key=lambda s: int(s["index"]))
        self.rate = np.array([float(s["rate_per_day"][level]) for s in sites])
        self.branching = np.array([float(s["update_model"]["branching_ratio"]) for s in sites])
        self.delay = np.array([float(s["update_model"]["follow_up_mean_days"]) for s in sites])
        # truth.json counts days from the period's start, the table from 1970
        self.adds = [np.asarray(s["update_times"][level], float) + START_DAYS for s in sites]
        order = np.lexsort((table.time, table.site))
        self.site, self.time = table.site[order], table.time[order]

    def any_in(self, sites: np.ndarray, lo: FloatArray, hi: float) -> FloatArray:
        """1 where the site adds a link in (lo, hi]."""
        pairs = zip(sites, lo, strict=True)
        found = [np.any((self.adds[s] > a) & (self.adds[s] <= hi)) for s, a in pairs]
        return np.array(found, dtype=np.float64)

    def captured(self, sites: np.ndarray, lo: float, hi: float) -> FloatArray:
        """1 where the archive holds an observation of the homepage in (lo, hi]."""
        inside = (self.time > lo) & (self.time <= hi)
        seen = np.zeros(self.rate.size)
        seen[np.unique(self.site[inside])] = 1.0
        return seen[sites]


def scorers(windows: Windows, truth: Truth, w: int, level: str) -> dict[str, Scorer]:
    def newest(t: float, sites: np.ndarray) -> FloatArray:
        owner, _, _, _, last = windows.timelines(t - 7.0 * w, t)
        copy: FloatArray = last[np.searchsorted(owner, sites)]
        return copy

    def true_p(t: float, sites: np.ndarray) -> FloatArray:
        p: FloatArray = -np.expm1(-truth.rate[sites] * (t + EVAL_E_DAYS - newest(t, sites)))
        return p

    def true_rate(t: float, sites: np.ndarray, _columns: object) -> FloatArray:
        return true_p(t, sites)

    def since_copy(t: float, sites: np.ndarray, _columns: object) -> FloatArray:
        changed = truth.any_in(sites, newest(t, sites), t + EVAL_E_DAYS)
        return changed + TIE * true_p(t, sites)

    def this_week(t: float, sites: np.ndarray, _columns: object) -> FloatArray:
        changed = truth.any_in(sites, np.full(sites.size, t), t + EVAL_E_DAYS)
        return changed + TIE * true_p(t, sites)

    def bursts(t: float, sites: np.ndarray, _columns: object) -> FloatArray:
        owner, times, flags, offsets, last = windows.timelines(t - 7.0 * w, t)
        p = burst_chance(
            times,
            flags,
            offsets,
            last,
            t + EVAL_E_DAYS,
            truth.rate[owner],
            truth.branching[owner],
            truth.delay[owner],
        )
        chosen: FloatArray = p[np.searchsorted(owner, sites)]
        return chosen

    def captured(t: float, sites: np.ndarray, _columns: object) -> FloatArray:
        return truth.captured(sites, t, t + EVAL_E_DAYS) * true_p(t, sites)

    chosen: dict[str, Scorer] = {
        "true rate": true_rate,
        "changed since copy": since_copy,
        "changes this week": this_week,
        "true bursts, from copies": bursts,
        "captured × true rate": captured,
    }
    if level == "website":
        del chosen["true bursts, from copies"]
    return chosen


def closed_loop(sites: int, seed: int, *, bursts: bool = True) -> None:
    with demo_archive(sites, seed, bursts=bursts) as demo:
        truth = read_truth(demo)
    observed, changes, rates = load(truth, "homepage")
    models = truth["sites"]
    n = np.array([float(m["update_model"]["branching_ratio"]) for m in models])
    d = np.array([float(m["update_model"]["follow_up_mean_days"]) for m in models])
    rate = np.asarray(rates)

    def policy(state: ReplayState) -> FloatArray:
        times, flags, offsets = state.arrays()
        held = np.isfinite(state.last_copy)
        copy = np.where(held, state.last_copy, state.now)
        p = burst_chance(times, flags, offsets, copy, state.now + state.e_days, rate, n, d)
        chosen: FloatArray = np.where(held, p, 1.0)
        return chosen

    print(
        f"\nReplay: {sites} sites, seed {seed}, 3 × 28 days "
        "(changes found / crawls, overlisted sites)"
    )
    for share in (0.02, 0.05):
        budget = max(1, round(share * sites))
        extra = {"true bursts, from copies": policy}
        totals = replay_totals(observed, changes, rates, seed=seed, budget=budget, extra=extra)
        print(f"  budget {share:.0%}: " + replay_cells(totals, "HACS (default)"))


def main() -> int:
    parser = bench_parser(__doc__, sites=1200)
    add_evaluation_and_replay_options(parser)
    parser.add_argument("--level", choices=("homepage", "website"), default="homepage")
    args = parser.parse_args()
    if not args.skip_evaluation:
        with demo_archive(args.sites, args.seed, bursts=not args.no_bursts) as demo:
            table = demo_tables(demo)[args.level]
            truth = Truth(read_truth(demo), table, args.level)
        print(f"Demo archive: {args.sites} sites, seed {args.seed}, {args.level} level")
        windows = Windows(table)
        rows = pak_windows(table, lambda w: scorers(windows, truth, w, args.level), args.level)
        print_pak(rows, "HACS (default)", level=args.level)
    if not args.skip_replay and args.level == "homepage":
        closed_loop(args.replay_sites, args.seed, bursts=not args.no_bursts)
    return 0


if __name__ == "__main__":
    sys.exit(main())
