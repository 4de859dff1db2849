"""Every Plotly chart HACS draws shows archive and stored text as text, and the Overview
histogram's two levels are told apart by colour-blind-safe colours and ticks a reader can use."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from dashboard.charts import (
    Curve,
    LevelTimeline,
    Mark,
    interval_histogram,
    probability_figure,
    style,
    timeline_figure,
)
from dashboard.charts import evaluation as evaluation_charts
from dashboard.charts.site import log_ticks
from tests.factories import make_capture, make_site

LINK = '<a href="http://x">x</a>'
BOLD = "<b>loud</b>"
# Markup HACS itself writes into hover templates and titles; anything else is an archive's.
OWN_TAGS = {"<br>", "<extra>", "</extra>", "<sub>", "</sub>"}


def strings(value: Any) -> Iterator[str]:
    """Every string anywhere in a figure: trace and layout texts, names, ticks, templates."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from strings(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from strings(item)


def foreign_tags(figure: dict[str, Any]) -> list[str]:
    found = []
    for text in strings(figure):
        found += [tag for tag in re.findall(r"<[^<>]*>", text) if tag not in OWN_TAGS]
    return found


def _evaluation_results() -> dict[str, Any]:
    """Stored results as an archive could leave them: a level, a model and a policy whose
    names hold markup (results are JSON in the database; nothing guarantees their text)."""
    pak = [
        {"level": LINK, "w_weeks": w, "model": model, "weighted_p_at_k": 0.1 * w}
        for w in (1, 2)
        for model in ("hacs", "random", BOLD)
    ]
    budget = [{**row, "ndcg_at_k": 0.2, "change_rate_at_k": 0.1} for row in pak]
    curves = [
        {
            "level": LINK,
            "average": "micro",
            "w_weeks": 1,
            "theta": theta,
            "model": model,
            "precision": 0.5,
            "recall": 0.5,
            "f1": 0.5,
        }
        for theta in (0.0, 0.5, 1.0)
        for model in ("hacs", "posterior", "random", "brute_force")
    ]
    table = [
        {
            "level": LINK,
            "average": "micro",
            "w_weeks": 1,
            "model": "hacs",
            "theta_hat": 0.5,
            "precision": 0.5,
            "recall": 0.5,
            "f1": 0.5,
        }
    ]
    return {
        "levels": {LINK: {}},
        "parameters": {"budget_fraction": 0.05},
        "pak": pak,
        "budget": budget,
        "curves": curves,
        "table": table,
    }


def every_figure() -> list[dict[str, Any]]:
    """Each figure builder of dashboard.charts, fed text holding markup wherever text goes in."""
    level = LevelTimeline(
        LINK,
        captures={"observation": [Mark("2020-01-01 00:00:00", f"/~x/{LINK} · observation 200")]},
        updates=[Mark("2020-02-01 00:00:00", f"/{BOLD} · 3 new links")],
        interpolated=[Mark("2020-01-15 00:00:00", "midpoint")],
    )
    results = _evaluation_results()
    replay = {
        "budgets": [
            {
                "share": 0.05,
                "budget": 2,
                "rows": [{"label": LINK, "utilisation": 0.5, "found": 1, "crawls": 2}],
            }
        ]
    }
    return [
        timeline_figure([level]),
        probability_figure(["2024-01-01"], [Curve(LINK, [0.5])], e_days=7, theta=0.5),
        interval_histogram({LINK: [10.0, 20.0], BOLD: [30.0]}),
        *evaluation_charts.threshold_figures(results).values(),
        *evaluation_charts.ranking_figures(results)[LINK].values(),
        evaluation_charts.replay_figure(replay),
    ]


def test_markup_in_archive_or_stored_text_enters_no_figure_as_markup() -> None:
    figures = every_figure()
    for figure in figures:
        assert foreign_tags(figure) == [], figure["layout"].get("title")
    text = "\n".join(strings(figures))
    # The text is still there, escaped as Plotly decodes it for display.
    assert '&lt;a href="http://x"&gt;x&lt;/a&gt;' in text
    assert "&lt;b&gt;loud&lt;/b&gt;" in text
    assert "&amp;lt;" not in text, "escaped once, or Plotly would show the entity"


def test_plain_text_escapes_only_what_plotly_decodes() -> None:
    # Plotly decodes &amp; &lt; &gt; (and numeric entities) but not &quot;, which would show.
    assert style.plain_text('a & <b title="t">') == 'a &amp; &lt;b title="t"&gt;'
    assert style.plain_text(42) == "42"


def test_names_are_not_spliced_into_hover_templates() -> None:
    # A name goes in through %{fullData.name}; written into the template itself, a name holding
    # "%{y}" would be read as a placeholder.
    (trace,) = probability_figure(["2024-01-01"], [Curve("p %{y}", [0.5])], e_days=7)["data"]
    assert "%{y}" not in trace["hovertemplate"].replace("p = %{y:.3f}", "")
    for figure in every_figure():
        for trace in figure["data"]:
            assert LINK not in trace.get("hovertemplate", "")


# --- The Overview histogram ---------------------------------------------------------------------


def test_the_two_levels_are_drawn_side_by_side_in_two_colour_blind_safe_colours() -> None:
    figure = interval_histogram({"Homepage": [3.0, 40.0, 400.0], "Website": [2.0, 30.0, 60.0]})
    homepage, website = figure["data"]
    assert (homepage["marker"]["color"], website["marker"]["color"]) == style.PAIR_COLOURS
    assert homepage["marker"]["color"] != website["marker"]["color"]
    okabe_ito = {style.BLUE, style.VERMILLION, style.ORANGE, style.SKY_BLUE, style.GREEN}
    assert set(style.PAIR_COLOURS) <= okabe_ito
    # Opaque bars beside each other in each bin, not a faint overlay; the second is hatched too.
    assert "opacity" not in homepage["marker"] and "opacity" not in website["marker"]
    assert website["marker"]["pattern"]["shape"] == "/"
    assert homepage["x"] == website["x"]
    for left, right, width in zip(homepage["x"], website["x"], homepage["width"], strict=True):
        start_left = left + homepage["offset"]
        start_right = right + website["offset"]
        assert start_left + width <= start_right + 1e-9, "the bars do not overlap"


def test_the_log_axis_has_ticks_at_one_two_and_five_times_the_powers_of_ten() -> None:
    figure = interval_histogram({"Homepage": [3.0, 40.0, 400.0], "Website": [2.0, 30.0, 60.0]})
    axis = figure["layout"]["xaxis"]
    low, high = axis["range"]
    shown = [float(t.replace(",", "")) for t in axis["ticktext"]]
    assert shown == [2, 5, 10, 20, 50, 100, 200, 500]
    assert all(low <= v <= high for v in axis["tickvals"])
    assert axis["tickvals"] == [pytest.approx(math.log10(v)) for v in shown]


@pytest.mark.parametrize(
    ("low", "high", "expected"),
    [
        (0.0, 1.0, [1, 2, 5, 10]),
        (-0.4, 0.5, [0.5, 1, 2]),
        (0.0, 5.0, [1, 3, 10, 30, 100, 300, 1000, 3000, 10_000, 30_000, 100_000]),
        (0.0, 7.0, [10.0**k for k in range(8)]),
    ],
)
def test_log_ticks_thin_out_as_the_axis_spans_more_decades(
    low: float, high: float, expected: list[float]
) -> None:
    assert log_ticks(low, high) == [pytest.approx(v) for v in expected]


# --- The site page's charts, from the database --------------------------------------------------


@pytest.mark.django_db
def test_a_capture_url_holding_markup_reaches_the_site_page_figure_escaped(
    logged_in_client: Any,
) -> None:
    site = make_site(seed_url="http://u.example.edu/~ana/", author="Ana")
    url = f"http://u.example.edu/~ana/{LINK}"
    make_capture(
        site,
        url=url,
        urlkey="edu,example,u)/~ana/x",
        page_key="edu,example,u)/~ana/x",
        depth=1,
        timestamp=datetime(2020, 3, 1, tzinfo=UTC),
    )
    page = logged_in_client.get(f"/sites/{site.pk}/").content.decode()
    figure = json.loads(re.search(r'id="timeline-data"[^>]*>(.*?)</script>', page, re.S)[1])
    hover = [text for trace in figure["data"] for text in trace["customdata"]]
    assert '/~ana/&lt;a href="http://x"&gt;x&lt;/a&gt; · observation 200' in hover
    assert foreign_tags(figure) == []
