"""Evaluation of HACS against its baselines — the pure, vectorised core.

Stdlib, NumPy and the estimation core only; never Django. Times are days (floats), rates per day.
The method is the HACS paper's Section III (``papers/hacs-scholarly-webpage-updates.txt``) with the
readings of DESIGN.md rules 3-5 and 7-11, plus the GP4C paper's scorers and metrics
(``papers/gp4c-genetic-programming-crawl-scheduling.txt``, Sections 4.2.2 and 5.1), and the HACS
paper's Figure 6 check (Section II-D).

Public API
----------
* :class:`ObservationTable` — one level's observations as flat arrays (validated);
* :func:`evaluate` — Evaluation 1 (P/R/F1 against θ, Table I), Evaluation 2 (weighted P@K) and the
  crawl-budget metrics (NDCG@k, ChangeRate@k) over a grid of reference points and history sizes;
* :func:`window_scores` — every eligible site's estimate, probability and scores for one
  (t, w): the quantities the evaluation is built from, for inspection and tests;
* :func:`learning_windows` — every eligible window's terminals (``TERMINALS``: GP4C's n, X, t
  and estimators, HACS's λ and p) and positives over a period, for the learned schedulers of
  :mod:`hacs.learning`;
* :func:`reference_points` — the reference points t from start to end;
* :func:`interval_distribution` — Figure 6: interpolated-update intervals against the Poisson
  expectation, per 1/λ̃ bin (``INTERVAL_BIN_EDGES``, ``D_BINS_PER_DOUBLING``).

The grid (DESIGN.md rules 9 and 10)
-----------------------------------
Reference points are ``t_r = start + r · step_days`` for r = 0, 1, … while t_r ≤ end. The history
window of w weeks at t is [t − 7w, t] (both ends included); the evaluation interval is (t, t + e].
*Eligible* sites U(w, t) have at least one observation in the window. Each eligible site is
estimated from its window (rules 3-7), HACS selects the sites with p ≥ θ (Evaluation 1) and ranks
them by p (Evaluation 2), against Random, Brute Force, Last-Obs and the GP4C scorers. Two HACS
models take part: ``hacs``, the paper's p = g(λ, τ, t, e), and ``posterior``, HACS's default
reading (the chance of a change since the newest copy over an empirical-Bayes Gamma posterior
on λ, its prior fitted without looking past t).

Where each reading is implemented (and documented)
--------------------------------------------------
* ``table`` — the observation table, and rule 3 read as an interval (A, B] of window starts;
* ``grid`` — reference points, the grid of boundary times, timelines (rule 4) and positives;
* ``windows`` — every window of one (level, w): eligibility, estimates and p (rules 5-7), and the
  posterior's evidence, leak-free prior and p;
* ``scores`` — the GP4C scorers (Cho–Garcia-Molina, NAD, SAD, AAD, GAD, Age);
* ``terminals`` — what a learned scorer reads of each window;
* ``metrics`` — Evaluation 1: selection counts, P/R/F1 micro and macro, θ̂;
* ``ranking`` — Evaluation 2 and the crawl budget: ties, weighted P@K, NDCG@k, ChangeRate@k;
* ``engine`` — :func:`evaluate` and :func:`window_scores`, and how the whole is fast;
* ``intervals`` — Figure 6.
"""

from hacs.evaluation.engine import (
    DEFAULT_PRIOR_EVERY,
    DEFAULT_PRIOR_WEEKS,
    DEFAULT_THETAS,
    DEFAULT_W_WEEKS,
    ExtraScorer,
    LearningWindows,
    WindowScores,
    evaluate,
    learning_windows,
    window_scores,
)
from hacs.evaluation.grid import reference_points
from hacs.evaluation.intervals import D_BINS_PER_DOUBLING, INTERVAL_BIN_EDGES, interval_distribution
from hacs.evaluation.metrics import SELECTION_MODELS
from hacs.evaluation.scores import RANKING_MODELS
from hacs.evaluation.table import ObservationTable
from hacs.evaluation.terminals import TERMINALS

__all__ = [
    "DEFAULT_PRIOR_EVERY",
    "DEFAULT_PRIOR_WEEKS",
    "DEFAULT_THETAS",
    "DEFAULT_W_WEEKS",
    "D_BINS_PER_DOUBLING",
    "ExtraScorer",
    "INTERVAL_BIN_EDGES",
    "RANKING_MODELS",
    "SELECTION_MODELS",
    "TERMINALS",
    "LearningWindows",
    "ObservationTable",
    "WindowScores",
    "evaluate",
    "interval_distribution",
    "learning_windows",
    "reference_points",
    "window_scores",
]
