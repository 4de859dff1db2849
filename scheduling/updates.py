"""Update detection for HACS — pure (stdlib and NumPy only; never Django).

DESIGN.md rule 3: an observation of a page is an *update* when its link set holds a link that no
earlier observation of the same page *in the same window* held; the first observation of a page
in a window is the baseline, never an update; removing a link is not an update, nor is
re-adding one seen earlier in the window. Rule 4: at website level the pages' observations are
merged in time order, each keeping the flag computed for its own page.

Following DESIGN.md's hint for speed, each observation carries one integer, its *link floor*:
the smallest, over its links, of the index of the latest earlier observation of the page that
held that link (−1 when a link is brand new). Observation i is then an update in a window whose
first observation of the page is j exactly when ``i > j and floor[i] < j``: if some link of i
was last held before j (or never), no observation in [j, i) held it. An observation without
links can never add one, so its floor is i itself and it is never an update.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from collections.abc import Set as AbstractSet

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = ["link_floors", "merge_timelines", "new_link_counts", "window_updates"]

IntArray = NDArray[np.int64]
BoolArray = NDArray[np.bool_]
FloatArray = NDArray[np.float64]


def link_floors(link_sets: Iterable[AbstractSet[str]]) -> IntArray:
    """Link floors of one page's observations, given in time order (see the module docstring).

    Entry i is the smallest, over the links of observation i, of the index of the latest
    earlier observation holding that link; −1 when some link is brand new; i when observation i
    holds no links. O(total number of links), with a dict of last-seen indices.
    """
    last_seen: dict[str, int] = {}
    floors: list[int] = []
    for i, links in enumerate(link_sets):
        floor = i
        for link in links:
            floor = min(floor, last_seen.get(link, -1))
            last_seen[link] = i
        floors.append(floor)
    return np.asarray(floors, dtype=np.int64)


def window_updates(floors: ArrayLike, start: int, stop: int | None = None) -> BoolArray:
    """Update flags of observations ``start`` .. ``stop − 1`` of one page, in a window whose first
    observation of the page is ``start`` (DESIGN.md rule 3).

    ``floors`` are the page's :func:`link_floors`; ``stop`` defaults to the number of
    observations. The first flag (the window's baseline) is always False.
    """
    f = np.asarray(floors)
    if f.ndim != 1 or (f.size and f.dtype.kind not in "iu"):
        raise ValueError("floors must be a one-dimensional array of integers")
    end = f.size if stop is None else stop
    if not 0 <= start <= end <= f.size:
        raise ValueError(
            f"need 0 <= start <= stop <= len(floors) = {f.size}; got start={start}, stop={end}"
        )
    flags: BoolArray = f[start:end] < start
    if flags.size:
        flags[0] = False
    return flags


def new_link_counts(link_sets: Iterable[AbstractSet[str]]) -> IntArray:
    """How many links of each observation no earlier observation of the page held.

    Over the page's full history (the paper's |l*(m_i)|, HACS paper Section II-B). The first
    observation counts all its links, since nothing came before it; callers that treat it as a
    baseline (DESIGN.md rule 3) ignore that entry.
    """
    seen: set[str] = set()
    counts: list[int] = []
    for links in link_sets:
        fresh = links - seen
        counts.append(len(fresh))
        seen |= fresh
    return np.asarray(counts, dtype=np.int64)


def merge_timelines(
    times_per_page: Sequence[ArrayLike], flags_per_page: Sequence[ArrayLike]
) -> tuple[FloatArray, BoolArray]:
    """Merge pages' timelines into the website's (DESIGN.md rule 4).

    Each page gives its observation times (days, sorted ascending) and its update flags; the
    result holds every observation in time order, each with its own page's flag. Ties keep the
    order of the pages, then of the observations within a page (a stable merge).
    """
    if len(times_per_page) != len(flags_per_page):
        raise ValueError(
            "times_per_page and flags_per_page must have one entry per page; got "
            f"{len(times_per_page)} and {len(flags_per_page)}"
        )
    all_times: list[FloatArray] = []
    all_flags: list[BoolArray] = []
    for page, (times, flags) in enumerate(zip(times_per_page, flags_per_page, strict=True)):
        t = np.asarray(times, dtype=np.float64)
        u = np.asarray(flags)
        if t.ndim != 1 or u.ndim != 1 or t.size != u.size:
            raise ValueError(
                f"page {page}: times and flags must be one-dimensional and of the same length; "
                f"got shapes {t.shape} and {u.shape}"
            )
        if not np.all(np.isfinite(t)):
            raise ValueError(f"page {page}: times must be finite")
        if np.any(np.diff(t) < 0):
            raise ValueError(f"page {page}: times must be sorted ascending")
        if u.size and u.dtype != np.bool_:
            if u.dtype.kind not in "iuf" or not np.all((u == 0) | (u == 1)):
                raise ValueError(f"page {page}: flags must be booleans (True/False or 0/1)")
        all_times.append(t)
        all_flags.append(u.astype(np.bool_))
    if not all_times:
        return np.zeros(0), np.zeros(0, dtype=np.bool_)
    times_flat = np.concatenate(all_times)
    flags_flat = np.concatenate(all_flags)
    order = np.argsort(times_flat, kind="stable")
    return times_flat[order], flags_flat[order]
