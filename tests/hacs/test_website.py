"""hacs.website: pages grouped, κ, each page's link evidence, the sum over pages, simulations."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import spearmanr

from hacs.bayes import GammaPrior, fit_prior, interval_credible_bounds, posterior
from hacs.estimators import estimate_many
from hacs.updates import timeline_order
from hacs.website import (
    CHANGE_INTERVAL_DAYS,
    MIN_SHORT_UPDATES,
    SHORT_INTERVAL_DAYS,
    PageLinks,
    fit_page_prior,
    link_dispersion,
    links_per_update,
    links_per_update_readings,
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
        # Two pages of a site may have the same times; their links tell them apart. A page
        # that matches none fails the test (StopIteration), and each is matched once.
        key = next(
            k
            for k, v in expected.items()
            if len(v) == copies.stop - copies.start
            and k // 10 == grouped.page_site[p]
            and [c[0] for c in v] == grouped.time[copies].tolist()
            and [c[1] for c in v] == grouped.new_links[copies].tolist()
        )
        times = [c[0] for c in expected.pop(key)]
        links = slow_pages([r for r in rows if r[0] * 10 + r[1] == key])[key]
        assert grouped.new_links[copies].tolist() == [c[1] for c in links]
        assert updates[p] == pytest.approx(sum(c[1] for c in links) / 2.0)
        assert exposure[p] == pytest.approx(times[-1] - times[0])
        gaps = grouped.gap[copies]
        assert math.isnan(gaps[0])
        assert gaps[1:].tolist() == pytest.approx(np.diff(times).tolist())
    assert not expected


def test_days_since_the_previous_change_run_from_the_last_copy_with_new_links() -> None:
    # Page 0: copies at 0, 1, 3, 10, 12 with new links -, 0, 2, 0, 1. Page 1: 5, 9 with -, 0.
    grouped = page_links(
        [0] * 7, [0, 0, 0, 0, 0, 1, 1], [0.0, 1, 3, 10, 12, 5, 9], [4, 0, 2, 0, 1, 3, 0]
    )
    assert grouped.time.tolist() == [0.0, 1, 3, 10, 12, 5, 9]
    since = grouped.since_change
    assert math.isnan(since[0]) and math.isnan(since[5])
    # From the first copy (the baseline) until copy 3 adds links; then from copy 3.
    assert since[[1, 2, 3, 4, 6]].tolist() == [1.0, 3.0, 7.0, 9.0, 4.0]


def slow_kappa(pages: PageLinks, interval: np.ndarray, limit: float) -> float | None:
    """κ by bisection on Σ k = Σ κ h(λ t / κ), h(x) = x / (1 − e^{−x}), one update at a time."""
    rows = []
    for p in range(pages.offsets.size - 1):
        lo, hi = int(pages.offsets[p]), int(pages.offsets[p + 1])
        span = float(pages.time[hi - 1] - pages.time[lo])
        per_day = float(pages.new_links[lo:hi].sum()) / span if span > 0 else 0.0
        for i in range(lo, hi):
            t = float(interval[i])
            if pages.new_links[i] > 0 and 0 < t <= limit:
                rows.append((int(pages.new_links[i]), per_day * t))
    if len(rows) < MIN_SHORT_UPDATES:
        return None

    def excess(kappa: float) -> float:
        return sum(c / (1 - math.exp(-c / kappa)) - k for k, c in rows)

    low, high = 1.0, 100.0
    if excess(low) >= 0:
        return 1.0
    for _ in range(200):
        middle = (low + high) / 2
        low, high = (middle, high) if excess(middle) < 0 else (low, middle)
    return (low + high) / 2


@pytest.mark.parametrize("seed", range(4))
def test_both_readings_of_kappa_equal_a_slow_loop_and_kappa_is_the_smaller(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = 600
    site, page = rng.integers(0, 10, n), rng.integers(0, 4, n)
    time = rng.uniform(0, 400, n)
    links = np.where(rng.random(n) < 0.4, rng.integers(1, 5, n), 0)
    grouped = page_links(site, site * 4 + page, time, links)
    gap, change = links_per_update_readings(grouped)
    assert gap is not None and change is not None
    assert gap == pytest.approx(slow_kappa(grouped, grouped.gap, SHORT_INTERVAL_DAYS), rel=1e-6)
    assert change == pytest.approx(
        slow_kappa(grouped, grouped.since_change, CHANGE_INTERVAL_DAYS), rel=1e-6
    )
    assert links_per_update(grouped) == min(gap, change)
    assert 1.0 <= links_per_update(grouped) <= float(grouped.new_links[grouped.new_links > 0].max())


def test_a_reading_with_too_few_updates_is_left_out() -> None:
    n = MIN_SHORT_UPDATES
    # n pages copied every 10 days: past the gap reading's 7 days, within the change
    # reading's 14. Each adds 2 links once, 100 days after its first copy.
    times = np.arange(20) * 10.0
    links = np.r_[0, np.zeros(9, dtype=int), 2, np.zeros(9, dtype=int)]
    site = np.repeat(np.arange(n), times.size)
    grouped = page_links(site, site, np.tile(times, n), np.tile(links, n))
    assert SHORT_INTERVAL_DAYS < 10 <= CHANGE_INTERVAL_DAYS < 100
    # No update in either reading: κ is 1.
    assert links_per_update_readings(grouped) == (None, None)
    assert links_per_update(grouped) == 1.0
    # Now each page adds 2 links at 90 and 2 more at 100 days: the second update, 10 days
    # after the first, is in the change reading (n of them), never in the gap reading.
    links = np.r_[0, np.zeros(8, dtype=int), 2, 2, np.zeros(9, dtype=int)]
    grouped = page_links(site, site, np.tile(times, n), np.tile(links, n))
    gap, change = links_per_update_readings(grouped)
    assert gap is None and change is not None
    # By hand: 2 = c / (1 − e^{−c/κ}) with c = 4 links / 190 days × 10 days.
    c = 40 / 190
    assert links_per_update(grouped) == change == pytest.approx(-c / math.log(1 - c / 2))


def poisson_pages(
    rng: np.random.Generator,
    n_sites: int,
    *,
    links_per_update: tuple[int, int] = (1, 1),
    stale: float = 0.0,
) -> tuple[PageLinks, np.ndarray]:
    """Pages whose updates are Poisson, each adding a number of links uniform in
    ``links_per_update``, copied at random instants (a third followed by another hours later,
    so gaps run from hours to a year); a copy is stale with probability ``stale``: it re-serves
    what the page's previous copy showed. Returns the copies and each site's true rate."""
    site, page, time, links, truth = [], [], [], [], np.zeros(n_sites)
    for s in range(n_sites):
        rates = np.clip(
            np.exp(rng.normal(math.log(1 / 150), 1.0, int(rng.integers(1, 7)))), 1 / 5000, 1.0
        )
        truth[s] = rates.sum()
        visits = math.exp(rng.normal(math.log(1 / 15), 0.8))
        for rate in rates:
            t = np.sort(rng.uniform(0, 1096, int(rng.poisson(visits * 1096)) + 2))
            again = rng.random(t.size) < 1 / 3
            t = np.sort(np.r_[t, t[again] + rng.exponential(0.3, int(again.sum()))])
            updates = np.sort(rng.uniform(-200, 1096, int(rng.poisson(rate * 1296))))
            low, high = links_per_update
            added = np.r_[0, np.cumsum(rng.integers(low, high + 1, updates.size))]
            served = t.copy()
            for i in np.flatnonzero(rng.random(t.size) < stale):
                served[i] = served[i - 1] if i else served[i]
            seen = np.searchsorted(updates, served, side="right")
            held = np.maximum.accumulate(added[seen])  # links shown so far
            site.append(np.full(t.size, s))
            page.append(np.full(t.size, len(page)))
            time.append(t)
            links.append(np.diff(np.r_[held[0], held]))
    grouped = page_links(
        np.concatenate(site), np.concatenate(page), np.concatenate(time), np.concatenate(links)
    )
    return grouped, truth


def website_ratio(grouped: PageLinks, truth: np.ndarray) -> tuple[float, float]:
    """(median estimate / truth, Spearman's ρ) of the website posterior mean."""
    prior, kappa, _ = fit_page_prior(grouped)
    shape, rate = website_posterior(grouped, truth.size, prior, kappa)
    estimate = shape / rate
    return float(np.median(estimate / truth)), float(spearmanr(estimate, truth).statistic)


@pytest.mark.parametrize("stale", [0.0, 0.5])
def test_one_link_per_update_gives_kappa_one_even_after_stale_copies(stale: float) -> None:
    """Every update adds one link: κ is 1 and the website rate is calibrated, whether or not
    half the copies re-serve their predecessor's content. With stale copies the gap since the
    previous copy alone reads κ well above 1 (each update after a stale copy shows every link
    since the content it re-served)."""
    grouped, truth = poisson_pages(np.random.default_rng(27), 300, stale=stale)
    gap, change = links_per_update_readings(grouped)
    assert gap is not None and change is not None
    if stale:
        assert gap > 1.25, gap
    assert links_per_update(grouped) <= 1.05
    ratio, rho = website_ratio(grouped, truth)
    assert 0.9 <= ratio <= 1.1, ratio
    assert rho >= 0.95, rho


def test_several_links_per_update_are_read_as_one_update() -> None:
    """Updates adding one to three links (two on average): κ ≈ 2, and the website rate counts
    updates, not links."""
    grouped, truth = poisson_pages(np.random.default_rng(28), 300, links_per_update=(1, 3))
    assert 1.8 <= links_per_update(grouped) <= 2.2
    ratio, rho = website_ratio(grouped, truth)
    assert 0.85 <= ratio <= 1.15, ratio
    assert rho >= 0.95, rho


def test_a_page_with_one_copy_has_no_evidence_and_a_bad_kappa_is_refused() -> None:
    grouped = page_links([0, 1, 1], [0, 1, 1], [5.0, 1.0, 9.0], [7, 4, 2])
    updates, exposure = page_link_evidence(grouped, kappa=1.0)
    assert updates.tolist() == [0.0, 2.0] and exposure.tolist() == [0.0, 8.0]
    with pytest.raises(ValueError, match="kappa"):
        page_link_evidence(grouped, kappa=0.0)
    with pytest.raises(ValueError, match="new_links"):
        page_links([0], [0], [1.0], [-1])


@settings(max_examples=100, deadline=None)
@given(st.lists(observation, max_size=80))
def test_the_dispersion_is_the_changed_copies_mean_square_over_their_squared_mean(
    rows: list[tuple[int, int, float, int]],
) -> None:
    """φ = E[C²] / E[C]² over the copies with new links (a page's first copy is its baseline),
    at least 1, and 1 with fewer than MIN_SHORT_UPDATES of them."""
    grouped = page_links(
        [r[0] for r in rows],
        [r[0] * 10 + r[1] for r in rows],
        [r[2] for r in rows],
        [r[3] for r in rows],
    )
    changed = [n for copies in slow_pages(rows).values() for _, n in copies if n > 0]
    if len(changed) < MIN_SHORT_UPDATES:
        expected = 1.0
    else:
        mean = sum(changed) / len(changed)
        expected = max(1.0, sum(n * n for n in changed) / len(changed) / mean**2)
    assert link_dispersion(grouped) == pytest.approx(expected, rel=1e-12)


def test_intervals_hold_the_true_rate_when_updates_add_varying_numbers_of_links() -> None:
    """Updates add 1 to 5 links: a page's new links scatter more than a count of its updates,
    and read as a Poisson count its 90 % website interval is too narrow. Widened by φ (the same
    Gamma mean, φ times the variance) it holds the true rate for at least 85 % of sites, and for
    more sites than without."""
    grouped, truth = poisson_pages(np.random.default_rng(29), 400, links_per_update=(1, 5))
    prior, kappa, dispersion = fit_page_prior(grouped)
    assert 1.3 <= dispersion <= 2.5, dispersion  # E[K²] / E[K]² = 11 / 9 per update, and more
    shape, rate = website_posterior(grouped, truth.size, prior, kappa)
    held = {}
    for phi in (1.0, dispersion):
        low, high = interval_credible_bounds(shape, rate, 0.9, phi)  # of the mean interval, days
        held[phi] = float(np.mean((low <= 1 / truth) & (1 / truth <= high)))
    assert held[dispersion] >= 0.85, held
    assert held[dispersion] > held[1.0] + 0.03, held


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
    prior, kappa, _ = fit_page_prior(grouped)
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
    prior, kappa, dispersion = fit_page_prior(grouped)
    updates, exposure = page_link_evidence(grouped, kappa)
    assert kappa == 1.0 and dispersion == 1.0  # too few changed copies to read either
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
    prior, kappa, dispersion = fit_page_prior(grouped)
    assert dispersion > 1.0  # 0–4 links a copy: read, not defaulted
    shape, rate = website_posterior(grouped, 6, prior, kappa)
    for seed in range(5):
        shuffle = np.random.default_rng(seed).permutation(n)
        renumber = np.random.default_rng(seed + 100).permutation(48)
        other = page_links(
            site[shuffle], renumber[(site * 8 + page)[shuffle]], time[shuffle], links[shuffle]
        )
        assert np.array_equal(other.time, grouped.time)
        assert np.array_equal(other.new_links, grouped.new_links)
        other_prior, other_kappa, other_dispersion = fit_page_prior(other)
        assert (other_prior, other_kappa, other_dispersion) == (prior, kappa, dispersion)
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
