"""hacs.bayes.interval_bounds: intervals that say what a site's captures can say."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.integrate import quad

from hacs import bayes

# A collection prior like the demo archive's: about one update in 160 days. Its exponential
# tail weighs like 210 days without a change, so a page changing weekly is pulled slower by it.
PRIOR = bayes.GammaPrior(shape=1.3, rate=210.0)
# A collection where weekly pages are common: about one update a month.
MONTHLY = bayes.GammaPrior(shape=1.0, rate=30.0)
SPAN = 3 * 365.0


def one(times: list[float] | np.ndarray, flags: list[bool] | np.ndarray) -> bayes.IntervalEvidence:
    return bayes.interval_evidence(
        np.asarray(times, float), np.asarray(flags, bool), [0, len(times)]
    )


def poisson_page(mean_interval: float, every: float, seed: int) -> bayes.IntervalEvidence:
    """A page changing as a Poisson process, captured every ``every`` days for three years."""
    rng = np.random.default_rng(seed)
    times = np.arange(0.0, SPAN, every)
    changes = np.cumsum(rng.exponential(mean_interval, int(3 * SPAN / mean_interval) + 50))
    seen = np.searchsorted(changes, times)
    return one(times, np.r_[False, np.diff(seen) > 0])


@pytest.mark.parametrize("prior", [PRIOR, MONTHLY])
@pytest.mark.parametrize("every", [45.0, 90.0])
def test_a_fast_page_captured_rarely_gets_an_open_interval_above_its_truth(
    every: float, prior: bayes.GammaPrior
) -> None:
    """Changes every 6.5 days, captured every 45 (or 90) days: every gap held a change. The
    interval is open, and its bound is at least the true interval and at most the gap between
    copies."""
    evidence = poisson_page(6.5, every, seed=1)
    assert evidence.unchanged[0] == 0.0  # every interval changed
    bounds = bayes.interval_bounds(prior, evidence)
    assert bool(bounds.open[0])
    assert math.isnan(bounds.low[0])
    assert 6.5 <= bounds.high[0] <= every


@pytest.mark.parametrize("every", [45.0, 90.0])
def test_the_old_band_excluded_the_truth_under_the_demos_prior(every: float) -> None:
    """What the open interval replaces: the central interval of the matched Gamma, a tight band
    well above 6.5 days, the prior's shape above the captures' gap."""
    alpha, beta = bayes.interval_posterior(PRIOR, poisson_page(6.5, every, seed=1))
    old_low, _ = bayes.interval_credible_bounds(alpha, beta)
    assert old_low[0] > 6.5 * 2


@pytest.mark.parametrize("prior", [PRIOR, MONTHLY])
def test_open_bounds_cover_fast_pages_at_the_level(prior: bayes.GammaPrior) -> None:
    """Over 200 such pages (6–7 days, every 45 days) the one-sided 90 % bound holds the truth
    for at least nine in ten."""
    rng = np.random.default_rng(7)
    truth = rng.uniform(6.0, 7.0, 200)
    held = 0
    for k, mean in enumerate(truth):
        bounds = bayes.interval_bounds(prior, poisson_page(float(mean), 45.0, seed=100 + k))
        held += bool(bounds.open[0]) and mean <= bounds.high[0]
    assert held / truth.size >= 0.9


def test_a_densely_captured_page_keeps_a_two_sided_interval_that_covers() -> None:
    """The same page captured every 2 days, twenty draws, in a collection where weekly pages
    are common: many unchanged gaps rule out fast rates, so each interval is closed and
    narrow, and at least 17 of 20 hold 6.5 days."""
    held = 0
    for seed in range(20):
        bounds = bayes.interval_bounds(MONTHLY, poisson_page(6.5, 2.0, seed=seed))
        assert not bool(bounds.open[0])
        assert bounds.high[0] / bounds.low[0] < 1.6
        held += bool(bounds.low[0] < 6.5 < bounds.high[0])
    assert held >= 17


def test_closed_intervals_cover_poisson_pages_at_about_the_level() -> None:
    """Pages whose rates are drawn from the prior, captured every 20 days: the central 90 %
    interval holds the truth for 85–96 % of them (Bayesian coverage under the true prior)."""
    rng = np.random.default_rng(11)
    rates = rng.gamma(PRIOR.shape, 1 / PRIOR.rate, 300)
    held = []
    for k, rate in enumerate(rates):
        bounds = bayes.interval_bounds(PRIOR, poisson_page(1 / rate, 20.0, seed=500 + k))
        low = 0.0 if bounds.open[0] else bounds.low[0]
        held.append(low <= 1 / rate <= bounds.high[0])
    assert 0.85 <= float(np.mean(held)) <= 0.96


def test_bounds_are_the_grid_posteriors_quantiles() -> None:
    """A closed interval's ends are the 5 % and 95 % quantiles of the posterior, computed here
    by quadrature of likelihood × prior density (to the grid's resolution, 9 %)."""
    times, flags = [0.0, 30.0, 60.0, 90.0, 120.0, 150.0], [False, True, False, True, False, False]
    bounds = bayes.interval_bounds(PRIOR, one(times, flags))
    assert not bool(bounds.open[0])

    def density(lam: float) -> float:
        like = (1 - math.exp(-30 * lam)) ** 2 * math.exp(-90 * lam)
        return like * lam ** (PRIOR.shape - 1) * math.exp(-PRIOR.rate * lam)

    total, _ = quad(density, 0, 5)

    def cdf(x: float) -> float:
        return quad(density, 0, x)[0] / total

    from scipy.optimize import brentq

    q05 = brentq(lambda x: cdf(x) - 0.05, 1e-6, 5)
    q95 = brentq(lambda x: cdf(x) - 0.95, 1e-6, 5)
    assert bounds.high[0] == pytest.approx(1 / q05, rel=0.05)
    assert bounds.low[0] == pytest.approx(1 / q95, rel=0.05)


def test_the_open_rule_reads_the_likelihood() -> None:
    """Open needs a change and a likelihood that cannot rule out a change a day: every gap
    changed (open), one long unchanged gap among them (closed), two copies an hour apart among
    45-day changed gaps (still open: an hour cannot rule out a daily change), a single change
    within two hours (closed: fast is then the likelihood's whole story, the band is wide), no
    change at all (closed), and one copy (closed: the prior's interval)."""
    gaps45 = [45.0 * k for k in range(12)]
    changed = [False] + [True] * 11
    cases = {
        "all changed": (one(gaps45, changed), True),
        "one unchanged gap": (one(gaps45, [False, False] + [True] * 10), False),
        "copies an hour apart": (one([*gaps45, 495.0 + 1 / 24], [*changed, False]), True),
        "no change": (one(gaps45, [False] * 12), False),
        "one copy": (one([3.0], [False]), False),
    }
    for name, (evidence, expected) in cases.items():
        assert bool(bayes.interval_bounds(PRIOR, evidence).open[0]) is expected, name


def test_sites_are_read_independently_and_levels_are_checked() -> None:
    fast = poisson_page(6.5, 45.0, seed=1)
    dense = poisson_page(6.5, 2.0, seed=2)
    n_fast = int(fast.accesses[0])
    times = np.r_[np.arange(0.0, SPAN, 45.0), np.arange(0.0, SPAN, 2.0)]
    flags = np.r_[np.r_[False, np.ones(n_fast - 1, bool)], np.zeros(int(dense.accesses[0]), bool)]
    both = bayes.interval_evidence(times, flags, [0, n_fast, times.size])
    bounds = bayes.interval_bounds(PRIOR, both)
    assert bounds.open.tolist() == [True, False]
    with pytest.raises(ValueError, match="level"):
        bayes.interval_bounds(PRIOR, fast, level=1.0)


def slow_change_dispersion(sites: list[tuple[np.ndarray, np.ndarray]], rates: list[float]) -> float:
    """φ by a loop over each site's half-year blocks (hacs.bayes.change_dispersion's docstring):
    intervals between distinct instants, changed when any copy at the closing instant is."""
    terms, freedom = 0.0, 0
    for (times, flags), rate in zip(sites, rates, strict=True):
        instants = sorted(set(times.tolist()))
        changed = [bool(flags[times == x].any()) for x in instants]
        blocks: dict[int, list[tuple[float, bool]]] = {}
        for k in range(1, len(instants)):
            p = 1.0 - math.exp(-rate * (instants[k] - instants[k - 1]))
            blocks.setdefault(math.floor(instants[k] / bayes.BLOCK_DAYS), []).append(
                (p, changed[k])
            )
        kept = []
        for rows in blocks.values():
            variance = sum(p * (1 - p) for p, _ in rows)
            if variance >= bayes.MIN_BLOCK_VARIANCE:
                kept.append((sum(c for _, c in rows) - sum(p for p, _ in rows)) ** 2 / variance)
        if len(kept) >= 2:
            terms += sum(kept)
            freedom += len(kept) - 1
    if freedom < bayes.MIN_DISPERSION_BLOCKS:
        return 1.0
    return max(1.0, terms / freedom)


def random_sites(
    rng: np.random.Generator, n: int
) -> tuple[list[tuple[np.ndarray, np.ndarray]], list[float]]:
    sites, rates = [], []
    for _ in range(n):
        times = np.sort(rng.choice(np.arange(0.0, 1500.0, 0.5), int(rng.integers(1, 60))))
        flags = rng.random(times.size) < 0.4
        flags[times == times[0]] = False  # the baseline instant
        sites.append((times, flags))
        rates.append(float(rng.choice([np.nan, rng.exponential(0.03)])))
    return sites, rates


@pytest.mark.parametrize("seed", range(8))
def test_change_dispersion_equals_a_loop_over_each_sites_blocks(seed: int) -> None:
    rng = np.random.default_rng(seed)
    sites, rates = random_sites(rng, int(rng.integers(1, 40)))
    times = np.concatenate([t for t, _ in sites])
    flags = np.concatenate([f for _, f in sites])
    offsets = np.r_[0, np.cumsum([t.size for t, _ in sites])]
    found = bayes.change_dispersion(times, flags, offsets, rates)
    assert found == pytest.approx(slow_change_dispersion(sites, rates), rel=1e-12)


def clustered_pages(
    rng: np.random.Generator, n: int, *, sessions: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pages copied every 3–20 days for three years, changing every 20–80 days on average:
    independently, or in editing sessions (three changes a session, days apart)."""
    times_l, flags_l, offsets = [], [], [0]
    for _ in range(n):
        mean = rng.uniform(20.0, 80.0)
        if sessions:
            starts = np.cumsum(rng.exponential(3 * mean, int(4 * SPAN / mean) + 10))
            changes = np.sort(
                np.r_[
                    starts,
                    starts + rng.exponential(4.0, starts.size),
                    starts + rng.exponential(8.0, starts.size),
                ]
            )
        else:
            changes = np.cumsum(rng.exponential(mean, int(4 * SPAN / mean) + 10))
        times = np.arange(0.0, SPAN, rng.uniform(3.0, 20.0))
        seen = np.searchsorted(changes, times)
        times_l.append(times)
        flags_l.append(np.r_[False, np.diff(seen) > 0])
        offsets.append(offsets[-1] + times.size)
    return np.concatenate(times_l), np.concatenate(flags_l), np.array(offsets)


def test_changes_in_sessions_read_a_dispersion_and_a_wider_interval_that_holds_the_truth() -> None:
    """Independent changes read φ near 1; changes that come three to a session, days apart,
    read φ well above it. Read with that φ the intervals are wider and still hold each site's
    rate (the posterior mean, unchanged), and φ = 1 gives the intervals as before."""
    rng = np.random.default_rng(30)
    for sessions, low, high in ((False, 0.9, 1.15), (True, 1.3, 4.0)):
        times, flags, offsets = clustered_pages(rng, 150, sessions=sessions)
        evidence = bayes.interval_evidence(times, flags, offsets)
        prior = bayes.fit_interval_prior(evidence)
        alpha, beta = bayes.interval_posterior(prior, evidence)
        phi = bayes.change_dispersion(times, flags, offsets, alpha / beta)
        assert low <= phi <= high, (sessions, phi)
        plain = bayes.interval_bounds(prior, evidence)
        assert_same_bounds(bayes.interval_bounds(prior, evidence, dispersion=1.0), plain)
        wide = bayes.interval_bounds(prior, evidence, dispersion=phi)
        closed = ~plain.open
        assert np.array_equal(wide.open, plain.open)  # the open rule reads the likelihood itself
        widening = np.median(wide.high[closed] / wide.low[closed]) / np.median(
            plain.high[closed] / plain.low[closed]
        )
        assert widening >= (1.1 if sessions else 1.0), widening
        mean_interval = beta / alpha
        inside = (wide.low[closed] <= mean_interval[closed]) & (
            mean_interval[closed] <= wide.high[closed]
        )
        assert inside.all()
    with pytest.raises(ValueError, match="dispersion"):
        bayes.interval_bounds(PRIOR, poisson_page(6.5, 2.0, seed=2), dispersion=0.8)


def assert_same_bounds(a: bayes.IntervalBounds, b: bayes.IntervalBounds) -> None:
    assert np.array_equal(a.open, b.open)
    assert np.array_equal(a.low, b.low, equal_nan=True)
    assert np.array_equal(a.high, b.high)
