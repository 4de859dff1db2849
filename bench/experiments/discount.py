"""Should a site's older copies count for less? The posterior on discounted evidence.

Run from the project root::

    .venv/bin/python -m bench.experiments.discount [--sites 1200] [--seed 0] [--replay-sites 500]
                                                   [--half-lives 30,90,365] [--skip-evaluation]
                                                   [--skip-replay]

HACS's posterior reads a site's whole history as evidence of one steady rate. If sites' rates
drift, or come in bursts, the recent intervals say more about the next weeks than old ones. This
bench weighs each interval by 2^(−age / h), its age the days from the copy that closes it to
the reference time and h a half-life (a power likelihood: each changed interval's
log(1 − e^{−λL}) and each unchanged interval's −λL times its weight, the discounted Gamma–Poisson
of dynamic models), fits the prior on the same discounted evidence and reads p since the newest
copy as HACS's default does. h = ∞ is HACS's default exactly.

It prints Evaluation 2 (mean weighted P@K at homepage level, w = 1 … 12, beside Cho–Garcia-Molina
and Last-Obs, with each candidate's wins over both) and the closed-loop replay (``hacs.replay``,
homepage, 3 × 28 days, budgets 2 % and 5 %, changes found per crawl and the sites listed on more
than half the days while changed on fewer of them). Same seed, same figures.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from bench.common import (
    EVAL_E_DAYS,
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
from hacs.bayes import (
    RATE_GRID,
    IntervalEvidence,
    fit_interval_prior,
    interval_evidence,
    interval_posterior,
)
from hacs.estimators import Accesses, accesses, update_instants
from hacs.ranking import posterior_probabilities
from hacs.replay import ReplayState


@dataclass(frozen=True, eq=False)
class DiscountedEvidence(IntervalEvidence):
    """:class:`IntervalEvidence` whose changed intervals carry a weight each (the unchanged
    totals are already weighted sums)."""

    weights: FloatArray

    def rows(self, lo: int, hi: int) -> DiscountedEvidence:
        start, stop = np.searchsorted(self.owner, [lo, hi])
        return DiscountedEvidence(
            changed=self.changed[start:stop], owner=self.owner[start:stop] - lo,
            unchanged=self.unchanged[lo:hi], first=self.first[lo:hi], last=self.last[lo:hi],
            accesses=self.accesses[lo:hi], weights=self.weights[start:stop],
        )  # fmt: skip

    def log_likelihood(self) -> FloatArray:
        result: FloatArray = -np.outer(self.unchanged, RATE_GRID)
        if self.changed.size:
            terms = np.log(-np.expm1(-np.outer(self.changed, RATE_GRID))) * self.weights[:, None]
            starts = np.flatnonzero(np.r_[True, self.owner[1:] != self.owner[:-1]])
            result[self.owner[starts]] += np.add.reduceat(terms, starts, axis=0)
        return result


def discounted_evidence(
    times: FloatArray, flags: NDArray[np.bool_], offsets: NDArray[np.int64], now: float,
    half_life: float,
) -> DiscountedEvidence:  # fmt: skip
    """Rule 5's intervals as ``hacs.bayes.interval_evidence`` reads them, each weighted by
    2^(−(now − its closing copy) / half_life).

    The unchanged intervals are read by the same function as the changed intervals of the same
    accesses with their flags turned over (each timeline's first access stays its baseline);
    ``hacs.estimators.update_instants`` gives the copy that closes each interval, in the
    evidence's order."""
    evidence = interval_evidence(times, flags, offsets)
    timeline = accesses(times, flags, offsets)
    turned = Accesses(timeline.times, ~timeline.updated, timeline.offsets)
    turned.updated[timeline.offsets[:-1][np.diff(timeline.offsets) > 0]] = False
    unchanged = interval_evidence(turned.times, turned.updated, turned.offsets)

    def weight(closing: FloatArray) -> FloatArray:
        result: FloatArray = np.exp2(-np.maximum(now - closing, 0.0) / half_life)
        return result

    weighted = unchanged.changed * weight(update_instants(turned)[0])
    total = np.bincount(unchanged.owner, weighted, minlength=evidence.n_sites).astype(np.float64)
    return DiscountedEvidence(
        changed=evidence.changed, owner=evidence.owner, unchanged=total,
        first=evidence.first, last=evidence.last, accesses=evidence.accesses,
        weights=weight(update_instants(timeline)[0]),
    )  # fmt: skip


def evaluation_2(table: object, half_lives: list[float]) -> None:
    windows = Windows(table)  # type: ignore[arg-type]

    def scorer(h: float, w: int) -> Scorer:
        def score(t: float, sites: np.ndarray, _columns: object) -> FloatArray:
            owner, times, flags, offsets, last = windows.timelines(t - 7.0 * w, t)
            evidence = discounted_evidence(times, flags, offsets, t, h)
            # HACS's prior, on the undiscounted 12-week window: a prior fitted on discounted
            # evidence degenerates towards a point mass, as one fitted on a few weeks does.
            alpha, beta = interval_posterior(windows.hacs_prior(t), evidence)
            row = np.searchsorted(owner, sites)
            return posterior_probabilities(alpha[row], beta[row], last[row], t, EVAL_E_DAYS)

        return score

    rows = pak_windows(table, lambda w: {f"h={h:g} d": scorer(h, w) for h in half_lives})  # type: ignore[arg-type]
    print_pak(rows, "HACS (default)")


def replay_policy(h: float) -> Callable[[ReplayState], FloatArray]:
    def policy(state: ReplayState) -> FloatArray:
        times, flags, offsets = state.arrays()
        prior = fit_interval_prior(interval_evidence(times, flags, offsets))  # undiscounted
        evidence = discounted_evidence(times, flags, offsets, state.now, h)
        alpha, beta = interval_posterior(prior, evidence)
        held = np.isfinite(state.last_copy)
        copy = np.where(held, state.last_copy, state.now)
        p = posterior_probabilities(alpha, beta, copy, state.now, state.e_days)
        return np.where(held, p, 1.0)

    return policy


def closed_loop(sites: int, seed: int, half_lives: list[float], *, bursts: bool = True) -> None:
    with demo_archive(sites, seed, bursts=bursts) as demo:
        observed, changes, rates = load(read_truth(demo), "homepage")
    print(f"\nReplay: {sites} sites, seed {seed}, 3 × 28 days (changes found / crawls, "
          "overlisted sites)")  # fmt: skip
    for share in (0.02, 0.05):
        budget = max(1, round(share * sites))
        extra = {f"h={h:g} d": replay_policy(h) for h in half_lives}
        totals = replay_totals(observed, changes, rates, seed=seed, budget=budget, extra=extra)
        print(f"  budget {share:.0%}: " + replay_cells(totals, "HACS (default)"))


def main() -> int:
    parser = bench_parser(__doc__, sites=1200)
    add_evaluation_and_replay_options(parser)
    parser.add_argument("--half-lives", default="30,90,365", help="days, comma-separated")
    options = parser.parse_args()
    half_lives = [float(h) for h in options.half_lives.split(",")]
    if not options.skip_evaluation:
        with demo_archive(options.sites, options.seed, bursts=not options.no_bursts) as demo:
            tables = demo_tables(demo)
        print(f"Demo archive: {options.sites} sites, seed {options.seed}, homepage level")
        evaluation_2(tables["homepage"], half_lives)
    if not options.skip_replay:
        closed_loop(options.replay_sites, options.seed, half_lives, bursts=not options.no_bursts)
    return 0


if __name__ == "__main__":
    sys.exit(main())
