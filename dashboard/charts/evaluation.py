"""Plotly figures and the Table I view of an evaluation's results — pure (stdlib only).

Every function takes the results dict of ``hacs.evaluation.evaluate`` (as stored in
``EvaluationRun.results``, plus the ``intervals`` of ``hacs.evaluation.interval_distribution``
per level) or parts of it, and returns plain lists and dicts: Plotly figure dicts (``{"data":
[...], "layout": {...}}``) that ``static/js/evaluation.js`` draws unchanged, and the rows of the
Table I view that the page and its CSV download show. Fonts, colours, model labels, axes and
layouts come from ``dashboard.charts.style``, shared with the site page's figures; this page adds
the posterior model (HACS's default reading) and names the paper's method as the paper's
(``EVALUATION_LABELS``). Results stored before the posterior took part have no ``posterior``
rows: every view here then leaves it out.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from dashboard.charts import legend
from dashboard.charts.learned import LEARNED_COMPARED, learned_figures, learned_sections
from dashboard.charts.style import (
    BLACK,
    BLUE,
    FONT,
    MODEL_STYLE,
    OTHER_MODEL_STYLE,
    SKY_BLUE,
    VERMILLION,
    Figure,
    axis,
    heading,
    layout,
    legend_below,
    plain_text,
)
from hacs.evaluation.summary import EVALUATION_LABELS, LEVEL_LABELS, MODEL_LABELS, summary_lines

__all__ = [
    "AVERAGE_LABELS",
    "EVALUATION_LABELS",
    "EVALUATION_STYLE",
    "LEARNED_COMPARED",
    "SHOWN_RANKING_MODELS",
    "learned_figures",
    "learned_sections",
    "model_details",
    "ranking_legend",
    "replay_figure",
    "FONT",
    "LEVEL_LABELS",
    "METRIC_LABELS",
    "METRIC_NAMES",
    "MODEL_LABELS",
    "MODEL_STYLE",
    "PAPER_RANKING_MODELS",
    "SELECTION_MODELS",
    "TABLE_COLUMNS",
    "Figure",
    "Row",
    "by_w_figure",
    "interval_figure",
    "interval_figures",
    "ranking_figures",
    "summary_lines",
    "table_rows",
    "table_view",
    "threshold_figure",
    "threshold_figures",
]

Row = Mapping[str, Any]

AVERAGE_LABELS = {"micro": "Micro average", "macro": "Macro average"}
METRIC_LABELS = {"precision": "P", "recall": "R", "f1": "F1"}
METRIC_NAMES = {"precision": "Precision", "recall": "Recall", "f1": "F1"}
#: As hacs.evaluation.SELECTION_MODELS: the paper's HACS, HACS's default, the two baselines.
SELECTION_MODELS = ("hacs", "posterior", "random", "brute_force")
#: Models with a θ̂ of their own in Table I.
OWN_THETA_MODELS = ("hacs", "posterior")
#: The learned schedulers (``hacs.learning``), drawn as thick as HACS's own lines.
LEARNED_MODELS = ("gp4c", "lws")
PAPER_RANKING_MODELS = ("hacs", "last_obs", "random")  # Figure 11
#: Ranking lines shown at first: Figure 11's, the posterior and Cho–Garcia-Molina (the GP4C
#: scorer closest to both); the other scorers are one click away in the legend.
SHOWN_RANKING_MODELS = (
    "posterior",
    "hacs",
    "gp4c",
    "lws",
    "cho_garcia_molina",
    "last_obs",
    "random",
)
#: model: (colour, marker, dash); the posterior in black, solid and thick like the paper's HACS.
EVALUATION_STYLE = {**MODEL_STYLE, "posterior": (BLACK, "star-square", "solid")}


def _level_label(level: str) -> str:
    """A level's name for a figure title (``heading`` shows it as written)."""
    return LEVEL_LABELS.get(level, level)


def _line(model: str, x: Sequence[float], y: Sequence[float | None], **extra: Any) -> Figure:
    """One model's line: its colour, marker and dash from the shared style (HACS thicker)."""
    colour, symbol, dash = EVALUATION_STYLE.get(model, OTHER_MODEL_STYLE)
    trace: dict[str, Any] = {
        "type": "scatter",
        "mode": "lines+markers",
        "name": plain_text(EVALUATION_LABELS.get(model, model)),
        "x": list(x),
        "y": list(y),
        "line": {
            "color": colour,
            "dash": dash,
            "width": 2.5 if model in (*OWN_THETA_MODELS, *LEARNED_MODELS) else 1.8,
        },
        "marker": {"symbol": symbol, "size": 7, "color": colour},
        "connectgaps": False,
    }
    trace.update(extra)
    return trace


# --------------------------------------------------------------------------------------------
# Figures 8-10: P, R and F1 against θ
# --------------------------------------------------------------------------------------------


def threshold_figure(
    curves: Iterable[Row],
    *,
    level: str,
    average: str,
    w_weeks: int,
    theta_hat: float | None,
    posterior_theta_hat: float | None = None,
) -> Figure:
    """F1, P and R against θ (three panels), one line per model, θ̂ marked on every panel (HACS's
    in blue; the posterior's own, when it differs, in black)."""
    rows = [
        r
        for r in curves
        if r["level"] == level and r["average"] == average and r["w_weeks"] == w_weeks
    ]
    data: list[Figure] = []
    figure_layout = layout(
        title=heading(
            f"{_level_label(level)} level, history w = {w_weeks} "
            f"week{'s' if w_weeks != 1 else ''}, {AVERAGE_LABELS.get(average, average).lower()}"
        ),
        shapes=[],
        annotations=[],
        margin={"l": 56, "r": 16, "t": 40, "b": 10},
    )
    panels = ("f1", "precision", "recall")
    gap = 0.06
    width = (1 - gap * (len(panels) - 1)) / len(panels)
    for i, metric in enumerate(panels):
        suffix = "" if i == 0 else str(i + 1)
        left = i * (width + gap)
        figure_layout[f"xaxis{suffix}"] = axis(
            "threshold θ", domain=[left, left + width], range=[-0.03, 1.03], dtick=0.2
        )
        figure_layout[f"yaxis{suffix}"] = axis(
            METRIC_NAMES[metric], anchor=f"x{suffix}", rangemode="tozero"
        )
        data += _metric_lines(rows, metric, suffix, first=i == 0)
        marks = [(theta_hat, BLUE, "θ̂", 1.0)]
        if posterior_theta_hat is not None and posterior_theta_hat != theta_hat:
            marks.append((posterior_theta_hat, BLACK, "θ̂ posterior", 0.88))
        for value, colour, name, height in marks:
            if value is not None:
                shape, annotation = _theta_mark(value, colour, name, height, suffix)
                figure_layout["shapes"].append(shape)
                figure_layout["annotations"].append(annotation)
    return {"data": data, "layout": figure_layout}


def _metric_lines(rows: list[Row], metric: str, suffix: str, *, first: bool) -> list[Figure]:
    """One panel's lines: each selection model's ``metric`` against θ, on axes ``suffix``."""
    lines = []
    for model in SELECTION_MODELS:
        points = sorted((r for r in rows if r["model"] == model), key=lambda r: r["theta"])
        if not points:
            continue  # a run stored before the posterior took part
        lines.append(
            _line(
                model,
                [r["theta"] for r in points],
                [r[metric] for r in points],
                xaxis=f"x{suffix}",
                yaxis=f"y{suffix}",
                legendgroup=model,
                showlegend=first,
                hovertemplate="%{fullData.name}<br>θ = %{x:.1f}<br>"
                f"{METRIC_NAMES[metric]} = %{{y:.3f}}<extra></extra>",
            )
        )
    return lines


def _theta_mark(
    value: float, colour: str, name: str, height: float, suffix: str
) -> tuple[dict[str, Any], dict[str, Any]]:
    """A dotted vertical line at θ̂ on one panel and its label (shape, annotation)."""
    shape = {
        "type": "line",
        "xref": f"x{suffix}",
        "yref": f"y{suffix} domain",
        "x0": value,
        "x1": value,
        "y0": 0,
        "y1": 1,
        "line": {"color": colour, "width": 1.5, "dash": "dot"},
    }
    annotation = {
        "xref": f"x{suffix}",
        "yref": f"y{suffix} domain",
        "x": value,
        "y": height,
        "text": f"{name} = {value:.1f}",
        "showarrow": False,
        "xanchor": "left" if value < 0.8 else "right",
        "yanchor": "top",
        "font": {"size": 12, "color": colour},
        "bgcolor": "rgba(255,255,255,0.8)",
    }
    return shape, annotation


def threshold_figures(results: Mapping[str, Any]) -> dict[str, Figure]:
    """Every (level, average, w)'s :func:`threshold_figure`, keyed ``"level|average|w"``."""
    theta_hat = {
        (r["level"], r["average"], r["w_weeks"]): r["theta_hat"]
        for r in results.get("table", [])
        if r["model"] == "hacs"
    }
    posterior_theta_hat = {
        (r["level"], r["average"], r["w_weeks"]): r["theta_hat"]
        for r in results.get("table", [])
        if r["model"] == "posterior"
    }
    curves = list(results.get("curves", []))
    figures: dict[str, Figure] = {}
    for level, average, w in sorted(theta_hat):
        figures[f"{level}|{average}|{w}"] = threshold_figure(
            curves,
            level=level,
            average=average,
            w_weeks=w,
            theta_hat=theta_hat[(level, average, w)],
            posterior_theta_hat=posterior_theta_hat.get((level, average, w)),
        )
    return figures


# --------------------------------------------------------------------------------------------
# Figure 11 and the GP4C budget metric: a value per model against w
# --------------------------------------------------------------------------------------------


def by_w_figure(rows: Iterable[Row], *, level: str, value: str, title: str, y_title: str) -> Figure:
    """``value`` of each model against the history size w (weighted P@K, NDCG@k, …).

    The posterior, the paper's HACS, Last-Obs and Random (the paper's Figure 11) and
    Cho–Garcia-Molina are shown; the other GP4C scorers are in the legend, one click away.
    """
    chosen = [r for r in rows if r["level"] == level]
    models = list(dict.fromkeys(r["model"] for r in chosen))
    order = list(SHOWN_RANKING_MODELS) + list(EVALUATION_LABELS)
    models.sort(key=lambda m: order.index(m) if m in order else len(order))
    data = []
    for model in models:
        points = sorted((r for r in chosen if r["model"] == model), key=lambda r: r["w_weeks"])
        data.append(
            _line(
                model,
                [r["w_weeks"] for r in points],
                [r[value] for r in points],
                visible=True if model in SHOWN_RANKING_MODELS else "legendonly",
                hovertemplate="%{fullData.name}<br>w = %{x} weeks<br>"
                f"{plain_text(y_title)} = %{{y:.4f}}<extra></extra>",
            )
        )
    figure_layout = layout(
        title=heading(f"{title} — {_level_label(level)} level"),
        xaxis=axis("history size w (weeks)", dtick=1),
        yaxis=axis(y_title, rangemode="tozero"),
        margin={"l": 56, "r": 16, "t": 40, "b": 10},
        # Under the axis title whatever the rows a legend of twelve entries wraps to.
        legend=legend_below(font={"size": 12}),
    )
    return {"data": data, "layout": figure_layout}


def ranking_legend(results: Mapping[str, Any]) -> list[dict[str, str]]:
    """The models of the ranking charts (P@K, NDCG@k), one line each, in the charts' order and
    colours (``dashboard.charts.legend.ranking_legend``)."""
    return legend.ranking_legend(
        results,
        labels=EVALUATION_LABELS,
        styles=EVALUATION_STYLE,
        order=(*SHOWN_RANKING_MODELS, *EVALUATION_LABELS),
    )


def model_details(results: Mapping[str, Any]) -> list[dict[str, str]]:
    """Each ranking model's formula and sources, for the page's "How each model ranks"."""
    return legend.model_details(ranking_legend(results))


def ranking_figures(results: Mapping[str, Any]) -> dict[str, dict[str, Figure]]:
    """Per level: ``pak`` (weighted P@K against w) and ``ndcg`` (NDCG@k against w)."""
    levels = list(results.get("levels", {}))
    k = results.get("parameters", {}).get("budget_fraction")
    budget = f" (k = {k:.0%} of eligible sites)" if isinstance(k, int | float) else ""
    return {
        level: {
            "pak": by_w_figure(
                results.get("pak", []),
                level=level,
                value="weighted_p_at_k",
                title="Mean weighted P@K",
                y_title="weighted P@K",
            ),
            "ndcg": by_w_figure(
                results.get("budget", []),
                level=level,
                value="ndcg_at_k",
                title=f"NDCG@k{budget}",
                y_title="NDCG@k",
            ),
        }
        for level in levels
    }


# --------------------------------------------------------------------------------------------
# Figure 6: interpolated-update intervals against the Poisson expectation
# --------------------------------------------------------------------------------------------


def interval_figure(level: str, group: Row) -> Figure:
    """One 1/λ̃ bin: the observed density of interpolated-update intervals d against the
    exponential (Poisson) expectation, on log-log axes, with d = mean 1/λ̃ marked."""
    edges: list[float] = list(group["d_edges"])
    centres = [
        (lo * hi) ** 0.5 if lo > 0 else hi / 2 for lo, hi in zip(edges[:-1], edges[1:], strict=True)
    ]
    observed = [v if v and v > 0 else None for v in group["observed"]]
    expected = [v if v and v > 0 else None for v in group["expected"]]
    mean = float(group["mean_interval"])
    data = _interval_traces(centres, observed, expected)
    label = _level_label(level)
    # On log axes Plotly reads ranges and annotation positions in log10 units (shapes: data).
    mark = math.log10(mean) if mean > 0 else 0.0
    seen = [v for v in observed if v is not None]
    top = max(seen + [v for v in expected if v is not None], default=1.0)
    bottom = min(seen, default=top) / 5
    figure_layout = layout(
        title=heading(
            f"{label} level, 1/λ̃ in [{group['low']:g}, {group['high']:g}) days: "
            f"{group['sites']} sites, {group['intervals']} intervals"
        ),
        xaxis=axis("interpolated-update interval d (days)", type="log", dtick=1),
        yaxis=axis(
            "density (per day)",
            type="log",
            exponentformat="power",
            dtick=1,
            range=[math.log10(bottom), math.log10(top * 3)],
        ),
        margin={"l": 72, "r": 16, "t": 40, "b": 48},
        **_mean_interval_mark(mean, mark),
    )
    return {"data": data, "layout": figure_layout}


def _interval_traces(
    centres: list[float], observed: list[float | None], expected: list[float | None]
) -> list[dict[str, Any]]:
    """The observed densities as markers and the Poisson expectation as a line."""
    return [
        {
            "type": "scatter",
            "mode": "markers",
            "name": "observed Δ̃t",
            "x": centres,
            "y": observed,
            "marker": {"color": VERMILLION, "size": 8, "symbol": "circle"},
            "hovertemplate": "d ≈ %{x:.1f} days<br>density %{y:.2e}<extra>observed</extra>",
        },
        {
            "type": "scatter",
            "mode": "lines",
            "name": "Poisson expectation",
            "x": centres,
            "y": expected,
            "line": {"color": BLUE, "width": 2},
            "hovertemplate": "d ≈ %{x:.1f} days<br>density %{y:.2e}<extra>expected</extra>",
        },
    ]


def _mean_interval_mark(mean: float, mark: float) -> dict[str, Any]:
    """A dotted line at d = mean 1/λ̃ and its label (``mark`` is its log10 position)."""
    return {
        "shapes": [
            {
                "type": "line",
                "xref": "x",
                "yref": "y domain",
                "x0": mean,
                "x1": mean,
                "y0": 0,
                "y1": 1,
                "line": {"color": BLUE, "width": 1.5, "dash": "dot"},
            }
        ],
        "annotations": [
            {
                "xref": "x",
                "yref": "y domain",
                "x": mark,
                "y": 1,
                "showarrow": False,
                "text": f"d = 1/λ̃ ≈ {mean:.0f}",
                "xanchor": "left",
                "yanchor": "top",
                "font": {"size": 12, "color": BLUE},
            }
        ],
    }


def interval_figures(results: Mapping[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """Per level, one ``{"label", "figure"}`` per 1/λ̃ bin that holds sites."""
    out: dict[str, list[dict[str, Any]]] = {}
    for level, groups in results.get("intervals", {}).items():
        out[level] = [
            {
                "label": f"1/λ̃ {g['low']:g}–{g['high']:g} days ({g['sites']} sites)",
                "figure": interval_figure(level, g),
            }
            for g in groups
        ]
    return out


# --------------------------------------------------------------------------------------------
# Table I
# --------------------------------------------------------------------------------------------

TABLE_COLUMNS = [
    "level",
    "metric",
    "w_weeks",
    "micro_theta_hat",
    "micro_hacs",
    "micro_random",
    "micro_brute_force",
    "macro_theta_hat",
    "macro_hacs",
    "macro_random",
    "macro_brute_force",
    "micro_posterior_theta_hat",
    "micro_posterior",
    "macro_posterior_theta_hat",
    "macro_posterior",
]


def _table_models(index: Mapping[tuple[str, str, int, str], Row], level: str) -> list[str]:
    """The Table I models a level's results hold, in SELECTION_MODELS order."""
    held = {key[3] for key in index if key[0] == level}
    return [m for m in SELECTION_MODELS if m in held or m != "posterior"]


def table_view(results: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Table I as the paper lays it out, one section per level, with the posterior beside HACS.

    Each section: ``level``, ``label``, ``header`` (per average, the columns: ``label`` and
    whether it is a ``theta`` column) and ``groups``, one per metric (P, R, F1), each with
    ``rows`` per w: ``w_weeks`` and per average a ``theta_hat`` (HACS's) and ``cells`` — one per
    model, ``{"model", "value", "best", "theta_hat"}``, where ``theta_hat`` is the model's own
    θ̂ for the posterior (shown in a column of its own) and None for the others, and ``best``
    marks the row's highest value within that average (every one of equal values, to rounding).
    """
    index = {
        (r["level"], r["average"], r["w_weeks"], r["model"]): r for r in results.get("table", [])
    }
    sections = []
    for level in results.get("levels", {}):
        models = _table_models(index, level)
        header = _table_header(models)
        ws = sorted({key[2] for key in index if key[0] == level})
        groups = [
            {
                "metric": metric,
                "label": METRIC_LABELS[metric],
                "name": METRIC_NAMES[metric],
                "rows": [
                    {
                        "w_weeks": w,
                        "averages": [
                            _table_cells(index, (level, average, w), metric, models)
                            for average in AVERAGE_LABELS
                        ],
                    }
                    for w in ws
                ],
            }
            for metric in METRIC_LABELS
        ]
        sections.append(
            {
                "level": level,
                "label": LEVEL_LABELS.get(level, level),
                "models": models,
                "header": header,
                "span": len(header),
                "groups": groups,
            }
        )
    return sections


def _table_header(models: list[str]) -> list[dict[str, Any]]:
    """One average's column heads: θ̂, then each model (the posterior with its own θ̂ first)."""
    header: list[dict[str, Any]] = [{"label": "θ̂", "theta": True}]
    for m in models:
        if m == "posterior":
            header.append({"label": "θ̂ post.", "theta": True})
        header.append({"label": EVALUATION_LABELS[m], "theta": False})
    return header


def _table_cells(
    index: Mapping[tuple[str, str, int, str], Row],
    key: tuple[str, str, int],
    metric: str,
    models: list[str],
) -> dict[str, Any]:
    """One (level, average, w)'s cells of a metric's row: HACS's θ̂ and a cell per model."""
    level, average, w = key
    values = [index.get((level, average, w, m), {}).get(metric) for m in models]
    known = [v for v in values if v is not None]
    top = max(known) if known else None
    best = [_equal(v, top) for v in values]
    hacs = index.get((level, average, w, "hacs"), {})
    own = {
        m: index.get((level, average, w, m), {}).get("theta_hat") if m == "posterior" else None
        for m in models
    }
    return {
        "average": average,
        "theta_hat": hacs.get("theta_hat"),
        "cells": [
            {"model": m, "value": v, "best": b, "theta_hat": own[m]}
            for m, v, b in zip(models, values, best, strict=True)
        ],
    }


def _equal(value: float | None, top: float | None) -> bool:
    """Ties count as best: Random's expected counts can differ from equal ones by rounding."""
    if value is None or top is None:
        return False
    return abs(value - top) <= 1e-9 * max(1.0, abs(top))


def table_rows(results: Mapping[str, Any]) -> list[list[Any]]:
    """Table I as CSV rows under TABLE_COLUMNS (values as numbers, None where undefined or, for
    the posterior, in a run stored before it took part)."""
    index = {
        (r["level"], r["average"], r["w_weeks"], r["model"]): r for r in results.get("table", [])
    }
    rows: list[list[Any]] = []
    for level in results.get("levels", {}):
        ws = sorted({key[2] for key in index if key[0] == level})
        for metric in METRIC_LABELS:
            for w in ws:
                line: list[Any] = [level, metric, w]
                for average in AVERAGE_LABELS:
                    line.append(index.get((level, average, w, "hacs"), {}).get("theta_hat"))
                    line.extend(
                        index.get((level, average, w, m), {}).get(metric)
                        for m in ("hacs", "random", "brute_force")
                    )
                for average in AVERAGE_LABELS:
                    posterior = index.get((level, average, w, "posterior"), {})
                    line.extend((posterior.get("theta_hat"), posterior.get(metric)))
                rows.append(line)
    return rows


#: The models of the plain-text summary: Table I's and the ranking's headline ones.
def replay_figure(replay: Mapping[str, Any]) -> Figure:
    """Changes found per crawl by each policy of a closed-loop replay (``hacs.replay``), one bar
    per budget; HACS's own policy in its blue, the others in grey shades."""
    budgets = replay.get("budgets", [])
    shades = (BLUE, SKY_BLUE)
    data = []
    for i, block in enumerate(budgets):
        rows = block["rows"]
        data.append(
            {
                "type": "bar",
                "name": plain_text(f"{block['share']:.0%} of the sites a day ({block['budget']})"),
                "x": [plain_text(row["label"]) for row in rows],
                "y": [row["utilisation"] for row in rows],
                "text": [plain_text(f"{row['found']}/{row['crawls']}") for row in rows],
                "hovertemplate": "%{x}<br>%{y:.3f} changes found per crawl (%{text})"
                "<extra>%{fullData.name}</extra>",
                "marker": {"color": shades[i % len(shades)]},
            }
        )
    return {
        "data": data,
        "layout": layout(
            title=heading("Changes found per crawl, day after day"),
            barmode="group",
            xaxis=axis(automargin=True),
            yaxis=axis("changes found per crawl", rangemode="tozero"),
            margin={"l": 56, "r": 16, "t": 40, "b": 120},
        ),
    }
