"""The probability and order of a crawl list — DESIGN rules 7 and 8. Pure: NumPy only.

For a date the crawl list keeps the sites with p ≥ θ and/or the top k, ranked by p descending;
ties go to the site unchanged for longer (older τ first), then to the URL, so that the same
data always gives the same list. A site whose rate is unknown (fewer than two observations in
the window) counts as p = 0, as in the evaluation.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from hacs.bayes import (
    GammaPrior,
    change_probability_since,
    fit_interval_prior,
    fit_reset_rate,
    interval_evidence,
    interval_posterior,
)
from hacs.estimators import change_probability

__all__ = [
    "DefaultPosterior",
    "crawl_order",
    "crawl_probabilities",
    "default_posterior",
    "default_probabilities",
    "posterior_probabilities",
    "crawl_selection",
    "learned_order",
    "rank_order",
    "round_robin_expected",
    "window_sites",
    "window_timelines",
    "WindowSites",
]


FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]


def crawl_probabilities(rate: ArrayLike, tau: ArrayLike, t: ArrayLike, e: float) -> FloatArray:
    """The paper's p = g(λ, τ, t, e) per site (rule 7), 0 where λ is unknown (NaN)."""
    lam = np.asarray(rate, dtype=np.float64)
    taus = np.asarray(tau, dtype=np.float64)
    when = np.broadcast_to(np.asarray(t, dtype=np.float64), lam.shape)
    known = np.isfinite(lam)
    p = np.zeros(lam.shape)
    p[known] = change_probability(lam[known], taus[known], when[known], e)
    return p


def posterior_probabilities(
    alpha: ArrayLike, beta: ArrayLike, last_copy: ArrayLike, t: ArrayLike, e: float
) -> FloatArray:
    """HACS's default p: the chance of a change since the newest copy, by t + e, over each
    site's Gamma(α, β) posterior (``hacs.bayes``); 1 for a site with no copy at all (a copy time
    of −∞), 0 where nothing is known (NaN)."""
    a = np.asarray(alpha, dtype=np.float64)
    b = np.asarray(beta, dtype=np.float64)
    copy = np.asarray(last_copy, dtype=np.float64)
    when = np.broadcast_to(np.asarray(t, dtype=np.float64), a.shape)
    known = np.isfinite(a) & np.isfinite(b) & ~np.isnan(copy)
    p = np.zeros(a.shape)
    p[known] = change_probability_since(a[known], b[known], when[known] + e - copy[known])
    return p


def window_timelines(
    times: ArrayLike, updated: ArrayLike, offsets: ArrayLike, start: float, end: float
) -> tuple[FloatArray, NDArray[np.bool_], IntArray]:
    """Each site's observations in [start, end), the first of each its baseline (DESIGN rule 3
    within the window; the flags of the others say whether the site changed since the copy
    before): (times, flags, offsets) as ``hacs.estimators.estimate_many`` takes them."""
    t = np.asarray(times, dtype=np.float64)
    flags = np.asarray(updated, dtype=np.bool_)
    off = np.asarray(offsets, dtype=np.int64)
    owner = np.repeat(np.arange(off.size - 1), np.diff(off))
    keep = (t >= start) & (t < end)
    counts = np.bincount(owner[keep], minlength=off.size - 1)
    kept_off = np.zeros(off.size, dtype=np.int64)
    np.cumsum(counts, out=kept_off[1:])
    kept_flags = flags[keep].copy()
    kept_flags[kept_off[:-1][counts > 0]] = False
    return t[keep], kept_flags, kept_off


@dataclass(frozen=True, eq=False)
class DefaultPosterior:
    """HACS's default reading of a collection's timelines (homepage level): the collection's
    prior and reset rate, fitted on them, and each site's posterior Gamma(α, β) of its rate now
    with its newest copy (NaN for a site without one)."""

    prior: GammaPrior
    reset_rate: float
    alpha: FloatArray
    beta: FloatArray
    last_copy: FloatArray


def default_posterior(
    times: ArrayLike, updated: ArrayLike, offsets: ArrayLike, *, reset: bool = True
) -> DefaultPosterior:
    """The default posterior of every site from its timeline (rule 5's intervals): the prior
    fitted on the collection (``hacs.bayes.fit_interval_prior``), the rate at which sites' rates
    start afresh fitted on top of it (``fit_reset_rate``), and each site's posterior of its
    rate now (``interval_posterior``). The crawl list (``scheduling.estimates``) reads stored
    sites through exactly these three calls; the closed-loop replay calls this. ``reset=False``
    reads rates that never reset (ρ = 0), the posterior before rates that reset, kept so that
    the benches can weigh the two on the same days."""
    evidence = interval_evidence(times, updated, offsets)
    prior = fit_interval_prior(evidence)
    reset_rate = fit_reset_rate(prior, evidence) if reset else 0.0
    alpha, beta = interval_posterior(prior, evidence, reset_rate)
    return DefaultPosterior(prior, reset_rate, alpha, beta, evidence.last)


def default_probabilities(
    times: ArrayLike,
    updated: ArrayLike,
    offsets: ArrayLike,
    *,
    t: float,
    e: float,
    history_days: float,
    reset: bool = True,
) -> FloatArray:
    """HACS's default p of a crawl list whose reference instant is ``t``: the default posterior
    (:func:`default_posterior`) of the sites with a copy in its history window [t − w, t)
    (:func:`window_timelines`), since each one's newest copy there, by t + e
    (:func:`posterior_probabilities`); 0 for a site without a copy in the window, which the
    list leaves out. Computed on those sites alone, in their order, as the list computes it."""
    window = window_sites(times, updated, offsets, t=t, history_days=history_days)
    found = default_posterior(window.times, window.updated, window.offsets, reset=reset)
    p = np.zeros(window.eligible.size)
    p[window.eligible] = posterior_probabilities(
        found.alpha, found.beta, found.last_copy, np.full(found.alpha.size, t), e
    )
    return p


@dataclass(frozen=True, eq=False)
class WindowSites:
    """The sites with a copy in a crawl list's history window [t − w, t), back to back in their
    order (``times``, ``updated``, ``offsets`` as :func:`window_timelines` reads them), which
    of all the sites they are (``eligible``) and which observations the window kept (``kept``)."""

    times: FloatArray
    updated: NDArray[np.bool_]
    offsets: IntArray
    eligible: NDArray[np.bool_]
    kept: NDArray[np.bool_]


def window_sites(
    times: ArrayLike, updated: ArrayLike, offsets: ArrayLike, *, t: float, history_days: float
) -> WindowSites:
    """The sites a list whose reference instant is ``t`` reads: those with a copy in its history
    window, each timeline there (:func:`window_timelines`)."""
    all_times = np.asarray(times, dtype=np.float64)
    start = t - history_days
    times_w, flags_w, offsets_w = window_timelines(all_times, updated, offsets, start, t)
    counts = np.diff(offsets_w)
    eligible = counts > 0
    compact = np.zeros(int(eligible.sum()) + 1, dtype=np.int64)
    np.cumsum(counts[eligible], out=compact[1:])
    kept = (all_times >= start) & (all_times < t)
    return WindowSites(times_w, flags_w, compact, eligible, kept)


def crawl_order(probability: ArrayLike, tau: ArrayLike, urls: Sequence[str], t: float) -> list[int]:
    """Indices of the sites in crawl-list order: p descending, older τ first, then URL.

    An unknown τ sorts as if it were ``t`` (no older than the reference time).
    """
    p = np.asarray(probability, dtype=np.float64)
    taus = np.asarray(tau, dtype=np.float64)
    taus = np.where(np.isfinite(taus), taus, t)
    keys = np.asarray(urls, dtype=str) if len(urls) else np.zeros(0, dtype=str)
    return [int(i) for i in rank_order(p, taus, keys)]


def learned_order(
    score: ArrayLike, probability: ArrayLike, tau: ArrayLike, urls: Sequence[str], t: float
) -> list[int]:
    """Indices in the order of a learned scheduler's list: the sites it scored (a finite
    ``score``) by score descending, then as :func:`crawl_order` ranks; then the sites it could
    not score (no observation in its window; NaN), as :func:`crawl_order` ranks them."""
    s = np.asarray(score, dtype=np.float64)
    scored = np.isfinite(s)
    order = np.asarray(crawl_order(probability, tau, urls, t), dtype=np.int64)
    # A stable sort of crawl_order's list by the learned score keeps crawl_order's ranking
    # among equal scores.
    order = order[np.lexsort((-np.where(scored, s, 0.0)[order], ~scored[order]))]
    return [int(i) for i in order]


def rank_order(score: ArrayLike, tau: ArrayLike, key: ArrayLike) -> IntArray:
    """Indices in DESIGN rule 8's order: ``score`` descending; ties to the older ``tau`` (the
    site unchanged, or uncopied, for longer), then to the smaller ``key`` (a URL, a site index).

    The one tie rule of every ranked list: the crawl list (:func:`crawl_order`), the closed-loop
    replay (``hacs.replay``, τ its newest copy) and the HACS model of Evaluation 2
    (``hacs.evaluation.ranking``)."""
    s = np.asarray(score, dtype=np.float64)
    order: IntArray = np.lexsort((np.asarray(key), np.asarray(tau, dtype=np.float64), -s))
    return order


def crawl_selection(
    order: Sequence[int], probability: ArrayLike, *, theta: float | None, budget: int | None
) -> list[int]:
    """The sites a list keeps, in order: p ≥ θ (when θ is given), then the first k (budget)."""
    p = np.asarray(probability, dtype=np.float64)
    kept = [i for i in order if theta is None or p[i] >= theta]
    return kept if budget is None else kept[:budget]


def round_robin_expected(
    probability: ArrayLike, last_copy: ArrayLike, urls: Sequence[str], count: int
) -> float:
    """The changes a round-robin list of ``count`` sites is expected to find: the sum of p over
    the sites whose newest copy is oldest (a site never copied first; ties by URL), as the
    replay's round-robin crawls them (``hacs.replay``). With the posterior's p, it is what
    crawling in turn would have bought on the day a list was built, for the list's yield."""
    p = np.asarray(probability, dtype=np.float64)
    copy = np.asarray(last_copy, dtype=np.float64)
    if count < 0:
        raise ValueError(f"count must be non-negative, got {count}")
    oldest = np.where(np.isnan(copy), -np.inf, copy)
    keys = np.asarray(urls, dtype=str) if len(urls) else np.zeros(0, dtype=str)
    order = np.lexsort((keys, oldest))[:count]
    return float(p[order].sum())
