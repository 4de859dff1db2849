"""hacs.estimators: hand-worked values, the slow reference of tests/reference.py, Poisson runs."""

from __future__ import annotations

import math
from itertools import pairwise

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import spearmanr

from hacs import estimators
from hacs.estimators import (
    METHODS,
    Accesses,
    RateEstimate,
    RateEstimates,
    accesses,
    change_probability,
    cho_garcia_molina_rate,
    estimate,
    estimate_many,
    mle_rate,
    ratio_rate,
    update_instants,
)
from tests.reference import SlowEstimate, slow_accesses, slow_estimate, slow_midpoints, slow_mle

REL = 1e-9


def close(a: float, b: float, rel: float = REL) -> bool:
    """Equal to ``rel`` relative, NaN equal to NaN, zero only to zero."""
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return a == b or abs(a - b) <= rel * max(abs(a), abs(b))


# --------------------------------------------------------------------------------------------
# Hand-worked cases
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("method", ["observed", "interpolated"])
def test_it_knows_nothing_without_observations(method: str) -> None:
    result = estimate([], [], method)
    assert math.isnan(result.rate) and math.isnan(result.tau)
    assert (result.observations, result.updates, result.method) == (0, 0, method)


@pytest.mark.parametrize("method", ["observed", "interpolated"])
def test_one_observation_gives_no_rate_and_tau_at_the_observation(method: str) -> None:
    result = estimate([42.0], [False], method)
    assert math.isnan(result.rate)
    assert result.tau == 42.0
    assert (result.observations, result.updates) == (1, 0)


@pytest.mark.parametrize("method", ["observed", "interpolated"])
def test_no_updates_gives_rate_zero_and_tau_at_the_first_observation(method: str) -> None:
    result = estimate([3.0, 10.0, 50.0, 51.0], [False] * 4, method)
    assert result == RateEstimate(0.0, 3.0, 4, 0, method)


def test_all_updates_uses_eq4_observed() -> None:
    # Intervals 10 and 20, both changed: n = m = 2, r = -log(0.5 / 2.5) = log 5, f = 2 / 30.
    result = estimate([0.0, 10.0, 30.0], [False, True, True])
    assert result.rate == pytest.approx(math.log(5) * 2 / 30, rel=1e-15)
    assert result.tau == 30.0
    assert (result.observations, result.updates) == (3, 2)


def test_all_updates_uses_eq4_interpolated() -> None:
    # Events at 0, 5 (U) and 20 (U): intervals 5 and 15, both changed; f = 2 / 20.
    result = estimate([0.0, 10.0, 30.0], [False, True, True], "interpolated")
    assert result.rate == pytest.approx(math.log(5) * 2 / 20, rel=1e-15)
    assert result.tau == 20.0


def test_eq5_with_one_changed_interval_observed() -> None:
    # Intervals 10 (u), 10 (c), 10 (u): 10 / (exp(10 λ) - 1) = 20, so λ = log(1 + 10/20) / 10.
    result = estimate([0.0, 10.0, 20.0, 30.0], [False, False, True, False])
    assert result.rate == pytest.approx(math.log(1.5) / 10, rel=1e-12)
    assert result.tau == 20.0


def test_eq5_with_one_changed_interval_interpolated() -> None:
    # The update at 20 moves to 15: intervals 10 (u), 5 (c), 15 (u); 5 / (exp(5 λ) - 1) = 25.
    result = estimate([0.0, 10.0, 20.0, 30.0], [False, False, True, False], "interpolated")
    assert result.rate == pytest.approx(math.log(1.2) / 5, rel=1e-12)
    assert result.tau == 15.0


def test_interpolated_midpoints_and_tau_follow_each_update() -> None:
    # Updates at 10 and 40 move to 5 and 30 (midpoints with 0 and 20); events 0, 5 (U), 20,
    # 30 (U), 50: changed 5 and 10, unchanged 15 and 20. τ is the last midpoint.
    times = [0.0, 10.0, 20.0, 40.0, 50.0]
    flags = [False, True, False, True, False]
    result = estimate(times, flags, "interpolated")
    assert result.tau == 30.0
    assert result.rate == pytest.approx(mle_rate([5.0, 10.0], [15.0, 20.0]), rel=1e-12)
    assert estimate(times, flags).tau == 40.0


def test_eq5_by_hand_with_two_equal_changed_intervals() -> None:
    # 2 * 4 / (exp(4 λ) - 1) = 10, so λ = log(1 + 8/10) / 4.
    assert mle_rate([4.0, 4.0], [6.0, 4.0]) == pytest.approx(math.log(1.8) / 4, rel=1e-12)


def test_mle_rate_edge_cases() -> None:
    assert math.isnan(mle_rate([], []))
    assert mle_rate([], [5.0, 7.0]) == 0.0
    # m = n = 1: r = -log(0.5 / 1.5) = log 3, f = 1 / 5.
    assert mle_rate([5.0], []) == pytest.approx(math.log(3) / 5, rel=1e-15)


def test_a_single_huge_interval() -> None:
    assert estimate([0.0, 1e6], [False, False]).rate == 0.0
    assert estimate([0.0, 1e6], [False, True]).rate == pytest.approx(math.log(3) / 1e6, rel=1e-15)
    # One huge changed interval against a tiny unchanged one, and the other way round:
    # λ = log(1 + t_c / S) / t_c, the first with exp(λ t) far beyond the float range nearby.
    assert mle_rate([1e6], [1e-3]) == pytest.approx(math.log1p(1e9) / 1e6, rel=1e-12)
    assert mle_rate([1e-3], [1e6]) == pytest.approx(math.log1p(1e-9) / 1e-3, rel=1e-12)


def test_observations_at_one_instant_are_one_access() -> None:
    # Two pages captured at day 10, one of them updated: accesses 0, 10 (U), 20.
    # Intervals 10 (c) and 10 (u): λ = log 2 / 10. Counts stay the raw counts.
    for flags in ([False, True, False, False], [False, False, True, False]):
        result = estimate([0.0, 10.0, 10.0, 20.0], flags)
        assert result.rate == pytest.approx(math.log(2) / 10, rel=1e-12)
        assert result.tau == 10.0
        assert (result.observations, result.updates) == (4, 1)


def test_observations_at_one_instant_interpolated() -> None:
    # Accesses 0, 10 (U), 20 -> events 0, 5 (U), 20: changed 5, unchanged 15.
    result = estimate([0.0, 10.0, 10.0, 20.0], [False, False, True, False], "interpolated")
    assert result.rate == pytest.approx(math.log(4 / 3) / 5, rel=1e-12)
    assert result.tau == 5.0


@pytest.mark.parametrize("method", ["observed", "interpolated"])
def test_a_flag_at_the_first_instant_is_ignored(method: str) -> None:
    # A page captured twice in the first second: the first access is the baseline either way.
    result = estimate([1.0, 1.0, 2.0], [False, True, False], method)
    assert result == RateEstimate(0.0, 1.0, 3, 1, method)
    many = estimate_many([1.0, 1.0, 2.0], [False, True, False], [0, 3], method)
    assert (many.rate[0], many.tau[0], many.updates[0]) == (0.0, 1.0, 1)


def test_a_midpoint_rounding_onto_its_neighbour_joins_it() -> None:
    # Between adjacent floats the midpoint rounds onto one of them (here 1.0, half to even):
    # the interpolated update lands on the access before it, and the two are one event.
    tick = math.nextafter(1.0, 2.0)
    assert (1.0 + tick) / 2 == 1.0
    alone = estimate([1.0, tick], [False, True], "interpolated")
    assert math.isnan(alone.rate) and alone.tau == 1.0
    joined = estimate([0.5, 1.0, tick], [False, False, True], "interpolated")
    assert joined.rate == pytest.approx(math.log(3) / 0.5) and joined.tau == 1.0
    many = estimate_many(
        [1.0, tick, 0.5, 1.0, tick], [0, 1, 0, 0, 1], [0, 2, 5], method="interpolated"
    )
    assert math.isnan(many.rate[0]) and many.rate[1] == pytest.approx(math.log(3) / 0.5)
    np.testing.assert_array_equal(many.tau, [1.0, 1.0])


def test_observations_all_at_one_instant_give_no_rate() -> None:
    result = estimate([5.0, 5.0, 5.0], [False, False, False])
    assert math.isnan(result.rate)
    assert (result.tau, result.observations) == (5.0, 3)


def test_eq3_and_eq4_on_their_own() -> None:
    assert ratio_rate(3, 30.0) == pytest.approx(0.1)
    assert math.isnan(ratio_rate(0, 0.0))
    assert cho_garcia_molina_rate(2, 2, 30.0) == pytest.approx(math.log(5) / 15, rel=1e-15)
    assert cho_garcia_molina_rate(10, 0, 100.0) == 0.0
    assert math.isnan(cho_garcia_molina_rate(0, 0, 0.0))
    # X = 1 of n = 4: r = -log(3.5 / 4.5), f = 4 / 40.
    assert cho_garcia_molina_rate(4, 1, 40.0) == pytest.approx(-math.log(3.5 / 4.5) / 10)
    both = cho_garcia_molina_rate(np.array([2, 4]), np.array([2, 1]), np.array([30.0, 40.0]))
    assert isinstance(both, np.ndarray) and both.shape == (2,)
    assert both[1] == pytest.approx(-math.log(3.5 / 4.5) / 10)


def test_change_probability() -> None:
    assert change_probability(0.01, 0.0, 10.0, 7.0) == pytest.approx(1 - math.exp(-0.17))
    assert change_probability(0.0, 0.0, 10.0, 7.0) == 0.0
    assert math.isnan(change_probability(math.nan, 0.0, 10.0, 7.0))
    p = change_probability(np.array([0.01, np.nan, 0.1]), np.array([0.0, 0.0, 5.0]), 10.0, 7.0)
    assert isinstance(p, np.ndarray)
    assert p[0] == pytest.approx(1 - math.exp(-0.17))
    assert math.isnan(p[1])
    assert p[2] == pytest.approx(1 - math.exp(-1.2))
    assert isinstance(change_probability(0.01, 0.0, 10.0, 7.0), float)


def test_estimate_many_on_hand_worked_sites() -> None:
    times = [0, 10, 20, 30, 0, 10, 10, 20, 5, 0, 10, 30]
    flags = [0, 0, 1, 0, 0, 1, 0, 0, 0, 0, 1, 1]
    result = estimate_many(times, flags, [0, 4, 8, 8, 9, 12])
    assert isinstance(result, RateEstimates)
    expected = [math.log(1.5) / 10, math.log(2) / 10, math.nan, math.nan, math.log(5) / 15]
    assert all(close(a, b, 1e-12) for a, b in zip(result.rate, expected, strict=True))
    np.testing.assert_array_equal(result.tau, [20.0, 10.0, np.nan, 5.0, 30.0])
    np.testing.assert_array_equal(result.observations, [4, 4, 0, 1, 3])
    np.testing.assert_array_equal(result.updates, [1, 1, 0, 0, 2])


def test_estimate_many_with_no_sites_or_only_empty_ones() -> None:
    none = estimate_many([], [], [0])
    assert none.rate.shape == (0,)
    empty = estimate_many([], [], [0, 0, 0], "interpolated")
    assert np.isnan(empty.rate).all() and np.isnan(empty.tau).all()
    np.testing.assert_array_equal(empty.observations, [0, 0])


# --------------------------------------------------------------------------------------------
# Invalid input
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("times", "updated", "message"),
    [
        ([0.0, -1.0], [False, False], r"times must not be negative; times\[1\] = -1.0"),
        ([0.0, 5.0, 3.0], [False] * 3, r"sorted ascending; times\[2\] = 3.0 < times\[1\] = 5.0"),
        ([0.0, math.nan], [False, False], r"times must be finite; times\[1\] = nan"),
        ([0.0, math.inf], [False, False], r"times must be finite; times\[1\] = inf"),
        ([0.0, 1.0], [False], r"same length; got 2 and 1"),
        ([0.0, 1.0], [True, False], r"updated\[0\] is True for a first observation.*baseline"),
        ([0.0, 1.0], [0, 2], r"updated must hold booleans"),
        ([[0.0, 1.0]], [[False, False]], r"times must be one-dimensional"),
        (["a"], [False], r"times must be numbers"),
    ],
)
def test_estimate_rejects_bad_timelines(
    times: list[object], updated: list[object], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        estimate(times, updated)  # type: ignore[arg-type]


def test_unknown_method_is_named() -> None:
    with pytest.raises(ValueError, match=r"method must be 'observed' or 'interpolated'; got 'x'"):
        estimate([0.0], [False], "x")
    with pytest.raises(ValueError, match=r"got 'midpoint'"):
        estimate_many([0.0], [False], [0, 1], "midpoint")


@pytest.mark.parametrize(
    ("times", "updated", "offsets", "message"),
    [
        ([0.0, 1.0], [False, False], [1, 2], r"offsets must start at 0; got offsets\[0\] = 1"),
        ([0.0, 1.0], [False, False], [0, 1], r"offsets must end at len\(times\) = 2; got"),
        ([0.0, 1.0], [False, False], [0, 2, 1, 2], r"non-decreasing; offsets\[2\] = 1 <"),
        ([0.0, 1.0], [False, False], [0.0, 2.0], r"offsets must be integers"),
        ([0.0, 1.0], [False, False], [], r"offsets must be a one-dimensional array"),
        ([0.0, 2.0, 1.0], [False] * 3, [0, 3], r"within each site; times\[2\] = 1.0 <.*site 0"),
        ([0.0, 2.0, 1.0], [False] * 3, [0, 2, 3], None),  # a new site may start earlier
        ([0.0, 1.0, 5.0, 6.0], [False, False, True, False], [0, 2, 4], r"updated\[2\].*site 1"),
        ([0.0, 1.0, 5.0, 5.0], [False, False, False, True], [0, 2, 4], None),
        ([0.0, -1.0], [False, False], [0, 1, 2], r"times must not be negative; times\[1\]"),
    ],
)
def test_estimate_many_rejects_bad_input(
    times: list[float], updated: list[bool], offsets: list[float], message: str | None
) -> None:
    if message is None:
        estimate_many(times, updated, offsets)
        return
    with pytest.raises(ValueError, match=message):
        estimate_many(times, updated, offsets)


def test_other_functions_reject_bad_input() -> None:
    with pytest.raises(ValueError, match=r"changed_intervals must be positive; "):
        mle_rate([0.0], [1.0])
    with pytest.raises(ValueError, match=r"unchanged_intervals must be finite"):
        mle_rate([1.0], [math.nan])
    with pytest.raises(ValueError, match=r"rate must not be negative"):
        change_probability(-0.1, 0.0, 1.0, 1.0)
    with pytest.raises(ValueError, match=r"e must not be negative"):
        change_probability(0.1, 0.0, 1.0, -1.0)
    with pytest.raises(ValueError, match=r"updates must not exceed accesses"):
        cho_garcia_molina_rate(2, 3, 10.0)
    with pytest.raises(ValueError, match=r"total_time must be positive when accesses > 0"):
        cho_garcia_molina_rate(2, 1, 0.0)
    with pytest.raises(ValueError, match=r"total_time must not be negative"):
        ratio_rate(1, -1.0)


# --------------------------------------------------------------------------------------------
# Accesses and update instants
# --------------------------------------------------------------------------------------------


def test_accesses_merge_each_sites_observations_at_one_instant() -> None:
    # Site 0: two pages captured at day 10, one updated. Site 1: empty. Site 2: a flag at the
    # first instant, which the baseline access absorbs and ignores.
    result = accesses(
        [0.0, 10.0, 10.0, 20.0, 5.0, 5.0, 7.0],
        [False, False, True, False, False, True, False],
        [0, 4, 4, 7],
    )
    assert isinstance(result, Accesses)
    np.testing.assert_array_equal(result.times, [0.0, 10.0, 20.0, 5.0, 7.0])
    np.testing.assert_array_equal(result.updated, [False, True, False, False, False])
    np.testing.assert_array_equal(result.offsets, [0, 3, 3, 5])
    assert result.updated.dtype == np.bool_ and result.offsets.dtype == np.int64


def test_accesses_without_shared_instants_are_the_observations() -> None:
    result = accesses([1.0, 2.0, 0.5], [False, True, False], [0, 2, 3])
    np.testing.assert_array_equal(result.times, [1.0, 2.0, 0.5])
    np.testing.assert_array_equal(result.updated, [False, True, False])
    np.testing.assert_array_equal(result.offsets, [0, 2, 3])
    none = accesses([], [], [0, 0])
    assert none.times.shape == (0,)
    np.testing.assert_array_equal(none.offsets, [0, 0])


def test_update_instants_are_the_updates_or_their_midpoints() -> None:
    timelines = accesses(
        [0.0, 10.0, 10.0, 20.0, 40.0, 5.0, 7.0],
        [False, False, True, False, True, False, True],
        [0, 5, 5, 7],
    )
    when, site = update_instants(timelines)
    np.testing.assert_array_equal(when, [10.0, 40.0, 7.0])
    np.testing.assert_array_equal(site, [0, 0, 2])
    assert site.dtype == np.int64
    when, site = update_instants(timelines, "interpolated")
    np.testing.assert_array_equal(when, [5.0, 30.0, 6.0])
    np.testing.assert_array_equal(site, [0, 0, 2])
    empty = update_instants(accesses([3.0], [False], [0, 1]), "interpolated")
    assert empty[0].shape == empty[1].shape == (0,)


def test_accesses_and_update_instants_reject_bad_input() -> None:
    with pytest.raises(
        ValueError, match=r"updated\[2\] is True for a first observation \(site 1\)"
    ):
        accesses([0.0, 1.0, 5.0], [False, False, True], [0, 2, 3])
    with pytest.raises(ValueError, match=r"within each site; times\[1\] = 0.5 < .*\(site 0\)"):
        accesses([1.0, 0.5], [False, False], [0, 2])
    with pytest.raises(ValueError, match=r"offsets must end at len\(times\) = 2"):
        accesses([1.0, 2.0], [False, False], [0, 1])
    with pytest.raises(ValueError, match=r"same length; got 2 and 1"):
        accesses([1.0, 2.0], [False], [0, 2])
    with pytest.raises(ValueError, match=r"method must be 'observed' or 'interpolated'; got 'x'"):
        update_instants(accesses([1.0], [False], [0, 1]), "x")


# --------------------------------------------------------------------------------------------
# Agreement with the slow reference (tests/reference.py)
# --------------------------------------------------------------------------------------------


def assert_agrees(result: RateEstimate | RateEstimates, i: int | None, slow: SlowEstimate) -> None:
    """One site of ``result`` (``i``; None for a single :class:`RateEstimate`) equals ``slow``."""
    if isinstance(result, RateEstimate):
        got = (result.rate, result.tau, result.observations, result.updates)
    else:
        assert i is not None
        got = (
            float(result.rate[i]),
            float(result.tau[i]),
            int(result.observations[i]),
            int(result.updates[i]),
        )
    assert close(got[0], slow.rate), ("rate", i, got[0], slow.rate)
    assert close(got[1], slow.tau, 1e-15), ("tau", i, got[1], slow.tau)
    assert got[2:] == (slow.observations, slow.updates), ("counts", i, got[2:], slow)


def concatenate(
    sites: list[tuple[list[float], list[bool]]],
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sites' timelines back to back, as :func:`estimate_many` takes them."""
    times = np.array([t for site_times, _ in sites for t in site_times], dtype=np.float64)
    flags = np.array([u for _, site_flags in sites for u in site_flags], dtype=np.bool_)
    offsets = np.cumsum([0, *(len(site_times) for site_times, _ in sites)])
    return times, flags, offsets


def test_the_reference_agrees_with_the_hand_worked_cases() -> None:
    # The reference itself, on cases worked out above, so that agreeing with it means something.
    times, flags = [0.0, 10.0, 20.0, 40.0, 50.0], [False, True, False, True, False]
    observed = slow_estimate(times, flags)
    assert (observed.tau, observed.observations, observed.updates) == (40.0, 5, 2)
    # Changed 10 and 20, unchanged 10 and 10.
    assert observed.rate == pytest.approx(mle_rate([10.0, 20.0], [10.0, 10.0]), rel=1e-12)
    slow = slow_estimate(times, flags, "interpolated")
    assert slow.tau == 30.0
    assert slow.rate == pytest.approx(mle_rate([5.0, 10.0], [15.0, 20.0]), rel=1e-12)
    assert slow_estimate([0.0, 10.0, 30.0], [False, True, True]).rate == pytest.approx(
        math.log(5) * 2 / 30, rel=1e-15
    )
    assert slow_accesses([1.0, 1.0, 2.0, 2.0], [False, True, False, True]) == (
        [1.0, 2.0],
        [False, True],
    )
    assert slow_midpoints([0.0, 10.0, 20.0], [False, True, False]) == [0.0, 5.0, 20.0]
    assert math.isnan(slow_estimate([], []).rate)
    assert math.isnan(slow_estimate([4.0, 4.0], [False, False]).rate)


def test_mle_rate_by_hand_matches_the_reference() -> None:
    assert slow_mle([4.0, 4.0], [6.0, 4.0]) == pytest.approx(math.log(1.8) / 4, rel=1e-12)
    assert slow_mle([10.0], [20.0]) == pytest.approx(math.log(1.5) / 10, rel=1e-12)


intervals = st.lists(st.floats(1e-3, 1e4), max_size=12)


@settings(max_examples=150, deadline=None)
@given(changed=intervals, unchanged=intervals)
def test_mle_rate_matches_a_plain_bisection(changed: list[float], unchanged: list[float]) -> None:
    assert close(mle_rate(changed, unchanged), slow_mle(changed, unchanged))


@st.composite
def timelines(draw: st.DrawFn) -> tuple[list[float], list[bool]]:
    """One site's timeline: repeated instants, bursts and long gaps, random update flags."""
    size = draw(st.integers(0, 14))
    # Gaps of a few ulps make midpoints round onto a neighbour (times reach 1e4 + 28000).
    gap = st.one_of(
        st.just(0.0), st.floats(1e-12, 3e-11), st.floats(1e-4, 1.0), st.floats(1.0, 2000.0)
    )
    gaps = draw(st.lists(gap, min_size=size, max_size=size))
    flags = draw(st.lists(st.booleans(), min_size=size, max_size=size))
    start = draw(st.floats(0.0, 1e4))
    times = list(np.cumsum([start, *gaps])[1:]) if size else []
    if flags:
        flags[0] = False  # the first observation is the baseline; others may share its instant
    return [float(t) for t in times], flags


@settings(max_examples=150, deadline=None)
@given(site=timelines(), method=st.sampled_from(["observed", "interpolated"]))
def test_estimate_agrees_with_the_reference(
    site: tuple[list[float], list[bool]], method: str
) -> None:
    times, flags = site
    assert_agrees(estimate(times, flags, method), None, slow_estimate(times, flags, method))


@settings(max_examples=150, deadline=None)
@given(
    sites=st.lists(timelines(), max_size=8),
    method=st.sampled_from(["observed", "interpolated"]),
    chunk=st.sampled_from([estimators._CHUNK, 1, 5]),  # one chunk, a site each, a few
)
def test_estimate_many_agrees_with_the_reference(
    sites: list[tuple[list[float], list[bool]]], method: str, chunk: int
) -> None:
    times, flags, offsets = concatenate(sites)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(estimators, "_CHUNK", chunk)
        many = estimate_many(times, flags, offsets, method)
    assert many.rate.shape == many.tau.shape == (len(sites),)
    for i, (site_times, site_flags) in enumerate(sites):
        assert_agrees(many, i, slow_estimate(site_times, site_flags, method))


@settings(max_examples=150, deadline=None)
@given(sites=st.lists(timelines(), max_size=8))
def test_accesses_and_update_instants_agree_with_the_reference(
    sites: list[tuple[list[float], list[bool]]],
) -> None:
    times, flags, offsets = concatenate(sites)
    result = accesses(times, flags, offsets)
    observed, observed_site = update_instants(result)
    interpolated, interpolated_site = update_instants(result, "interpolated")
    expected_observed: list[float] = []
    expected_midpoints: list[float] = []
    expected_sites: list[int] = []
    for i, (site_times, site_flags) in enumerate(sites):
        instants, changed = slow_accesses(site_times, site_flags)
        a, b = result.offsets[i], result.offsets[i + 1]
        assert result.times[a:b].tolist() == instants
        assert result.updated[a:b].tolist() == changed
        midpoints = slow_midpoints(instants, changed)
        for k, flag in enumerate(changed):
            if flag:
                expected_observed.append(instants[k])
                expected_midpoints.append(midpoints[k])
                expected_sites.append(i)
    assert result.offsets[-1] == result.times.size == result.updated.size
    assert observed.tolist() == expected_observed
    assert interpolated.tolist() == expected_midpoints
    assert observed_site.tolist() == interpolated_site.tolist() == expected_sites


def random_batch(seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """2,000 seeded random sites: bursts, long gaps, shared instants, any share of updates."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(0, 60, 2000)
    sizes[:3] = [0, 200, 1]  # an empty site, one larger than a chunk, a single observation
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    size = int(offsets[-1])
    gaps = np.where(rng.random(size) < 0.3, rng.exponential(0.2, size), rng.exponential(40.0, size))
    gaps[rng.random(size) < 0.05] = 0.0
    times = np.concatenate([np.cumsum(gaps[a:b]) for a, b in pairwise(offsets)])
    flags = rng.random(size) < rng.uniform(0, 1, size)
    flags[offsets[:-1][sizes > 0]] = False
    return times, flags, offsets


@pytest.fixture(scope="module")
def batch() -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[str, list[SlowEstimate]]]:
    """The random batch and the reference's estimates of it, computed once for the module."""
    times, flags, offsets = random_batch(7)
    slow = {
        method: [
            slow_estimate(times[a:b].tolist(), flags[a:b].tolist(), method)
            for a, b in pairwise(offsets.tolist())
        ]
        for method in METHODS
    }
    return times, flags, offsets, slow


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("chunk", [None, 64])
def test_estimate_many_agrees_with_the_reference_on_a_large_random_batch(
    batch: tuple[np.ndarray, np.ndarray, np.ndarray, dict[str, list[SlowEstimate]]],
    method: str,
    chunk: int | None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    times, flags, offsets, slow = batch
    if chunk is not None:  # many small chunks (the default holds this batch in one)
        monkeypatch.setattr(estimators, "_CHUNK", chunk)
    many = estimate_many(times, flags, offsets, method)
    for i, expected in enumerate(slow[method]):
        assert_agrees(many, i, expected)


@pytest.mark.parametrize("method", METHODS)
def test_estimate_agrees_with_the_reference_on_a_large_random_batch(
    batch: tuple[np.ndarray, np.ndarray, np.ndarray, dict[str, list[SlowEstimate]]], method: str
) -> None:
    times, flags, offsets, slow = batch
    for (a, b), expected in zip(pairwise(offsets.tolist()), slow[method], strict=True):
        assert_agrees(estimate(times[a:b], flags[a:b], method), None, expected)


def test_accesses_agree_with_the_reference_on_a_large_random_batch() -> None:
    times, flags, offsets = random_batch(11)
    result = accesses(times, flags, offsets)
    when, owner = update_instants(result, "interpolated")
    k = 0
    for i, (a, b) in enumerate(pairwise(offsets.tolist())):
        instants, changed = slow_accesses(times[a:b].tolist(), flags[a:b].tolist())
        lo, hi = result.offsets[i], result.offsets[i + 1]
        assert result.times[lo:hi].tolist() == instants, i
        assert result.updated[lo:hi].tolist() == changed, i
        midpoints = [
            m for m, flag in zip(slow_midpoints(instants, changed), changed, strict=True) if flag
        ]
        assert when[k : k + len(midpoints)].tolist() == midpoints, i
        assert (owner[k : k + len(midpoints)] == i).all()
        k += len(midpoints)
    assert k == when.size


EXTREME_SITES = [
    ([0.0, 1e-3, 1e6], [False, False, True]),  # a huge changed interval, a tiny unchanged one
    ([0.0, 1e6, 1e6 + 1e-3], [False, False, True]),  # the other way round
    (list(np.cumsum([0.0, *[100.0] * 50, 1e-4])), [False, *[True] * 50, False]),
    (list(np.cumsum([0.0, *[1e-4] * 50, 1e5])), [False, *[False] * 50, True]),
    ([5.0, 5.0, 5.0, 6.0, 6.0, 9.0], [False, True, True, False, True, False]),
]


@pytest.mark.parametrize("max_iter", [None, 1])  # 1: every site falls back to Brent's method
@pytest.mark.parametrize("method", METHODS)
def test_estimate_many_on_extreme_sites(
    method: str, max_iter: int | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    if max_iter is not None:
        monkeypatch.setattr(estimators, "_SOLVER_MAX_ITER", max_iter)
    sites = [([float(t) for t in times], flags) for times, flags in EXTREME_SITES]
    many = estimate_many(*concatenate(sites), method)
    for i, (site_times, site_flags) in enumerate(sites):
        slow = slow_estimate(site_times, site_flags, method)
        assert_agrees(many, i, slow)
        assert_agrees(estimate(site_times, site_flags, method), None, slow)
    if method == "observed":  # λ = log(1 + t_c / S) / t_c
        assert many.rate[0] == pytest.approx(math.log1p((1e6 - 1e-3) / 1e-3) / (1e6 - 1e-3))


def test_errors_name_the_entry_and_site_across_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(estimators, "_CHUNK", 4)
    times = np.arange(40.0)
    times[33] = 1.0  # site 3 owns [30, 40)
    with pytest.raises(ValueError, match=r"times\[33\] = 1.0 < times\[32\] = 32.0 \(site 3\)"):
        estimate_many(times, np.zeros(40, dtype=bool), np.arange(0, 41, 10))


# --------------------------------------------------------------------------------------------
# A seeded Poisson simulation
# --------------------------------------------------------------------------------------------


def simulate_site(
    rng: np.random.Generator, rate: float, n_obs: int
) -> tuple[np.ndarray, np.ndarray]:
    """Bursty capture times and the updates a crawler would have observed at them."""
    gaps = np.where(
        rng.random(n_obs) < 1 / 3, rng.exponential(0.3, n_obs), rng.exponential(45.0, n_obs)
    )
    times = np.cumsum(gaps)
    span = times[-1]
    events = np.cumsum(rng.exponential(1 / rate, int(span * rate * 3) + 20))
    assert events[-1] > span
    # An update is observed at an access when at least one event fell since the previous one.
    seen = np.searchsorted(events, times, side="right")
    updated = np.zeros(n_obs, dtype=bool)
    updated[1:] = seen[1:] > seen[:-1]
    return times, updated


def test_the_observed_mle_recovers_known_poisson_rates() -> None:
    rng = np.random.default_rng(2024)
    n_sites = 400
    true = np.exp(rng.normal(math.log(1 / 110), 1.0, n_sites))  # median interval 110 days
    sites = [simulate_site(rng, rate, int(rng.integers(30, 51))) for rate in true]
    estimated = np.array([estimate(times, updated).rate for times, updated in sites])
    assert not np.isnan(estimated).any()
    ratio = float(np.median(estimated / true))
    rho = spearmanr(estimated, true).statistic
    assert 0.8 <= ratio <= 1.25, ratio
    assert rho >= 0.8, rho


def test_the_interpolated_estimate_ranks_sites_like_the_truth() -> None:
    # Moving each update back to a midpoint moves time from changed intervals to unchanged
    # ones, so against a true Poisson process this estimate runs low (a median ratio near 0.8
    # here); its ranking of the sites holds.
    rng = np.random.default_rng(2025)
    true = np.exp(rng.normal(math.log(1 / 110), 1.0, 400))
    sites = [simulate_site(rng, rate, int(rng.integers(30, 51))) for rate in true]
    estimated = np.array([estimate(t, u, "interpolated").rate for t, u in sites])
    assert spearmanr(estimated, true).statistic >= 0.8
    assert 0.6 <= float(np.median(estimated / true)) <= 1.0


# --- The exposure that SQL sorts by ---------------------------------------------------------


def test_probability_is_one_minus_exp_of_minus_the_exposure() -> None:
    rng = np.random.default_rng(11)
    rate, tau = rng.uniform(0, 0.3, 200), rng.uniform(0, 400, 200)
    t, e = 380.0, 7.0
    exposure = estimators.change_exposure(rate, tau, t, e)
    assert np.array_equal(exposure, rate * (t + e - tau))
    p = estimators.change_probability(rate, tau, t, e)
    assert np.array_equal(p, -np.expm1(-np.maximum(exposure, 0.0)))


def test_a_tau_after_the_horizon_gives_no_chance_of_change_not_a_negative_one() -> None:
    assert estimators.change_probability(0.1, 50.0, 30.0, 7.0) == 0.0


def test_the_exposure_threshold_inverts_the_probability() -> None:
    for theta in (0.0, 0.1, 0.5, 0.9, 0.999):
        x = estimators.exposure_threshold(theta)
        assert -math.expm1(-x) == pytest.approx(theta, abs=1e-15)
    assert math.isfinite(estimators.exposure_threshold(1.0))
    with pytest.raises(ValueError, match="theta"):
        estimators.exposure_threshold(1.5)


def test_accesses_never_share_the_callers_arrays() -> None:
    times = np.array([0.0, 1.0, 2.0])
    flags = np.array([False, True, False])
    result = estimators.accesses(times, flags, [0, 3])
    times[1] = 99.0
    assert result.times.tolist() == [0.0, 1.0, 2.0]
