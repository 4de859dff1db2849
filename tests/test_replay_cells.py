"""``bench.replay``'s count of the cells where HACS's list finds at least every peer's changes,
and the largest shortfall in the others."""

from __future__ import annotations

import pytest

from bench.replay import DONE_WHEN_PEERS, cells_at_least


def test_a_cell_is_met_when_hacs_finds_at_least_the_best_peer() -> None:
    cells = {
        (0.02, 0): {"hacs": 100, "lambdacrawl": 100, "nutch_fresh": 90},  # a tie counts as met
        (0.02, 1): {"hacs": 99, "lambdacrawl": 100, "nutch_fresh": 80},  # 1 % behind
        (0.05, 0): {"hacs": 120, "lambdacrawl": 110, "nutch_fresh": 125},  # 4 % behind
        (0.05, 1): {"hacs": 130, "lambdacrawl": 110, "nutch_fresh": 125},
    }
    standing = cells_at_least(cells, DONE_WHEN_PEERS)
    assert (standing.met, standing.total) == (2, 4)
    assert standing.worst == pytest.approx(1 - 120 / 125)


def test_cells_without_every_peer_are_not_counted_and_no_shortfall_reads_zero() -> None:
    cells = {
        (0.02, 0): {"hacs": 10, "lambdacrawl": 9},
        (0.02, 1): {"lambdacrawl": 9, "nutch_fresh": 8},
        (0.05, 0): {"hacs": 10, "lambdacrawl": 9, "nutch_fresh": 10},
    }
    standing = cells_at_least(cells, DONE_WHEN_PEERS)
    assert (standing.met, standing.total, standing.worst) == (1, 1, 0.0)
    assert cells_at_least({}, DONE_WHEN_PEERS).total == 0
