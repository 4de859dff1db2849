"""hacs.refresh_budget: the archive's capture rate and the choice of tonight's CDX queries."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from hacs.formats.queries import CdxQuery
from hacs.refresh_budget import (
    RefreshChoice,
    SiteState,
    capture_rate,
    choose_queries,
    default_budget,
    expected_new,
)

NOW = 1000.0


def query(key: str, *site_ids: int) -> CdxQuery:
    return CdxQuery(f"example.edu/{key}", "prefix", site_ids, "20180101", key)


def state(site_id: int, rate: float, checked: float | None) -> SiteState:
    return SiteState(site_id=site_id, rate=rate, checked=checked)


# capture_rate ------------------------------------------------------------------------------


@pytest.mark.parametrize("n_expected", [20, 200, 2000])
def test_the_rate_without_prior_is_the_mle_n_over_t_on_poisson_captures(n_expected: int) -> None:
    rng = np.random.default_rng(n_expected)
    window = 365.0
    true_rate = n_expected / window
    errors = []
    for _ in range(200):
        # A site captured since long before the window: T is the whole window.
        times = np.cumsum(rng.exponential(1 / true_rate, size=4 * n_expected)) + NOW - 2 * window
        n = int(((times > NOW - window) & (times <= NOW)).sum())
        rate = capture_rate(times, NOW, window_days=window, prior_captures=0, prior_days=0)
        assert rate == pytest.approx(n / window, rel=1e-12)
        errors.append(rate / true_rate - 1)
    # The relative error's spread shrinks as 1/√n: within 3 standard errors on average.
    assert abs(np.mean(errors)) < 3 / math.sqrt(n_expected * 200)
    assert np.std(errors) == pytest.approx(1 / math.sqrt(n_expected), rel=0.25)


def test_the_exposure_starts_at_a_first_capture_inside_the_window() -> None:
    # First captured 30 days ago, then 3 more: T = 30, and the first capture opens it.
    times = [NOW - 30, NOW - 20, NOW - 10, NOW - 1]
    assert capture_rate(times, NOW, prior_captures=0, prior_days=0) == pytest.approx(3 / 30)
    assert capture_rate(times, NOW) == pytest.approx((3 + 1) / (30 + 365))
    # Captured long before the window: every capture of the window counts, over the window.
    older = [NOW - 800, *times]
    assert capture_rate(older, NOW, prior_captures=0, prior_days=0) == pytest.approx(4 / 365)


def test_the_prior_gives_a_site_without_captures_a_small_positive_rate() -> None:
    quiet = [NOW - 900, NOW - 700]  # captured, but not in the last year
    assert capture_rate(quiet, NOW, prior_captures=0, prior_days=0) == 0.0
    assert capture_rate(quiet, NOW) == pytest.approx(1 / (365 + 365))
    assert capture_rate(quiet, NOW, prior_captures=2, prior_days=100) == pytest.approx(2 / 465)
    # Never captured: the prior's mean; without a prior, 0.
    assert capture_rate([], NOW) == pytest.approx(1 / 365)
    assert capture_rate([], NOW, prior_captures=0, prior_days=0) == 0.0
    # The prior weighs less as captures accumulate.
    busy = NOW - np.arange(1, 366, dtype=float)[::-1] + 0.5
    assert capture_rate(busy, NOW) == pytest.approx((364 + 1) / (364.5 + 365))


def test_captures_after_now_are_not_counted_and_times_are_taken_as_given() -> None:
    times = [NOW - 400, NOW - 5, NOW - 5, NOW + 3]
    assert capture_rate(times, NOW, prior_captures=0, prior_days=0) == pytest.approx(2 / 365)


def test_capture_rate_rejects_bad_arguments() -> None:
    with pytest.raises(ValueError, match="window_days"):
        capture_rate([1.0], NOW, window_days=0)
    with pytest.raises(ValueError, match="prior"):
        capture_rate([1.0], NOW, prior_captures=-1)
    with pytest.raises(ValueError, match="now_days"):
        capture_rate([1.0], math.nan)


def test_expected_new_is_rate_times_days_since_the_check() -> None:
    assert expected_new(0.1, NOW - 30, NOW) == pytest.approx(3.0)
    assert expected_new(0.0, NOW - 30, NOW) == 0.0
    with pytest.raises(ValueError, match="after now"):
        expected_new(0.1, NOW + 1, NOW)
    with pytest.raises(ValueError, match="rate"):
        expected_new(-0.1, NOW - 1, NOW)


# choose_queries ----------------------------------------------------------------------------


def test_due_queries_come_first_most_overdue_first() -> None:
    queries = [query("a", 1), query("b", 2, 3), query("c", 4), query("d", 5)]
    sites = {
        1: state(1, 5.0, NOW - 1),  # the most valuable, not due
        2: state(2, 0.0, NOW - 2),
        3: state(3, 0.0, NOW - 40),  # makes b due, 40 days
        4: state(4, 0.0, None),  # never checked: due, the most overdue
        5: state(5, 0.1, NOW - 30),  # due exactly at the max age
    }
    choice = choose_queries(queries, sites, now=NOW, budget=3, max_age_days=30)
    assert [q.key for q in choice.queries] == ["c", "b", "d"]
    assert choice.requests == 3 and choice.due_sites == 3 and choice.due_left == 0
    assert choice.max_age_kept and choice.left_out == {1: "budget"}
    assert choice.checked_sites == (4, 2, 3, 5)
    # Value: a's 5; b's 0; c never checked counts as 30 days at rate 0; d's 3.
    assert choice.expected_total == pytest.approx(5.0 + 3.0)
    assert choice.expected_covered == pytest.approx(3.0)


def test_when_the_due_queries_exceed_the_budget_the_most_overdue_go_and_the_rest_wait() -> None:
    queries = [query(k, i) for i, k in enumerate("abcde")]
    ages = [31, 90, 45, 60, 10]
    sites = {i: state(i, 1.0, NOW - age) for i, age in enumerate(ages)}
    choice = choose_queries(queries, sites, now=NOW, budget=2, max_age_days=30)
    assert [q.key for q in choice.queries] == ["b", "d"]
    assert (choice.due_sites, choice.due_left) == (4, 2)
    assert not choice.max_age_kept
    assert choice.left_out == {0: "budget", 2: "budget", 4: "budget"}


def test_the_others_go_by_value_per_request_and_a_query_that_does_not_fit_is_skipped() -> None:
    queries = [query("a", 1), query("b", 2), query("c", 3), query("d", 4)]
    # Expected new captures: a 10, b 9, c 1, d 1 (rate × 10 days); a costs 5 pages.
    rates = {1: 1.0, 2: 0.9, 3: 0.1, 4: 0.1}
    sites = {i: state(i, r, NOW - 10) for i, r in rates.items()}
    choice = choose_queries(
        queries, sites, now=NOW, budget=3, max_age_days=30, cost={"a": 5, "c": 1}
    )
    # b (9 a request), then a (2 a request) does not fit, then c and d (1 each; c before d).
    assert [q.key for q in choice.queries] == ["b", "c", "d"]
    assert choice.requests == 3 and choice.left_out == {1: "budget"}


def test_a_zero_budget_sends_nothing() -> None:
    choice = choose_queries(
        [query("a", 1)], {1: state(1, 1.0, None)}, now=NOW, budget=0, max_age_days=30
    )
    assert choice.queries == () and choice.requests == 0 and choice.due_left == 1


def test_choose_queries_rejects_bad_input_naming_it() -> None:
    sites = {1: state(1, 1.0, NOW - 1)}
    with pytest.raises(ValueError, match="site 2 of query 'b' has no state"):
        choose_queries([query("b", 2)], sites, now=NOW, budget=1, max_age_days=30)
    with pytest.raises(ValueError, match="site 1 is in two queries"):
        choose_queries([query("a", 1), query("b", 1)], sites, now=NOW, budget=1, max_age_days=30)
    with pytest.raises(ValueError, match="cost of query 'a'"):
        choose_queries([query("a", 1)], sites, now=NOW, budget=1, max_age_days=30, cost={"a": 0})
    with pytest.raises(ValueError, match="budget"):
        choose_queries([query("a", 1)], sites, now=NOW, budget=-1, max_age_days=30)
    with pytest.raises(ValueError, match="after now"):
        choose_queries([query("a", 1)], sites, now=NOW - 2, budget=1, max_age_days=30)


def random_instance(
    rng: np.random.Generator, n_queries: int, *, unit: bool
) -> tuple[list[CdxQuery], dict[int, SiteState], dict[str, int]]:
    queries, sites, costs = [], {}, {}
    site_id = 0
    for q in range(n_queries):
        members = []
        for _ in range(int(rng.integers(1, 4))):
            checked = None if rng.random() < 0.05 else NOW - float(rng.uniform(0, 45))
            # Round rates so that ties in value per request happen.
            sites[site_id] = state(site_id, round(float(rng.exponential(0.1)), 2), checked)
            members.append(site_id)
            site_id += 1
        key = f"q{q:02d}"
        queries.append(query(key, *members))
        costs[key] = 1 if unit else int(rng.integers(1, 5))
    order = rng.permutation(n_queries)
    return [queries[i] for i in order], sites, costs


def value(q: CdxQuery, sites: dict[int, SiteState], max_age: float) -> float:
    total = 0.0
    for site in q.site_ids:
        checked = sites[site].checked
        total += sites[site].rate * (NOW - (NOW - max_age if checked is None else checked))
    return total


def is_due(q: CdxQuery, sites: dict[int, SiteState], max_age: float) -> bool:
    return any(
        sites[s].checked is None or NOW - sites[s].checked >= max_age  # type: ignore[operator]
        for s in q.site_ids
    )


@pytest.mark.parametrize("seed", range(40))
def test_the_greedy_choice_against_every_subset(seed: int) -> None:
    rng = np.random.default_rng(seed)
    unit = seed % 2 == 0
    queries, sites, costs = random_instance(rng, int(rng.integers(3, 10)), unit=unit)
    budget, max_age = int(rng.integers(0, 12)), 30.0
    choice = choose_queries(
        queries, sites, now=NOW, budget=budget, max_age_days=max_age, cost=costs
    )
    chosen = set(choice.queries)
    spent = sum(costs[q.key] for q in chosen)
    assert choice.requests == spent <= budget
    left = budget - spent
    due = [q for q in queries if is_due(q, sites, max_age)]
    # Due first: a due query waits only when it did not fit what the due queries before it
    # left, which is at least the leftover plus every other query chosen after them.
    spent_on_others = sum(costs[q.key] for q in chosen if q not in due)
    for q in due:
        if q not in chosen:
            assert costs[q.key] > left + spent_on_others
    assert choice.due_left == sum(
        sum(1 for s in q.site_ids if sites[s].checked is None
            or NOW - sites[s].checked >= max_age)  # type: ignore[operator]
        for q in due if q not in chosen
    )  # fmt: skip
    # The others: no query left out would fit the leftover budget, and none left out has a
    # higher value per request than the lowest chosen one unless it did not fit when its turn came.
    others = [q for q in queries if q not in due]
    chosen_others = [q for q in others if q in chosen]
    for q in others:
        if q not in chosen:
            assert costs[q.key] > left
    if chosen_others:
        lowest = min(value(q, sites, max_age) / costs[q.key] for q in chosen_others)
        for q in others:
            if q not in chosen and value(q, sites, max_age) / costs[q.key] > lowest:
                assert costs[q.key] > left
    # Against every subset of the others within what the due queries left.
    room = budget - sum(costs[q.key] for q in due if q in chosen)
    best = 0.0
    for r in range(len(others) + 1):
        for subset in itertools.combinations(others, r):
            if sum(costs[q.key] for q in subset) <= room:
                best = max(best, sum(value(q, sites, max_age) for q in subset))
    greedy = sum(value(q, sites, max_age) for q in chosen_others)
    if unit:  # equal costs: the highest values are the best subset
        assert greedy == pytest.approx(best)
    else:  # the fractional bound: the best is at most greedy plus one skipped query's value
        skipped = [value(q, sites, max_age) for q in others if q not in chosen]
        assert best <= greedy + max(skipped, default=0.0) + 1e-9
    assert choice.left_out == {s: "budget" for q in queries if q not in chosen for s in q.site_ids}


def test_the_choice_is_deterministic_whatever_the_input_order() -> None:
    rng = np.random.default_rng(7)
    queries, sites, costs = random_instance(rng, 30, unit=False)
    first = choose_queries(queries, sites, now=NOW, budget=20, max_age_days=30, cost=costs)
    again = choose_queries(queries, sites, now=NOW, budget=20, max_age_days=30, cost=costs)
    shuffled = [queries[i] for i in rng.permutation(len(queries))]
    other = choose_queries(shuffled, sites, now=NOW, budget=20, max_age_days=30, cost=costs)
    assert isinstance(first, RefreshChoice)
    assert first == again
    assert first.queries == other.queries and first.left_out == other.left_out


def test_ties_in_value_go_by_key() -> None:
    queries = [query("b", 1), query("a", 2), query("c", 3)]
    sites = {i: state(i, 0.5, NOW - 4) for i in (1, 2, 3)}
    choice = choose_queries(queries, sites, now=NOW, budget=2, max_age_days=30)
    assert [q.key for q in choice.queries] == ["a", "b"]


def test_the_default_budget_fills_forty_minutes_at_the_archives_rate() -> None:
    assert default_budget(24) == 960
    assert default_budget(24, 60) == 1440
    assert default_budget(0.7, 30) == 21  # not 20: 0.7 × 30 is 20.999999999999996
    assert default_budget(0.5, 3) == 1
    with pytest.raises(ValueError, match="cdx_per_minute"):
        default_budget(0)
