"""hacs.evaluation.metrics: Evaluation 1's θ̂ and F1 where P or R is undefined (HACS Section
III-B, DESIGN.md rule 9)."""

from __future__ import annotations

import pytest

from hacs.evaluation import evaluate
from tests.hacs.evaluation._helpers import Obs, table_of


def test_theta_hat_takes_the_smaller_theta_on_ties() -> None:
    # Every site has p = 0 or is selected by every θ < 1 alike: F1 is the same for θ 0.1 … 0.9.
    a, b = frozenset("a"), frozenset("b")
    observations = [
        Obs(0, 0, 0.0, 0, a),
        Obs(0, 0, 1.0, 1, a | b),  # m = n = 1 in one day: λ = log 3, p = 1 − 3^−13
        Obs(0, 0, 9.0, 2, a | b | frozenset("c")),  # positive
        Obs(1, 1, 0.0, 0, a),
        Obs(1, 1, 2.0, 1, a),  # λ = 0
    ]
    result = evaluate({"homepage": table_of(observations, 2)}, start=7.0, end=7.0, w_weeks=[1])
    hacs = [r for r in result["curves"] if r["model"] == "hacs" and r["average"] == "micro"]
    f1 = [r["f1"] for r in hacs]
    assert f1[0] == pytest.approx(2 / 3)  # θ = 0: both selected, one positive
    assert f1[1] == f1[5] == 1.0  # θ = 0.1 … : site 0 only
    table = {(r["average"], r["model"]): r for r in result["table"]}
    assert table[("micro", "hacs")]["theta_hat"] == 0.1
    assert table[("macro", "hacs")]["theta_hat"] == 0.1


def test_f1_is_undefined_only_without_selections_and_positives() -> None:
    # No positives at all: R undefined everywhere; P is 0 where something is selected; F1 is 0
    # there (count form 2TP/(2TP + FP + FN)) and undefined at θ = 1 (nothing selected either).
    a, b = frozenset("a"), frozenset("b")
    observations = [Obs(0, 0, 0.0, 0, a), Obs(0, 0, 1.0, 1, a | b), Obs(0, 0, 9.0, 2, a)]
    result = evaluate({"homepage": table_of(observations, 1)}, start=7.0, end=7.0, w_weeks=[1])
    rows = {(r["average"], r["theta"]): r for r in result["curves"] if r["model"] == "hacs"}
    for average in ("micro", "macro"):
        assert rows[(average, 0.5)]["precision"] == 0.0 and rows[(average, 0.5)]["f1"] == 0.0
        assert rows[(average, 0.5)]["recall"] is None
        assert rows[(average, 1.0)]["f1"] is None and rows[(average, 1.0)]["precision"] is None
    pak = {r["model"]: r for r in result["pak"]}
    assert pak["hacs"]["weighted_p_at_k"] is None and pak["hacs"]["points"] == 0
