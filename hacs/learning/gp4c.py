"""GP4C: a score function for the collection, evolved by genetic programming.

Pure (NumPy, DEAP and the evaluation core); no Django. The method is the GP4C paper's
(``papers/gp4c-genetic-programming-crawl-scheduling.txt``, Section 4), on the windows HACS's
evaluation builds (:func:`hacs.evaluation.learning_windows`).

* **Individuals** are expression trees over the terminals of :mod:`hacs.evaluation.terminals`
  (GP4C's n, X, t and its five estimators, plus HACS's λ and p) and the paper's constants 0.001,
  0.01, 0.1, 0.5, 1, 10, 100 and 1000, with the paper's functions +, −, ×, ÷, log, pow and exp.
  Division and log are protected as the paper says: 0 where the input is outside their domain
  (a zero divisor, a non-positive logarithm); pow and exp give 0 where the result is not a
  finite number, so every tree scores every site.
* **Fitness** (Section 4.2.2): NDCG@k or ChangeRate@k at the crawl budget k (a fraction of the
  eligible sites), averaged over the reference points of the training period, by Evaluation 2's
  own function (:func:`hacs.evaluation.ranking.budget_metrics`: the same budget, discount and
  tie rule — score descending, then site index — and the same sums, so the same figures).
* **Evolution** with DEAP: a first generation of each terminal alone (so the search starts
  from the paper's scorers and HACS's p) and ramped half-and-half trees, tournaments of two,
  crossover, reproduction, replacement mutation (DEAP's ``mutUniform``) and swap mutation
  (read as DEAP's ``mutNodeReplacement``) at the paper's rates 90, 15, 5 and 5 (normalised to
  choose one per child), trees at most 10 deep. The paper breeds from the N_b = 50 best
  individuals found so far; HACS's reading draws the tournaments from those and the current
  generation together, which keeps the best while the population stays diverse.
* **Periods over time** (Section 5.1's folds, read over time so no future leaks into training):
  a learning period [start, end] is split into its first two thirds for training and its last
  third for validation; training reference points stop e days before validation starts, so no
  training positive lies in the validation period (:func:`training_periods`). Testing is on a
  later period, through the evaluation.
* **Selection** (Section 4.2.3, GP4C_Best): after the last generation, the kept individuals and
  each terminal alone are scored on a validation period that follows the training period in
  time; the best there wins
  (ties: the better training fitness, then the smaller tree). Only the random seed decides the
  run: the same seed on the same windows gives the same function.

A :class:`ScoreFunction` is stored as its prefix expression (``add(X, mul(t, 0.5))``), parsed by
HACS's own reader (nothing is evaluated as Python), and shown as an infix formula.
"""

from __future__ import annotations

import math
import multiprocessing
import operator
import os
import random
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from deap import base, gp, tools
from numpy.typing import ArrayLike, NDArray

from hacs.bayes import GammaPrior
from hacs.evaluation import (
    TERMINALS,
    LearningWindows,
    ObservationTable,
    learning_windows,
    window_scores,
)
from hacs.evaluation.ranking import budget_metrics, random_budget_metrics
from hacs.ranking import posterior_probabilities
from hacs.replay import Policy, ReplayState

__all__ = [
    "CONSTANTS",
    "FITNESSES",
    "GENERATIONS",
    "POPULATION",
    "OPERATORS",
    "Evolution",
    "ScoreFunction",
    "budget_fitness",
    "empty_window_terminals",
    "evolve",
    "learn_gp4c",
    "replay_policy",
    "training_periods",
]

FloatArray = NDArray[np.float64]

#: The paper's constant terminals (Section 4.2.1).
CONSTANTS = (0.001, 0.01, 0.1, 0.5, 1.0, 10.0, 100.0, 1000.0)
FITNESSES = ("ndcg", "changerate")
MAX_DEPTH = 10  # the paper's d
#: The deepest stored function HACS reads back: ten times the depth it learns (MAX_DEPTH), so a
#: function from any learning run loads, while a hand-edited or corrupt one nested thousands deep
#: is refused with a message before anything recurses over it (Python stops at ~1,000 frames).
MAX_LOADED_DEPTH = 10 * MAX_DEPTH
#: The largest stored function HACS reads back, in nodes: twice the largest tree GP4C can learn
#: (a full binary tree MAX_DEPTH deep), so a stored formula of millions of shallow terms is
#: refused too, before it is parsed or scored on every site of a list.
MAX_LOADED_SIZE = 2 * (2 ** (MAX_DEPTH + 1) - 1)
#: Characters of a stored expression read at all (a generous 32 a node).
MAX_LOADED_CHARACTERS = 32 * MAX_LOADED_SIZE
GENERATIONS = 50  # the paper's N_g
POPULATION = 300  # the paper's N_p
_BLOCK = 65_536  # sites scored at a time (ScoreFunction.score)
KEPT = 50  # the paper's N_b
#: Crossover, reproduction, replacement mutation, swap mutation (Section 5.1.1, in %).
RATES = (90, 15, 5, 5)


def _div(a: FloatArray, b: FloatArray) -> FloatArray:
    out = np.zeros_like(a)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        np.divide(a, b, out=out, where=np.abs(b) > 1e-12)
    return _zero_non_finite(out)


def _log(a: FloatArray) -> FloatArray:
    out = np.zeros_like(a)
    np.log(a, out=out, where=a > 0)
    return out


def _pow(a: FloatArray, b: FloatArray) -> FloatArray:
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return _zero_non_finite(np.power(a, b))


def _exp(a: FloatArray) -> FloatArray:
    with np.errstate(over="ignore"):
        return _zero_non_finite(np.exp(a))


def _add(a: FloatArray, b: FloatArray) -> FloatArray:
    with np.errstate(over="ignore", invalid="ignore"):
        return _zero_non_finite(np.add(a, b))


def _sub(a: FloatArray, b: FloatArray) -> FloatArray:
    with np.errstate(over="ignore", invalid="ignore"):
        return _zero_non_finite(np.subtract(a, b))


def _mul(a: FloatArray, b: FloatArray) -> FloatArray:
    with np.errstate(over="ignore", invalid="ignore"):
        return _zero_non_finite(np.multiply(a, b))


def _zero_non_finite(values: FloatArray) -> FloatArray:
    """``values`` (a fresh array, changed in place) with every NaN and ±∞ set to 0."""
    values[~np.isfinite(values)] = 0.0
    return values


def _finite(values: FloatArray) -> FloatArray:
    """A copy of ``values`` with every NaN and ±∞ set to 0."""
    result: FloatArray = np.where(np.isfinite(values), values, 0.0)
    return result


@dataclass(frozen=True)
class _Operator:
    arity: int
    apply: Callable[..., FloatArray]
    symbol: str  # the infix symbol, or the function's name
    precedence: int  # in the infix formula: + − < × ÷ < ^ < functions and terminals


#: The paper's functions (Section 4.2.1), protected so every tree scores every site.
OPERATORS: Mapping[str, _Operator] = {
    "add": _Operator(2, _add, "+", 1),
    "sub": _Operator(2, _sub, "−", 1),
    "mul": _Operator(2, _mul, "×", 2),
    "div": _Operator(2, _div, "÷", 2),
    "pow": _Operator(2, _pow, "^", 3),
    "log": _Operator(1, _log, "log", 4),
    "exp": _Operator(1, _exp, "exp", 4),
}

# A parsed tree: ("op", name, children), ("var", name) or ("const", value).
_Node = tuple[Any, ...]
_TOKEN = re.compile(
    r"\s*(?:([A-Za-z_][A-Za-z_0-9]*)|([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)|(.))"
)


def _parse(expression: str) -> _Node:
    """The tree of a prefix expression; ``ValueError`` naming what is wrong and where."""
    if len(expression) > MAX_LOADED_CHARACTERS:
        raise ValueError(
            f"score function of {len(expression):,} characters; a score function may be at most "
            f"{MAX_LOADED_CHARACTERS:,} characters long"
        )
    tokens = _tokens(expression)
    _check_size(tokens)
    reader = _Reader(expression, tokens)
    tree = reader.node()
    if reader.position != len(tokens):
        raise ValueError(
            f"score function: unexpected {tokens[reader.position][1]!r} at character "
            f"{tokens[reader.position][2]} in {expression!r}"
        )
    return tree


_Token = tuple[str, str, int]  # kind ("name", "number", "punct"), text, character


def _tokens(expression: str) -> list[_Token]:
    tokens: list[_Token] = []
    for match in _TOKEN.finditer(expression):
        name, number, other = match.groups()
        if name is not None:
            tokens.append(("name", name, match.start(1)))
        elif number is not None:
            tokens.append(("number", number, match.start(2)))
        elif other is not None and not other.isspace():
            tokens.append(("punct", other, match.start(3)))
    return tokens


def _check_size(tokens: list[_Token]) -> None:
    """Refuse a function nested too deep or with too many terms."""
    # The reader and every walk over the tree recurse once per level, as deep as the
    # parentheses nest: measured here in one loop, before any of them runs.
    nesting = deepest = 0
    for kind, text, _at in tokens:
        if kind == "punct" and text in "()":
            nesting += 1 if text == "(" else -1
            deepest = max(deepest, nesting)
    if deepest > MAX_LOADED_DEPTH:
        raise ValueError(
            f"score function nested {deepest:,} deep; a score function may be at most "
            f"{MAX_LOADED_DEPTH} deep (GP4C learns functions at most {MAX_DEPTH} deep)"
        )
    nodes = sum(kind != "punct" for kind, _text, _at in tokens)
    if nodes > MAX_LOADED_SIZE:
        raise ValueError(
            f"score function of {nodes:,} terms; a score function may hold at most "
            f"{MAX_LOADED_SIZE:,} (GP4C learns functions at most {MAX_DEPTH} deep)"
        )


class _Reader:
    """Reads a tree from the tokens of a prefix expression, one node at a time."""

    def __init__(self, expression: str, tokens: list[_Token]) -> None:
        self.expression = expression
        self.tokens = tokens
        self.position = 0

    def expect(self, kind: str, text: str | None = None) -> _Token:
        if self.position >= len(self.tokens):
            raise ValueError(f"score function ends early: {self.expression!r}")
        token = self.tokens[self.position]
        if token[0] != kind or (text is not None and token[1] != text):
            wanted = text or kind
            raise ValueError(
                f"score function: expected {wanted!r} at character {token[2]}, "
                f"found {token[1]!r} in {self.expression!r}"
            )
        self.position += 1
        return token

    def node(self) -> _Node:
        if self.position >= len(self.tokens):
            raise ValueError(f"score function ends early: {self.expression!r}")
        kind, text, at = self.tokens[self.position]
        if kind == "number":
            self.position += 1
            return ("const", float(text))
        if kind != "name":
            raise ValueError(f"score function: unexpected {text!r} at character {at}")
        self.position += 1
        if text in TERMINALS:
            return ("var", text)
        if text not in OPERATORS:
            raise ValueError(
                f"score function: unknown name {text!r} at character {at} (terminals: "
                f"{', '.join(TERMINALS)}; functions: {', '.join(OPERATORS)})"
            )
        self.expect("punct", "(")
        children = [self.node()]
        for _ in range(OPERATORS[text].arity - 1):
            self.expect("punct", ",")
            children.append(self.node())
        self.expect("punct", ")")
        return ("op", text, tuple(children))


def _evaluate(tree: _Node, columns: Mapping[str, FloatArray], size: int) -> FloatArray:
    kind = tree[0]
    if kind == "const":
        return np.full(size, tree[1], dtype=np.float64)
    if kind == "var":
        return np.asarray(columns[tree[1]], dtype=np.float64)
    args = [_evaluate(child, columns, size) for child in tree[2]]
    return OPERATORS[tree[1]].apply(*args)


def _constant(value: float) -> str:
    return f"{value:g}"


def _prefix(tree: _Node) -> str:
    if tree[0] == "const":
        return _constant(tree[1])
    if tree[0] == "var":
        return str(tree[1])
    return f"{tree[1]}({', '.join(_prefix(child) for child in tree[2])})"


def _infix(tree: _Node) -> tuple[str, int]:
    """The infix formula of a tree and its precedence: a child is parenthesised when it binds
    less tightly than its parent, or as tightly on the side where order matters (a − (b − c),
    a ÷ (b × c), (a^b)^c and a^(b^c))."""
    if tree[0] == "const":
        return _constant(tree[1]), 4
    if tree[0] == "var":
        return str(tree[1]), 4
    op = OPERATORS[tree[1]]
    parts = [_infix(child) for child in tree[2]]
    if op.arity == 1:
        return f"{op.symbol}({parts[0][0]})", 4
    (left, left_p), (right, right_p) = parts
    if left_p < op.precedence or (op.symbol == "^" and left_p == op.precedence):
        left = f"({left})"
    if right_p < op.precedence or (right_p == op.precedence and op.symbol in "−÷^"):
        right = f"({right})"
    return f"{left} {op.symbol} {right}" if op.symbol != "^" else f"{left}^{right}", op.precedence


def _depth(tree: _Node) -> int:
    if tree[0] != "op":
        return 0
    return 1 + max(_depth(child) for child in tree[2])


def _size(tree: _Node) -> int:
    if tree[0] != "op":
        return 1
    return 1 + sum(_size(child) for child in tree[2])


@dataclass(frozen=True)
class ScoreFunction:
    """A learned score function: higher scores are crawled first.

    ``expression`` is the prefix form (``add(X, mul(t, 0.5))``) over TERMINALS, CONSTANTS and
    OPERATORS; it is validated on construction (``ValueError`` naming the fault, among them a
    nesting deeper than ``MAX_LOADED_DEPTH``).
    """

    expression: str
    _tree: _Node = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        tree = _parse(self.expression)
        object.__setattr__(self, "_tree", tree)
        object.__setattr__(self, "expression", _prefix(tree))  # one spelling per function

    @property
    def formula(self) -> str:
        """The function in infix notation, as a librarian reads it."""
        return _infix(self._tree)[0]

    @property
    def size(self) -> int:
        return _size(self._tree)

    @property
    def depth(self) -> int:
        return _depth(self._tree)

    def score(self, columns: Mapping[str, FloatArray]) -> FloatArray:
        """Each site's score from its terminals (one array per TERMINALS name); always finite."""
        sizes = {np.asarray(columns[name]).size for name in TERMINALS}
        if len(sizes) != 1:
            raise ValueError("every terminal must hold one value per site")
        size = sizes.pop()
        arrays = {name: np.asarray(columns[name], dtype=np.float64) for name in TERMINALS}
        result = np.empty(size)
        # In blocks that stay in the processor's cache: the same values, several times faster
        # on a collection's million windows than whole-array passes.
        for lo in range(0, size, _BLOCK):
            hi = min(lo + _BLOCK, size)
            block = {name: values[lo:hi] for name, values in arrays.items()}
            result[lo:hi] = _finite(_evaluate(self._tree, block, hi - lo))
        return result


def budget_fitness(
    scores: FloatArray, windows: LearningWindows, fraction: float = 0.05
) -> tuple[float, float]:
    """(NDCG@k, ChangeRate@k) of ranking each reference point's sites by ``scores``.

    GP4C paper, Eqs. 1-3, computed by Evaluation 2's own function
    (:func:`hacs.evaluation.ranking.budget_metrics`): k = the crawl budget of the eligible
    sites; ties by site index; NDCG averaged over the reference points with a positive,
    ChangeRate over those with an eligible site (NaN when there are none).
    """
    ndcg, change_rate = budget_metrics(scores, windows.offsets, windows.positive, fraction)
    return _defined_mean(ndcg), _defined_mean(change_rate)


def _defined_mean(values: FloatArray) -> float:
    """The mean over the reference points where a metric is defined (not NaN); NaN if none."""
    defined = values[~np.isnan(values)]
    return float(np.mean(defined)) if defined.size else math.nan


@dataclass(frozen=True)
class Evolution:
    """The outcome of :func:`evolve`: the chosen function, its fitness on training and
    validation, the training curve (best and mean training fitness per generation), and the
    finalists it was chosen from as (expression, training fitness, validation fitness), best
    first — each terminal alone among them —, and Random's expected fitness on the validation
    period: what the function must beat to rank better than chance."""

    function: ScoreFunction
    fitness: str
    training_fitness: float
    validation_fitness: float
    best_per_generation: tuple[float, ...]
    mean_per_generation: tuple[float, ...]
    evaluations: int
    seed: int
    finalists: tuple[tuple[str, float, float], ...] = ()
    random_validation: float = math.nan


#: Training windows of fewer pairs than this are scored in the calling process.
_PARALLEL_FROM = 200_000
_WORKER: dict[str, Any] = {}  # a scoring process's windows and options (_worker_start)


def _worker_start(windows: LearningWindows, fraction: float, which: int) -> None:
    _WORKER.update(windows=windows, columns=windows.columns(), fraction=fraction, which=which)


def _worker_measure(expression: str) -> float:
    return _measure_one(
        expression, _WORKER["columns"], _WORKER["windows"], _WORKER["fraction"], _WORKER["which"]
    )


def _measure_one(
    expression: str,
    columns: Mapping[str, FloatArray],
    windows: LearningWindows,
    fraction: float,
    which: int,
) -> float:
    value = budget_fitness(ScoreFunction(expression).score(columns), windows, fraction)
    return 0.0 if math.isnan(value[which]) else value[which]


class _Measurer:
    """Scores expressions on the training windows, in this process or in a pool of fresh
    processes (spawned, so nothing of the caller's threads or connections is copied)."""

    def __init__(
        self, windows: LearningWindows, fraction: float, which: int, processes: int | None
    ) -> None:
        count = min(os.cpu_count() or 1, 4) if processes is None else processes
        if count < 1:
            raise ValueError(f"processes must be at least 1; got {count}")
        self._args = (windows, fraction, which)
        self._columns = windows.columns()
        self._pool: Any = None
        if count > 1 and windows.first_update.size >= _PARALLEL_FROM:
            context = multiprocessing.get_context("spawn")
            self._pool = context.Pool(count, initializer=_worker_start, initargs=self._args)
            self._chunk = 4

    def measure(self, expressions: Sequence[str]) -> list[float]:
        if self._pool is not None and len(expressions) > 1:
            return list(self._pool.map(_worker_measure, expressions, chunksize=self._chunk))
        windows, fraction, which = self._args
        return [_measure_one(e, self._columns, windows, fraction, which) for e in expressions]

    def close(self) -> None:
        if self._pool is not None:
            self._pool.close()
            self._pool.join()
            self._pool = None


def _primitive_set() -> Any:
    pset = gp.PrimitiveSet("GP4C", len(TERMINALS))
    pset.renameArguments(**{f"ARG{i}": name for i, name in enumerate(TERMINALS)})
    for name, op in OPERATORS.items():
        pset.addPrimitive(op.apply, op.arity, name=name)
    for value in CONSTANTS:
        pset.addTerminal(value, name=_constant(value))
    return pset


def _tree_of(individual: Any) -> str:
    """The prefix expression of a DEAP tree, in ScoreFunction's spelling."""
    parts: list[str] = []
    stack: list[list[Any]] = []
    for node in individual:
        if isinstance(node, gp.Primitive):
            stack.append([node.name, node.arity, []])
            continue
        text = str(node.value) if isinstance(node.value, str) else _constant(float(node.value))
        while stack:
            stack[-1][2].append(text)
            if len(stack[-1][2]) < stack[-1][1]:
                break
            name, _, args = stack.pop()
            text = f"{name}({', '.join(args)})"
        else:
            parts.append(text)
    return parts[0]


def evolve(
    training: LearningWindows,
    validation: LearningWindows,
    *,
    fitness: str = "ndcg",
    budget_fraction: float = 0.05,
    generations: int = GENERATIONS,
    population: int = POPULATION,
    seed: int = 0,
    progress: Callable[[int, float], None] | None = None,
    processes: int | None = None,
) -> Evolution:
    """Evolve a score function on ``training`` and choose it on ``validation`` (the module
    docstring). ``progress(generation, best fitness)`` is called after each generation.

    Each generation's new functions are scored on ``processes`` processes (default: the
    machine's cores, at most 4; one for training windows too few to gain from more): the same
    values in the same order, so the result does not depend on it."""
    if fitness not in FITNESSES:
        raise ValueError(f"fitness must be one of {', '.join(FITNESSES)}; got {fitness!r}")
    if generations < 1 or population < 2:
        raise ValueError(
            f"generations must be at least 1 and population at least 2; got {generations}, "
            f"{population}"
        )
    which = 0 if fitness == "ndcg" else 1
    scoring = _Measurer(training, budget_fraction, which, processes)
    search = _Search(scoring)
    saved = random.getstate()
    random.seed(seed)
    try:
        kept, best, mean = _generations(search, population, generations, progress)
        finalists = search.finalists(kept, validation, budget_fraction, which)
    finally:
        random.setstate(saved)
        scoring.close()
    valid_value, train_value, _, expression = finalists[0]
    chance = random_budget_metrics(validation.offsets, validation.positive, budget_fraction)
    return Evolution(
        function=ScoreFunction(expression),
        fitness=fitness,
        training_fitness=train_value,
        validation_fitness=valid_value,
        best_per_generation=tuple(best),
        mean_per_generation=tuple(mean),
        evaluations=search.evaluations,
        seed=seed,
        finalists=tuple((expr, train, valid) for valid, train, _, expr in finalists),
        random_validation=_defined_mean(chance[which]),
    )


def _generations(
    search: _Search,
    population: int,
    generations: int,
    progress: Callable[[int, float], None] | None,
) -> tuple[Any, list[float], list[float]]:
    """Run the generations: the hall of fame kept, and each generation's best and mean fitness."""
    current = search.first_generation(population)
    kept = tools.HallOfFame(KEPT)
    kept.update(current)
    best: list[float] = []
    mean: list[float] = []
    for generation in range(generations + 1):
        if generation:
            current = search.next_generation(list(kept) + current, population)
            kept.update(current)
        best.append(float(kept[0].fitness.values[0]))
        mean.append(float(np.mean([one.fitness.values[0] for one in current])))
        if progress is not None:
            progress(generation, best[-1])
    return kept, best, mean


class _Search:
    """One run of :func:`evolve`'s search: DEAP's toolbox over the paper's primitive set, and
    the training fitness of every expression met so far (each scored once)."""

    def __init__(self, scoring: _Measurer) -> None:
        self._scoring = scoring
        self._cache: dict[str, float] = {}
        self._pset = _primitive_set()
        self._toolbox = _toolbox(self._pset)
        self._fitness = type("GP4CFitness", (base.Fitness,), {"weights": (1.0,)})

    @property
    def evaluations(self) -> int:
        """How many distinct expressions were scored on the training windows."""
        return len(self._cache)

    def individual(self, tree: Any) -> Any:
        """A DEAP individual of ``tree`` (a list of primitives and terminals), unassessed."""
        created = gp.PrimitiveTree(tree)
        created.fitness = self._fitness()
        return created

    def assess(self, individuals: Sequence[Any]) -> None:
        """The training fitness of each individual without one (GP4C paper, Section 4.2.2),
        scoring only the expressions not met before."""
        waiting = [one for one in individuals if not one.fitness.valid]
        expressions = [_tree_of(one) for one in waiting]
        new = [e for e in dict.fromkeys(expressions) if e not in self._cache]
        self._cache.update(zip(new, self._scoring.measure(new), strict=True))
        for one, expression in zip(waiting, expressions, strict=True):
            one.fitness.values = (self._cache[expression],)

    def first_generation(self, population: int) -> list[Any]:
        """Each terminal alone (GP4C's estimators are scorers in their own right), then ramped
        half-and-half trees (GP4C paper, Section 5.1.1), assessed."""
        seeds = [self.individual([self._pset.mapping[name]]) for name in TERMINALS][:population]
        toolbox = self._toolbox
        current = seeds + [self.individual(toolbox.expr()) for _ in range(population - len(seeds))]
        self.assess(current)
        return current

    def next_generation(self, pool: Sequence[Any], population: int) -> list[Any]:
        """``population`` children bred from ``pool`` (the kept best and the current
        generation): each by crossover, reproduction, replacement or swap mutation, drawn at the
        paper's rates (``RATES``, Section 5.1.1), parents by tournaments of two; assessed."""
        toolbox = self._toolbox
        children: list[Any] = []
        while len(children) < population:
            (choice,) = random.choices(_OPERATIONS, weights=RATES)
            if choice == "mate":
                a, b = (toolbox.clone(one) for one in tools.selTournament(pool, 2, 2))
                a, b = toolbox.mate(a, b)
                del a.fitness.values, b.fitness.values
                children.extend((a, b))
                continue
            (one,) = (toolbox.clone(x) for x in tools.selTournament(pool, 1, 2))
            if choice != "reproduce":
                (one,) = getattr(toolbox, choice)(one)
                del one.fitness.values
            children.append(one)
        current = children[:population]
        self.assess(current)
        return current

    def finalists(
        self, kept: Sequence[Any], validation: LearningWindows, fraction: float, which: int
    ) -> list[tuple[float, float, int, str]]:
        """GP4C_Best's candidates (Section 4.2.3), best first: the kept individuals and each
        terminal alone (a complex tree must beat the plain scorers on the validation period to
        be chosen), as (validation fitness, training fitness, −size, expression), ordered by
        validation fitness, then training fitness, then the smaller tree."""
        columns = validation.columns()
        finalists = []
        for expression in dict.fromkeys([*(_tree_of(one) for one in kept), *TERMINALS]):
            finalists.append(
                (
                    _measure_one(expression, columns, validation, fraction, which),
                    self._cache[expression]
                    if expression in self._cache
                    else self._scoring.measure([expression])[0],
                    -ScoreFunction(expression).size,
                    expression,
                )
            )
        finalists.sort(key=lambda item: (item[0], item[1], item[2]), reverse=True)
        return finalists


#: The four ways to breed a child, in the order of ``RATES``.
_OPERATIONS = ("mate", "reproduce", "replace", "swap")


def _toolbox(pset: Any) -> Any:
    """DEAP's toolbox for the search (GP4C paper, Section 5.1.1): ramped half-and-half trees
    1-4 deep, one-point crossover, replacement mutation by a full subtree 0-2 deep (DEAP's
    ``mutUniform``), swap mutation (``mutNodeReplacement``), none deeper than ``MAX_DEPTH``."""
    toolbox = base.Toolbox()
    toolbox.register("expr", gp.genHalfAndHalf, pset=pset, min_=1, max_=4)
    toolbox.register("mutant", gp.genFull, min_=0, max_=2)
    toolbox.register("mate", gp.cxOnePoint)
    toolbox.register("replace", gp.mutUniform, expr=toolbox.mutant, pset=pset)
    toolbox.register("swap", gp.mutNodeReplacement, pset=pset)
    limit = gp.staticLimit(key=operator.attrgetter("height"), max_value=MAX_DEPTH)
    for name in ("mate", "replace", "swap"):
        toolbox.decorate(name, limit)
    return toolbox


def training_periods(
    start: float, end: float, e_days: float = 7.0
) -> tuple[tuple[float, float], tuple[float, float]]:
    """((first, last) training reference point, (first, last) validation reference point) of a
    learning period [start, end] in days (the module docstring)."""
    if not (math.isfinite(start) and math.isfinite(end)) or end <= start:
        raise ValueError(f"the learning period must end after it starts; got {start} … {end}")
    if end - start < 3 * (7.0 + e_days):  # a week of reference points after each gap of e
        raise ValueError(
            f"the learning period is too short: {end - start:g} days; give at least "
            f"{3 * (7.0 + e_days):g} days so training and validation each hold a reference point"
        )
    split = start + (end - start) * 2 / 3
    return (start, split - e_days), (split, end)


def learn_gp4c(
    table: ObservationTable,
    *,
    start: float,
    end: float,
    w_weeks: int = 12,
    e_days: float = 7.0,
    method: str = "observed",
    website: bool = False,
    **options: Any,
) -> Evolution:
    """Evolve and choose a score function on one level's observations over [start, end]
    (days): windows of ``w_weeks`` weeks, evaluation interval ``e_days``, ``website`` as for
    :func:`hacs.evaluation.learning_windows`; ``options`` go to :func:`evolve`."""
    (train_from, train_to), (valid_from, valid_to) = training_periods(start, end, e_days)
    training, validation = (
        learning_windows(
            table,
            start=first,
            end=last,
            w_weeks=w_weeks,
            e_days=e_days,
            method=method,
            website=website,
        )
        for first, last in ((train_from, train_to), (valid_from, valid_to))
    )
    return evolve(training, validation, **options)


def empty_window_terminals(
    t: float, e_days: float, last_copy: ArrayLike, prior: GammaPrior
) -> dict[str, FloatArray]:
    """The terminals of sites with no observation in the function's window but a copy before
    it, as the window's own reading gives them: no access could detect a change (``n`` 0) and
    none did (``X`` 0), so every GP4C estimator and ``lam`` is 0; ``t`` counts from the newest
    copy, t + e − copy; ``p`` is the chance of a change since that copy under the window's
    prior alone. A crawl list ranks such sites by the score too, instead of below every
    scored one: they are often the longest unvisited, which most likely changed."""
    copy = np.asarray(last_copy, dtype=np.float64)
    zeros = np.zeros(copy.size)
    shape, rate = np.full(copy.size, prior.shape), np.full(copy.size, prior.rate)
    columns = {name: zeros for name in TERMINALS}
    columns["t"] = t + e_days - copy
    columns["p"] = posterior_probabilities(shape, rate, copy, t, e_days)
    return columns


def replay_policy(function: ScoreFunction, *, w_weeks: int, e_days: float = 7.0) -> Policy:
    """The score function as a policy of the closed-loop replay (``hacs.replay``): each day its
    terminals come from every site's timeline so far (the archive's history and the policy's own
    crawls, each flagged as it was found), over windows of ``w_weeks`` with the function's
    ``e_days``; a site with a copy but no observation in its window is scored from
    :func:`empty_window_terminals`, as a crawl list scores it."""

    def policy(state: ReplayState) -> FloatArray:
        times, flags, offsets = state.arrays()
        n_sites = offsets.size - 1
        counts = np.diff(offsets)
        site = np.repeat(np.arange(n_sites), counts)
        index = np.arange(times.size) - np.repeat(offsets[:-1], counts)
        # One page per site: an update adds a brand-new link, anything else holds the links of
        # the copy before it (hacs.updates' link floors), so rule 3 gives back the flags.
        floor = np.where(flags, -1, index - 1)
        table = ObservationTable(
            site=site, page=site, time=times, page_index=index, link_floor=floor, n_sites=n_sites
        )
        scores = np.full(n_sites, -np.inf)
        if times.size:
            found = window_scores(table, t=state.now, w_weeks=w_weeks, e_days=e_days)
            scores[found.site] = function.score(found.terminals)
            rest = np.flatnonzero(np.isneginf(scores) & np.isfinite(state.last_copy))
            if rest.size:
                columns = empty_window_terminals(
                    state.now, e_days, state.last_copy[rest], found.prior
                )
                scores[rest] = function.score(columns)
        return scores

    return policy
