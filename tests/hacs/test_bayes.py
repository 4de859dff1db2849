"""hacs.bayes: a timeline's exact evidence, the collection's prior, posteriors and p."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.integrate import quad
from scipy.stats import gamma as gamma_distribution

from hacs import bayes


def one(times: list[float], flags: list[bool]) -> bayes.IntervalEvidence:
    return bayes.interval_evidence(np.array(times), np.array(flags), np.array([0, len(times)]))


def log_likelihood(lam: float, changed: list[float], unchanged: list[float]) -> float:
    """The interval-censored Poisson likelihood of DESIGN rule 5, written out."""
    return sum(math.log(-math.expm1(-lam * t)) for t in changed) - lam * sum(unchanged)


def random_timelines(
    rng: np.random.Generator, sites: int, max_len: int = 12
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    times: list[float] = []
    flags: list[bool] = []
    offsets = [0]
    for _ in range(sites):
        n = int(rng.integers(0, max_len))
        t = np.sort(rng.choice(np.arange(0.0, 600.0, 0.5), n, replace=False))
        if n > 2:
            t[2] = t[1]  # two observations at one instant: one access
        f = rng.random(n) < 0.4
        f[: min(n, 1)] = False  # the baseline
        times += t.tolist()
        flags += f.tolist()
        offsets.append(len(times))
    return np.array(times), np.array(flags), np.array(offsets)


def slow_evidence(times: list[float], flags: list[bool]) -> tuple[list[float], list[float]]:
    """One site's changed and unchanged intervals, from its distinct instants in order (an
    instant is changed when any of its observations is; the first is the baseline)."""
    instants = sorted(set(times))
    changed_at = {i: any(f for t, f in zip(times, flags, strict=True) if t == i) for i in instants}
    changed: list[float] = []
    unchanged: list[float] = []
    for before, after in zip(instants, instants[1:], strict=False):
        (changed if changed_at[after] else unchanged).append(after - before)
    return changed, unchanged


def test_the_evidence_is_rule_5s_likelihood_on_random_timelines() -> None:
    rng = np.random.default_rng(9)
    times, flags, offsets = random_timelines(rng, 300)
    evidence = bayes.interval_evidence(times, flags, offsets)
    log_lik = evidence.log_likelihood()
    assert log_lik.shape == (300, bayes.RATE_GRID.size)
    for site in range(300):
        lo, hi = int(offsets[site]), int(offsets[site + 1])
        site_times, site_flags = times[lo:hi].tolist(), flags[lo:hi].tolist()
        changed, unchanged = slow_evidence(site_times, site_flags)
        assert evidence.accesses[site] == len(set(site_times))
        assert evidence.unchanged[site] == pytest.approx(sum(unchanged), abs=1e-9)
        assert sorted(evidence.changed[evidence.owner == site]) == pytest.approx(sorted(changed))
        for j in (0, 40, 119):
            lam = float(bayes.RATE_GRID[j])
            expected = log_likelihood(lam, changed, unchanged)
            assert log_lik[site, j] == pytest.approx(expected, rel=1e-9, abs=1e-9), site
        if site_times:
            assert (evidence.first[site], evidence.last[site]) == (min(site_times), max(site_times))
        else:
            assert np.isnan(evidence.first[site]) and evidence.accesses[site] == 0


def test_rows_are_the_evidence_of_those_sites_alone() -> None:
    times, flags, offsets = random_timelines(np.random.default_rng(4), 50)
    evidence = bayes.interval_evidence(times, flags, offsets)
    part = evidence.rows(10, 30)
    assert part.n_sites == 20
    np.testing.assert_allclose(part.log_likelihood(), evidence.log_likelihood()[10:30])


def test_changed_intervals_read_in_blocks_give_the_same_likelihood(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    times, flags, offsets = random_timelines(np.random.default_rng(6), 80, max_len=30)
    evidence = bayes.interval_evidence(times, flags, offsets)
    whole = evidence.log_likelihood()
    monkeypatch.setattr(bayes, "_BLOCK", 7)  # sites straddle the blocks
    assert evidence.changed.size > 7 * 10
    np.testing.assert_allclose(evidence.log_likelihood(), whole, rtol=1e-12, atol=1e-12)


def test_unknown_history_has_no_evidence() -> None:
    evidence = bayes.interval_evidence(np.array([5.0]), np.array([False]), np.array([0, 0, 1]))
    assert evidence.changed.size == 0 and evidence.unchanged.tolist() == [0.0, 0.0]
    assert np.all(evidence.log_likelihood() == 0.0)
    assert np.isnan(evidence.first[0]) and evidence.first[1] == 5.0


def slow_posterior_moments(prior: bayes.GammaPrior, changed: list[float], unchanged: list[float]):
    """The posterior's mean and variance under the Gamma prior, by quadrature on a fine grid
    of log λ reaching far below and above RATE_GRID (no cells, no matching)."""
    log_lam = np.linspace(math.log(1e-12), math.log(50.0), 40001)
    lam = np.exp(log_lam)
    log_density = prior.shape * log_lam - prior.rate * lam  # Gamma density × λ (dλ = λ d log λ)
    log_post = log_density + np.array([log_likelihood(x, changed, unchanged) for x in lam])
    weight = np.exp(log_post - log_post.max())
    weight /= weight.sum()
    mean = float(weight @ lam)
    return mean, float(weight @ (lam - mean) ** 2)


@pytest.mark.parametrize(
    ("times", "flags"),
    [
        (
            [0.0, 10.0, 25.0, 30.0, 70.0, 71.0, 120.0],
            [False, True, False, True, False, True, False],
        ),
        ([0.0, 30.0, 60.0, 90.0], [False, False, True, False]),
        ([0.0, 7.0, 14.0, 21.0, 28.0], [False, True, True, True, True]),
        ([0.0, 400.0], [False, False]),
    ],
)
def test_the_posterior_has_the_exact_posteriors_mean_and_variance(
    times: list[float], flags: list[bool]
) -> None:
    prior = bayes.GammaPrior(shape=0.8, rate=60.0)
    alpha, beta = bayes.interval_posterior(prior, one(times, flags))
    changed, unchanged = slow_evidence(times, flags)
    mean, variance = slow_posterior_moments(prior, changed, unchanged)
    # The grid is 9 % apart: its moments agree with the fine quadrature to a few per cent.
    assert float(alpha[0] / beta[0]) == pytest.approx(mean, rel=0.03)
    assert float(alpha[0] / beta[0] ** 2) == pytest.approx(variance, rel=0.06)


def test_a_site_without_evidence_gets_the_prior() -> None:
    prior = bayes.GammaPrior(shape=1.5, rate=90.0)
    alpha, beta = bayes.interval_posterior(prior, one([12.0], [False]))
    assert float(alpha[0] / beta[0]) == pytest.approx(1.5 / 90.0, rel=0.01)
    assert float(alpha[0]) == pytest.approx(1.5, rel=0.02)


def test_a_point_mass_prior_far_from_the_evidence_still_gives_a_posterior() -> None:
    """A prior of shape 1e4 at one change in 100 days, and a site that changed in each of
    400 daily intervals: the likelihood there is e^−1840 of its peak (0 in floating point),
    yet the posterior is finite and sits at the prior."""
    prior = bayes.GammaPrior(shape=1e4, rate=1e6)
    times = [float(k) for k in range(401)]
    alpha, beta = bayes.interval_posterior(prior, one(times, [False] + [True] * 400))
    assert np.isfinite(alpha[0]) and np.isfinite(beta[0])
    assert float(alpha[0] / beta[0]) == pytest.approx(0.01, rel=0.1)


def test_every_interval_changed_is_not_an_infinite_rate() -> None:
    """The MLE of a timeline whose every interval changed is infinite; the posterior is finite,
    above the collection's mean, and grows with the number of such intervals."""
    prior = bayes.GammaPrior(shape=1.0, rate=30.0)
    means = []
    for n in (2, 5, 20):
        times = [7.0 * k for k in range(n + 1)]
        alpha, beta = bayes.interval_posterior(prior, one(times, [False] + [True] * n))
        means.append(float(alpha[0] / beta[0]))
    assert 1 / 30 < means[0] < means[1] < means[2] < float(bayes.RATE_GRID[-1])


def test_the_prior_recovers_a_gamma_population_of_rates() -> None:
    rng = np.random.default_rng(3)
    shape, rate = 1.5, 150.0  # mean interval 100 days
    lam = rng.gamma(shape, 1 / rate, 4000)
    exposure = rng.uniform(200, 1500, lam.size)
    updates = rng.poisson(lam * exposure)
    prior = bayes.fit_prior(updates, exposure)
    assert prior.shape == pytest.approx(shape, rel=0.1)
    assert prior.mean_interval_days == pytest.approx(rate / shape, rel=0.05)


def test_a_collection_without_evidence_gets_a_weak_prior() -> None:
    prior = bayes.fit_prior([0.0, 0.0], [0.0, 10.0])
    assert prior.shape == 1.0 and prior.mean_interval_days == 365.0


def test_probability_since_a_copy_averages_over_the_posterior() -> None:
    alpha, beta, delta = 2.5, 80.0, 30.0

    def density(lam: float) -> float:
        return float(lam ** (alpha - 1) * math.exp(-beta * lam) * beta**alpha / math.gamma(alpha))

    expected, _ = quad(lambda lam: density(lam) * -math.expm1(-lam * delta), 0, np.inf)
    got = bayes.change_probability_since(alpha, beta, delta)
    assert float(got) == pytest.approx(expected, rel=1e-9)
    assert float(bayes.change_probability_since(alpha, beta, -5.0)) == 0.0


def test_thin_history_never_looks_certain() -> None:
    """Four observations with one update: the MLE says p = 1.000 within weeks; the posterior
    under a collection prior stays moderate until the last copy is old."""
    times, flags = [0.0, 30.0, 60.0, 90.0], [False, False, True, False]
    prior = bayes.GammaPrior(shape=0.9, rate=100.0)
    alpha, beta = bayes.interval_posterior(prior, one(times, flags))
    assert float(bayes.change_probability_since(alpha, beta, 40.0)[0]) < 0.5
    assert float(bayes.change_probability_since(alpha, beta, prior.mean_interval_days)[0]) < 0.99


def test_credible_bounds_hold_the_posterior_mean_interval() -> None:
    low, high = bayes.interval_credible_bounds(np.array([3.0, 30.0]), np.array([300.0, 3000.0]))
    assert np.all(low < 100.0) and np.all(high > 100.0)
    assert (high - low)[1] < (high - low)[0]  # more evidence, narrower interval
    with pytest.raises(ValueError, match="level"):
        bayes.interval_credible_bounds(1.0, 1.0, level=1.5)


def test_a_dispersion_widens_credible_bounds_about_the_same_mean() -> None:
    """With φ the bounds are Gamma(α/φ, β/φ)'s: the same mean rate, φ times the variance, so
    they hold the old ones; φ = 1 changes nothing and φ < 1 is refused."""
    alpha, beta = np.array([3.0, 30.0, 0.7]), np.array([300.0, 3000.0, 90.0])
    low, high = bayes.interval_credible_bounds(alpha, beta)
    same = bayes.interval_credible_bounds(alpha, beta, dispersion=1.0)
    assert np.array_equal(same[0], low) and np.array_equal(same[1], high)
    wide_low, wide_high = bayes.interval_credible_bounds(alpha, beta, dispersion=2.5)
    rates = gamma_distribution(alpha / 2.5, scale=2.5 / beta)
    assert np.allclose(wide_low, 1 / rates.ppf(0.95), rtol=1e-12)
    assert np.allclose(wide_high, 1 / rates.ppf(0.05), rtol=1e-12)
    assert np.allclose(rates.mean(), alpha / beta) and np.allclose(
        rates.var(), 2.5 * alpha / beta**2
    )
    assert np.all(wide_low < low) and np.all(wide_high > high)
    with pytest.raises(ValueError, match="dispersion"):
        bayes.interval_credible_bounds(alpha, beta, dispersion=0.5)


def simulated_captures(
    rng: np.random.Generator, lam: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each site captured at irregular times over two years (gaps of 1 to 60 days); a capture
    is changed when the site's Poisson process had an event since the capture before."""
    times: list[float] = []
    flags: list[bool] = []
    offsets = [0]
    for rate in lam.tolist():
        t = np.cumsum(rng.uniform(1.0, 60.0, 40))
        t = t[t < 730.0]
        events = np.cumsum(rng.exponential(1.0 / rate, 200))
        seen = np.searchsorted(events, t)
        times += t.tolist()
        flags += [False, *(np.diff(seen) > 0).tolist()]
        offsets.append(len(times))
    return np.array(times), np.array(flags), np.array(offsets)


def test_the_interval_prior_recovers_a_gamma_population_of_rates() -> None:
    rng = np.random.default_rng(5)
    shape, rate = 1.2, 60.0  # mean interval 50 days
    lam = rng.gamma(shape, 1 / rate, 1500)
    prior = bayes.fit_interval_prior(bayes.interval_evidence(*simulated_captures(rng, lam)))
    assert prior.shape == pytest.approx(shape, rel=0.2)
    assert prior.mean_interval_days == pytest.approx(rate / shape, rel=0.1)


def slow_interval_marginal(prior: bayes.GammaPrior, evidence: bayes.IntervalEvidence) -> float:
    """The collection's log marginal likelihood, site by site: each grid rate's likelihood from
    the site's intervals, weighted by the Gamma's mass in the rate's cell."""
    from scipy.stats import gamma as gamma_distribution

    grid = bayes.RATE_GRID.tolist()
    edges = [0.0] + [math.sqrt(x * y) for x, y in zip(grid, grid[1:], strict=False)] + [math.inf]
    cdf = [float(gamma_distribution.cdf(e, prior.shape, scale=1 / prior.rate)) for e in edges]
    mass = [high - low for low, high in zip(cdf, cdf[1:], strict=False)]
    total = 0.0
    for site in range(evidence.n_sites):
        changed = evidence.changed[evidence.owner == site].tolist()
        unchanged = [float(evidence.unchanged[site])]
        total += math.log(
            sum(
                m * math.exp(log_likelihood(lam, changed, unchanged))
                for lam, m in zip(grid, mass, strict=True)
            )
            / sum(mass)
        )
    return total


@pytest.mark.parametrize("seed", range(3))
def test_the_interval_prior_is_the_marginal_likelihoods_maximum(seed: int) -> None:
    """No (shape, rate) on a wide grid around the fit has a higher marginal likelihood."""
    rng = np.random.default_rng(seed)
    lam = rng.gamma(rng.uniform(0.3, 3), 1 / rng.uniform(10, 200), 60)
    evidence = bayes.interval_evidence(*simulated_captures(rng, lam))
    found = bayes.fit_interval_prior(evidence)
    best = slow_interval_marginal(found, evidence)
    for shape_factor in (0.5, 0.8, 1.25, 2.0):
        for rate_factor in (0.5, 0.8, 1.0, 1.25, 2.0):
            other = bayes.GammaPrior(found.shape * shape_factor, found.rate * rate_factor)
            assert slow_interval_marginal(other, evidence) <= best + 1e-6


def test_a_collection_without_a_change_gets_a_weak_interval_prior() -> None:
    prior = bayes.fit_interval_prior(one([0.0, 10.0, 50.0], [False, False, False]))
    assert (prior.shape, prior.mean_interval_days) == (1.0, 365.0)


def slow_log_marginal(prior: bayes.GammaPrior, m: np.ndarray, big_t: np.ndarray) -> float:
    """The collection's log marginal likelihood, site by site with math.lgamma."""
    a, b = prior.shape, prior.rate
    return sum(
        a * math.log(b) + math.lgamma(a + mi) - math.lgamma(a) - (a + mi) * math.log(b + ti)
        for mi, ti in zip(m.tolist(), big_t.tolist(), strict=True)
        if ti > 0
    )


@pytest.mark.parametrize("seed", range(6))
def test_the_prior_is_the_marginal_likelihoods_maximum(seed: int) -> None:
    """SLSQP with the analytic gradient reaches at least what a derivative-free search over the
    same likelihood reaches."""
    from scipy.optimize import minimize

    rng = np.random.default_rng(seed)
    n = int(rng.integers(20, 400))
    lam = rng.gamma(rng.uniform(0.3, 5), 1 / rng.uniform(10, 300), n)
    big_t = rng.uniform(0, 1000, n)
    m = rng.poisson(lam * big_t).astype(float)
    found = bayes.fit_prior(m, big_t)

    def negative(params: np.ndarray) -> float:
        a, b = np.exp(params)
        return -slow_log_marginal(bayes.GammaPrior(float(a), float(b)), m, big_t)

    search = minimize(
        negative,
        np.log([1.0, 100.0]),
        method="Nelder-Mead",
        options={"xatol": 1e-10, "fatol": 1e-12, "maxiter": 20000},
    )
    best = -float(search.fun)
    assert slow_log_marginal(found, m, big_t) >= best - 1e-6 * abs(best)


def test_rates_that_vary_less_than_poisson_noise_give_a_bounded_point_mass() -> None:
    rng = np.random.default_rng(3)
    big_t = rng.uniform(50, 100, 500)
    m = rng.poisson(0.02 * big_t).astype(float)  # one rate for every site
    prior = bayes.fit_prior(m, big_t)
    assert prior.shape <= 1e4
    assert prior.shape / prior.rate == pytest.approx(m.sum() / big_t.sum(), rel=0.02)


def test_the_credible_bounds_are_scipys_gamma_quantiles_to_the_bit() -> None:
    """``hacs.bayes`` computes gamma quantiles without importing ``scipy.stats`` (memory); they
    must be the very numbers ``scipy.stats.gamma.ppf`` gives, edge cases included."""
    import math

    from scipy.stats import chi2

    from hacs.bayes import OPEN_LIKELIHOOD, interval_credible_bounds

    rng = np.random.default_rng(7)
    alpha = np.concatenate([rng.gamma(2.0, 2.0, 5000) + 1e-6, [0.0, -1.0, np.nan, np.inf, 2.0]])
    beta = np.concatenate([rng.gamma(2.0, 60.0, 5000) + 1e-6, [1.0, 1.0, 1.0, 1.0, np.inf]])
    tail = (1.0 - 0.9) / 2.0  # as the function computes it (not quite 0.05)
    for dispersion in (1.0, 2.5):
        a, scale = alpha / dispersion, dispersion / beta
        with np.errstate(divide="ignore", invalid="ignore"):
            expected = (
                1.0 / gamma_distribution.ppf(1.0 - tail, a, scale=scale),
                1.0 / gamma_distribution.ppf(tail, a, scale=scale),
            )
            low, high = interval_credible_bounds(alpha, beta, 0.9, dispersion)
        np.testing.assert_array_equal(low, expected[0])
        np.testing.assert_array_equal(high, expected[1])
    assert math.exp(-float(chi2.ppf(0.9, 1)) / 2.0) == OPEN_LIKELIHOOD
