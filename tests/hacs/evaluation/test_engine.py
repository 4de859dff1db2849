"""hacs.evaluation.engine: ``evaluate`` end to end — a hand-worked case, the slow reference
(HACS Section III, GP4C Sections 4.2.2 and 5.1), argument checks, the output's shape, and
further scorers (learned schedulers) as models of Evaluation 2."""

from __future__ import annotations

import itertools
import math
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from hacs.evaluation import (
    DEFAULT_THETAS,
    RANKING_MODELS,
    SELECTION_MODELS,
    TERMINALS,
    ObservationTable,
    evaluate,
    reference_points,
    window_scores,
)
from tests.hacs.evaluation._helpers import (
    Obs,
    close,
    columns,
    hand_table,
    random_history,
    small_table,
    table_of,
)
from tests.hacs.evaluation._slow import SlowPoint, mean_defined, prf, slow_point, slow_window

PROJECT = Path(__file__).resolve().parents[3]


# --------------------------------------------------------------------------------------------
# Hand-worked example, end to end
# --------------------------------------------------------------------------------------------


def test_hand_worked_evaluation() -> None:
    result = evaluate({"homepage": hand_table()}, start=7.0, end=7.0, w_weeks=[1], details=True)
    assert result["parameters"]["reference_points"] == 1
    (point,) = result["points"]
    assert (point["eligible"], point["positives"], point["budget_k"]) == (3, 2, 1)
    # p = (0.98, 0, 0): θ = 0 selects all three, 0 < θ < 1 selects site 0, θ = 1 none.
    assert point["hacs_selected"] == [3] + [1] * 9 + [0]
    assert point["hacs_tp"] == [2] + [1] * 9 + [0]

    curves = {(r["average"], r["theta"], r["model"]): r for r in result["curves"]}
    assert curves[("micro", 0.0, "hacs")]["f1"] == pytest.approx(0.8)
    assert curves[("micro", 0.5, "hacs")]["f1"] == pytest.approx(2 / 3)
    assert curves[("micro", 1.0, "hacs")]["precision"] is None
    assert curves[("micro", 1.0, "hacs")]["recall"] == 0.0
    random = curves[("micro", 0.5, "random")]  # one of three at random, two positives
    assert random["tp"] == pytest.approx(2 / 3) and random["fp"] == pytest.approx(1 / 3)
    assert random["precision"] == pytest.approx(2 / 3) and random["recall"] == pytest.approx(1 / 3)
    brute = curves[("micro", 0.5, "brute_force")]
    assert (brute["tp"], brute["fp"], brute["fn"], brute["tn"]) == (2, 1, 0, 0)

    table = {(r["average"], r["model"]): r for r in result["table"]}
    assert table[("micro", "hacs")]["theta_hat"] == 0.0  # F1 0.8 beats 2/3
    assert table[("micro", "random")]["theta_hat"] == 0.0
    assert table[("micro", "random")]["f1"] == pytest.approx(0.8)

    # Evaluation 2: expected ranking (site 2 at day 8, site 0 at day 12).
    # HACS ranks 0, then p = 0 by older τ: 2 (τ = 1), 1 (τ = 5): P@1 = 0, P@2 = 1.
    w1, w2 = 1.0, 1 / math.log2(3)
    pak = {r["model"]: r["weighted_p_at_k"] for r in result["pak"]}
    assert pak["hacs"] == pytest.approx(w2 / (w1 + w2))
    assert pak["last_obs"] == pytest.approx(1.0)  # t − τ: 6 (site 2), 4 (site 0), 2
    assert pak["random"] == pytest.approx((w1 * 1 / 3 + w2 * 2 / 3) / (w1 + w2))
    budget = {r["model"]: r for r in result["budget"]}
    assert budget["hacs"]["change_rate_at_k"] == 1.0 and budget["hacs"]["ndcg_at_k"] == 1.0
    assert budget["random"]["change_rate_at_k"] == pytest.approx(2 / 3)
    assert budget["random"]["ndcg_at_k"] == pytest.approx(2 / 3)
    assert budget["age"]["change_rate_at_k"] == 1.0  # site 2, last visited longest ago
    assert budget["sad"]["change_rate_at_k"] == 1.0  # site 0's last access was an update


# --------------------------------------------------------------------------------------------
# Against the slow reference
# --------------------------------------------------------------------------------------------


def slow_evaluation(
    observations: list[Obs],
    n_sites: int,
    *,
    start: float,
    end: float,
    w_weeks: list[int],
    method: str,
    fraction: float,
) -> dict[int, list[SlowPoint]]:
    ts: list[float] = []
    r = 0
    while start + r * 7.0 <= end:
        ts.append(start + r * 7.0)
        r += 1
    return {
        w: [
            slow_point(
                slow_window(observations, n_sites, t, w, 7.0, method), DEFAULT_THETAS, fraction
            )
            for t in ts
        ]
        for w in w_weeks
    }


ENGINE_CASES = [
    (0, "observed", 0.05),
    (1, "observed", 0.3),
    (2, "interpolated", 0.2),
    (3, "observed", 1.0),
]
REFERENCE_TS = [7.0 + 7 * r for r in range(11)]
W_WEEKS = [1, 2, 4]
SlowCurves = dict[tuple[str, int, str], tuple[float, float, float, tuple[float | None, ...]]]


@dataclass(frozen=True)
class EngineCase:
    """One random history evaluated by ``evaluate`` and by the slow reference, level by level."""

    result: dict[str, Any]
    slow: dict[str, dict[int, list[SlowPoint]]]  # level -> w -> one point per reference t

    def rows(self, part: str, *keys: str) -> dict[tuple[Any, ...], dict[str, Any]]:
        return {tuple(r[k] for k in keys): r for r in self.result[part]}


@pytest.fixture(scope="module", params=ENGINE_CASES, ids=lambda c: "-".join(map(str, c)))
def engine_case(request: pytest.FixtureRequest) -> EngineCase:
    seed, method, fraction = request.param
    rng = np.random.default_rng(100 + seed)
    n_sites = 12
    observations = random_history(rng, n_sites=n_sites, horizon=84.0, max_pages=3, max_obs=16)
    homepage = [o for o in observations if o.index >= 0 and o.page % 3 == 0]
    levels = {"homepage": homepage, "website": observations}
    result = evaluate(
        {name: table_of(obs, n_sites, seed) for name, obs in levels.items()},
        start=7.0,
        end=80.0,
        w_weeks=W_WEEKS,
        method=method,
        budget_fraction=fraction,
        details=True,
    )
    slow = {
        level: slow_evaluation(
            obs, n_sites, start=7.0, end=80.0, w_weeks=W_WEEKS, method=method, fraction=fraction
        )
        for level, obs in levels.items()
    }
    return EngineCase(result=result, slow=slow)


def slow_curves(slow_points: list[SlowPoint]) -> SlowCurves:
    """(average, θ index, model) -> (TP, selected, positives, expected P/R/F1) of one window."""
    curves: SlowCurves = {}
    for j in range(len(DEFAULT_THETAS)):
        per_model: dict[str, list[tuple[float, float, float]]] = {
            "hacs": [(p.tp[j], p.selected[j], p.positives) for p in slow_points],
            "posterior": [
                (p.posterior_tp[j], p.posterior_selected[j], p.positives) for p in slow_points
            ],
            "random": [
                (
                    p.selected[j] * p.positives / p.eligible if p.eligible else 0.0,
                    p.selected[j],
                    p.positives,
                )
                for p in slow_points
            ],
            "brute_force": [(p.positives, p.eligible, p.positives) for p in slow_points],
        }
        for model, rows in per_model.items():
            tp = sum(r[0] for r in rows)
            sel = sum(r[1] for r in rows)
            pos = sum(r[2] for r in rows)
            per_t = [prf(*r) for r in rows]
            macro = tuple(mean_defined([x[i] for x in per_t]) for i in range(3))
            curves[("micro", j, model)] = (tp, sel, pos, prf(tp, sel, pos))
            curves[("macro", j, model)] = (tp, sel, pos, macro)
    return curves


def test_reference_points_are_weekly_from_the_start() -> None:
    assert reference_points(7.0, 80.0).tolist() == REFERENCE_TS


def test_evaluate_points_match_the_slow_reference(engine_case: EngineCase) -> None:
    # Per reference point: U, Pos, selection sets per θ, ranks and budget metrics.
    points = engine_case.rows("points", "level", "w_weeks", "t")
    for level, by_w in engine_case.slow.items():
        for w, slow_points in by_w.items():
            for t, ref in zip(REFERENCE_TS, slow_points, strict=True):
                got = points[(level, w, t)]
                where = (level, w, t)
                assert (got["eligible"], got["positives"]) == (ref.eligible, ref.positives), where
                assert got["hacs_selected"] == ref.selected, where
                assert got["hacs_tp"] == ref.tp, where
                assert got["posterior_selected"] == ref.posterior_selected, where
                assert got["posterior_tp"] == ref.posterior_tp, where
                assert got["budget_k"] == ref.k, where
                for model in RANKING_MODELS:
                    m = got["models"][model]
                    assert close(m["weighted_p_at_k"], ref.p_at_k[model]), (where, model)
                    assert close(m["ndcg_at_k"], ref.ndcg[model]), (where, model)
                    assert close(m["change_rate_at_k"], ref.change_rate[model]), (where, model)
                    assert m["hits_at_k"] == ref.hits[model], (where, model)


def test_evaluate_curves_match_the_slow_reference(engine_case: EngineCase) -> None:
    # Micro and macro averaging, every θ and model.
    curves = engine_case.rows("curves", "level", "average", "w_weeks", "theta", "model")
    for level, by_w in engine_case.slow.items():
        for w, slow_points in by_w.items():
            for (average, j, model), (tp, sel, pos, expected) in slow_curves(slow_points).items():
                row = curves[(level, average, w, DEFAULT_THETAS[j], model)]
                got_prf = (row["precision"], row["recall"], row["f1"])
                where = (level, average, w, DEFAULT_THETAS[j], model, got_prf, expected)
                assert all(close(g, x) for g, x in zip(got_prf, expected, strict=True)), where
                assert close(row["tp"], tp) and close(row["fp"], sel - tp)
                assert close(row["fn"], pos - tp)


def best_theta(curves: SlowCurves, average: str, model: str) -> int | None:
    """The index of the θ with the best defined F1, ties to the smaller θ; None if none is."""
    f1s = [curves[(average, j, model)][3][2] for j in range(len(DEFAULT_THETAS))]
    defined = [(f, j) for j, f in enumerate(f1s) if f is not None]
    return max(defined, key=lambda x: (x[0], -x[1]))[1] if defined else None


def test_evaluate_theta_hat_matches_the_slow_reference(engine_case: EngineCase) -> None:
    curves = engine_case.rows("curves", "level", "average", "w_weeks", "theta", "model")
    table = engine_case.rows("table", "level", "average", "w_weeks", "model")
    # θ̂: HACS's for HACS, Random and Brute Force; the posterior's own for it.
    takers = {"hacs": ("hacs", "random", "brute_force"), "posterior": ("posterior",)}
    for level, by_w in engine_case.slow.items():
        for w, slow_points in by_w.items():
            expected = slow_curves(slow_points)
            for average, (selecting, models) in itertools.product(
                ("micro", "macro"), takers.items()
            ):
                best = best_theta(expected, average, selecting)
                for model in models:
                    row = table[(level, average, w, model)]
                    if best is None:
                        assert row["theta_hat"] is None
                        continue
                    assert row["theta_hat"] == DEFAULT_THETAS[best]
                    curve = curves[(level, average, w, DEFAULT_THETAS[best], model)]
                    assert row["f1"] == curve["f1"] and row["precision"] == curve["precision"]


def test_evaluate_ranking_means_match_the_slow_reference(engine_case: EngineCase) -> None:
    # Means over t of the ranking metrics.
    pak = engine_case.rows("pak", "level", "w_weeks", "model")
    budget = engine_case.rows("budget", "level", "w_weeks", "model")
    for level, by_w in engine_case.slow.items():
        for w, slow_points in by_w.items():
            for model in RANKING_MODELS:
                assert close(
                    pak[(level, w, model)]["weighted_p_at_k"],
                    mean_defined([p.p_at_k[model] for p in slow_points]),
                )
                row = budget[(level, w, model)]
                assert close(row["ndcg_at_k"], mean_defined([p.ndcg[model] for p in slow_points]))
                assert close(
                    row["change_rate_at_k"],
                    mean_defined([p.change_rate[model] for p in slow_points]),
                )
                hits = sum(p.hits[model] for p in slow_points)
                ks = sum(p.k for p in slow_points)
                pos = sum(p.positives for p in slow_points)
                assert row["tp"] == hits and row["fp"] == ks - hits and row["fn"] == pos - hits
                assert all(
                    close(g, x)
                    for g, x in zip(
                        (row["precision"], row["recall"], row["f1"]),
                        prf(hits, ks, pos),
                        strict=True,
                    )
                )


# --------------------------------------------------------------------------------------------
# Input validation, ordering, output shape
# --------------------------------------------------------------------------------------------


def test_bad_arguments_are_rejected() -> None:
    tables = {"homepage": ObservationTable(**columns())}
    with pytest.raises(ValueError, match="end must not be before start"):
        evaluate(tables, start=10.0, end=5.0)
    with pytest.raises(ValueError, match="w_weeks"):
        evaluate(tables, start=0.0, end=7.0, w_weeks=[0])
    with pytest.raises(ValueError, match="thetas"):
        evaluate(tables, start=0.0, end=7.0, thetas=[1.5])
    with pytest.raises(ValueError, match="method"):
        evaluate(tables, start=0.0, end=7.0, method="guess")
    with pytest.raises(ValueError, match="budget_fraction"):
        evaluate(tables, start=0.0, end=7.0, budget_fraction=0.0)
    with pytest.raises(ValueError, match="at least one level"):
        evaluate({}, start=0.0, end=7.0)
    with pytest.raises(ValueError, match="prior_every"):
        evaluate(tables, start=0.0, end=7.0, prior_every=0)
    with pytest.raises(ValueError, match="prior_weeks"):
        evaluate(tables, start=0.0, end=7.0, prior_weeks=0)


def test_the_result_does_not_depend_on_row_order_and_is_json() -> None:
    import json

    rng = np.random.default_rng(5)
    observations = random_history(rng, n_sites=6, horizon=60.0, max_pages=3, max_obs=12)
    calls: list[float] = []
    results = [
        evaluate(
            {"website": table_of(observations, 6, seed)},
            start=14.0,
            end=56.0,
            w_weeks=[1, 3],
            progress=calls.append,
        )
        for seed in (1, 2)
    ]
    assert json.dumps(results[0], allow_nan=False) == json.dumps(results[1], allow_nan=False)
    assert calls == [0.5, 1.0, 0.5, 1.0]
    models = {r["model"] for r in results[0]["pak"]}
    assert models == {*RANKING_MODELS, "random"}
    assert len(results[0]["curves"]) == 2 * 2 * 11 * len(
        SELECTION_MODELS
    )  # average × w × θ × model


def test_importing_the_evaluation_core_does_not_import_django() -> None:
    code = (
        "import sys\nimport hacs.evaluation\n"
        "loaded = sorted(m for m in sys.modules if m == 'django' or m.startswith('django.'))\n"
        "assert not loaded, loaded\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=PROJECT, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr


def test_empty_levels_give_undefined_metrics() -> None:
    empty = ObservationTable(
        site=np.zeros(0, np.int64),
        page=np.zeros(0, np.int64),
        time=np.zeros(0),
        page_index=np.zeros(0, np.int64),
        link_floor=np.zeros(0, np.int64),
        n_sites=3,
    )
    result = evaluate({"homepage": empty}, start=7.0, end=21.0, w_weeks=[1, 2], details=True)
    assert all(p["eligible"] == 0 for p in result["points"])
    assert all(r["f1"] is None and r["tp"] == 0 for r in result["curves"] if r["model"] != "random")
    assert all(r["theta_hat"] is None for r in result["table"])
    assert all(r["weighted_p_at_k"] is None for r in result["pak"])
    assert all(r["ndcg_at_k"] is None and r["change_rate_at_k"] is None for r in result["budget"])
    assert window_scores(empty, t=7.0, w_weeks=1).site.size == 0


# --------------------------------------------------------------------------------------------
# Further scorers as models of Evaluation 2
# --------------------------------------------------------------------------------------------


def test_scorers_see_each_windows_sites_and_terminals() -> None:
    table = small_table(17)
    seen: list[tuple[float, list[int]]] = []

    def spy(t: float, sites: np.ndarray, columns: dict[str, np.ndarray]) -> np.ndarray:
        single = window_scores(table, t=t, w_weeks=3)
        assert np.array_equal(sites, single.site)
        for name in TERMINALS:
            assert np.array_equal(columns[name], single.terminals[name])
        seen.append((t, sites.tolist()))
        return -sites.astype(float)

    evaluate(
        {"homepage": table}, start=70.0, end=120.0, w_weeks=[3], scorers={"homepage": {"spy": spy}}
    )
    assert [t for t, _ in seen] == [70.0, 77.0, 84.0, 91.0, 98.0, 105.0, 112.0, 119.0]


@pytest.mark.parametrize(
    ("scorers", "message"),
    [
        ({"website": {"x": lambda t, s, c: s}}, "level without a table"),
        ({"homepage": {"hacs": lambda t, s, c: s}}, "must be new"),
        ({"homepage": {"short": lambda t, s, c: s[:-1]}}, "scorer 'short' gave"),
    ],
)
def test_bad_scorers_are_refused_by_name(scorers: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        evaluate({"homepage": small_table(1)}, start=60.0, end=120.0, w_weeks=[2], scorers=scorers)
