"""The observation table: one level's observations as flat, validated arrays.

Part of :mod:`hacs.evaluation`; pure (NumPy only). Times are days since an epoch.

Rule 3 read as an interval of window starts
-------------------------------------------
DESIGN.md rule 3 has one implementation in the core, :func:`hacs.updates.is_window_update`
(DESIGN's hint for speed): with ``link_floor``, an observation i of a page is an update in a
window whose first observation of that page has index j iff ``page_index > j and link_floor < j``.
The evaluation engine reads the same predicate in terms of the window start s: j > link_floor iff
observation ``link_floor`` of the page lies before s, and j < page_index iff observation
``page_index − 1`` lies in the window; so i is an update exactly for window starts s in
(A_i, B_i], with A_i the time of the page's observation ``link_floor`` (−∞ when −1) and B_i the
time of its observation ``page_index − 1``. Only the observations with A_i < B_i can ever be
updates, and for one w each is one for a contiguous run of reference points.
:class:`ObservationTable` derives (A, B] once, while it checks the page structure;
``tests/hacs/evaluation/test_table.py`` holds this reading and ``is_window_update`` equal
on random tables and windows.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = ["BoolArray", "FloatArray", "IntArray", "ObservationTable"]

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]
BoolArray = NDArray[np.bool_]


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

    * ``new_links`` (optional) — how many of the observation's links no earlier observation of
      its page held (the learned schedulers' recent-activity features and the website level's
      page evidence, ``hacs.evaluation.pages``; 0 when not given, and ``has_new_links`` False).

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
    new_links: IntArray | None = None
    # For each observation, the window starts s for which it is an update are (A, B]
    # (see the module docstring); derived once from the page structure while validating.
    _update_after: FloatArray = field(init=False, repr=False)
    _update_until: FloatArray = field(init=False, repr=False)
    # Whether the caller gave ``new_links`` (stored as zeros when not).
    has_new_links: bool = field(init=False, repr=False)

    def __post_init__(self) -> None:
        site = _int_column(self.site, "site")
        size = site.size
        page = _int_column(self.page, "page", size)
        page_index = _int_column(self.page_index, "page_index", size)
        link_floor = _int_column(self.link_floor, "link_floor", size)
        time = _time_column(self.time, size)
        n_sites = _resolve_n_sites(self.n_sites, site)
        new_links = (
            np.zeros(size, dtype=np.int64)
            if self.new_links is None
            else _int_column(self.new_links, "new_links", size)
        )
        _check_range(new_links, "new_links", 0, None)
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
        object.__setattr__(self, "has_new_links", self.new_links is not None)
        for name, value in (
            ("site", site),
            ("page", page),
            ("time", time),
            ("page_index", page_index),
            ("link_floor", link_floor),
            ("n_sites", n_sites),
            ("new_links", new_links),
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
    """A copy of an integer column, or ``ValueError`` naming it (input checks, no paper rule)."""
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
    """A copy of the times in days, finite and not negative as the estimators need (HACS paper,
    Eqs. 4-5 take intervals between them)."""
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
    """The number of sites U (HACS paper, Section III-B), at least one past the largest index."""
    needed = int(site.max()) + 1 if site.size else 0
    if n_sites is None:
        return needed
    if isinstance(n_sites, bool) or not isinstance(n_sites, int | np.integer) or n_sites < 0:
        raise ValueError(f"n_sites must be a non-negative integer; got {n_sites!r}")
    if int(n_sites) < needed:
        raise ValueError(f"n_sites = {n_sites} but site holds index {needed - 1}")
    return int(n_sites)


def _check_range(values: IntArray, name: str, low: int, high: int | None) -> None:
    """``ValueError`` naming the first entry outside [low, high] (input checks, no paper rule)."""
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

    DESIGN.md rule 3 (the HACS paper's l*(m_i) > 0, Section II-B, made window-relative): this is
    the predicate of :func:`hacs.updates.is_window_update` read as an interval of window start
    times (the module docstring): observation i is an update in every window whose start s has
    A_i < s ≤ B_i, and in no other. ``tests/hacs/evaluation/test_table.py`` holds the two readings
    equal on random tables and windows.

    Places every observation in a page-major array by its page index (a counting placement, no
    sort), which at once checks that each page's indices are consecutive and distinct, that
    times do not decrease along them and that a page stays on one site.
    """
    size = site.size
    if size == 0:
        return np.zeros(0), np.zeros(0)
    slots = _PageSlots.place(page, page_index)
    by_slot_time = _slot_times(slots, page_index, time, site)
    # A: time of the page's observation `link_floor` (−∞ when −1 or before the loaded history;
    # the observation's own time when it has no links, which makes (A, B] empty).
    floor_relative = link_floor - slots.first_index[slots.page]
    known = floor_relative >= 0
    after = np.full(size, -np.inf)
    after[known] = by_slot_time[(slots.base[slots.page] + floor_relative)[known]]
    # B: time of the page's previous observation (−∞ for the first one: never an update).
    until = np.full(size, -np.inf)
    has_previous = slots.relative > 0
    until[has_previous] = by_slot_time[slots.slot[has_previous] - 1]
    return after, until


@dataclass(frozen=True, eq=False)
class _PageSlots:
    """Each observation's slot in a page-major array: ``base[p]`` is page p's first slot,
    ``relative`` an observation's place within its page, ``slot`` = base + relative."""

    page: IntArray  # dense page numbers
    first_index: IntArray  # per page, its lowest page_index
    base: IntArray
    relative: IntArray
    slot: IntArray

    @classmethod
    def place(cls, page: IntArray, page_index: IntArray) -> _PageSlots:
        """Place the observations, checking that each page's indices are consecutive and
        distinct (a counting placement, no sort)."""
        size = page.size
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
        return cls(page, first_index, base, relative, slot)


def _slot_times(
    slots: _PageSlots, page_index: IntArray, time: FloatArray, site: IntArray
) -> FloatArray:
    """The observations' times in slot order, checking that times do not decrease along a
    page's indices and that a page stays on one site."""
    size, slot, page = site.size, slots.slot, slots.page
    by_slot_time = np.empty(size)
    by_slot_time[slot] = time
    by_slot_site = np.empty(size, dtype=np.int64)
    by_slot_site[slot] = site
    same_page = np.ones(size, dtype=np.bool_)
    same_page[slots.base] = False  # slot k and k − 1 belong to the same page unless k starts one
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
    return by_slot_time
