"""hacs.bayes: the Gamma evidence of a timeline, the collection's prior, posteriors and p."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.integrate import quad

from hacs import bayes
from hacs.estimators import estimate_many, mle_rate


def one(times: list[float], flags: list[bool]) -> bayes.RateEvidence:
    return bayes.rate_evidence(np.array(times), np.array(flags), np.array([0, len(times)]))


def log_likelihood(lam: float, changed: list[float], unchanged: list[float]) -> float:
    """The interval-censored Poisson likelihood of DESIGN rule 5, written out."""
    return sum(math.log(-math.expm1(-lam * t)) for t in changed) - lam * sum(unchanged)


def test_no_update_is_exact_exposure_and_no_updates() -> None:
    evidence = one([0.0, 10.0, 30.0, 60.0], [False] * 4)
    assert evidence.rate[0] == 0.0
    assert evidence.updates[0] == 0.0
    assert evidence.exposure[0] == 60.0
    assert (evidence.first[0], evidence.last[0], evidence.accesses[0]) == (0.0, 60.0, 4)


def test_the_kernel_has_the_likelihoods_mode_and_curvature() -> None:
    times = [0.0, 10.0, 25.0, 30.0, 70.0, 71.0, 120.0]
    flags = [False, True, False, True, False, True, False]
    evidence = one(times, flags)
    intervals = np.diff(times)
    changed = [float(t) for t, f in zip(intervals, flags[1:], strict=True) if f]
    unchanged = [float(t) for t, f in zip(intervals, flags[1:], strict=True) if not f]
    lam = mle_rate(changed, unchanged)
    m, big_t = evidence.updates[0], evidence.exposure[0]
    assert m / big_t == pytest.approx(lam, rel=1e-12)  # the kernel's mode is the MLE
    h = lam * 1e-4
    curvature = (
        log_likelihood(lam + h, changed, unchanged)
        - 2 * log_likelihood(lam, changed, unchanged)
        + log_likelihood(lam - h, changed, unchanged)
    ) / h**2
    assert -m / lam**2 == pytest.approx(curvature, rel=1e-5)


def test_small_rates_count_each_changed_interval_as_one_update() -> None:
    times = [0.0, 1.0, 2.0, 1000.0, 2000.0, 2001.0]
    flags = [False, True, False, False, False, True]
    evidence = one(times, flags)
    assert evidence.updates[0] == pytest.approx(2.0, rel=1e-2)


def test_unknown_history_has_no_evidence() -> None:
    evidence = bayes.rate_evidence(np.array([5.0]), np.array([False]), np.array([0, 0, 1]))
    assert np.isnan(evidence.rate).all()
    assert evidence.updates.tolist() == [0.0, 0.0]
    assert evidence.exposure.tolist() == [0.0, 0.0]
    assert np.isnan(evidence.first[0]) and evidence.first[1] == 5.0


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
    evidence = one(times, flags)
    prior = bayes.GammaPrior(shape=0.9, rate=100.0)
    alpha, beta = bayes.posterior(prior, evidence.updates, evidence.exposure)
    assert float(bayes.change_probability_since(alpha, beta, 40.0)[0]) < 0.5
    assert float(bayes.change_probability_since(alpha, beta, prior.mean_interval_days)[0]) < 0.99


def test_credible_bounds_hold_the_posterior_mean_interval() -> None:
    low, high = bayes.interval_credible_bounds(np.array([3.0, 30.0]), np.array([300.0, 3000.0]))
    assert np.all(low < 100.0) and np.all(high > 100.0)
    assert (high - low)[1] < (high - low)[0]  # more evidence, narrower interval
    with pytest.raises(ValueError, match="level"):
        bayes.interval_credible_bounds(1.0, 1.0, level=1.5)


def test_evidence_agrees_with_the_mle_on_many_sites() -> None:
    rng = np.random.default_rng(9)
    times, flags, offsets = [], [], [0]
    for _ in range(300):
        n = int(rng.integers(0, 12))
        t = np.sort(rng.uniform(0, 500, n))
        f = rng.random(n) < 0.4
        if n:
            f[0] = False
        times += t.tolist()
        flags += f.tolist()
        offsets.append(len(times))
    evidence = bayes.rate_evidence(np.array(times), np.array(flags), np.array(offsets))
    mle = estimate_many(np.array(times), np.array(flags), np.array(offsets))
    positive = np.isfinite(mle.rate) & (mle.rate > 0)
    assert np.allclose(evidence.updates[positive] / evidence.exposure[positive], mle.rate[positive])
    assert np.all(evidence.updates[~positive] == 0)


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

    search = minimize(negative, np.log([1.0, 100.0]), method="Nelder-Mead",
                      options={"xatol": 1e-10, "fatol": 1e-12, "maxiter": 20000})  # fmt: skip
    best = -float(search.fun)
    assert slow_log_marginal(found, m, big_t) >= best - 1e-6 * abs(best)


def test_rates_that_vary_less_than_poisson_noise_give_a_bounded_point_mass() -> None:
    rng = np.random.default_rng(3)
    big_t = rng.uniform(50, 100, 500)
    m = rng.poisson(0.02 * big_t).astype(float)  # one rate for every site
    prior = bayes.fit_prior(m, big_t)
    assert prior.shape <= 1e4
    assert prior.shape / prior.rate == pytest.approx(m.sum() / big_t.sum(), rel=0.02)
