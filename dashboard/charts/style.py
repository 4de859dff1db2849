"""The one look of every HACS chart: font, colour-blind-safe palette, models, axes and layouts.

Pure (stdlib only). The site page's charts (``dashboard.charts.site``) and the Evaluation page's
(``dashboard.charts.evaluation``) build their layouts, axes and colours from here, so the two pages
read as one application and a change of style is made once.

Colours are the Okabe–Ito palette, which stays distinguishable with the common colour-vision
deficiencies; the evaluation's ten models need three more, taken from Paul Tol's muted scheme.
Colour never carries meaning alone: every capture kind and every model also has its own marker
symbol (and each model its own dash).

Plotly reads hover text, trace names, titles and annotations as a small subset of HTML: ``<a
href>`` draws a link, ``<b>`` bold, ``<br>`` a line break. Every string that comes from an
archive, a seed list or stored results goes through :func:`plain_text` before it enters a
figure, so that it shows as the text it is.
"""

from __future__ import annotations

import html
from typing import Any

__all__ = [
    "AXIS_GREY",
    "BLACK",
    "BLUE",
    "CURVE_COLOURS",
    "DARK_GREEN",
    "DARK_GREY",
    "FONT",
    "GREEN",
    "GREY",
    "GRID_GREY",
    "MODEL_STYLE",
    "OLIVE",
    "ORANGE",
    "OTHER_MODEL_STYLE",
    "PAIR_COLOURS",
    "PURPLE",
    "SKY_BLUE",
    "VERMILLION",
    "WHITE",
    "WINE",
    "Figure",
    "axis",
    "hatch",
    "heading",
    "layout",
    "legend_above",
    "legend_below",
    "plain_text",
]

#: A Plotly figure as a plain dict: ``{"data": [...], "layout": {...}}``.
Figure = dict[str, Any]

FONT = {"family": "system-ui, -apple-system, 'Segoe UI', Roboto, Arial, sans-serif", "size": 13}

# Okabe–Ito.
BLACK = "#000000"
ORANGE = "#E69F00"
SKY_BLUE = "#56B4E9"
GREEN = "#009E73"  # "bluish green"
BLUE = "#0072B2"  # HACS itself, wherever it appears
VERMILLION = "#D55E00"
PURPLE = "#CC79A7"  # "reddish purple"
# Paul Tol's muted scheme, for the models beyond Okabe–Ito's seven colours.
OLIVE = "#999933"
WINE = "#882255"
DARK_GREEN = "#117733"
# Neutrals.
DARK_GREY = "#555555"  # reference lines (θ) and the Brute Force baseline
GREY = "#7f7f7f"  # captures that are not observations
GRID_GREY = "#e3e6ea"
AXIS_GREY = "#8a939e"
WHITE = "#ffffff"

#: Lines and bars of plain series (a site's probability curves, histogram series), in order.
CURVE_COLOURS = (BLUE, SKY_BLUE, VERMILLION, ORANGE, GREEN, PURPLE)
#: Two series drawn side by side (the homepage and website levels of the Overview histogram):
#: dark blue against vermillion differ in hue and in lightness for every common colour-vision
#: deficiency, where blue against sky blue differ in lightness only.
PAIR_COLOURS = (BLUE, VERMILLION)

#: model: (colour, marker symbol, line dash). HACS is always the strong blue.
MODEL_STYLE: dict[str, tuple[str, str, str]] = {
    "hacs": (BLUE, "circle", "solid"),
    "random": (VERMILLION, "square", "dash"),
    "brute_force": (DARK_GREY, "diamond", "dot"),
    "last_obs": (GREEN, "triangle-up", "dashdot"),
    "cho_garcia_molina": (PURPLE, "x", "longdash"),
    "nad": (ORANGE, "cross", "dot"),
    "sad": (SKY_BLUE, "star", "dash"),
    "aad": (OLIVE, "hexagon", "longdashdot"),
    "gad": (WINE, "pentagon", "dashdot"),
    "age": (DARK_GREEN, "triangle-down", "dot"),
    "gp4c": (PURPLE, "diamond-wide", "solid"),
    "lws": (DARK_GREEN, "bowtie", "solid"),
}
#: The style of a model missing from MODEL_STYLE.
OTHER_MODEL_STYLE = (BLACK, "circle", "solid")


def layout(**extra: Any) -> dict[str, Any]:
    """A figure layout in the HACS style; ``extra`` entries replace the defaults."""
    result: dict[str, Any] = {
        "font": FONT,
        "margin": {"l": 56, "r": 16, "t": 40, "b": 48},
        "paper_bgcolor": WHITE,
        "plot_bgcolor": WHITE,
        "hovermode": "closest",
        "legend": legend_below(),
    }
    result.update(extra)
    return result


def legend_below(**extra: Any) -> dict[str, Any]:
    """A horizontal legend at the foot of the figure, under the x axis's title at any width.

    It is placed in the figure's own coordinates (``yref="container"``), so Plotly makes room
    for it and for the axis title (axes have ``automargin``) whatever the number of rows the
    legend wraps to on a narrow screen; a legend placed at a fraction of the plot's height met
    the axis title once it held more rows.
    """
    return _legend(0, "bottom", extra)


def legend_above(**extra: Any) -> dict[str, Any]:
    """A horizontal legend at the top of a figure without a title, above the plot, with room
    made for it as for :func:`legend_below`."""
    return _legend(1, "top", extra)


def _legend(y: int, yanchor: str, extra: dict[str, Any]) -> dict[str, Any]:
    """A horizontal legend from the left, at height ``y`` of the figure's own coordinates."""
    result: dict[str, Any] = {
        "orientation": "h",
        "x": 0,
        "xanchor": "left",
        "yref": "container",
        "y": y,
        "yanchor": yanchor,
    }
    result.update(extra)
    return result


def axis(title_text: str | None = None, **extra: Any) -> dict[str, Any]:
    """An axis in the HACS style (light grid, grey axis line, ticks outside, no zero line);
    its title is shown as written."""
    result: dict[str, Any] = {
        "gridcolor": GRID_GREY,
        "zeroline": False,
        "linecolor": AXIS_GREY,
        "ticks": "outside",
        # Margins grow to fit tick labels and titles rather than clip them on a narrow screen.
        "automargin": True,
    }
    if title_text is not None:
        result["title"] = {"text": plain_text(title_text)}
    result.update(extra)
    return result


def hatch(colour: str) -> dict[str, Any]:
    """A bar's hatching in white over ``colour``: the second of two series side by side, so that
    colour does not carry the difference alone."""
    return {
        "shape": "/",
        "bgcolor": colour,
        "fgcolor": WHITE,
        "fillmode": "replace",
        "size": 7,
        "solidity": 0.2,
    }


def heading(text: str) -> dict[str, Any]:
    """A figure title, left-aligned, a little larger than the text; shown as written."""
    return {"text": plain_text(text), "x": 0, "font": {"size": 14}}


def plain_text(text: object) -> str:
    """``text`` as Plotly shows it literally: ``&``, ``<`` and ``>`` escaped as entities.

    Quotes stay as they are: Plotly decodes ``&amp;``, ``&lt;``, ``&gt;`` and numeric entities
    but not ``&quot;``, which would show as typed; without ``<`` no quote can end up inside a
    tag.
    """
    return html.escape(str(text), quote=False)
