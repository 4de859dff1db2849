"""Update rates with honest uncertainty: an empirical-Bayes Gamma prior and per-site posteriors.

The maximum-likelihood rate of DESIGN rule 5 says nothing about how much evidence stands behind
it: four observations with one update give a 34-day interval and p = 1.000, three with none give
λ = 0 and p = 0 forever. This module keeps the same likelihood but reads it as evidence.

A site's rate (homepage level):

* :func:`interval_evidence` keeps each timeline's likelihood of λ as it is: the lengths of its
  changed intervals (each 1 − exp(−λ t_c)) and the total of its unchanged ones (exp(−λ Σ t_u)).
  :meth:`IntervalEvidence.log_likelihood` reads it exactly on :data:`RATE_GRID`.
* :func:`fit_interval_prior` fits a Gamma(a, b) prior on λ to the whole collection by marginal
  likelihood: each site's exact likelihood summed against the prior's mass on the grid.
* :func:`interval_posterior` gives each site's posterior on the grid (likelihood × prior),
  stored as the Gamma(α, β) of the same mean and variance, so that the crawl list, the pages'
  SQL ordering and the credible intervals read one Gamma per site (docs/readings.md, "the exact
  likelihood").
* :func:`interval_bounds` reads each site's 90 % interval of 1/λ from the same grid posterior,
  and leaves it open ("at least one change every N days") when the captures are sparser than
  the changes, so that the likelihood cannot rule out a change a day (docs/readings.md,
  "intervals that cover"). Changes that come in clusters (an author's editing session) make the
  changed intervals vary more than independent ones would: :func:`change_dispersion` measures
  that on the collection (φ), and the interval is read from the posterior raised to 1/φ (about
  the same centre, φ times the variance), so that it is as wide as the evidence is worth. The
  rate (the posterior mean) and every p stay as they are.

A rate read from Poisson counts (a page's new links at website level, ``hacs.website``):
:func:`fit_prior` fits the Gamma prior to counts m over exposures T by marginal likelihood (a
negative-binomial likelihood), and :func:`posterior` is the conjugate Gamma(a + m, b + T).

Either way :func:`change_probability_since` is the probability of at least one change within
Δ days, averaged over the posterior: p = 1 − (β / (β + Δ))^α. Thin history gives a moderate p
that grows with Δ; a well-measured site's p tends to the plug-in 1 − exp(−λ̂ Δ).

Pure (NumPy and SciPy); rates per day, times in days.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.optimize import minimize, minimize_scalar
from scipy.special import digamma, gammainc, gammaincinv, gammaln

from hacs.estimators import accesses

__all__ = [
    "RATE_GRID",
    "GammaPrior",
    "change_dispersion",
    "IntervalEvidence",
    "change_probability_since",
    "fit_interval_prior",
    "fit_prior",
    "fit_reset_rate",
    "grid_gamma",
    "RESET_RATE_BOUNDS",
    "IntervalBounds",
    "interval_bounds",
    "interval_credible_bounds",
    "interval_evidence",
    "interval_posterior",
    "posterior",
    "posterior_exposure",
]

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

# A prior fitted to no usable site: about one update a year, worth one update of evidence.
_FALLBACK = (1.0, 365.0)
_SHAPE_BOUNDS = (1e-3, 1e4)


@dataclass(frozen=True)
class GammaPrior:
    """Gamma(shape, rate) on λ per day: mean ``shape / rate``, one site's prior in ``shape``
    pseudo-updates over ``rate`` pseudo-days."""

    shape: float
    rate: float

    @property
    def mean_interval_days(self) -> float:
        """1 / (prior mean rate): the interval a site with no history is expected to have."""
        return self.rate / self.shape


#: The rates per day on which rule 5's likelihood is read exactly: log-spaced, 9 % apart, from
#: one change in 5,000 days (below it, no history HACS reads tells rates apart) to five a day.
RATE_GRID: FloatArray = np.exp(np.linspace(math.log(1 / 5000), math.log(5.0), 120))
# The cells around the grid's rates, at the geometric midpoints: the first reaches down to 0,
# the last up to ∞, so that the prior's whole mass lies on the grid.
_CELL_EDGES = np.r_[0.0, np.sqrt(RATE_GRID[1:] * RATE_GRID[:-1]), np.inf]
# Sites, and changed intervals, read onto the grid at once: about 16 MB and 64 MB of rows.
_CHUNK = 16384
_BLOCK = 65536


@dataclass(frozen=True, eq=False)
class IntervalEvidence:
    """Each site's likelihood of λ under rule 5, kept whole.

    ``changed`` holds the lengths (days) of the changed intervals of every site, site by site,
    ``owner`` the site of each (ascending); ``unchanged`` is each site's total length of
    unchanged intervals. Per site too: the ``first`` and ``last`` access times (NaN when none)
    and the number of ``accesses`` (distinct observation instants; a site with fewer than two
    has no interval and no evidence).
    """

    changed: FloatArray
    owner: IntArray
    unchanged: FloatArray
    first: FloatArray
    last: FloatArray
    accesses: IntArray
    # Every interval in time order, site by site (site i's at interval_offsets[i] … [i + 1]):
    # its length and whether it changed. Rates that reset (:func:`fit_reset_rate`) read the
    # order; evidence built without it (None) reads as stationary only.
    lengths: FloatArray | None = None
    interval_changed: NDArray[np.bool_] | None = None
    interval_offsets: IntArray | None = None

    @property
    def n_sites(self) -> int:
        return int(self.unchanged.size)

    def rows(self, lo: int, hi: int) -> IntervalEvidence:
        """The evidence of sites lo … hi − 1, numbered from 0."""
        start, stop = np.searchsorted(self.owner, [lo, hi])
        ordered: dict[str, NDArray[Any]] = {}
        if self.interval_offsets is not None:
            assert self.lengths is not None and self.interval_changed is not None
            a, b = int(self.interval_offsets[lo]), int(self.interval_offsets[hi])
            ordered = {
                "lengths": self.lengths[a:b],
                "interval_changed": self.interval_changed[a:b],
                "interval_offsets": self.interval_offsets[lo : hi + 1] - a,
            }
        return IntervalEvidence(
            changed=self.changed[start:stop],
            owner=self.owner[start:stop] - lo,
            unchanged=self.unchanged[lo:hi],
            first=self.first[lo:hi],
            last=self.last[lo:hi],
            accesses=self.accesses[lo:hi],
            **ordered,
        )

    def log_likelihood(self) -> FloatArray:
        """log L(λ) on RATE_GRID, one row per site: Σ log(1 − exp(−λ t_c)) − λ Σ t_u. The
        changed intervals are read _BLOCK at a time, so memory stays bounded however many a
        site holds."""
        result: FloatArray = -np.outer(self.unchanged, RATE_GRID)
        for lo in range(0, self.changed.size, _BLOCK):
            changed, owner = self.changed[lo : lo + _BLOCK], self.owner[lo : lo + _BLOCK]
            terms = np.log(-np.expm1(-np.outer(changed, RATE_GRID)))
            starts = np.flatnonzero(np.r_[True, owner[1:] != owner[:-1]])
            result[owner[starts]] += np.add.reduceat(terms, starts, axis=0)
        return result


def interval_evidence(times: ArrayLike, updated: ArrayLike, offsets: ArrayLike) -> IntervalEvidence:
    """Each site's changed intervals and unchanged total (rule 5, observed intervals); arguments
    as for :func:`hacs.estimators.estimate_many`. Observations at one instant are one access,
    changed when any of them is."""
    timeline = accesses(times, updated, offsets)
    t, off = timeline.times, timeline.offsets
    n_sites = off.size - 1
    counts = np.diff(off)
    first = np.full(n_sites, np.nan)
    last = np.full(n_sites, np.nan)
    has = counts > 0
    first[has] = t[off[:-1][has]]
    last[has] = t[off[1:][has] - 1]
    at, site = _closing_accesses(off)
    length = t[at] - t[at - 1]
    changed = timeline.updated[at]
    unchanged: FloatArray = np.bincount(
        site[~changed], weights=length[~changed], minlength=n_sites
    ).astype(np.float64)
    interval_offsets = np.zeros(n_sites + 1, dtype=np.int64)
    np.cumsum(np.maximum(counts - 1, 0), out=interval_offsets[1:])
    return IntervalEvidence(
        changed=length[changed],
        owner=site[changed].astype(np.int64),
        unchanged=unchanged,
        first=first,
        last=last,
        accesses=counts.astype(np.int64),
        lengths=length,
        interval_changed=changed,
        interval_offsets=interval_offsets,
    )


def _closing_accesses(offsets: NDArray[np.int64]) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """The accesses that close an interval (every one but each site's first), and their sites:
    the intervals between consecutive accesses of a site, by the access that closes each."""
    closing = np.ones(int(offsets[-1]), dtype=np.bool_)
    counts = np.diff(offsets)
    closing[offsets[:-1][counts > 0]] = False
    at = np.flatnonzero(closing)
    return at, (np.searchsorted(offsets, at, side="right") - 1).astype(np.int64)


def _check_dispersion(dispersion: float) -> None:
    if not (math.isfinite(dispersion) and dispersion >= 1.0):
        raise ValueError(f"dispersion must be at least 1; got {dispersion}")


def _grid_weights(shape: float, rate: float) -> FloatArray:
    """Gamma(shape, rate)'s mass in each cell of the grid."""
    mass: FloatArray = np.maximum(np.diff(gammainc(shape, rate * _CELL_EDGES)), 0.0)
    total = mass.sum()
    return mass / total if total > 0 else np.full(RATE_GRID.size, 1.0 / RATE_GRID.size)


def _likelihoods(evidence: IntervalEvidence) -> FloatArray:
    """Each site's likelihood on the grid over its largest value (rows of sites with evidence)."""
    informed = np.flatnonzero(evidence.accesses >= 2)
    parts = []
    for lo in range(0, informed.size, _CHUNK):
        chunk = informed[lo : lo + _CHUNK]
        part = evidence.rows(int(chunk[0]), int(chunk[-1]) + 1).log_likelihood()
        part = part[chunk - chunk[0]]
        parts.append(np.exp(part - part.max(axis=1, keepdims=True)))
    return np.concatenate(parts) if parts else np.zeros((0, RATE_GRID.size))


def fit_interval_prior(evidence: IntervalEvidence) -> GammaPrior:
    """The Gamma prior on λ that maximises the collection's marginal likelihood, each site's
    exact likelihood summed against the prior's mass on RATE_GRID (empirical Bayes).

    Sites without an interval carry no evidence; with no changed interval anywhere, a weak prior
    of about one update a year is returned. The two parameters are searched in logarithms by
    Nelder-Mead, from a Gamma of shape 1 at the collection's pooled mean interval; the shape is
    kept in [1e-3, 1e4] as :func:`fit_prior` keeps it, the rate in [e^−20, e^28] pseudo-days.
    A fit depends on its data alone.
    """
    if evidence.changed.size == 0:
        return GammaPrior(*_FALLBACK)
    lik = _likelihoods(evidence)
    bounds = (math.log(_SHAPE_BOUNDS[0]), math.log(_SHAPE_BOUNDS[1]))

    def clipped(params: FloatArray) -> GammaPrior:
        shape = min(max(float(params[0]), bounds[0]), bounds[1])
        return GammaPrior(math.exp(shape), math.exp(min(max(float(params[1]), -20.0), 28.0)))

    def negative_log_marginal(params: FloatArray) -> float:
        prior = clipped(params)
        marginal = lik @ _grid_weights(prior.shape, prior.rate)
        return float(-np.log(np.maximum(marginal, 1e-300)).sum())

    pooled = (evidence.unchanged.sum() + evidence.changed.sum()) / evidence.changed.size
    found = minimize(
        negative_log_marginal,
        np.array([0.0, math.log(pooled)]),
        method="Nelder-Mead",
        options={"xatol": 1e-6, "fatol": 1e-9, "maxiter": 4000},
    )
    return clipped(found.x)


def interval_posterior(
    prior: GammaPrior, evidence: IntervalEvidence, reset_rate: float = 0.0
) -> tuple[FloatArray, FloatArray]:
    """(α, β) per site: the Gamma with the mean and variance of the site's posterior on
    RATE_GRID, its exact likelihood times the prior's mass. A site without evidence gets the
    prior's own (its mass on the grid, matched the same way). With a ``reset_rate`` ρ > 0 the
    posterior is that of the site's rate *now*, its rate starting afresh from the prior ρ
    times a day (:func:`fit_reset_rate`)."""
    _check_reset_rate(reset_rate)
    n = evidence.n_sites
    alpha, beta = np.empty(n), np.empty(n)
    for lo in range(0, n, _CHUNK):
        hi = min(lo + _CHUNK, n)
        alpha[lo:hi], beta[lo:hi] = grid_gamma(
            _posterior_rows(prior, evidence.rows(lo, hi), reset_rate)
        )
    return alpha, beta


def grid_gamma(post: FloatArray) -> tuple[FloatArray, FloatArray]:
    """(α, β) of the Gamma with the mean and variance of each posterior on RATE_GRID (rows
    summing to 1)."""
    mean = post @ RATE_GRID
    variance = ((RATE_GRID[None, :] - mean[:, None]) ** 2 * post).sum(axis=1)
    # A posterior on one grid rate has no width; a shape of 1e4 is already a point mass.
    variance = np.maximum(variance, mean**2 / _SHAPE_BOUNDS[1])
    return mean**2 / variance, mean / variance


def _posterior_rows(
    prior: GammaPrior, evidence: IntervalEvidence, reset_rate: float, dispersion: float = 1.0
) -> FloatArray:
    """Each site's posterior on RATE_GRID (rows summing to 1), raised to 1 / ``dispersion``
    and renormalised: the likelihood times the prior's mass, or with ρ > 0 the filtered
    posterior of the rate now (:func:`_reset_filter`)."""
    if reset_rate > 0.0:
        post, _ = _reset_filter(_grid_weights(prior.shape, prior.rate), evidence, reset_rate)
        if dispersion != 1.0:
            with np.errstate(divide="ignore"):
                log_post = np.log(post) / dispersion
            post = np.exp(log_post - log_post.max(axis=1, keepdims=True))
        filtered: FloatArray = post / post.sum(axis=1, keepdims=True)
        return filtered
    # In logarithms: a prior nearly a point mass, far from where a site's likelihood peaks,
    # would otherwise leave a posterior of zeros.
    with np.errstate(divide="ignore"):
        log_weights = np.log(_grid_weights(prior.shape, prior.rate))
    log_post = (evidence.log_likelihood() + log_weights) / dispersion
    post = np.exp(log_post - log_post.max(axis=1, keepdims=True))
    result: FloatArray = post / post.sum(axis=1, keepdims=True)
    return result


# Rates that reset ---------------------------------------------------------------------------

#: The reset rates :func:`fit_reset_rate` searches, per day: from one reset in 270 years (no
#: drift a history of a few years can tell) to one in ten days.
RESET_RATE_BOUNDS = (1e-5, 0.1)
#: :func:`fit_reset_rate` reads at most this many sites, every k-th, so that its cost stays
#: bounded on a large collection (a collection's one number needs no more).
RESET_FIT_SITES = 4096


def _check_reset_rate(reset_rate: float) -> None:
    if not (math.isfinite(reset_rate) and reset_rate >= 0.0):
        raise ValueError(f"reset_rate must be finite and ≥ 0; got {reset_rate}")


def _reset_filter(
    weights: FloatArray,
    evidence: IntervalEvidence,
    reset_rate: float,
    *,
    posterior: bool = True,
    extra: FloatArray | None = None,
    changed_likelihood: Callable[[IntArray], FloatArray] | None = None,
) -> tuple[FloatArray, float]:
    """The forward filter of rates that reset: each site's posterior on RATE_GRID after its
    intervals (rows; the prior's ``weights`` for a site without one) and the log marginal
    likelihood of every site's changes. A site's rate holds until it starts afresh, a draw from
    the prior, at the events of a Poisson process of rate ρ. Before each interval of length L
    the posterior keeps its mass with chance e^{−ρL} and returns to the prior otherwise; the
    interval then multiplies it by rule 5's likelihood, 1 − e^{−λL} (changed) or e^{−λL}. (A
    reset inside an interval is read as one at its start.) Sites are taken in order of their
    number of intervals, most first, so that the sites still filtering at step j are a prefix
    and every step is a few array operations on them. ``extra`` (``hacs.sessions``) adds X
    expected changes to each interval (in ``evidence.lengths``' order): 1 − e^{−λL−X} or e^{−λL−X}.
    ``changed_likelihood`` (``hacs.link_counts``) reads the changed intervals at the given
    positions (rows on RATE_GRID) in place of 1 − e^{−λL}.
    """
    if evidence.interval_offsets is None:
        raise ValueError("rates that reset need the intervals in time order (interval_evidence)")
    assert evidence.lengths is not None and evidence.interval_changed is not None
    starts = evidence.interval_offsets[:-1]
    counts = np.diff(evidence.interval_offsets)
    order = np.argsort(-counts, kind="stable")
    starts, counts = starts[order], counts[order]
    post = np.tile(weights, (order.size, 1))
    total = 0.0
    for j in range(int(counts.max(initial=0))):
        k = int(np.searchsorted(-counts, -j, side="left"))  # sites with more than j intervals
        at = starts[:k] + j
        length = evidence.lengths[at]
        stay = np.exp(-np.outer(length, RATE_GRID))
        if extra is not None:
            stay *= np.exp(-extra[at])[:, None]
        step = post[:k]
        keep = np.exp(-reset_rate * length)[:, None]
        step *= keep
        step += (1.0 - keep) * weights
        changed = evidence.interval_changed[at]
        if changed_likelihood is None:
            step *= np.where(changed[:, None], 1.0 - stay, stay)
        else:
            if changed.any():
                stay[changed] = changed_likelihood(at[changed])
            step *= stay
        mass = step.sum(axis=1)
        np.maximum(mass, 1e-300, out=mass)
        total += float(np.log(mass).sum())
        step /= mass[:, None]
    if not posterior:
        return post[:0], total
    result = np.empty_like(post)
    result[order] = post
    return result, total


def fit_reset_rate(prior: GammaPrior, evidence: IntervalEvidence) -> float:
    """ρ, how often a site's rate starts afresh (per day): the value in RESET_RATE_BOUNDS that
    maximises the collection's marginal likelihood under ``prior`` (:func:`_reset_filter`), or
    0 when rates that never reset explain the collection at least as well.

    Searched by bounded Brent in log ρ (to 5 %) on at most RESET_FIT_SITES sites, every k-th in
    the evidence's order; a fit depends on its data alone. The prior is the one fitted with
    rates that never reset (:func:`fit_interval_prior`): ρ is read on top of it."""
    n = evidence.n_sites
    if evidence.changed.size == 0 or n == 0:
        return 0.0
    stride = max(1, -(-n // RESET_FIT_SITES))
    sample = _every(evidence, stride)
    weights = _grid_weights(prior.shape, prior.rate)

    def negative_log_marginal(log_rho: float) -> float:
        return -_reset_filter(weights, sample, math.exp(log_rho), posterior=False)[1]

    low, high = (math.log(x) for x in RESET_RATE_BOUNDS)
    found = minimize_scalar(
        negative_log_marginal, bounds=(low, high), method="bounded", options={"xatol": 0.05}
    )
    still = -_reset_filter(weights, sample, 0.0, posterior=False)[1]
    return 0.0 if still <= float(found.fun) else float(math.exp(found.x))


def _every(evidence: IntervalEvidence, stride: int) -> IntervalEvidence:
    """Every ``stride``-th site of the evidence (all of it for a stride of 1)."""
    if stride == 1:
        return evidence
    parts = [evidence.rows(i, i + 1) for i in range(0, evidence.n_sites, stride)]
    return _concatenate(parts)


def _concatenate(parts: list[IntervalEvidence]) -> IntervalEvidence:
    owners, offsets, at = [], [np.zeros(1, dtype=np.int64)], 0
    for i, part in enumerate(parts):
        owners.append(part.owner + i)
        assert part.interval_offsets is not None
        offsets.append(part.interval_offsets[1:] + at)
        at += int(part.interval_offsets[-1])
    return IntervalEvidence(
        changed=np.concatenate([p.changed for p in parts]),
        owner=np.concatenate(owners),
        unchanged=np.concatenate([p.unchanged for p in parts]),
        first=np.concatenate([p.first for p in parts]),
        last=np.concatenate([p.last for p in parts]),
        accesses=np.concatenate([p.accesses for p in parts]),
        lengths=np.concatenate([p.lengths for p in parts if p.lengths is not None]),
        interval_changed=np.concatenate(
            [p.interval_changed for p in parts if p.interval_changed is not None]
        ),
        interval_offsets=np.concatenate(offsets),
    )


def fit_prior(updates: ArrayLike, exposure: ArrayLike) -> GammaPrior:
    """The Gamma prior that maximises the collection's marginal likelihood (empirical Bayes).

    Sites with no exposure carry no evidence and are left out; with none left, a weak prior of
    about one update a year is returned. The log marginal likelihood and its gradient (digamma
    terms) go to SLSQP in log-parameters, with bounds (L-BFGS-B took twenty times longer per
    fit here), from the method of moments; a fit depends on its data alone. The shape is
    bounded to [1e-3, 1e4]: when the sites' rates vary less than Poisson noise explains, the
    likelihood has no interior maximum and the prior tends to a point mass at the mean rate,
    which a shape of 1e4 already is to four decimals.
    """
    m = np.asarray(updates, dtype=np.float64)
    big_t = np.asarray(exposure, dtype=np.float64)
    use = np.isfinite(m) & np.isfinite(big_t) & (big_t > 0)
    m, big_t = m[use], big_t[use]
    if m.size == 0 or not np.any(m > 0):
        return GammaPrior(*_FALLBACK)

    def negative_log_marginal(params: FloatArray) -> tuple[float, FloatArray]:
        a, b = np.exp(params)
        log_b, log_bt = math.log(b), np.log(b + big_t)
        value = (a * log_b + gammaln(a + m) - gammaln(a) - (a + m) * log_bt).sum()
        d_a = (log_b + digamma(a + m) - digamma(a) - log_bt).sum()
        d_b = (a / b - (a + m) / (b + big_t)).sum()
        return float(-value), -np.array([d_a * a, d_b * b])

    rates = m / big_t
    mean = float(np.mean(rates))
    spread = float(np.var(rates)) or mean * mean
    a0 = max(min(mean * mean / spread, 50.0), 0.05)
    x0 = np.log([a0, a0 / mean])
    found = minimize(
        negative_log_marginal,
        x0,
        jac=True,
        method="SLSQP",
        bounds=[
            (math.log(_SHAPE_BOUNDS[0]), math.log(_SHAPE_BOUNDS[1])),
            (math.log(1e-9), math.log(1e12)),
        ],
        options={"ftol": 1e-12, "maxiter": 500},
    )
    a, b = np.exp(found.x)
    return GammaPrior(float(a), float(b))


def posterior(
    prior: GammaPrior, updates: ArrayLike, exposure: ArrayLike
) -> tuple[FloatArray, FloatArray]:
    """(α, β) of each site's Gamma posterior on λ: (a + m, b + T)."""
    m = np.nan_to_num(np.asarray(updates, dtype=np.float64))
    big_t = np.nan_to_num(np.asarray(exposure, dtype=np.float64))
    return prior.shape + m, prior.rate + big_t


def posterior_exposure(alpha: ArrayLike, beta: ArrayLike, elapsed: ArrayLike) -> FloatArray:
    """x = α ln(1 + Δ / β), so that the chance of a change within Δ days is 1 − exp(−x);
    Δ ≤ 0 gives 0. Pages sort sites by it in SQL (``scheduling.estimates.exposure_expression``)."""
    a = np.asarray(alpha, dtype=np.float64)
    b = np.asarray(beta, dtype=np.float64)
    delta = np.maximum(np.asarray(elapsed, dtype=np.float64), 0.0)
    result: FloatArray = a * np.log1p(delta / b)
    return result


def change_probability_since(alpha: ArrayLike, beta: ArrayLike, elapsed: ArrayLike) -> FloatArray:
    """P(at least one change within ``elapsed`` days) over a Gamma(α, β) posterior on λ:
    1 − (β / (β + Δ))^α; 0 for Δ ≤ 0."""
    result: FloatArray = -np.expm1(-posterior_exposure(alpha, beta, elapsed))
    return result


def interval_credible_bounds(
    alpha: ArrayLike, beta: ArrayLike, level: float = 0.9, dispersion: float = 1.0
) -> tuple[FloatArray, FloatArray]:
    """The central ``level`` credible interval of the mean interval 1/λ, in days, under
    Gamma(α, β) or, with ``dispersion`` φ, under Gamma(α/φ, β/φ): the same mean, φ times the
    variance (``hacs.website.link_dispersion``)."""
    if not 0 < level < 1:
        raise ValueError(f"level must lie in (0, 1); got {level}")
    _check_dispersion(dispersion)
    a = np.asarray(alpha, dtype=np.float64) / dispersion
    scale = dispersion / np.asarray(beta, dtype=np.float64)
    tail = (1.0 - level) / 2.0
    high_rate = _gamma_quantile(1.0 - tail, a, scale)
    low_rate = _gamma_quantile(tail, a, scale)
    with np.errstate(divide="ignore"):
        return 1.0 / high_rate, 1.0 / low_rate


#: An interval is open when its site's data cannot rule out one change a day or more, the rate
#: beyond which a daily crawl list no longer tells sites apart (docs/readings.md, "intervals
#: that cover").
OPEN_RATE = 1.0
#: "Cannot rule out": the likelihood somewhere at or above OPEN_RATE is within this factor of its
#: largest value, the cut of the 90 % likelihood interval (exp(−χ²₁(0.90) / 2) ≈ 0.26).
OPEN_LIKELIHOOD = math.exp(-2.0 * float(gammaincinv(0.5, 0.9)) / 2.0)  # χ²₁(0.90), as SciPy's


def _gamma_quantile(q: float, a: FloatArray, scale: FloatArray) -> FloatArray:
    """``scipy.stats.gamma.ppf(q, a, scale=scale)`` as SciPy computes it — the inverse of the
    regularised incomplete gamma function, times the scale, NaN where ``a`` or the scale is not
    positive — without importing ``scipy.stats``, which costs every HACS process about 25 MiB
    of memory (``tests/hacs/test_bayes.py`` checks that the two agree to the bit)."""
    with np.errstate(invalid="ignore"):
        value = gammaincinv(a, q) * scale
    return np.where((a > 0) & (scale > 0), value, np.nan)


# The grid's cells in log λ, for quantiles read between its rates.
_LOG_STEP = float(np.log(RATE_GRID[1] / RATE_GRID[0]))
_LOG_LOWER_EDGES = np.log(RATE_GRID) - _LOG_STEP / 2.0


@dataclass(frozen=True)
class IntervalBounds:
    """What each site's history says about its mean interval 1/λ, in days, at one level.

    Closed (``open`` False): the central credible interval [``low``, ``high``]. Open: nearly
    every gap between copies held a change, or the unchanged ones add up to too little time,
    so the data cannot rule out one change a day or more (:data:`OPEN_RATE`); the central
    interval loses its lower end (``low`` is NaN) and only "at least one change every ``high``
    days" is claimed, which the posterior holds with probability 1 − (1 − level) / 2 (95 % for
    a 90 % interval).
    """

    low: FloatArray
    high: FloatArray
    open: NDArray[np.bool_]


def interval_bounds(
    prior: GammaPrior,
    evidence: IntervalEvidence,
    level: float = 0.9,
    dispersion: float = 1.0,
    reset_rate: float = 0.0,
) -> IntervalBounds:
    """Each site's credible bounds on 1/λ, read from its posterior on RATE_GRID (the exact
    likelihood times the prior's mass, raised to 1 / ``dispersion``, :func:`change_dispersion`:
    the same mode, φ times the spread), quantiles interpolated in log λ within the grid's cells.

    A site's interval is open when it has a changed interval and its likelihood at some rate of
    at least :data:`OPEN_RATE` (or in the limit λ → ∞, where it tends to 1 when no interval is
    unchanged) is within :data:`OPEN_LIKELIHOOD` of its largest value: its captures are sparser
    than its changes, and a two-sided band would be the prior's shape, not the site's. Sites
    without evidence get the prior's central interval. With a ``reset_rate`` the posterior is
    that of the rate now (:func:`interval_posterior`); the open rule reads the likelihood of
    every interval alike.
    """
    if not 0 < level < 1:
        raise ValueError(f"level must lie in (0, 1); got {level}")
    _check_dispersion(dispersion)
    _check_reset_rate(reset_rate)
    n = evidence.n_sites
    tail = (1.0 - level) / 2.0
    quantiles = np.empty((n, 2))  # λ at tail and 1 − tail
    is_open = np.zeros(n, dtype=np.bool_)
    fast = RATE_GRID >= OPEN_RATE
    changed = np.bincount(evidence.owner, minlength=n) > 0
    for lo in range(0, n, _CHUNK):
        hi = min(lo + _CHUNK, n)
        rows = evidence.rows(lo, hi)
        log_lik = rows.log_likelihood()
        # log L(λ → ∞): 0 when every interval changed (each factor tends to 1), else −∞.
        at_infinity = np.where(evidence.unchanged[lo:hi] > 0, -np.inf, 0.0)
        best = np.maximum(log_lik.max(axis=1), at_infinity)
        best_fast = np.maximum(log_lik[:, fast].max(axis=1), at_infinity)
        is_open[lo:hi] = changed[lo:hi] & (best_fast - best >= math.log(OPEN_LIKELIHOOD))
        post = _posterior_rows(prior, rows, reset_rate, dispersion)
        quantiles[lo:hi] = _grid_quantiles(post, np.array([tail, 1.0 - tail]))
    with np.errstate(divide="ignore"):
        low = np.where(is_open, np.nan, 1.0 / quantiles[:, 1])
        high = 1.0 / quantiles[:, 0]
    return IntervalBounds(low=low, high=high, open=is_open)


#: :func:`change_dispersion` compares changes with their expectation in blocks of this many days
#: of each site's history (half a year: long beside an editing session of days to weeks).
BLOCK_DAYS = 182.0
#: A block counts when its changes could vary by at least this much (variance Σ p(1 − p)).
MIN_BLOCK_VARIANCE = 0.25
#: The fewest degrees of freedom (blocks beyond each site's first) a reading of φ needs.
MIN_DISPERSION_BLOCKS = 30


def change_dispersion(
    times: ArrayLike, updated: ArrayLike, offsets: ArrayLike, rate: ArrayLike
) -> float:
    """φ: how much more each site's changed intervals vary than independent ones would, on the
    collection; arguments as for :func:`interval_evidence`, with each site's rate (per day; NaN
    for a site to leave out), its posterior mean.

    Each interval between a site's accesses changed with chance p = 1 − e^{−λ t}. Its intervals
    are grouped in blocks of BLOCK_DAYS by their closing access, and each block whose variance
    V = Σ p(1 − p) is at least MIN_BLOCK_VARIANCE gives a Pearson term (C − Σ p)² / V, C its
    changed intervals. φ is the sum of the terms over the sum of each site's blocks less one
    (its rate was fitted), from sites with two blocks or more: about 1 when changes are
    independent, more when they come in sessions. At least 1, and 1 with fewer than
    MIN_DISPERSION_BLOCKS degrees of freedom.
    """
    timeline = accesses(times, updated, offsets)
    t, off = timeline.times, timeline.offsets
    rates = np.asarray(rate, dtype=np.float64)
    if rates.shape != (off.size - 1,):
        raise ValueError(f"rate must hold one value per site ({off.size - 1})")
    at, site = _closing_accesses(off)
    lam = rates[site]
    use = np.isfinite(lam) & (lam >= 0)
    at, site, lam = at[use], site[use], lam[use]
    if at.size == 0:
        return 1.0
    p = -np.expm1(-lam * (t[at] - t[at - 1]))
    block = np.floor(t[at] / BLOCK_DAYS).astype(np.int64)
    # One group per (site, block): the intervals are in site, then time order.
    new_group = np.r_[True, (site[1:] != site[:-1]) | (block[1:] != block[:-1])]
    group = np.cumsum(new_group) - 1
    n_groups = int(group[-1]) + 1
    expected = np.bincount(group, weights=p, minlength=n_groups)
    variance = np.bincount(group, weights=p * (1.0 - p), minlength=n_groups)
    flags = timeline.updated[at].astype(np.float64)
    changed = np.bincount(group, weights=flags, minlength=n_groups)
    kept = variance >= MIN_BLOCK_VARIANCE
    group_site = site[new_group][kept]
    terms = (changed[kept] - expected[kept]) ** 2 / variance[kept]
    blocks = np.bincount(group_site, minlength=off.size - 1)
    pearson = np.bincount(group_site, weights=terms, minlength=off.size - 1)
    several = blocks >= 2
    freedom = int((blocks[several] - 1).sum())
    if freedom < MIN_DISPERSION_BLOCKS:
        return 1.0
    return max(1.0, float(pearson[several].sum()) / freedom)


def _grid_quantiles(post: FloatArray, levels: FloatArray) -> FloatArray:
    """The rates at which each row's cumulative mass on RATE_GRID reaches each level, each
    cell's mass spread evenly over its log λ."""
    cdf = np.cumsum(post, axis=1)
    result = np.empty((post.shape[0], levels.size))
    rows = np.arange(post.shape[0])
    for k, q in enumerate(levels):
        cell = np.minimum((cdf < q).sum(axis=1), RATE_GRID.size - 1)
        before = np.where(cell > 0, cdf[rows, np.maximum(cell - 1, 0)], 0.0)
        mass = post[rows, cell]
        share = np.clip((q - before) / np.where(mass > 0, mass, 1.0), 0.0, 1.0)
        result[:, k] = np.exp(_LOG_LOWER_EDGES[cell] + share * _LOG_STEP)
    return result
