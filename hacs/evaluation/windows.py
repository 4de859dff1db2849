"""Every window of one (level, w) at once: eligibility, estimates, p, positives and scores.

Part of :mod:`hacs.evaluation`; pure (NumPy and the estimation core). DESIGN.md rules 5-7 and 9.

* **Eligible** sites U(w, t) have at least one observation in the window [t − 7w, t].
* **Estimate.** Each eligible site is estimated from its observations in the window, flagged by
  rule 3 *relative to the window* and merged in time order (rule 4), with
  :func:`hacs.estimators.estimate_many` (``method`` observed by default); then
  p = g(λ, τ, t, e) (rule 7). Unknown λ (fewer than two distinct observation instants — the
  estimators' reading; observations at one instant are one access) counts as p = 0.
* **Posterior** (HACS's default, docs/readings.md, "the posterior since the newest copy"). The
  same window's timeline, flagged the same way, is read as evidence on λ: its changed
  intervals and the total of its unchanged ones (:class:`hacs.bayes.IntervalEvidence`, observed
  intervals whatever ``method``); a window with one instant holds none. Then the posterior
  under the prior, matched to a Gamma(α, β) per site (:func:`hacs.bayes.interval_posterior`),
  and p = 1 − (β / (β + Δ))^α with Δ = t + e − the newest copy, the window's last instant
  (:func:`hacs.ranking.posterior_probabilities`).
* **The prior, without looking ahead.** The Gamma(a, b) prior at reference point t is fitted by
  :func:`hacs.bayes.fit_interval_prior` on the evidence of every eligible site's window
  [t − 7·prior_weeks, t] (:func:`_prior_table`; ``prior_weeks`` 12 by default, the paper's
  longest history, the same prior for every w), or on the evaluated windows themselves
  (:func:`_window_batch` without ``priors``). Either way the windows end at t, so the prior
  at t uses no observation after t; refitted only every ``prior_every`` points, the latest
  fit at or before t is used. *Why a window of its own:* the prior describes how rates differ
  across the collection, which the daily list fits on the whole collection's history; the
  windows of one or a few weeks hold so few updates that the marginal likelihood has no
  interior maximum (shape → ∞ at a fixed mean: a point mass, under which the posterior ranks
  by the age of the copy alone), and the fit then runs to its bound.
* **Positives** are looked up from the level's first updates after each t
  (``hacs.evaluation.grid``).

The estimate of a window depends on its unchanged intervals only through their sum, so each
site is handed to ``estimate_many`` as a short timeline with the same first and last instants
and the same update instants and their predecessors: the same λ and τ to rounding, observed or
interpolated. One ``estimate_many`` call covers every reference point of a (level, w). The
posterior's evidence is the same: the short timeline keeps every changed interval and the total
of the unchanged ones; a window without updates is its span unchanged, and is not handed to
``interval_evidence`` at all (``tests/hacs/evaluation/test_windows.py`` holds both equal to
``interval_evidence`` on the full timelines).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hacs.bayes import (
    GammaPrior,
    IntervalEvidence,
    fit_interval_prior,
    interval_evidence,
    interval_posterior,
    posterior_exposure,
)
from hacs.estimators import change_probability, estimate_many
from hacs.evaluation.grid import _Grid, _Level
from hacs.evaluation.pages import _page_posteriors, _page_priors, _PageCopies
from hacs.evaluation.scores import _scores
from hacs.evaluation.table import BoolArray, FloatArray, IntArray
from hacs.ranking import posterior_probabilities

__all__: list[str] = []


@dataclass(frozen=True, eq=False)
class _Batch:
    """Every eligible (reference point, site) pair of one (level, w), in (r, site) order.

    Pairs of reference point r are ``offsets[r]:offsets[r + 1]``. ``scores`` has one row per
    entry of RANKING_MODELS; ``changes`` is each window's number of update instants (GP4C's
    X). The posterior model: each pair's posterior Gamma(``alpha``, ``beta``), its
    ``last_copy`` (the window's last instant) and ``posterior`` probability; ``priors[r]`` is
    the (shape, rate) of the prior used at reference point r.
    """

    r: IntArray
    site: IntArray
    offsets: IntArray
    instants: IntArray
    rate: FloatArray
    tau: FloatArray
    probability: FloatArray
    first_update: FloatArray
    changes: IntArray
    scores: FloatArray
    alpha: FloatArray
    beta: FloatArray
    last_copy: FloatArray
    posterior: FloatArray
    priors: FloatArray

    @property
    def positive(self) -> BoolArray:
        result: BoolArray = np.isfinite(self.first_update)
        return result


@dataclass(frozen=True, eq=False)
class _Pairs:
    """Every eligible (reference point, site) window of one (level, w), in (r, site) order:
    its instants [a, b) and its update instants ``fl_inst`` (of pair ``fl_pair``, sorted)."""

    r: IntArray
    site: IntArray
    offsets: IntArray
    a: IntArray
    b: IntArray
    fl_pair: IntArray
    fl_inst: IntArray


def _pairs(level: _Level, grid: _Grid, w: int) -> _Pairs:
    """Eligibility and rule 3 of every window [t − 7w, t] at once (DESIGN.md rules 3, 4 and 9).

    HACS paper, Section III-B: M_{w,t}(u) for every reference point. Rule 3 within each window
    comes from the candidates' (A, B] (``hacs.evaluation.table``).
    """
    n_refs, n_sites = grid.t.size, level.n_sites
    ks = grid.ks[w]
    a_all = level.inst_start[:-1][None, :] + level.before[ks]  # first instant in the window
    b_all = level.inst_start[:-1][None, :] + level.upto[grid.kt]  # one past the last
    eligible = b_all > a_all
    r, site = np.nonzero(eligible)
    r = r.astype(np.int64)
    site = site.astype(np.int64)
    a, b = a_all[eligible], b_all[eligible]
    del a_all, b_all
    n_pairs = r.size
    offsets = np.zeros(n_refs + 1, dtype=np.int64)
    np.cumsum(np.bincount(r, minlength=n_refs), out=offsets[1:])
    pair_of = np.full((n_refs, n_sites), -1, dtype=np.int64)
    pair_of[eligible] = np.arange(n_pairs)
    del eligible

    # Update instants of every window: each candidate is an update for a run of reference
    # points [r0, r1) (hacs.evaluation.table); expand the runs and order them by r (a radix sort,
    # stable, so each r keeps the candidates' site-then-time order).
    r0 = np.maximum(
        np.searchsorted(ks, level.cand_after, side="left"),
        np.searchsorted(grid.kt, level.cand_lo, side="left"),
    )
    runs = np.maximum(np.searchsorted(ks, level.cand_until, side="left") - r0, 0)
    total = int(runs.sum())
    owner = np.repeat(np.arange(runs.size), runs)
    run_start = np.cumsum(runs) - runs
    fl_r = r0[owner] + (np.arange(total) - run_start[owner])
    key_dtype = np.int16 if n_refs < 2**15 else np.int64
    by_r = np.argsort(fl_r.astype(key_dtype), kind="stable")
    fl_r, owner = fl_r[by_r], owner[by_r]
    fl_inst = level.cand_inst[owner]
    fl_pair = pair_of[fl_r, level.cand_site[owner]]
    del pair_of, owner, by_r
    distinct = np.ones(total, dtype=np.bool_)  # several pages updated at one instant: one access
    distinct[1:] = (fl_inst[1:] != fl_inst[:-1]) | (fl_pair[1:] != fl_pair[:-1])
    return _Pairs(r, site, offsets, a, b, fl_pair[distinct], fl_inst[distinct])


def _prior_table(
    level: _Level, grid: _Grid, weeks: int, every: int, pages: _PageCopies | None = None
) -> FloatArray:
    """(shape, rate) of the posterior's prior at each reference point, fitted on the evidence
    of every eligible site's window [t − 7·weeks, t] (:func:`_priors`; the module docstring);
    with ``pages``, (shape, rate, κ) of the page prior (``hacs.evaluation.pages``)."""
    if pages is not None:
        return _page_priors(pages, grid.t, weeks, every)
    pairs = _pairs(level, grid, weeks)
    _, _, evidence = _estimate_pairs(
        level.inst_time, pairs.a, pairs.b, pairs.fl_pair, pairs.fl_inst, "observed"
    )
    return _priors(evidence, pairs.offsets, every)


def _window_batch(
    level: _Level,
    grid: _Grid,
    w: int,
    method: str,
    priors: FloatArray | None = None,
    prior_every: int = 1,
    pages: _PageCopies | None = None,
) -> _Batch:
    """Eligibility, estimates, p, positives and scores of every (t, site) for one w at once.

    HACS paper, Section III-B: M_{w,t}(u), f and g (λ and τ by Eq. 5 or Eq. 4, p = g(λ, τ, t, e)),
    for every reference point; DESIGN.md rules 3-7 and 9. The posterior (HACS's default
    reading) from the same windows under ``priors`` (one row per reference point, from
    :func:`_prior_table`), or, when None, priors fitted on these windows every ``prior_every``
    points. With ``pages`` (a website table with link counts) the posterior is the sum of the
    pages' posteriors from their new links (``hacs.evaluation.pages``), as HACS's default reads
    the website level.
    """
    pairs = _pairs(level, grid, w)
    r, site, offsets, a, b = pairs.r, pairs.site, pairs.offsets, pairs.a, pairs.b
    fl_pair, fl_inst = pairs.fl_pair, pairs.fl_inst
    t = grid.t[r]
    rate, tau, evidence = _estimate_pairs(level.inst_time, a, b, fl_pair, fl_inst, method)
    probability = _probabilities(rate, tau, t, grid.e)
    priors, alpha, beta = _posterior_parameters(
        pairs, grid, w, evidence, priors, prior_every, pages
    )
    last_copy = level.inst_time[b - 1]
    chance = posterior_probabilities(alpha, beta, last_copy, t, grid.e)
    # The posterior ranks by its exponent α ln(1 + Δ/β): the order of p, without p rounding to 1.
    exponent = posterior_exposure(alpha, beta, t + grid.e - last_copy)
    scores = _scores(level.inst_time, a, b, fl_pair, fl_inst, t, grid.e, tau, probability, exponent)
    return _Batch(
        r=r,
        site=site,
        offsets=offsets,
        instants=b - a,
        rate=rate,
        tau=tau,
        probability=probability,
        first_update=level.pos_time[r, site],
        changes=np.bincount(fl_pair, minlength=r.size).astype(np.int64),
        scores=scores,
        alpha=alpha,
        beta=beta,
        last_copy=last_copy,
        posterior=chance,
        priors=priors,
    )


def _posterior_parameters(
    pairs: _Pairs,
    grid: _Grid,
    w: int,
    evidence: IntervalEvidence,
    priors: FloatArray | None,
    prior_every: int,
    pages: _PageCopies | None,
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """The priors (fitted every ``prior_every`` points when None) and each window's posterior
    (α, β): from its intervals, or with ``pages`` the sum of its pages' from their new links."""
    if pages is not None:
        priors = priors if priors is not None else _page_priors(pages, grid.t, w, prior_every)
        return priors, *_page_posteriors(pages, grid.t, w, priors, pairs.offsets, pairs.site)
    priors = priors if priors is not None else _priors(evidence, pairs.offsets, prior_every)
    return priors, *_posteriors(priors, evidence, pairs.offsets)


def _probabilities(rate: FloatArray, tau: FloatArray, t: FloatArray, e: float) -> FloatArray:
    """HACS's p = g(λ, τ, t, e) of each window (rule 7), 0 where λ is unknown."""
    known = np.isfinite(rate)
    probability = np.zeros(rate.size)
    probability[known] = change_probability(rate[known], tau[known], t[known], e)
    return probability


def _priors(evidence: IntervalEvidence, offsets: IntArray, every: int) -> FloatArray:
    """(shape, rate) of the prior used at each reference point r, one row per r.

    Empirical Bayes without looking ahead: :func:`hacs.bayes.fit_interval_prior` on the
    evidence of every eligible site's window at the refit points r = 0, every, 2·every, …, each
    used from its point until the next. Those windows end at t_r, so the prior at t uses no
    observation after t. Costs one fit per refit point (``python -m bench.evaluation --demo``
    prints it).
    """
    n_refs = offsets.size - 1
    priors = np.empty((n_refs, 2))
    prior = GammaPrior(1.0, 1.0)  # replaced at r = 0
    for r in range(n_refs):
        if r % every == 0:
            lo, hi = int(offsets[r]), int(offsets[r + 1])
            prior = fit_interval_prior(evidence.rows(lo, hi))
        priors[r] = (prior.shape, prior.rate)
    return priors


def _posteriors(
    priors: FloatArray, evidence: IntervalEvidence, offsets: IntArray
) -> tuple[FloatArray, FloatArray]:
    """(α, β) of every pair: :func:`hacs.bayes.interval_posterior` under its reference point's
    prior."""
    alpha = np.empty(evidence.n_sites)
    beta = np.empty(evidence.n_sites)
    for r in np.flatnonzero(np.diff(offsets)).tolist():
        lo, hi = int(offsets[r]), int(offsets[r + 1])
        prior = GammaPrior(float(priors[r, 0]), float(priors[r, 1]))
        alpha[lo:hi], beta[lo:hi] = interval_posterior(prior, evidence.rows(lo, hi))
    return alpha, beta


def _estimate_pairs(
    inst_time: FloatArray,
    a: IntArray,
    b: IntArray,
    fl_pair: IntArray,
    fl_inst: IntArray,
    method: str,
) -> tuple[FloatArray, FloatArray, IntervalEvidence]:
    """λ, τ and the posterior's evidence of each window [a, b) of instants with update
    instants ``fl_inst`` (rules 5-7).

    HACS paper, Eqs. 4 and 5 (observed, Section II-B1) or the interpolated estimate (Section
    II-B2), by :func:`hacs.estimators.estimate_many`; τ is the last known update time (II-E).
    The evidence by :func:`hacs.bayes.interval_evidence` on the same timelines (the module
    docstring); without updates, the window's span unchanged.

    A window without updates has λ = 0 (or unknown with one instant) and τ at its first
    instant. The others go to ``estimate_many`` as short timelines: the first instant, each
    update instant with the instant before it, and the last instant. The intervals that close on
    an update (and, interpolated, the midpoints and the events before them) are the real ones;
    the unchanged intervals between them telescope into sums equal to the real ones; a window
    whose every interval changed keeps every instant. So λ and τ are the window's own.
    """
    m = np.bincount(fl_pair, minlength=a.size)
    rate = np.where(b - a >= 2, 0.0, np.nan)
    tau = inst_time[a].copy()
    unchanged = inst_time[b - 1] - inst_time[a]
    busy = np.flatnonzero(m)
    if busy.size == 0:
        empty = np.zeros(0), np.zeros(0, dtype=np.int64)
        return rate, tau, _evidence(inst_time, a, b, unchanged, *empty)
    times, flags, offsets = _short_timelines(inst_time, a, b, m, busy, fl_pair, fl_inst)
    result = estimate_many(times, flags, offsets, method=method)
    rate[busy] = result.rate
    tau[busy] = result.tau
    found = interval_evidence(times, flags, offsets)
    unchanged[busy] = found.unchanged
    return rate, tau, _evidence(inst_time, a, b, unchanged, found.changed, busy[found.owner])


def _evidence(
    inst_time: FloatArray,
    a: IntArray,
    b: IntArray,
    unchanged: FloatArray,
    changed: FloatArray,
    owner: IntArray,
) -> IntervalEvidence:
    """The posterior's evidence of the windows [a, b): their changed intervals (each with the
    window owning it), unchanged spans, first and last instants and access counts."""
    return IntervalEvidence(
        changed=changed,
        owner=owner,
        unchanged=unchanged,
        first=inst_time[a],
        last=inst_time[b - 1],
        accesses=(b - a).astype(np.int64),
    )


def _short_timelines(
    inst_time: FloatArray,
    a: IntArray,
    b: IntArray,
    m: IntArray,
    busy: IntArray,
    fl_pair: IntArray,
    fl_inst: IntArray,
) -> tuple[FloatArray, BoolArray, IntArray]:
    """The short timelines of the windows with updates (``busy``; ``m`` updates per window):
    times, update flags and offsets, as :func:`_estimate_pairs` describes them."""
    seg_len = 2 + 2 * m[busy]
    seg_end = np.cumsum(seg_len)
    seg_start = seg_end - seg_len
    index = np.empty(int(seg_end[-1]), dtype=np.int64)
    flag = np.zeros(index.size, dtype=np.bool_)
    index[seg_start] = a[busy]
    index[seg_end - 1] = b[busy] - 1
    segment = np.cumsum(m > 0) - 1  # pair → its segment among the busy ones
    ordinal = np.arange(fl_pair.size) - (np.cumsum(m) - m)[fl_pair]
    at = seg_start[segment[fl_pair]] + 1 + 2 * ordinal
    index[at] = fl_inst - 1
    index[at + 1] = fl_inst
    flag[at + 1] = True
    # The sequence is non-decreasing within a segment; keep each instant's first entry (an
    # update instant comes first as itself, before it reappears as a later one's predecessor).
    keep = np.ones(index.size, dtype=np.bool_)
    keep[1:] = index[1:] != index[:-1]
    keep[seg_start] = True
    kept_end = np.cumsum(keep)[seg_end - 1]
    offsets = np.concatenate(([0], kept_end)).astype(np.int64)
    return inst_time[index[keep]], flag[keep], offsets
