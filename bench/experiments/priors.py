"""Which posterior on a homepage's rate? HACS's (rule 5's exact likelihood on a grid of rates,
under a Gamma prior fitted on it, ``hacs.bayes``) against the Gamma kernel it read before and
against other priors, on the demo archive's Evaluation 2 and its closed-loop replay.

Run from the project root::

    .venv/bin/python -m bench.experiments.priors [--sites 1200] [--seed 0] [--replay-sites 500]
                                                 [--skip-evaluation] [--skip-replay]

The candidates beside HACS's posterior:

* ``gamma kernel`` — the reading HACS shipped before this one: each timeline's likelihood of λ
  summarised by a Gamma kernel λ^m exp(−λT) with the same mode and curvature (a Laplace
  match), under the Gamma prior fitted on the kernels, conjugate
  (``bench.common.kernel_evidence``);
* ``kernel, exact prior`` — the same kernels under the prior HACS now fits on the exact
  likelihoods;
* ``log-normal`` — the exact likelihoods under a log-normal prior (the HACS paper, Section
  II-D, found its estimated intervals log-normal);
* ``grid NPMLE`` — the exact likelihoods under any distribution on the grid (Kiefer–Wolfowitz,
  by EM).

The exact likelihoods are ``hacs.bayes.IntervalEvidence.log_likelihood`` on ``RATE_GRID``.
Each candidate's p is the chance of a change since the newest copy, as HACS's default reads it.
Evaluation 2 (mean weighted P@K at homepage level, w = 1 … 12, ``hacs.evaluation.evaluate``
with each candidate as an extra scorer; its prior at t fitted on every site's 12-week window
ending at t, as HACS's) prints HACS's posterior, Cho–Garcia-Molina and Last-Obs beside the
candidates. The replay (``hacs.replay``, homepage, 3 × 28 days, budgets 2 % and 5 %, e as the
crawl list's) prints the changes each policy found and the sites listed on more than half the
days without changing on most of them. Same seed, same figures.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray
from scipy.optimize import minimize

from bench.common import (
    EVAL_E_DAYS,
    PRIOR_WEEKS,
    FloatArray,
    Scorer,
    Windows,
    add_evaluation_and_replay_options,
    bench_parser,
    demo_archive,
    demo_tables,
    kernel_evidence,
    load,
    pak_windows,
    print_pak,
    read_truth,
    replay_cells,
    replay_totals,
)
from hacs.bayes import (
    RATE_GRID,
    GammaPrior,
    IntervalEvidence,
    fit_interval_prior,
    fit_prior,
    posterior,
)
from hacs.defaults import E_DAYS
from hacs.evaluation import ObservationTable
from hacs.ranking import posterior_probabilities
from hacs.replay import ReplayState

GRID = RATE_GRID
LOG_GRID = np.log(GRID)


def exact_likelihoods(evidence: IntervalEvidence) -> tuple[FloatArray, NDArray[np.bool_]]:
    """Each site's likelihood on the grid over its largest value, and whether it has evidence."""
    log_lik = evidence.log_likelihood()
    return np.exp(log_lik - log_lik.max(axis=1, keepdims=True)), evidence.accesses >= 2


def _fit_two(lik: FloatArray, log_weights: Callable[[float, float], FloatArray], x0) -> FloatArray:
    """The two parameters of ``log_weights`` with the highest marginal likelihood."""

    def cost(x: FloatArray) -> float:
        lw = log_weights(float(x[0]), float(x[1]))
        w = np.exp(lw - lw.max())
        return float(-np.log(lik @ (w / w.sum()) + 1e-300).sum())

    best = minimize(cost, x0=np.array(x0), method="Nelder-Mead",
                    options={"xatol": 1e-5, "fatol": 1e-7, "maxiter": 2000})  # fmt: skip
    return np.asarray(best.x, dtype=np.float64)


def _weights(log_weights: Callable[[float, float], FloatArray], x: FloatArray) -> FloatArray:
    lw = log_weights(float(x[0]), float(x[1]))
    w = np.exp(lw - lw.max())
    return w / w.sum()


def lognormal_prior(lik: FloatArray) -> FloatArray:
    def log_weights(mu: float, log_sigma: float) -> FloatArray:
        result: FloatArray = -0.5 * ((LOG_GRID - mu) / np.exp(log_sigma)) ** 2
        return result

    return _weights(log_weights, _fit_two(lik, log_weights, [np.log(1 / 100), 0.0]))


def npmle_prior(lik: FloatArray, iterations: int = 300) -> FloatArray:
    weights = np.full(GRID.size, 1.0 / GRID.size)
    for _ in range(iterations):
        post = lik * weights
        post /= post.sum(axis=1, keepdims=True)
        weights = post.mean(axis=0)
    return weights


PRIORS: dict[str, Callable[[FloatArray], FloatArray]] = {
    "log-normal": lognormal_prior,
    "grid NPMLE": npmle_prior,
}


KERNEL = "gamma kernel"
KERNEL_EXACT_PRIOR = "kernel, exact prior"
CANDIDATES = (KERNEL, KERNEL_EXACT_PRIOR, *PRIORS)


def chance(lik: FloatArray, weights: FloatArray, delta: FloatArray) -> FloatArray:
    """Σ_j π_j (1 − exp(−λ_j Δ)) over each site's posterior π on the grid."""
    post = lik * weights
    post /= post.sum(axis=1, keepdims=True)
    with np.errstate(invalid="ignore"):
        return (post * -np.expm1(-GRID[None, :] * np.maximum(delta, 0.0)[:, None])).sum(axis=1)


# Evaluation 2 ------------------------------------------------------------------------------


class CandidateWindows(Windows):
    """:class:`bench.common.Windows` that also reads each window's kernels and exact
    likelihoods, and scores the candidates."""

    def __init__(self, table: ObservationTable) -> None:
        super().__init__(table)
        self._priors: dict[tuple[str, float], FloatArray] = {}
        self._gamma: dict[tuple[str, float], GammaPrior] = {}

    def window(self, lo: float, hi: float):
        """Every site with a copy in [lo, hi]: owners, the kernels (m, T), the exact
        likelihoods, whether each has evidence, and each site's newest copy there."""
        owner, time, flags, offsets, last = self.timelines(lo, hi)
        updates, exposure, evidence = kernel_evidence(time, flags, offsets)
        lik, informed = exact_likelihoods(evidence)
        return owner, updates, exposure, evidence, lik, informed, last

    def grid_prior(self, name: str, t: float) -> FloatArray:
        """The prior ``name`` of :data:`PRIORS` at t, on the grid."""
        key = (name, t)
        if key not in self._priors:
            _, _, _, _, lik, informed, _ = self.window(t - 7.0 * PRIOR_WEEKS, t)
            self._priors[key] = PRIORS[name](lik[informed])
        return self._priors[key]

    def gamma_prior(self, name: str, t: float) -> GammaPrior:
        """The Gamma prior at t: on the kernels (``gamma kernel``), else HACS's, on the exact
        likelihoods."""
        if name != KERNEL:
            return self.hacs_prior(t)
        key = (name, t)
        if key not in self._gamma:
            _, m, big_t, _, _, _, _ = self.window(t - 7.0 * PRIOR_WEEKS, t)
            self._gamma[key] = fit_prior(m, big_t)
        return self._gamma[key]

    def scorer(self, name: str, w: int) -> Scorer:
        def score(t: float, sites: np.ndarray, _columns: object) -> FloatArray:
            owner, m, big_t, _, lik, _, last = self.window(t - 7.0 * w, t)
            row = np.searchsorted(owner, sites)
            if name in (KERNEL, KERNEL_EXACT_PRIOR):
                alpha, beta = posterior(self.gamma_prior(name, t), m[row], big_t[row])
                return posterior_probabilities(alpha, beta, last[row], t, EVAL_E_DAYS)
            return chance(lik[row], self.grid_prior(name, t), t + EVAL_E_DAYS - last[row])

        return score


def evaluation_2(table: ObservationTable) -> None:
    windows = CandidateWindows(table)
    rows = pak_windows(table, lambda w: {name: windows.scorer(name, w) for name in CANDIDATES})
    print_pak(rows, "HACS (exact)")


# Replay ------------------------------------------------------------------------------------


def replay_policy(name: str) -> Callable[[ReplayState], FloatArray]:
    def policy(state: ReplayState) -> FloatArray:
        times, flags, offsets = state.arrays()
        m, big_t, evidence = kernel_evidence(times, flags, offsets)
        if name in (KERNEL, KERNEL_EXACT_PRIOR):
            prior = fit_prior(m, big_t) if name == KERNEL else fit_interval_prior(evidence)
            alpha, beta = posterior(prior, m, big_t)
            return posterior_probabilities(alpha, beta, state.last_copy, state.now, state.e_days)
        lik, informed = exact_likelihoods(evidence)
        delta = state.now + state.e_days - state.last_copy
        return chance(lik, PRIORS[name](lik[informed]), np.where(np.isfinite(delta), delta, 1e9))

    return policy


def closed_loop(sites: int, seed: int, *, bursts: bool = True) -> None:
    with demo_archive(sites, seed, bursts=bursts) as demo:
        observed, changes, rates = load(read_truth(demo), "homepage")
    extra = {name: replay_policy(name) for name in CANDIDATES}
    print(f"\nReplay: {sites} sites, seed {seed}, 3 × 28 days, e = {E_DAYS:g} "
          "(changes found / crawls, overlisted sites)")  # fmt: skip
    for share in (0.02, 0.05):
        budget = max(1, round(share * sites))
        totals = replay_totals(observed, changes, rates, seed=seed, budget=budget, extra=extra)
        print(f"  budget {share:.0%}: " + replay_cells(totals, "HACS (exact)"))


def main() -> int:
    parser = bench_parser(__doc__, sites=1200)
    add_evaluation_and_replay_options(parser)
    args = parser.parse_args()
    if not args.skip_evaluation:
        with demo_archive(args.sites, args.seed, bursts=not args.no_bursts) as demo:
            tables = demo_tables(demo)
        print(f"Demo archive: {args.sites} sites, seed {args.seed}, homepage level")
        evaluation_2(tables["homepage"])
    if not args.skip_replay:
        closed_loop(args.replay_sites, args.seed, bursts=not args.no_bursts)
    return 0


if __name__ == "__main__":
    sys.exit(main())
