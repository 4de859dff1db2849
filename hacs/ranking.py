"""The probability and order of a crawl list — DESIGN rules 7 and 8. Pure: NumPy only.

For a date the crawl list keeps the sites with p ≥ θ and/or the top k, ranked by p descending;
ties go to the site unchanged for longer (older τ first), then to the URL, so that the same
data always gives the same list. A site whose rate is unknown (fewer than two observations in
the window) counts as p = 0, as in the evaluation.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

from hacs.bayes import change_probability_since
from hacs.estimators import change_probability

__all__ = [
    "crawl_order",
    "crawl_probabilities",
    "posterior_probabilities",
    "crawl_selection",
    "learned_order",
    "rank_order",
    "round_robin_expected",
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
