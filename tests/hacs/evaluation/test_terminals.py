"""hacs.evaluation.terminals: what a learned scorer reads of each window, the same in training
(learning_windows) and for a crawl list (window_scores)."""

from __future__ import annotations

import numpy as np

from hacs.evaluation import TERMINALS, learning_windows, window_scores
from tests.hacs.evaluation._helpers import small_table


def test_training_and_a_crawl_list_see_the_same_terminals() -> None:
    table = small_table(7)
    windows = learning_windows(table, start=100.0, end=100.0, w_weeks=3)
    single = window_scores(table, t=100.0, w_weeks=3)
    assert np.array_equal(windows.site, single.site)
    for name in TERMINALS:
        assert np.array_equal(windows.columns()[name], single.terminals[name]), name


def test_terminals_read_the_window_as_the_definitions_say() -> None:
    table = small_table(11)
    single = window_scores(table, t=120.0, w_weeks=4, e_days=7.0)
    terms = single.terminals
    assert np.array_equal(terms["n"], single.instants - 1)
    assert np.array_equal(terms["t"], 127.0 - single.last_copy)
    assert np.array_equal(terms["p"], single.posterior_probability)
    assert np.array_equal(terms["lam"], np.nan_to_num(single.rate, nan=0.0))
    assert np.array_equal(terms["cg"], single.scores["cho_garcia_molina"])
    assert (terms["X"] <= terms["n"]).all()
    assert ((terms["X"] > 0) == (terms["nad"] > 0)).all()  # NAD is X/n times t
