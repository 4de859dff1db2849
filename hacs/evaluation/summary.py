"""What an evaluation's models and levels are called, and a plain-text summary of a stored
evaluation for a terminal (``manage.py evaluate``). The dashboard's charts use the same names."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

LEVEL_LABELS = {"homepage": "Homepage", "website": "Website"}
#: The scorers' names as the paper writes them.
MODEL_LABELS = {
    "hacs": "HACS",
    "random": "Random",
    "brute_force": "Brute Force",
    "last_obs": "Last-Obs",
    "cho_garcia_molina": "Cho–Garcia-Molina",
    "nad": "NAD",
    "sad": "SAD",
    "aad": "AAD",
    "gad": "GAD",
    "age": "Age",
    "gp4c": "GP4C (learned)",
    "lws": "LWS (learned)",
}

#: Model names on this page: the paper's method named as the paper's, beside HACS's default.
EVALUATION_LABELS = {
    **MODEL_LABELS,
    "hacs": "HACS, paper's g",
    "posterior": "HACS posterior (default)",
}

SUMMARY_SELECTION = ("posterior", "hacs", "random", "brute_force")
SUMMARY_RANKING = ("posterior", "hacs", "gp4c", "lws", "cho_garcia_molina", "last_obs", "random")


def summary_lines(results: Mapping[str, Any], average: str = "micro") -> list[str]:
    """A plain-text summary for a terminal: per level, F1 at θ̂ (Table I, with each θ̂) and mean
    weighted P@K per w, for the posterior, the paper's HACS and the baselines (models a run
    stored before the posterior lacks are left out)."""
    table = {
        (r["level"], r["average"], r["w_weeks"], r["model"]): r for r in results.get("table", [])
    }
    pak = {(r["level"], r["w_weeks"], r["model"]): r for r in results.get("pak", [])}
    lines: list[str] = []

    def number(value: float | None, digits: int = 3) -> str:
        return "–" if value is None else f"{value:.{digits}f}"

    for level in results.get("levels", {}):
        ws = sorted({key[2] for key in table if key[0] == level})
        chosen = [m for m in SUMMARY_SELECTION if (level, average, ws[0], m) in table] if ws else []
        lines.append(f"{LEVEL_LABELS.get(level, level)} level, Table I ({average}): F1 at θ̂ (θ̂)")
        lines.append("  w  " + "".join(f"{EVALUATION_LABELS[m]:>28}" for m in chosen))
        for w in ws:
            cells = []
            for m in chosen:
                row = table[(level, average, w, m)]
                theta = (
                    "" if m in ("random", "brute_force") else f" ({number(row['theta_hat'], 1)})"
                )
                cells.append(f"{number(row['f1']) + theta:>28}")
            lines.append(f"{w:>3}  " + "".join(cells))
        ranked = [m for m in SUMMARY_RANKING if ws and (level, ws[0], m) in pak]
        lines.append(f"{LEVEL_LABELS.get(level, level)} level, mean weighted P@K")
        lines.append("  w  " + "".join(f"{EVALUATION_LABELS[m]:>28}" for m in ranked))
        for w in ws:
            cells = [f"{number(pak[(level, w, m)]['weighted_p_at_k']):>28}" for m in ranked]
            lines.append(f"{w:>3}  " + "".join(cells))
    return lines
