"""Reference points, the grid of boundary times, and one level arranged on it.

Part of :mod:`hacs.evaluation`; pure (NumPy only). DESIGN.md rules 4, 9 and 10.

* **Reference points** are ``t_r = start + r · step_days`` for r = 0, 1, … while t_r ≤ end. The
  history window of w weeks at t is [t − 7w, t] (both ends included); the evaluation interval
  is (t, t + e].
* **The grid.** Every boundary (t_r, t_r − 7w, t_r + e) lies on one sorted grid of times, so
  window bounds become exact integer look-ups in per-site cumulative count tables
  (:class:`_Level`), built once per level for every window.
* **Timelines** (rule 4). A level's observations are merged into each site's timeline in
  site-then-time order (:func:`hacs.updates.timeline_order`); observations of one site at one
  instant are one access.
* **Positives** Pos(w, t): eligible sites with an update in (t, t + e]: an observation there
  holding a link that no earlier observation of the same page ever held (``link_floor == −1``).
  *Our reading:* a page's very first observation (``page_index == 0``) is its baseline, never an
  update, as in rule 3 — so a brand-new page is not a positive by itself.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from hacs.evaluation.table import FloatArray, IntArray, ObservationTable
from hacs.updates import timeline_order

__all__ = ["DAYS_PER_WEEK", "reference_points"]

DAYS_PER_WEEK = 7.0


# --------------------------------------------------------------------------------------------
# Reference points and the grid of boundaries
# --------------------------------------------------------------------------------------------


def reference_points(start: float, end: float, step_days: float = 7.0) -> FloatArray:
    """The reference points t_r = start + r · step_days, r = 0, 1, …, while t_r ≤ end.

    HACS paper, Section III-A (t advanced across the period; DESIGN.md rule 9: every 7 days).
    """
    start, end, step = _finite(start, "start"), _finite(end, "end"), _finite(step_days, "step")
    if step <= 0:
        raise ValueError(f"step_days must be positive; got {step_days}")
    if end < start:
        raise ValueError(f"end must not be before start; got start={start}, end={end}")
    count = int(math.floor((end - start) / step)) + 1
    while start + count * step <= end:  # floor of a rounded quotient may be one off
        count += 1
    while count > 1 and start + (count - 1) * step > end:
        count -= 1
    return start + np.arange(count, dtype=np.float64) * step


def _finite(value: float, name: str) -> float:
    """``value`` as a finite float, or ``ValueError`` naming the argument (no paper rule)."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number (days); got {value!r}") from None
    if not math.isfinite(number):
        raise ValueError(f"{name} must be finite; got {value!r}")
    return number


@dataclass(frozen=True, eq=False)
class _Grid:
    """Every boundary time the evaluation compares against, sorted, and the reference points.

    The HACS paper's Figure 7 (t, the history [t − w, t] and the evaluation interval (t, t + e])
    for every t and w at once (DESIGN.md rules 9 and 10).
    ``kt[r]``, ``ke[r]`` and ``ks[w][r]`` are the grid indices of t_r, t_r + e and t_r − 7w.
    For a time x, ``searchsorted(values, x, 'right') ≤ k`` iff x < values[k], and
    ``searchsorted(values, x, 'left') ≤ k`` iff x ≤ values[k]: all comparisons become exact
    integer ones.
    """

    values: FloatArray
    t: FloatArray
    e: float
    kt: IntArray
    ke: IntArray
    ks: dict[int, IntArray]

    @property
    def size(self) -> int:
        return int(self.values.size)


def _make_grid(t: FloatArray, w_weeks: Sequence[int], e: float) -> _Grid:
    """The grid of every t_r, t_r + e and t_r − 7w (HACS paper, Figure 7; DESIGN.md rule 9)."""
    starts = {w: t - DAYS_PER_WEEK * w for w in w_weeks}
    values = np.unique(np.concatenate([t, t + e, *starts.values()]))

    def index(x: FloatArray) -> IntArray:
        k = np.searchsorted(values, x).astype(np.int64)
        assert np.array_equal(values[k], x)
        return k

    return _Grid(values, t, e, index(t), index(t + e), {w: index(s) for w, s in starts.items()})


# --------------------------------------------------------------------------------------------
# One level, prepared once for every window
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class _Level:
    """A table arranged for window look-ups (DESIGN.md's hint for speed; the module docstring).

    Instants are the distinct (site, time) pairs in site-then-time order; site s owns instants
    ``inst_start[s]:inst_start[s + 1]``. ``before[k, s]`` counts site s's instants earlier than
    grid value k and ``upto[k, s]`` those not later. Candidates are the observations that are
    updates for some window start: ``cand_after < s ≤ cand_until`` in grid indices
    (``cand_after ≤ k < cand_until``). ``pos_time[r, s]`` is the time of site s's first update
    in (t_r, t_r + e] (+∞ when none).
    """

    n_sites: int
    inst_time: FloatArray
    inst_start: IntArray
    before: IntArray
    upto: IntArray
    cand_inst: IntArray
    cand_site: IntArray
    cand_after: IntArray
    cand_until: IntArray
    cand_lo: IntArray
    pos_time: FloatArray


def _prepare(table: ObservationTable, grid: _Grid) -> _Level:
    """Arrange one level's table on the grid, once for every window (DESIGN.md rules 3, 4, 9).

    Observations are merged into site timelines by rule 4's order
    (:func:`hacs.updates.timeline_order`), each keeping the (A, B] of rule 3 computed for its own
    page (``hacs.evaluation.table``); the positives are the first updates after each t
    (:func:`_first_updates`).
    """
    n_sites = table.site_count
    order = _merge_order(table.site, table.time)

    def arranged(values: NDArray[Any]) -> NDArray[Any]:
        return values if order is None else values[order]

    site, time = arranged(table.site), arranged(table.time)
    new_instant = np.ones(site.size, dtype=np.bool_)
    new_instant[1:] = (site[1:] != site[:-1]) | (time[1:] != time[:-1])
    inst_of = np.cumsum(new_instant) - 1
    inst_time = time[new_instant]
    inst_site = site[new_instant]
    inst_start = np.zeros(n_sites + 1, dtype=np.int64)
    np.cumsum(np.bincount(inst_site, minlength=n_sites), out=inst_start[1:])
    inst_lo = np.searchsorted(grid.values, inst_time, side="left")
    inst_hi = np.searchsorted(grid.values, inst_time, side="right")
    before = _count_table(inst_hi, inst_site, grid.size, n_sites)
    upto = _count_table(inst_lo, inst_site, grid.size, n_sites)

    after_k = np.searchsorted(grid.values, arranged(table._update_after), side="right")
    until_k = np.searchsorted(grid.values, arranged(table._update_until), side="right")
    cand = np.flatnonzero(after_k < until_k)
    cand_inst = inst_of[cand]

    fresh = np.flatnonzero((arranged(table.link_floor) == -1) & (arranged(table.page_index) > 0))
    pos_time = _first_updates(site[fresh], time[fresh], grid, n_sites)
    return _Level(
        n_sites=n_sites,
        inst_time=inst_time,
        inst_start=inst_start,
        before=before,
        upto=upto,
        cand_inst=cand_inst,
        cand_site=site[cand],
        cand_after=after_k[cand],
        cand_until=until_k[cand],
        cand_lo=inst_lo[cand_inst],
        pos_time=pos_time,
    )


def _merge_order(site: IntArray, time: FloatArray) -> IntArray | None:
    """The order that merges observations into site timelines (rule 4), or None when they are
    in it already."""
    in_order = site.size < 2 or bool(
        np.all((site[1:] > site[:-1]) | ((site[1:] == site[:-1]) & (time[1:] >= time[:-1])))
    )
    return None if in_order else timeline_order(site, time)


def _count_table(k: NDArray[np.intp], site: IntArray, grid_size: int, n_sites: int) -> IntArray:
    """table[j, s] = how many of site s's items have k ≤ j, for j = 0 … grid_size.

    The per-site cumulative counts of DESIGN.md's hint for speed: a window's first and last
    instants become integer look-ups.
    """
    rows = grid_size + 1
    counts = np.bincount(k * n_sites + site, minlength=rows * n_sites).reshape(rows, n_sites)
    table: IntArray = np.cumsum(counts, axis=0, dtype=np.int64)
    return table


def _first_updates(site: IntArray, time: FloatArray, grid: _Grid, n_sites: int) -> FloatArray:
    """Per (r, s): the time of site s's first fresh observation in (t_r, t_r + e], else +∞.

    HACS paper, Section III-B/C (the actual updates in (t, t + e], and the expected ranking's
    "updated closer to t"); DESIGN.md rule 9's positives and rule 10's expected ranking.
    ``site`` and ``time`` are the fresh observations (link_floor == −1, page_index > 0) in
    site-then-time order.
    """
    start = np.zeros(n_sites + 1, dtype=np.int64)
    np.cumsum(np.bincount(site, minlength=n_sites), out=start[1:])
    lo = np.searchsorted(grid.values, time, side="left")
    upto = _count_table(lo, site, grid.size, n_sites)
    first = start[:-1][None, :] + upto[grid.kt]  # first fresh observation after t_r
    exists = first < start[1:][None, :]
    first = np.minimum(first, max(time.size - 1, 0))
    result = np.full(first.shape, np.inf)
    if time.size:
        hit = exists & (lo[first] <= grid.ke[:, None])  # and at most t_r + e
        result[hit] = time[first[hit]]
    return result
