"""Benchmark: the homepage posterior on rule 5's exact likelihood at the scale of a large
collection, against the Gamma kernel HACS read the evidence by before.

Run from the project root::

    .venv/bin/python -m bench.posterior [--sites N] [--seed S]

Builds ``bench.estimators``'s N synthetic sites (about 40 bursty captures each, log-normal
rates of median interval 110 days) and times, as a full recompute runs them:
``hacs.bayes.interval_evidence`` (the evidence), ``fit_interval_prior`` (the collection's
prior, on the exact likelihoods) and ``interval_posterior`` (each site's posterior on the
grid, matched to a Gamma), with the peak memory NumPy allocated (``tracemalloc``); then the
Gamma kernel (``bench.common.kernel_evidence``, ``fit_prior`` and the conjugate
``posterior``) on the same sites. Prints seconds and sites per second for each step, the two
priors, and Spearman's ρ between the two posterior means and the sites' true rates. Same seed,
same figures (the times vary with the machine).
"""

from __future__ import annotations

import sys
import time
import tracemalloc

from scipy.stats import spearmanr

from bench.common import bench_parser, kernel_evidence
from bench.estimators import synthetic_sites_with_rates
from hacs.bayes import (
    fit_interval_prior,
    fit_prior,
    interval_evidence,
    interval_posterior,
    posterior,
)


def timed(label: str, n_sites: int, call):  # type: ignore[no-untyped-def]
    tracemalloc.start()
    started = time.perf_counter()
    result = call()
    seconds = time.perf_counter() - started
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(
        f"  {label:34} {seconds:7.2f} s  {n_sites / seconds:>10,.0f} sites/s  "
        f"peak {peak / 2**20:7.1f} MiB"
    )
    return result


def main() -> int:
    parser = bench_parser(__doc__, sites=100_000, demo=False)
    args = parser.parse_args()
    times, updated, offsets, truth = synthetic_sites_with_rates(args.sites, args.seed)
    n = args.sites
    print(f"{n:,} synthetic sites, {times.size:,} observations, seed {args.seed}")

    print("Exact likelihood (HACS):")
    evidence = timed("interval_evidence", n, lambda: interval_evidence(times, updated, offsets))
    prior = timed("fit_interval_prior", n, lambda: fit_interval_prior(evidence))
    alpha, beta = timed("interval_posterior", n, lambda: interval_posterior(prior, evidence))
    print(
        f"  prior: shape {prior.shape:.3f}, mean interval {prior.mean_interval_days:.1f} days; "
        f"{evidence.changed.size:,} changed intervals"
    )

    print("Gamma kernel (before):")
    m, big_t, _ = timed("kernel_evidence", n, lambda: kernel_evidence(times, updated, offsets))
    kernel_prior = timed("fit_prior", n, lambda: fit_prior(m, big_t))
    k_alpha, k_beta = timed("posterior", n, lambda: posterior(kernel_prior, m, big_t))
    print(
        f"  prior: shape {kernel_prior.shape:.3f}, "
        f"mean interval {kernel_prior.mean_interval_days:.1f} days"
    )

    exact_rho = spearmanr(alpha / beta, truth).statistic
    kernel_rho = spearmanr(k_alpha / k_beta, truth).statistic
    print(
        f"Spearman ρ of the posterior mean rate with the true rate: exact {exact_rho:.3f}, "
        f"kernel {kernel_rho:.3f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
