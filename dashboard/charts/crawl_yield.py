"""The list's own yield over the last weeks, as a Plotly figure — pure (stdlib only).

For each handed-off list (one x position per list, at its date): the listed sites the library's
crawl reached and, of them, those that had changed since HACS's newest copy before the crawl,
as bars side by side; beside them, as lines with markers, the changes a round-robin list of the
same size (oldest copy first) was expected to find and the changes HACS's own list expected
(the sum of its probabilities), both by the posterior. Hover boxes give each list's size.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from dashboard.charts.style import (
    BLUE,
    DARK_GREY,
    ORANGE,
    SKY_BLUE,
    Figure,
    axis,
    hatch,
    layout,
    legend_below,
    plain_text,
)

__all__ = ["YieldPoint", "yield_figure"]


@dataclass(frozen=True)
class YieldPoint:
    """One handed-off list: its date (ISO), sites listed, reached and changed (None while not
    counted yet), and the two expectations (round-robin's None when unknown)."""

    day: str
    listed: int
    reached: int | None
    changed: int | None
    expected: float
    round_robin: float | None


def yield_figure(points: Sequence[YieldPoint]) -> Figure:
    """Bars of sites reached and changed per list, lines of the expected changes (see the
    module). Raises ``ValueError`` for counts that cannot be: more changed than reached, more
    reached than listed."""
    for point in points:
        reached = point.reached or 0
        if (point.changed or 0) > reached or reached > point.listed:
            raise ValueError(f"the list of {point.day} has changed ≤ reached ≤ listed broken")
    traces = _yield_traces(points)
    return {
        "data": traces,
        # No height: the page's CSS gives the chart box its height (taller on a phone).
        "layout": layout(
            barmode="group",
            bargap=0.25,
            margin={"l": 56, "r": 16, "t": 10, "b": 10},
            hovermode="x unified",
            legend=legend_below(),
            xaxis=axis("Date of the list handed off", type="date"),
            yaxis=axis("Sites", rangemode="tozero", fixedrange=True),
        ),
    }


def _yield_traces(points: Sequence[YieldPoint]) -> list[dict[str, Any]]:
    """The reached and changed bars and the two lines of expected changes."""
    days = [p.day for p in points]
    sizes = [plain_text(f"{p.listed:,} sites listed") for p in points]
    return [
        _bars(
            "Listed sites the crawl reached",
            days,
            [p.reached for p in points],
            SKY_BLUE,
            sizes,
            hatched=False,
        ),
        _bars(
            "… of them changed since HACS's copy",
            days,
            [p.changed for p in points],
            BLUE,
            sizes,
            hatched=True,
        ),
        _line(
            "Round-robin list: expected changes",
            days,
            [p.round_robin for p in points],
            ORANGE,
            "square",
            "dash",
        ),
        _line(
            "HACS's list: expected changes (Σ p)",
            days,
            [p.expected for p in points],
            DARK_GREY,
            "circle-open",
            "dot",
        ),
    ]


def _bars(
    name: str,
    days: list[str],
    values: Sequence[int | None],
    colour: str,
    sizes: list[str],
    *,
    hatched: bool,
) -> dict[str, Any]:
    marker: dict[str, Any] = {"color": colour, "line": {"color": colour, "width": 1}}
    if hatched:  # not colour alone: the changed sites' bars are hatched too
        marker["pattern"] = hatch(colour)
    return {
        "type": "bar",
        "name": plain_text(name),
        "x": days,
        "y": [v if v is not None else 0 for v in values],
        "customdata": sizes,
        "hovertemplate": "%{y} (%{customdata})<extra>%{fullData.name}</extra>",
        "marker": marker,
    }


def _line(
    name: str, days: list[str], values: Sequence[float | None], colour: str, symbol: str, dash: str
) -> dict[str, Any]:
    return {
        "type": "scatter",
        "mode": "lines+markers",
        "name": plain_text(name),
        "x": days,
        # JSON has no NaN: an unknown value is null, which Plotly leaves as a gap.
        "y": [None if v is None else round(v, 3) for v in values],
        "hovertemplate": "%{y:.1f}<extra>%{fullData.name}</extra>",
        "line": {"color": colour, "dash": dash, "width": 2},
        "marker": {"color": colour, "symbol": symbol, "size": 8},
        "connectgaps": False,
    }
