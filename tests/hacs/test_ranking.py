"""hacs.ranking: the order and selection of a crawl list (DESIGN rule 8)."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from hacs.estimators import change_probability
from hacs.ranking import crawl_order, crawl_probabilities, crawl_selection


def test_unknown_rates_count_as_zero_probability() -> None:
    p = crawl_probabilities([math.nan, 0.1, 0.0], [0.0, 5.0, 5.0], t=10.0, e=7.0)
    assert p[0] == 0.0
    assert p[1] == pytest.approx(1 - math.exp(-0.1 * 12.0), rel=1e-15)
    assert p[2] == 0.0


def test_probability_is_the_core_g_where_the_rate_is_known() -> None:
    rng = np.random.default_rng(4)
    rates, taus = rng.uniform(0, 0.2, 50), rng.uniform(0, 100, 50)
    expected = change_probability(rates, taus, 120.0, 7.0)
    assert np.array_equal(crawl_probabilities(rates, taus, 120.0, 7.0), expected)


def test_ties_go_to_the_older_tau_then_the_url() -> None:
    p = [0.5, 0.9, 0.5, 0.5]
    tau = [20.0, 1.0, 10.0, 10.0]
    urls = ["http://d/", "http://a/", "http://c/", "http://b/"]
    assert crawl_order(p, tau, urls, t=30.0) == [1, 3, 2, 0]


def test_an_unknown_tau_sorts_as_the_reference_time() -> None:
    assert crawl_order([0.5, 0.5], [math.nan, 29.0], ["http://a/", "http://b/"], t=30.0) == [1, 0]


def test_order_agrees_with_a_plain_sort_on_random_lists() -> None:
    rng = random.Random(8)
    for _ in range(200):
        n = rng.randrange(0, 30)
        p = [rng.choice([0.0, 0.25, 0.5, rng.random()]) for _ in range(n)]
        tau = [rng.choice([1.0, 2.0, rng.uniform(0, 9)]) for _ in range(n)]
        urls = [f"http://s{rng.randrange(5)}.edu/~u{rng.randrange(40)}/" for _ in range(n)]
        expected = sorted(range(n), key=lambda i: (-p[i], tau[i], urls[i]))
        got = crawl_order(p, tau, urls, t=10.0)
        assert [(p[i], tau[i], urls[i]) for i in got] == [(p[i], tau[i], urls[i]) for i in expected]


def test_selection_applies_theta_then_the_budget() -> None:
    p = [0.9, 0.2, 0.7, 0.5]
    order = [0, 2, 3, 1]
    assert crawl_selection(order, p, theta=0.5, budget=None) == [0, 2, 3]
    assert crawl_selection(order, p, theta=0.5, budget=2) == [0, 2]
    assert crawl_selection(order, p, theta=None, budget=3) == [0, 2, 3]
    assert crawl_selection(order, p, theta=None, budget=None) == order


def test_a_site_without_any_copy_is_certain_to_differ_and_nothing_known_is_zero() -> None:
    from hacs.ranking import posterior_probabilities

    p = posterior_probabilities(
        [2.0, 2.0, math.nan], [100.0, 100.0, 100.0], [-math.inf, math.nan, 5.0], t=10.0, e=0.0
    )
    assert p.tolist() == [1.0, 0.0, 0.0]


def test_round_robin_expects_the_changes_of_the_sites_copied_longest_ago() -> None:
    from hacs.ranking import round_robin_expected

    p = [0.1, 0.9, 0.4, 0.3]
    copies = [50.0, 10.0, 20.0, float("nan")]  # the last was never copied: first of all
    urls = ["http://a/", "http://b/", "http://c/", "http://d/"]
    assert round_robin_expected(p, copies, urls, 0) == 0.0
    assert round_robin_expected(p, copies, urls, 1) == pytest.approx(0.3)
    assert round_robin_expected(p, copies, urls, 2) == pytest.approx(0.3 + 0.9)
    assert round_robin_expected(p, copies, urls, 9) == pytest.approx(1.7)
    # Ties in the copy's time go to the URL.
    assert round_robin_expected([0.5, 0.2], [5.0, 5.0], ["http://b/", "http://a/"], 1) == 0.2
    with pytest.raises(ValueError, match="non-negative"):
        round_robin_expected(p, copies, urls, -1)
