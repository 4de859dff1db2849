"""hacs.link_counts, how many links a change brought: the count likelihood against its definition,
the interval counts against the timelines, the filter against the likelihood written out, the
fit on pages whose changes bring a known number of links, and the bench's counts of a homepage."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import nbinom, poisson

from bench.homepages import REALDATA, Homepage, homepage_folders, load_homepage
from hacs import bayes, link_counts
from hacs.bayes import RATE_GRID


def slow_count_likelihood(k: int, length: float, mu: float, spread: float = 1.0) -> np.ndarray:
    """P(K = k | λ) on the grid from the definition: m Poisson changes, each bringing one link
    and a negative binomial number more (shape r, mean μ − 1; r = 1 the geometric), so that
    K − m is negative binomial of shape m r."""
    exposure = RATE_GRID * length
    if k == 0:
        return np.exp(-exposure)
    k = min(k, link_counts.COUNT_CAP)
    q = spread / (spread + mu - 1.0)
    total = np.zeros(RATE_GRID.size)
    for m in range(1, k + 1):
        split = nbinom.pmf(k - m, m * spread, q) if q < 1.0 else float(k == m)
        total += poisson.pmf(m, exposure) * split
    return total


@pytest.mark.parametrize("seed", range(6))
def test_count_likelihood_matches_its_definition(seed: int) -> None:
    rng = np.random.default_rng(seed)
    counts = rng.integers(0, 90, 12)
    counts[:2] = (0, 1)
    lengths = rng.uniform(0.5, 200.0, counts.size)
    mu = float(rng.choice([1.0, rng.uniform(1.0, 12.0)]))
    spread = float(rng.choice([1.0, rng.uniform(0.2, 3.0)]))
    rows = link_counts.count_likelihood(counts, lengths, mu, spread)
    for row, k, length in zip(rows, counts.tolist(), lengths.tolist(), strict=True):
        np.testing.assert_allclose(
            row, slow_count_likelihood(k, length, mu, spread), rtol=1e-8, atol=1e-300
        )


@pytest.mark.parametrize(("mu", "spread"), [(1.0, 1.0), (2.5, 1.0), (4.0, 1.0), (2.5, 0.5)])
def test_the_counts_of_an_interval_are_a_distribution(mu: float, spread: float) -> None:
    """Over every K, P(K | λ) adds up to 1 wherever the cap is out of reach."""
    counts = np.arange(link_counts.COUNT_CAP)
    rows = link_counts.count_likelihood(counts, np.full(counts.size, 10.0), mu, spread)
    reachable = RATE_GRID * 10.0 <= 0.5
    np.testing.assert_allclose(rows.sum(axis=0)[reachable], 1.0, atol=1e-6)


def test_interval_counts_add_up_one_instant_and_skip_the_baseline() -> None:
    times = np.array([0.0, 1.0, 1.0, 2.0, 0.0, 3.0, 5.0])
    new_links = np.array([9, 2, 3, 1, 7, 4, 0])
    offsets = np.array([0, 4, 4, 7])  # the second site has no observation
    counts = link_counts.interval_link_counts(times, new_links, offsets)
    flags = new_links > 0
    flags[[0, 4]] = False  # each timeline's first copy is its baseline
    evidence = bayes.interval_evidence(times, flags, offsets)
    assert counts.tolist() == [5, 1, 4, 0]
    assert evidence.lengths is not None and counts.size == evidence.lengths.size


def slow_posterior(
    weights: np.ndarray,
    lengths: list[float],
    counts: list[int],
    changed: list[bool],
    reset_rate: float,
    mu: float,
) -> np.ndarray:
    """One site's filtered posterior written out: before each interval the rate keeps its
    posterior with chance e^{−ρL}, else starts afresh from the prior; then the interval's
    likelihood, the count's when it changed."""
    post = weights.copy()
    for length, k, c in zip(lengths, counts, changed, strict=True):
        keep = np.exp(-reset_rate * length)
        post = keep * post + (1.0 - keep) * weights
        post = post * (
            slow_count_likelihood(max(k, 1), length, mu) if c else np.exp(-RATE_GRID * length)
        )
        post = post / post.sum()
    return post


@pytest.mark.parametrize("reset_rate", [0.0, 0.003])
def test_the_filter_with_counts_matches_the_posterior_written_out(reset_rate: float) -> None:
    rng = np.random.default_rng(11)
    sites, times_l, links_l, offsets = 6, [], [], [0]
    for _ in range(sites):
        n = int(rng.integers(1, 9))
        times_l.append(np.sort(rng.uniform(0, 400, n)))
        links = rng.integers(0, 6, n)
        links[0] = 0
        links_l.append(links)
        offsets.append(offsets[-1] + n)
    times, new_links = np.concatenate(times_l), np.concatenate(links_l)
    flags = new_links > 0
    # One changed interval without a count: a link that came back.
    flags[offsets[2] + 1 if offsets[3] - offsets[2] > 1 else 1] = True
    offs = np.asarray(offsets)
    evidence = bayes.interval_evidence(times, flags, offs)
    counts = link_counts.interval_link_counts(times, new_links, offs)
    prior = bayes.GammaPrior(0.8, 40.0)
    weights = bayes._grid_weights(prior.shape, prior.rate)
    reading = link_counts.LinkEvidence(evidence, counts, 3.0)
    post, _ = bayes._reset_filter(weights, evidence, reset_rate, changed_likelihood=reading.changed)
    assert evidence.lengths is not None and evidence.interval_changed is not None
    assert evidence.interval_offsets is not None
    for site in range(sites):
        lo, hi = evidence.interval_offsets[site], evidence.interval_offsets[site + 1]
        slow = slow_posterior(
            weights,
            evidence.lengths[lo:hi].tolist(),
            counts[lo:hi].tolist(),
            evidence.interval_changed[lo:hi].tolist(),
            reset_rate,
            3.0,
        )
        np.testing.assert_allclose(post[site] / post[site].sum(), slow, rtol=1e-7, atol=1e-14)


def compound_collection(seed: int, mu: float, sites: int = 240):
    """Sites whose changes are Poisson (rates Gamma(1, 30 days)) and bring a geometric number of
    new links of mean ``mu``, copied at exponential gaps of mean 10–60 days over three years."""
    rng = np.random.default_rng(seed)
    times_l, links_l, offsets = [], [], [0]
    for _ in range(sites):
        rate = rng.gamma(1.0, 1.0 / 30.0)
        changes = np.cumsum(rng.exponential(1.0 / rate, 400))
        changes = changes[changes < 1095.0]
        links = rng.geometric(1.0 / mu, changes.size)
        copies = np.cumsum(rng.exponential(rng.uniform(10.0, 60.0), 200))
        copies = copies[copies < 1095.0]
        held = np.searchsorted(changes, copies, side="right")
        total = np.r_[0, np.cumsum(links)][held]
        new = np.r_[0, np.diff(total)]
        times_l.append(copies)
        links_l.append(new)
        offsets.append(offsets[-1] + copies.size)
    new_links = np.concatenate(links_l).astype(np.int64)
    return np.concatenate(times_l), new_links > 0, new_links, np.asarray(offsets)


@pytest.mark.parametrize("mu", [1.5, 4.0])
def test_the_fit_recovers_the_links_per_change(mu: float) -> None:
    times, flags, new_links, offsets = compound_collection(5, mu)
    evidence = bayes.interval_evidence(times, flags, offsets)
    counts = link_counts.interval_link_counts(times, new_links, offsets)
    prior = bayes.fit_interval_prior(evidence)
    reset_rate = bayes.fit_reset_rate(prior, evidence)
    found = link_counts.fit_links_per_change(prior, evidence, counts, reset_rate)
    assert mu / 1.35 <= found <= mu * 1.35


def test_more_new_links_read_as_a_faster_rate() -> None:
    """Two sites copied alike, every interval changed: the one whose copies held more new links
    is read as changing more often, and its p is higher."""
    copies = np.arange(0.0, 900.0, 45.0)
    times = np.r_[copies, copies, np.arange(0.0, 900.0, 30.0)]
    offsets = np.array([0, copies.size, 2 * copies.size, times.size])
    new_links = np.r_[np.ones(copies.size), np.full(copies.size, 8), np.zeros(30)]
    new_links[[0, copies.size, 2 * copies.size]] = 0
    new_links[2 * copies.size + 5] = 3  # a third site, mostly quiet, for the prior
    flags = new_links > 0
    found, mu = link_counts.link_count_posterior(times, flags, new_links.astype(np.int64), offsets)
    rate = found.alpha / found.beta
    assert rate[1] > 1.5 * rate[0]
    p = link_counts.link_count_probabilities(
        times, flags, new_links.astype(np.int64), offsets, t=910.0, e=1.0, history_days=1095.0
    )
    assert p[1] > p[0] > p[2]
    assert 1.0 <= mu <= link_counts.LINKS_PER_CHANGE_BOUNDS[1]


def test_a_homepage_counts_the_links_its_copies_had_not_held() -> None:
    page = Homepage(
        name="owner__owner.github.io",
        url="https://owner.github.io/",
        changes=np.array([10.0, 30.0]),
        first=0.0,
        known_until=100.0,
        versions=3,
        edit_times=np.array([0.0, 10.0, 20.0, 30.0]),
        edit_links=(
            frozenset({"a", "b"}),
            frozenset({"a", "b", "c", "d"}),
            frozenset({"a"}),
            frozenset({"a", "b", "e"}),
        ),
    )
    # Before the first edit nothing was live; a link that comes back is not new.
    assert page.new_links([-1.0, 5.0, 12.0, 25.0, 40.0]) == [0, 2, 2, 0, 1]


def test_a_real_homepage_gains_new_links_exactly_at_its_changes() -> None:
    """On a real history (skipped when ``../shared/realdata`` is absent): copied at every edit,
    a homepage's copies hold new links exactly at the edits that are its changes."""
    folders = homepage_folders(REALDATA)
    if not folders:
        pytest.skip("../shared/realdata is not present")
    page = load_homepage(folders[0])
    counts = np.asarray(page.new_links(page.edit_times.tolist()))
    assert counts[0] > 0  # the first copy counts all its links
    np.testing.assert_array_equal(page.edit_times[1:][counts[1:] > 0], page.changes)
