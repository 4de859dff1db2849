"""Estimates from stored captures: glue between the observation loader and the pure core.

Observation data is read once per call as flat NumPy arrays (``timelines_load``), window-relative
update flags are derived with array operations from each observation's ``page_index`` and
``link_floor`` (DESIGN's speed hint), and every site is estimated in one call to
``hacs.estimators.estimate_many``. :class:`RecomputeOptions` carries the ``recompute_estimates``
command's options to a background job unchanged.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

import numpy as np
from django.db import transaction
from django.db.models import ExpressionWrapper, F, FloatField, Value
from numpy.typing import NDArray

from archive.models import Site
from hacs.clock import day_end, day_start, from_days
from hacs.estimators import estimate_many
from hacs.updates import timeline_order, window_update_flags
from scheduling.models import Estimate, Level, Method
from scheduling.observations import observations_load


@dataclass(frozen=True)
class Timelines:
    """Observation timelines of many sites, back to back (site i owns offsets[i]:offsets[i+1])."""

    site_ids: NDArray[np.int64]
    times: NDArray[np.float64]
    updated: NDArray[np.bool_]
    offsets: NDArray[np.int64]


def timelines_load(
    *,
    level: str,
    start: datetime | None = None,
    end: datetime | None = None,
    site_ids: Sequence[int] | None = None,
) -> Timelines:
    """The level's observation timelines in [start, end], flagged relative to that window.

    Rule 3 flags each observation for its own page within the window (its first observation
    there is the baseline); rule 4 merges each site's pages in time order (page, then page
    index, break ties so that runs are reproducible).
    """
    found = observations_load(level=level, start=start, end=end, site_ids=site_ids)
    if found.time.size == 0:
        empty_i = np.zeros(0, dtype=np.int64)
        return Timelines(empty_i, np.zeros(0), np.zeros(0, dtype=bool), np.zeros(1, np.int64))
    flags = window_update_flags(found.page, found.page_index, found.link_floor)
    order = timeline_order(found.site_pk, found.time, found.page, found.page_index)
    site, times, flags = found.site_pk[order], found.time[order], flags[order]
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


@dataclass(frozen=True)
class RecomputeOptions:
    """The ``recompute_estimates`` command's options, as a job receives them (JSON-safe)."""

    levels: tuple[str, ...] = tuple(Level.values)
    methods: tuple[str, ...] = tuple(Method.values)
    start: date | None = None
    end: date | None = None

    def as_kwargs(self) -> dict[str, Any]:
        """Keyword arguments of :func:`estimates_recompute`: whole days, first to last."""
        return {
            "levels": self.levels,
            "methods": self.methods,
            "start": day_start(self.start),
            "end": day_end(self.end),
        }

    def to_json(self) -> dict[str, Any]:
        return {
            "levels": list(self.levels),
            "methods": list(self.methods),
            "start": self.start.isoformat() if self.start else None,
            "end": self.end.isoformat() if self.end else None,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RecomputeOptions:
        start, end = data.get("start"), data.get("end")
        return cls(
            levels=tuple(data.get("levels") or Level.values),
            methods=tuple(data.get("methods") or Method.values),
            start=date.fromisoformat(start) if start else None,
            end=date.fromisoformat(end) if end else None,
        )

    def describe(self) -> str:
        """How the Jobs page names the recompute."""
        what = "all sites"
        if len(self.levels) == 1 or len(self.methods) == 1:
            what += f", {' + '.join(self.levels)} / {' + '.join(self.methods)}"
        if self.start or self.end:
            what += f", {self.start or 'the first capture'} to {self.end or 'the last'}"
        return what


def exposure_expression(*, t_days: float, e_days: float, prefix: str = "") -> ExpressionWrapper:
    """``hacs.estimators.change_exposure`` of a stored estimate, in SQL: λ (t + e − τ).

    Pages that sort or filter thousands of sites by their probability of change do it in the
    database on this product, which g = 1 − exp(−·) preserves; ``prefix`` reaches the estimate
    through a relation (``"est__"``).
    """
    return ExpressionWrapper(
        F(f"{prefix}rate") * (Value(t_days + e_days) - F(f"{prefix}tau_days")),
        output_field=FloatField(),
    )
