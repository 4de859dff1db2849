"""What each model of the Evaluation page's ranking charts is — pure (stdlib only).

A chart's own legend names the models; the page explains them underneath in one line each
(:func:`ranking_legend`) and, further down, with the formula each ranks by and where it comes
from (:func:`model_details`). HACS runs without the Internet and serves no documentation pages,
so each line links to its model's entry on the same page (``#model-<name>``), and each entry
names the section of ``docs/readings.md`` (shipped with HACS) and of the papers that say more.

The GP4C paper (Section 5.1) takes NAD, SAD, AAD and GAD from Tan and Mitra: each estimates a
page's change rate as a weighted share of the visits that found it changed, and they differ only
in the weights w_i of the n visits, oldest first.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dashboard.charts.style import OTHER_MODEL_STYLE

__all__ = ["MODEL_DETAILS", "MODEL_NOTES", "ModelDetail", "model_details", "ranking_legend"]

_READINGS_EVALUATION = "docs/readings.md, “Evaluation”"
_READINGS_POSTERIOR = (
    "docs/readings.md, “The daily list used day after day: the posterior since the newest copy”"
)
_READINGS_LEARNED = "docs/readings.md, “Learned schedulers: GP4C and LWS”"

#: One line per model: what it ranks the sites by, in words a librarian can check.
MODEL_NOTES: dict[str, str] = {
    "posterior": (
        "HACS's default: the chance of a change since the newest copy, with the site's rate "
        "read from its history and from what is usual in the collection."
    ),
    "hacs": (
        "The HACS paper's method: the chance of a change by t + e from the site's estimated "
        "update rate λ and the time τ of its last update."
    ),
    "gp4c": (
        "A score function learned by genetic programming on a past period of this collection, "
        "combining the estimators below."
    ),
    "lws": (
        "A regression, learned on this collection, of the wait for each site's next update; "
        "ranks by the updates expected since the newest copy."
    ),
    "cho_garcia_molina": (
        "Cho and Garcia-Molina's rate, from the share of visits that found a change, times the "
        "time since the last visit."
    ),
    "last_obs": (
        "CiteSeerX's order, the HACS paper's baseline: the site whose last update lies furthest "
        "back first."
    ),
    "random": "Every order equally likely (its exact expected value, not one draw).",
    "nad": "Nonadaptive: every visit that found a change counts the same.",
    "sad": "Shortsighted adaptive: only the last visit counts (did it find a change?).",
    "aad": "Arithmetically adaptive: recent visits count more, weights growing in equal steps.",
    "gad": "Geometrically adaptive: each visit counts twice the one before, so recent ones rule.",
    "age": "The time since the last visit, whatever the visits found.",
}


@dataclass(frozen=True)
class ModelDetail:
    """A model's entry further down the page: the formula it ranks by and where to read more."""

    formula: str
    source: str


#: Per model: the formula of its score (n visits, X of them found a change; I_i = 1 when
#: visit i did; Δ = t + e − the last visit) and its sources.
MODEL_DETAILS: dict[str, ModelDetail] = {
    "posterior": ModelDetail(
        "p = 1 − (β / (β + Δ))^α with Δ = t + e − the newest copy; (α, β) is the Gamma "
        "posterior of the rate, whose prior is fitted on every site's last 12 weeks before t",
        _READINGS_POSTERIOR + "; " + _READINGS_EVALUATION,
    ),
    "hacs": ModelDetail(
        "g = 1 − exp(−λ (t + e − τ)), λ the maximum-likelihood rate over the window's "
        "irregular observations",
        "HACS paper, Sections II-B to II-E (Eq. 5); " + _READINGS_EVALUATION,
    ),
    "gp4c": ModelDetail(
        "the learned formula shown under “Learned schedulers in this run”",
        "GP4C paper, Section 4; " + _READINGS_LEARNED,
    ),
    "lws": ModelDetail(
        "(t + e − the newest copy) / the predicted interval to the next update",
        "List-wise forum crawling paper, Section 4; " + _READINGS_LEARNED,
    ),
    "cho_garcia_molina": ModelDetail(
        "λ Δ with λ = −ln((n − X + 0.5) / (n + 0.5)) · n / T, T the window's observed span",
        "GP4C paper, Eq. 4 (HACS paper, Eq. 4); " + _READINGS_EVALUATION,
    ),
    "last_obs": ModelDetail("t − τ", "HACS paper, Section III-C; " + _READINGS_EVALUATION),
    "random": ModelDetail(
        "the expectation over all orders, computed exactly", _READINGS_EVALUATION
    ),
    "nad": ModelDetail("λ Δ with λ = Σ w_i I_i, w_i = 1/n", "GP4C paper, Section 5.1"),
    "sad": ModelDetail(
        "λ Δ with λ = I_n (w_n = 1, every other w_i = 0)", "GP4C paper, Section 5.1"
    ),
    "aad": ModelDetail("λ Δ with λ = Σ w_i I_i, w_i = 2i / (n (n + 1))", "GP4C paper, Section 5.1"),
    "gad": ModelDetail(
        "λ Δ with λ = Σ w_i I_i, w_i = 2^(i − 1) / (2^n − 1)", "GP4C paper, Section 5.1"
    ),
    "age": ModelDetail("t − the last visit", "GP4C paper, Section 5.1"),
}

# Plotly's dash patterns for a 3-pixel line (its ``dashStyle``), for the swatch of each line.
_DASHARRAY = {
    "solid": "",
    "dot": "3,3",
    "dash": "9,9",
    "longdash": "15,15",
    "dashdot": "9,3,3,3",
    "longdashdot": "15,6,3,6",
}


def ranking_legend(
    results: Mapping[str, Any],
    *,
    labels: Mapping[str, str],
    styles: Mapping[str, tuple[str, str, str]],
    order: Sequence[str],
) -> list[dict[str, str]]:
    """One entry per model of the run's ranking rows (``pak``, then ``budget``), in ``order``
    (models missing from it last): ``model``, ``label`` (from ``labels``), ``note``, ``anchor``
    (the id of its entry in :func:`model_details`), ``colour`` and ``dasharray`` (its line in
    ``styles``: colour, marker, Plotly dash). The page's template escapes every text.
    """
    seen = [r["model"] for key in ("pak", "budget") for r in results.get(key, [])]
    models = list(dict.fromkeys(seen))
    models.sort(key=lambda m: order.index(m) if m in order else len(order))
    entries = []
    for model in models:
        colour, _symbol, dash = styles.get(model, OTHER_MODEL_STYLE)
        entries.append(
            {
                "model": model,
                "label": labels.get(model, model),
                "note": MODEL_NOTES.get(model, ""),
                "anchor": f"model-{model}",
                "colour": colour,
                "dasharray": _DASHARRAY.get(dash, ""),
            }
        )
    return entries


def model_details(legend: list[dict[str, str]]) -> list[dict[str, str]]:
    """The entries of ``legend`` with the ``formula`` and ``source`` of each model known here."""
    found = []
    for entry in legend:
        detail = MODEL_DETAILS.get(entry["model"])
        if detail is not None:
            found.append({**entry, "formula": detail.formula, "source": detail.source})
    return found
