"""How many links a change brought: a copy that gained five new links saw more edits than one
that gained one.

Rule 5 reads an interval between two copies as changed or not. On a page copied every few
weeks and edited every few days, nearly every interval changed, and "changed" cannot tell a
change a week from a change a month: the posterior stays near the prior. The copies say more:
each stores how many of its links no earlier copy held (``Capture.new_links``, DESIGN's hint for
speed). This module reads that count as evidence of how many changes the interval held.

The model. Changes come as a Poisson process of the site's rate λ (with rates that reset,
``hacs.bayes``); each change brings N ≥ 1 new links, N geometric with mean μ (the collection's
*links per change*), so that K new links over an interval of length L have

    P(K | λ) = Σ_{m=1..K} Pois(m; λL) · C(K − 1, m − 1) q^m (1 − q)^{K−m},  q = 1 / μ,

for K ≥ 1, and e^{−λL} for K = 0 (rule 5's unchanged interval, unchanged). ``spread`` r
generalises the geometric: N − 1 negative binomial of shape r and mean μ − 1 (r = 1 the
geometric; a small r the long tail of a page where most changes add one link and some add a
dozen), K − m then negative binomial of shape m r. μ = 1 reads every new
link as one change (Pois(K; λL)); a large μ reads any K as about one change (λL e^{−λL}).
Counts above :data:`COUNT_CAP` are read as the cap (a page rebuilt at once). A changed interval
stored without a count (a link that came back) reads as one new link.

:func:`fit_links_per_change` fits μ on the collection by marginal likelihood (bounded Brent in
log μ), the prior and the reset rate held as fitted before it; :func:`link_count_posterior` is
the filtered posterior of every site's rate now with the counts read, and
:func:`link_count_probabilities` the p of a crawl list from it, over the list's window as
``hacs.ranking.default_probabilities`` reads it.

Pure: NumPy and SciPy.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.optimize import minimize_scalar
from scipy.special import gammaln

from hacs.bayes import (
    RATE_GRID,
    RESET_FIT_SITES,
    GammaPrior,
    IntervalEvidence,
    _every,
    _grid_weights,
    _reset_filter,
    fit_interval_prior,
    fit_reset_rate,
    grid_gamma,
    interval_evidence,
)
from hacs.ranking import DefaultPosterior, posterior_probabilities, window_sites

__all__ = [
    "COUNT_CAP",
    "LINKS_PER_CHANGE_BOUNDS",
    "LinkEvidence",
    "count_likelihood",
    "fit_links_per_change",
    "interval_link_counts",
    "link_count_posterior",
    "link_count_probabilities",
]

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

#: New links above this are read as this many: a page rebuilt at once is not 200 changes.
COUNT_CAP = 60
#: The links per change μ that :func:`fit_links_per_change` searches.
LINKS_PER_CHANGE_BOUNDS = (1.0, 50.0)


def count_likelihood(
    new_links: ArrayLike, lengths: ArrayLike, links_per_change: float, spread: float = 1.0
) -> FloatArray:
    """P(K | λ) on RATE_GRID, one row per interval (the module docstring): K new links over an
    interval of ``lengths`` days, each change bringing 1 + a negative binomial number of links
    of mean μ and shape r (``spread``; r = 1 is the geometric, a small r a long tail)."""
    k = np.minimum(np.asarray(new_links, dtype=np.int64), COUNT_CAP)
    length = np.asarray(lengths, dtype=np.float64)
    if links_per_change < 1.0:
        raise ValueError(f"links_per_change must be at least 1; got {links_per_change}")
    if not spread > 0.0:
        raise ValueError(f"spread must be positive; got {spread}")
    exposure = np.outer(length, RATE_GRID)
    log_exposure = np.log(exposure)
    result = np.exp(-exposure)
    changed = np.flatnonzero(k > 0)
    if changed.size == 0:
        return result
    m = np.arange(1, COUNT_CAP + 1, dtype=np.float64)
    kk = k[changed][:, None].astype(np.float64)
    # log P(K | m changes): K − m extra links, negative binomial of shape m r, mean m (μ − 1).
    extra = links_per_change - 1.0
    q = spread / (spread + extra)
    shape = m * spread
    with np.errstate(divide="ignore", invalid="ignore"):
        log_split = (
            gammaln(np.maximum(kk - m, 0.0) + shape)
            - gammaln(shape)
            - gammaln(np.maximum(kk - m + 1.0, 1.0))
            + shape * math.log(q)
            + (kk - m) * (math.log1p(-q) if q < 1.0 else 0.0)
        )
    possible = m[None, :] <= kk
    if extra == 0.0:
        possible &= m[None, :] == kk
    log_split = np.where(possible, log_split, -np.inf)
    # log Pois(m; λL), (intervals, m, grid), summed over m in logarithms.
    terms = (
        m[None, :, None] * log_exposure[changed][:, None, :]
        - exposure[changed][:, None, :]
        - gammaln(m + 1.0)[None, :, None]
        + log_split[:, :, None]
    )
    top = terms.max(axis=1)
    result[changed] = np.exp(top) * np.exp(terms - top[:, None, :]).sum(axis=1)
    return result


def interval_link_counts(times: ArrayLike, new_links: ArrayLike, offsets: ArrayLike) -> IntArray:
    """Each interval's new links in ``hacs.bayes.interval_evidence``'s order: the new links of
    the access that closes it, observations at one instant added up."""
    t = np.asarray(times, dtype=np.float64)
    links = np.asarray(new_links, dtype=np.int64)
    off = np.asarray(offsets, dtype=np.int64)
    owner = np.repeat(np.arange(off.size - 1), np.diff(off))
    if t.size == 0:
        return np.zeros(0, dtype=np.int64)
    run = np.r_[True, (owner[1:] != owner[:-1]) | (t[1:] != t[:-1])]
    starts = np.flatnonzero(run)
    per_access = np.add.reduceat(links, starts)
    access_owner = owner[starts]
    closing = np.r_[False, access_owner[1:] == access_owner[:-1]]
    return per_access[closing].astype(np.int64)


class LinkEvidence:
    """A collection's intervals with their new links, and μ, read by the forward filter."""

    def __init__(
        self,
        evidence: IntervalEvidence,
        counts: IntArray,
        links_per_change: float,
        spread: float = 1.0,
    ):
        assert evidence.lengths is not None
        if counts.size != evidence.lengths.size:
            raise ValueError(f"{counts.size} interval counts for {evidence.lengths.size} intervals")
        self.evidence = evidence
        self.counts = counts
        self.links_per_change = links_per_change
        self.spread = spread

    def changed(self, at: IntArray) -> FloatArray:
        """The changed intervals' likelihood rows (``hacs.bayes._reset_filter``); a changed
        interval with no count stored reads as one new link."""
        assert self.evidence.lengths is not None
        return count_likelihood(
            np.maximum(self.counts[at], 1),
            self.evidence.lengths[at],
            self.links_per_change,
            self.spread,
        )


def _counts_of(evidence: IntervalEvidence, counts: IntArray, stride: int) -> IntArray:
    if stride == 1:
        return counts
    assert evidence.interval_offsets is not None
    off = evidence.interval_offsets
    return np.concatenate(
        [counts[off[i] : off[i + 1]] for i in range(0, evidence.n_sites, stride)]
    ).astype(np.int64)


def fit_links_per_change(
    prior: GammaPrior, evidence: IntervalEvidence, counts: IntArray, reset_rate: float
) -> float:
    """μ, the collection's mean new links per change: the value in LINKS_PER_CHANGE_BOUNDS
    that maximises the marginal likelihood of every site's counts under ``prior`` and
    ``reset_rate`` (bounded Brent in log μ, to 5 %, on at most RESET_FIT_SITES sites)."""
    n = evidence.n_sites
    if evidence.changed.size == 0 or n == 0:
        return LINKS_PER_CHANGE_BOUNDS[1]
    stride = max(1, -(-n // RESET_FIT_SITES))
    sample = _every(evidence, stride)
    sample_counts = _counts_of(evidence, counts, stride)
    weights = _grid_weights(prior.shape, prior.rate)

    def negative_log_marginal(log_mu: float) -> float:
        reading = LinkEvidence(sample, sample_counts, math.exp(log_mu))
        return -_reset_filter(
            weights, sample, reset_rate, posterior=False, changed_likelihood=reading.changed
        )[1]

    low, high = (math.log(x) for x in LINKS_PER_CHANGE_BOUNDS)
    found = minimize_scalar(
        negative_log_marginal, bounds=(low, high), method="bounded", options={"xatol": 0.05}
    )
    return float(math.exp(found.x))


def link_count_posterior(
    times: ArrayLike, updated: ArrayLike, new_links: ArrayLike, offsets: ArrayLike
) -> tuple[DefaultPosterior, float]:
    """Every site's posterior of its rate now with its new links read (the module docstring),
    and the fitted links per change μ. The prior and the reset rate are the default's
    (``hacs.ranking.default_posterior``), fitted on the changed-or-not intervals."""
    evidence = interval_evidence(times, updated, offsets)
    counts = interval_link_counts(times, new_links, offsets)
    prior = fit_interval_prior(evidence)
    reset_rate = fit_reset_rate(prior, evidence)
    mu = fit_links_per_change(prior, evidence, counts, reset_rate)
    reading = LinkEvidence(evidence, counts, mu)
    post, _ = _reset_filter(
        _grid_weights(prior.shape, prior.rate),
        evidence,
        reset_rate,
        changed_likelihood=reading.changed,
    )
    alpha, beta = grid_gamma(post / post.sum(axis=1, keepdims=True))
    found = DefaultPosterior(prior, reset_rate, alpha, beta, evidence.last)
    return found, mu


def link_count_probabilities(
    times: ArrayLike,
    updated: ArrayLike,
    new_links: ArrayLike,
    offsets: ArrayLike,
    *,
    t: float,
    e: float,
    history_days: float,
) -> FloatArray:
    """The p of a crawl list whose reference instant is ``t``, read with new links: as
    ``hacs.ranking.default_probabilities`` reads the window [t − w, t), from
    :func:`link_count_posterior`; 0 for a site without a copy in the window."""
    window = window_sites(times, updated, offsets, t=t, history_days=history_days)
    links = np.asarray(new_links, dtype=np.int64)[window.kept]
    found, _ = link_count_posterior(window.times, window.updated, links, window.offsets)
    p = np.zeros(window.eligible.size)
    p[window.eligible] = posterior_probabilities(
        found.alpha, found.beta, found.last_copy, np.full(found.alpha.size, t), e
    )
    return p
