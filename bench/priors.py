"""Which posterior on a homepage's rate? The Gamma kernel HACS ships against rule 5's exact
likelihood under a Gamma, a log-normal and a nonparametric prior, on the demo archive's
Evaluation 2 and its closed-loop replay.

Run from the project root::

    .venv/bin/python bench/priors.py [--sites 1200] [--seed 0] [--replay-sites 500]
                                     [--skip-evaluation] [--skip-replay]

HACS's posterior (``hacs.bayes``) summarises each timeline's likelihood of λ (changed intervals
1 − exp(−λ t_c), unchanged ones exp(−λ t_u), DESIGN rule 5) by a Gamma kernel with the same
mode and curvature, under a Gamma prior fitted on the collection. Here the likelihood is
computed exactly on a log-spaced grid of rates (:data:`GRID`) and the prior is fitted on the
collection by marginal likelihood on the same grid, as

* ``gamma exact`` — a Gamma prior (shape and rate);
* ``log-normal`` — a log-normal prior (the HACS paper, Section II-D, found its estimated
  intervals log-normal);
* ``grid NPMLE`` — any distribution on the grid (Kiefer–Wolfowitz, by EM);
* ``kernel, exact prior`` — HACS's Gamma-kernel posterior, under the Gamma prior fitted on the
  exact likelihoods instead of on the kernels.

Each candidate's p is the chance of a change since the newest copy, Σ_j π_j (1 − exp(−λ_j Δ)),
as HACS's default reads it. Evaluation 2 (mean weighted P@K at homepage level, w = 1 … 12,
``hacs.evaluation.evaluate`` with each candidate as an extra scorer; its prior at t fitted on
every site's 12-week window ending at t, as the shipped posterior's) prints the shipped
posterior, Cho–Garcia-Molina and Last-Obs beside the candidates. The replay
(``hacs.replay``, homepage, 3 × 28 days, budgets 2 % and 5 %, e as the crawl list's) prints the
changes each policy found and the sites listed on more than half the days without changing on
most of them. Same seed, same figures.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
from numpy.typing import NDArray
from scipy.optimize import minimize
from scipy.special import gammaln

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import evaluation as eval_bench  # noqa: E402
from replay import END, START, before, load  # noqa: E402

from hacs.bayes import GammaPrior, posterior, rate_evidence  # noqa: E402
from hacs.defaults import E_DAYS  # noqa: E402
from hacs.demo import build_demo_archive  # noqa: E402
from hacs.estimators import accesses  # noqa: E402
from hacs.evaluation import ObservationTable, evaluate  # noqa: E402
from hacs.ranking import posterior_probabilities  # noqa: E402
from hacs.replay import ReplayState, replay  # noqa: E402

FloatArray = NDArray[np.float64]

GRID = np.exp(np.linspace(np.log(1 / 5000), np.log(5.0), 120))  # rates per day
LOG_GRID = np.log(GRID)
PRIOR_WEEKS = 12
EVAL_E_DAYS = 7.0


def interval_loglik(times: FloatArray, flags: NDArray[np.bool_], offsets: NDArray[np.int64]):
    """Each site's exact log-likelihood of λ on GRID (rule 5, observed intervals), one row per
    site; and whether the site has an interval at all."""
    found = accesses(times, flags, offsets)
    t, off = found.times, found.offsets
    n_sites = off.size - 1
    closing = np.ones(t.size, dtype=bool)
    has = np.diff(off) > 0
    closing[off[:-1][has]] = False
    at = np.flatnonzero(closing)
    site = np.searchsorted(off, at, side="right") - 1
    length = np.maximum(t[at] - t[at - 1], 1e-9)
    changed = found.updated[at]
    terms = np.where(
        changed[:, None],
        np.log(-np.expm1(-GRID[None, :] * length[:, None])),
        -GRID[None, :] * length[:, None],
    )
    loglik = np.zeros((n_sites, GRID.size))
    np.add.at(loglik, site, terms)
    return loglik, np.bincount(site, minlength=n_sites) > 0


def _likelihood(loglik: FloatArray) -> FloatArray:
    return np.exp(loglik - loglik.max(axis=1, keepdims=True))


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


def _gamma_log_weights(log_shape: float, log_rate: float) -> FloatArray:
    """Gamma(shape, rate) on the grid (density × the grid's log spacing: λ dλ/λ)."""
    shape, rate = np.exp(log_shape), np.exp(log_rate)
    result: FloatArray = shape * LOG_GRID - rate * GRID + shape * log_rate - gammaln(shape)
    return result


def gamma_fit(lik: FloatArray) -> GammaPrior:
    """The Gamma prior with the highest marginal likelihood of the exact likelihoods."""
    x = _fit_two(lik, _gamma_log_weights, [0.0, np.log(100.0)])
    return GammaPrior(float(np.exp(x[0])), float(np.exp(x[1])))


def gamma_prior(lik: FloatArray) -> FloatArray:
    prior = gamma_fit(lik)
    lw = _gamma_log_weights(np.log(prior.shape), np.log(prior.rate))
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
    "gamma exact": gamma_prior,
    "log-normal": lognormal_prior,
    "grid NPMLE": npmle_prior,
}


KERNEL_EXACT_PRIOR = "kernel, exact prior"
CANDIDATES = (KERNEL_EXACT_PRIOR, *PRIORS)


def chance(lik: FloatArray, weights: FloatArray, delta: FloatArray) -> FloatArray:
    """Σ_j π_j (1 − exp(−λ_j Δ)) over each site's posterior π on the grid."""
    post = lik * weights
    post /= post.sum(axis=1, keepdims=True)
    with np.errstate(invalid="ignore"):
        return (post * -np.expm1(-GRID[None, :] * np.maximum(delta, 0.0)[:, None])).sum(axis=1)


# Evaluation 2 ------------------------------------------------------------------------------


class Windows:
    """A homepage table's observations in (site, time) order, windows read by time."""

    def __init__(self, table: ObservationTable) -> None:
        order = np.lexsort((table.page_index, table.time, table.site))
        self.site = table.site[order]
        self.time = table.time[order]
        self.page_index = table.page_index[order]
        self.floor = table.link_floor[order]
        self.n_sites = int(table.site_count)
        self._priors: dict[tuple[str, float], FloatArray] = {}
        self._gamma: dict[float, GammaPrior] = {}

    def window(self, lo: float, hi: float):
        """Log-likelihood of every site with a copy in [lo, hi], flags relative to the window
        (rule 3 from the stored floors), and each site's newest copy there."""
        owner, time, flags, offsets, last = self.timelines(lo, hi)
        loglik, informed = interval_loglik(time, flags, offsets)
        return owner, loglik, informed, last

    def timelines(self, lo: float, hi: float):
        """The window's timelines: owners, times, flags (rule 3), offsets, newest copies."""
        inside = (self.time >= lo) & (self.time <= hi)
        site, time = self.site[inside], self.time[inside]
        index, floor = self.page_index[inside], self.floor[inside]
        starts = np.flatnonzero(np.r_[True, site[1:] != site[:-1]])
        counts = np.diff(np.r_[starts, site.size])
        first_index = np.repeat(index[starts], counts)
        flags = (index > first_index) & (floor < first_index)
        offsets = np.r_[starts, site.size].astype(np.int64)
        last = time[np.r_[starts[1:], site.size] - 1]
        return site[starts], time, flags, offsets, last

    def prior(self, name: str, t: float) -> FloatArray:
        key = (name, t)
        if key not in self._priors:
            _, loglik, informed, _ = self.window(t - 7.0 * PRIOR_WEEKS, t)
            self._priors[key] = PRIORS[name](_likelihood(loglik[informed]))
        return self._priors[key]

    def gamma_prior(self, t: float) -> GammaPrior:
        if t not in self._gamma:
            _, loglik, informed, _ = self.window(t - 7.0 * PRIOR_WEEKS, t)
            self._gamma[t] = gamma_fit(_likelihood(loglik[informed]))
        return self._gamma[t]

    def scorer(self, name: str, w: int) -> Callable[[float, np.ndarray, object], FloatArray]:
        if name == KERNEL_EXACT_PRIOR:
            return self.kernel_scorer(w)

        def score(t: float, sites: np.ndarray, _columns: object) -> FloatArray:
            owner, loglik, _, last = self.window(t - 7.0 * w, t)
            row = np.searchsorted(owner, sites)
            p = chance(_likelihood(loglik[row]), self.prior(name, t), t + EVAL_E_DAYS - last[row])
            return p

        return score

    def kernel_scorer(self, w: int) -> Callable[[float, np.ndarray, object], FloatArray]:
        """HACS's Gamma-kernel posterior under the Gamma prior fitted on exact likelihoods."""

        def score(t: float, sites: np.ndarray, _columns: object) -> FloatArray:
            owner, time, flags, offsets, last = self.timelines(t - 7.0 * w, t)
            evidence = rate_evidence(time, flags, offsets)
            alpha, beta = posterior(self.gamma_prior(t), evidence.updates, evidence.exposure)
            row = np.searchsorted(owner, sites)
            return posterior_probabilities(alpha[row], beta[row], last[row], t, EVAL_E_DAYS)

        return score


def evaluation_2(table: ObservationTable) -> None:
    windows = Windows(table)
    start = float((eval_bench.DEMO_START - eval_bench.EPOCH).days)
    end = float((eval_bench.DEMO_END - eval_bench.EPOCH).days)
    rows: dict[str, list[float]] = {}
    for w in range(1, 13):
        scorers = {name: windows.scorer(name, w) for name in CANDIDATES}
        result = evaluate({"homepage": table}, start=start, end=end, w_weeks=[w],
                          e_days=EVAL_E_DAYS, method="interpolated",
                          scorers={"homepage": scorers})  # fmt: skip
        pak = {row["model"]: row["weighted_p_at_k"] for row in result["pak"]}
        for model in ("posterior", "cho_garcia_molina", "last_obs", *CANDIDATES):
            rows.setdefault(model, []).append(float(pak[model]))
    print("\nmean weighted P@K, homepage, w = 1 … 12 (wins: above Cho–Garcia-Molina and Last-Obs)")
    best_baseline = np.maximum(rows["cho_garcia_molina"], rows["last_obs"])
    for model, values in rows.items():
        wins = int((np.round(values, 3) > np.round(best_baseline, 3)).sum())
        label = "HACS (Gamma kernel)" if model == "posterior" else model
        print(
            f"{label:22} "
            + " ".join(f"{v:.3f}" for v in values)
            + (f"   wins {wins}/12" if model not in ("cho_garcia_molina", "last_obs") else "")
        )


# Replay ------------------------------------------------------------------------------------


def replay_policy(name: str) -> Callable[[ReplayState], FloatArray]:
    if name == KERNEL_EXACT_PRIOR:
        return kernel_policy

    def policy(state: ReplayState) -> FloatArray:
        times, flags, offsets = state.arrays()
        loglik, informed = interval_loglik(times, flags, offsets)
        lik = _likelihood(loglik)
        weights = PRIORS[name](lik[informed])
        delta = state.now + state.e_days - state.last_copy
        return chance(lik, weights, np.where(np.isfinite(delta), delta, 1e9))

    return policy


def kernel_policy(state: ReplayState) -> FloatArray:
    times, flags, offsets = state.arrays()
    loglik, informed = interval_loglik(times, flags, offsets)
    prior = gamma_fit(_likelihood(loglik)[informed])
    evidence = rate_evidence(times, flags, offsets)
    alpha, beta = posterior(prior, evidence.updates, evidence.exposure)
    return posterior_probabilities(alpha, beta, state.last_copy, state.now, state.e_days)


def closed_loop(sites: int, seed: int) -> None:
    with tempfile.TemporaryDirectory(prefix="hacs-priors-") as tmp:
        demo = build_demo_archive(Path(tmp) / "demo", sites=sites, seed=seed, start=START, end=END)
        observed, changes, rates = load(demo.outdir / "truth.json", "homepage")
    span = (END - START).days
    starts = [span - 28 * (k + 1) for k in range(3)]
    extra = {name: replay_policy(name) for name in CANDIDATES}
    print(f"\nReplay: {sites} sites, seed {seed}, 3 × 28 days, e = {E_DAYS:g} "
          "(changes found / crawls, overlisted sites)")  # fmt: skip
    for share in (0.02, 0.05):
        budget = max(1, round(share * sites))
        totals: dict[str, list[int]] = {}
        for start in starts:
            results = replay(history=before(observed, start), changes=changes,
                             start=float(start), days=28, budget=budget,
                             policies=["hacs", "round_robin", "random", "true_rates"],
                             e_days=E_DAYS, true_rates=rates, seed=seed + start,
                             extra=extra)  # fmt: skip
            for r in results:
                found = totals.setdefault(r.policy, [0, 0, 0])
                found[0] += r.found
                found[1] += r.crawls
                found[2] += r.overlisted_sites
        cells = []
        for name, (found, crawls, over) in totals.items():
            label = "HACS (Gamma kernel)" if name == "hacs" else name
            cells.append(f"{label} {found}/{crawls}" + (f" ({over} overlisted)" if over else ""))
        print(f"  budget {share:.0%}: " + "  ".join(cells))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sites", type=int, default=1200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--replay-sites", type=int, default=500)
    parser.add_argument("--skip-evaluation", action="store_true")
    parser.add_argument("--skip-replay", action="store_true")
    args = parser.parse_args()
    if not args.skip_evaluation:
        with tempfile.TemporaryDirectory(prefix="hacs-priors-") as tmp:
            tables = eval_bench.demo_collection(args.sites, args.seed, Path(tmp) / "demo")
        print(f"Demo archive: {args.sites} sites, seed {args.seed}, homepage level")
        evaluation_2(tables["homepage"])
    if not args.skip_replay:
        closed_loop(args.replay_sites, args.seed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
