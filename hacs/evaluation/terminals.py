"""What a learned scorer sees of each window: GP4C's terminals, plus HACS's λ and p.

Part of :mod:`hacs.evaluation`; pure (NumPy). GP4C paper, Section 4.2.1; the learned schedulers
live in :mod:`hacs.learning`.

For each eligible (t, site) window, by name (``TERMINALS``, in this order):

* ``n`` — accesses that could detect a change: the window's distinct observation instants less
  the first (the baseline), as the GP4C scorers count them (``hacs.evaluation.scores``);
* ``X`` — accesses that did: the window's update instants (rule 3 within the window);
* ``t`` — days from the last access to the end of the evaluation interval, t + e − last access
  (GP4C's "cycles since the page was last visited", in days, as its scorers read it);
* ``cg``, ``nad``, ``sad``, ``aad``, ``gad`` — the GP4C estimators as the evaluation ranks by
  them: the exponent λ·t of each change probability 1 − exp(−λ·t) (0 without updates), which
  orders sites as the probability does without rounding to 1;
* ``lam`` — HACS's λ̂ of the window (the ``method``'s MLE; 0 when unknown);
* ``p`` — HACS's default p: the chance of a change since the newest copy over the window's
  posterior (``hacs.evaluation.windows``).

The same arrays serve training (:func:`hacs.evaluation.learning_windows`, every reference
point of a period) and a crawl list (:func:`hacs.evaluation.window_scores`, one t), so a
learned function sees the same quantities in both.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from hacs.evaluation.scores import _ROW
from hacs.evaluation.table import FloatArray
from hacs.evaluation.windows import _Batch

__all__ = ["TERMINALS"]

#: The terminals' names, in the row order of :func:`_terminals`.
TERMINALS = ("n", "X", "t", "cg", "nad", "sad", "aad", "gad", "lam", "p")


def _terminals(batch: _Batch, t: FloatArray, e: float) -> FloatArray:
    """One row per TERMINALS entry, one column per pair of ``batch`` (the module docstring);
    ``t`` is each pair's reference point."""
    rows = np.empty((len(TERMINALS), batch.r.size))
    rows[0] = batch.instants - 1
    rows[1] = batch.changes
    rows[2] = t + e - batch.last_copy
    for i, model in enumerate(("cho_garcia_molina", "nad", "sad", "aad", "gad"), start=3):
        rows[i] = batch.scores[_ROW[model]]
    rows[8] = np.nan_to_num(batch.rate, nan=0.0)
    rows[9] = batch.posterior
    return rows


def terminal_columns(rows: FloatArray) -> Mapping[str, FloatArray]:
    """The rows of :func:`_terminals` by name."""
    return {name: rows[i] for i, name in enumerate(TERMINALS)}
