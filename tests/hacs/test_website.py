"""hacs.website: pages grouped, κ, each page's link evidence, the sum over pages, a simulation."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import spearmanr

from hacs.bayes import GammaPrior, fit_prior, posterior
from hacs.estimators import estimate_many
from hacs.updates import timeline_order
from hacs.website import (
    MIN_SHORT_UPDATES,
    SHORT_INTERVAL_DAYS,
    fit_page_prior,
    links_per_update,
    page_link_evidence,
    page_links,
    site_sum,
    website_posterior,
)

observation = st.tuples(
    st.integers(0, 3),  # site
    st.integers(0, 2),  # page within the site
    st.floats(0, 500, allow_nan=False),  # time
    st.integers(0, 6),  # new links
)


def slow_pages(rows: list[tuple[int, int, float, int]]) -> dict[int, list[tuple[float, int]]]:
    """Each page's (time, new links) in time order, the first one's links zeroed."""
    found: dict[int, list[tuple[float, int]]] = {}
    for site, page, time, links in rows:
        found.setdefault(site * 10 + page, []).append((time, links))
    for copies in found.values():
        copies.sort(key=lambda copy: copy[0])
        copies[0] = (copies[0][0], 0)
    return found


@settings(max_examples=150, deadline=None)
@given(st.lists(observation, max_size=40))
def test_pages_and_their_evidence_equal_a_loop_over_each_page(
    rows: list[tuple[int, int, float, int]],
) -> None:
    site = [r[0] for r in rows]
    page = [r[0] * 10 + r[1] for r in rows]
    grouped = page_links(site, page, [r[2] for r in rows], [r[3] for r in rows])
    expected = slow_pages(rows)
    assert grouped.offsets.size - 1 == len(expected)
    updates, exposure = page_link_evidence(grouped, kappa=2.0)
    for p in range(grouped.offsets.size - 1):
        copies = slice(grouped.offsets[p], grouped.offsets[p + 1])
        key = next(k for k, v in expected.items()
                   if len(v) == copies.stop - copies.start
                   and k // 10 == grouped.page_site[p]
                   and [c[0] for c in v] == grouped.time[copies].tolist())  # fmt: skip
        times = [c[0] for c in expected.pop(key)]
        links = slow_pages([r for r in rows if r[0] * 10 + r[1] == key])[key]
        assert grouped.new_links[copies].tolist() == [c[1] for c in links]
        assert updates[p] == pytest.approx(sum(c[1] for c in links) / 2.0)
        assert exposure[p] == pytest.approx(times[-1] - times[0])
        gaps = grouped.gap[copies]
        assert math.isnan(gaps[0])
        assert gaps[1:].tolist() == pytest.approx(np.diff(times).tolist())
    assert not expected


def test_kappa_reads_only_updates_seen_soon_after_the_previous_copy() -> None:
    n = MIN_SHORT_UPDATES
    # One page: a copy every 2 days, each adding 3 links; then one every 30 days adding 10.
    times = np.r_[np.arange(n + 1) * 2.0, 2.0 * n + 30.0 * np.arange(1, 6)]
    links = np.r_[0, np.full(n, 3), np.full(5, 10)]
    grouped = page_links(np.zeros(times.size), np.zeros(times.size), times, links)
    assert SHORT_INTERVAL_DAYS < 30
    assert links_per_update(grouped) == 3.0
    # Too few short updates to calibrate: one link per update.
    few = page_links(np.zeros(6), np.zeros(6), times[-6:], links[-6:])
    assert links_per_update(few) == 1.0


def test_a_page_with_one_copy_has_no_evidence_and_a_bad_kappa_is_refused() -> None:
    grouped = page_links([0, 1, 1], [0, 1, 1], [5.0, 1.0, 9.0], [7, 4, 2])
    updates, exposure = page_link_evidence(grouped, kappa=1.0)
    assert updates.tolist() == [0.0, 2.0] and exposure.tolist() == [0.0, 8.0]
    with pytest.raises(ValueError, match="kappa"):
        page_link_evidence(grouped, kappa=0.0)
    with pytest.raises(ValueError, match="new_links"):
        page_links([0], [0], [1.0], [-1])


def test_the_sum_over_pages_keeps_the_mean_and_variance_and_one_page_unchanged() -> None:
    alpha = np.array([2.0, 5.0, 3.0, 0.5])
    beta = np.array([100.0, 40.0, 300.0, 20.0])
    shape, rate = site_sum(alpha, beta, np.array([0, 0, 1, 2]), n_sites=4)
    mean, variance = shape / rate, shape / rate**2
    assert mean[0] == pytest.approx(2 / 100 + 5 / 40)
    assert variance[0] == pytest.approx(2 / 100**2 + 5 / 40**2)
    assert (shape[1], rate[1]) == pytest.approx((3.0, 300.0))
    assert (shape[2], rate[2]) == pytest.approx((0.5, 20.0))
    assert math.isnan(shape[3]) and math.isnan(rate[3])  # no page


def test_the_website_posterior_is_each_pages_posterior_summed() -> None:
    rng = np.random.default_rng(7)
    n = 60
    site, page = rng.integers(0, 5, n), rng.integers(0, 3, n)
    grouped = page_links(site, site * 3 + page, rng.uniform(0, 400, n), rng.integers(0, 4, n))
    prior = GammaPrior(1.5, 90.0)
    shape, rate = website_posterior(grouped, 5, prior, kappa=1.5)
    for s in range(5):
        pages = np.flatnonzero(grouped.page_site == s)
        means, variances = [], []
        for p in pages:
            copies = slice(grouped.offsets[p], grouped.offsets[p + 1])
            a = prior.shape + grouped.new_links[copies].sum() / 1.5
            b = prior.rate + grouped.time[copies][-1] - grouped.time[copies][0]
            means.append(a / b)
            variances.append(a / b**2)
        assert shape[s] / rate[s] == pytest.approx(sum(means))
        assert shape[s] / rate[s] ** 2 == pytest.approx(sum(variances))


def simulate_website(
    rng: np.random.Generator, page_rates: np.ndarray
) -> tuple[list[np.ndarray], list[np.ndarray], list[np.ndarray]]:
    """Each page's copies (bursty capture times), update flags and new links: Poisson updates
    that add one to three links each."""
    times, flags, links = [], [], []
    for rate in page_rates:
        n = int(rng.integers(2, 40))
        gaps = np.where(rng.random(n) < 0.3, rng.exponential(1.0, n), rng.exponential(60.0, n))
        t = np.cumsum(gaps)
        events = np.cumsum(rng.exponential(1 / rate, int(t[-1] * rate * 3) + 20))
        added = rng.integers(1, 4, events.size)
        seen = np.searchsorted(events, t, side="right")
        fresh = np.diff(np.r_[0, np.cumsum(added)[seen - 1] * (seen > 0)])
        fresh[0] = 0
        times.append(t)
        flags.append(np.r_[False, seen[1:] > seen[:-1]])
        links.append(fresh)
    return times, flags, links


def test_summed_page_link_rates_rank_websites_better_than_the_merged_timeline() -> None:
    rng = np.random.default_rng(2026)
    n_sites = 150
    sites, pages, times, flags, links, true = [], [], [], [], [], []
    for s in range(n_sites):
        page_rates = np.exp(rng.normal(math.log(1 / 90), 1.0, int(rng.integers(1, 6))))
        t, f, k = simulate_website(rng, page_rates)
        true.append(page_rates.sum())
        for p in range(page_rates.size):
            sites.append(np.full(t[p].size, s))
            pages.append(np.full(t[p].size, s * 10 + p))
        times += t
        flags += f
        links += k
    site, page, time = np.concatenate(sites), np.concatenate(pages), np.concatenate(times)
    grouped = page_links(site, page, time, np.concatenate(links))
    prior, kappa = fit_page_prior(grouped)
    assert 1.5 <= kappa <= 2.5  # two links per update on average
    shape, rate = website_posterior(grouped, n_sites, prior, kappa)
    summed = shape / rate
    # The paper's website level: all pages on one timeline, the observed MLE.
    order = timeline_order(site, time, page)
    offsets = np.r_[0, np.cumsum(np.bincount(site, minlength=n_sites))].astype(np.int64)
    merged = np.nan_to_num(estimate_many(time[order], np.concatenate(flags)[order], offsets).rate)
    rho_summed = spearmanr(summed, true).statistic
    rho_merged = spearmanr(merged, true).statistic
    assert rho_summed >= 0.85, rho_summed
    assert rho_summed > rho_merged + 0.05, (rho_summed, rho_merged)
    ratio = float(np.median(summed / np.array(true)))
    assert 0.6 <= ratio <= 1.5, ratio


def test_fitting_the_page_prior_on_link_evidence() -> None:
    grouped = page_links([0, 0, 0, 1, 1], [0, 0, 0, 1, 1], [0.0, 50, 100, 0, 100], [0, 2, 2, 0, 0])
    prior, kappa = fit_page_prior(grouped)
    updates, exposure = page_link_evidence(grouped, kappa)
    assert kappa == 1.0
    assert prior == fit_prior(updates, exposure)
    alpha, beta = posterior(prior, updates, exposure)
    assert alpha[0] > alpha[1] and beta[0] == beta[1]


def test_the_result_does_not_depend_on_the_order_or_numbering_of_rows() -> None:
    """The database returns rows in any order and numbers pages as it meets them: the website
    posterior must come out the same to the last bit."""
    rng = np.random.default_rng(11)
    n = 300
    site, page = rng.integers(0, 6, n), rng.integers(0, 8, n)
    time = rng.choice(np.arange(0.0, 200.0, 0.5), n)  # ties between pages are common
    links = rng.integers(0, 5, n)
    grouped = page_links(site, site * 8 + page, time, links)
    prior, kappa = fit_page_prior(grouped)
    shape, rate = website_posterior(grouped, 6, prior, kappa)
    for seed in range(5):
        shuffle = np.random.default_rng(seed).permutation(n)
        renumber = np.random.default_rng(seed + 100).permutation(48)
        other = page_links(site[shuffle], renumber[(site * 8 + page)[shuffle]], time[shuffle],
                           links[shuffle])  # fmt: skip
        assert np.array_equal(other.time, grouped.time)
        assert np.array_equal(other.new_links, grouped.new_links)
        other_prior, other_kappa = fit_page_prior(other)
        assert (other_prior, other_kappa) == (prior, kappa)
        other_shape, other_rate = website_posterior(other, 6, other_prior, other_kappa)
        assert np.array_equal(other_shape, shape) and np.array_equal(other_rate, rate)


def test_pages_known_but_not_copied_in_the_window_enter_the_sum_with_the_prior() -> None:
    rng = np.random.default_rng(11)
    n = 40
    site, page = rng.integers(0, 4, n), rng.integers(0, 3, n)
    grouped = page_links(site, site * 3 + page, rng.uniform(0, 300, n), rng.integers(0, 4, n))
    prior = GammaPrior(0.7, 80.0)
    in_window = np.bincount(grouped.page_site, minlength=5)
    shape, rate = website_posterior(grouped, 5, prior, kappa=1.2)
    known = in_window + np.array([0, 2, 0, 5, 3])
    more_shape, more_rate = website_posterior(grouped, 5, prior, 1.2, known)
    extra = known - in_window
    for s in range(4):
        assert more_shape[s] / more_rate[s] == pytest.approx(
            shape[s] / rate[s] + extra[s] * prior.shape / prior.rate
        )
        assert more_shape[s] / more_rate[s] ** 2 == pytest.approx(
            shape[s] / rate[s] ** 2 + extra[s] * prior.shape / prior.rate**2
        )
    # A site with known pages but none in the window is the sum of priors.
    assert (more_shape[4], more_rate[4]) == pytest.approx((3 * 0.7, 80.0))
    assert math.isnan(shape[4])
    with pytest.raises(ValueError, match="one count per site"):
        website_posterior(grouped, 5, prior, 1.2, known[:4])
    with pytest.raises(ValueError, match="at least each site's pages in the window"):
        website_posterior(grouped, 5, prior, 1.2, in_window - 1)
