"""dashboard.charts.crawl_yield: the list's own yield as a figure, from plain values."""

from __future__ import annotations

import json

import pytest

from dashboard.charts.crawl_yield import YieldPoint, yield_figure


def test_the_figure_holds_reached_and_changed_bars_and_both_expectations() -> None:
    points = [
        YieldPoint("2026-11-23", 40, 35, 6, 4.2, 2.5),
        YieldPoint("2026-11-24", 40, None, None, 3.9, None),  # handed off, not counted yet
    ]
    figure = json.loads(json.dumps(yield_figure(points)))  # JSON as the page embeds it
    reached, changed, round_robin, hacs = figure["data"]
    assert (reached["type"], changed["type"]) == ("bar", "bar")
    assert reached["x"] == changed["x"] == ["2026-11-23", "2026-11-24"]
    assert (reached["y"], changed["y"]) == ([35, 0], [6, 0])
    assert round_robin["y"] == [2.5, None] and hacs["y"] == [4.2, 3.9]
    assert "Round-robin" in round_robin["name"] and "pattern" in changed["marker"]
    assert reached["customdata"] == ["40 sites listed", "40 sites listed"]
    assert figure["layout"]["xaxis"]["type"] == "date"


def test_counts_that_cannot_be_are_refused() -> None:
    with pytest.raises(ValueError, match="changed ≤ reached ≤ listed"):
        yield_figure([YieldPoint("2026-11-23", 10, 3, 4, 1.0, 1.0)])
    with pytest.raises(ValueError):
        yield_figure([YieldPoint("2026-11-23", 10, 11, 4, 1.0, 1.0)])


def test_names_from_nowhere_cannot_act_as_markup() -> None:
    figure = yield_figure([YieldPoint("2026-11-23", 3, 1, 0, 0.5, 0.2)])
    assert all("<" not in trace["name"] for trace in figure["data"])
