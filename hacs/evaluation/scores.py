"""The GP4C paper's scorers (Section 5.1), on each window's timeline.

Part of :mod:`hacs.evaluation`; pure (NumPy and the estimation core). DESIGN.md rule 11; the
paper is ``papers/gp4c-genetic-programming-crawl-scheduling.txt``.

The window's n + 1 distinct observation instants give n *accesses* that could detect a change
(the first instant is the baseline) and X ≤ n of them that did (instants flagged by rule 3);
I_i = 1 when the i-th access (i = 1 … n, in time order) is an update. Δ = t + e − (time of the last
access): the time from the last visit to the end of the evaluation interval (GP4C's "t, the
number of cycles since the page was last visited", in days). A site with n = 0 scores 0.

* ``cho_garcia_molina``: λ_CG · Δ with λ_CG the Cho–Garcia-Molina rate, GP4C Eq. 4 /
  HACS Eq. 4: r̂ = −log((n − X + 0.5)/(n + 0.5)), λ_CG = r̂ · n / T over the window's observed
  span T (:func:`hacs.estimators.cho_garcia_molina_rate`).
* ``nad``, ``sad``, ``aad``, ``gad`` (Tan and Mitra, GP4C Section 5.1): λ_p = Σ w_i I_i with
  NAD w_i = 1/n; SAD w_n = 1, others 0; AAD w_i = 2i/(n(n + 1)); GAD w_i = 2^(i−1)/(2^n − 1);
  the change probability is GP4C Eq. 5, φ = 1 − exp(−λ_p Δ) (printed there with a sign slip).
  Each scorer ranks by the exponent λ_p · Δ, which orders sites exactly as φ does but without
  φ rounding to 1 for large exponents.
* ``age``: t − (time of the last access) (GP4C's Age: the time since the page was last visited).

HACS itself scores by p (rule 7) and Last-Obs by t − τ (HACS paper, Section III-C). The
posterior (HACS's default, ``hacs.evaluation.windows``) scores by its exponent α ln(1 + Δ/β),
which orders sites exactly as its p = 1 − (β/(β + Δ))^α does, without p rounding to 1.
"""

from __future__ import annotations

import numpy as np

from hacs.estimators import cho_garcia_molina_rate
from hacs.evaluation.table import FloatArray, IntArray

__all__ = ["RANKING_MODELS"]

#: Models that rank U(w, t), in the order of the score rows (Random is added analytically).
RANKING_MODELS = (
    "hacs",
    "posterior",
    "last_obs",
    "cho_garcia_molina",
    "nad",
    "sad",
    "aad",
    "gad",
    "age",
)
_ROW = {name: row for row, name in enumerate(RANKING_MODELS)}
_HACS_ROW = _ROW["hacs"]


def _scores(
    inst_time: FloatArray,
    a: IntArray,
    b: IntArray,
    fl_pair: IntArray,
    fl_inst: IntArray,
    t: FloatArray,
    e: float,
    tau: FloatArray,
    probability: FloatArray,
    posterior_score: FloatArray,
) -> FloatArray:
    """One row per RANKING_MODELS entry (the module docstring).

    HACS by p (HACS paper, Section II-E), the posterior by ``posterior_score`` (its exponent,
    docs/readings.md), Last-Obs by t − τ (Section III-C); Cho–Garcia-Molina
    by GP4C Eq. 4 (HACS Eq. 4), NAD, SAD, AAD and GAD by GP4C Section 5.1 with Eq. 5's exponent,
    Age by GP4C Section 5.1.

    CG, NAD, SAD, AAD and GAD are 0 without updates (X = 0), so they are computed for the
    windows with updates only; ``fl_pair`` is sorted, each window's update instants ascending.
    """
    n_pairs = a.size
    scores = np.zeros((len(RANKING_MODELS), n_pairs))
    scores[_ROW["hacs"]] = probability
    scores[_ROW["posterior"]] = posterior_score
    np.subtract(t, tau, out=scores[_ROW["last_obs"]])  # t − τ
    last = inst_time[b - 1]
    np.subtract(t, last, out=scores[_ROW["age"]])  # t − last access
    if fl_pair.size == 0:
        return scores
    busy, last_b, per_access = _access_scores(inst_time, a, b, fl_pair, fl_inst)
    elapsed = t[busy] + e - inst_time[last_b]  # Δ
    for name, value in per_access.items():
        scores[_ROW[name], busy] = value * elapsed
    return scores


def _access_scores(
    inst_time: FloatArray, a: IntArray, b: IntArray, fl_pair: IntArray, fl_inst: IntArray
) -> tuple[IntArray, IntArray, dict[str, FloatArray]]:
    """The windows with updates, their last accesses, and their CG, NAD, SAD, AAD and GAD
    before they are multiplied by Δ (GP4C Section 5.1; see :func:`_scores`)."""
    new = np.ones(fl_pair.size, dtype=np.bool_)
    new[1:] = fl_pair[1:] != fl_pair[:-1]
    starts = np.flatnonzero(new)
    busy = fl_pair[starts]
    counts = np.diff(np.append(starts, fl_pair.size))
    first_b, last_b = a[busy], b[busy] - 1
    n = (last_b - first_b).astype(np.float64)  # accesses that could detect a change (≥ 1)
    x = counts.astype(np.float64)  # X: accesses that did
    number = fl_inst - np.repeat(first_b, counts)  # the access's number i, 1 … n
    n_each = np.repeat(last_b - first_b, counts)
    cg = cho_garcia_molina_rate(n, x, inst_time[last_b] - inst_time[first_b])
    aad = 2.0 * np.add.reduceat(number.astype(np.float64), starts) / (n * (n + 1.0))
    # 2^(i−1)/(2^n − 1) = 2^(i−1−n)/(1 − 2^−n): no overflow for long windows.
    powers = np.ldexp(1.0, np.maximum(number - 1 - n_each, -1100).astype(np.int32))
    gad = np.add.reduceat(powers, starts) / (1.0 - np.ldexp(1.0, -np.minimum(n_each[starts], 1100)))
    values = {
        "cho_garcia_molina": cg,
        "nad": x / n,
        "sad": (fl_inst[starts + counts - 1] == last_b).astype(np.float64),
        "aad": aad,
        "gad": gad,
    }
    return busy, last_b, values
