"""Observations, updates and timelines — DESIGN rules 1, 3 and 4. Pure: stdlib and NumPy only.

* Rule 1, :func:`classify`: which CDX rows are *observations* (200 HTML captures, and revisits
  of an earlier 200 HTML capture of the same URL, which carry its links).
* Rule 3, :func:`is_window_update`: an observation of a page is an *update* when its link set
  holds a link that no earlier observation of the same page *in the same window* held; the
  first observation of a page in a window is the baseline, never an update; removing a link is
  not an update, nor is re-adding one seen earlier in the window.
* Rule 4, :func:`timeline_order`: a site's timeline is its pages' observations merged in time
  order, each keeping the flag computed for its own page.

Following DESIGN's hint for speed, each observation carries one integer, its *link floor*
(:func:`link_floors`): the smallest, over its links, of the index of the latest earlier
observation of the page that held that link (−1 when a link is brand new). Observation i is then
an update in a window whose first observation of the page is j exactly when
``i > j and floor[i] < j``: if some link of i was last held before j (or never), no observation
in [j, i) held it. An observation without links can never add one, so its floor is i itself and
it is never an update. Every caller — estimates, the evaluation, a site's page — decides rule 3
through :func:`is_window_update` (the evaluation engine reads the same predicate as an interval
of window start times, see ``hacs.evaluation``; a test holds the two readings equal).
"""

from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Set as AbstractSet
from datetime import datetime
from enum import StrEnum

import numpy as np
from numpy.typing import ArrayLike, NDArray

from hacs.formats.cdx import CdxRecord

__all__ = [
    "OBSERVATION_KINDS",
    "CaptureKind",
    "classify",
    "is_window_update",
    "link_floors",
    "new_link_counts",
    "timeline_order",
    "window_update_flags",
]

IntArray = NDArray[np.int64]
BoolArray = NDArray[np.bool_]
FloatArray = NDArray[np.float64]


# --- Rule 1: which captures are observations ---------------------------------------------------


class CaptureKind(StrEnum):
    """What one CDX row is, for the update rule (DESIGN rule 1)."""

    OBSERVATION = "observation"  # 200 and an HTML type
    REVISIT = "revisit"  # revisit of an earlier 200 HTML capture: an observation with its links
    REVISIT_ORPHAN = "revisit_orphan"  # revisit with no such earlier capture: not an observation
    REDIRECT = "redirect"  # 3xx
    ERROR = "error"  # 4xx, 5xx, and any other status that is not 200 or 3xx
    NON_HTML = "non_html"  # 200 with another type (PDF, image, text/plain...)
    DUPLICATE = "duplicate"  # an earlier row already had this (urlkey, timestamp)


#: The kinds that count as observations.
OBSERVATION_KINDS = frozenset({CaptureKind.OBSERVATION, CaptureKind.REVISIT})


def classify(records: Iterable[CdxRecord]) -> list[CaptureKind]:
    """Classify each record of one site (DESIGN rule 1); the result follows the input order.

    The input may be sorted by (urlkey, timestamp), by timestamp, or not at all: the rule is
    applied in (urlkey, timestamp) order internally. Of rows sharing a (urlkey, timestamp) the
    first in input order is kept and the rest are ``DUPLICATE`` (the same row the database
    keeps, as its unique key is (site, urlkey, timestamp)). A revisit is matched by digest to
    a 200 HTML capture of the same urlkey at a strictly earlier time; a revisit whose own
    status is a redirect or error (pywb prints the revisit's HTTP status) is classified by
    that status instead.
    """
    rows = list(records)
    kinds: list[CaptureKind] = [CaptureKind.DUPLICATE] * len(rows)
    order = sorted(range(len(rows)), key=lambda i: (rows[i].urlkey, rows[i].timestamp, i))
    current_key: str | None = None
    html_digests: set[str] = set()
    last_time: datetime | None = None
    for i in order:
        record = rows[i]
        if record.urlkey != current_key:
            current_key = record.urlkey
            html_digests = set()
            last_time = None
        elif record.timestamp == last_time:
            continue  # stays DUPLICATE
        last_time = record.timestamp
        kinds[i] = _kind(record, html_digests)
        if kinds[i] is CaptureKind.OBSERVATION and record.digest not in ("", "-"):
            html_digests.add(record.digest)
    return kinds


def _kind(record: CdxRecord, html_digests: set[str]) -> CaptureKind:
    status = record.status
    if record.is_revisit and (status is None or status == 200):
        if record.digest in html_digests:
            return CaptureKind.REVISIT
        return CaptureKind.REVISIT_ORPHAN
    if status is not None and 300 <= status < 400:
        return CaptureKind.REDIRECT
    if status != 200:
        return CaptureKind.ERROR
    if not record.is_html:
        return CaptureKind.NON_HTML
    return CaptureKind.OBSERVATION


# --- Rule 3: updates ---------------------------------------------------------------------------


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


def new_link_counts(link_sets: Iterable[AbstractSet[str]]) -> IntArray:
    """How many links of each observation no earlier observation of the page held.

    Over the page's full history (the paper's |l*(m_i)|, HACS paper Section II-B). The first
    observation counts all its links, since nothing came before it; callers that treat it as a
    baseline (DESIGN rule 3) ignore that entry.
    """
    seen: set[str] = set()
    counts: list[int] = []
    for links in link_sets:
        fresh = links - seen
        counts.append(len(fresh))
        seen |= fresh
    return np.asarray(counts, dtype=np.int64)


def is_window_update(page_index: ArrayLike, link_floor: ArrayLike, first: ArrayLike) -> BoolArray:
    """DESIGN rule 3: is each observation an update in a window whose first observation of its
    page has index ``first``?

    ``page_index`` numbers a page's observations over its full history in time order and
    ``link_floor`` is the observation's :func:`link_floors` entry; the three broadcast together.
    True exactly when the observation is not the window's baseline (``page_index > first``) and
    holds a link that no observation of the page since ``first`` held (``link_floor < first``).
    """
    index = np.asarray(page_index, dtype=np.int64)
    floor = np.asarray(link_floor, dtype=np.int64)
    j = np.asarray(first, dtype=np.int64)
    result: BoolArray = (index > j) & (floor < j)
    return result


def window_update_flags(page: ArrayLike, page_index: ArrayLike, link_floor: ArrayLike) -> BoolArray:
    """Rule 3 over one window's observations: each page's window starts at its first observation
    there (the smallest ``page_index`` of the page among the observations given).

    ``page`` numbers the (site, page) each observation belongs to (integers ≥ 0, in any order).
    """
    group = np.asarray(page, dtype=np.int64)
    index = np.asarray(page_index, dtype=np.int64)
    if group.size == 0:
        return np.zeros(0, dtype=np.bool_)
    first = np.full(int(group.max()) + 1, np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(first, group, index)
    return is_window_update(index, link_floor, first[group])


# --- Rule 4: timelines -------------------------------------------------------------------------


def timeline_order(site: ArrayLike, time: ArrayLike, *ties: ArrayLike) -> NDArray[np.intp]:
    """DESIGN rule 4: the order that merges each site's pages into one timeline.

    Observations sorted by site, then time, then each array of ``ties`` in turn (for example
    the page, then its ``page_index``, so that runs are reproducible); a stable sort, so equal
    keys keep their input order. Each observation keeps the update flag of its own page.
    """
    keys = [np.asarray(t) for t in reversed(ties)]
    order: NDArray[np.intp] = np.lexsort((*keys, np.asarray(time), np.asarray(site)))
    return order
