"""Which posterior on a homepage's rate? HACS's (rule 5's exact likelihood on a grid of rates,
under a Gamma prior fitted on it, ``hacs.bayes``) against the Gamma kernel it read before and
against other priors, on the demo archive's Evaluation 2 and its closed-loop replay.

Run from the project root::

    .venv/bin/python bench/priors.py [--sites 1200] [--seed 0] [--replay-sites 500]
                                     [--skip-evaluation] [--skip-replay]

The candidates beside HACS's posterior:

* ``gamma kernel`` — the reading HACS shipped before this one: each timeline's likelihood of λ
  summarised by a Gamma kernel λ^m exp(−λT) with the same mode and curvature (a Laplace
  match), under the Gamma prior fitted on the kernels, conjugate (:func:`kernel_evidence`);
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

import argparse
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
from numpy.typing import NDArray
from scipy.optimize import minimize

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import evaluation as eval_bench  # noqa: E402
from replay import END, START, before, load  # noqa: E402

from hacs.bayes import (  # noqa: E402
    RATE_GRID,
    GammaPrior,
    IntervalEvidence,
    fit_interval_prior,
    fit_prior,
    interval_evidence,
    posterior,
)
from hacs.defaults import E_DAYS  # noqa: E402
from hacs.demo import build_demo_archive  # noqa: E402
from hacs.estimators import estimate_many  # noqa: E402
from hacs.evaluation import ObservationTable, evaluate  # noqa: E402
from hacs.ranking import posterior_probabilities  # noqa: E402
from hacs.replay import ReplayState, replay  # noqa: E402

FloatArray = NDArray[np.float64]

GRID = RATE_GRID
LOG_GRID = np.log(GRID)
PRIOR_WEEKS = 12
EVAL_E_DAYS = 7.0


def kernel_evidence(
    times: FloatArray, flags: NDArray[np.bool_], offsets: NDArray[np.int64]
) -> tuple[FloatArray, FloatArray, IntervalEvidence]:
    """The Gamma kernel λ^m exp(−λT) of each timeline's likelihood with its mode (the observed
    MLE) and curvature: m = λ̂² Σ t_c² / (4 sinh²(λ̂ t_c / 2)), T = m / λ̂; without an update,
    m = 0 and T the span. Returns (m, T) and the exact evidence."""
    evidence = interval_evidence(times, flags, offsets)
    lam = estimate_many(times, flags, offsets).rate
    n = evidence.n_sites
    span = evidence.unchanged + np.bincount(evidence.owner, evidence.changed, minlength=n)
    updates = np.zeros(n)
    exposure = np.where(lam == 0, span, 0.0)
    positive = np.isfinite(lam) & (lam > 0)
    x = lam[evidence.owner] * evidence.changed
    with np.errstate(over="ignore", invalid="ignore"):
        terms = np.where(x > 0, (evidence.changed / (2.0 * np.sinh(x / 2.0))) ** 2, 0.0)
    info = np.bincount(evidence.owner, terms, minlength=n)
    updates[positive] = lam[positive] ** 2 * info[positive]
    exposure[positive] = updates[positive] / lam[positive]
    return updates, exposure, evidence


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
        self._gamma: dict[tuple[str, float], GammaPrior] = {}

    def window(self, lo: float, hi: float):
        """Every site with a copy in [lo, hi]: owners, the kernels (m, T), the exact
        likelihoods, whether each has evidence, and each site's newest copy there."""
        owner, time, flags, offsets, last = self.timelines(lo, hi)
        updates, exposure, evidence = kernel_evidence(time, flags, offsets)
        lik, informed = exact_likelihoods(evidence)
        return owner, updates, exposure, evidence, lik, informed, last

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
            _, _, _, _, lik, informed, _ = self.window(t - 7.0 * PRIOR_WEEKS, t)
            self._priors[key] = PRIORS[name](lik[informed])
        return self._priors[key]

    def gamma_prior(self, name: str, t: float) -> GammaPrior:
        """The Gamma prior at t: on the kernels (``gamma kernel``), else HACS's, on the exact
        likelihoods."""
        key = (name, t)
        if key not in self._gamma:
            _, m, big_t, evidence, _, _, _ = self.window(t - 7.0 * PRIOR_WEEKS, t)
            self._gamma[key] = (
                fit_prior(m, big_t) if name == KERNEL else fit_interval_prior(evidence)
            )
        return self._gamma[key]

    def scorer(self, name: str, w: int) -> Callable[[float, np.ndarray, object], FloatArray]:
        def score(t: float, sites: np.ndarray, _columns: object) -> FloatArray:
            owner, m, big_t, _, lik, _, last = self.window(t - 7.0 * w, t)
            row = np.searchsorted(owner, sites)
            if name in (KERNEL, KERNEL_EXACT_PRIOR):
                alpha, beta = posterior(self.gamma_prior(name, t), m[row], big_t[row])
                return posterior_probabilities(alpha, beta, last[row], t, EVAL_E_DAYS)
            return chance(lik[row], self.prior(name, t), t + EVAL_E_DAYS - last[row])

        return score


Scorer = Callable[[float, np.ndarray, object], FloatArray]


def pak_windows(
    table: ObservationTable, scorers: Callable[[int], dict[str, Scorer]], level: str = "homepage"
) -> dict[str, list[float]]:
    """Mean weighted P@K at ``level`` for w = 1 … 12 (``hacs.evaluation.evaluate``): HACS's
    posterior, Cho–Garcia-Molina, Last-Obs and each of ``scorers(w)``, by model. At website
    level HACS's posterior reads the pages' new links, as the database's tables let it."""
    start = float((eval_bench.DEMO_START - eval_bench.EPOCH).days)
    end = float((eval_bench.DEMO_END - eval_bench.EPOCH).days)
    rows: dict[str, list[float]] = {}
    for w in range(1, 13):
        extra = scorers(w)
        result = evaluate({level: table}, start=start, end=end, w_weeks=[w],
                          e_days=EVAL_E_DAYS, method="interpolated",
                          scorers={level: extra})  # fmt: skip
        pak = {row["model"]: row["weighted_p_at_k"] for row in result["pak"]}
        for model in ("posterior", "cho_garcia_molina", "last_obs", *extra):
            rows.setdefault(model, []).append(float(pak[model]))
    return rows


def print_pak(
    rows: dict[str, list[float]], hacs_label: str, note: str = "", level: str = "homepage"
) -> None:
    """The P@K rows, each candidate with its wins: the w where it is above both
    Cho–Garcia-Molina and Last-Obs (to three decimals)."""
    print(f"\nmean weighted P@K, {level}, w = 1 … 12 (wins: above Cho–Garcia-Molina and Last-Obs)")
    if note:
        print(f"  {note}")
    best_baseline = np.maximum(rows["cho_garcia_molina"], rows["last_obs"])
    for model, values in rows.items():
        wins = int((np.round(values, 3) > np.round(best_baseline, 3)).sum())
        label = hacs_label if model == "posterior" else model
        tail = "" if model in ("cho_garcia_molina", "last_obs") else f"   wins {wins}/12"
        print(f"  {label:22} " + " ".join(f"{v:.3f}" for v in values) + tail)


def evaluation_2(table: ObservationTable) -> None:
    windows = Windows(table)
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


def replay_totals(
    observed: list[tuple[list[float], list[bool]]],
    changes: list[list[float]],
    rates: list[float],
    *,
    seed: int,
    budget: int,
    extra: dict[str, Callable[[ReplayState], FloatArray]],
) -> dict[str, list[int]]:
    """[changes found, crawls, overlisted sites] per policy over the last 3 × 28 days."""
    span = (END - START).days
    totals: dict[str, list[int]] = {}
    for start in (span - 28 * (k + 1) for k in range(3)):
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
    return totals


def replay_cells(totals: dict[str, list[int]], hacs_label: str) -> str:
    """One line: each policy's changes found / crawls, and its overlisted sites."""
    cells = []
    for name, (found, crawls, over) in totals.items():
        label = hacs_label if name == "hacs" else name
        cells.append(f"{label} {found}/{crawls}" + (f" ({over} overlisted)" if over else ""))
    return "  ".join(cells)


def closed_loop(sites: int, seed: int) -> None:
    with tempfile.TemporaryDirectory(prefix="hacs-priors-") as tmp:
        demo = build_demo_archive(Path(tmp) / "demo", sites=sites, seed=seed, start=START, end=END)
        observed, changes, rates = load(demo.outdir / "truth.json", "homepage")
    extra = {name: replay_policy(name) for name in CANDIDATES}
    print(f"\nReplay: {sites} sites, seed {seed}, 3 × 28 days, e = {E_DAYS:g} "
          "(changes found / crawls, overlisted sites)")  # fmt: skip
    for share in (0.02, 0.05):
        budget = max(1, round(share * sites))
        totals = replay_totals(observed, changes, rates, seed=seed, budget=budget, extra=extra)
        print(f"  budget {share:.0%}: " + replay_cells(totals, "HACS (exact)"))


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
