"""hacs.evaluation.ranking (with hacs.evaluation.metrics): the Random baseline's exact
expectation against seeded simulation — P and R at a θ (Evaluation 1), weighted P@K
(Evaluation 2), NDCG@k and ChangeRate@k (DESIGN.md rules 9-11)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pytest

from hacs.evaluation import DEFAULT_THETAS, evaluate, reference_points
from tests.hacs.evaluation._helpers import random_history, table_of
from tests.hacs.evaluation._slow import (
    SlowSite,
    slow_budget,
    slow_discount,
    slow_weighted_p_at_k,
    slow_window,
)


@dataclass
class RandomDraws:
    """One window's metrics under ``draws`` random orders, one value a draw where defined."""

    tp: list[int] = field(default_factory=list)
    precision: list[float] = field(default_factory=list)
    recall: list[float] = field(default_factory=list)
    pak: list[float] = field(default_factory=list)
    ndcg: list[float] = field(default_factory=list)
    rate: list[float] = field(default_factory=list)


def draw_random_orders(
    sites: dict[int, SlowSite], sim: np.random.Generator, draws: int, theta: float
) -> RandomDraws:
    universe = sorted(sites)
    positives = [u for u in universe if math.isfinite(sites[u].first_update)]
    pos_set = set(positives)
    expected = sorted(positives, key=lambda u: (sites[u].first_update, u))
    d = sum(sites[u].probability >= theta for u in universe)
    k = slow_budget(len(universe), 0.2) if universe else 0
    idcg = sum(slow_discount(i) for i in range(1, min(k, len(positives)) + 1))
    out = RandomDraws()
    for _ in range(draws):
        order = [universe[i] for i in sim.permutation(len(universe))]
        tp = sum(u in pos_set for u in order[:d])
        out.tp.append(tp)
        if d:
            out.precision.append(tp / d)
        if positives:
            out.recall.append(tp / len(positives))
            out.pak.append(slow_weighted_p_at_k(order, expected))
            out.ndcg.append(
                sum(slow_discount(i) for i, u in enumerate(order[:k], 1) if u in pos_set) / idcg
            )
        if universe:
            out.rate.append(sum(u in pos_set for u in order[:k]) / k)
    return out


def mean_of_means(samples: list[list[float]]) -> float:
    return float(np.mean([np.mean(s) for s in samples if s]))


def test_random_expectations_match_simulation() -> None:
    rng = np.random.default_rng(7)
    n_sites = 40
    observations = random_history(rng, n_sites=n_sites, horizon=84.0, max_pages=3, max_obs=16)
    table = table_of(observations, n_sites)
    result = evaluate(
        {"website": table}, start=14.0, end=70.0, w_weeks=[2], budget_fraction=0.2, details=True
    )
    windows = [
        slow_window(observations, n_sites, t, 2, 7.0, "observed")
        for t in reference_points(14.0, 70.0).tolist()
    ]
    draws = 4000
    sim = np.random.default_rng(11)
    theta = DEFAULT_THETAS[3]  # θ = 0.3
    found = [draw_random_orders(sites, sim, draws, theta) for sites in windows]
    tp_sum = sum(tp / draws for window in found for tp in window.tp)

    curves = {(r["average"], r["theta"]): r for r in result["curves"] if r["model"] == "random"}
    micro = curves[("micro", theta)]
    assert micro["tp"] == pytest.approx(tp_sum, rel=0.03)
    macro = curves[("macro", theta)]
    assert macro["precision"] == pytest.approx(
        mean_of_means([w.precision for w in found]), rel=0.03
    )
    assert macro["recall"] == pytest.approx(mean_of_means([w.recall for w in found]), rel=0.03)
    (pak_row,) = [r for r in result["pak"] if r["model"] == "random"]
    assert pak_row["weighted_p_at_k"] == pytest.approx(
        mean_of_means([w.pak for w in found]), rel=0.03
    )
    (budget_row,) = [r for r in result["budget"] if r["model"] == "random"]
    assert budget_row["ndcg_at_k"] == pytest.approx(
        mean_of_means([w.ndcg for w in found]), rel=0.03
    )
    assert budget_row["change_rate_at_k"] == pytest.approx(
        mean_of_means([w.rate for w in found]), rel=0.03
    )


def test_random_budget_metrics_by_hand() -> None:
    """Windows of 4, 0 and 10 sites holding 1, 0 and 3 positives at a 50 % budget (k = 2, 0,
    5): each of Random's top k is positive with probability |Pos|/|U|."""
    from hacs.evaluation.ranking import random_budget_metrics

    positive = np.zeros(14, dtype=bool)
    positive[[2, 5, 9, 13]] = True
    ndcg, change_rate = random_budget_metrics([0, 4, 4, 14], positive, 0.5)
    assert change_rate[0] == 0.25 and math.isnan(change_rate[1]) and change_rate[2] == 0.3
    # Discounts 1, 1, 1/ln 3, 1/ln 4, 1/ln 5 (ranks below e undiscounted).
    d = [1.0, 1.0, 1 / math.log(3), 1 / math.log(4), 1 / math.log(5)]
    assert ndcg[0] == pytest.approx(sum(d[:2]) * 0.25 / d[0])
    assert math.isnan(ndcg[1])
    assert ndcg[2] == pytest.approx(sum(d) * 0.3 / sum(d[:3]))
