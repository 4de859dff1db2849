"""Pages edited in sessions: a hazard that rises after each detected change and decays.

Real homepages are not Poisson: their owners edit in sessions, and a page changed last week is
more likely to change this week than its long-run rate says. This module reads that as a
self-exciting (Hawkes) hazard on top of the site's rate (``hacs.bayes``, rates that reset):

    h(t) = λ + Σ_c a b e^{−b (t − c)}

over the site's changes c before t. Each change brings a further ``a`` expected changes (the
*excitation share*), spread over the days after it with decay ``b`` per day. A timeline does not
show the changes, only which intervals between copies held one: each changed interval is read as
one change at a time uniform in it (for an interval of length L its excitation left at the
interval's end is a w(L), w(L) = (1 − e^{−bL}) / (bL)). A change seen by a crawl a day after the
copy before counts almost fully; one somewhere in a 90-day gap between archive copies counts
little, as it should.

The excitation an interval (u, v] receives from the changed intervals before it is
X = R(u) (1 − e^{−b (v − u)}), R the excitation still to come at u; R decays by e^{−bL} over an
interval and gains a w(L) at the end of a changed one. The interval then reads
1 − e^{−λL−X} (changed) or e^{−λL−X}, in the same forward filter as rates that reset
(``hacs.bayes._reset_filter``), so that changes explained by a session do not raise λ.

:func:`fit_excitation` fits (a, b) on the collection by maximum likelihood (Nelder-Mead in
logarithms), the prior and the reset rate held as fitted before it; a = 0 is the reading of
rates that reset, bit for bit, and is kept when sessions do not explain the collection better.
:func:`session_probabilities` is then P(a change since the newest copy, by t + e):
1 − (β / (β + Δ))^α e^{−R (1 − e^{−bΔ})}.

Pure: NumPy and SciPy.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.optimize import minimize

from hacs.bayes import (
    RATE_GRID,
    RESET_FIT_SITES,
    GammaPrior,
    IntervalEvidence,
    _every,
    _grid_weights,
    _reset_filter,
    change_probability_since,
    fit_interval_prior,
    fit_reset_rate,
    interval_evidence,
)
from hacs.ranking import window_sites

__all__ = [
    "EXCITATION_BOUNDS",
    "Excitation",
    "SessionPosterior",
    "excitation_in_intervals",
    "fit_excitation",
    "session_posterior",
    "session_probabilities",
]

FloatArray = NDArray[np.float64]

#: The ranges :func:`fit_excitation` searches: the share a (expected further changes each change
#: brings) and the decay b per day (sessions from 2 hours to a year long).
EXCITATION_BOUNDS = {"share": (1e-3, 5.0), "decay": (1.0 / 365.0, 12.0)}


@dataclass(frozen=True)
class Excitation:
    """The collection's session hazard: ``share`` a and ``decay`` b per day (a = 0: none)."""

    share: float
    decay: float

    def __post_init__(self) -> None:
        if not (math.isfinite(self.share) and self.share >= 0.0):
            raise ValueError(f"share must be finite and ≥ 0; got {self.share}")
        if not (math.isfinite(self.decay) and self.decay > 0.0):
            raise ValueError(f"decay must be finite and > 0; got {self.decay}")


NO_SESSIONS = Excitation(0.0, 1.0)


def _kept_share(decay: float, length: FloatArray) -> FloatArray:
    """w(L) = E[e^{−b (v − c)}] for a change c uniform in an interval of length L ending at v
    (1 at L = 0)."""
    x = decay * length
    small = x < 1e-9
    result: FloatArray = np.where(small, 1.0, -np.expm1(-x) / np.where(small, 1.0, x))
    return result


def excitation_in_intervals(
    evidence: IntervalEvidence, excitation: Excitation
) -> tuple[FloatArray, FloatArray]:
    """(X, R): X the session hazard's expected changes in each interval (in the order of
    ``evidence.lengths``), R each site's excitation still to come at its newest access (0 for a
    site without an interval). The module docstring gives the recursion."""
    if evidence.interval_offsets is None or evidence.lengths is None:
        raise ValueError("sessions need the intervals in time order (interval_evidence)")
    assert evidence.interval_changed is not None
    a, b = excitation.share, excitation.decay
    starts = evidence.interval_offsets[:-1]
    counts = np.diff(evidence.interval_offsets)
    order = np.argsort(-counts, kind="stable")
    starts, counts = starts[order], counts[order]
    extra = np.zeros(evidence.lengths.size)
    remaining = np.zeros(order.size)
    for j in range(int(counts.max(initial=0))):
        k = int(np.searchsorted(-counts, -j, side="left"))
        at = starts[:k] + j
        length = evidence.lengths[at]
        decayed = np.exp(-b * length)
        extra[at] = remaining[:k] * (1.0 - decayed)
        remaining[:k] = remaining[:k] * decayed + np.where(
            evidence.interval_changed[at], a * _kept_share(b, length), 0.0
        )
    result = np.empty_like(remaining)
    result[order] = remaining
    return extra, result


def _negative_log_likelihood(
    weights: FloatArray, evidence: IntervalEvidence, reset_rate: float, excitation: Excitation
) -> float:
    extra, _ = excitation_in_intervals(evidence, excitation)
    return -_reset_filter(weights, evidence, reset_rate, posterior=False, extra=extra)[1]


def fit_excitation(
    prior: GammaPrior, evidence: IntervalEvidence, reset_rate: float = 0.0
) -> Excitation:
    """(a, b) maximising the collection's marginal likelihood with sessions, ``prior`` and
    ``reset_rate`` held; :data:`NO_SESSIONS` when no session explains it better. Nelder-Mead
    in (log a, log b) within :data:`EXCITATION_BOUNDS` from a = 0.3, b = 0.2 a day, on at most
    RESET_FIT_SITES sites, every k-th; a fit depends on its data alone."""
    n = evidence.n_sites
    if evidence.changed.size == 0 or n == 0:
        return NO_SESSIONS
    sample = _every(evidence, max(1, -(-n // RESET_FIT_SITES)))
    weights = _grid_weights(prior.shape, prior.rate)
    (a_lo, a_hi), (b_lo, b_hi) = EXCITATION_BOUNDS["share"], EXCITATION_BOUNDS["decay"]

    def clipped(params: FloatArray) -> Excitation:
        share = math.exp(min(max(float(params[0]), math.log(a_lo)), math.log(a_hi)))
        decay = math.exp(min(max(float(params[1]), math.log(b_lo)), math.log(b_hi)))
        return Excitation(share, decay)

    def objective(params: FloatArray) -> float:
        return _negative_log_likelihood(weights, sample, reset_rate, clipped(params))

    found = minimize(
        objective,
        np.array([math.log(0.3), math.log(0.2)]),
        method="Nelder-Mead",
        options={"xatol": 0.02, "fatol": 0.01, "maxiter": 200},
    )
    without = _negative_log_likelihood(weights, sample, reset_rate, NO_SESSIONS)
    return NO_SESSIONS if without <= float(found.fun) else clipped(found.x)


@dataclass(frozen=True, eq=False)
class SessionPosterior:
    """A collection read with sessions: its prior, reset rate and excitation, each site's
    Gamma(α, β) posterior of its rate now, its newest copy (NaN without one) and the
    excitation still to come after it."""

    prior: GammaPrior
    reset_rate: float
    excitation: Excitation
    alpha: FloatArray
    beta: FloatArray
    last_copy: FloatArray
    remaining: FloatArray


def _gamma_moments(post: FloatArray) -> tuple[FloatArray, FloatArray]:
    """(α, β) of the Gamma with each grid posterior's mean and variance (``interval_posterior``)."""
    mean = post @ RATE_GRID
    variance = ((RATE_GRID[None, :] - mean[:, None]) ** 2 * post).sum(axis=1)
    variance = np.maximum(variance, mean**2 / 1e4)
    return mean**2 / variance, mean / variance


def session_posterior(
    times: ArrayLike,
    updated: ArrayLike,
    offsets: ArrayLike,
    *,
    excitation: Excitation | None = None,
) -> SessionPosterior:
    """Every site's reading with sessions: the prior and reset rate as the default fits them
    (``hacs.ranking.default_posterior``), the excitation fitted on top (or ``excitation`` as
    given), and each site's filtered posterior with the session hazard taken out."""
    evidence = interval_evidence(times, updated, offsets)
    prior = fit_interval_prior(evidence)
    reset_rate = fit_reset_rate(prior, evidence)
    found = fit_excitation(prior, evidence, reset_rate) if excitation is None else excitation
    extra, remaining = excitation_in_intervals(evidence, found)
    weights = _grid_weights(prior.shape, prior.rate)
    post, _ = _reset_filter(weights, evidence, reset_rate, extra=extra)
    alpha, beta = _gamma_moments(post)
    return SessionPosterior(prior, reset_rate, found, alpha, beta, evidence.last, remaining)


def session_probabilities(
    times: ArrayLike,
    updated: ArrayLike,
    offsets: ArrayLike,
    *,
    t: float,
    e: float,
    history_days: float,
    excitation: Excitation | None = None,
) -> FloatArray:
    """P(a change since the newest copy, by t + e) with sessions, over the list's history
    window [t − w, t) as ``hacs.ranking.default_probabilities`` reads it; 0 for a site
    without a copy in the window."""
    window = window_sites(times, updated, offsets, t=t, history_days=history_days)
    found = session_posterior(window.times, window.updated, window.offsets, excitation=excitation)
    elapsed = t + e - found.last_copy
    quiet = 1.0 - change_probability_since(found.alpha, found.beta, elapsed)
    session = found.remaining * -np.expm1(-found.excitation.decay * np.maximum(elapsed, 0.0))
    p = np.zeros(window.eligible.size)
    p[window.eligible] = 1.0 - quiet * np.exp(-session)
    return p
