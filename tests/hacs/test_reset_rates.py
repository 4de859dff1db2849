"""hacs.bayes, rates that reset: the filter of a site's rate now, the collection's reset rate,
and hacs.ranking's default posterior over a list's window."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from hacs import bayes
from hacs.ranking import default_posterior, window_timelines
from tests.hacs.test_bayes import random_timelines


def regimes(
    seed: int, sites: int, reset: float, gap: float = 10.0, days: float = 1095.0
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sites copied every ``gap`` days on average whose rate starts afresh from a Gamma prior
    (shape 0.8, mean one change in 60 days) at the events of a Poisson process of rate
    ``reset`` (never for 0), each copy flagged when the site changed since the one before."""
    rng = np.random.default_rng(seed)
    times, flags, offsets = [], [], [0]
    for _ in range(sites):
        t = np.cumsum(rng.exponential(gap, int(3 * days / gap) + 10))
        t = t[t < days]
        starts = np.r_[0.0, np.cumsum(rng.exponential(1 / reset, 200)) if reset else []]
        starts = starts[starts < days]
        ends = np.r_[starts[1:], days]
        rates = rng.gamma(0.8, 1 / 0.8 / 60.0, starts.size)
        spans = zip(starts, ends, rates, strict=True)
        events = np.sort(
            np.concatenate([rng.uniform(a, b, rng.poisson(r * (b - a))) for a, b, r in spans])
        )
        seen = np.searchsorted(events, t, side="right")
        times.append(t)
        flags.append(np.r_[False, np.diff(seen) > 0])
        offsets.append(offsets[-1] + t.size)
    return np.concatenate(times), np.concatenate(flags), np.array(offsets)


def slow_filter(
    prior: bayes.GammaPrior, times: np.ndarray, flags: np.ndarray, reset: float
) -> tuple[float, float]:
    """One site's rate now, interval by interval in plain Python: before each interval the
    posterior keeps its mass with chance e^{−ρL} and returns to the prior otherwise, then the
    interval's likelihood multiplies it; the Gamma of the same mean and variance."""
    grid = bayes.RATE_GRID
    edges = np.r_[0.0, np.sqrt(grid[1:] * grid[:-1]), np.inf]
    from scipy.special import gammainc

    weights = np.diff(gammainc(prior.shape, prior.rate * edges))
    weights /= weights.sum()
    post = weights.copy()
    instants = sorted(set(times.tolist()))
    changed_at = {t for t, f in zip(times.tolist(), flags.tolist(), strict=True) if f}
    for before, after in zip(instants[:-1], instants[1:], strict=True):
        length = after - before
        keep = math.exp(-reset * length)
        post = keep * post + (1 - keep) * weights
        stay = np.exp(-grid * length)
        post = post * (1 - stay if after in changed_at else stay)
        post = post / post.sum()
    mean = float(post @ grid)
    variance = float(((grid - mean) ** 2 * post).sum())
    return mean**2 / variance, mean / variance


def test_the_filter_reads_each_site_as_a_slow_reading_does() -> None:
    times, flags, offsets = random_timelines(np.random.default_rng(7), sites=40)
    evidence = bayes.interval_evidence(times, flags, offsets)
    prior = bayes.GammaPrior(0.7, 90.0)
    alpha, beta = bayes.interval_posterior(prior, evidence, 1 / 200)
    for i in range(40):
        a, b = offsets[i], offsets[i + 1]
        expected = slow_filter(prior, times[a:b], flags[a:b], 1 / 200)
        assert (alpha[i], beta[i]) == pytest.approx(expected, rel=1e-9)


def test_rates_that_almost_never_reset_read_as_rates_that_hold() -> None:
    times, flags, offsets = random_timelines(np.random.default_rng(8), sites=60)
    evidence = bayes.interval_evidence(times, flags, offsets)
    prior = bayes.GammaPrior(0.7, 90.0)
    held = bayes.interval_posterior(prior, evidence)
    almost = bayes.interval_posterior(prior, evidence, 1e-12)
    assert almost[0] == pytest.approx(held[0], rel=1e-6)
    assert almost[1] == pytest.approx(held[1], rel=1e-6)


def test_the_rate_now_follows_the_recent_copies() -> None:
    # Changed between every copy for two years, then unchanged for a year of monthly copies.
    busy = np.arange(0.0, 730.0, 30.0)
    quiet = np.arange(760.0, 1100.0, 30.0)
    times = np.r_[busy, quiet]
    flags = np.r_[False, np.ones(busy.size - 1, bool), np.zeros(quiet.size, bool)]
    evidence = bayes.interval_evidence(times, flags, np.array([0, times.size]))
    prior = bayes.GammaPrior(0.8, 100.0)
    held = np.divide(*bayes.interval_posterior(prior, evidence))
    now = np.divide(*bayes.interval_posterior(prior, evidence, 1 / 365))
    assert now[0] < 0.5 * held[0]


def test_the_reset_rate_is_found_where_rates_start_afresh() -> None:
    found = {}
    for reset in (0.0, 1 / 300, 1 / 100):
        times, flags, offsets = regimes(seed=2, sites=300, reset=reset)
        evidence = bayes.interval_evidence(times, flags, offsets)
        found[reset] = bayes.fit_reset_rate(bayes.fit_interval_prior(evidence), evidence)
    assert found[0.0] < 1e-4  # rates that hold: under one reset in 27 years
    assert 1 / 600 < found[1 / 300] < 1 / 150
    assert found[1 / 100] > found[1 / 300]


def test_a_large_collection_is_fitted_on_every_kth_site() -> None:
    times, flags, offsets = regimes(seed=3, sites=60, reset=1 / 200)
    evidence = bayes.interval_evidence(times, flags, offsets)
    prior = bayes.fit_interval_prior(evidence)
    every = bayes.fit_reset_rate(prior, evidence)
    cap = bayes.RESET_FIT_SITES
    try:
        bayes.RESET_FIT_SITES = 20  # every third site
        third = bayes.fit_reset_rate(prior, evidence)
        sample = bayes._every(evidence, 3)
        assert sample.n_sites == 20
        assert third == bayes.fit_reset_rate(prior, sample)
    finally:
        bayes.RESET_FIT_SITES = cap
    assert third != every


def test_a_reset_rate_must_be_finite_and_not_negative() -> None:
    evidence = bayes.interval_evidence(np.array([0.0, 5.0]), np.array([False, True]), [0, 2])
    for bad in (-0.1, math.inf, math.nan):
        with pytest.raises(ValueError, match="reset_rate"):
            bayes.interval_posterior(bayes.GammaPrior(1.0, 50.0), evidence, bad)


def test_evidence_without_its_order_cannot_be_read_with_resets() -> None:
    whole = bayes.interval_evidence(np.array([0.0, 5.0]), np.array([False, True]), [0, 2])
    bare = bayes.IntervalEvidence(
        changed=whole.changed,
        owner=whole.owner,
        unchanged=whole.unchanged,
        first=whole.first,
        last=whole.last,
        accesses=whole.accesses,
    )
    with pytest.raises(ValueError, match="time order"):
        bayes.interval_posterior(bayes.GammaPrior(1.0, 50.0), bare, 0.01)


def test_a_window_keeps_its_copies_and_makes_its_first_a_baseline() -> None:
    times = np.array([1.0, 5.0, 9.0, 12.0, 3.0, 20.0])
    flags = np.array([False, True, True, False, False, True])
    t, f, off = window_timelines(times, flags, [0, 4, 4, 6], 4.0, 20.0)
    assert t.tolist() == [5.0, 9.0, 12.0]  # 20.0 is the window's end, not in it
    assert f.tolist() == [False, True, False]  # 5.0 is now the first: the baseline
    assert off.tolist() == [0, 3, 3, 3]


def test_the_default_posterior_fits_the_prior_and_the_reset_rate_on_the_collection() -> None:
    times, flags, offsets = regimes(seed=4, sites=120, reset=1 / 250)
    found = default_posterior(times, flags, offsets)
    evidence = bayes.interval_evidence(times, flags, offsets)
    prior = bayes.fit_interval_prior(evidence)
    assert found.prior == prior
    assert found.reset_rate == bayes.fit_reset_rate(prior, evidence) > 0
    alpha, beta = bayes.interval_posterior(prior, evidence, found.reset_rate)
    assert np.array_equal(found.alpha, alpha) and np.array_equal(found.beta, beta)
    assert np.array_equal(found.last_copy, evidence.last)


def enumerated_reading(
    prior: bayes.GammaPrior, times: np.ndarray, flags: np.ndarray, reset: float
) -> tuple[np.ndarray, float]:
    """One site's posterior of its rate now on the grid, and the log marginal likelihood of its
    intervals, summed over every way the rate could have started afresh: before each interval
    after the first it either held (chance e^{−ρL}) or was drawn anew from the prior; between
    two fresh draws the rate is one Gamma draw, shared by the intervals it spans."""
    grid = bayes.RATE_GRID
    weights = bayes._grid_weights(prior.shape, prior.rate)
    instants = sorted(set(times.tolist()))
    changed_at = {t for t, f in zip(times.tolist(), flags.tolist(), strict=True) if f}
    lengths = [b - a for a, b in zip(instants[:-1], instants[1:], strict=True)]
    likelihoods = [
        1 - np.exp(-grid * length) if after in changed_at else np.exp(-grid * length)
        for length, after in zip(lengths, instants[1:], strict=True)
    ]
    if not lengths:
        return weights, 0.0
    now = np.zeros(grid.size)
    for pattern in itertools.product((False, True), repeat=len(lengths) - 1):
        fresh = (True, *pattern)  # the first interval starts from the prior either way
        chance = math.prod(
            1 - math.exp(-reset * length) if f else math.exp(-reset * length)
            for f, length in zip(fresh[1:], lengths[1:], strict=True)
        )
        starts = [j for j, f in enumerate(fresh) if f] + [len(lengths)]
        earlier = 1.0
        for a, b in zip(starts[:-2], starts[1:-1], strict=True):
            earlier *= float(weights @ np.prod(likelihoods[a:b], axis=0))
        now += chance * earlier * weights * np.prod(likelihoods[starts[-2] :], axis=0)
    return now / now.sum(), math.log(now.sum())


@pytest.mark.parametrize("reset", [1 / 500, 1 / 40, 1 / 5])
def test_the_filter_sums_over_every_way_the_rate_could_have_reset(reset: float) -> None:
    times, flags, offsets = random_timelines(np.random.default_rng(11), sites=30, max_len=9)
    evidence = bayes.interval_evidence(times, flags, offsets)
    prior = bayes.GammaPrior(0.6, 40.0)
    weights = bayes._grid_weights(prior.shape, prior.rate)
    post, total = bayes._reset_filter(weights, evidence, reset)
    expected_total = 0.0
    for i in range(30):
        a, b = offsets[i], offsets[i + 1]
        now, log_marginal = enumerated_reading(prior, times[a:b], flags[a:b], reset)
        assert post[i] == pytest.approx(now, rel=1e-7, abs=1e-15)
        expected_total += log_marginal
    assert total == pytest.approx(expected_total, rel=1e-9)


def test_the_interval_of_the_rate_now_is_read_from_its_posterior() -> None:
    times, flags, offsets = random_timelines(np.random.default_rng(12), sites=30, max_len=9)
    evidence = bayes.interval_evidence(times, flags, offsets)
    prior = bayes.GammaPrior(0.6, 40.0)
    bounds = bayes.interval_bounds(prior, evidence, 0.9, reset_rate=1 / 60)
    for i in range(30):
        a, b = offsets[i], offsets[i + 1]
        now, _ = enumerated_reading(prior, times[a:b], flags[a:b], 1 / 60)
        fast, slow = bayes._grid_quantiles(now[None, :], np.array([0.05, 0.95]))[0]
        if not bounds.open[i]:
            assert bounds.low[i] == pytest.approx(1 / slow, rel=1e-6)
        assert bounds.high[i] == pytest.approx(1 / fast, rel=1e-6)


def test_the_list_without_resets_reads_the_posterior_of_rates_that_hold() -> None:
    times, flags, offsets = regimes(seed=5, sites=80, reset=1 / 150)
    held = default_posterior(times, flags, offsets, reset=False)
    evidence = bayes.interval_evidence(times, flags, offsets)
    assert held.reset_rate == 0.0
    alpha, beta = bayes.interval_posterior(bayes.fit_interval_prior(evidence), evidence)
    assert np.array_equal(held.alpha, alpha) and np.array_equal(held.beta, beta)
    assert default_posterior(times, flags, offsets).reset_rate > 0.0


def test_the_fitted_reset_rate_is_the_most_likely_one() -> None:
    times, flags, offsets = regimes(seed=6, sites=150, reset=1 / 120)
    evidence = bayes.interval_evidence(times, flags, offsets)
    prior = bayes.fit_interval_prior(evidence)
    weights = bayes._grid_weights(prior.shape, prior.rate)
    found = bayes.fit_reset_rate(prior, evidence)
    best = bayes._reset_filter(weights, evidence, found, posterior=False)[1]
    low, high = bayes.RESET_RATE_BOUNDS
    for rho in [0.0, *np.geomspace(low, high, 25).tolist()]:
        # Brent stops within 5 % in log ρ: the likelihood there is flat to well under a unit.
        assert bayes._reset_filter(weights, evidence, rho, posterior=False)[1] <= best + 0.05
