"""The HACS paper's Figure 6: interpolated-update intervals against the Poisson expectation.

Part of :mod:`hacs.evaluation`; pure (NumPy and the estimation core). HACS paper, Section II-D
(Poisson Distribution) and Figure 6. Our reading:

Each site's λ̃ is estimated over the whole period [start, end] (updates
flagged relative to that window, DESIGN.md rules 3, 4 and 6); its interpolated-update intervals
Δ̃t are the gaps between consecutive interpolated update instants (the midpoints). Sites are
binned by 1/λ̃ (bins doubling from 7 days); per bin, the intervals' histogram on log-spaced d
bins is set against the Poisson expectation: the exponential interval distribution of each
site's own λ̃, mixed in proportion to the site's number of intervals, conditioned on d ≤ the
period's length (no longer interval can be seen). Both are shown as densities (per day).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from hacs.estimators import accesses, estimate_many, update_instants
from hacs.evaluation.table import FloatArray, IntArray, ObservationTable
from hacs.updates import timeline_order, window_update_flags

__all__ = ["D_BINS_PER_DOUBLING", "INTERVAL_BIN_EDGES", "interval_distribution"]

INTERVAL_BIN_EDGES = (7.0, 14.0, 28.0, 56.0, 112.0, 224.0, 448.0)  # 1/λ̃ bins, days
D_BINS_PER_DOUBLING = 2


def interval_distribution(
    table: ObservationTable, *, start: float, end: float
) -> list[dict[str, Any]]:
    """The Figure 6 check for one level over [start, end] (days); see the module docstring.

    One dict per 1/λ̃ bin that holds sites with intervals: ``low``, ``high`` (days), ``sites``,
    ``intervals`` and, per d bin (``d_edges``), ``observed`` and ``expected`` densities (per day)
    and ``mean_interval`` (the bin's mean 1/λ̃, the paper's vertical line).
    """
    rate, midpoints, owner = _interpolated_updates(table, start=start, end=end)
    gaps_owner = owner[1:][owner[1:] == owner[:-1]]
    gaps = np.diff(midpoints)[owner[1:] == owner[:-1]]
    counts = np.bincount(gaps_owner, minlength=rate.size)
    span = end - start
    top = max(span, INTERVAL_BIN_EDGES[-1])
    n_edges = int(math.ceil(math.log2(top) * D_BINS_PER_DOUBLING)) + 1
    d_edges = np.exp2(np.arange(n_edges) / D_BINS_PER_DOUBLING)  # 1, √2, 2, … days
    d_edges[0] = 0.0  # the first bin also holds intervals under a day
    widths = np.diff(d_edges)
    with np.errstate(divide="ignore"):
        interval = np.where(rate > 0, 1.0 / rate, np.inf)
    out: list[dict[str, Any]] = []
    for low, high in zip(INTERVAL_BIN_EDGES[:-1], INTERVAL_BIN_EDGES[1:], strict=True):
        members = np.flatnonzero((interval >= low) & (interval < high) & (counts > 0))
        if members.size == 0:
            continue
        chosen = np.isin(gaps_owner, members)
        observed, _ = np.histogram(gaps[chosen], bins=d_edges)
        total = observed.sum()
        lam = rate[members][:, None]
        weight = counts[members][:, None].astype(np.float64)
        # Conditioned on d ≤ the period's length: no longer interval fits in it.
        clipped = np.minimum(d_edges, span)
        mass = np.exp(-lam * clipped[:-1]) - np.exp(-lam * clipped[1:])
        mass /= -np.expm1(-lam * span)
        expected = (weight * mass).sum(axis=0) / weight.sum()
        out.append(
            {
                "low": low,
                "high": high,
                "sites": int(members.size),
                "intervals": int(total),
                "mean_interval": float(interval[members].mean()),
                "d_edges": d_edges.tolist(),
                "observed": (observed / max(total, 1) / widths).tolist(),
                "expected": (expected / widths).tolist(),
            }
        )
    return out


def _interpolated_updates(
    table: ObservationTable, *, start: float, end: float
) -> tuple[FloatArray, FloatArray, IntArray]:
    """λ̃ of every site over [start, end], and every interpolated update instant with its site.

    HACS paper, Section II-B2 (the interpolated update instants, and λ̃ by Eq. 5 or Eq. 4 on the
    intervals between them) and Section II-D (those intervals Δ̃t). Updates are flagged relative
    to the window (DESIGN rule 3), the pages merged into each site's timeline (rule 4),
    observations at one instant made one access, and each update moved to the midpoint with the
    access before it (rule 6) — each by the core's one function.
    """
    inside = (table.time >= start) & (table.time <= end)
    site, page, when = table.site[inside], table.page[inside], table.time[inside]
    flags = window_update_flags(page, table.page_index[inside], table.link_floor[inside])
    order = timeline_order(site, when)
    site, when, flags = site[order], when[order], flags[order]
    offsets = np.zeros(table.site_count + 1, dtype=np.int64)
    np.cumsum(np.bincount(site, minlength=table.site_count), out=offsets[1:])
    estimates = estimate_many(when, flags, offsets, method="interpolated")
    midpoints, owner = update_instants(accesses(when, flags, offsets), "interpolated")
    return estimates.rate, midpoints, owner
