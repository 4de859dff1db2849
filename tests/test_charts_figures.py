"""Plotly figures built by dashboard.charts (no database): the site page's figures
(dashboard.charts.site, re-exported as dashboard.charts), the Evaluation page's
(dashboard.charts.evaluation), and the one style both are drawn in (dashboard.charts.style)."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from dashboard.charts import (
    CAPTURE_GROUPS,
    Curve,
    LevelTimeline,
    Mark,
    interval_histogram,
    probability_figure,
    style,
    timeline_figure,
)
from dashboard.charts import evaluation as evaluation_charts
from hacs.evaluation import ObservationTable, evaluate, interval_distribution

PROJECT = Path(__file__).resolve().parents[1]


def as_browser_json(figure: dict[str, Any]) -> Any:
    """The figure as JSON.parse would read it: NaN and Infinity are not JSON."""
    return json.loads(json.dumps(figure, allow_nan=False))


def traces_named(figure: dict[str, Any], name: str) -> list[dict[str, Any]]:
    return [t for t in figure["data"] if t["name"].startswith(name)]


# --- Timeline ---------------------------------------------------------------------------------


def _levels() -> list[LevelTimeline]:
    homepage = LevelTimeline(
        name="Homepage",
        captures={
            "observation": [
                Mark("2017-01-01 00:00:00", "/~a/ · observation 200"),
                Mark("2017-03-01 00:00:00", "/~a/ · observation 200"),
            ],
            "redirect_error": [Mark("2017-02-01 00:00:00", "/~a/ · redirect 301")],
        },
        updates=[Mark("2017-03-01 00:00:00", "/~a/ · 2 new links")],
        interpolated=[Mark("2017-01-30 00:00:00", "midpoint")],
    )
    website = LevelTimeline(
        name="Website",
        captures={
            "observation": [
                Mark("2017-01-01 00:00:00", "a"),
                Mark("2017-03-01 00:00:00", "b"),
                Mark("2017-04-01 00:00:00", "c"),
            ],
            "revisit": [Mark("2017-05-01 00:00:00", "d")],
            "redirect_error": [Mark("2017-02-01 00:00:00", "e")],
            "other": [Mark("2017-02-02 00:00:00", "f")],
        },
        updates=[Mark("2017-03-01 00:00:00", "u1"), Mark("2017-04-01 00:00:00", "u2")],
        interpolated=[Mark("2017-01-30 00:00:00", "i1"), Mark("2017-03-16 12:00:00", "i2")],
    )
    return [homepage, website]


def test_the_timeline_has_a_captures_row_and_an_updates_row_per_level() -> None:
    figure = as_browser_json(timeline_figure(_levels()))
    axis = figure["layout"]["yaxis"]
    assert axis["ticktext"] == [
        "Homepage · captures",
        "Homepage · updates",
        "Website · captures",
        "Website · updates",
    ]
    assert axis["tickvals"] == [0, 1, 2, 3]
    assert axis["range"] == [3.5, -0.5], "the first level is drawn on top"
    rows: dict[tuple[int, str], int] = {}
    for trace in figure["data"]:
        assert len(set(trace["y"])) == 1
        assert len(trace["x"]) == len(trace["y"]) == len(trace["customdata"])
        rows[(trace["y"][0], trace["name"])] = len(trace["x"])
    assert rows == {
        (0, "Observation (200 HTML)"): 2,
        (0, "Redirect or error"): 1,
        (1, "Detected update"): 1,
        (1, "Interpolated update instant"): 1,
        (2, "Observation (200 HTML)"): 3,
        (2, "Revisit (same content)"): 1,
        (2, "Redirect or error"): 1,
        (2, "Other (not HTML, orphan revisit…)"): 1,
        (3, "Detected update"): 2,
        (3, "Interpolated update instant"): 2,
    }


def test_each_kind_has_one_legend_entry_and_its_own_colour_and_shape() -> None:
    figure = timeline_figure(_levels())
    legend = [t["name"] for t in figure["data"] if t["showlegend"]]
    assert len(legend) == len(set(legend)) == 6
    styles = {(t["marker"]["color"], t["marker"]["symbol"]) for t in figure["data"]}
    assert len(styles) == 6
    # A legend click hides a kind at both levels: traces of a kind share a legend group.
    groups = {t["legendgroup"] for t in figure["data"] if t["name"] == "Detected update"}
    assert len(groups) == 1


def test_interpolated_instants_are_drawn_over_detected_updates() -> None:
    names = [t["name"] for t in timeline_figure(_levels())["data"] if t["y"][0] == 3]
    assert names.index("Interpolated update instant") > names.index("Detected update")


def test_hover_text_is_data_not_markup() -> None:
    evil = "<script>alert(1)</script>"
    level = LevelTimeline("Homepage", captures={"observation": [Mark("2020-01-01", evil)]})
    trace = timeline_figure([level])["data"][0]
    # Plotly reads hover text as HTML-like markup and decodes &lt; and &gt; back for display.
    assert trace["customdata"] == ["&lt;script&gt;alert(1)&lt;/script&gt;"]
    assert evil not in trace["hovertemplate"]


def test_an_empty_timeline_is_still_a_figure() -> None:
    figure = as_browser_json(timeline_figure([LevelTimeline("Homepage")]))
    assert figure["data"] == []
    assert figure["layout"]["yaxis"]["ticktext"] == ["Homepage · captures", "Homepage · updates"]


def test_unknown_capture_groups_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown capture groups"):
        timeline_figure([LevelTimeline("Homepage", captures={"pdf": [Mark("2020-01-01", "")]})])
    assert set(CAPTURE_GROUPS) == {"observation", "revisit", "redirect_error", "other", "crawl"}


# --- Probability curve --------------------------------------------------------------------------


def test_the_probability_figure_draws_one_line_per_estimate_and_theta() -> None:
    dates = ["2024-01-01", "2024-01-02", "2024-01-03"]
    figure = as_browser_json(
        probability_figure(
            dates,
            [Curve("Homepage · observed", [0.1, 0.2, 0.3]), Curve("Website · observed", [0, 0, 0])],
            e_days=7,
            theta=0.5,
        )
    )
    assert [t["name"] for t in figure["data"]] == ["Homepage · observed", "Website · observed"]
    assert figure["data"][0]["x"] == dates and figure["data"][0]["y"] == [0.1, 0.2, 0.3]
    assert figure["data"][0]["line"]["color"] != figure["data"][1]["line"]["color"]
    (shape,) = figure["layout"]["shapes"]
    assert shape["y0"] == shape["y1"] == 0.5
    assert figure["layout"]["annotations"][0]["text"] == "θ = 0.5"
    assert figure["layout"]["yaxis"]["range"][0] == 0
    assert "t + 7 d" in figure["layout"]["yaxis"]["title"]["text"]


def test_without_theta_there_is_no_threshold_line() -> None:
    figure = probability_figure(["2024-01-01"], [Curve("x", [0.5])], e_days=0)
    assert figure["layout"]["shapes"] == [] and figure["layout"]["annotations"] == []


@pytest.mark.parametrize(
    ("curves", "kwargs", "message"),
    [
        ([Curve("short", [0.1])], {"e_days": 7}, "has 1 values for 2 dates"),
        ([Curve("nan", [0.1, math.nan])], {"e_days": 7}, "outside"),
        ([Curve("big", [0.1, 1.5])], {"e_days": 7}, "outside"),
        ([], {"e_days": -1}, "e_days"),
        ([], {"e_days": 7, "theta": 2}, "theta"),
    ],
)
def test_the_probability_figure_checks_its_arguments(
    curves: list[Curve], kwargs: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        probability_figure(["2024-01-01", "2024-01-02"], curves, **kwargs)


# --- Interval histogram (HACS paper, Figure 4) ---------------------------------------------------


def test_histogram_bins_are_equal_in_log_width() -> None:
    # One bin per decade: 1 day, 10 days and 100 days land in three consecutive bins; 5 days and
    # 9.9 days share the first decade with 1 day.
    figure = as_browser_json(interval_histogram([1, 5, 9.9, 10, 100], bins_per_decade=1))
    (trace,) = figure["data"]
    assert trace["x"] == [0.5, 1.5, 2.5]
    assert trace["y"] == [3, 1, 1]
    assert trace["width"] == [0.9, 0.9, 0.9]  # a bin's bars fill nine tenths of it
    assert trace["customdata"] == ["1–10 d", "10–100 d", "100–1,000 d"]
    axis = figure["layout"]["xaxis"]
    # Ticks at 1, 2 and 5 times the powers of ten across the drawn range (-0.5 to 3.5).
    assert axis["ticktext"] == [
        "0.5",
        "1",
        "2",
        "5",
        "10",
        "20",
        "50",
        "100",
        "200",
        "500",
        "1,000",
        "2,000",
    ]
    assert axis["tickvals"] == [
        round(math.log10(float(t.replace(",", ""))), 9) for t in axis["ticktext"]
    ]
    assert "log" in axis["title"]["text"]


def test_histogram_counts_every_finite_positive_interval_once() -> None:
    values = [10 ** (k / 37) for k in range(-40, 160)]  # 0.08 days to 20,000 days
    (trace,) = interval_histogram(values, bins_per_decade=5)["data"]
    assert sum(trace["y"]) == len(values)
    widths = {round(w, 12) for w in trace["width"]}
    assert widths == {0.18}
    centres = trace["x"]
    assert all(math.isclose(b - a, 0.2) for a, b in zip(centres, centres[1:], strict=False))


def test_histogram_leaves_out_unknown_and_infinite_intervals_and_says_so() -> None:
    (trace,) = interval_histogram([30.0, 110.0, 365.0, math.inf, math.nan, 0.0])["data"]
    assert sum(trace["y"]) == 3
    assert "median 110 d" in trace["name"]
    assert "3 without a finite 1/λ" in trace["name"]
    as_browser_json(interval_histogram([math.inf]))


def test_histogram_overlays_homepage_and_website_like_figure_4() -> None:
    figure = as_browser_json(
        interval_histogram({"Homepage": [100, 110, 120], "Website": [60, 74, 80, 2000]})
    )
    homepage, website = figure["data"]
    assert homepage["name"].startswith("Homepage (median 110 d")
    assert website["name"].startswith("Website (median 77 d")
    assert homepage["x"] == website["x"], "both series share the bins"
    assert sum(homepage["y"]) == 3 and sum(website["y"]) == 4
    assert figure["layout"]["barmode"] == "overlay"
    assert homepage["marker"]["color"] != website["marker"]["color"]


def test_an_empty_histogram_is_still_a_figure() -> None:
    figure = as_browser_json(interval_histogram([]))
    assert sum(figure["data"][0]["y"]) == 0
    with pytest.raises(ValueError, match="bins_per_decade"):
        interval_histogram([1.0], bins_per_decade=0)


# --- Evaluation figures, and one style for all ---------------------------------------------------


def _evaluation_results() -> dict[str, Any]:
    """A small evaluation, as the Evaluation page stores it (with Figure 6's ``intervals``)."""
    rng = np.random.default_rng(5)
    site, time, index, floor = [], [], [], []
    for s in range(30):
        looks = np.unique(np.round(np.cumsum(rng.exponential(3.0, 120)), 2))
        changed = rng.random(looks.size) < 0.15
        k = np.arange(looks.size)
        site += [s] * looks.size
        time += looks.tolist()
        index += k.tolist()
        floor += np.where(changed | (k == 0), -1, k - 1).tolist()
    table = ObservationTable(site=site, page=site, time=time, page_index=index, link_floor=floor)
    results = evaluate({"homepage": table}, start=60.0, end=300.0, w_weeks=[1, 2])
    results["intervals"] = {"homepage": interval_distribution(table, start=0.0, end=360.0)}
    return results


def test_the_evaluation_figures_have_the_keys_the_page_script_reads() -> None:
    # static/js/evaluation.js looks figures up by these keys and reads data[0].y of Figure 6.
    results = _evaluation_results()
    threshold = evaluation_charts.threshold_figures(results)
    assert set(threshold) == {f"homepage|{a}|{w}" for a in ("micro", "macro") for w in (1, 2)}
    ranking = evaluation_charts.ranking_figures(results)
    assert set(ranking) == {"homepage"} and set(ranking["homepage"]) == {"pak", "ndcg"}
    (groups,) = evaluation_charts.interval_figures(results).values()
    assert groups and all(set(g) == {"label", "figure"} for g in groups)
    assert all(g["figure"]["data"][0]["name"] == "observed Δ̃t" for g in groups)
    names = {t["name"] for t in threshold["homepage|micro|1"]["data"]}
    assert names == {"HACS posterior (default)", "HACS, paper's g", "Random", "Brute Force"}
    rows = evaluation_charts.table_rows(results)
    assert rows and all(len(row) == len(evaluation_charts.TABLE_COLUMNS) for row in rows)
    for figure in [*threshold.values(), *ranking["homepage"].values()]:
        as_browser_json(figure)


def test_every_figure_is_drawn_in_the_one_style() -> None:
    results = _evaluation_results()
    figures = [
        timeline_figure(_levels()),
        probability_figure(["2024-01-01"], [Curve("x", [0.5])], e_days=7, theta=0.5),
        interval_histogram([10.0, 20.0]),
        *evaluation_charts.threshold_figures(results).values(),
        *evaluation_charts.ranking_figures(results)["homepage"].values(),
        *(g["figure"] for g in evaluation_charts.interval_figures(results)["homepage"]),
    ]
    for figure in figures:
        layout = figure["layout"]
        assert layout["font"] == style.FONT
        assert layout["paper_bgcolor"] == layout["plot_bgcolor"] == style.WHITE
        axes = [value for key, value in layout.items() if key.startswith(("xaxis", "yaxis"))]
        assert axes and all(axis["gridcolor"] == style.GRID_GREY for axis in axes)
    hacs_lines = [
        t["line"]["color"]
        for figure in figures
        for t in figure["data"]
        if t.get("name") == evaluation_charts.EVALUATION_LABELS["hacs"]
    ]
    assert hacs_lines and set(hacs_lines) == {style.BLUE}


def test_the_posterior_is_drawn_beside_the_papers_hacs_and_shown_in_the_pak_chart() -> None:
    results = _evaluation_results()
    pak = evaluation_charts.ranking_figures(results)["homepage"]["pak"]
    shown = [t["name"] for t in pak["data"] if t["visible"] is True]
    assert shown == [
        "HACS posterior (default)",
        "HACS, paper's g",
        "Cho–Garcia-Molina",
        "Last-Obs",
        "Random",
    ]
    posterior = next(t for t in pak["data"] if t["name"] == "HACS posterior (default)")
    rows = [r for r in results["pak"] if r["model"] == "posterior"]
    assert posterior["y"] == [
        r["weighted_p_at_k"] for r in sorted(rows, key=lambda r: r["w_weeks"])
    ]
    assert posterior["line"]["color"] == style.BLACK
    # The threshold chart marks the posterior's own θ̂ when it differs from HACS's.
    table = {(r["average"], r["w_weeks"], r["model"]): r["theta_hat"] for r in results["table"]}
    for key, figure in evaluation_charts.threshold_figures(results).items():
        _, average, w = key.split("|")
        own = table[(average, int(w), "posterior")]
        texts = [a["text"] for a in figure["layout"]["annotations"]]
        differs = own is not None and own != table[(average, int(w), "hacs")]
        assert any(text.startswith("θ̂ posterior") for text in texts) == differs, key


def test_views_of_results_stored_before_the_posterior_leave_it_out() -> None:
    results = _evaluation_results()
    old = {
        **results,
        **{
            key: [r for r in results[key] if r["model"] != "posterior"]
            for key in ("curves", "table", "pak", "budget")
        },
    }
    (section,) = evaluation_charts.table_view(old)
    assert section["models"] == ["hacs", "random", "brute_force"] and section["span"] == 4
    (section,) = evaluation_charts.table_view(results)
    assert section["models"] == ["hacs", "posterior", "random", "brute_force"]
    assert [c["label"] for c in section["header"]] == [
        "θ̂",
        "HACS, paper's g",
        "θ̂ post.",
        "HACS posterior (default)",
        "Random",
        "Brute Force",
    ]
    names = {
        t["name"] for t in evaluation_charts.threshold_figures(old)["homepage|micro|1"]["data"]
    }
    assert "HACS posterior (default)" not in names
    assert all(row[-4:] == [None] * 4 for row in evaluation_charts.table_rows(old))
    assert any(row[-1] is not None for row in evaluation_charts.table_rows(results))
    text = "\n".join(evaluation_charts.summary_lines(old))
    assert "posterior" not in text and "HACS, paper's g" in text


# --- Purity -------------------------------------------------------------------------------------


def test_the_chart_module_imports_without_django() -> None:
    code = (
        "import sys\nimport dashboard.charts, dashboard.charts.evaluation\n"
        "loaded = sorted(m for m in sys.modules if m == 'django' or m.startswith('django.'))\n"
        "assert not loaded, loaded\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=PROJECT, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
