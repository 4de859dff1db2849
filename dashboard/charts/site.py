"""Plotly figures of the site page and the overview, built from plain lists — pure (stdlib only).

Each public function returns a figure as a plain ``dict`` (``{"data": [...], "layout": {...}}``)
that a template embeds with ``json_script`` and a page's small JS file hands to
``Plotly.newPlot``. Fonts, colours, axes and layouts come from ``dashboard.charts.style``,
shared with the Evaluation page's figures (``dashboard.charts.evaluation``). Nothing here reads
the database or lets archive text act as markup: hover text goes into ``customdata`` through
:func:`~dashboard.charts.style.plain_text`, and Plotly draws it as SVG text.

Times are ISO 8601 strings in UTC without an offset (``"2017-03-04 05:06:07"``), the form
Plotly's date axes read without shifting them to the browser's time zone. Every number in a
figure is finite, because ``JSON.parse`` rejects ``NaN`` and ``Infinity``.

* :func:`timeline_figure` — one site's captures, detected updates and interpolated update
  instants, two rows per level (homepage, website);
* :func:`probability_figure` — g(λ, τ, t, e) against t for the site's estimates;
* :func:`interval_histogram` — the distribution of 1/λ on a log axis (HACS paper, Figure 4).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from dashboard.charts.style import (
    BLUE,
    CURVE_COLOURS,
    DARK_GREY,
    GREEN,
    GREY,
    ORANGE,
    PAIR_COLOURS,
    PURPLE,
    SKY_BLUE,
    VERMILLION,
    Figure,
    axis,
    hatch,
    layout,
    legend_above,
    plain_text,
)

__all__ = [
    "CAPTURE_GROUPS",
    "CURVE_COLOURS",
    "INTERPOLATED_STYLE",
    "UPDATE_STYLE",
    "Curve",
    "Figure",
    "LevelTimeline",
    "Mark",
    "interval_histogram",
    "log_ticks",
    "probability_figure",
    "timeline_figure",
]

# Each kind has its own colour from the shared palette and its own marker shape, so that the
# kinds differ by more than colour.
CAPTURE_GROUPS: dict[str, tuple[str, str, str]] = {
    # group: (legend label, colour, marker symbol)
    "observation": ("Observation (200 HTML)", BLUE, "circle"),
    "revisit": ("Revisit (same content)", SKY_BLUE, "circle-open"),
    "redirect_error": ("Redirect or error", ORANGE, "x-thin-open"),
    "other": ("Other (not HTML, orphan revisit…)", GREY, "square-open"),
    # An observation or revisit the library's own crawler made (read back after a hand-off,
    # or from the crawl inbox), beside the archive's: its hover box names its source.
    "crawl": ("The library's crawl (observation or revisit)", GREEN, "star"),
}
UPDATE_STYLE = ("Detected update", VERMILLION, "diamond")
INTERPOLATED_STYLE = ("Interpolated update instant", PURPLE, "triangle-up")


@dataclass(frozen=True)
class Mark:
    """One point on a timeline: when (ISO 8601, UTC) and what the hover box says."""

    time: str
    text: str


@dataclass(frozen=True)
class LevelTimeline:
    """What one level (homepage or website) of a site shows on the timeline.

    ``captures`` maps a key of :data:`CAPTURE_GROUPS` to that group's captures.
    """

    name: str
    captures: Mapping[str, Sequence[Mark]] = field(default_factory=dict)
    updates: Sequence[Mark] = ()
    interpolated: Sequence[Mark] = ()


@dataclass(frozen=True)
class Curve:
    """One line of the probability figure: ``values[i]`` is the probability at ``dates[i]``."""

    name: str
    values: Sequence[float]


def timeline_figure(levels: Sequence[LevelTimeline]) -> Figure:
    """A site's timeline: per level a row of captures and a row of updates.

    The captures row shows every capture coloured by its group; the updates row shows the
    detected updates and the interpolated update instants (HACS paper, Section II-B2: the
    midpoint between an update and the observation before it). Legend entries are shared
    across levels, so clicking one hides that kind everywhere.
    """
    unknown = {g for level in levels for g in level.captures if g not in CAPTURE_GROUPS}
    if unknown:
        raise ValueError(f"unknown capture groups {sorted(unknown)}; use {list(CAPTURE_GROUPS)}")
    rows: list[str] = []
    traces: list[dict[str, Any]] = []
    shown: set[str] = set()

    def add(group: str, style: tuple[str, str, str], row: int, marks: Sequence[Mark]) -> None:
        if marks:
            traces.append(_marker_trace(group, style, row, marks, first=group not in shown))
            shown.add(group)

    for level in levels:
        # Rows are numbered (and labelled by the axis ticks) rather than named on every point:
        # a site's timeline can hold thousands of points, and the JSON stays small.
        capture_row, update_row = len(rows), len(rows) + 1
        name = plain_text(level.name)
        rows += [f"{name} · captures", f"{name} · updates"]
        for group, style in CAPTURE_GROUPS.items():
            add(group, style, capture_row, level.captures.get(group, ()))
        # Interpolated instants are drawn last, a little smaller, so that one lying next to its
        # update (a short interval) stays visible on top of the update's marker.
        add("update", UPDATE_STYLE, update_row, level.updates)
        add("interpolated", INTERPOLATED_STYLE, update_row, level.interpolated)
    return {"data": traces, "layout": _timeline_layout(rows)}


def _marker_trace(
    group: str, style: tuple[str, str, str], row: int, marks: Sequence[Mark], *, first: bool
) -> dict[str, Any]:
    """One kind of mark on one row of the timeline; ``first`` shows it in the legend."""
    label, colour, symbol = style
    filled = not symbol.endswith("-open")
    return {
        "type": "scatter",
        "mode": "markers",
        "name": label,
        "legendgroup": group,
        "showlegend": first,
        "x": [m.time for m in marks],
        "y": [row] * len(marks),
        # Archive data (URLs, statuses): shown as text, never read as markup.
        "customdata": [plain_text(m.text) for m in marks],
        "hovertemplate": "%{x|%Y-%m-%d %H:%M} UTC<br>%{customdata}<extra>%{fullData.name}</extra>",
        "marker": {
            "color": colour,
            "symbol": symbol,
            "size": {"update": 12, "interpolated": 9}.get(group, 8),
            "opacity": 0.85,
            "line": {"width": 1.5 if not filled else 0.5, "color": colour},
        },
    }


def _timeline_layout(rows: list[str]) -> dict[str, Any]:
    """The timeline's layout: one labelled row per entry of ``rows``, the first on top."""
    return layout(
        height=110 + 44 * len(rows),
        # The row labels, the legend and the axis title take the room they need
        # (automargin), which on a phone is more than on a laptop.
        margin={"l": 20, "r": 20, "t": 10, "b": 10},
        showlegend=True,
        legend=legend_above(),
        xaxis=axis("Time (UTC)", type="date", showgrid=True),
        yaxis=axis(
            tickvals=list(range(len(rows))),
            ticktext=rows,
            range=[len(rows) - 0.5, -0.5],  # first row on top
            fixedrange=True,
            showgrid=True,
        ),
    )


def probability_figure(
    dates: Sequence[str], curves: Sequence[Curve], *, e_days: float, theta: float | None = None
) -> Figure:
    """The probability of a change by t + e as t runs over ``dates`` (DESIGN.md rule 7).

    One line per curve; a dashed line marks θ, the crawl list's default threshold, when given.
    Curves whose values are not all finite probabilities raise ``ValueError``.
    """
    if not math.isfinite(e_days) or e_days < 0:
        raise ValueError(f"e_days must be a non-negative number; got {e_days}")
    if theta is not None and not 0 <= theta <= 1:
        raise ValueError(f"theta must lie in [0, 1]; got {theta}")
    traces = [_curve_trace(i, curve, dates) for i, curve in enumerate(curves)]
    shapes, annotations = _theta_line(theta) if theta is not None and dates else ([], [])
    return {
        "data": traces,
        # No height: the page's CSS gives the chart box its height (taller on a phone, where
        # the legend wraps to more rows).
        "layout": layout(
            margin={"l": 60, "r": 20, "t": 10, "b": 10},
            hovermode="x unified",
            xaxis=axis("Date t", type="date"),
            yaxis=axis(
                f"P(change by t + {e_days:g} d)", range=[0, 1.02], tickformat=".1f", fixedrange=True
            ),
            shapes=shapes,
            annotations=annotations,
        ),
    }


def _curve_trace(i: int, curve: Curve, dates: Sequence[str]) -> dict[str, Any]:
    """The ``i``-th curve's line; ``ValueError`` unless it holds one probability per date."""
    if len(curve.values) != len(dates):
        raise ValueError(
            f"curve {curve.name!r} has {len(curve.values)} values for {len(dates)} dates"
        )
    if not all(math.isfinite(v) and 0 <= v <= 1 for v in curve.values):
        raise ValueError(f"curve {curve.name!r} holds values outside [0, 1]")
    return {
        "type": "scatter",
        "mode": "lines",
        "name": plain_text(curve.name),
        "x": list(dates),
        "y": [round(v, 6) for v in curve.values],
        "line": {"color": CURVE_COLOURS[i % len(CURVE_COLOURS)], "width": 2.5},
        "hovertemplate": "t = %{x|%Y-%m-%d}<br>p = %{y:.3f}<extra>%{fullData.name}</extra>",
    }


def _theta_line(theta: float) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The dashed line at θ across the plot and its label (shapes, annotations)."""
    shape = {
        "type": "line",
        "xref": "paper",
        "x0": 0,
        "x1": 1,
        "yref": "y",
        "y0": theta,
        "y1": theta,
        "line": {"color": DARK_GREY, "width": 1.5, "dash": "dash"},
    }
    annotation = {
        "xref": "paper",
        "x": 1,
        "xanchor": "right",
        "y": theta,
        "yanchor": "bottom",
        "text": f"θ = {theta:g}",
        "showarrow": False,
        "font": {"color": DARK_GREY},
    }
    return [shape], [annotation]


def interval_histogram(
    intervals_days: Sequence[float] | Mapping[str, Sequence[float]], *, bins_per_decade: int = 5
) -> Figure:
    """Histogram of mean update intervals 1/λ in days on a log axis (HACS paper, Figure 4).

    ``intervals_days`` is one list, or a mapping from a series name (``"Homepage"``,
    ``"Website"``) to a list, drawn side by side in each bin (two series in
    :data:`~dashboard.charts.style.PAIR_COLOURS`, the second also hatched, so that neither colour
    nor overlap carries the difference alone). Values that are not positive and finite (λ = 0
    gives an infinite interval, an unknown λ none) are left out and counted in the legend.
    Bins are equal in log10 width (``bins_per_decade`` per factor of ten) and computed here
    rather than by Plotly, whose histograms bin in linear space even on a log axis; the x axis
    therefore shows log10(days) with ticks at 1, 2, 5, 10, 20, 50, … days
    (:func:`log_ticks`).
    """
    if bins_per_decade < 1:
        raise ValueError(f"bins_per_decade must be at least 1; got {bins_per_decade}")
    series: Mapping[str, Sequence[float]] = (
        intervals_days if isinstance(intervals_days, Mapping) else {"Sites": intervals_days}
    )
    logs: dict[str, list[float]] = {}
    labels: dict[str, str] = {}
    for name, values in series.items():
        finite = [float(v) for v in values if math.isfinite(v) and v > 0]
        logs[name] = [math.log10(v) for v in finite]
        labels[name] = _series_label(name, finite, left_out=len(values) - len(finite))
    bins = _LogBins.covering([x for kept in logs.values() for x in kept], bins_per_decade)
    colours = PAIR_COLOURS if len(logs) <= len(PAIR_COLOURS) else CURVE_COLOURS
    traces = [
        bins.bar_trace(labels[name], kept, i, len(logs), colours[i % len(colours)])
        for i, (name, kept) in enumerate(logs.items())
    ]
    low, high = bins.low - bins.width / 2, bins.high + bins.width / 2
    ticks = log_ticks(low, high)
    return {
        "data": traces,
        # No height: the page's CSS gives the chart box its height.
        "layout": layout(
            barmode="overlay",  # the offsets above place the bars side by side
            bargap=0,
            margin={"l": 60, "r": 20, "t": 10, "b": 10},
            xaxis=axis(
                "Mean update interval 1/λ (days, log scale)",
                tickvals=[round(math.log10(t), 9) for t in ticks],
                ticktext=[_format_days(t, unit=False) for t in ticks],
                range=[low, high],
            ),
            yaxis=axis("Sites", rangemode="tozero"),
        ),
    }


def _series_label(name: str, finite: list[float], *, left_out: int) -> str:
    """A histogram series' legend entry: its name, median and the values left out."""
    label = plain_text(name)
    if finite:
        label += f" (median {_format_days(_median(finite))})"
    if left_out:
        label += f"; {left_out} without a finite 1/λ"
    return label


@dataclass(frozen=True)
class _LogBins:
    """Bins of equal log10 width from ``low`` to ``high`` (log10 days)."""

    low: float
    high: float
    width: float
    count: int

    @classmethod
    def covering(cls, logs: Sequence[float], bins_per_decade: int) -> _LogBins:
        """The bins, aligned on multiples of their width, that hold every value of ``logs``."""
        width = 1.0 / bins_per_decade
        if logs:
            low = math.floor(min(logs) * bins_per_decade) / bins_per_decade
            high = math.floor(max(logs) * bins_per_decade) / bins_per_decade + width
        else:
            low, high = 0.0, 1.0
        return cls(low=low, high=high, width=width, count=max(1, round((high - low) / width)))

    def bar_trace(
        self, label: str, logs: Sequence[float], i: int, series: int, colour: str
    ) -> dict[str, Any]:
        """The bars of the ``i``-th of ``series`` series, each bin's series side by side, a
        little apart, as one group of bars (every other series hatched)."""
        nbins, width, low = self.count, self.width, self.low
        edges = [low + k * width for k in range(nbins + 1)]
        share = width * 0.9 / max(1, series)
        counts = [0] * nbins
        for x in logs:
            counts[min(nbins - 1, max(0, int((x - low) / width + 1e-9)))] += 1
        marker: dict[str, Any] = {"color": colour, "line": {"color": colour, "width": 1}}
        if i % 2:
            marker["pattern"] = hatch(colour)
        return {
            "type": "bar",
            "name": label,
            "x": [round(edges[k] + width / 2, 9) for k in range(nbins)],
            "y": counts,
            "width": [round(share, 9)] * nbins,
            "offset": round(-width * 0.45 + i * share, 9),
            "customdata": [
                f"{_format_days(10 ** edges[k], unit=False)}–{_format_days(10 ** edges[k + 1])}"
                for k in range(nbins)
            ],
            "hovertemplate": "1/λ %{customdata}: %{y} sites<extra>%{fullData.name}</extra>",
            "marker": marker,
        }


def log_ticks(low: float, high: float) -> list[float]:
    """Ticks for a log10 axis from ``low`` to ``high`` (log10 units): 1, 2 and 5 times each
    power of ten when the axis spans at most four decades, else 1 and 3 times (at most six
    decades), else the powers of ten alone — so that the labels never crowd."""
    decades = high - low
    steps = (1.0, 2.0, 5.0) if decades <= 4 else (1.0, 3.0) if decades <= 6 else (1.0,)
    ticks = []
    for power in range(math.floor(low), math.ceil(high) + 1):
        for step in steps:
            value = step * 10.0**power
            if low - 1e-9 <= math.log10(value) <= high + 1e-9:
                ticks.append(value)
    return ticks


def _median(values: Sequence[float]) -> float:
    """The median of the intervals, named in the legend (the HACS paper's Figure 4 quotes it)."""
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def _format_days(days: float, *, unit: bool = True) -> str:
    """Days for people: 3 significant figures below 100, whole numbers with separators above."""
    text = f"{days:,.0f}" if days >= 100 else f"{days:.3g}"
    return f"{text} d" if unit else text
