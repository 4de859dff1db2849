"""The Evaluation page's sections on learned schedulers (GP4C, LWS) — pure (stdlib only).

What each learned scheduler of a run is (its simplified formula or its coefficients), how it
trained (a sentence and, for GP4C, its training curve) and how it ranks beside the models it is
compared with. ``dashboard.charts.evaluation`` re-exports the public names with the page's other
figures.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dashboard.charts.style import DARK_GREY, PURPLE, Figure, axis, heading, layout
from hacs.evaluation.summary import EVALUATION_LABELS, LEVEL_LABELS

__all__ = ["LEARNED_COMPARED", "learned_figures", "learned_sections"]

# --------------------------------------------------------------------------------------------
# Learned schedulers: what each is, how it trained, and how it ranks in this run
# --------------------------------------------------------------------------------------------

#: The models a learned scheduler is compared with, in the order of its table.
LEARNED_COMPARED = (
    "posterior",
    "hacs",
    "cho_garcia_molina",
    "nad",
    "sad",
    "aad",
    "gad",
    "last_obs",
    "age",
    "random",
)


def _gp4c_formula(model: Mapping[str, Any]) -> str:
    """A GP4C function as people read it: simplified (``hacs.learning.formula``), or as stored
    when its expression cannot be read."""
    # Imported here: the learning modules load DEAP and the evaluation engine, which the
    # charts of a run without a learned scheduler never need.
    from hacs.learning.formula import readable_formula

    try:
        return readable_formula(str(model["expression"])).text
    except (KeyError, ValueError):
        return str(model.get("formula", ""))


def learned_sections(results: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One section per learned scheduler of a run (``results["learned"]``): ``title``,
    ``key`` (of its training-curve figure in :func:`learned_figures`), ``note`` (its period, and
    whether the run's period overlaps it), ``formula`` (GP4C) or ``coefficients`` (LWS: rows of
    ``name``, ``weight``), ``fit`` (a sentence), ``w_weeks`` (the history size of the table)
    and ``rows``: per model ``label``, ``ndcg``, ``change_rate``, ``pak`` and ``mine`` (the
    learned one), the best of each column marked ``best_*``."""
    sections = []
    run_w = list(results.get("parameters", {}).get("w_weeks", []))
    for item in results.get("learned", []):
        kind, level = item["kind"], item["level"]
        wanted = int(item.get("parameters", {}).get("w_weeks", 12))
        w = wanted if wanted in run_w else (max(run_w) if run_w else wanted)
        model = item.get("model") or {}
        section: dict[str, Any] = {  # the learned run's id is its LearnedScorer's
            "key": f"{kind}-{level}",
            "title": f"{EVALUATION_LABELS[kind]} — {LEVEL_LABELS.get(level, level)} level",
            "note": (
                f"Learned on {item['start']} to {item['end']} (learning run {item['id']}). "
                + (
                    "This run's period overlaps the learning period, so its figures here are "
                    "not test figures: evaluate a later period to test it."
                    if item.get("overlaps")
                    else "This run's period comes after it: its figures here are test figures."
                )
            ),
            "w_weeks": w,
            "rows": _learned_rows(results, kind=kind, level=level, w=w),
        }
        if kind == "gp4c":
            section["formula"] = _gp4c_formula(model)
            section["fit"] = _gp4c_fit(item)
        else:
            section["coefficients"] = [
                {"name": name, "weight": weight}
                for name, weight in zip(
                    model.get("features", []), model.get("coefficients", []), strict=True
                )
            ]
            section["fit"] = _lws_fit(model)
        sections.append(section)
    return sections


def _learned_rows(
    results: Mapping[str, Any], *, kind: str, level: str, w: int
) -> list[dict[str, Any]]:
    """The learned scheduler beside the models it is compared with, at history ``w``: NDCG,
    change rate and P@k, the best of each column marked ``best_*``."""
    budget = {
        (r["model"]): r
        for r in results.get("budget", [])
        if r["level"] == level and r["w_weeks"] == w
    }
    pak = {
        (r["model"]): r for r in results.get("pak", []) if r["level"] == level and r["w_weeks"] == w
    }
    rows = []
    for model in (kind, *LEARNED_COMPARED):
        if model not in budget:
            continue
        rows.append(
            {
                "model": model,
                "label": EVALUATION_LABELS.get(model, model),
                "mine": model == kind,
                "ndcg": budget[model].get("ndcg_at_k"),
                "change_rate": budget[model].get("change_rate_at_k"),
                "pak": pak.get(model, {}).get("weighted_p_at_k"),
            }
        )
    for column in ("ndcg", "change_rate", "pak"):
        values = [r[column] for r in rows if r[column] is not None]
        top = max(values) if values else None
        for r in rows:
            r[f"best_{column}"] = top is not None and r[column] == top
    return rows


def _gp4c_fit(item: Mapping[str, Any]) -> str:
    """How a GP4C function was evolved and how well it fits, in a sentence."""
    params = item.get("parameters", {})
    return (
        f"{params.get('fitness', 'ndcg').upper()} at a "
        f"{params.get('budget_fraction', 0.05):.0%} budget: training "
        f"{_number(item.get('training_fitness'))}, validation "
        f"{_number(item.get('validation_fitness'))}; {params.get('generations')} "
        f"generations of {params.get('population')}, seed {params.get('seed')}."
    )


def _lws_fit(model: Mapping[str, Any]) -> str:
    """How an LWS regression was fitted and how well it predicts held-out sites, in a sentence."""
    return (
        f"{model.get('regressor', 'huber').capitalize()} regression of the log wait "
        f"for the next update on {model.get('samples', 0):,} samples; R² on held-out "
        f"sites {_number(model.get('held_out_r2'))}, mean absolute error of the log "
        f"wait {_number(model.get('held_out_mae'))}."
    )


def _number(value: Any) -> str:
    return "–" if not isinstance(value, int | float) else f"{value:.3f}"


def learned_figures(results: Mapping[str, Any]) -> dict[str, Figure]:
    """Per GP4C scheduler of a run (key ``gp4c-<level>``): its training curve, the best and
    the mean training fitness per generation."""
    figures = {}
    for item in results.get("learned", []):
        curve = item.get("curve") or {}
        if item["kind"] != "gp4c" or not curve.get("best"):
            continue
        fitness = str(item.get("parameters", {}).get("fitness", "ndcg"))
        name = "NDCG@k" if fitness == "ndcg" else "ChangeRate@k"
        generations = list(range(len(curve["best"])))
        figures[f"gp4c-{item['level']}"] = {
            "data": [
                {
                    "type": "scatter",
                    "mode": "lines+markers",
                    "name": "best so far",
                    "x": generations,
                    "y": curve["best"],
                    "line": {"color": PURPLE, "width": 2.5},
                    "hovertemplate": f"generation %{{x}}<br>best {name} %{{y:.4f}}<extra></extra>",
                },
                {
                    "type": "scatter",
                    "mode": "lines",
                    "name": "population mean",
                    "x": generations,
                    "y": curve.get("mean", []),
                    "line": {"color": DARK_GREY, "dash": "dot"},
                    "hovertemplate": f"generation %{{x}}<br>mean {name} %{{y:.4f}}<extra></extra>",
                },
            ],
            "layout": layout(
                title=heading(f"Training: {name} per generation"),
                xaxis=axis("generation", dtick=max(1, len(generations) // 10)),
                yaxis=axis(f"training {name}", rangemode="tozero"),
                margin={"l": 56, "r": 16, "t": 40, "b": 48},
                legend={"orientation": "h", "y": 1.12, "x": 0},
            ),
        }
    return figures
