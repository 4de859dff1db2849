"""hacs.learning.formula: a GP4C function simplified for people scores exactly as the stored one."""

from __future__ import annotations

import random

import numpy as np
import pytest

from hacs.evaluation.terminals import TERMINALS
from hacs.learning.formula import TERMINAL_LABELS, readable_formula
from hacs.learning.gp4c import CONSTANTS, MAX_DEPTH, OPERATORS, ScoreFunction


@pytest.mark.parametrize(
    ("expression", "text"),
    [
        ("mul(sub(t, t), gad)", "0"),
        ("add(X, div(0.5, 0.5))", "X + 1"),
        ("sub(0, sub(0, mul(lam, 1)))", "λ"),
        ("add(p, sub(0.001, 10))", "p − 9.999"),
        ("pow(add(n, 0), 1)", "n"),
        ("div(mul(0.001, 0.01), add(cg, sub(0, nad)))", "10⁻⁵ ÷ (cg − nad)"),
        ("sub(X, sub(0, div(p, 0.001)))", "X + p ÷ 0.001"),
        ("mul(sub(0, t), add(n, X))", "(−t) × (n + X)"),
        ("add(p, p)", "2 × p"),
        ("div(t, sub(10, 10))", "0"),
        ("pow(1, exp(t))", "1"),
        # Left as they are: each rewrite would change some score.
        ("div(t, t)", "t ÷ t"),
        ("log(exp(n))", "log(exp(n))"),
        ("add(add(X, 1), 10)", "X + 1 + 10"),
    ],
)
def test_it_rewrites_only_what_scores_the_same(expression: str, text: str) -> None:
    assert readable_formula(expression).text == text


def test_the_legend_names_each_terminal_used_in_order() -> None:
    shown = readable_formula("add(p, mul(lam, sub(gad, gad)))")
    assert shown.text == "p"  # λ × 0 drops λ and gad
    assert shown.legend == (("p", TERMINAL_LABELS["p"]),)
    both = readable_formula("div(lam, add(n, 1))")
    assert [name for name, _ in both.legend] == ["n", "λ"]
    assert not both.simplified and readable_formula("add(p, 0)").simplified
    assert set(TERMINAL_LABELS) == set(TERMINALS)


def random_tree(rng: random.Random, depth: int) -> str:
    """A random prefix expression over GP4C's terminals, constants and functions, with the
    shapes the simplifier rewrites planted often (x − x, 0 − x, x × 1, …)."""
    if depth == 0 or rng.random() < 0.2:
        leaves = [*TERMINALS, *(str(c) for c in CONSTANTS), "0", "0"]
        return rng.choice(leaves)
    shape = rng.random()
    child = random_tree(rng, depth - 1)
    if shape < 0.08:
        return f"sub({child}, {child})"
    if shape < 0.16:
        return f"sub(0, {child})"
    if shape < 0.22:
        return f"{rng.choice(['mul', 'div', 'pow', 'add', 'sub'])}({child}, 1)"
    if shape < 0.28:
        return f"add({child}, {child})"
    name = rng.choice(list(OPERATORS))
    if OPERATORS[name].arity == 1:
        return f"{name}({child})"
    return f"{name}({child}, {random_tree(rng, depth - 1)})"


def terminal_values(rng: np.random.Generator, size: int) -> dict[str, np.ndarray]:
    """Finite values as the evaluation gives them, with zeros, ones, negatives and huge ones
    mixed in so that every protected branch is taken."""
    columns = {}
    for name in TERMINALS:
        values = rng.exponential(rng.choice([0.01, 1.0, 50.0]), size)
        special = rng.random(size)
        values[special < 0.1] = 0.0
        values[(special >= 0.1) & (special < 0.15)] = 1.0
        values[(special >= 0.15) & (special < 0.2)] *= -1
        values[(special >= 0.2) & (special < 0.22)] = 1e200
        columns[name] = values
    return columns


def test_a_simplified_function_scores_and_orders_exactly_as_the_stored_one() -> None:
    rng = random.Random(7)
    values = np.random.default_rng(7)
    rewritten = 0
    for _ in range(400):
        stored = ScoreFunction(random_tree(rng, rng.randint(1, MAX_DEPTH)))
        shown = readable_formula(stored.expression)
        rewritten += shown.simplified
        columns = terminal_values(values, 300)
        before = stored.score(columns)
        after = ScoreFunction(shown.expression).score(columns)
        assert np.array_equal(before, after), (stored.expression, shown.expression)
        order = np.lexsort((np.arange(before.size), -before))  # the ranking's tie rule
        assert np.array_equal(order, np.lexsort((np.arange(after.size), -after)))
    assert rewritten > 200  # the planted shapes were found and rewritten
