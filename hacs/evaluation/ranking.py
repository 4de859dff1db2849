"""Evaluation 2 and the crawl-budget metrics: ranks, weighted P@K, NDCG@k, ChangeRate@k.

Part of :mod:`hacs.evaluation`; pure (NumPy only). HACS paper, Section III-C (DESIGN.md rule 10);
GP4C paper, Sections 4.2.2 and 5.2 (rule 11).

* **Evaluation 2.** Models rank U(w, t): HACS by p; the posterior (HACS's default reading,
  ``hacs.evaluation.windows``) by its p, read through its exponent (``hacs.evaluation.scores``);
  Last-Obs by t − τ descending (τ as in rule 5: the last update in the window, else the first
  observation); the GP4C scorers
  (``hacs.evaluation.scores``) by their score; Random by its exact expectation. The expected
  ranking orders the positives by the time of their first update in (t, t + e]. For
  K = 1 … |Pos|, P@K = |top-K(model) ∩ top-K(expected)| / K, weighted by 1/log2(K + 1)
  normalised to sum 1; weighted P@K is averaged over the t with |Pos| ≥ 1. Random:
  E|top-K(random) ∩ S| = K·K/|U|.
* **Ties** (our reading). Every ranking breaks ties deterministically: HACS by p descending, then
  older τ first, then site index (as the crawl list does: DESIGN.md rule 8,
  :func:`hacs.ranking.rank_order`); every other model by score descending, then site index; the
  expected ranking by first-update time, then site index. Callers that number sites in URL order
  get rule 8's final tie-break too.
* **Crawl budget** (GP4C, Section 5.2). k = max(1, round(budget_fraction · |U|)) (half up),
  at most |U|. ChangeRate@k (Eq. 1) = positives among the model's top k, divided by k, averaged
  over the t with |U| ≥ 1. NDCG@k (Eqs. 2-3) = DCG@k / IDCG@k, averaged over the t with
  |Pos| ≥ 1. *Our reading of Eq. 2:* as printed, rel_i / log_e(i) divides by log(1) = 0 at the
  first rank; the cited definition (Järvelin and Kekäläinen 2002) discounts only the ranks
  i ≥ b by log_b(i) and leaves ranks below the base b undiscounted, so with b = e the discount is
  1 for i = 1, 2 and 1/ln(i) from i = 3 on. IDCG@k puts every positive first. Each budget row also
  carries the P/R/F1 of the top-k selection (micro and macro, as in Evaluation 1).
  Brute Force does not rank, so it has no P@K or budget rows. :func:`budget_metrics` gives one
  model's NDCG@k and ChangeRate@k the same way (GP4C's fitness, ``hacs.learning.gp4c``).

These metrics need only each positive's rank, found with one partial sort per window for all
models at once.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from hacs.evaluation.metrics import _clean, _macro, _micro, _PointCounts
from hacs.evaluation.scores import _HACS_ROW, RANKING_MODELS
from hacs.evaluation.table import BoolArray, FloatArray, IntArray
from hacs.evaluation.windows import _Batch
from hacs.ranking import rank_order

__all__ = ["budget_metrics", "crawl_budget", "random_budget_metrics"]

_NEVER = np.iinfo(np.int64).max // 4  # a rank beyond every window


def crawl_budget(eligible: IntArray, fraction: float) -> IntArray:
    """k = max(1, round(fraction · |U|)) (half up), at most |U| (0 when U is empty).

    GP4C paper, Section 5.2: the crawl budget, a fraction of the pages.
    """
    k = np.maximum(np.floor(fraction * eligible + 0.5).astype(np.int64), 1)
    result: IntArray = np.minimum(k, eligible)
    return result


def budget_metrics(
    scores: ArrayLike, offsets: ArrayLike, positive: ArrayLike, fraction: float
) -> tuple[FloatArray, FloatArray]:
    """NDCG@k and ChangeRate@k per reference point (NaN where undefined) of one model that
    ranks each window's sites by ``scores``, ties in pair order, exactly as :func:`evaluate`
    computes them for its models (GP4C paper, Eqs. 1-3; DESIGN.md rule 11).

    The pairs of reference point r are ``offsets[r]:offsets[r + 1]`` (in site order, as
    :func:`hacs.evaluation.learning_windows` gives them); ``positive`` flags the pairs with an
    update in (t, t + e]; k is :func:`crawl_budget` of each window at ``fraction``.
    """
    s = np.asarray(scores, dtype=np.float64)
    off = np.asarray(offsets, dtype=np.int64)
    pos = np.asarray(positive, dtype=np.bool_)
    eligible = np.diff(off)
    budget = crawl_budget(eligible, fraction)
    positives = np.array(
        [np.count_nonzero(pos[a:b]) for a, b in pairwise(off.tolist())], dtype=np.int64
    )
    # Only the positives in a top k count. Summed in site order, they give the sums of the
    # evaluation's pass over all of a window's positives (where the others add exact zeros):
    # the same figures to the last bit.
    hit_r: list[IntArray] = []
    hit_rank: list[IntArray] = []
    for r, lo, top in _tops(s[np.newaxis], None, off, budget, positives):
        place = np.flatnonzero(pos[lo + top[0]])
        in_site_order = np.argsort(top[0, place])
        hit_r.append(np.full(place.size, r, dtype=np.int64))
        hit_rank.append(place[in_site_order] + 1)
    ranks = np.concatenate(hit_rank) if hit_rank else np.zeros(0, dtype=np.int64)
    pos_r = np.concatenate(hit_r) if hit_r else np.zeros(0, dtype=np.int64)
    tables = _k_tables(max(int(eligible.max(initial=0)), 1))
    ndcg, change_rate, _ = _ndcg_change_rate(ranks, pos_r, eligible, positives, budget, tables)
    return ndcg, change_rate


def _tops(
    scores: FloatArray,
    tau: FloatArray | None,
    offsets: IntArray,
    depth: IntArray,
    positives: IntArray,
) -> Iterator[tuple[int, int, IntArray]]:
    """For each reference point r with a positive: r, the window's first pair ``lo``, and each
    model's (row's) top ``depth[r]`` pairs in its ranking (offsets from ``lo``, best first).

    HACS paper, Section III-C (the models' rankings), with the tie rule of the module docstring:
    with ``tau``, row _HACS_ROW by DESIGN.md rule 8 (:func:`hacs.ranking.rank_order`: older τ,
    then site); every other row, and every row without ``tau``, by site order.

    Per window, one partial sort finds every model's top depth at once (1 ≤ depth ≤ |U|); ties
    at the cut are settled by the tie rule, and only those depth entries per model are sorted.
    """
    n_models = scores.shape[0]
    rows = np.arange(n_models)[:, np.newaxis]
    for r in np.flatnonzero(positives).tolist():
        lo, hi = int(offsets[r]), int(offsets[r + 1])
        top_depth = int(depth[r])
        block = scores[:, lo:hi]
        cut = (hi - lo) - top_depth  # after partitioning, entries from `cut` on are the top
        threshold = np.partition(block, cut, axis=1)[:, cut : cut + 1]
        chosen = block >= threshold
        surplus = chosen.sum(axis=1) - top_depth
        for row in np.flatnonzero(surplus).tolist():  # ties at the cut: the tie rule decides
            tied = np.flatnonzero(block[row] == threshold[row])
            if tau is not None and row == _HACS_ROW:
                tied = tied[rank_order(block[row, tied], tau[lo:hi][tied], tied)]
            chosen[row, tied[tied.size - surplus[row] :]] = False
        width = hi - lo  # `chosen` is C-ordered: entry (row, i) is flat index row · width + i
        top = np.flatnonzero(chosen).reshape(n_models, top_depth) - rows * width  # in site order
        order = np.argsort(-block[rows, top], axis=1, kind="stable")
        top = top[rows, order]  # score descending, ties in site order
        if tau is not None:
            hacs = top[_HACS_ROW]
            top[_HACS_ROW] = hacs[rank_order(block[_HACS_ROW, hacs], tau[lo:hi][hacs], hacs)]
        yield r, lo, top


def _positive_ranks(
    scores: FloatArray,
    tau: FloatArray | None,
    offsets: IntArray,
    positive: BoolArray,
    positives: IntArray,
    depth: IntArray,
) -> IntArray:
    """Each model's (row's) rank of each positive pair (column), or _NEVER beyond ``depth[r]``
    in the window of reference point r, which holds ``positives[r]`` positives (:func:`_tops`).
    """
    pos_pairs = np.flatnonzero(positive)  # a positive's column is its index here
    ranks = np.full((scores.shape[0], pos_pairs.size), _NEVER, dtype=np.int64)
    for r, lo, top in _tops(scores, tau, offsets, depth, positives):
        hit = np.flatnonzero(positive[lo + top])  # (model, place) as model · depth + place
        model, place = np.divmod(hit, int(depth[r]))
        ranks[model, np.searchsorted(pos_pairs, lo + top.ravel()[hit])] = place + 1
    return ranks


def _expected_ranks(batch: _Batch) -> IntArray:
    """Rank of each positive pair in its window's expected ranking (first update, then site).

    HACS paper, Section III-C: "URLs that were updated closer to t were ranked higher".
    """
    pos_pairs = np.flatnonzero(batch.positive)
    r = batch.r[pos_pairs]
    order = np.lexsort((pos_pairs, batch.first_update[pos_pairs], r))
    ranks = np.empty(pos_pairs.size, dtype=np.int64)
    sorted_r = r[order]
    ranks[order] = np.arange(order.size) - np.searchsorted(sorted_r, sorted_r) + 1
    return ranks


@dataclass(frozen=True)
class _Tables:
    """Cumulative sums over K used by weighted P@K and NDCG, indexed by K (entry 0 is 0).

    HACS paper, Section III-C (weights 1/log2(K + 1)); GP4C paper, Eqs. 2-3 (the discounts).
    """

    weight_sum: FloatArray  # Z(P) = Σ_{K ≤ P} 1/log2(K + 1)
    weight_over_k: FloatArray  # Q(P) = Σ_{K ≤ P} 1/(K log2(K + 1))
    weight_times_k: FloatArray  # Σ_{K ≤ P} K/log2(K + 1)
    discount: FloatArray  # d(i) of NDCG (entry 0 unused)
    discount_sum: FloatArray  # IDCG(j) = Σ_{i ≤ j} d(i)


@functools.lru_cache(maxsize=8)  # GP4C's fitness asks for the same tables thousands of times
def _k_tables(size: int) -> _Tables:
    """The :class:`_Tables` for K = 1 … size (HACS paper, Section III-C; GP4C paper, Eqs. 2-3)."""
    k = np.arange(1, size + 1, dtype=np.float64)
    weight = 1.0 / np.log2(k + 1.0)
    discount = 1.0 / np.log(np.maximum(k, math.e))  # Järvelin–Kekäläinen, base e: 1 for k < e

    def cumulative(values: FloatArray) -> FloatArray:
        return np.concatenate(([0.0], np.cumsum(values)))

    return _Tables(
        weight_sum=cumulative(weight),
        weight_over_k=cumulative(weight / k),
        weight_times_k=cumulative(weight * k),
        discount=np.concatenate(([0.0], discount)),
        discount_sum=cumulative(discount),
    )


@dataclass(frozen=True, eq=False)
class _RankMetrics:
    """Per model (row) and reference point (column); NaN where undefined."""

    p_at_k: FloatArray
    ndcg: FloatArray
    change_rate: FloatArray
    hits: FloatArray  # positives in the top k (expected for Random)


def _rank_metrics(
    batch: _Batch, counts: _PointCounts, budget: IntArray, tables: _Tables
) -> _RankMetrics:
    """Weighted P@K, NDCG@k, ChangeRate@k per model and reference point; Random last.

    HACS paper, Section III-C (weighted P@K); GP4C paper, Eq. 1 (ChangeRate@k) and Eqs. 2-3
    (NDCG@k, discounts as in the module docstring). Random by its exact expectation.
    """
    n_refs = counts.eligible.size
    eligible, positives = counts.eligible, counts.positives
    depth = np.maximum(positives, budget)  # P@K needs the top |Pos|, the budget the top k
    ranks = _positive_ranks(
        batch.scores, batch.tau, batch.offsets, batch.positive, positives, depth
    )
    expected = _expected_ranks(batch)
    pos_r = batch.r[batch.positive]
    n_models = ranks.shape[0]
    p_at_k = np.full((n_models + 1, n_refs), np.nan)
    ndcg = np.full((n_models + 1, n_refs), np.nan)
    change_rate = np.full((n_models + 1, n_refs), np.nan)
    hits = np.zeros((n_models + 1, n_refs))
    has_pos = positives > 0
    z = tables.weight_sum[positives]
    p_of = positives[pos_r]
    for row in range(n_models):
        # Σ_K w_K |top-K ∩ top-K(expected)|/K = Σ_x Σ_{K ≥ max(rank_x, expected_x)} w_K/K.
        reach = np.maximum(ranks[row], expected)
        inside = reach <= p_of
        gain = np.where(
            inside,
            tables.weight_over_k[p_of] - tables.weight_over_k[np.where(inside, reach, 1) - 1],
            0.0,
        )
        summed = np.bincount(pos_r, weights=gain, minlength=n_refs)
        with np.errstate(divide="ignore", invalid="ignore"):
            p_at_k[row] = np.where(has_pos, summed / z, np.nan)
        ndcg[row], change_rate[row], hits[row] = _ndcg_change_rate(
            ranks[row], pos_r, eligible, positives, budget, tables
        )
    # Random, exactly: E|top-K ∩ S| = K²/|U|, each top-k site positive w.p. |Pos|/|U|.
    with np.errstate(divide="ignore", invalid="ignore"):
        p_at_k[n_models] = np.where(
            has_pos, tables.weight_times_k[positives] / (z * eligible), np.nan
        )
    ndcg[n_models], change_rate[n_models], hits[n_models] = _random_budget(
        eligible, positives, budget, tables
    )
    return _RankMetrics(p_at_k, ndcg, change_rate, hits)


def random_budget_metrics(
    offsets: ArrayLike, positive: ArrayLike, fraction: float
) -> tuple[FloatArray, FloatArray]:
    """Random's NDCG@k and ChangeRate@k per reference point (NaN where undefined), by their
    exact expectation, as :func:`evaluate` gives them; the windows as for
    :func:`budget_metrics`. What a learned function must beat to rank better than chance."""
    off = np.asarray(offsets, dtype=np.int64)
    pos = np.asarray(positive, dtype=np.bool_)
    eligible = np.diff(off)
    running = np.concatenate(([0], np.cumsum(pos, dtype=np.int64)))
    positives = running[off[1:]] - running[off[:-1]]
    budget = crawl_budget(eligible, fraction)
    tables = _k_tables(max(int(eligible.max(initial=0)), 1))
    ndcg, change_rate, _ = _random_budget(eligible, positives, budget, tables)
    return ndcg, change_rate


def _random_budget(
    eligible: IntArray, positives: IntArray, budget: IntArray, tables: _Tables
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Random's NDCG@k, ChangeRate@k and expected hits per reference point: each of its top k
    sites is positive with probability |Pos|/|U| (GP4C paper, Eqs. 1-3, in expectation)."""
    has_u = eligible > 0
    idcg = tables.discount_sum[np.minimum(budget, positives)]
    with np.errstate(divide="ignore", invalid="ignore"):
        share: FloatArray = np.where(has_u, positives / eligible, 0.0)
        ndcg: FloatArray = np.where(
            positives > 0, tables.discount_sum[budget] * share / idcg, np.nan
        )
        change_rate: FloatArray = np.where(has_u, share, np.nan)
    hits: FloatArray = budget * share
    return ndcg, change_rate, hits


def _ndcg_change_rate(
    ranks: IntArray,
    pos_r: IntArray,
    eligible: IntArray,
    positives: IntArray,
    budget: IntArray,
    tables: _Tables,
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """One model's NDCG@k and ChangeRate@k per reference point (NaN where undefined) and its
    hits, the positives in its top k, from its ``ranks`` of positive pairs: every pair in a top
    k, in site order within each reference point (``pos_r``); pairs ranked beyond k add nothing.

    GP4C paper, Eq. 1 (ChangeRate@k = hits / k, defined where |U| ≥ 1) and Eqs. 2-3 (NDCG@k =
    DCG@k / IDCG@k, defined where |Pos| ≥ 1; discounts as in the module docstring); DESIGN.md
    rule 11.
    """
    n_refs = eligible.size
    in_budget = ranks <= budget[pos_r]
    found = np.bincount(pos_r, weights=in_budget, minlength=n_refs)
    dcg = np.bincount(
        pos_r,
        weights=np.where(in_budget, tables.discount[np.where(in_budget, ranks, 0)], 0.0),
        minlength=n_refs,
    )
    idcg = tables.discount_sum[np.minimum(budget, positives)]
    with np.errstate(divide="ignore", invalid="ignore"):
        ndcg: FloatArray = np.where(positives > 0, dcg / idcg, np.nan)
        change_rate: FloatArray = np.where(eligible > 0, found / budget, np.nan)
    return ndcg, change_rate, np.asarray(found, dtype=np.float64)  # no copy: already floats


def _mean(values: FloatArray) -> float | None:
    """The mean over the t where a metric is defined (not NaN): HACS paper, Section III-C."""
    defined = ~np.isnan(values)
    return float(np.mean(values[defined])) if defined.any() else None


def _ranking_rows(
    level: str,
    w: int,
    counts: _PointCounts,
    budget: IntArray,
    metrics: _RankMetrics,
    models: Sequence[str] = RANKING_MODELS,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Weighted P@K rows (HACS paper, Figure 11) and budget rows (GP4C paper, Eqs. 1-3, and the
    top-k selection's P/R/F1 as in Evaluation 1) for one (level, w)."""
    pos = counts.positives.astype(np.float64)
    has_u = counts.eligible > 0
    k = budget.astype(np.float64)
    pak: list[dict[str, Any]] = []
    budget_rows: list[dict[str, Any]] = []
    for row, model in enumerate((*models, "random")):
        pak.append(
            {
                "level": level,
                "w_weeks": w,
                "model": model,
                "weighted_p_at_k": _clean(_mean(metrics.p_at_k[row])),
                "points": int(np.count_nonzero(~np.isnan(metrics.p_at_k[row]))),
            }
        )
        tp = metrics.hits[row]
        precision, recall, f1 = _micro(float(tp.sum()), float(k.sum()), float(pos.sum()))
        macro = _macro(tp[has_u], k[has_u], pos[has_u])
        budget_rows.append(
            {
                "level": level,
                "w_weeks": w,
                "model": model,
                "k_mean": _clean(float(k[has_u].mean()) if has_u.any() else None),
                "ndcg_at_k": _clean(_mean(metrics.ndcg[row])),
                "change_rate_at_k": _clean(_mean(metrics.change_rate[row])),
                "tp": float(tp.sum()) if model == "random" else int(round(float(tp.sum()))),
                "fp": _count(float((k - tp).sum()), model),
                "fn": _count(float((pos - tp).sum()), model),
                "precision": _clean(precision),
                "recall": _clean(recall),
                "f1": _clean(f1),
                "macro_precision": _clean(macro[0]),
                "macro_recall": _clean(macro[1]),
                "macro_f1": _clean(macro[2]),
            }
        )
    return pak, budget_rows


def _count(value: float, model: str) -> float | int:
    """A count for output: exact for the models, an expectation (float) for Random."""
    return value if model == "random" else int(round(value))
