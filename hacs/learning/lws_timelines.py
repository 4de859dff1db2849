"""LWS's view of a site at an instant: its timeline of events and the features of ``FEATURES``.

The list-wise forum crawling paper (``papers/forum-incremental-crawling-lws.txt``, Section 4,
Table 1 and the state indicator ds), read for HACS's sites as ``hacs.learning.lws`` describes:
:class:`EventTimelines` checks the timelines once, and :func:`site_features` describes every
site at an instant from what was known then. Pure: NumPy only.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from hacs.estimators import _check_offsets  # the estimators' timelines, read the same way

__all__ = ["FEATURES", "EventTimelines", "SiteFeatures", "site_features"]

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]
BoolArray = NDArray[np.bool_]

FEATURES = (
    "log_interval_1",  # the latest inter-update interval, log1p days
    "log_interval_2",  # the one before it
    "log_interval_3",  # and the one before that
    "intervals_missing",  # how many of those three the history is too short to have (0 … 3)
    "log_since_update",  # log1p days since the last update (the first observation if none)
    "log_since_observation",  # log1p days since the newest observation
    "log_updates_recent",  # log1p updates in the last WINDOW_DAYS
    "log_pages_updated_recent",  # log1p distinct pages updated in the last WINDOW_DAYS
    "log_new_links_recent",  # log1p links never seen before, added in the last WINDOW_DAYS
    "log_mean_interval",  # log1p of the mean inter-update interval
    "log_sd_interval",  # log1p of its standard deviation (the paper's Δt_sd)
    "dormant",  # the paper's state indicator ds: 1.0 or 0.0
)


@dataclass(frozen=True, eq=False)
class EventTimelines:
    """Checked timelines, with each site's *events*: its first observation, then its updates at
    distinct instants after it (site-then-time order, as the observations)."""

    times: FloatArray
    site_of: IntArray  # each observation's site
    first_index: IntArray  # each site's first observation (valid where it has one)
    n_sites: int
    event_time: FloatArray
    event_site: IntArray
    event_start: IntArray  # each site's first event
    event_counts: IntArray
    update_time: FloatArray  # the events that are updates, with the interval each closes
    update_site: IntArray
    update_gap: FloatArray
    flagged_time: FloatArray  # every update observation (for distinct pages)
    flagged_key: IntArray  # (site, page) as one integer: site · page_width + page
    page_width: int
    new_links: FloatArray | None

    @classmethod
    def build(
        cls,
        times: ArrayLike,
        flags: ArrayLike,
        offsets: ArrayLike,
        new_links: ArrayLike | None,
        page: ArrayLike | None,
    ) -> EventTimelines:
        t, f, off, site_of, links, pages = _checked(times, flags, offsets, new_links, page)
        counts = np.diff(off)
        n_sites = counts.size
        first_index = off[:-1].copy()
        has = counts > 0
        start_time = np.full(n_sites, np.inf)
        start_time[has] = t[first_index[has]]
        # A flag at the site's first instant is the baseline's; it closes no interval.
        flagged = np.flatnonzero(f & (t > start_time[site_of]))
        same = np.zeros(flagged.size, dtype=np.bool_)
        same[1:] = (site_of[flagged[1:]] == site_of[flagged[:-1]]) & (
            t[flagged[1:]] == t[flagged[:-1]]
        )
        update_index = flagged[~same]
        event_index = np.sort(np.concatenate([first_index[has], update_index]))
        event_time = t[event_index]
        event_site = site_of[event_index]
        is_update = np.ones(event_index.size, dtype=np.bool_)
        is_update[np.searchsorted(event_index, first_index[has])] = False
        gap = np.diff(event_time, prepend=0.0)  # the previous event is the same site's
        event_counts = np.bincount(event_site, minlength=n_sites).astype(np.int64)
        event_start = np.zeros(n_sites, dtype=np.int64)
        np.cumsum(event_counts[:-1], out=event_start[1:])
        width = int(pages.max()) + 1 if pages.size else 1
        return cls(
            times=t,
            site_of=site_of,
            first_index=first_index,
            n_sites=n_sites,
            event_time=event_time,
            event_site=event_site,
            event_start=event_start,
            event_counts=event_counts,
            update_time=event_time[is_update],
            update_site=event_site[is_update],
            update_gap=gap[is_update],
            flagged_time=t[flagged],
            flagged_key=site_of[flagged] * width + pages[flagged],
            page_width=width,
            new_links=links,
        )


def _checked(
    times: ArrayLike,
    flags: ArrayLike,
    offsets: ArrayLike,
    new_links: ArrayLike | None,
    page: ArrayLike | None,
) -> tuple[FloatArray, BoolArray, IntArray, IntArray, FloatArray | None, IntArray]:
    """The timelines' arrays, checked: times, flags, offsets, each observation's site, new
    links (or None) and pages."""
    t = _check_times(times)
    f = _check_flags(flags, t.size)
    off = _check_offsets(offsets, t.size)
    counts = np.diff(off)
    site_of = np.repeat(np.arange(counts.size, dtype=np.int64), counts)
    _check_order(t, site_of)
    links = None if new_links is None else _check_counts(new_links, t.size, "new_links")
    pages = np.zeros(t.size, dtype=np.int64) if page is None else _check_ids(page, t.size, "page")
    return t, f, off, site_of, links, pages


def _check_order(t: FloatArray, site_of: IntArray) -> None:
    backwards = (np.diff(t) < 0) & (site_of[1:] == site_of[:-1])
    if backwards.any():
        i = int(np.argmax(backwards)) + 1
        raise ValueError(
            f"times must be sorted within each site; times[{i}] = {float(t[i])} < "
            f"times[{i - 1}] = {float(t[i - 1])} (site {int(site_of[i])})"
        )


@dataclass(frozen=True, eq=False)
class SiteFeatures:
    matrix: FloatArray
    has: BoolArray  # the site has an observation by the instant
    events: IntArray  # its events by then (first observation and updates)
    updates: FloatArray
    first: FloatArray
    newest: FloatArray


def site_features(tl: EventTimelines, at: float, window_days: float, alpha: float) -> SiteFeatures:
    """``FEATURES`` at ``at`` for every site, vectorised (paper, Table 1 and ds, Section 4)."""
    n = tl.n_sites
    seen = np.bincount(tl.site_of[tl.times <= at], minlength=n)
    has = seen > 0
    first = np.zeros(n)
    newest = np.zeros(n)
    first[has] = tl.times[tl.first_index[has]]
    newest[has] = tl.times[tl.first_index[has] + seen[has] - 1]
    span = np.where(has, at - first, 0.0)

    events = np.bincount(tl.event_site[tl.event_time <= at], minlength=n).astype(np.int64)
    updates = np.maximum(events - 1, 0)
    last = np.zeros(n)  # the last update, or the first observation when there is none
    last[has] = tl.event_time[tl.event_start[has] + events[has] - 1]
    since_update = np.where(has, at - last, 0.0)

    matrix = np.zeros((n, len(FEATURES)))
    for k in (1, 2, 3):
        present = updates >= k
        closing = tl.event_start[present] + events[present] - k
        interval = span.copy()
        interval[present] = tl.event_time[closing] - tl.event_time[closing - 1]
        matrix[:, k - 1] = np.log1p(interval)
    matrix[:, 3] = 3 - np.minimum(updates, 3)
    matrix[:, 4] = np.log1p(since_update)
    matrix[:, 5] = np.log1p(np.where(has, at - newest, 0.0))

    _recent_features(matrix, tl, at, window_days)

    mean, sd = _interval_moments(tl, at, span, first, last, updates)
    matrix[:, 9] = np.log1p(mean)
    matrix[:, 10] = np.log1p(sd)
    matrix[:, 11] = (since_update - mean > alpha * sd).astype(np.float64)
    return SiteFeatures(matrix, has, events, updates.astype(np.float64), first, newest)


def _recent_features(matrix: FloatArray, tl: EventTimelines, at: float, window_days: float) -> None:
    """Fill the features of the last ``window_days``: updates, pages updated, new links."""
    n = tl.n_sites
    lo = at - window_days
    recent = (tl.update_time > lo) & (tl.update_time <= at)
    matrix[:, 6] = np.log1p(np.bincount(tl.update_site[recent], minlength=n))
    in_window = (tl.flagged_time > lo) & (tl.flagged_time <= at)
    pairs = np.unique(tl.flagged_key[in_window])
    matrix[:, 7] = np.log1p(np.bincount(pairs // tl.page_width, minlength=n))
    if tl.new_links is not None:
        window = (tl.times > lo) & (tl.times <= at)
        added = np.bincount(tl.site_of[window], weights=tl.new_links[window], minlength=n)
        matrix[:, 8] = np.log1p(added)


def _interval_moments(
    tl: EventTimelines,
    at: float,
    span: FloatArray,
    first: FloatArray,
    last: FloatArray,
    updates: IntArray,
) -> tuple[FloatArray, FloatArray]:
    """Mean and standard deviation of the intervals (the paper's Δt_avg and Δt_sd, ddof 1):
    the intervals telescope, so the mean is (last update − first observation) / count."""
    n = tl.n_sites
    mean = span.copy()
    some = updates > 0
    mean[some] = (last[some] - first[some]) / updates[some]
    visible = tl.update_time <= at
    site = tl.update_site[visible]
    squares = np.bincount(site, weights=(tl.update_gap[visible] - mean[site]) ** 2, minlength=n)
    sd = np.zeros(n)
    several = updates > 1
    sd[several] = np.sqrt(squares[several] / (updates[several] - 1))
    return mean, sd


def _check_times(values: ArrayLike) -> FloatArray:
    try:
        t = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"times must be numbers (days): {exc}") from None
    if t.ndim != 1:
        raise ValueError(f"times must be one-dimensional; got shape {t.shape}")
    if not np.all(np.isfinite(t)):
        i = int(np.argmax(~np.isfinite(t)))
        raise ValueError(f"times must be finite; times[{i}] = {float(t[i])}")
    return t


def _check_flags(values: ArrayLike, size: int) -> BoolArray:
    f = np.asarray(values)
    if f.ndim != 1 or f.size != size:
        raise ValueError(f"flags must have one entry per observation: {size}; got shape {f.shape}")
    if f.dtype != np.bool_ and f.size:
        if f.dtype.kind not in "iuf" or not np.all((f == 0) | (f == 1)):
            raise ValueError("flags must hold booleans (True/False or 0/1)")
    return f.astype(np.bool_)


def _check_counts(values: ArrayLike, size: int, name: str) -> FloatArray:
    counts = np.asarray(values, dtype=np.float64)
    if counts.shape != (size,):
        raise ValueError(f"{name} must have one entry per observation: {size}; got {counts.shape}")
    if not (np.all(np.isfinite(counts)) and np.all(counts >= 0)):
        raise ValueError(f"{name} must be finite and non-negative")
    return counts


def _check_ids(values: ArrayLike, size: int, name: str) -> IntArray:
    ids = np.asarray(values)
    if ids.shape != (size,):
        raise ValueError(f"{name} must have one entry per observation: {size}; got {ids.shape}")
    if ids.size and (ids.dtype.kind not in "iu" or ids.min() < 0):
        raise ValueError(f"{name} must hold non-negative integer ids")
    return ids.astype(np.int64)
