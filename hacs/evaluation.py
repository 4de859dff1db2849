"""Evaluation of HACS against its baselines — the pure, vectorised core.

Stdlib, NumPy and the estimation core only; never Django. Times are days (floats), rates per day.
The method is the HACS paper's Section III (``papers/hacs-scholarly-webpage-updates.txt``) with the
readings of DESIGN.md rules 3-5 and 7-11, plus the GP4C paper's scorers and metrics
(``papers/gp4c-genetic-programming-crawl-scheduling.txt``, Sections 4.2.2 and 5.1).

Public API
----------
* :class:`ObservationTable` — one level's observations as flat arrays (validated);
* :func:`evaluate` — Evaluation 1 (P/R/F1 against θ, Table I), Evaluation 2 (weighted P@K) and the
  crawl-budget metrics (NDCG@k, ChangeRate@k) over a grid of reference points and history sizes;
* :func:`window_scores` — every eligible site's estimate, probability and scores for one
  (t, w): the quantities the evaluation is built from, for inspection and tests;
* :func:`reference_points` — the reference points t from start to end.

The grid (DESIGN.md rules 9 and 10)
-----------------------------------
Reference points are ``t_r = start + r · step_days`` for r = 0, 1, … while t_r ≤ end. The history
window of w weeks at t is [t − 7w, t] (both ends included); the evaluation interval is (t, t + e].
*Eligible* sites U(w, t) have at least one observation in the window.

* **Estimate.** Each eligible site is estimated from its observations in the window, flagged by
  rule 3 *relative to the window* and merged in time order (rule 4), with
  :func:`hacs.estimators.estimate_many` (``method`` observed by default); then
  p = g(λ, τ, t, e) (rule 7). Unknown λ (fewer than two distinct observation instants — the
  estimators' reading; observations at one instant are one access) counts as p = 0.
* **Positives** Pos(w, t): eligible sites with an update in (t, t + e]: an observation there
  holding a link that no earlier observation of the same page ever held (``link_floor == −1``).
  *Our reading:* a page's very first observation (``page_index == 0``) is its baseline, never an
  update, as in rule 3 — so a brand-new page is not a positive by itself.
* **Evaluation 1.** HACS selects D = {u ∈ U : p ≥ θ}; Brute Force selects U; Random selects |D|
  sites of U at random, evaluated by its exact expectation TP = |D|·|Pos|/|U| (every count and
  every P, R, F1 of Random is then an exact expectation, because their denominators |D|, |Pos|
  and |D| + |Pos| do not depend on the draw). *Micro*: sum TP, FP, FN over t, then P, R, F1.
  *Macro*: P, R, F1 per t, averaged over the t where each is defined. P = TP/(TP + FP) is
  undefined when nothing is selected, R = TP/(TP + FN) when there are no positives, and
  *our reading* for F1 is the count form F1 = 2TP/(2TP + FP + FN): undefined only when nothing
  is selected and there are no positives (P and R both undefined), 0 whenever TP = 0 otherwise
  (also when P + R = 0), and equal to 2PR/(P + R) whenever both are defined. θ̂ is the θ with the
  highest F1 (ties: the smaller θ; None when F1 is undefined for every θ); Table I evaluates
  Random and Brute Force at HACS's θ̂.
* **Evaluation 2.** Models rank U(w, t): HACS by p; Last-Obs by t − τ descending (τ as in rule 5:
  the last update in the window, else the first observation); the GP4C scorers below by their
  score; Random by its exact expectation. The expected ranking orders the positives by the time
  of their first update in (t, t + e]. For K = 1 … |Pos|,
  P@K = |top-K(model) ∩ top-K(expected)| / K, weighted by 1/log2(K + 1) normalised to sum 1;
  weighted P@K is averaged over the t with |Pos| ≥ 1. Random: E|top-K(random) ∩ S| = K·K/|U|.
* **Ties** (our reading). Every ranking breaks ties deterministically: HACS by p descending, then
  older τ first (as the crawl list does, DESIGN.md rule 8), then site index; every other model by
  score descending, then site index; the expected ranking by first-update time, then site index.
  Callers that number sites in URL order get rule 8's final tie-break too.
* **Crawl budget** (GP4C, Section 5.2). k = max(1, round(budget_fraction · |U|)) (half up),
  at most |U|. ChangeRate@k (Eq. 1) = positives among the model's top k, divided by k, averaged
  over the t with |U| ≥ 1. NDCG@k (Eqs. 2-3) = DCG@k / IDCG@k, averaged over the t with
  |Pos| ≥ 1. *Our reading of Eq. 2:* as printed, rel_i / log_e(i) divides by log(1) = 0 at the
  first rank; the cited definition (Järvelin and Kekäläinen 2002) discounts only the ranks
  i ≥ b by log_b(i) and leaves ranks below the base b undiscounted, so with b = e the discount is
  1 for i = 1, 2 and 1/ln(i) from i = 3 on. IDCG@k puts every positive first. Each budget row also
  carries the P/R/F1 of the top-k selection (micro and macro, as in Evaluation 1).
  Brute Force does not rank, so it has no P@K or budget rows.

GP4C scorers (Section 5.1), on the window's timeline
-----------------------------------------------------
The window's n + 1 distinct observation instants give n *accesses* that could detect a change
(the first instant is the baseline) and X ≤ n of them that did (instants flagged by rule 3);
I_i = 1 when the i-th access (i = 1 … n, in time order) is an update. Δ = t + e − (time of the last
access): the time from the last visit to the end of the evaluation interval (GP4C's "t, the
number of cycles since the page was last visited", in days). A site with n = 0 scores 0.

* ``cho_garcia_molina``: λ_CG · Δ with λ_CG the Cho–Garcia-Molina rate, GP4C Eq. 4 /
  HACS Eq. 4: r̂ = −log((n − X + 0.5)/(n + 0.5)), λ_CG = r̂ · n / T over the window's observed
  span T (:func:`hacs.estimators.cho_garcia_molina_rate`).
* ``nad``, ``sad``, ``aad``, ``gad`` (Tan and Mitra, GP4C Section 5.1): λ_p = Σ w_i I_i with
  NAD w_i = 1/n; SAD w_n = 1, others 0; AAD w_i = 2i/(n(n + 1)); GAD w_i = 2^(i−1)/(2^n − 1);
  the change probability is GP4C Eq. 5, φ = 1 − exp(−λ_p Δ) (printed there with a sign slip).
  Each scorer ranks by the exponent λ_p · Δ, which orders sites exactly as φ does but without
  φ rounding to 1 for large exponents.
* ``age``: t − (time of the last access) (GP4C's Age: the time since the page was last visited).

How it is fast
--------------
DESIGN.md's hint: with ``link_floor`` an observation i of a page is an update in a window whose
first observation of that page has index j iff ``page_index > j and link_floor < j``. Read in
terms of the window start s: j > link_floor iff observation ``link_floor`` of the page lies
before s, and j < page_index iff observation ``page_index − 1`` lies in the window; so i is an
update exactly for window starts s in (A_i, B_i], with A_i the time of the page's observation
``link_floor`` (−∞ when −1) and B_i the time of its observation ``page_index − 1``. Only the
observations with A_i < B_i can ever be updates, and for one w each is one for a contiguous run
of reference points. Every boundary (t_r, t_r − 7w, t_r + e) lies on one sorted grid of times, so
window bounds become exact integer look-ups in per-site cumulative count tables. The estimate of
a window depends on its unchanged intervals only through their sum, so each site is handed to
``estimate_many`` as a short timeline with the same first and last instants and the same update
instants and their predecessors: the same λ and τ to rounding, observed or interpolated. One
``estimate_many`` call covers every reference point of a (level, w); every θ comes from one
histogram of p, and Evaluation 2 and the budget metrics need only each positive's rank, found
with one partial sort per window for all models at once.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from hacs.estimators import (
    METHODS,
    change_probability,
    cho_garcia_molina_rate,
    estimate_many,
)

__all__ = [
    "DEFAULT_THETAS",
    "DEFAULT_W_WEEKS",
    "RANKING_MODELS",
    "SELECTION_MODELS",
    "ObservationTable",
    "WindowScores",
    "evaluate",
    "reference_points",
    "window_scores",
]

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]
BoolArray = NDArray[np.bool_]

DAYS_PER_WEEK = 7.0
DEFAULT_THETAS = tuple(i / 10 for i in range(11))  # 0.0, 0.1, …, 1.0: i / 10 == the literal
DEFAULT_W_WEEKS = tuple(range(1, 13))
#: Models of Evaluation 1 (selection by θ).
SELECTION_MODELS = ("hacs", "random", "brute_force")
#: Models that rank U(w, t), in the order of the score rows (Random is added analytically).
RANKING_MODELS = ("hacs", "last_obs", "cho_garcia_molina", "nad", "sad", "aad", "gad", "age")
_HACS_ROW = 0
_NEVER = np.iinfo(np.int64).max // 4  # a rank beyond every window


# --------------------------------------------------------------------------------------------
# Input
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)  # eq=False: comparing arrays has no single truth value
class ObservationTable:
    """One level's observations (homepage or website) as flat arrays, one entry per observation.

    * ``site`` — the site's index, 0 … n_sites − 1;
    * ``page`` — an id (≥ 0) of the (site, page) the observation belongs to, unique across sites;
    * ``time`` — days since an epoch (finite, not negative, as the estimators require);
    * ``page_index`` — the observation's index among its page's observations over the full
      history, in time order. A page's indices present must be consecutive (a history loaded
      from some date on may start above 0; earlier observations then count as lying before
      every window);
    * ``link_floor`` — over the observation's links, the smallest index of the latest earlier
      observation of the same page holding that link; −1 when a link is brand new;
      ``page_index`` itself when the observation has no links (see ``hacs.updates``).

    Entries may come in any order. ``n_sites`` defaults to one more than the largest site index.
    Arrays are copied, so later changes to the caller's arrays do not leak in. Raises
    ``ValueError`` naming the problem.
    """

    site: IntArray
    page: IntArray
    time: FloatArray
    page_index: IntArray
    link_floor: IntArray
    n_sites: int | None = None
    # For each observation, the window starts s for which it is an update are (A, B]
    # (see the module docstring); derived once from the page structure while validating.
    _update_after: FloatArray = field(init=False, repr=False)
    _update_until: FloatArray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        site = _int_column(self.site, "site")
        size = site.size
        page = _int_column(self.page, "page", size)
        page_index = _int_column(self.page_index, "page_index", size)
        link_floor = _int_column(self.link_floor, "link_floor", size)
        time = _time_column(self.time, size)
        n_sites = _resolve_n_sites(self.n_sites, site)
        _check_range(site, "site", 0, n_sites - 1)
        _check_range(page, "page", 0, None)
        _check_range(page_index, "page_index", 0, None)
        _check_range(link_floor, "link_floor", -1, None)
        above = link_floor > page_index
        if above.any():
            i = int(np.argmax(above))
            raise ValueError(
                f"link_floor[{i}] = {int(link_floor[i])} exceeds page_index[{i}] = "
                f"{int(page_index[i])}; a link floor is at most the observation's own index"
            )
        after, until = _page_structure(site, page, time, page_index, link_floor)
        for name, value in (
            ("site", site),
            ("page", page),
            ("time", time),
            ("page_index", page_index),
            ("link_floor", link_floor),
            ("n_sites", n_sites),
            ("_update_after", after),
            ("_update_until", until),
        ):
            if isinstance(value, np.ndarray):
                value.flags.writeable = False
            object.__setattr__(self, name, value)

    @property
    def size(self) -> int:
        """The number of observations."""
        return int(self.time.size)

    @property
    def site_count(self) -> int:
        """The number of sites (``n_sites`` once resolved)."""
        assert self.n_sites is not None  # resolved in __post_init__
        return self.n_sites


def _int_column(values: ArrayLike, name: str, size: int | None = None) -> IntArray:
    array = np.asarray(values)
    if array.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional; got shape {array.shape}")
    if size is not None and array.size != size:
        raise ValueError(f"{name} must have one entry per observation: {size}; got {array.size}")
    if array.size == 0:
        return np.zeros(0, dtype=np.int64)
    if array.dtype.kind not in "iu":
        if array.dtype.kind == "f" and np.all(np.isfinite(array)) and np.all(array % 1 == 0):
            return np.array(array, dtype=np.int64)
        raise ValueError(f"{name} must hold integers; got dtype {array.dtype}")
    return np.array(array, dtype=np.int64)  # a copy: the table must not share the caller's


def _time_column(values: ArrayLike, size: int) -> FloatArray:
    try:
        array = np.array(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"time must be numbers (days): {exc}") from None
    if array.ndim != 1 or array.size != size:
        raise ValueError(
            f"time must be one-dimensional with one entry per observation: {size}; "
            f"got shape {array.shape}"
        )
    bad = ~np.isfinite(array)
    if bad.any():
        i = int(np.argmax(bad))
        raise ValueError(f"time must be finite; time[{i}] = {float(array[i])}")
    if array.size and array.min() < 0:
        i = int(np.argmax(array < 0))
        raise ValueError(f"time must not be negative (days since an epoch); time[{i}] = {array[i]}")
    return array


def _resolve_n_sites(n_sites: int | None, site: IntArray) -> int:
    needed = int(site.max()) + 1 if site.size else 0
    if n_sites is None:
        return needed
    if isinstance(n_sites, bool) or not isinstance(n_sites, int | np.integer) or n_sites < 0:
        raise ValueError(f"n_sites must be a non-negative integer; got {n_sites!r}")
    if int(n_sites) < needed:
        raise ValueError(f"n_sites = {n_sites} but site holds index {needed - 1}")
    return int(n_sites)


def _check_range(values: IntArray, name: str, low: int, high: int | None) -> None:
    if values.size == 0:
        return
    if values.min() < low:
        i = int(np.argmax(values < low))
        raise ValueError(f"{name}[{i}] = {int(values[i])} is below {low}")
    if high is not None and values.max() > high:
        i = int(np.argmax(values > high))
        raise ValueError(f"{name}[{i}] = {int(values[i])} is above {high}")


def _page_structure(
    site: IntArray, page: IntArray, time: FloatArray, page_index: IntArray, link_floor: IntArray
) -> tuple[FloatArray, FloatArray]:
    """Check each page's history and return each observation's update interval (A, B].

    Places every observation in a page-major array by its page index (a counting placement, no
    sort), which at once checks that each page's indices are consecutive and distinct, that
    times do not decrease along them and that a page stays on one site.
    """
    size = site.size
    if size == 0:
        return np.zeros(0), np.zeros(0)
    if int(page.max()) >= 2 * size + 1024:  # sparse ids: number the pages densely first
        _, page = np.unique(page, return_inverse=True)
        page = page.astype(np.int64)
    n_pages = int(page.max()) + 1
    count = np.bincount(page, minlength=n_pages)
    first_index = np.full(n_pages, np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(first_index, page, page_index)
    base = np.cumsum(count) - count
    relative = page_index - first_index[page]
    beyond = relative >= count[page]
    if beyond.any():
        i = int(np.argmax(beyond))
        raise ValueError(
            f"page_index of a page must be consecutive: observation {i} (page "
            f"{int(page[i])}) has index {int(page_index[i])}, but the page has only "
            f"{int(count[page[i]])} observations from index {int(first_index[page[i]])}"
        )
    slot = base[page] + relative
    taken = np.bincount(slot, minlength=size)
    if taken.max() > 1:
        s = int(np.argmax(taken > 1))
        i = int(np.flatnonzero(slot == s)[0])
        raise ValueError(
            f"page {int(page[i])} has two observations with page_index {int(page_index[i])}"
        )
    by_slot_time = np.empty(size)
    by_slot_time[slot] = time
    by_slot_site = np.empty(size, dtype=np.int64)
    by_slot_site[slot] = site
    same_page = np.ones(size, dtype=np.bool_)
    same_page[base] = False  # slot k and k − 1 belong to the same page unless k starts a page
    same_page[0] = False
    backwards = same_page[1:] & (by_slot_time[1:] < by_slot_time[:-1])
    if backwards.any():
        k = int(np.argmax(backwards)) + 1
        i = int(np.flatnonzero(slot == k)[0])
        raise ValueError(
            f"page_index must follow time order: page {int(page[i])} observation "
            f"{int(page_index[i])} at time {float(time[i])} is earlier than observation "
            f"{int(page_index[i]) - 1} at time {float(by_slot_time[k - 1])}"
        )
    moved = same_page[1:] & (by_slot_site[1:] != by_slot_site[:-1])
    if moved.any():
        k = int(np.argmax(moved)) + 1
        i = int(np.flatnonzero(slot == k)[0])
        raise ValueError(f"page {int(page[i])} belongs to two sites: {int(by_slot_site[k])}, …")

    # A: time of the page's observation `link_floor` (−∞ when −1 or before the loaded history;
    # the observation's own time when it has no links, which makes (A, B] empty).
    floor_relative = link_floor - first_index[page]
    known = floor_relative >= 0
    after = np.full(size, -np.inf)
    after[known] = by_slot_time[(base[page] + floor_relative)[known]]
    # B: time of the page's previous observation (−∞ for the first one: never an update).
    until = np.full(size, -np.inf)
    has_previous = relative > 0
    until[has_previous] = by_slot_time[slot[has_previous] - 1]
    return after, until


# --------------------------------------------------------------------------------------------
# Reference points and the grid of boundaries
# --------------------------------------------------------------------------------------------


def reference_points(start: float, end: float, step_days: float = 7.0) -> FloatArray:
    """The reference points t_r = start + r · step_days, r = 0, 1, …, while t_r ≤ end."""
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
    """A table arranged for window look-ups (see the module docstring, "How it is fast").

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
    n_sites = table.site_count
    site, time = table.site, table.time
    in_order = site.size < 2 or bool(
        np.all((site[1:] > site[:-1]) | ((site[1:] == site[:-1]) & (time[1:] >= time[:-1])))
    )
    order = None if in_order else np.lexsort((time, site))

    def arranged(values: NDArray[Any]) -> NDArray[Any]:
        return values if order is None else values[order]

    site, time = arranged(site), arranged(time)
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


def _count_table(k: NDArray[np.intp], site: IntArray, grid_size: int, n_sites: int) -> IntArray:
    """table[j, s] = how many of site s's items have k ≤ j, for j = 0 … grid_size."""
    rows = grid_size + 1
    counts = np.bincount(k * n_sites + site, minlength=rows * n_sites).reshape(rows, n_sites)
    table: IntArray = np.cumsum(counts, axis=0, dtype=np.int64)
    return table


def _first_updates(site: IntArray, time: FloatArray, grid: _Grid, n_sites: int) -> FloatArray:
    """Per (r, s): the time of site s's first fresh observation in (t_r, t_r + e], else +∞.

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


# --------------------------------------------------------------------------------------------
# All windows of one (level, w)
# --------------------------------------------------------------------------------------------


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
    """Eligibility, estimates, p, positives and scores of every (t, site) for one w at once."""
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
    # points [r0, r1) (module docstring); expand the runs and order them by r (a radix sort,
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


def _scores(
    inst_time: FloatArray,
    a: IntArray,
    b: IntArray,
    fl_pair: IntArray,
    fl_inst: IntArray,
    t: FloatArray,
    e: float,
    tau: FloatArray,
    probability: FloatArray,
) -> FloatArray:
    """One row per RANKING_MODELS entry (module docstring, "GP4C scorers").

    CG, NAD, SAD, AAD and GAD are 0 without updates (X = 0), so they are computed for the
    windows with updates only; ``fl_pair`` is sorted, each window's update instants ascending.
    """
    n_pairs = a.size
    scores = np.zeros((len(RANKING_MODELS), n_pairs))
    scores[0] = probability  # hacs
    np.subtract(t, tau, out=scores[1])  # last_obs: t − τ
    last = inst_time[b - 1]
    np.subtract(t, last, out=scores[7])  # age: t − last access
    if fl_pair.size == 0:
        return scores
    new = np.ones(fl_pair.size, dtype=np.bool_)
    new[1:] = fl_pair[1:] != fl_pair[:-1]
    starts = np.flatnonzero(new)
    busy = fl_pair[starts]
    counts = np.diff(np.append(starts, fl_pair.size))
    first_b, last_b = a[busy], b[busy] - 1
    n = (last_b - first_b).astype(np.float64)  # accesses that could detect a change (≥ 1)
    x = counts.astype(np.float64)  # X: accesses that did
    elapsed = t[busy] + e - inst_time[last_b]  # Δ
    number = fl_inst - np.repeat(first_b, counts)  # the access's number i, 1 … n
    n_each = np.repeat(last_b - first_b, counts)
    cg = cho_garcia_molina_rate(n, x, inst_time[last_b] - inst_time[first_b])
    nad = x / n
    sad = (fl_inst[starts + counts - 1] == last_b).astype(np.float64)
    aad = 2.0 * np.add.reduceat(number.astype(np.float64), starts) / (n * (n + 1.0))
    # 2^(i−1)/(2^n − 1) = 2^(i−1−n)/(1 − 2^−n): no overflow for long windows.
    powers = np.ldexp(1.0, np.maximum(number - 1 - n_each, -1100).astype(np.int32))
    gad = np.add.reduceat(powers, starts) / (1.0 - np.ldexp(1.0, -np.minimum(n_each[starts], 1100)))
    for row, value in ((2, cg), (3, nad), (4, sad), (5, aad), (6, gad)):
        scores[row, busy] = value * elapsed
    return scores


# --------------------------------------------------------------------------------------------
# One window, for inspection
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class WindowScores:
    """What the evaluation sees for one (t, w): one entry per eligible site, by site index.

    ``rate`` is λ (NaN when unknown), ``tau`` τ, ``probability`` p (0 for unknown λ),
    ``instants`` how many distinct observation instants the window holds, ``first_update`` the time
    of the site's first update in (t, t + e] (+∞ when none; finite means positive), and
    ``scores`` each ranking model's score (higher ranks first; ties as in the module docstring).
    """

    site: IntArray
    rate: FloatArray
    tau: FloatArray
    probability: FloatArray
    instants: IntArray
    first_update: FloatArray
    scores: Mapping[str, FloatArray]

    @property
    def positive(self) -> BoolArray:
        result: BoolArray = np.isfinite(self.first_update)
        return result


def window_scores(
    table: ObservationTable,
    *,
    t: float,
    w_weeks: int,
    e_days: float = 7.0,
    method: str = "observed",
) -> WindowScores:
    """Estimates, probabilities, positives and scores of every eligible site at one (t, w)."""
    t_value = _finite(t, "t")
    (w,) = _check_w_weeks([w_weeks])
    e = _check_e(e_days)
    _check_method(method)
    grid = _make_grid(np.array([t_value]), [w], e)
    batch = _window_batch(_prepare(table, grid), grid, w, method)
    return WindowScores(
        site=batch.site,
        rate=batch.rate,
        tau=batch.tau,
        probability=batch.probability,
        instants=batch.instants,
        first_update=batch.first_update,
        scores={name: batch.scores[row] for row, name in enumerate(RANKING_MODELS)},
    )


# --------------------------------------------------------------------------------------------
# Metrics of one (level, w)
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class _PointCounts:
    """Per reference point r: |U|, |Pos|, and per θ (columns) HACS's |D| and TP."""

    eligible: IntArray
    positives: IntArray
    selected: IntArray
    true_positives: IntArray


def _selection_counts(batch: _Batch, thetas: FloatArray, n_refs: int) -> _PointCounts:
    """Evaluation 1 counts for every θ from one histogram of p (p ≥ θ_j iff bin > j)."""
    n_bins = thetas.size + 1
    bins = np.searchsorted(thetas, batch.probability, side="right")  # how many θ ≤ p
    cells = batch.r * n_bins + bins
    positive = batch.positive

    def at_least(weights: BoolArray | None) -> IntArray:
        hist = np.bincount(cells, weights=weights, minlength=n_refs * n_bins)
        hist = hist.reshape(n_refs, n_bins).astype(np.int64)
        above = np.cumsum(hist[:, ::-1], axis=1)[:, ::-1]  # above[:, j] = Σ_{bin ≥ j}
        result: IntArray = above[:, 1:]  # p ≥ θ_j  ⇔  bin ≥ j + 1
        return result

    return _PointCounts(
        eligible=np.bincount(batch.r, minlength=n_refs).astype(np.int64),
        positives=np.bincount(batch.r, weights=positive, minlength=n_refs).astype(np.int64),
        selected=at_least(None),
        true_positives=at_least(positive),
    )


def _budget(eligible: IntArray, fraction: float) -> IntArray:
    """k = max(1, round(fraction · |U|)) (half up), at most |U| (0 when U is empty)."""
    k = np.maximum(np.floor(fraction * eligible + 0.5).astype(np.int64), 1)
    result: IntArray = np.minimum(k, eligible)
    return result


def _positive_ranks(batch: _Batch, positives: IntArray, budget: IntArray) -> IntArray:
    """Each model's rank of each positive pair (column), or _NEVER beyond max(|Pos|, k).

    Per window, one partial sort finds every model's top depth = max(|Pos|, k) at once; ties at
    the cut are settled by the tie rule (site order; HACS: older τ, then site), and only those
    depth entries per model are then sorted.
    """
    positive = batch.positive
    pos_pairs = np.flatnonzero(positive)
    column = np.full(batch.r.size, -1, dtype=np.int64)
    column[pos_pairs] = np.arange(pos_pairs.size)
    n_models = batch.scores.shape[0]
    ranks = np.full((n_models, pos_pairs.size), _NEVER, dtype=np.int64)
    for r in np.flatnonzero(positives).tolist():
        lo, hi = int(batch.offsets[r]), int(batch.offsets[r + 1])
        depth = max(int(positives[r]), int(budget[r]))  # 1 ≤ depth ≤ |U|
        block = batch.scores[:, lo:hi]
        tau = batch.tau[lo:hi]
        cut = (hi - lo) - depth  # after partitioning, entries from `cut` on are the top depth
        threshold = np.partition(block, cut, axis=1)[:, cut : cut + 1]
        chosen = block >= threshold
        surplus = chosen.sum(axis=1) - depth
        for row in np.flatnonzero(surplus).tolist():  # ties at the cut: the tie rule decides
            tied = np.flatnonzero(block[row] == threshold[row])
            if row == _HACS_ROW:
                tied = tied[np.lexsort((tied, tau[tied]))]  # older τ first, then site
            chosen[row, tied[tied.size - surplus[row] :]] = False
        top = np.nonzero(chosen)[1].reshape(n_models, depth)  # each row in site order
        order = np.argsort(-np.take_along_axis(block, top, axis=1), axis=1, kind="stable")
        top = np.take_along_axis(top, order, axis=1)  # score descending, ties in site order
        hacs = top[_HACS_ROW]
        top[_HACS_ROW] = hacs[np.lexsort((hacs, tau[hacs], -block[_HACS_ROW, hacs]))]
        model, place = np.nonzero(positive[lo + top])
        ranks[model, column[lo + top[model, place]]] = place + 1
    return ranks


def _expected_ranks(batch: _Batch) -> IntArray:
    """Rank of each positive pair in its window's expected ranking (first update, then site)."""
    pos_pairs = np.flatnonzero(batch.positive)
    r = batch.r[pos_pairs]
    order = np.lexsort((pos_pairs, batch.first_update[pos_pairs], r))
    ranks = np.empty(pos_pairs.size, dtype=np.int64)
    sorted_r = r[order]
    ranks[order] = np.arange(order.size) - np.searchsorted(sorted_r, sorted_r) + 1
    return ranks


@dataclass(frozen=True)
class _Tables:
    """Cumulative sums over K used by weighted P@K and NDCG, indexed by K (entry 0 is 0)."""

    weight_sum: FloatArray  # Z(P) = Σ_{K ≤ P} 1/log2(K + 1)
    weight_over_k: FloatArray  # Q(P) = Σ_{K ≤ P} 1/(K log2(K + 1))
    weight_times_k: FloatArray  # Σ_{K ≤ P} K/log2(K + 1)
    discount: FloatArray  # d(i) of NDCG (entry 0 unused)
    discount_sum: FloatArray  # IDCG(j) = Σ_{i ≤ j} d(i)


def _k_tables(size: int) -> _Tables:
    k = np.arange(1, size + 1, dtype=np.float64)
    weight = 1.0 / np.log2(k + 1.0)
    discount = 1.0 / np.log(np.maximum(k, math.e))  # Järvelin–Kekäläinen, base e: 1 for k < e

    def cumulative(values: FloatArray) -> FloatArray:
        return np.concatenate(([0.0], np.cumsum(values)))

    return _Tables(
        weight_sum=cumulative(weight),
        weight_over_k=cumulative(weight / k),
        weight_times_k=cumulative(weight * k),
        discount=np.concatenate(([0.0], discount)),
        discount_sum=cumulative(discount),
    )


@dataclass(frozen=True, eq=False)
class _RankMetrics:
    """Per model (row) and reference point (column); NaN where undefined."""

    p_at_k: FloatArray
    ndcg: FloatArray
    change_rate: FloatArray
    hits: FloatArray  # positives in the top k (expected for Random)


def _rank_metrics(
    batch: _Batch, counts: _PointCounts, budget: IntArray, tables: _Tables
) -> _RankMetrics:
    """Weighted P@K, NDCG@k, ChangeRate@k per model and reference point; Random last."""
    n_refs = counts.eligible.size
    eligible, positives = counts.eligible, counts.positives
    ranks = _positive_ranks(batch, positives, budget)
    expected = _expected_ranks(batch)
    pos_r = batch.r[batch.positive]
    n_models = ranks.shape[0]
    p_at_k = np.full((n_models + 1, n_refs), np.nan)
    ndcg = np.full((n_models + 1, n_refs), np.nan)
    change_rate = np.full((n_models + 1, n_refs), np.nan)
    hits = np.zeros((n_models + 1, n_refs))
    has_pos = positives > 0
    has_u = eligible > 0
    z = tables.weight_sum[positives]
    idcg = tables.discount_sum[np.minimum(budget, positives)]
    k_of = budget[pos_r]
    p_of = positives[pos_r]
    for row in range(n_models):
        # Σ_K w_K |top-K ∩ top-K(expected)|/K = Σ_x Σ_{K ≥ max(rank_x, expected_x)} w_K/K.
        reach = np.maximum(ranks[row], expected)
        inside = reach <= p_of
        gain = np.where(
            inside,
            tables.weight_over_k[p_of] - tables.weight_over_k[np.where(inside, reach, 1) - 1],
            0.0,
        )
        summed = np.bincount(pos_r, weights=gain, minlength=n_refs)
        in_budget = ranks[row] <= k_of
        found = np.bincount(pos_r, weights=in_budget, minlength=n_refs)
        dcg = np.bincount(
            pos_r,
            weights=np.where(in_budget, tables.discount[np.where(in_budget, ranks[row], 0)], 0.0),
            minlength=n_refs,
        )
        with np.errstate(divide="ignore", invalid="ignore"):
            p_at_k[row] = np.where(has_pos, summed / z, np.nan)
            ndcg[row] = np.where(has_pos, dcg / idcg, np.nan)
            change_rate[row] = np.where(has_u, found / budget, np.nan)
        hits[row] = found
    # Random, exactly: E|top-K ∩ S| = K²/|U|, each top-k site positive w.p. |Pos|/|U|.
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.where(has_u, positives / eligible, 0.0)
        p_at_k[n_models] = np.where(
            has_pos, tables.weight_times_k[positives] / (z * eligible), np.nan
        )
        ndcg[n_models] = np.where(has_pos, tables.discount_sum[budget] * share / idcg, np.nan)
        change_rate[n_models] = np.where(has_u, share, np.nan)
    hits[n_models] = budget * share
    return _RankMetrics(p_at_k, ndcg, change_rate, hits)


# --------------------------------------------------------------------------------------------
# Averaging and output rows
# --------------------------------------------------------------------------------------------


def _ratio(num: float, den: float) -> float | None:
    return num / den if den > 0 else None


def _micro(tp: float, selected: float, positives: float) -> tuple[float | None, ...]:
    """P, R, F1 from summed counts; F1 = 2TP/(2TP + FP + FN) = 2TP/(|D| + |Pos|)."""
    return (
        _ratio(tp, selected),
        _ratio(tp, positives),
        _ratio(2.0 * tp, selected + positives),
    )


def _macro(tp: FloatArray, selected: FloatArray, positives: FloatArray) -> tuple[float | None, ...]:
    """P, R, F1 per reference point, each averaged over the points where it is defined."""

    def mean(num: FloatArray, den: FloatArray) -> float | None:
        defined = den > 0
        if not defined.any():
            return None
        return float(np.mean(num[defined] / den[defined]))

    return mean(tp, selected), mean(tp, positives), mean(2.0 * tp, selected + positives)


def _mean(values: FloatArray) -> float | None:
    defined = ~np.isnan(values)
    return float(np.mean(values[defined])) if defined.any() else None


def _clean(value: float | None) -> float | None:
    if value is None or not math.isfinite(value):
        return None
    return float(value)


def _selection_rows(
    level: str, w: int, thetas: FloatArray, counts: _PointCounts
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Curve rows (micro and macro, every θ and model) and Table I rows for one (level, w)."""
    u = counts.eligible.astype(np.float64)
    pos = counts.positives.astype(np.float64)
    curves: list[dict[str, Any]] = []
    f1s: dict[str, list[float | None]] = {"micro": [], "macro": []}
    metrics: dict[tuple[str, int, str], tuple[float | None, ...]] = {}
    for j, theta in enumerate(thetas.tolist()):
        d = counts.selected[:, j].astype(np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            random_tp = np.where(u > 0, d * pos / u, 0.0)
        per_model = {
            "hacs": (counts.true_positives[:, j].astype(np.float64), d),
            "random": (random_tp, d),
            "brute_force": (pos, u),
        }
        for model, (tp, sel) in per_model.items():
            totals = {
                "tp": float(tp.sum()),
                "fp": float((sel - tp).sum()),
                "fn": float((pos - tp).sum()),
                "tn": float((u - sel - pos + tp).sum()),
            }
            if model != "random":
                totals = {key: int(round(value)) for key, value in totals.items()}
            for average, values in (
                ("micro", _micro(float(tp.sum()), float(sel.sum()), float(pos.sum()))),
                ("macro", _macro(tp, sel, pos)),
            ):
                precision, recall, f1 = values
                metrics[(average, j, model)] = values
                if model == "hacs":
                    f1s[average].append(f1)
                curves.append(
                    {
                        "level": level,
                        "average": average,
                        "w_weeks": w,
                        "theta": theta,
                        "model": model,
                        "precision": _clean(precision),
                        "recall": _clean(recall),
                        "f1": _clean(f1),
                        **totals,
                    }
                )
    table: list[dict[str, Any]] = []
    for average in ("micro", "macro"):
        best = _theta_hat(f1s[average])
        for model in SELECTION_MODELS:
            values = metrics[(average, best, model)] if best is not None else (None,) * 3
            table.append(
                {
                    "level": level,
                    "average": average,
                    "w_weeks": w,
                    "model": model,
                    "theta_hat": None if best is None else float(thetas[best]),
                    "precision": _clean(values[0]),
                    "recall": _clean(values[1]),
                    "f1": _clean(values[2]),
                }
            )
    return curves, table


def _theta_hat(f1: Sequence[float | None]) -> int | None:
    """Index of the highest F1 (the first, i.e. smallest θ, among equals); None if none."""
    best: int | None = None
    best_value = -math.inf
    for j, value in enumerate(f1):
        if value is not None and value > best_value:
            best, best_value = j, value
    return best


def _ranking_rows(
    level: str,
    w: int,
    counts: _PointCounts,
    budget: IntArray,
    metrics: _RankMetrics,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    pos = counts.positives.astype(np.float64)
    has_u = counts.eligible > 0
    k = budget.astype(np.float64)
    pak: list[dict[str, Any]] = []
    budget_rows: list[dict[str, Any]] = []
    for row, model in enumerate((*RANKING_MODELS, "random")):
        pak.append(
            {
                "level": level,
                "w_weeks": w,
                "model": model,
                "weighted_p_at_k": _clean(_mean(metrics.p_at_k[row])),
                "points": int(np.count_nonzero(~np.isnan(metrics.p_at_k[row]))),
            }
        )
        tp = metrics.hits[row]
        precision, recall, f1 = _micro(float(tp.sum()), float(k.sum()), float(pos.sum()))
        macro = _macro(tp[has_u], k[has_u], pos[has_u])
        budget_rows.append(
            {
                "level": level,
                "w_weeks": w,
                "model": model,
                "k_mean": _clean(float(k[has_u].mean()) if has_u.any() else None),
                "ndcg_at_k": _clean(_mean(metrics.ndcg[row])),
                "change_rate_at_k": _clean(_mean(metrics.change_rate[row])),
                "tp": float(tp.sum()) if model == "random" else int(round(float(tp.sum()))),
                "fp": _count(float((k - tp).sum()), model),
                "fn": _count(float((pos - tp).sum()), model),
                "precision": _clean(precision),
                "recall": _clean(recall),
                "f1": _clean(f1),
                "macro_precision": _clean(macro[0]),
                "macro_recall": _clean(macro[1]),
                "macro_f1": _clean(macro[2]),
            }
        )
    return pak, budget_rows


def _count(value: float, model: str) -> float | int:
    return value if model == "random" else int(round(value))


def _point_rows(
    level: str,
    w: int,
    t: FloatArray,
    counts: _PointCounts,
    budget: IntArray,
    metrics: _RankMetrics,
) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    names = (*RANKING_MODELS, "random")
    for r in range(t.size):
        rows.append(
            {
                "level": level,
                "w_weeks": w,
                "t": float(t[r]),
                "eligible": int(counts.eligible[r]),
                "positives": int(counts.positives[r]),
                "hacs_selected": counts.selected[r].tolist(),
                "hacs_tp": counts.true_positives[r].tolist(),
                "budget_k": int(budget[r]),
                "models": {
                    name: {
                        "weighted_p_at_k": _clean(float(metrics.p_at_k[row, r])),
                        "ndcg_at_k": _clean(float(metrics.ndcg[row, r])),
                        "change_rate_at_k": _clean(float(metrics.change_rate[row, r])),
                        "hits_at_k": float(metrics.hits[row, r]),
                    }
                    for row, name in enumerate(names)
                },
            }
        )
    return rows


# --------------------------------------------------------------------------------------------
# Entry point
# --------------------------------------------------------------------------------------------


def evaluate(
    tables: Mapping[str, ObservationTable],
    *,
    start: float,
    end: float,
    step_days: float = 7.0,
    e_days: float = 7.0,
    w_weeks: Iterable[int] = DEFAULT_W_WEEKS,
    thetas: Iterable[float] = DEFAULT_THETAS,
    method: str = "observed",
    budget_fraction: float = 0.05,
    details: bool = False,
    progress: Callable[[float], None] | None = None,
) -> dict[str, Any]:
    """Evaluations 1 and 2 and the crawl-budget metrics for each level (see the module docstring).

    ``tables`` maps a level name (``"homepage"``, ``"website"``) to its observations. Returns a
    JSON-serialisable dict:

    * ``parameters`` — the arguments as used, and ``reference_points`` (how many t);
    * ``levels`` — per level, ``sites`` and ``observations``;
    * ``curves`` — per (level, average ∈ {micro, macro}, w_weeks, theta, model ∈
      SELECTION_MODELS): ``precision``, ``recall``, ``f1`` (None where undefined) and the totals
      over t ``tp``, ``fp``, ``fn``, ``tn`` (expected values, floats, for Random);
    * ``table`` — Table I: per (level, average, w_weeks, model): ``theta_hat`` (HACS's, also used
      for Random and Brute Force), ``precision``, ``recall``, ``f1``;
    * ``pak`` — per (level, w_weeks, model ∈ RANKING_MODELS + random): ``weighted_p_at_k``
      (mean over t with positives) and ``points`` (how many t);
    * ``budget`` — per (level, w_weeks, model): ``k_mean``, ``ndcg_at_k``, ``change_rate_at_k``,
      and the top-k selection's ``tp``, ``fp``, ``fn``, micro ``precision``, ``recall``, ``f1``
      and ``macro_precision``, ``macro_recall``, ``macro_f1``;
    * ``points`` (only with ``details=True``) — per (level, w_weeks, t): ``eligible``,
      ``positives``, HACS's ``hacs_selected`` and ``hacs_tp`` per θ, ``budget_k`` and per model
      ``weighted_p_at_k``, ``ndcg_at_k``, ``change_rate_at_k``, ``hits_at_k``.

    ``thetas`` are sorted and duplicates dropped; ``w_weeks`` likewise. ``progress`` is called
    with the finished fraction (0 … 1) after each (level, w), from the calling thread.
    """
    if not isinstance(tables, Mapping) or not tables:
        raise ValueError("tables must map at least one level name to an ObservationTable")
    for name, table in tables.items():
        if not isinstance(table, ObservationTable):
            raise ValueError(f"tables[{name!r}] must be an ObservationTable")
    ts = reference_points(start, end, step_days)
    e = _check_e(e_days)
    ws = _check_w_weeks(w_weeks)
    theta_values = _check_thetas(thetas)
    _check_method(method)
    fraction = _finite(budget_fraction, "budget_fraction")
    if not 0 < fraction <= 1:
        raise ValueError(f"budget_fraction must be in (0, 1]; got {budget_fraction}")

    grid = _make_grid(ts, ws, e)
    result: dict[str, Any] = {
        "parameters": {
            "start": float(start),
            "end": float(end),
            "step_days": float(step_days),
            "e_days": e,
            "w_weeks": list(ws),
            "thetas": theta_values.tolist(),
            "method": method,
            "budget_fraction": fraction,
            "reference_points": int(ts.size),
        },
        "levels": {},
        "curves": [],
        "table": [],
        "pak": [],
        "budget": [],
    }
    if details:
        result["points"] = []
    steps, done = len(tables) * len(ws), 0
    for level_name, table in tables.items():
        level = _prepare(table, grid)
        result["levels"][level_name] = {"sites": table.site_count, "observations": table.size}
        size = max(table.site_count, 1)
        k_tables = _k_tables(size)
        for w in ws:
            batch = _window_batch(level, grid, w, method)
            counts = _selection_counts(batch, theta_values, ts.size)
            curves, table_rows = _selection_rows(level_name, w, theta_values, counts)
            budget = _budget(counts.eligible, fraction)
            metrics = _rank_metrics(batch, counts, budget, k_tables)
            pak, budget_rows = _ranking_rows(level_name, w, counts, budget, metrics)
            result["curves"].extend(curves)
            result["table"].extend(table_rows)
            result["pak"].extend(pak)
            result["budget"].extend(budget_rows)
            if details:
                result["points"].extend(_point_rows(level_name, w, ts, counts, budget, metrics))
            del batch
            done += 1
            if progress is not None:
                progress(done / steps)
    return result


def _check_e(e_days: float) -> float:
    e = _finite(e_days, "e_days")
    if e <= 0:
        raise ValueError(f"e_days must be positive; got {e_days}")
    return e


def _check_w_weeks(w_weeks: Iterable[int]) -> tuple[int, ...]:
    values = list(w_weeks)
    if not values:
        raise ValueError("w_weeks must hold at least one history size")
    for w in values:
        if isinstance(w, bool) or not isinstance(w, int | np.integer) or w < 1:
            raise ValueError(f"w_weeks must be positive whole numbers of weeks; got {w!r}")
    return tuple(sorted({int(w) for w in values}))


def _check_thetas(thetas: Iterable[float]) -> FloatArray:
    values = [_finite(theta, "theta") for theta in thetas]
    if not values:
        raise ValueError("thetas must hold at least one threshold")
    for theta in values:
        if not 0.0 <= theta <= 1.0:
            raise ValueError(f"thetas must lie in [0, 1]; got {theta}")
    return np.unique(np.asarray(values, dtype=np.float64))


def _check_method(method: str) -> None:
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)}; got {method!r}")
