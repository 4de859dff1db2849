"""GP4C (hacs.learning.gp4c): the score functions, their fitness, and the evolution."""

from __future__ import annotations

import math

import numpy as np
import pytest

from hacs.evaluation import TERMINALS, LearningWindows, evaluate, learning_windows
from hacs.learning.gp4c import (
    CONSTANTS,
    ScoreFunction,
    budget_fitness,
    evolve,
    learn_gp4c,
    training_periods,
)
from tests.hacs.evaluation._helpers import small_table

# The evaluation's model for each GP4C estimator terminal.
MODEL_OF = {"cg": "cho_garcia_molina", "nad": "nad", "sad": "sad", "aad": "aad", "gad": "gad"}


def random_windows(rng: np.random.Generator, points: int, sites: int) -> LearningWindows:
    """Windows with many ties: integer terminals, a few positives per point."""
    sizes = rng.integers(0, sites + 1, points)
    offsets = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
    site = np.concatenate([np.sort(rng.choice(sites, size, replace=False)) for size in sizes])
    total = int(offsets[-1])
    terminals = rng.integers(0, 4, (len(TERMINALS), total)).astype(np.float64)
    first_update = np.where(rng.random(total) < 0.2, rng.uniform(0, 7, total), np.inf)
    return LearningWindows(
        t=np.arange(points, dtype=np.float64) * 7,
        offsets=offsets,
        site=site.astype(np.int64),
        terminals=terminals,
        first_update=first_update,
    )


# --------------------------------------------------------------------------------------------
# Score functions
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expression", "formula"),
    [
        ("div(t, mul(X, n))", "t ÷ (X × n)"),
        ("mul(add(n, X), div(t, 2))", "(n + X) × t ÷ 2"),
        ("div(n, div(X, t))", "n ÷ (X ÷ t)"),
        ("pow(pow(n, X), t)", "(n^X)^t"),
        ("sub(n, sub(X, t))", "n − (X − t)"),
        ("log(add(t, 1))", "log(t + 1)"),
        ("pow(cg, exp(p))", "cg^exp(p)"),
        ("lam", "lam"),
    ],
)
def test_a_function_reads_back_as_written_and_as_a_formula(expression: str, formula: str) -> None:
    function = ScoreFunction(expression)
    assert function.expression == expression
    assert ScoreFunction(function.expression) == function
    assert function.formula == formula


def test_spelling_is_normalised_so_one_function_has_one_expression() -> None:
    assert ScoreFunction("add( X ,  1.000 )").expression == "add(X, 1)"
    assert ScoreFunction("mul(t, 1e-3)").expression == "mul(t, 0.001)"


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("", "ends early"),
        ("add(X, t", "ends early"),
        ("add(X)", "expected ','"),
        ("add(X, t) t", "unexpected 't'"),
        ("foo(X)", "unknown name 'foo'"),
        ("__import__", "unknown name '__import__'"),
        ("add(X; t)", "expected ','"),
    ],
)
def test_a_bad_expression_says_what_is_wrong(expression: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ScoreFunction(expression)


def test_protected_functions_score_every_site_with_a_finite_number() -> None:
    columns = {name: np.array([0.0, -1.0, 2.0, 1e300]) for name in TERMINALS}
    assert ScoreFunction("div(X, n)").score(columns).tolist() == [0.0, 1.0, 1.0, 1.0]
    assert ScoreFunction("div(1, sub(X, X))").score(columns).tolist() == [0.0] * 4
    assert ScoreFunction("log(t)").score(columns).tolist() == [
        0.0,
        0.0,
        math.log(2.0),
        math.log(1e300),
    ]
    assert ScoreFunction("exp(t)").score(columns).tolist() == [
        1.0,
        math.exp(-1.0),
        math.exp(2.0),
        0.0,
    ]
    assert ScoreFunction("pow(t, 0.5)").score(columns).tolist() == [0.0, 0.0, math.sqrt(2.0), 1e150]
    assert ScoreFunction("mul(t, t)").score(columns).tolist() == [0.0, 1.0, 4.0, 0.0]  # overflow
    for expression in ("pow(t, t)", "div(exp(t), log(t))", "sub(mul(t, t), pow(n, X))"):
        assert np.isfinite(ScoreFunction(expression).score(columns)).all()


def test_a_stored_function_ranks_identically_after_loading() -> None:
    rng = np.random.default_rng(3)
    columns = {name: rng.exponential(3.0, 500) for name in TERMINALS}
    function = ScoreFunction("sub(mul(cg, exp(div(X, n))), log(add(t, 0.5)))")
    stored = function.expression  # what the database keeps
    loaded = ScoreFunction(stored)
    assert np.array_equal(function.score(columns), loaded.score(columns))


# --------------------------------------------------------------------------------------------
# Fitness: NDCG@k and ChangeRate@k as Evaluation 2 computes them
# --------------------------------------------------------------------------------------------


def slow_fitness(
    scores: np.ndarray, windows: LearningWindows, fraction: float
) -> tuple[float, float]:
    """Straight from GP4C Eqs. 1-3: sort each point's sites by score, then site; take k."""
    ndcgs, rates = [], []
    for r in range(windows.t.size):
        lo, hi = int(windows.offsets[r]), int(windows.offsets[r + 1])
        n = hi - lo
        if n == 0:
            continue
        k = min(max(1, math.floor(fraction * n + 0.5)), n)
        ranked = sorted(range(lo, hi), key=lambda i: (-scores[i], windows.site[i]))[:k]
        relevant = [bool(np.isfinite(windows.first_update[i])) for i in ranked]
        rates.append(sum(relevant) / k)
        positives = int(np.isfinite(windows.first_update[lo:hi]).sum())
        if positives:

            def d(i: int) -> float:
                return 1.0 if i < math.e else 1.0 / math.log(i)

            dcg = sum(d(i + 1) for i, hit in enumerate(relevant) if hit)
            ndcgs.append(dcg / sum(d(i) for i in range(1, min(k, positives) + 1)))
    return (
        float(np.mean(ndcgs)) if ndcgs else math.nan,
        float(np.mean(rates)) if rates else math.nan,
    )


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("fraction", [0.05, 0.3, 1.0])
def test_fitness_matches_the_slow_definition_with_ties(seed: int, fraction: float) -> None:
    rng = np.random.default_rng(seed)
    windows = random_windows(rng, points=6, sites=60)
    scores = ScoreFunction("add(X, n)").score(windows.columns())  # integers: many ties
    fast = budget_fitness(scores, windows, fraction)
    slow = slow_fitness(scores, windows, fraction)
    for a, b in zip(fast, slow, strict=True):
        assert (math.isnan(a) and math.isnan(b)) or a == pytest.approx(b, rel=1e-12)


@pytest.mark.parametrize("seed", range(3))
def test_each_estimator_terminal_scores_as_the_evaluation_ranks_its_scorer(seed: int) -> None:
    table = small_table(seed)
    start, end, w = 60.0, 180.0, 4
    windows = learning_windows(table, start=start, end=end, w_weeks=w)
    result = evaluate({"homepage": table}, start=start, end=end, w_weeks=[w])
    rows = {row["model"]: row for row in result["budget"]}
    for terminal, model in MODEL_OF.items():
        ndcg, change_rate = budget_fitness(
            ScoreFunction(terminal).score(windows.columns()), windows
        )
        assert same_or_nan(ndcg, rows[model]["ndcg_at_k"]), terminal
        assert same_or_nan(change_rate, rows[model]["change_rate_at_k"]), terminal


def same_or_nan(a: float, b: float | None) -> bool:
    """The same float: one function (hacs.evaluation.ranking) computes both sides."""
    if b is None:
        return math.isnan(a)
    return a == b


# --------------------------------------------------------------------------------------------
# The evolution
# --------------------------------------------------------------------------------------------


def test_periods_leave_no_training_positive_inside_validation() -> None:
    (train_from, train_to), (valid_from, valid_to) = training_periods(0.0, 300.0, e_days=7.0)
    assert (train_from, valid_to) == (0.0, 300.0)
    assert train_to + 7.0 <= valid_from
    with pytest.raises(ValueError, match="too short"):
        training_periods(0.0, 30.0)
    with pytest.raises(ValueError, match="must end after"):
        training_periods(10.0, 10.0)


def test_the_same_seed_evolves_the_same_function() -> None:
    table = small_table(5, n_sites=60, horizon=300.0)
    options = dict(start=40.0, end=290.0, w_weeks=4, generations=4, population=20)
    first = learn_gp4c(table, seed=1, **options)  # type: ignore[arg-type]
    again = learn_gp4c(table, seed=1, **options)  # type: ignore[arg-type]
    assert first == again
    assert len(first.best_per_generation) == 5  # generation 0 and four more


def test_evolution_starts_from_every_terminal_and_never_loses_its_best() -> None:
    table = small_table(9, n_sites=60, horizon=300.0)
    (a, b), (c, d) = training_periods(40.0, 290.0)
    training = learning_windows(table, start=a, end=b, w_weeks=4)
    validation = learning_windows(table, start=c, end=d, w_weeks=4)
    result = evolve(training, validation, generations=5, population=24, seed=2)
    best = np.array(result.best_per_generation)
    assert (np.diff(best) >= 0).all()  # the kept best never gets worse
    single = max(
        budget_fitness(ScoreFunction(name).score(training.columns()), training)[0]
        for name in TERMINALS
    )
    assert best[0] >= single
    # The reported figures are the function's own.
    chosen = result.function
    assert (
        result.validation_fitness
        == budget_fitness(chosen.score(validation.columns()), validation)[0]
    )
    assert result.training_fitness == budget_fitness(chosen.score(training.columns()), training)[0]
    assert chosen.depth <= 10
    assert set(chosen.expression.replace("(", " ").replace(")", " ").replace(",", " ").split()) <= (
        set(TERMINALS)
        | {"add", "sub", "mul", "div", "log", "pow", "exp"}
        | {f"{c:g}" for c in CONSTANTS}
    )


def test_bad_options_are_refused_by_name() -> None:
    windows = random_windows(np.random.default_rng(0), 3, 10)
    with pytest.raises(ValueError, match="fitness must be one of ndcg, changerate"):
        evolve(windows, windows, fitness="f1")
    with pytest.raises(ValueError, match="population at least 2"):
        evolve(windows, windows, population=1)


# --------------------------------------------------------------------------------------------
# Learned scorers as models of Evaluation 2
# --------------------------------------------------------------------------------------------


def test_a_scorer_that_copies_a_terminal_gets_that_scorers_figures() -> None:
    table = small_table(13)
    function = ScoreFunction("cg")
    result = evaluate(
        {"homepage": table},
        start=60.0,
        end=180.0,
        w_weeks=[2, 5],
        details=True,
        scorers={"homepage": {"gp4c": lambda t, sites, columns: function.score(columns)}},
    )
    pak = {(r["w_weeks"], r["model"]): r for r in result["pak"]}
    budget = {(r["w_weeks"], r["model"]): r for r in result["budget"]}
    for w in (2, 5):
        for rows in (pak, budget):
            mine = {k: v for k, v in rows[(w, "gp4c")].items() if k != "model"}
            theirs = {k: v for k, v in rows[(w, "cho_garcia_molina")].items() if k != "model"}
            assert mine == theirs
    assert all("gp4c" in point["models"] for point in result["points"])


def test_scoring_in_blocks_gives_every_site_its_own_score() -> None:
    from hacs.learning import gp4c

    rng = np.random.default_rng(21)
    size = gp4c._BLOCK * 2 + 17  # blocks of the full size and a short last one
    columns = {name: rng.exponential(2.0, size) for name in TERMINALS}
    function = ScoreFunction("add(mul(cg, exp(div(X, n))), sub(log(t), pow(lam, p)))")
    whole = gp4c._finite(gp4c._evaluate(function._tree, columns, size))
    assert np.array_equal(function.score(columns), whole)


def test_scoring_on_several_processes_evolves_the_same_function(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from hacs.learning import gp4c

    table = small_table(9, n_sites=60, horizon=300.0)
    (a, b), (c, d) = training_periods(40.0, 290.0)
    training = learning_windows(table, start=a, end=b, w_weeks=4)
    validation = learning_windows(table, start=c, end=d, w_weeks=4)
    alone = evolve(training, validation, generations=3, population=16, seed=4, processes=1)
    monkeypatch.setattr(gp4c, "_PARALLEL_FROM", 0)  # small windows on a pool too
    pooled = evolve(training, validation, generations=3, population=16, seed=4, processes=2)
    assert pooled == alone
