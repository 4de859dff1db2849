"""hacs.index_lag: the margins late captures needed, counted per day, and the lag they give."""

from __future__ import annotations

import numpy as np
import pytest

from hacs.index_lag import FORGET_AFTER, add_margins, host_lag, index_lag, late_margins


def test_only_captures_made_before_the_last_answers_newest_row_were_late() -> None:
    # The last answer's newest row was at day 100: a capture of day 97 found now was indexed
    # after that answer (3 days of margin needed); one of day 101 says nothing.
    assert late_margins([97.0, 101.0, 99.5, 100.0], 100.0) == [3.0, 0.5]
    assert late_margins([], 100.0) == []
    with pytest.raises(ValueError, match="anchor"):
        late_margins([1.0], float("nan"))


def test_margins_are_counted_per_whole_day_the_last_bucket_holding_the_longer_ones() -> None:
    counts = add_margins([], [0.2, 0.9, 1.0, 2.5, 40.0], days=4)
    assert counts == [2, 1, 1, 1]
    assert add_margins(counts, [3.1], days=4) == [2, 1, 1, 2]
    # A wider count keeps what it held; a narrower one drops nothing it can hold.
    assert add_margins([1, 2], [], days=3) == [1, 2, 0]
    with pytest.raises(ValueError, match="margin"):
        add_margins([], [-1.0], days=3)
    with pytest.raises(ValueError, match="days"):
        add_margins([], [], days=0)


def test_old_evidence_fades_by_halving_past_the_limit() -> None:
    counts = add_margins([FORGET_AFTER, 0], [1.0], days=2)
    assert counts == [FORGET_AFTER // 2, 0]


def test_the_lag_is_the_day_holding_the_quantile_plus_the_slack_within_the_cap() -> None:
    # 100 late captures: 60 needed under a day, 30 one day, 9 two days, 1 nine days.
    counts = [60, 30, 9, 0, 0, 0, 0, 0, 0, 1]
    assert index_lag(counts, cap=30) == 3 + 1.0  # 99 % within 3 days, plus a day
    assert index_lag(counts, cap=30, quantile=1.0) == 10 + 1.0
    assert index_lag(counts, cap=5, quantile=1.0) == 5  # never beyond the cap
    assert index_lag(counts, cap=30, quantile=0.5) == 2.0
    assert index_lag(counts[:3], cap=30) is None  # 99 captures: too few
    assert index_lag(counts[:3], cap=30, least=10) == 4.0


def test_a_geometric_lag_is_read_back_from_its_counts() -> None:
    # Lags of 1 + a geometric number of days (mean 3): the 99th percentile is 12 days.
    rng = np.random.default_rng(5)
    margins = (rng.geometric(1 / 3, 50_000) - rng.random(50_000)).tolist()
    counts = add_margins([], margins, days=31)
    true = float(np.quantile(margins, 0.99))
    assert index_lag(counts, cap=30, slack=0.0) == pytest.approx(np.ceil(true), abs=1)


def test_a_host_with_enough_evidence_has_its_own_lag_the_others_every_hosts() -> None:
    slow = [0] * 20 + [200]  # indexes 20 days late
    fast = [200]
    pooled = [a + b for a, b in zip(fast + [0] * 20, slow, strict=True)]
    assert host_lag(slow, pooled, cap=30) == 22.0
    assert host_lag(fast, pooled, cap=30) == 2.0
    assert host_lag([5], pooled, cap=30) == index_lag(pooled, cap=30)  # too few of its own
    assert host_lag([], [], cap=30) == 30  # no evidence anywhere: the longest lag
