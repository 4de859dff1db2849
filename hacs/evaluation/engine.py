"""The entry points: :func:`evaluate` over a whole grid, :func:`window_scores` for one window.

Part of :mod:`hacs.evaluation`; pure (NumPy and the estimation core). DESIGN.md rules 9-11.

How it is fast
--------------
DESIGN's hint: each observation carries its ``link_floor``, so rule 3 within any window is one
comparison, read as an interval (A, B] of window starts (``hacs.evaluation.table``). Every
window boundary lies on one sorted grid of times, so window bounds are exact integer look-ups in
per-site cumulative count tables (``hacs.evaluation.grid``). One ``estimate_many`` call covers
every reference point of a (level, w) (``hacs.evaluation.windows``); every θ comes from one
histogram of p (``hacs.evaluation.metrics``), and Evaluation 2 and the budget metrics need only
each positive's rank, found with one partial sort per window for all models at once
(``hacs.evaluation.ranking``).

What evaluate returns
---------------------
* ``parameters`` — the arguments as used, and ``reference_points`` (how many t);
* ``levels`` — per level, ``sites`` and ``observations``;
* ``curves`` — per (level, average ∈ {micro, macro}, w_weeks, theta, model ∈
  SELECTION_MODELS): ``precision``, ``recall``, ``f1`` (None where undefined) and the totals
  over t ``tp``, ``fp``, ``fn``, ``tn`` (expected values, floats, for Random);
* ``table`` — Table I: per (level, average, w_weeks, model): ``theta_hat`` (HACS's, also used
  for Random and Brute Force; the posterior's own for ``posterior``), ``precision``,
  ``recall``, ``f1``;
* ``pak`` — per (level, w_weeks, model ∈ RANKING_MODELS + the level's ``scorers`` +
  random): ``weighted_p_at_k`` (mean over t with positives) and ``points`` (how many t);
* ``budget`` — per (level, w_weeks, model): ``k_mean``, ``ndcg_at_k``, ``change_rate_at_k``,
  and the top-k selection's ``tp``, ``fp``, ``fn``, micro ``precision``, ``recall``, ``f1``
  and ``macro_precision``, ``macro_recall``, ``macro_f1``;
* ``points`` (only with ``details=True``) — per (level, w_weeks, t): ``eligible``,
  ``positives``, HACS's ``hacs_selected`` and ``hacs_tp`` per θ, the posterior's
  ``posterior_selected`` and ``posterior_tp`` per θ and its ``prior`` (``shape``, ``rate``),
  ``budget_k`` and per model ``weighted_p_at_k``, ``ndcg_at_k``, ``change_rate_at_k``,
  ``hits_at_k``.

Models: ``hacs`` is the paper's p = g(λ, τ, t, e) with ``method``'s λ; ``posterior`` is
HACS's default reading, the chance of a change since the newest copy over a Gamma posterior
on λ (``hacs.evaluation.windows``); at the ``"website"`` level of a table with
``new_links``, the sum of its pages' posteriors from their new links, as the crawl list
reads that level (``hacs.evaluation.pages``). Its prior at t is fitted on the evidence of every
site's window [t − 7·prior_weeks, t] (None: on the evaluated windows [t − 7w, t]
themselves), refitted every ``prior_every`` reference points and carried forward in
between, never backward: no prior uses an observation after its t. Each fit costs a
``scipy.optimize`` run over the eligible sites (``python -m bench.evaluation`` prints it).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from hacs.bayes import GammaPrior
from hacs.estimators import METHODS
from hacs.evaluation.grid import _finite, _Grid, _make_grid, _prepare, reference_points
from hacs.evaluation.metrics import _clean, _PointCounts, _selection_counts, _selection_rows
from hacs.evaluation.pages import _page_copies, _PageCopies
from hacs.evaluation.ranking import (
    _k_tables,
    _rank_metrics,
    _ranking_rows,
    _RankMetrics,
    crawl_budget,
)
from hacs.evaluation.scores import RANKING_MODELS
from hacs.evaluation.table import BoolArray, FloatArray, IntArray, ObservationTable
from hacs.evaluation.terminals import TERMINALS, _terminals, terminal_columns
from hacs.evaluation.windows import _Batch, _prior_table, _window_batch

__all__ = [
    "ExtraScorer",
    "DEFAULT_PRIOR_EVERY",
    "DEFAULT_PRIOR_WEEKS",
    "DEFAULT_THETAS",
    "DEFAULT_W_WEEKS",
    "LearningWindows",
    "WindowScores",
    "evaluate",
    "learning_windows",
    "window_scores",
]

DEFAULT_THETAS = tuple(i / 10 for i in range(11))  # 0.0, 0.1, …, 1.0: i / 10 == the literal
DEFAULT_W_WEEKS = tuple(range(1, 13))
#: The posterior's prior is fitted on windows of this many weeks ending at t (:func:`evaluate`).
DEFAULT_PRIOR_WEEKS = 12
#: … and refitted every this many reference points.
DEFAULT_PRIOR_EVERY = 1


#: A further model for Evaluation 2 (a learned scheduler): given a reference point t, the
#: eligible sites' indices and their terminals by name (``hacs.evaluation.terminals``), each
#: site's score (higher ranks first; non-finite scores rank last).
ExtraScorer = Callable[[float, IntArray, Mapping[str, FloatArray]], FloatArray]


@dataclass(frozen=True, eq=False)
class WindowScores:
    """What the evaluation sees for one (t, w): one entry per eligible site, by site index.

    ``rate`` is λ (NaN when unknown), ``tau`` τ, ``probability`` p (0 for unknown λ),
    ``instants`` how many distinct observation instants the window holds, ``first_update`` the time
    of the site's first update in (t, t + e] (+∞ when none; finite means positive), and
    ``scores`` each ranking model's score (higher ranks first; ties as in
    ``hacs.evaluation.ranking``). The posterior model (``hacs.evaluation.windows``): each
    site's posterior Gamma(``alpha``, ``beta``) on λ, ``last_copy`` (the window's last instant),
    ``posterior_probability`` p, and the ``prior`` fitted on this window's sites.
    ``terminals`` are what a learned scorer reads (``hacs.evaluation.terminals``).
    """

    site: IntArray
    rate: FloatArray
    tau: FloatArray
    probability: FloatArray
    instants: IntArray
    first_update: FloatArray
    scores: Mapping[str, FloatArray]
    alpha: FloatArray
    beta: FloatArray
    last_copy: FloatArray
    posterior_probability: FloatArray
    prior: GammaPrior
    terminals: Mapping[str, FloatArray]

    @property
    def positive(self) -> BoolArray:
        result: BoolArray = np.isfinite(self.first_update)
        return result


def window_scores(
    table: ObservationTable,
    *,
    t: float,
    w_weeks: int,
    e_days: float = 7.0,
    method: str = "observed",
    prior_weeks: int | None = DEFAULT_PRIOR_WEEKS,
    website: bool = False,
) -> WindowScores:
    """Estimates, probabilities, positives and scores of every eligible site at one (t, w);
    the posterior's prior as :func:`evaluate` fits it at t. ``website``: the table is a website
    level, whose posterior reads the pages' new links when the table has them (:func:`evaluate`).
    """
    t_value = _finite(t, "t")
    (w,) = _check_w_weeks([w_weeks])
    e = _check_e(e_days)
    _check_method(method)
    prior_w = _check_prior_weeks(prior_weeks)
    grid = _make_grid(np.array([t_value]), [w] if prior_w is None else [w, prior_w], e)
    level, pages = _prepare(table, grid), _website_pages(table, website)
    priors = None if prior_w is None else _prior_table(level, grid, prior_w, 1, pages)
    batch = _window_batch(level, grid, w, method, priors, pages=pages)
    return WindowScores(
        site=batch.site,
        rate=batch.rate,
        tau=batch.tau,
        probability=batch.probability,
        instants=batch.instants,
        first_update=batch.first_update,
        scores={name: batch.scores[row] for row, name in enumerate(RANKING_MODELS)},
        alpha=batch.alpha,
        beta=batch.beta,
        last_copy=batch.last_copy,
        posterior_probability=batch.posterior,
        prior=GammaPrior(float(batch.priors[0, 0]), float(batch.priors[0, 1])),
        terminals=terminal_columns(_terminals(batch, grid.t[batch.r], grid.e)),
    )


@dataclass(frozen=True, eq=False)
class LearningWindows:
    """Every eligible (t, site) window of a period, as a learned scheduler trains on them.

    Pairs of reference point ``t[r]`` are ``offsets[r]:offsets[r + 1]``, by site index;
    ``terminals`` has one row per TERMINALS entry (``hacs.evaluation.terminals``), one column
    per pair; ``first_update`` is the site's first update in (t, t + e] (+∞ when none: finite
    means positive, DESIGN.md rule 9).
    """

    t: FloatArray
    offsets: IntArray
    site: IntArray
    terminals: FloatArray
    first_update: FloatArray

    @property
    def positive(self) -> BoolArray:
        result: BoolArray = np.isfinite(self.first_update)
        return result

    @property
    def names(self) -> tuple[str, ...]:
        return TERMINALS

    def columns(self) -> Mapping[str, FloatArray]:
        """The terminal rows by name."""
        return terminal_columns(self.terminals)

    def between(self, first: int, last: int) -> LearningWindows:
        """The windows of reference points ``first`` … ``last − 1`` only."""
        lo, hi = int(self.offsets[first]), int(self.offsets[last])
        return LearningWindows(
            t=self.t[first:last],
            offsets=self.offsets[first : last + 1] - lo,
            site=self.site[lo:hi],
            terminals=self.terminals[:, lo:hi],
            first_update=self.first_update[lo:hi],
        )


def learning_windows(
    table: ObservationTable,
    *,
    start: float,
    end: float,
    w_weeks: int,
    step_days: float = 7.0,
    e_days: float = 7.0,
    method: str = "observed",
    prior_weeks: int | None = DEFAULT_PRIOR_WEEKS,
    website: bool = False,
) -> LearningWindows:
    """The terminals and positives of every eligible site at every reference point from
    ``start`` to ``end`` with a history of ``w_weeks`` (DESIGN.md rules 3-7 and 9; the
    posterior's prior as :func:`evaluate` fits it, never from after t; ``website`` as for
    :func:`window_scores`)."""
    ts = reference_points(start, end, step_days)
    (w,) = _check_w_weeks([w_weeks])
    e = _check_e(e_days)
    _check_method(method)
    prior_w = _check_prior_weeks(prior_weeks)
    grid = _make_grid(ts, [w] if prior_w is None else sorted({w, prior_w}), e)
    level, pages = _prepare(table, grid), _website_pages(table, website)
    priors = None if prior_w is None else _prior_table(level, grid, prior_w, 1, pages)
    batch = _window_batch(level, grid, w, method, priors, pages=pages)
    return LearningWindows(
        t=ts,
        offsets=batch.offsets,
        site=batch.site,
        terminals=_terminals(batch, ts[batch.r], e),
        first_update=batch.first_update,
    )


def _point_rows(
    level: str,
    w: int,
    t: FloatArray,
    counts: _PointCounts,
    budget: IntArray,
    metrics: _RankMetrics,
    priors: FloatArray,
    models: Sequence[str],
) -> list[dict[str, Any]]:
    """Per reference point t: the counts and per-model metrics behind the averages (the
    ``details`` of :func:`evaluate`; HACS paper, Sections III-B and III-C, before averaging)."""
    rows: list[dict[str, Any]] = []
    names = (*models, "random")
    for r in range(t.size):
        rows.append(
            {
                "level": level,
                "w_weeks": w,
                "t": float(t[r]),
                "eligible": int(counts.eligible[r]),
                "positives": int(counts.positives[r]),
                "hacs_selected": counts.selected[r].tolist(),
                "hacs_tp": counts.true_positives[r].tolist(),
                "posterior_selected": counts.posterior_selected[r].tolist(),
                "posterior_tp": counts.posterior_true_positives[r].tolist(),
                "prior": {"shape": float(priors[r, 0]), "rate": float(priors[r, 1])},
                "budget_k": int(budget[r]),
                "models": {
                    name: {
                        "weighted_p_at_k": _clean(float(metrics.p_at_k[row, r])),
                        "ndcg_at_k": _clean(float(metrics.ndcg[row, r])),
                        "change_rate_at_k": _clean(float(metrics.change_rate[row, r])),
                        "hits_at_k": float(metrics.hits[row, r]),
                    }
                    for row, name in enumerate(names)
                },
            }
        )
    return rows


def evaluate(
    tables: Mapping[str, ObservationTable],
    *,
    start: float,
    end: float,
    step_days: float = 7.0,
    e_days: float = 7.0,
    w_weeks: Iterable[int] = DEFAULT_W_WEEKS,
    thetas: Iterable[float] = DEFAULT_THETAS,
    method: str = "observed",
    budget_fraction: float = 0.05,
    prior_weeks: int | None = DEFAULT_PRIOR_WEEKS,
    prior_every: int = DEFAULT_PRIOR_EVERY,
    details: bool = False,
    progress: Callable[[float], None] | None = None,
    scorers: Mapping[str, Mapping[str, ExtraScorer]] | None = None,
) -> dict[str, Any]:
    """Evaluations 1 and 2 and the crawl-budget metrics for each level (see :mod:`hacs.evaluation`).

    ``tables`` maps a level name (``"homepage"``, ``"website"``) to its observations. Returns a
    JSON-serialisable dict whose keys, and the models it compares, the module docstring lists
    ("What evaluate returns").

    ``scorers`` adds ranking models per level (learned schedulers, ``hacs.learning``): name →
    :data:`ExtraScorer`, called once per reference point and w with that window's eligible
    sites; they take part in Evaluation 2 and the budget metrics like the GP4C scorers.

    ``thetas`` are sorted and duplicates dropped; ``w_weeks`` likewise. ``progress`` is called
    with the finished fraction (0 … 1) after each (level, w), from the calling thread.
    """
    options = _check_options(
        tables,
        start=start,
        end=end,
        step_days=step_days,
        e_days=e_days,
        w_weeks=w_weeks,
        thetas=thetas,
        method=method,
        budget_fraction=budget_fraction,
        prior_weeks=prior_weeks,
        prior_every=prior_every,
        scorers=scorers,
    )
    result = _empty_result(options, start=start, end=end, step_days=step_days, details=details)
    _add_levels(result, tables, options, details=details, progress=progress)
    return result


def _add_levels(
    result: dict[str, Any],
    tables: Mapping[str, ObservationTable],
    options: _Options,
    *,
    details: bool,
    progress: Callable[[float], None] | None,
) -> None:
    """Evaluate every (level, w) and add its rows to ``result``, telling ``progress``."""
    grid = options.grid()
    steps, done = len(tables) * len(options.ws), 0
    for level_name, table in tables.items():
        result["levels"][level_name] = {"sites": table.site_count, "observations": table.size}
        for rows in _level_rows(level_name, table, grid, options, details):
            for key, values in rows.items():
                result[key].extend(values)
            done += 1
            if progress is not None:
                progress(done / steps)


def _empty_result(
    options: _Options, *, start: float, end: float, step_days: float, details: bool
) -> dict[str, Any]:
    """The result of :func:`evaluate` before any level: its parameters and empty lists."""
    result: dict[str, Any] = {
        "parameters": options.parameters(start=start, end=end, step_days=step_days),
        "levels": {},
        "curves": [],
        "table": [],
        "pak": [],
        "budget": [],
    }
    if details:
        result["points"] = []
    return result


@dataclass(frozen=True, eq=False)
class _Options:
    """The arguments of :func:`evaluate`, checked (:func:`_check_options`)."""

    ts: FloatArray
    e: float
    ws: tuple[int, ...]
    thetas: FloatArray
    method: str
    fraction: float
    prior_w: int | None
    every: int
    scorers: Mapping[str, Mapping[str, ExtraScorer]]

    def grid(self) -> _Grid:
        """The grid of every window boundary: the evaluated w and the prior's (DESIGN rule 9)."""
        windows = self.ws if self.prior_w is None else sorted({*self.ws, self.prior_w})
        return _make_grid(self.ts, windows, self.e)

    def parameters(self, *, start: float, end: float, step_days: float) -> dict[str, Any]:
        """The ``parameters`` of :func:`evaluate`'s result: the arguments as used."""
        return {
            "start": float(start),
            "end": float(end),
            "step_days": float(step_days),
            "e_days": self.e,
            "w_weeks": list(self.ws),
            "thetas": self.thetas.tolist(),
            "method": self.method,
            "budget_fraction": self.fraction,
            "prior_weeks": self.prior_w,
            "prior_every": self.every,
            "reference_points": int(self.ts.size),
        }


def _check_options(
    tables: Mapping[str, ObservationTable],
    *,
    start: float,
    end: float,
    step_days: float,
    e_days: float,
    w_weeks: Iterable[int],
    thetas: Iterable[float],
    method: str,
    budget_fraction: float,
    prior_weeks: int | None,
    prior_every: int,
    scorers: Mapping[str, Mapping[str, ExtraScorer]] | None,
) -> _Options:
    """:func:`evaluate`'s arguments checked in turn, each ``ValueError`` naming the argument:
    the reference points (HACS paper, Section III-A; DESIGN rule 9), e, w, θ, the estimators'
    method, the crawl budget's fraction (GP4C paper, Section 5.2), the posterior's prior window
    and refit interval, and the further scorers."""
    if not isinstance(tables, Mapping) or not tables:
        raise ValueError("tables must map at least one level name to an ObservationTable")
    for name, table in tables.items():
        if not isinstance(table, ObservationTable):
            raise ValueError(f"tables[{name!r}] must be an ObservationTable")
    ts = reference_points(start, end, step_days)
    e = _check_e(e_days)
    ws = _check_w_weeks(w_weeks)
    theta_values = _check_thetas(thetas)
    _check_method(method)
    fraction = _finite(budget_fraction, "budget_fraction")
    if not 0 < fraction <= 1:
        raise ValueError(f"budget_fraction must be in (0, 1]; got {budget_fraction}")
    prior_w = _check_prior_weeks(prior_weeks)
    extra = _check_scorers(scorers or {}, tables)
    if isinstance(prior_every, bool) or not isinstance(prior_every, int | np.integer):
        raise ValueError(
            f"prior_every must be a whole number of reference points; got {prior_every!r}"
        )
    if prior_every < 1:
        raise ValueError(f"prior_every must be at least 1; got {prior_every}")
    return _Options(ts, e, ws, theta_values, method, fraction, prior_w, int(prior_every), extra)


def _level_rows(
    level_name: str, table: ObservationTable, grid: _Grid, options: _Options, details: bool
) -> Iterator[dict[str, list[dict[str, Any]]]]:
    """The result rows of one level, one dict of row lists (by result key) per w in turn.

    Per w: the windows of every reference point (DESIGN rules 3-7; the posterior's prior from
    the level's prior table), the further scorers' rows, then Evaluation 1 (HACS paper, Section
    III-B: selection counts, curves and Table I), Evaluation 2 (Section III-C: weighted P@K)
    and the crawl-budget metrics (GP4C paper, Eqs. 1-3), and with ``details`` the per-point rows.
    """
    o = options
    level, pages = _prepare(table, grid), _website_pages(table, level_name == "website")
    k_tables = _k_tables(max(table.site_count, 1))
    priors = None if o.prior_w is None else _prior_table(level, grid, o.prior_w, o.every, pages)
    level_scorers = o.scorers.get(level_name, {})
    models = (*RANKING_MODELS, *level_scorers)
    for w in o.ws:
        batch = _window_batch(level, grid, w, o.method, priors, o.every, pages)
        if level_scorers:
            batch = _with_scorers(batch, o.ts, o.e, level_scorers)
        counts = _selection_counts(batch, o.thetas, o.ts.size)
        curves, table_rows = _selection_rows(level_name, w, o.thetas, counts)
        budget = crawl_budget(counts.eligible, o.fraction)
        metrics = _rank_metrics(batch, counts, budget, k_tables)
        pak, budget_rows = _ranking_rows(level_name, w, counts, budget, metrics, models)
        rows = {"curves": curves, "table": table_rows, "pak": pak, "budget": budget_rows}
        if details:
            rows["points"] = _point_rows(
                level_name, w, o.ts, counts, budget, metrics, batch.priors, models
            )
        del batch
        yield rows


def _website_pages(table: ObservationTable, website: bool) -> _PageCopies | None:
    """The page copies of a website table with link counts (``hacs.evaluation.pages``)."""
    return _page_copies(table) if website else None


def _with_scorers(
    batch: _Batch, ts: FloatArray, e: float, scorers: Mapping[str, ExtraScorer]
) -> _Batch:
    """``batch`` with one more score row per scorer, each called per reference point."""
    terminals = _terminals(batch, ts[batch.r], e)
    rows = np.empty((len(scorers), batch.r.size))
    for r in np.flatnonzero(np.diff(batch.offsets)).tolist():
        lo, hi = int(batch.offsets[r]), int(batch.offsets[r + 1])
        columns = terminal_columns(terminals[:, lo:hi])
        for row, (name, scorer) in enumerate(scorers.items()):
            values = np.asarray(scorer(float(ts[r]), batch.site[lo:hi], columns), np.float64)
            if values.shape != (hi - lo,):
                raise ValueError(
                    f"scorer {name!r} gave {values.shape} scores for {hi - lo} sites at t={ts[r]}"
                )
            rows[row, lo:hi] = np.where(np.isnan(values), -np.inf, values)
    return replace(batch, scores=np.vstack([batch.scores, rows]))


def _check_scorers(
    scorers: Mapping[str, Mapping[str, ExtraScorer]], tables: Mapping[str, ObservationTable]
) -> Mapping[str, Mapping[str, ExtraScorer]]:
    """Further ranking models per level, named apart from the built-in ones."""
    taken = {*RANKING_MODELS, "random", "brute_force"}
    for level, named in scorers.items():
        if level not in tables:
            raise ValueError(f"scorers name a level without a table: {level!r}")
        for name in named:
            if name in taken or not name:
                raise ValueError(f"scorer names must be new and not empty; got {name!r}")
    return scorers


def _check_e(e_days: float) -> float:
    """The evaluation interval e in days, positive (HACS paper, Section III-A: e = 1 week)."""
    e = _finite(e_days, "e_days")
    if e <= 0:
        raise ValueError(f"e_days must be positive; got {e_days}")
    return e


def _check_w_weeks(w_weeks: Iterable[int]) -> tuple[int, ...]:
    """History sizes w in whole weeks, sorted and distinct (HACS paper, Section III-A)."""
    values = list(w_weeks)
    if not values:
        raise ValueError("w_weeks must hold at least one history size")
    for w in values:
        if isinstance(w, bool) or not isinstance(w, int | np.integer) or w < 1:
            raise ValueError(f"w_weeks must be positive whole numbers of weeks; got {w!r}")
    return tuple(sorted({int(w) for w in values}))


def _check_prior_weeks(prior_weeks: int | None) -> int | None:
    """The posterior's prior window in whole weeks, or None for the evaluated window itself."""
    if prior_weeks is None:
        return None
    if isinstance(prior_weeks, bool) or not isinstance(prior_weeks, int | np.integer):
        raise ValueError(
            f"prior_weeks must be a whole number of weeks or None; got {prior_weeks!r}"
        )
    if prior_weeks < 1:
        raise ValueError(f"prior_weeks must be at least 1; got {prior_weeks}")
    return int(prior_weeks)


def _check_thetas(thetas: Iterable[float]) -> FloatArray:
    """Thresholds θ ∈ [0, 1], sorted and distinct (HACS paper, Section III-B)."""
    values = [_finite(theta, "theta") for theta in thetas]
    if not values:
        raise ValueError("thetas must hold at least one threshold")
    for theta in values:
        if not 0.0 <= theta <= 1.0:
            raise ValueError(f"thetas must lie in [0, 1]; got {theta}")
    return np.unique(np.asarray(values, dtype=np.float64))


def _check_method(method: str) -> None:
    """One of the estimators' methods: observed or interpolated (HACS paper, Section II-B)."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)}; got {method!r}")
