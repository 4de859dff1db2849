"""hacs.evaluation.ranking (with hacs.evaluation.metrics): the Random baseline's exact
expectation against seeded simulation — P and R at a θ (Evaluation 1), weighted P@K
(Evaluation 2), NDCG@k and ChangeRate@k (DESIGN.md rules 9-11)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from hacs.evaluation import DEFAULT_THETAS, evaluate, reference_points
from tests.hacs.evaluation._helpers import random_history, table_of
from tests.hacs.evaluation._slow import (
    slow_budget,
    slow_discount,
    slow_weighted_p_at_k,
    slow_window,
)


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
    theta_j = 3  # θ = 0.3
    tp_sum = 0.0
    precision: list[list[float]] = []
    recall: list[list[float]] = []
    pak: list[list[float]] = []
    ndcg: list[list[float]] = []
    rate: list[list[float]] = []
    for sites in windows:
        universe = sorted(sites)
        positives = [u for u in universe if math.isfinite(sites[u].first_update)]
        pos_set = set(positives)
        expected = sorted(positives, key=lambda u: (sites[u].first_update, u))
        d = sum(sites[u].probability >= DEFAULT_THETAS[theta_j] for u in universe)
        k = slow_budget(len(universe), 0.2) if universe else 0
        idcg = sum(slow_discount(i) for i in range(1, min(k, len(positives)) + 1))
        ps, rs, pks, ns, cs = [], [], [], [], []
        for _ in range(draws):
            order = [universe[i] for i in sim.permutation(len(universe))]
            tp = sum(u in pos_set for u in order[:d])
            tp_sum += tp / draws
            if d:
                ps.append(tp / d)
            if positives:
                rs.append(tp / len(positives))
                pks.append(slow_weighted_p_at_k(order, expected))
                ns.append(
                    sum(slow_discount(i) for i, u in enumerate(order[:k], 1) if u in pos_set) / idcg
                )
            if universe:
                cs.append(sum(u in pos_set for u in order[:k]) / k)
        precision.append(ps)
        recall.append(rs)
        pak.append(pks)
        ndcg.append(ns)
        rate.append(cs)

    def mean_of_means(samples: list[list[float]]) -> float:
        return float(np.mean([np.mean(s) for s in samples if s]))

    curves = {(r["average"], r["theta"]): r for r in result["curves"] if r["model"] == "random"}
    micro = curves[("micro", DEFAULT_THETAS[theta_j])]
    assert micro["tp"] == pytest.approx(tp_sum, rel=0.03)
    macro = curves[("macro", DEFAULT_THETAS[theta_j])]
    assert macro["precision"] == pytest.approx(mean_of_means(precision), rel=0.03)
    assert macro["recall"] == pytest.approx(mean_of_means(recall), rel=0.03)
    (pak_row,) = [r for r in result["pak"] if r["model"] == "random"]
    assert pak_row["weighted_p_at_k"] == pytest.approx(mean_of_means(pak), rel=0.03)
    (budget_row,) = [r for r in result["budget"] if r["model"] == "random"]
    assert budget_row["ndcg_at_k"] == pytest.approx(mean_of_means(ndcg), rel=0.03)
    assert budget_row["change_rate_at_k"] == pytest.approx(mean_of_means(rate), rel=0.03)


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
