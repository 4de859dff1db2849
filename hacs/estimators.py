"""Update-rate estimation for HACS — the pure numerical core.

Everything here takes plain numbers, sequences or NumPy arrays and returns floats, arrays or
small frozen dataclasses; it never imports Django (``tests/hacs/test_pure.py`` checks that).
Times are in days and rates are per day throughout.

The method is the HACS paper's (``papers/hacs-scholarly-webpage-updates.txt``, Sections I-B and
II-B) with the readings fixed in ``DESIGN.md`` ("Method", rules 5-7):

* :func:`estimate` turns one timeline — observation times and update flags — into a rate λ and
  a last-update time τ, from observed updates (rule 5) or interpolated ones (rule 6);
* :func:`estimate_many` does the same for many sites at once, vectorised across sites;
* :func:`mle_rate` is the estimator behind both (Eq. 5, with Eq. 4 when every interval changed);
* :func:`change_probability` is the prediction g(λ, τ, t, e) of rule 7;
* :func:`ratio_rate` and :func:`cho_garcia_molina_rate` are Eqs. 3 and 4 on their own, used as
  extra scorers.

Zero-length intervals (our reading, the paper and DESIGN.md are silent): observations at the same
instant — which happen at website level when two pages were captured in the same second — are one
access, and that access is an update if any of them is. Intervals are taken between distinct
instants only, so an interval is never empty. The first access is the baseline: the first
observation's flag must be False, and a flag on another observation at that same first instant
(a page captured twice in one second) is ignored, as there is no interval for it to close. The
counts reported in ``observations`` and ``updates`` are still the raw numbers of observations
and of update flags set.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import pairwise
from typing import overload

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.optimize import brentq

__all__ = [
    "METHODS",
    "Accesses",
    "RateEstimate",
    "RateEstimates",
    "accesses",
    "change_exposure",
    "change_probability",
    "cho_garcia_molina_rate",
    "estimate",
    "estimate_many",
    "exposure_threshold",
    "mle_rate",
    "ratio_rate",
    "update_instants",
]

METHODS = ("observed", "interpolated")

# Both solvers stop well inside the 1e-9 relative agreement that DESIGN.md rule 5 asks for, so
# that the scalar (Brent) and the vectorised (Halley) answers agree to far better than that.
_BRENT_RTOL = 1e-13
_SOLVER_STEP_TOL = 1e-5  # Halley step on log λ after which the error is ~1e-15
_BISECTION_TOL = 1e-13  # bracket width on log λ that ends a run of bisections
_SOLVER_MAX_ITER = 200  # bisection alone needs < 80 steps on the widest bracket we build
_COMPACT_BELOW = 0.7  # drop converged sites once fewer than this share of the work remains
_CHUNK = 1 << 18  # observations per chunk of estimate_many: 2 MiB per float array

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]
BoolArray = NDArray[np.bool_]


@dataclass(frozen=True)
class RateEstimate:
    """The estimate for one timeline.

    ``rate`` is λ per day (NaN when unknown: fewer than two distinct observation instants);
    ``tau`` is the time of the last update, or of the first observation when there is none (NaN
    with no observations); ``observations`` and ``updates`` count observations and update flags.
    """

    rate: float
    tau: float
    observations: int
    updates: int
    method: str


@dataclass(frozen=True, eq=False)  # eq=False: comparing arrays has no single truth value
class RateEstimates:
    """Estimates for many sites: one array entry per site, fields as in :class:`RateEstimate`."""

    rate: FloatArray
    tau: FloatArray
    observations: IntArray
    updates: IntArray


# --------------------------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------------------------


def mle_rate(changed_intervals: ArrayLike, unchanged_intervals: ArrayLike) -> float:
    """Maximum-likelihood update rate from changed and unchanged intervals (DESIGN.md rule 5).

    With n intervals of which m are changed: n = 0 gives NaN (unknown); m = 0 gives 0.0;
    0 < m < n solves Eq. 5 by Brent's method to 1e-13 relative; m = n uses Eq. 4 with the
    access frequency n / (sum of all intervals). Intervals must be positive and finite.
    """
    changed = _check_intervals(changed_intervals, "changed_intervals")
    unchanged = _check_intervals(unchanged_intervals, "unchanged_intervals")
    return _mle_rate(changed, unchanged)


def estimate(times: ArrayLike, updated: ArrayLike, method: str = "observed") -> RateEstimate:
    """Estimate λ and τ for one timeline (DESIGN rules 5 and 6): :func:`estimate_many` on one site.

    ``times`` are observation times in days, sorted ascending; ``updated`` flags the observations
    that are updates. The first observation is the baseline: its flag must be False.

    ``method="observed"`` (rule 5): intervals between consecutive accesses, changed when the
    closing access is an update. ``method="interpolated"`` (rule 6): each update moves to the
    midpoint between its access and the previous one; intervals are between consecutive events,
    changed when the closing event is an update. τ is the last update time (interpolated: the
    last midpoint), or the first observation time when there is no update. Observations at the
    same instant are one access (:func:`accesses`).
    """
    t = _check_times(times, "times")
    flags = _check_flags(updated, t.size)
    _check_sorted(t)
    _check_baseline(flags, np.zeros(min(t.size, 1), dtype=np.int64))
    result = estimate_many(t, flags, np.array([0, t.size], dtype=np.int64), method=method)
    return RateEstimate(
        float(result.rate[0]),
        float(result.tau[0]),
        int(result.observations[0]),
        int(result.updates[0]),
        method,
    )


@dataclass(frozen=True, eq=False)
class Accesses:
    """Timelines as *accesses*: distinct instants, site by site (our zero-length reading).

    Observations at the same instant — two pages of a site captured in the same second — are
    one access, an update if any of them is; each site's first access is its baseline and never
    an update. Site i owns ``[offsets[i], offsets[i + 1])``.
    """

    times: FloatArray
    updated: BoolArray
    offsets: IntArray


def accesses(times: ArrayLike, updated: ArrayLike, offsets: ArrayLike) -> Accesses:
    """Merge each site's observations at one instant into one access (see :class:`Accesses`).

    Arguments as for :func:`estimate_many`: times sorted ascending within each site, flags, and
    ``offsets`` with one entry more than there are sites.
    """
    t = _check_times(times, "times")
    flags = _check_flags(updated, t.size)
    off = _check_offsets(offsets, t.size)
    counts = np.diff(off)
    first = off[:-1][counts > 0]
    _check_baseline(flags, first, off)
    _check_sorted_within(t, first, off, 0)
    merged_t, merged_flags, merged_first = _accesses(t, flags, first)
    if merged_t is t:  # nothing merged: copies, so that the result never shares the caller's
        merged_t, merged_flags = merged_t.copy(), merged_flags.copy()
    new_off = np.zeros(off.size, dtype=np.int64)
    new_counts = np.zeros(counts.size, dtype=np.int64)
    new_counts[counts > 0] = np.diff(np.append(merged_first, merged_t.size))
    np.cumsum(new_counts, out=new_off[1:])
    return Accesses(merged_t, merged_flags, new_off)


def update_instants(timelines: Accesses, method: str = "observed") -> tuple[FloatArray, IntArray]:
    """The instants of each site's updates and the site each belongs to, in site-then-time order.

    ``observed`` (rule 5): the update access's own time. ``interpolated`` (rule 6, HACS paper
    Section II-B2): the midpoint between the update access and the access before it.
    """
    _check_method(method)
    at = np.flatnonzero(timelines.updated)
    site = np.searchsorted(timelines.offsets, at, side="right") - 1
    when = timelines.times[at]
    if method == "interpolated":
        when = (timelines.times[at - 1] + when) / 2
    return when, site.astype(np.int64)


def estimate_many(
    times: ArrayLike, updated: ArrayLike, offsets: ArrayLike, method: str = "observed"
) -> RateEstimates:
    """:func:`estimate` for many sites at once, vectorised across sites.

    ``times`` and ``updated`` hold all sites' timelines back to back; site i owns the slice
    ``[offsets[i], offsets[i + 1])``, so ``offsets`` has one entry more than there are sites,
    starts at 0 and ends at ``len(times)``. Each field of the result has one entry per site and
    agrees with :func:`estimate` on that site's slice to 1e-9 relative (NaN rate when unknown).
    """
    _check_method(method)
    t = _check_times(times, "times")
    flags = _check_flags(updated, t.size)
    off = _check_offsets(offsets, t.size)
    n_sites = off.size - 1
    counts = np.diff(off)
    rate = np.full(n_sites, np.nan)
    tau = np.full(n_sites, np.nan)
    updates = np.zeros(n_sites, dtype=np.int64)
    nonempty = np.flatnonzero(counts)
    if nonempty.size:
        # Site j of the non-empty ones owns [first[j], first[j + 1]); empty sites take no room.
        first = off[nonempty]
        _check_baseline(flags, first, off)
        # Whole sites in chunks of about _CHUNK observations, so that each chunk's arrays stay
        # in the CPU cache through the dozens of passes below (about 30% faster than passes
        # over everything at once).
        cuts = np.searchsorted(first, np.arange(_CHUNK, t.size, _CHUNK))
        bounds = np.unique(np.concatenate(([0], cuts, [first.size]))).tolist()
        for a, b in pairwise(bounds):
            lo = int(first[a])
            hi = int(first[b]) if b < first.size else t.size
            sites = nonempty[a:b]
            rate[sites], tau[sites], updates[sites] = _estimate_many(
                t[lo:hi], flags[lo:hi], first[a:b] - lo, method, off, lo
            )
    return RateEstimates(rate, tau, counts.astype(np.int64), updates)


@overload
def change_probability(rate: float, tau: float, t: float, e: float) -> float: ...
@overload
def change_probability(
    rate: ArrayLike, tau: ArrayLike, t: ArrayLike, e: ArrayLike
) -> FloatArray: ...
def change_probability(
    rate: ArrayLike, tau: ArrayLike, t: ArrayLike, e: ArrayLike
) -> float | FloatArray:
    """Probability that a site changes by t + e: g = 1 − exp(−λ (t + e − τ)) (DESIGN.md rule 7).

    Broadcasts over NumPy arrays; a float when every argument is a scalar. An unknown (NaN) rate
    gives NaN. Rates and e must not be negative.
    """
    lam = np.asarray(rate, dtype=np.float64)
    e_days = np.asarray(e, dtype=np.float64)
    if np.any(lam < 0):
        raise ValueError(f"rate must not be negative; got {float(lam[lam < 0].flat[0])}")
    if np.any(e_days < 0):
        raise ValueError(f"e must not be negative; got {float(e_days[e_days < 0].flat[0])}")
    p = _probability(
        lam, np.asarray(tau, dtype=np.float64), np.asarray(t, dtype=np.float64), e_days
    )
    return float(p) if p.ndim == 0 else p


@overload
def ratio_rate(updates: float, total_time: float) -> float: ...
@overload
def ratio_rate(updates: ArrayLike, total_time: ArrayLike) -> FloatArray: ...
def ratio_rate(updates: ArrayLike, total_time: ArrayLike) -> float | FloatArray:
    """The naive estimator λ = X / T (HACS paper, Eq. 3): X updates seen over T days.

    NaN when T = 0 (nothing observed). Broadcasts over arrays; a float for scalar arguments.
    """
    x = np.asarray(updates, dtype=np.float64)
    total = np.asarray(total_time, dtype=np.float64)
    _check_nonnegative_finite(x, "updates")
    _check_nonnegative_finite(total, "total_time")
    r = _ratio(x, total)
    return float(r) if r.ndim == 0 else r


@overload
def cho_garcia_molina_rate(accesses: float, updates: float, total_time: float) -> float: ...
@overload
def cho_garcia_molina_rate(
    accesses: ArrayLike, updates: ArrayLike, total_time: ArrayLike
) -> FloatArray: ...
def cho_garcia_molina_rate(
    accesses: ArrayLike, updates: ArrayLike, total_time: ArrayLike
) -> float | FloatArray:
    """Cho and Garcia-Molina's estimator (HACS paper, Eq. 4): λ = r̂ · f.

    ``accesses`` is n, the number of accesses that could detect a change (in a timeline of k
    distinct observation instants, n = k − 1 intervals); ``updates`` is X ≤ n, how many did;
    ``total_time`` is T days, so f = n / T. r̂ = −log((n − X + 0.5) / (n + 0.5)). NaN when
    n = 0. Broadcasts over arrays; a float for scalar arguments.
    """
    n = np.asarray(accesses, dtype=np.float64)
    x = np.asarray(updates, dtype=np.float64)
    total = np.asarray(total_time, dtype=np.float64)
    _check_nonnegative_finite(n, "accesses")
    _check_nonnegative_finite(x, "updates")
    _check_nonnegative_finite(total, "total_time")
    if np.any(x > n):
        raise ValueError("updates must not exceed accesses")
    if np.any((n > 0) & (total == 0)):
        raise ValueError("total_time must be positive when accesses > 0")
    r = _cho_garcia_molina(n, x, total)
    return float(r) if r.ndim == 0 else r


# --------------------------------------------------------------------------------------------
# Argument checks
# --------------------------------------------------------------------------------------------


def _check_method(method: str) -> None:
    if method not in METHODS:
        raise ValueError(f"method must be 'observed' or 'interpolated'; got {method!r}")


def _check_times(values: ArrayLike, name: str) -> FloatArray:
    try:
        t = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be numbers (days): {exc}") from None
    if t.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional; got shape {t.shape}")
    # Two reductions and no temporaries in the usual case (this runs on tens of millions of
    # times); the element-wise search only runs to name a bad entry. min is NaN with any NaN,
    # and the sum is not finite with any infinity.
    if t.size and not (t.min() >= 0 and np.isfinite(t.sum())):
        bad = ~np.isfinite(t)
        if bad.any():
            i = int(np.argmax(bad))
            raise ValueError(f"{name} must be finite; {name}[{i}] = {float(t[i])}")
        if t.min() < 0:
            i = int(np.argmax(t < 0))
            raise ValueError(f"{name} must not be negative; {name}[{i}] = {float(t[i])}")
    return t


def _check_intervals(values: ArrayLike, name: str) -> FloatArray:
    t = _check_times(values, name)
    if t.size and t.min() <= 0:
        i = int(np.argmax(t <= 0))
        raise ValueError(f"{name} must be positive; {name}[{i}] = {float(t[i])}")
    return t


def _check_flags(values: ArrayLike, size: int) -> BoolArray:
    flags = np.asarray(values)
    if flags.ndim != 1:
        raise ValueError(f"updated must be one-dimensional; got shape {flags.shape}")
    if flags.size != size:
        raise ValueError(
            f"times and updated must have the same length; got {size} and {flags.size}"
        )
    if flags.dtype == np.bool_:
        return flags
    if flags.size == 0:
        return np.zeros(0, dtype=np.bool_)
    if flags.dtype.kind not in "iuf" or not np.all((flags == 0) | (flags == 1)):
        raise ValueError("updated must hold booleans (True/False or 0/1)")
    return flags.astype(np.bool_)


def _check_sorted(t: FloatArray) -> None:
    backwards = np.diff(t) < 0
    if backwards.any():
        i = int(np.argmax(backwards)) + 1
        raise ValueError(
            f"times must be sorted ascending; times[{i}] = {float(t[i])} < "
            f"times[{i - 1}] = {float(t[i - 1])}"
        )


def _check_baseline(flags: BoolArray, first: IntArray, off: IntArray | None = None) -> None:
    bad = flags[first]
    if bad.any():
        i = int(first[np.argmax(bad)])
        where = "" if off is None else f" (site {_site_of(off, i)})"
        raise ValueError(
            f"updated[{i}] is True for a first observation{where}; the first observation of a "
            "timeline is its baseline and cannot be an update"
        )


def _check_offsets(offsets: ArrayLike, size: int) -> IntArray:
    off = np.asarray(offsets)
    if off.ndim != 1 or off.size == 0:
        raise ValueError("offsets must be a one-dimensional array with n_sites + 1 entries")
    if off.dtype.kind not in "iu":
        raise ValueError(f"offsets must be integers; got dtype {off.dtype}")
    off = off.astype(np.int64)
    if off[0] != 0:
        raise ValueError(f"offsets must start at 0; got offsets[0] = {int(off[0])}")
    if off[-1] != size:
        raise ValueError(
            f"offsets must end at len(times) = {size}; got offsets[-1] = {int(off[-1])}"
        )
    backwards = np.diff(off) < 0
    if backwards.any():
        i = int(np.argmax(backwards)) + 1
        raise ValueError(
            f"offsets must be non-decreasing; offsets[{i}] = {int(off[i])} < "
            f"offsets[{i - 1}] = {int(off[i - 1])}"
        )
    return off


def _site_of(off: IntArray, i: int) -> int:
    return int(np.searchsorted(off, i, side="right")) - 1


def _check_nonnegative_finite(values: FloatArray, name: str) -> None:
    if not np.all(np.isfinite(values)):
        raise ValueError(f"{name} must be finite")
    if np.any(values < 0):
        raise ValueError(f"{name} must not be negative")


# --------------------------------------------------------------------------------------------
# Estimators
# --------------------------------------------------------------------------------------------


def _mle_rate(changed: FloatArray, unchanged: FloatArray) -> float:
    """Maximum-likelihood rate with the DESIGN.md rule 5 edge cases (HACS paper, Eqs. 4 and 5)."""
    m = int(changed.size)
    n = m + int(unchanged.size)
    if n == 0:
        return math.nan
    if m == 0:
        return 0.0
    if m == n:
        return float(_cho_garcia_molina(np.float64(n), np.float64(m), np.float64(changed.sum())))
    return _eq5_root(changed, float(unchanged.sum()))


def _eq5_bracket(m: float, changed_sum: float, unchanged_sum: float) -> tuple[float, float]:
    """A bracket for the root of Eq. 5 (HACS paper, Eq. 5).

    Every term t/(exp(λt) − 1) lies in (1/λ − t/2, 1/λ), so the root lies in
    [m / (S + C/2), m / S] with S = Σ t_u and C = Σ t_c; halving and doubling the ends keeps the
    signs of F safely apart from rounding.
    """
    return 0.5 * m / (unchanged_sum + 0.5 * changed_sum), 2.0 * m / unchanged_sum


def _eq5_root(changed: FloatArray, unchanged_sum: float) -> float:
    """Solve Σ t_c / (exp(λ t_c) − 1) = Σ t_u for λ by Brent's method (HACS paper, Eq. 5)."""

    def f(lam: float) -> float:
        with np.errstate(over="ignore"):  # expm1 → inf makes the term 0, which is right
            return float(np.sum(changed / np.expm1(lam * changed))) - unchanged_sum

    lo, hi = _eq5_bracket(float(changed.size), float(changed.sum()), unchanged_sum)
    root = brentq(f, lo, hi, xtol=lo * _BRENT_RTOL, rtol=_BRENT_RTOL, maxiter=500)
    return float(root)


def _ratio(updates: FloatArray, total_time: FloatArray) -> FloatArray:
    """λ = X / T (HACS paper, Eq. 3); NaN when T = 0."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(total_time > 0, updates / total_time, np.nan)


def _cho_garcia_molina(
    accesses: ArrayLike, updates: ArrayLike, total_time: ArrayLike
) -> FloatArray:
    """λ = r̂ · f with r̂ = −log((n − X + 0.5) / (n + 0.5)) and f = n / T (HACS paper, Eq. 4)."""
    n = np.asarray(accesses, dtype=np.float64)
    x = np.asarray(updates, dtype=np.float64)
    total = np.asarray(total_time, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = -np.log((n - x + 0.5) / (n + 0.5))
        return np.where(n > 0, r * (n / total), np.nan)


def _probability(rate: FloatArray, tau: FloatArray, t: FloatArray, e: FloatArray) -> FloatArray:
    """g(λ, τ, t, e) = 1 − exp(−λ (t + e − τ)) (HACS paper, Section II-E; DESIGN.md rule 7)."""
    # −expm1(−x) is 1 − exp(−x) without cancellation for small λ; τ after t + e (a clock skew,
    # an estimate from the future) leaves no time for a change: p = 0, never negative.
    result: FloatArray = -np.expm1(-np.maximum(change_exposure(rate, tau, t, e), 0.0))
    return result


@overload
def change_exposure(rate: float, tau: float, t: float, e: float) -> float: ...
@overload
def change_exposure(rate: ArrayLike, tau: ArrayLike, t: ArrayLike, e: ArrayLike) -> FloatArray: ...
def change_exposure(
    rate: ArrayLike, tau: ArrayLike, t: ArrayLike, e: ArrayLike
) -> float | FloatArray:
    """λ (t + e − τ): the expected number of changes since τ, of which g is 1 − exp(−·).

    g grows with it, so the pages that sort sites by their probability of change in SQL sort by
    this product (``scheduling.estimates.exposure_expression``), and a threshold θ on g is the
    threshold :func:`exposure_threshold` on it.
    """
    x = np.asarray(rate, dtype=np.float64) * (
        np.asarray(t, dtype=np.float64)
        + np.asarray(e, dtype=np.float64)
        - np.asarray(tau, dtype=np.float64)
    )
    return float(x) if x.ndim == 0 else x


def exposure_threshold(theta: float) -> float:
    """The exposure at which g reaches θ: −log(1 − θ) (θ = 1 is capped just below, at 1 − 1e-12)."""
    if not 0 <= theta <= 1:
        raise ValueError(f"theta must lie in [0, 1]; got {theta}")
    return -math.log1p(-min(theta, 1 - 1e-12))


# --------------------------------------------------------------------------------------------
# Estimators, many timelines at once
# --------------------------------------------------------------------------------------------


def _estimate_many(
    t: FloatArray, flags: BoolArray, first: IntArray, method: str, off: IntArray, base: int
) -> tuple[FloatArray, FloatArray, IntArray]:
    """Rate, τ and update count of each site in a chunk (DESIGN rules 5 and 6), vectorised.

    Site j owns ``t[first[j]:first[j + 1]]`` (none empty); ``t`` starts at entry ``base`` of
    all the times, whose ``off`` name sites in error messages. The observations become accesses
    (:func:`_accesses`: no copy when no two share an instant), interpolated ones move to their
    midpoints, and the intervals between consecutive accesses feed Eq. 5 (or Eq. 4) per site.
    """
    size = t.size
    flag_counts = _segment_counts(np.flatnonzero(flags), first, size)
    _check_sorted_within(t, first, off, base)
    events, changed, first = _accesses(t, flags, first)
    if method == "interpolated":
        events, changed, first = _midpoints(events, changed, first)
    size = events.size
    update_at = np.flatnonzero(changed)
    m = _segment_counts(update_at, first, size)
    n_sites = first.size
    n = np.diff(np.append(first, size)) - 1
    # intervals[k] = events[k] − events[k − 1], the interval that access k closes (0 at a
    # site's first access, so that sums skip it).
    intervals = np.empty(size)
    np.subtract(events[1:], events[:-1], out=intervals[1:])
    intervals[first] = 0.0

    # The changed intervals, site by site: site j's are tc_all[ends[j] - m[j]:ends[j]].
    ends = np.cumsum(m)
    tc_all = intervals[update_at]
    intervals[update_at] = 0.0  # now `intervals` holds only the unchanged ones
    unchanged_sum = np.add.reduceat(intervals, first)
    changed_sum = np.zeros(n_sites)
    has_update = m > 0
    if update_at.size:
        changed_sum[has_update] = np.add.reduceat(tc_all, (ends - m)[has_update])

    rate = _rates(n, m, tc_all, changed_sum, unchanged_sum)
    tau = events[first].copy()  # τ: the last update, else the first observation
    tau[has_update] = events[update_at[ends[has_update] - 1]]
    return rate, tau, flag_counts


def _midpoints(
    events: FloatArray, changed: BoolArray, first: IntArray
) -> tuple[FloatArray, BoolArray, IntArray]:
    """HACS paper, Section II-B2 (DESIGN rule 6): each update moves to the midpoint with the
    access before it. A midpoint of adjacent floats may round onto its left neighbour: merging
    again keeps the instants distinct."""
    at = np.flatnonzero(changed)
    moved = events.copy()
    moved[at] = (events[at - 1] + events[at]) / 2
    return _accesses(moved, changed, first)


def _rates(
    n: IntArray, m: IntArray, tc_all: FloatArray, changed_sum: FloatArray, unchanged_sum: FloatArray
) -> FloatArray:
    """λ of each site with n intervals, m of them changed (Eq. 5, or Eq. 4 when m = n; 0 when
    m = 0; NaN when n = 0); ``tc_all`` holds the changed intervals, site by site."""
    rate = np.full(n.size, np.nan)
    rate[(n > 0) & (m == 0)] = 0.0
    every = (n > 0) & (m == n)
    rate[every] = _cho_garcia_molina(n[every], m[every], changed_sum[every])
    solve = (m > 0) & (m < n)
    if solve.any():
        rate[solve] = _eq5_root_many(
            tc_all[np.repeat(solve, m)], m[solve], changed_sum[solve], unchanged_sum[solve]
        )
    return rate


def _check_sorted_within(t: FloatArray, first: IntArray, off: IntArray, base: int) -> None:
    """Times must not go backwards within a site (``first`` are the sites' first entries)."""
    if t.size < 2:
        return
    backwards = t[1:] < t[:-1]
    backwards[first[1:] - 1] = False  # a new site may start earlier than the last one ended
    if backwards.any():
        i = int(np.argmax(backwards)) + 1
        raise ValueError(
            f"times must be sorted ascending within each site; times[{base + i}] = "
            f"{float(t[i])} < times[{base + i - 1}] = {float(t[i - 1])} "
            f"(site {_site_of(off, base + i)})"
        )


def _segment_counts(positions: IntArray, first: IntArray, size: int) -> IntArray:
    """How many of the sorted ``positions`` fall in each segment [first[j], first[j + 1])."""
    bounds = np.searchsorted(positions, np.append(first, size))
    counts: IntArray = np.diff(bounds).astype(np.int64)
    return counts


def _accesses(
    t: FloatArray, flags: BoolArray, first: IntArray
) -> tuple[FloatArray, BoolArray, IntArray]:
    """Observations at one instant become one access, an update if any is (our zero-length
    reading); each site's first access is its baseline. Returns (times, flags, first) of the
    accesses; the inputs themselves when no two observations of a site share an instant.

    Site j owns ``t[first[j]:first[j + 1]]``, sorted ascending, none empty.
    """
    repeat = np.zeros(t.size, dtype=np.bool_)
    np.equal(t[1:], t[:-1], out=repeat[1:])
    repeat[first] = False
    if not repeat.any():
        if flags[first].any():
            flags = flags.copy()
            flags[first] = False
        return t, flags, first
    keep = np.flatnonzero(~repeat)
    merged: BoolArray = np.logical_or.reduceat(flags, keep)
    new_first = np.searchsorted(keep, first)
    merged[new_first] = False
    return t[keep], merged, new_first.astype(np.int64)


def _eq5_root_many(
    tc: FloatArray, counts: IntArray, changed_sum: FloatArray, unchanged_sum: FloatArray
) -> FloatArray:
    """Solve Eq. 5 for many sites at once by safeguarded Halley iteration (HACS paper, Eq. 5).

    ``tc`` holds the changed intervals of all sites back to back, ``counts[i]`` of them for site
    i (each ≥ 1). Each site iterates on u = log λ, where

        h(u) = log A(λ) − log S,  A(λ) = Σ t_c / (exp(λ t_c) − 1),  S = Σ t_u,

    is decreasing with a single root and close to linear: −h'(u) = λ |A'| / A ≥ 1 everywhere,
    and h is exactly linear in u when every λ t_c is small. Halley's (cubically convergent)
    step from a small-λt estimate lands within 1e-15 in two or three steps.
    Each site keeps its own bracket on u, starting from that of :func:`_eq5_bracket`, and
    bisects whenever a step would leave it, so convergence is guaranteed. A site stops once its
    step is below 1e-5 and takes that last step: the cubic convergence (error constant below
    0.1 here) leaves an error of order 1e-15 — measured at most 2e-15 relative against Brent's
    method run to full precision — far inside the 1e-9 agreement that DESIGN.md rule 5 asks
    for. Only unconverged sites (and only their changed intervals; S is a constant) are
    evaluated again.
    """
    m = counts.astype(np.float64)
    result = np.full(m.size, np.nan)
    left = _Unsolved(
        tc=tc,
        counts=counts,
        sites=np.arange(m.size),
        owner=np.repeat(np.arange(m.size), counts),
        starts=np.cumsum(counts) - counts,
        lo=np.log(0.5 * m / (unchanged_sum + 0.5 * changed_sum)),
        hi=np.log(2.0 * m / unchanged_sum),
        log_s=np.log(unchanged_sum),
        unchanged_sum=unchanged_sum,
        live=np.ones(m.size, dtype=np.bool_),
    )
    u = _eq5_start(tc, counts, m, changed_sum, unchanged_sum)
    # Work buffers allocated once and used through views: fresh arrays of this size each
    # iteration would cost as much in page faults as the arithmetic does.
    buffers = np.empty((3, tc.size))

    for _ in range(_SOLVER_MAX_ITER):
        h, r1, h2 = _eq5_slopes(left, u, buffers)
        new_u, converged = _halley_step(left, u, h, r1, h2)
        done = (converged | (left.hi - left.lo < _BISECTION_TOL)) & left.live

        if done.any():
            result[left.sites[done]] = np.exp(new_u[done])
            left.live &= ~done
            if not left.live.any():
                return result
            # Drop the converged sites once that saves real work; until then they ride along
            # (computed but never stored again), which is cheaper than copying everything.
            if np.dot(left.counts, left.live) < _COMPACT_BELOW * left.tc.size:
                new_u = left.compact(new_u)
        u = new_u

    # Unreachable in practice (bisection alone converges in < 80 steps); fall back to Brent.
    ends = np.cumsum(left.counts)
    for i in np.flatnonzero(left.live).tolist():
        result[left.sites[i]] = _eq5_root(
            left.tc[ends[i] - left.counts[i] : ends[i]], float(left.unchanged_sum[i])
        )
    return result


@dataclass(eq=False)
class _Unsolved:
    """The sites :func:`_eq5_root_many` is solving: their changed intervals back to back
    (``counts[j]`` of them for site j, from ``starts[j]``; ``owner`` is each interval's j),
    their entries in the result (``sites``), brackets on u = log λ, log S and S, and whether
    each is still unconverged (``live``)."""

    tc: FloatArray
    counts: IntArray
    sites: IntArray
    owner: IntArray
    starts: IntArray
    lo: FloatArray
    hi: FloatArray
    log_s: FloatArray
    unchanged_sum: FloatArray
    live: BoolArray

    def compact(self, u: FloatArray) -> FloatArray:
        """Keep only the live sites (and their intervals); returns their entries of ``u``."""
        live = self.live
        self.tc = self.tc[np.repeat(live, self.counts)]
        self.counts, self.sites, self.lo, self.hi = (
            self.counts[live],
            self.sites[live],
            self.lo[live],
            self.hi[live],
        )
        self.log_s, self.unchanged_sum = self.log_s[live], self.unchanged_sum[live]
        self.live = np.ones(self.sites.size, dtype=np.bool_)
        self.owner = np.repeat(np.arange(self.sites.size), self.counts)
        self.starts = np.cumsum(self.counts) - self.counts
        kept: FloatArray = u[live]
        return kept


def _eq5_start(
    tc: FloatArray,
    counts: IntArray,
    m: FloatArray,
    changed_sum: FloatArray,
    unchanged_sum: FloatArray,
) -> FloatArray:
    """Each site's first u = log λ for Halley's method on Eq. 5 (HACS paper, Eq. 5).

    The root of Eq. 5 with each term expanded to second order in λt,
    t/(e^{λt} − 1) ≈ 1/λ − t/2 + λt²/12: the smaller root of (Q/12) λ² − B λ + m = 0 with
    B = S + C/2 and Q = Σ t_c², written without cancellation; past the expansion's reach
    (negative discriminant) the vertex 2m/B, still inside the bracket of :func:`_eq5_bracket`.
    """
    b = unchanged_sum + 0.5 * changed_sum
    q = np.add.reduceat(tc * tc, np.cumsum(counts) - counts)
    u: FloatArray = np.log(2.0 * m / (b + np.sqrt(np.maximum(b * b - m * q / 3.0, 0.0))))
    return u


def _eq5_slopes(
    left: _Unsolved, u: FloatArray, buffers: FloatArray
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """h(u) = log A(λ) − log S and its slopes, −h'(u) and h''(u), at each site's u (HACS paper,
    Eq. 5, as :func:`_eq5_root_many` writes it), with A, −A' and A'' summed over each site's
    changed intervals in the ``buffers`` (three rows at least as long as ``left.tc``)."""
    tc = left.tc
    lam = np.exp(u)
    term, plus, twice = buffers[:, : tc.size]
    np.take(lam, left.owner, out=term)
    term *= tc
    with np.errstate(over="ignore"):  # e^x overflowing makes its term 0, which is right
        np.expm1(term, out=term)
    np.divide(tc, term, out=term)  # t/(e^x − 1)
    np.add(term, tc, out=plus)  # t e^x/(e^x − 1)
    np.add(term, plus, out=twice)  # t (e^x + 1)/(e^x − 1)
    a = np.add.reduceat(term, left.starts)  # A
    plus *= term
    s1 = np.add.reduceat(plus, left.starts)  # −A' = Σ t² e^x/(e^x − 1)²
    plus *= twice
    s2 = np.add.reduceat(plus, left.starts)  # A'' = Σ t³ e^x (e^x + 1)/(e^x − 1)³
    with np.errstate(divide="ignore", invalid="ignore"):  # A = 0 gives NaN: bisect
        h = np.log(a) - left.log_s
        r1 = lam * s1 / a  # −h'
        h2 = lam * lam * s2 / a - r1 - r1 * r1  # h''
    return h, r1, h2


def _halley_step(
    left: _Unsolved, u: FloatArray, h: FloatArray, r1: FloatArray, h2: FloatArray
) -> tuple[FloatArray, BoolArray]:
    """Each site's next u and whether it has converged (HACS paper, Eq. 5; DESIGN rule 5's
    1e-9): Halley's step −2 h h' / (2 h'² − h h''), or a bisection of the site's bracket
    (narrowed here by the sign of h) when the step would leave it."""
    with np.errstate(divide="ignore", invalid="ignore"):
        step = 2 * h * r1 / (2 * r1 * r1 - h * h2)  # Halley: −2 h h' / (2 h'² − h h'')
    left.lo = np.where(h > 0, u, left.lo)
    left.hi = np.where(h < 0, u, left.hi)

    # A step below the tolerance is taken as is: it may round onto the bracket end just
    # set, which the bracket test below would otherwise mistake for leaving the bracket.
    converged = (np.abs(step) < _SOLVER_STEP_TOL) | (h == 0)
    new_u = np.where(h == 0, u, u + step)
    outside = ~((new_u >= left.lo) & (new_u <= left.hi)) & ~converged  # also catches NaN steps
    new_u = np.where(outside, 0.5 * (left.lo + left.hi), new_u)
    return new_u, converged
