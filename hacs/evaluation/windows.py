"""Every window of one (level, w) at once: eligibility, estimates, p, positives and scores.

Part of :mod:`hacs.evaluation`; pure (NumPy and the estimation core). DESIGN.md rules 5-7 and 9.

* **Eligible** sites U(w, t) have at least one observation in the window [t − 7w, t].
* **Estimate.** Each eligible site is estimated from its observations in the window, flagged by
  rule 3 *relative to the window* and merged in time order (rule 4), with
  :func:`hacs.estimators.estimate_many` (``method`` observed by default); then
  p = g(λ, τ, t, e) (rule 7). Unknown λ (fewer than two distinct observation instants — the
  estimators' reading; observations at one instant are one access) counts as p = 0.
* **Positives** are looked up from the level's first updates after each t
  (``hacs.evaluation.grid``).

The estimate of a window depends on its unchanged intervals only through their sum, so each
site is handed to ``estimate_many`` as a short timeline with the same first and last instants
and the same update instants and their predecessors: the same λ and τ to rounding, observed or
interpolated. One ``estimate_many`` call covers every reference point of a (level, w).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hacs.estimators import change_probability, estimate_many
from hacs.evaluation.grid import _Grid, _Level
from hacs.evaluation.scores import _scores
from hacs.evaluation.table import BoolArray, FloatArray, IntArray

__all__: list[str] = []


@dataclass(frozen=True, eq=False)
class _Batch:
    """Every eligible (reference point, site) pair of one (level, w), in (r, site) order.

    Pairs of reference point r are ``offsets[r]:offsets[r + 1]``. ``scores`` has one row per
    entry of RANKING_MODELS.
    """

    r: IntArray
    site: IntArray
    offsets: IntArray
    instants: IntArray
    rate: FloatArray
    tau: FloatArray
    probability: FloatArray
    first_update: FloatArray
    scores: FloatArray

    @property
    def positive(self) -> BoolArray:
        result: BoolArray = np.isfinite(self.first_update)
        return result


def _window_batch(level: _Level, grid: _Grid, w: int, method: str) -> _Batch:
    """Eligibility, estimates, p, positives and scores of every (t, site) for one w at once.

    HACS paper, Section III-B: M_{w,t}(u), f and g (λ and τ by Eq. 5 or Eq. 4, p = g(λ, τ, t, e)),
    for every reference point; DESIGN.md rules 3-7 and 9. Rule 3 within each window comes from
    the candidates' (A, B] (``hacs.evaluation.table``).
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
    fl_inst, fl_pair = fl_inst[distinct], fl_pair[distinct]

    t = grid.t[r]
    rate, tau = _estimate_pairs(level.inst_time, a, b, fl_pair, fl_inst, method)
    known = np.isfinite(rate)
    probability = np.zeros(n_pairs)
    probability[known] = change_probability(rate[known], tau[known], t[known], grid.e)
    scores = _scores(level.inst_time, a, b, fl_pair, fl_inst, t, grid.e, tau, probability)
    return _Batch(
        r=r,
        site=site,
        offsets=offsets,
        instants=b - a,
        rate=rate,
        tau=tau,
        probability=probability,
        first_update=level.pos_time[r, site],
        scores=scores,
    )


def _estimate_pairs(
    inst_time: FloatArray,
    a: IntArray,
    b: IntArray,
    fl_pair: IntArray,
    fl_inst: IntArray,
    method: str,
) -> tuple[FloatArray, FloatArray]:
    """λ and τ of each window [a, b) of instants with update instants ``fl_inst`` (rule 5/6).

    HACS paper, Eqs. 4 and 5 (observed, Section II-B1) or the interpolated estimate (Section
    II-B2), by :func:`hacs.estimators.estimate_many`; τ is the last known update time (II-E).

    A window without updates has λ = 0 (or unknown with one instant) and τ at its first
    instant. The others go to ``estimate_many`` as short timelines: the first instant, each
    update instant with the instant before it, and the last instant. The intervals that close on
    an update (and, interpolated, the midpoints and the events before them) are the real ones;
    the unchanged intervals between them telescope into sums equal to the real ones; a window
    whose every interval changed keeps every instant. So λ and τ are the window's own.
    """
    n_pairs = a.size
    m = np.bincount(fl_pair, minlength=n_pairs)
    rate = np.where(b - a >= 2, 0.0, np.nan)
    tau = inst_time[a].copy()
    busy = np.flatnonzero(m)
    if busy.size == 0:
        return rate, tau
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
    result = estimate_many(inst_time[index[keep]], flag[keep], offsets, method=method)
    rate[busy] = result.rate
    tau[busy] = result.tau
    return rate, tau
