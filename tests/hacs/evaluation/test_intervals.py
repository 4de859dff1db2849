"""hacs.evaluation.intervals: the Figure 6 check (HACS Section II-D)."""

from __future__ import annotations

import numpy as np
import pytest

from hacs.evaluation import ObservationTable, interval_distribution


def test_interval_distribution_uses_the_interpolated_update_midpoints() -> None:
    # One site, one page: observations at 0, 10, 20, 30, 40, 50 days; updates at 20, 30 and 50
    # (brand-new links). Midpoints 15, 25 and 45: intervals 10 and 20 days.
    times = [0.0, 10.0, 20.0, 30.0, 40.0, 50.0]
    floors = [-1, 0, -1, -1, 3, -1]
    table = ObservationTable(
        site=[0] * 6, page=[0] * 6, time=times, page_index=list(range(6)), link_floor=floors
    )
    [group] = interval_distribution(table, start=0.0, end=60.0)
    assert group["sites"] == 1 and group["intervals"] == 2
    edges = np.array(group["d_edges"])
    widths = np.diff(edges)
    observed = np.array(group["observed"]) * widths  # back to probabilities per bin
    assert observed.sum() == pytest.approx(1.0)
    for d in (10.0, 20.0):
        k = int(np.searchsorted(edges, d, side="right")) - 1
        assert observed[k] == pytest.approx(0.5)
    assert (np.array(group["expected"]) * widths).sum() == pytest.approx(1.0)
    assert group["low"] <= group["mean_interval"] < group["high"]


def test_poisson_updates_follow_the_expectation() -> None:
    """Seeded simulation: sites changing as Poisson processes, observed daily, give interval
    histograms close to the exponential expectation (Fig. 6's claim, on data where it holds)."""
    rng = np.random.default_rng(7)
    looks = np.arange(0.0, 1000.0, 0.25)  # four observations a day
    site, time, floor, index = [], [], [], []
    for s in range(300):
        changes = np.cumsum(rng.exponential(40.0, 60))
        seen = np.searchsorted(changes, looks, side="right")  # changes up to each look
        changed = np.r_[False, seen[1:] > seen[:-1]]
        k = np.arange(looks.size)
        site.extend([s] * looks.size)
        time.extend(looks.tolist())
        index.extend(k.tolist())
        floor.extend(np.where(changed | (k == 0), -1, k - 1).tolist())
    table = ObservationTable(site=site, page=site, time=time, page_index=index, link_floor=floor)
    groups = interval_distribution(table, start=0.0, end=999.0)
    big = max(groups, key=lambda g: g["intervals"])
    assert big["low"] <= 40 < big["high"] and big["intervals"] > 3000
    widths = np.diff(big["d_edges"])
    observed = np.array(big["observed"]) * widths
    expected = np.array(big["expected"]) * widths
    assert np.abs(observed - expected).sum() < 0.1  # total variation distance under 5%
