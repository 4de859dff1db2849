"""Evaluation 1: selection counts, P/R/F1 (micro and macro) and θ̂.

Part of :mod:`hacs.evaluation`; pure (NumPy only). HACS paper, Section III-B; DESIGN.md rule 9.

HACS selects D = {u ∈ U : p ≥ θ}; Brute Force selects U; Random selects |D| sites of U at
random, evaluated by its exact expectation TP = |D|·|Pos|/|U| (every count and every P, R, F1 of
Random is then an exact expectation, because their denominators |D|, |Pos| and |D| + |Pos| do not
depend on the draw). *Micro*: sum TP, FP, FN over t, then P, R, F1. *Macro*: P, R, F1 per t,
averaged over the t where each is defined. P = TP/(TP + FP) is undefined when nothing is
selected, R = TP/(TP + FN) when there are no positives, and *our reading* for F1 is the count
form F1 = 2TP/(2TP + FP + FN): undefined only when nothing is selected and there are no positives
(P and R both undefined), 0 whenever TP = 0 otherwise (also when P + R = 0), and equal to
2PR/(P + R) whenever both are defined. θ̂ is the θ with the highest F1 (ties: the smaller θ; None
when F1 is undefined for every θ); Table I evaluates Random and Brute Force at HACS's θ̂.

The posterior (HACS's default reading, ``hacs.evaluation.windows``) selects the same way by its
own p, D' = {u ∈ U : p' ≥ θ}, with its own θ̂ chosen by the same rule from its own F1; its Table
I rows are at that θ̂. (Random is not matched to the posterior's |D'|: Random's expected F1
grows with |D| and reaches Brute Force's at |D| = |U|, so Brute Force is the stronger baseline
for both.)

Every θ comes from one histogram of p per (level, w) and selecting model.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from hacs.evaluation.table import BoolArray, FloatArray, IntArray
from hacs.evaluation.windows import _Batch

__all__ = ["SELECTION_MODELS"]

#: Models of Evaluation 1 (selection by θ).
SELECTION_MODELS = ("hacs", "posterior", "random", "brute_force")
#: The models among them that select by their own p ≥ θ, each with its own θ̂.
_SELECTING = ("hacs", "posterior")


@dataclass(frozen=True, eq=False)
class _PointCounts:
    """Per reference point r: |U|, |Pos|, and per θ (columns) HACS's |D| and TP; the same for
    the posterior in ``posterior_selected`` and ``posterior_true_positives``."""

    eligible: IntArray
    positives: IntArray
    selected: IntArray
    true_positives: IntArray
    posterior_selected: IntArray
    posterior_true_positives: IntArray


def _selection_counts(batch: _Batch, thetas: FloatArray, n_refs: int) -> _PointCounts:
    """Evaluation 1 counts for every θ from one histogram of p (p ≥ θ_j iff bin > j).

    HACS paper, Section III-B: |D_{w,t}(θ)|, its true positives, |U| and |Pos| per t; for HACS's
    p and for the posterior's.
    """
    n_bins = thetas.size + 1
    positive = batch.positive

    def at_least(probability: FloatArray, weights: BoolArray | None) -> IntArray:
        bins = np.searchsorted(thetas, probability, side="right")  # how many θ ≤ p
        cells = batch.r * n_bins + bins
        hist = np.bincount(cells, weights=weights, minlength=n_refs * n_bins)
        hist = hist.reshape(n_refs, n_bins).astype(np.int64)
        above = np.cumsum(hist[:, ::-1], axis=1)[:, ::-1]  # above[:, j] = Σ_{bin ≥ j}
        result: IntArray = above[:, 1:]  # p ≥ θ_j  ⇔  bin ≥ j + 1
        return result

    return _PointCounts(
        eligible=np.bincount(batch.r, minlength=n_refs).astype(np.int64),
        positives=np.bincount(batch.r, weights=positive, minlength=n_refs).astype(np.int64),
        selected=at_least(batch.probability, None),
        true_positives=at_least(batch.probability, positive),
        posterior_selected=at_least(batch.posterior, None),
        posterior_true_positives=at_least(batch.posterior, positive),
    )


def _ratio(num: float, den: float) -> float | None:
    """num/den, or None (undefined) when den is 0 (P, R and F1 of HACS paper, Section III-B)."""
    return num / den if den > 0 else None


def _micro(tp: float, selected: float, positives: float) -> tuple[float | None, ...]:
    """P, R, F1 from summed counts; F1 = 2TP/(2TP + FP + FN) = 2TP/(|D| + |Pos|).

    HACS paper, Section III-B, micro-averaging over t.
    """
    return (_ratio(tp, selected), _ratio(tp, positives), _ratio(2.0 * tp, selected + positives))


def _macro(tp: FloatArray, selected: FloatArray, positives: FloatArray) -> tuple[float | None, ...]:
    """P, R, F1 per reference point, each averaged over the points where it is defined.

    HACS paper, Section III-B, macro-averaging over t.
    """

    def mean(num: FloatArray, den: FloatArray) -> float | None:
        defined = den > 0
        if not defined.any():
            return None
        return float(np.mean(num[defined] / den[defined]))

    return mean(tp, selected), mean(tp, positives), mean(2.0 * tp, selected + positives)


def _clean(value: float | None) -> float | None:
    """A metric for JSON: None where undefined or not finite (no paper rule)."""
    if value is None or not math.isfinite(value):
        return None
    return float(value)


def _selection_rows(
    level: str, w: int, thetas: FloatArray, counts: _PointCounts
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Curve rows (micro and macro, every θ and model) and Table I rows for one (level, w).

    HACS paper, Section III-B and Table I (Figures 8-10 plot the curves); Random by its exact
    expectation TP = |D|·|Pos|/|U| with HACS's |D|. θ̂ is HACS's for HACS, Random and Brute
    Force, the posterior's own for the posterior (the module docstring).
    """
    pos = counts.positives.astype(np.float64)
    curves: list[dict[str, Any]] = []
    f1s: dict[tuple[str, str], list[float | None]] = {}
    metrics: dict[tuple[str, int, str], tuple[float | None, ...]] = {}
    for j, theta in enumerate(thetas.tolist()):
        for model, (tp, sel) in _selections(counts, j).items():
            totals = _totals(model, tp, sel, pos, counts.eligible.astype(np.float64))
            for average, values in (
                ("micro", _micro(float(tp.sum()), float(sel.sum()), float(pos.sum()))),
                ("macro", _macro(tp, sel, pos)),
            ):
                precision, recall, f1 = values
                metrics[(average, j, model)] = values
                if model in _SELECTING:
                    f1s.setdefault((average, model), []).append(f1)
                curves.append(
                    {
                        "level": level,
                        "average": average,
                        "w_weeks": w,
                        "theta": theta,
                        "model": model,
                        "precision": _clean(precision),
                        "recall": _clean(recall),
                        "f1": _clean(f1),
                        **totals,
                    }
                )
    return curves, _table_rows(level, w, thetas, f1s, metrics)


def _selections(counts: _PointCounts, j: int) -> dict[str, tuple[FloatArray, FloatArray]]:
    """Per model, its true positives and selected sites per reference point at θ number j."""
    u = counts.eligible.astype(np.float64)
    pos = counts.positives.astype(np.float64)
    d = counts.selected[:, j].astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        random_tp = np.where(u > 0, d * pos / u, 0.0)
    return {
        "hacs": (counts.true_positives[:, j].astype(np.float64), d),
        "posterior": (
            counts.posterior_true_positives[:, j].astype(np.float64),
            counts.posterior_selected[:, j].astype(np.float64),
        ),
        "random": (random_tp, d),
        "brute_force": (pos, u),
    }


def _totals(
    model: str, tp: FloatArray, sel: FloatArray, pos: FloatArray, u: FloatArray
) -> dict[str, float]:
    """TP, FP, FN and TN summed over t (whole numbers but for Random's expectations)."""
    totals = {
        "tp": float(tp.sum()),
        "fp": float((sel - tp).sum()),
        "fn": float((pos - tp).sum()),
        "tn": float((u - sel - pos + tp).sum()),
    }
    if model != "random":
        totals = {key: int(round(value)) for key, value in totals.items()}
    return totals


def _table_rows(
    level: str,
    w: int,
    thetas: FloatArray,
    f1s: dict[tuple[str, str], list[float | None]],
    metrics: dict[tuple[str, int, str], tuple[float | None, ...]],
) -> list[dict[str, Any]]:
    """Table I's rows for one (level, w): each model's metrics at its θ̂."""
    table: list[dict[str, Any]] = []
    for average in ("micro", "macro"):
        for model in SELECTION_MODELS:
            best = _theta_hat(f1s[(average, model if model in _SELECTING else "hacs")])
            values = metrics[(average, best, model)] if best is not None else (None,) * 3
            table.append(
                {
                    "level": level,
                    "average": average,
                    "w_weeks": w,
                    "model": model,
                    "theta_hat": None if best is None else float(thetas[best]),
                    "precision": _clean(values[0]),
                    "recall": _clean(values[1]),
                    "f1": _clean(values[2]),
                }
            )
    return table


def _theta_hat(f1: Sequence[float | None]) -> int | None:
    """Index of the highest F1 (the first, i.e. smallest θ, among equals); None if none.

    HACS paper, Section III-B: θ̂, the threshold that maximises F1.
    """
    best: int | None = None
    best_value = -math.inf
    for j, value in enumerate(f1):
        if value is not None and value > best_value:
            best, best_value = j, value
    return best
