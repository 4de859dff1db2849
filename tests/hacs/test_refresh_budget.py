"""hacs.refresh_budget: the archive's capture rate and the choice of tonight's CDX queries."""

from __future__ import annotations

import itertools
import math
from datetime import date

import numpy as np
import pytest

from hacs.formats.queries import CdxQuery
from hacs.refresh_budget import (
    RefreshChoice,
    RefreshPolicy,
    SiteState,
    audit_draw,
    audited_groups,
    capture_rate,
    choose_queries,
    deadline,
    default_budget,
    expected_new,
    site_price,
    site_state,
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

POLICY = RefreshPolicy(max_age_days=30, due_share=0.5, list_gain=10)


def test_a_check_is_worth_its_captures_times_their_wait_more_on_the_list() -> None:
    # 0.2 captures a day for 10 days: 2 expected captures, each unknown 5 days on average.
    quiet = state(1, 0.2, NOW - 10)
    assert site_price(quiet, NOW, POLICY) == pytest.approx(2 * 5)
    # On tomorrow's list at p = 0.6: those capture-days count 1 + 10 × 0.6 times.
    listed = SiteState(1, 0.2, NOW - 10, stake=0.6)
    assert site_price(listed, NOW, POLICY) == pytest.approx(2 * 5 * 7)
    # Never checked: as if checked max_age_days ago.
    assert site_price(state(1, 0.2, None), NOW, POLICY) == pytest.approx(6 * 15)


def test_past_their_deadline_sites_are_paid_first_from_the_due_share_oldest_first() -> None:
    queries = [query("a", 1), query("b", 2, 3), query("c", 4), query("d", 5)]
    sites = {
        1: state(1, 5.0, NOW - 1),  # the most valuable, not due
        2: state(2, 0.0, NOW - 2),
        3: state(3, 0.0, NOW - 40),  # makes b due, 40 days
        4: state(4, 0.0, None),  # never checked: due, the most overdue
        5: state(5, 0.1, NOW - 30),  # due exactly at the max age
    }
    choice = choose_queries(queries, sites, now=NOW, budget=6, policy=POLICY)
    # The due share (3 of 6) pays c, b, d, most overdue first; a goes by worth.
    assert [q.key for q in choice.queries] == ["c", "b", "d", "a"]
    assert choice.due_requests == 3 and choice.requests == 4
    assert (choice.due_sites, choice.due_left, choice.overdue_left) == (3, 0, 0)
    assert choice.max_age_kept and choice.left_out == {}
    assert choice.checked_sites == (4, 2, 3, 5, 1)
    # Expected captures: a's 5; c never checked counts as 30 days at rate 0; d's 3.
    assert choice.expected_total == pytest.approx(5.0 + 3.0)
    assert choice.expected_covered == pytest.approx(8.0)


def test_the_due_share_never_takes_the_whole_budget_and_host_queries_keep_theirs() -> None:
    # A monthly wave: 40 lone seeds all past the max age, and 8 host queries of 20 seeds
    # checked yesterday, worth less a request than any of the lone seeds.
    lone = [query(f"lone{i:02d}", i) for i in range(40)]
    groups = [query(f"host{g}", *range(100 + 20 * g, 120 + 20 * g)) for g in range(8)]
    sites = {i: state(i, 0.05, NOW - 31) for i in range(40)}
    sites.update({i: state(i, 0.1, NOW - 1) for i in range(100, 260)})
    assert site_price(sites[100], NOW, RefreshPolicy()) * 20 < site_price(
        sites[0], NOW, RefreshPolicy()
    )
    choice = choose_queries([*lone, *groups], sites, now=NOW, budget=10, policy=RefreshPolicy())
    assert choice.due_requests == math.ceil(0.35 * 10) == 4
    assert [q.key for q in choice.queries[4:]] == [f"host{g}" for g in range(6)]
    assert choice.overdue_left == 36 and not choice.max_age_kept
    # What the host queries leave goes to the due ones: here, with 2 host queries.
    few = choose_queries([*lone, *groups[:2]], sites, now=NOW, budget=10, policy=RefreshPolicy())
    assert few.requests == 10 and few.due_requests == 8 and few.overdue_left == 32
    # With a budget of 2 the due share is 1 request, never both.
    small = choose_queries([*lone, *groups], sites, now=NOW, budget=2, policy=RefreshPolicy())
    assert small.due_requests == 1 and small.queries[1] == groups[0]


def test_a_lone_seed_pays_its_one_request_alone() -> None:
    # Ten seeds of one host in one query, against ten lone seeds at the same rate.
    group = query("host", *range(10))
    lone = [query(f"lone{i}", 10 + i) for i in range(10)]
    sites = {i: state(i, 0.1, NOW - 5) for i in range(20)}
    choice = choose_queries([group, *lone], sites, now=NOW, budget=3, policy=POLICY)
    assert choice.queries[0] == group  # ten seeds for one request
    assert len(choice.queries) == 3
    # Priced honestly: a group that costs ten requests is worth no more than the lone seeds.
    priced = choose_queries(
        [group, *lone], sites, now=NOW, budget=3, policy=POLICY, cost={"host": 10}
    )
    assert group not in priced.queries and priced.requests == 3


def test_a_first_import_spreads_the_first_deadlines_over_the_second_half_of_the_window() -> None:
    policy = RefreshPolicy(max_age_days=30, spread_from=0.5)
    imported = [SiteState(i, 0.1, NOW, first_checked=NOW) for i in range(3000)]
    ends = np.array([deadline(site, policy) - NOW for site in imported])
    assert ends.min() >= 15 and ends.max() < 30
    # About uniform: each of the 15 days holds about 200 of them (a binomial, ± 5 sd).
    days = np.histogram(ends, bins=15, range=(15, 30))[0]
    assert np.all(np.abs(days - 200) < 5 * math.sqrt(200))
    # The same site always falls due on the same day; a refresh since: the max age.
    assert deadline(imported[7], policy) == deadline(imported[7], policy)
    refreshed = SiteState(7, 0.1, NOW + 3, first_checked=NOW)
    assert deadline(refreshed, policy) == NOW + 33
    # Checks from before first checks were kept: the max age.
    assert deadline(SiteState(7, 0.1, NOW), policy) == NOW + 30
    assert deadline(SiteState(7, 0.1, None), policy) == -math.inf


def test_a_seed_without_captures_is_asked_again_a_week_after_its_import_then_monthly() -> None:
    policy = RefreshPolicy(max_age_days=30, spread_from=1.0)  # no spread: exact days

    def next_ask(checked: float, first: float | None = 0.0, **kw: object) -> float:
        rule = RefreshPolicy(max_age_days=30, spread_from=1.0, **kw)  # type: ignore[arg-type]
        state = SiteState(1, 0.0, checked, first, captured=False)
        return deadline(state, rule) - checked

    assert next_ask(0.0) == 7  # the first import: a week
    assert next_ask(7.0) == 28  # then every four weeks
    assert next_ask(8.5) == 28
    assert next_ask(400.0) == 28
    assert next_ask(5.0) == 7  # asked early (by value): still in its first week
    assert next_ask(50.0, None) == 28  # first ask unknown: long ago
    # A longer back-off: the asks fall at the intervals' running sums (7, 21, then monthly).
    assert [next_ask(t, unarchived_intervals=(7.0, 14.0, 30.0)) for t in (0, 7, 8.5, 21)] == [
        7,
        14,
        14,
        30,
    ]
    # Never beyond the max age.
    weekly = RefreshPolicy(max_age_days=5, spread_from=1.0)
    assert deadline(SiteState(1, 0.0, 0.0, 0.0, captured=False), weekly) == 5
    assert deadline(SiteState(1, 0.0, 0.0, 0.0, captured=False), policy) == 7
    # Spread like the others after the first import.
    spread = [
        deadline(SiteState(i, 0.0, 0.0, 0.0, captured=False), RefreshPolicy()) for i in range(500)
    ]
    assert 3.5 <= min(spread) and max(spread) < 7


def test_seeds_without_captures_wait_for_the_due_share_and_count_apart() -> None:
    queries = [query("u1", 1), query("u2", 2), query("a", 3)]
    sites = {
        1: SiteState(1, 0.0, NOW - 10, NOW - 10, captured=False),  # a week passed
        2: SiteState(2, 0.0, NOW - 3, NOW - 3, captured=False),  # not yet
        3: state(3, 1.0, NOW - 2),
    }
    choice = choose_queries(queries, sites, now=NOW, budget=2, policy=POLICY)
    assert [q.key for q in choice.queries] == ["u1", "a"]
    assert (choice.unarchived_sites, choice.unarchived_asked) == (2, 1)
    assert (choice.due_sites, choice.overdue_sites) == (1, 0)


def test_the_others_go_by_worth_per_request_and_a_query_that_does_not_fit_is_skipped() -> None:
    queries = [query("a", 1), query("b", 2), query("c", 3), query("d", 4)]
    # Worth: rate × 10 days × 5 days: a 50, b 45, c 5, d 5; a costs 5 pages.
    rates = {1: 1.0, 2: 0.9, 3: 0.1, 4: 0.1}
    sites = {i: state(i, r, NOW - 10) for i, r in rates.items()}
    choice = choose_queries(queries, sites, now=NOW, budget=3, policy=POLICY, cost={"a": 5, "c": 1})
    # b (45 a request), then a (10 a request) does not fit, then c and d (5 each; c before d).
    assert [q.key for q in choice.queries] == ["b", "c", "d"]
    assert choice.requests == 3 and choice.left_out == {1: "budget"}


def test_a_zero_budget_sends_nothing() -> None:
    choice = choose_queries([query("a", 1)], {1: state(1, 1.0, None)}, now=NOW, budget=0)
    assert choice.queries == () and choice.requests == 0 and choice.due_left == 1
    assert choice.overdue_left == 1


def test_choose_queries_rejects_bad_input_naming_it() -> None:
    sites = {1: state(1, 1.0, NOW - 1)}
    with pytest.raises(ValueError, match="site 2 of query 'b' has no state"):
        choose_queries([query("b", 2)], sites, now=NOW, budget=1)
    with pytest.raises(ValueError, match="site 1 is in two queries"):
        choose_queries([query("a", 1), query("b", 1)], sites, now=NOW, budget=1)
    with pytest.raises(ValueError, match="cost of query 'a'"):
        choose_queries([query("a", 1)], sites, now=NOW, budget=1, cost={"a": 0})
    with pytest.raises(ValueError, match="budget"):
        choose_queries([query("a", 1)], sites, now=NOW, budget=-1)
    with pytest.raises(ValueError, match="after now"):
        choose_queries([query("a", 1)], sites, now=NOW - 2, budget=1)
    bad = {
        "stake": SiteState(1, 1.0, NOW - 1, stake=1.5),
        "rate": SiteState(1, math.nan, NOW - 1),
        "first checked": SiteState(1, 1.0, NOW - 5, first_checked=NOW - 1),
    }
    for words, site in bad.items():
        with pytest.raises(ValueError, match=f"site 1.*{words}"):
            choose_queries([query("a", 1)], {1: site}, now=NOW, budget=1)
    with pytest.raises(ValueError, match="due_share"):
        RefreshPolicy(due_share=0)
    with pytest.raises(ValueError, match="unarchived_intervals"):
        RefreshPolicy(unarchived_intervals=())


def random_instance(
    rng: np.random.Generator, n_queries: int, *, unit: bool
) -> tuple[list[CdxQuery], dict[int, SiteState], dict[str, int]]:
    queries, sites, costs = [], {}, {}
    site_id = 0
    for q in range(n_queries):
        members = []
        for _ in range(int(rng.integers(1, 4))):
            checked = None if rng.random() < 0.05 else NOW - float(rng.uniform(0, 45))
            stake = float(rng.choice([0.0, 0.0, 0.3, 0.9]))
            # Round rates so that ties in worth per request happen.
            rate = round(float(rng.exponential(0.1)), 2)
            sites[site_id] = SiteState(site_id, rate, checked, stake=stake)
            members.append(site_id)
            site_id += 1
        key = f"q{q:02d}"
        queries.append(query(key, *members))
        costs[key] = 1 if unit else int(rng.integers(1, 5))
    order = rng.permutation(n_queries)
    return [queries[i] for i in order], sites, costs


def worth(q: CdxQuery, sites: dict[int, SiteState]) -> float:
    """An independent reading of the worth: Σ rate × age² / 2 × (1 + gain × stake)."""
    total = 0.0
    for site in q.site_ids:
        s = sites[site]
        age = POLICY.max_age_days if s.checked is None else NOW - s.checked
        total += s.rate * age * age / 2 * (1 + POLICY.list_gain * s.stake)
    return total


def is_due(q: CdxQuery, sites: dict[int, SiteState]) -> bool:
    return any(
        sites[s].checked is None or NOW - sites[s].checked >= POLICY.max_age_days  # type: ignore[operator]
        for s in q.site_ids
    )


def most_overdue_first(queries: list[CdxQuery], sites: dict[int, SiteState]) -> list[CdxQuery]:
    """The due queries, most overdue first. (No first check kept: a site's deadline is the max
    age after its last check.)"""
    return sorted(
        (q for q in queries if is_due(q, sites)),
        key=lambda q: (
            -max(
                math.inf if sites[s].checked is None else NOW - sites[s].checked  # type: ignore[operator]
                for s in q.site_ids
            ),
            q.key,
        ),
    )


def best_subset_worth(
    others: list[CdxQuery], sites: dict[int, SiteState], costs: dict[str, int], room: int
) -> float:
    """The highest worth of any subset of ``others`` whose cost fits ``room``, by brute force."""
    best = 0.0
    for r in range(len(others) + 1):
        for subset in itertools.combinations(others, r):
            if sum(costs[q.key] for q in subset) <= room:
                best = max(best, sum(worth(q, sites) for q in subset))
    return best


@pytest.mark.parametrize("seed", range(40))
def test_the_greedy_choice_against_every_subset(seed: int) -> None:
    rng = np.random.default_rng(seed)
    unit = seed % 2 == 0
    queries, sites, costs = random_instance(rng, int(rng.integers(3, 10)), unit=unit)
    budget = int(rng.integers(0, 12))
    choice = choose_queries(queries, sites, now=NOW, budget=budget, policy=POLICY, cost=costs)
    chosen = set(choice.queries)
    spent = sum(costs[q.key] for q in chosen)
    assert choice.requests == spent <= budget
    left = budget - spent
    due = most_overdue_first(queries, sites)
    share = min(math.ceil(POLICY.due_share * budget), max(1, budget - 1)) if budget else 0
    # (a) The due share went to due queries, most overdue first, each skipped only when it
    # did not fit what was left of the share.
    paid, room = [], share
    for q in due:
        if costs[q.key] <= room:
            paid.append(q)
            room -= costs[q.key]
    assert list(choice.queries[: len(paid)]) == paid
    # Nothing left out would fit the leftover budget.
    rest = [q for q in queries if q not in chosen]
    assert all(costs[q.key] > left for q in rest)
    assert choice.overdue_left == sum(
        sum(
            1
            for s in q.site_ids
            if sites[s].checked is None or NOW - sites[s].checked >= POLICY.max_age_days
        )  # type: ignore[operator]
        for q in rest
    )
    assert choice.left_out == {s: "budget" for q in rest for s in q.site_ids}
    # (b) The queries not due against every subset within what the share left: with unit
    # costs the highest worth is the best subset; otherwise the fractional bound holds.
    others = [q for q in queries if q not in due]
    best = best_subset_worth(others, sites, costs, budget - sum(costs[q.key] for q in paid))
    greedy = sum(worth(q, sites) for q in others if q in chosen)
    if unit:
        assert greedy == pytest.approx(best)
    else:
        skipped = [worth(q, sites) for q in others if q not in chosen]
        assert best <= greedy + max(skipped, default=0.0) + 1e-9


def test_the_choice_is_deterministic_whatever_the_input_order() -> None:
    rng = np.random.default_rng(7)
    queries, sites, costs = random_instance(rng, 30, unit=False)
    first = choose_queries(queries, sites, now=NOW, budget=20, policy=POLICY, cost=costs)
    again = choose_queries(queries, sites, now=NOW, budget=20, policy=POLICY, cost=costs)
    shuffled = [queries[i] for i in rng.permutation(len(queries))]
    other = choose_queries(shuffled, sites, now=NOW, budget=20, policy=POLICY, cost=costs)
    assert isinstance(first, RefreshChoice)
    assert first == again
    assert first.queries == other.queries and first.left_out == other.left_out


def test_ties_in_worth_go_by_key() -> None:
    queries = [query("b", 1), query("a", 2), query("c", 3)]
    sites = {i: state(i, 0.5, NOW - 4) for i in (1, 2, 3)}
    choice = choose_queries(queries, sites, now=NOW, budget=2, policy=POLICY)
    assert [q.key for q in choice.queries] == ["a", "b"]


def test_a_site_state_reads_the_last_years_captures_and_clips_checks_to_now() -> None:
    captures = [NOW - 400, NOW - 100, NOW - 50, NOW - 10]
    built = site_state(3, captures, now=NOW, checked=NOW + 2, first_checked=NOW + 1, stake=0.4)
    # The capture of 400 days ago is not read: the exposure opens at the first of the year.
    assert built.rate == pytest.approx((2 + 1) / (100 + 365))
    assert (built.checked, built.first_checked) == (NOW, NOW)
    assert (built.stake, built.captured) == (0.4, True)
    # Told it holds older captures, the archive watched it the whole year: 3 in 365 days.
    older = site_state(3, captures[1:], now=NOW, checked=NOW, older=True)
    assert older.rate == pytest.approx((3 + 1) / (365 + 365))
    assert older.rate == capture_rate(captures, NOW)


def test_the_audit_samples_a_share_of_the_groups_the_same_each_run() -> None:
    day = date(2024, 6, 1)
    queries = [query(f"g{i:04d}", 2 * i, 2 * i + 1) for i in range(4000)]
    sampled = audited_groups(queries, day, 0.05)
    assert sampled == audited_groups(list(reversed(queries)), day, 0.05)
    # About 5 %: 200 of 4,000, within 5 binomial standard deviations.
    assert abs(len(sampled) - 200) < 5 * math.sqrt(4000 * 0.05 * 0.95)
    assert sampled != audited_groups(queries, date(2024, 6, 2), 0.05)  # another night, others
    assert audited_groups([query("alone", 1)], day, 1.0) == set()  # a seed alone: never
    assert all(0 <= audit_draw(day, q.key) < 1 for q in queries[:50])


def test_the_default_budget_fills_forty_minutes_at_the_archives_rate() -> None:
    assert default_budget(24) == 960
    assert default_budget(24, 60) == 1440
    assert default_budget(0.7, 30) == 21  # not 20: 0.7 × 30 is 20.999999999999996
    assert default_budget(0.5, 3) == 1
    with pytest.raises(ValueError, match="cdx_per_minute"):
        default_budget(0)
