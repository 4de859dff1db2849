"""hacs.evaluation.grid: the reference points, and the positives after each of them
(DESIGN.md rule 9)."""

from __future__ import annotations

from hacs.evaluation import reference_points, window_scores
from tests.hacs.evaluation._helpers import Obs, table_of


def test_reference_points_run_from_start_to_end_every_step() -> None:
    assert reference_points(0.0, 14.0).tolist() == [0.0, 7.0, 14.0]
    assert reference_points(0.0, 13.9).tolist() == [0.0, 7.0]
    assert reference_points(16587.0, 17683.0).size == 157  # 2015-06-01 … 2018-06-01


def test_a_pages_first_observation_is_not_a_positive() -> None:
    observations = [Obs(0, 0, 1.0, 0, frozenset("a")), Obs(0, 1, 9.0, 0, frozenset("b"))]
    scores = window_scores(table_of(observations, 1), t=7.0, w_weeks=1)
    assert not scores.positive.any()
