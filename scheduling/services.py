"""Estimates and crawl lists from stored captures: glue between the ORM and the pure core.

Observation data is read once per call as flat NumPy arrays (``timelines_load``), window-relative
update flags are derived with array operations from each observation's ``page_index`` and
``link_floor`` (DESIGN's speed hint), and every site is estimated in one call to
``hacs.estimators.estimate_many``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import numpy as np
from django.db import transaction
from django.db.models import QuerySet
from numpy.typing import NDArray

from archive.models import Capture, Site
from hacs.estimators import estimate_many
from scheduling.models import Estimate, Level, Method

SECONDS_PER_DAY = 86400.0
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def to_days(moment: datetime) -> float:
    return (moment - EPOCH).total_seconds() / SECONDS_PER_DAY


def from_days(days: float) -> datetime | None:
    if not np.isfinite(days):
        return None
    return EPOCH + timedelta(days=float(days))


@dataclass(frozen=True)
class Timelines:
    """Observation timelines of many sites, back to back (site i owns offsets[i]:offsets[i+1])."""

    site_ids: NDArray[np.int64]
    times: NDArray[np.float64]
    updated: NDArray[np.bool_]
    offsets: NDArray[np.int64]


def window_update_flags(
    group: NDArray[np.int64], page_index: NDArray[np.int64], link_floor: NDArray[np.int64]
) -> NDArray[np.bool_]:
    """Rule 3 inside a window: an observation is an update when it is not its page's first in
    the window (index j) and holds a link no observation since j held (``link_floor < j``).

    ``group`` numbers the (site, page) each observation belongs to.
    """
    if group.size == 0:
        return np.zeros(0, dtype=bool)
    first = np.full(int(group.max()) + 1, np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(first, group, page_index)
    j = first[group]
    return (page_index > j) & (link_floor < j)


def observations_queryset(
    *, level: str, start: datetime | None, end: datetime | None, site_ids: Sequence[int] | None
) -> QuerySet[Capture]:
    rows = Capture.objects.filter(is_observation=True, page_index__isnull=False)
    if level == Level.HOMEPAGE:
        rows = rows.filter(depth=0)
    if start is not None:
        rows = rows.filter(timestamp__gte=start)
    if end is not None:
        rows = rows.filter(timestamp__lte=end)
    if site_ids is not None:
        rows = rows.filter(site_id__in=list(site_ids))
    return rows


def timelines_load(
    *,
    level: str,
    start: datetime | None = None,
    end: datetime | None = None,
    site_ids: Sequence[int] | None = None,
) -> Timelines:
    """The level's observation timelines in [start, end], with window-relative update flags."""
    rows = observations_queryset(level=level, start=start, end=end, site_ids=site_ids)
    data = list(rows.values_list("site_id", "page_key", "timestamp", "page_index", "link_floor"))
    if not data:
        empty_i = np.zeros(0, dtype=np.int64)
        return Timelines(empty_i, np.zeros(0), np.zeros(0, dtype=bool), np.zeros(1, np.int64))
    site = np.fromiter((r[0] for r in data), dtype=np.int64, count=len(data))
    pages: dict[tuple[int, str], int] = {}
    group = np.fromiter(
        (pages.setdefault((r[0], r[1]), len(pages)) for r in data), dtype=np.int64, count=len(data)
    )
    times = np.fromiter((to_days(r[2]) for r in data), dtype=np.float64, count=len(data))
    page_index = np.fromiter((r[3] for r in data), dtype=np.int64, count=len(data))
    floor = np.fromiter((r[4] for r in data), dtype=np.int64, count=len(data))
    flags = window_update_flags(group, page_index, floor)
    # Each site's timeline in time order; page order breaks ties so runs are reproducible.
    order = np.lexsort((page_index, group, times, site))
    site, times, flags = site[order], times[order], flags[order]
    starts = np.flatnonzero(np.r_[True, site[1:] != site[:-1]])
    offsets = np.r_[starts, site.size].astype(np.int64)
    return Timelines(site[starts], times, flags, offsets)


def estimates_for_window(
    *,
    level: str,
    method: str,
    start: datetime | None = None,
    end: datetime | None = None,
    site_ids: Sequence[int] | None = None,
) -> dict[int, Estimate]:
    """Unsaved estimates, one per site with observations in the window."""
    timelines = timelines_load(level=level, start=start, end=end, site_ids=site_ids)
    result = estimate_many(timelines.times, timelines.updated, timelines.offsets, method=method)
    estimates: dict[int, Estimate] = {}
    for i, site_id in enumerate(timelines.site_ids.tolist()):
        rate = float(result.rate[i])
        estimates[site_id] = Estimate(
            site_id=site_id,
            level=level,
            method=method,
            window_start=start,
            window_end=end,
            rate=rate if np.isfinite(rate) else None,
            tau=from_days(float(result.tau[i])),
            tau_days=float(result.tau[i]) if np.isfinite(result.tau[i]) else None,
            observations=int(result.observations[i]),
            updates=int(result.updates[i]),
        )
    return estimates


def estimates_recompute(
    *,
    levels: Iterable[str] = (Level.HOMEPAGE, Level.WEBSITE),
    methods: Iterable[str] = (Method.OBSERVED, Method.INTERPOLATED),
    start: datetime | None = None,
    end: datetime | None = None,
    site_ids: Sequence[int] | None = None,
) -> int:
    """Compute and store estimates for the sites (all when None); returns rows written.

    Sites without observations in the window get an estimate with an unknown rate, so that the
    dashboard can say "insufficient history" rather than show a stale value.
    """
    targets = (
        list(Site.objects.values_list("pk", flat=True)) if site_ids is None else list(site_ids)
    )
    written = 0
    for level in levels:
        for method in methods:
            found = estimates_for_window(
                level=level, method=method, start=start, end=end, site_ids=site_ids
            )
            rows = [
                found.get(site_id)
                or Estimate(
                    site_id=site_id, level=level, method=method, window_start=start,
                    window_end=end, rate=None, tau=None, tau_days=None, observations=0,
                    updates=0,
                )
                for site_id in targets
            ]  # fmt: skip
            with transaction.atomic():
                Estimate.objects.bulk_create(
                    rows,
                    batch_size=2000,
                    update_conflicts=True,
                    unique_fields=["site", "level", "method"],
                    update_fields=[
                        "window_start", "window_end", "rate", "tau", "tau_days", "observations",
                        "updates", "computed_at",
                    ],
                )  # fmt: skip
            written += len(rows)
    return written
