"""Two crawl schedules that crawl operators know, as policies of the closed-loop replay.

* **Nutch adaptive** (:func:`nutch_schedule`, policy ``nutch_adaptive``): Apache Nutch's
  AdaptiveFetchSchedule. Each site has a fetch interval; a fetch that found a change multiplies
  it by 1 − DEC_RATE (0.8), one that found none by 1 + INC_RATE (1.4), kept within
  [MIN_INTERVAL, MAX_INTERVAL] (60 seconds, 365 days); the first fetch of a site keeps the
  default interval (30 days), and the next fetch is due one interval after the last. Nutch's
  defaults throughout (``db.fetch.schedule.adaptive.*``, ``db.fetch.interval.default``).
  Readings:

  - *The history seeds the interval* (``nutch_adaptive``): Nutch is taken to have crawled the
    site all along on its own schedule, over the archive's captures before the period. The
    first capture is the first fetch; a later capture counts as a fetch when it is due (at or
    after the last fetch plus the interval), and it found a change when any capture since the
    last fetch was an update. From the period on, every crawl of the list is a fetch, an update
    when it found a change. Counting *every* capture as a fetch instead is no Nutch at all: the
    rule settles where 60 % of fetches find a change (0.8^p 1.4^(1−p) = 1), and archive
    captures come far more often than a site's changes (on the demo a median of 60 captures in
    three years, 6 % of them updates), so nearly every interval runs up to 365 days; in the
    replay that list found 211 changes where round-robin found 354 (500 sites, seed 0, 2 %).
  - *Or Nutch starts afresh* (``nutch_fresh``, a replay policy of its own): every site at the
    default 30 days from its newest copy before the period, as when a collection is first
    loaded into Nutch. For the first 30 days this is round-robin, then the sites whose last
    crawl found a change come back first (24 days against 42). Measured (``bench.replay``,
    500 sites, seeds 0–2, three periods of 28 days, changes found at 2 % / 5 % a day): with
    the demo's bursts 1,129 / 1,483 read on Nutch's schedule against 1,150 / 1,588 afresh;
    without them 1,655 / 2,239 against 1,618 / 2,385. Neither reading dominates, so the
    replay keeps both; the Evaluation page shows the first.
  - *No SYNC_DELTA.* Nutch can shift the next fetch towards a page's Last-Modified time; HACS
    knows no such time (a change is only known to lie between two copies), and when a fetch
    finds a change Nutch takes the fetch time as the modification time, which makes the shift
    zero. Left off.
  - *A daily budget k.* The list takes the k sites most overdue: now − next fetch, largest
    first (a site never fetched first of all), ties to the older copy (``hacs.ranking``). The
    budget is spent even when fewer than k sites are due, as every HACS list spends it.

  The policies rebuild each site's interval from the timeline the replay holds every day
  rather than keeping it between days: the replay adds each crawl to the timeline, an update
  when it found a change, so the fold over the timeline *is* Nutch's state, and it stays right
  when an archive capture learned late joins the timeline before crawls already made (learned
  captures of the period count as fetches, as crawls do). ``ReplayState.start`` tells the
  history from the period.

* **LambdaCrawl** (:func:`lambdacrawl_rates`, policy ``lambdacrawl``): the optimal crawl rates
  of Kolobov, Peres, Lu and Horvitz, "Staying up to Date with Online Content Changes Using
  Reinforcement Learning for Scheduling" (NeurIPS 2019), for sites whose changes are seen only
  when they are crawled (incomplete change observation). Given change rates Δ_i, importances
  μ_i (1 here) and a bandwidth R (crawls a day: the budget k), it maximises the harmonic
  freshness Σ μ_i log(ρ_i / (ρ_i + Δ_i)) subject to Σ ρ_i = R: by the Lagrangian (the paper's
  Proposition 2), ρ_i = (−Δ_i + √(Δ_i² + 4 μ_i Δ_i / λ)) / 2 with λ the one multiplier that
  spends R. ``objective="binary"`` maximises the binary freshness Σ μ_i ρ_i / (ρ_i + Δ_i)
  instead (Azar, Horvitz, Lubetzky, Peres and Shahaf, PNAS 2018; the NeurIPS paper's
  supplement, Section 9.3): ρ_i = max(0, √(μ_i Δ_i / λ) − Δ_i), which leaves a site that
  changes too fast uncrawled. Readings:

  - Δ_i is the posterior mean α / β of the site's rate, the same posterior HACS's default
    list reads (``hacs.ranking.default_posterior`` over the list's history window: the exact
    likelihood of the timeline, the prior and the reset rate fitted on the collection),
    re-read every day from the timeline with the list's crawls.
  - A daily list of k from the rates: score ρ_i × (now − newest copy), the number of crawls
    the site's optimal schedule has made since its newest copy, the sites furthest behind first
    (a site never copied first of all, a site with ρ_i = 0 last).

Pure: NumPy and SciPy.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.optimize import brentq

from hacs.estimators import accesses
from hacs.ranking import default_posterior, window_timelines

if TYPE_CHECKING:  # hacs.replay imports this module for its policies
    from hacs.replay_state import ReplayState

__all__ = [
    "LAMBDACRAWL_OBJECTIVES",
    "NUTCH_DEC_RATE",
    "NUTCH_DEFAULT_INTERVAL_DAYS",
    "NUTCH_HISTORY_READINGS",
    "NUTCH_INC_RATE",
    "NUTCH_MAX_INTERVAL_DAYS",
    "NUTCH_MIN_INTERVAL_DAYS",
    "NutchSchedule",
    "lambdacrawl_policy",
    "lambdacrawl_rates",
    "nutch_fresh_policy",
    "nutch_policy",
    "nutch_schedule",
]

FloatArray = NDArray[np.float64]

# Nutch's defaults (conf/nutch-default.xml), in days.
NUTCH_DEFAULT_INTERVAL_DAYS = 30.0  # db.fetch.interval.default: 2,592,000 s
NUTCH_MIN_INTERVAL_DAYS = 60.0 / 86400.0  # db.fetch.schedule.adaptive.min_interval: 60 s
NUTCH_MAX_INTERVAL_DAYS = 365.0  # db.fetch.schedule.adaptive.max_interval: 31,536,000 s
NUTCH_INC_RATE = 0.4  # db.fetch.schedule.adaptive.inc_rate
NUTCH_DEC_RATE = 0.2  # db.fetch.schedule.adaptive.dec_rate

LAMBDACRAWL_OBJECTIVES = ("harmonic", "binary")
#: How the archive's captures before the period seed Nutch's intervals (:func:`nutch_schedule`).
NUTCH_HISTORY_READINGS = ("schedule", "newest")


@dataclass(frozen=True, eq=False)
class NutchSchedule:
    """Each site's fetch ``interval`` (days) and ``next_fetch`` time after the fetches of its
    timeline (−∞ for a site never fetched: due at once)."""

    interval: FloatArray
    next_fetch: FloatArray


def nutch_schedule(
    times: ArrayLike,
    updated: ArrayLike,
    offsets: ArrayLike,
    *,
    own_fetches_from: float = -math.inf,
    history: str = "schedule",
    default_interval: float = NUTCH_DEFAULT_INTERVAL_DAYS,
    inc_rate: float = NUTCH_INC_RATE,
    dec_rate: float = NUTCH_DEC_RATE,
    min_interval: float = NUTCH_MIN_INTERVAL_DAYS,
    max_interval: float = NUTCH_MAX_INTERVAL_DAYS,
) -> NutchSchedule:
    """Nutch's AdaptiveFetchSchedule run over each site's accesses (arguments as for
    ``hacs.estimators.estimate_many``).

    The first access is the first fetch and keeps ``default_interval``. Each later fetch
    multiplies the interval by 1 − ``dec_rate`` when the site changed since the fetch before
    (an update among the accesses since then, the fetch's own included) and by 1 + ``inc_rate``
    when not, then clips it to [``min_interval``, ``max_interval``]. Accesses from
    ``own_fetches_from`` on are Nutch's own fetches, each counted; those before it are the
    archive's captures. ``history`` "schedule" reads them on Nutch's schedule: one counts as a
    fetch when it is due, at or after the last fetch plus the interval; "newest" keeps only the
    newest of them, as the first fetch. The next fetch is the last fetch plus the interval.
    The module docstring gives the readings."""
    _check_nutch_settings(history, default_interval, inc_rate, dec_rate, min_interval, max_interval)
    timeline = accesses(times, updated, offsets)
    t, off = timeline.times, timeline.offsets
    first = off[:-1].copy()  # each site's first fetch
    if history == "newest":
        # Each site's captures before its own fetches are a prefix of its accesses.
        below = np.r_[0, np.cumsum(t < own_fetches_from)]
        first += np.maximum(below[off[1:]] - below[off[:-1]] - 1, 0)
    interval, last_fetch = _nutch_fold(
        t,
        timeline.updated,
        first,
        off[1:] - first,
        own_fetches_from=own_fetches_from,
        default_interval=default_interval,
        factors=(1.0 + inc_rate, 1.0 - dec_rate),
        bounds=(min_interval, max_interval),
    )
    return NutchSchedule(interval, last_fetch + interval)


def _check_nutch_settings(
    history: str,
    default_interval: float,
    inc_rate: float,
    dec_rate: float,
    min_interval: float,
    max_interval: float,
) -> None:
    """Raise ValueError naming the first of :func:`nutch_schedule`'s settings that is out of
    range."""
    if history not in NUTCH_HISTORY_READINGS:
        raise ValueError(
            f"history must be one of {', '.join(NUTCH_HISTORY_READINGS)}; got {history!r}"
        )
    if not 0 < min_interval <= max_interval:
        raise ValueError(
            f"need 0 < min_interval ≤ max_interval; got {min_interval} and {max_interval}"
        )
    if not min_interval <= default_interval <= max_interval:
        raise ValueError(
            f"default_interval must lie in [{min_interval}, {max_interval}]; got {default_interval}"
        )
    if not (inc_rate >= 0 and 0 <= dec_rate < 1):
        raise ValueError(f"need inc_rate ≥ 0 and 0 ≤ dec_rate < 1; got {inc_rate}, {dec_rate}")


def _nutch_fold(
    t: FloatArray,
    flags: NDArray[np.bool_],
    first: NDArray[np.int64],
    counts: NDArray[np.int64],
    *,
    own_fetches_from: float,
    default_interval: float,
    factors: tuple[float, float],
    bounds: tuple[float, float],
) -> tuple[FloatArray, FloatArray]:
    """Nutch's fold over each site's accesses from its first fetch (``first``, ``counts`` of
    them): the interval and last fetch after them (:func:`nutch_schedule`; ``factors`` are
    (1 + inc_rate, 1 − dec_rate), ``bounds`` the interval's clip)."""
    interval = np.full(counts.size, float(default_interval))
    last_fetch = np.full(counts.size, -np.inf)
    has = counts > 0
    last_fetch[has] = t[first[has]]
    changed = np.zeros(counts.size, dtype=np.bool_)  # since the last fetch
    grow, shrink = factors
    # Whether an access is a fetch, and the clip, depend on the path: the fold runs access by
    # access, every site at once.
    for j in range(1, int(counts.max(initial=0))):
        sites = np.flatnonzero(counts > j)
        at = t[first[sites] + j]
        seen = changed[sites] | flags[first[sites] + j]
        fetch = (at >= own_fetches_from) | (at >= last_fetch[sites] + interval[sites])
        due = sites[fetch]
        factor = np.where(seen[fetch], shrink, grow)
        interval[due] = np.clip(interval[due] * factor, *bounds)
        last_fetch[due] = at[fetch]
        changed[sites] = seen & ~fetch
    return interval, last_fetch


def nutch_policy(state: ReplayState) -> FloatArray:
    """Nutch adaptive in the replay: how overdue each site is, now − next fetch (+∞ never
    fetched); the fold runs over the whole timeline, history and crawls (module docstring)."""
    schedule = nutch_schedule(*state.arrays(), own_fetches_from=state.start)
    overdue: FloatArray = state.now - schedule.next_fetch
    return overdue


def nutch_fresh_policy(state: ReplayState) -> FloatArray:
    """Nutch adaptive started afresh at the period: every site at the default interval from its
    newest copy before the period (module docstring)."""
    schedule = nutch_schedule(*state.arrays(), own_fetches_from=state.start, history="newest")
    overdue: FloatArray = state.now - schedule.next_fetch
    return overdue


def lambdacrawl_rates(
    change_rates: ArrayLike,
    bandwidth: float,
    *,
    importance: ArrayLike | None = None,
    objective: str = "harmonic",
) -> FloatArray:
    """The crawl rates ρ_i ≥ 0 with Σ ρ_i = ``bandwidth`` that maximise the freshness of
    sites with ``change_rates`` Δ_i ≥ 0 (same unit of time as the bandwidth) and ``importance``
    μ_i > 0 (default 1 each), changes seen only by crawling: the harmonic freshness
    Σ μ_i log(ρ_i / (ρ_i + Δ_i)) (LambdaCrawl, NeurIPS 2019, Proposition 2) or the binary
    Σ μ_i ρ_i / (ρ_i + Δ_i) (PNAS 2018). The Lagrange multiplier is found by Brent's method.

    Sites that never change (Δ_i = 0) are fresh at any rate and get none. When no site
    changes the objective is flat, and the bandwidth is split evenly.
    """
    delta, mu = _check_lambdacrawl(change_rates, bandwidth, importance, objective)
    weight = mu * delta
    if not np.any(weight > 0):
        return np.full(delta.size, bandwidth / delta.size)
    rates = _harmonic_rates if objective == "harmonic" else _binary_rates
    lo, hi = _log_lambda_bracket(delta, weight, bandwidth, objective)

    def spent(log_lambda: float) -> float:
        return float(rates(delta, weight, math.exp(log_lambda)).sum()) - bandwidth

    # Widen by a little so that rounding at the bracket's ends never leaves it without a sign
    # change (each bound holds exactly).
    log_lambda = brentq(spent, lo - 1e-9, hi + 1e-9, xtol=1e-14, rtol=4 * np.finfo(float).eps)
    return rates(delta, weight, math.exp(log_lambda))


def _check_lambdacrawl(
    change_rates: ArrayLike, bandwidth: float, importance: ArrayLike | None, objective: str
) -> tuple[FloatArray, FloatArray]:
    """:func:`lambdacrawl_rates`'s Δ and μ as arrays, or ValueError naming the argument out of
    range."""
    if objective not in LAMBDACRAWL_OBJECTIVES:
        raise ValueError(
            f"objective must be one of {', '.join(LAMBDACRAWL_OBJECTIVES)}; got {objective!r}"
        )
    delta = np.asarray(change_rates, dtype=np.float64)
    if delta.ndim != 1 or delta.size == 0:
        raise ValueError("change_rates must be a non-empty one-dimensional sequence")
    if not np.all(np.isfinite(delta) & (delta >= 0)):
        raise ValueError("change_rates must be finite and ≥ 0")
    if not (math.isfinite(bandwidth) and bandwidth > 0):
        raise ValueError(f"bandwidth must be finite and > 0; got {bandwidth}")
    mu = np.ones_like(delta) if importance is None else np.asarray(importance, dtype=np.float64)
    if mu.shape != delta.shape or not np.all(np.isfinite(mu) & (mu > 0)):
        raise ValueError("importance must give one finite value > 0 per site")
    return delta, mu


def _log_lambda_bracket(
    delta: FloatArray, weight: FloatArray, bandwidth: float, objective: str
) -> tuple[float, float]:
    """Bounds on log λ for :func:`lambdacrawl_rates`: Σ ρ_i(λ) falls as λ grows, and bounds on
    each ρ_i(λ) give the bracket."""
    s = float(np.sqrt(weight).sum())
    d = float(delta.sum())
    if objective == "harmonic":
        # √(μΔ/λ) − Δ/2 ≤ ρ_i ≤ √(μΔ/λ).
        lo, hi = 2 * math.log(s / (bandwidth + d / 2)), 2 * math.log(s / bandwidth)
    else:
        # √(μΔ/λ) − Δ ≤ ρ_i, and every ρ_i = 0 once λ ≥ max μ/Δ.
        lo = 2 * math.log(s / (bandwidth + d))
        hi = math.log(float(np.max(weight[weight > 0] / delta[weight > 0] ** 2)))
    return lo, hi


def _harmonic_rates(delta: FloatArray, weight: FloatArray, lam: float) -> FloatArray:
    """ρ_i = (−Δ_i + √(Δ_i² + 4 μ_i Δ_i / λ)) / 2 (LambdaCrawl, NeurIPS 2019, Proposition 2),
    written as 2c / (Δ + √(Δ² + 4c)) with c = μΔ/λ, which loses no digits when c ≪ Δ²."""
    c = weight / lam
    rates: FloatArray = 2 * c / np.maximum(delta + np.sqrt(delta * delta + 4 * c), 1e-300)
    return np.where(weight > 0, rates, 0.0)


def _binary_rates(delta: FloatArray, weight: FloatArray, lam: float) -> FloatArray:
    """ρ_i = max(0, √(μ_i Δ_i / λ) − Δ_i) (binary freshness, PNAS 2018)."""
    rates: FloatArray = np.maximum(np.sqrt(weight / lam) - delta, 0.0)
    return rates


def lambdacrawl_policy(state: ReplayState) -> FloatArray:
    """LambdaCrawl in the replay: ρ_i × (now − newest copy), ρ_i the harmonic-freshness rates
    for the day's budget over the posterior mean rates (module docstring)."""
    if state.budget is None:
        raise ValueError("LambdaCrawl needs the day's budget")
    t = state.list_instant
    found = default_posterior(*window_timelines(*state.arrays(), t - state.history_days, t))
    rho = lambdacrawl_rates(found.alpha / found.beta, float(state.budget))
    elapsed = state.now - state.last_copy
    with np.errstate(invalid="ignore"):
        behind: FloatArray = np.where(rho > 0, rho * elapsed, 0.0)
    return behind
