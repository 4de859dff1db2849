"""hacs.sessions, pages edited in sessions: the session hazard's recursion against the sum it
stands for, the filter with it against the likelihood written out, the list's p against its
definition, and the fit on pages that do and do not edit in sessions."""

from __future__ import annotations

import math

import numpy as np
import pytest

from hacs import bayes, sessions
from hacs.ranking import default_probabilities
from tests.hacs.test_bayes import random_timelines


def slow_excitation(
    times: np.ndarray, flags: np.ndarray, share: float, decay: float
) -> tuple[list[float], float]:
    """One site's X per interval and R after its last access, summed from the definition: every
    changed interval (u_k, v_k] before an interval (u, v] holds one change c uniform in it, whose
    hazard a b e^{−b (t − c)} is integrated over (u, v] (averaged over c by quadrature)."""
    t = np.unique(times)
    changed = [bool(flags[times == v].any()) for v in t[1:]]
    grid = (np.arange(50_000) + 0.5) / 50_000  # midpoints: c = u_k + s L_k

    def mass_after(k: int, start: float, end: float) -> float:
        c = t[k] + grid * (t[k + 1] - t[k])
        left = np.exp(-decay * (start - c)) - np.exp(-decay * (end - c))
        return float(share * left.mean())

    extra = []
    for j in range(t.size - 1):
        extra.append(sum(mass_after(k, t[j], t[j + 1]) for k in range(j) if changed[k]))
    last = t[-1]
    remaining = sum(mass_after(k, last, math.inf) for k in range(t.size - 1) if changed[k])
    return extra, remaining


@pytest.mark.parametrize("seed", range(4))
def test_excitation_matches_the_sum_over_earlier_changes(seed: int) -> None:
    rng = np.random.default_rng(seed)
    times, flags, offsets = random_timelines(rng, sites=12)
    excitation = sessions.Excitation(float(rng.uniform(0.1, 2.0)), float(rng.uniform(0.02, 3.0)))
    evidence = bayes.interval_evidence(times, flags, offsets)
    extra, remaining = sessions.excitation_in_intervals(evidence, excitation)
    assert evidence.interval_offsets is not None
    for site in range(offsets.size - 1):
        a, b = offsets[site], offsets[site + 1]
        if np.unique(times[a:b]).size < 2:
            assert remaining[site] == 0.0
            continue
        slow, slow_remaining = slow_excitation(
            times[a:b], flags[a:b], excitation.share, excitation.decay
        )
        lo, hi = evidence.interval_offsets[site], evidence.interval_offsets[site + 1]
        np.testing.assert_allclose(extra[lo:hi], slow, rtol=1e-3, atol=1e-12)
        assert remaining[site] == pytest.approx(slow_remaining, rel=1e-3, abs=1e-12)


def test_the_filter_with_sessions_is_the_likelihood_written_out() -> None:
    """With rates that never reset, the filter's posterior is the prior times the product of
    every interval's likelihood 1 − e^{−λL−X} or e^{−λL−X}, and its marginal the sum."""
    rng = np.random.default_rng(7)
    times, flags, offsets = random_timelines(rng, sites=6)
    evidence = bayes.interval_evidence(times, flags, offsets)
    extra, _ = sessions.excitation_in_intervals(evidence, sessions.Excitation(0.8, 0.3))
    weights = bayes._grid_weights(1.2, 40.0)
    post, total = bayes._reset_filter(weights, evidence, 0.0, extra=extra)
    assert evidence.lengths is not None and evidence.interval_changed is not None
    assert evidence.interval_offsets is not None
    expected_total = 0.0
    for site in range(offsets.size - 1):
        lo, hi = evidence.interval_offsets[site], evidence.interval_offsets[site + 1]
        joint = weights.copy()
        for j in range(lo, hi):
            stay = np.exp(-bayes.RATE_GRID * evidence.lengths[j] - extra[j])
            joint = joint * (1.0 - stay if evidence.interval_changed[j] else stay)
        expected_total += math.log(joint.sum()) if hi > lo else 0.0
        np.testing.assert_allclose(post[site], joint / joint.sum(), rtol=1e-9, atol=1e-300)
    assert total == pytest.approx(expected_total, rel=1e-9)


def test_without_sessions_the_list_is_the_default() -> None:
    rng = np.random.default_rng(3)
    times, flags, offsets = random_timelines(rng, sites=30)
    t = float(times.max()) + 1.0
    default = default_probabilities(times, flags, offsets, t=t, e=1.0, history_days=3000.0)
    plain = sessions.session_probabilities(
        times, flags, offsets, t=t, e=1.0, history_days=3000.0, excitation=sessions.NO_SESSIONS
    )
    np.testing.assert_allclose(plain, default, rtol=1e-7, atol=1e-12)


def test_the_lists_p_is_its_definition() -> None:
    """p = 1 − (β / (β + Δ))^α e^{−R (1 − e^{−bΔ})} over each site's session posterior, Δ from
    the newest copy to t + e; a site changed just before its newest copy gets a higher p than
    without sessions."""
    rng = np.random.default_rng(11)
    times, flags, offsets = random_timelines(rng, sites=20)
    t, e = float(times.max()) + 2.0, 1.0
    excitation = sessions.Excitation(0.9, 0.4)
    p = sessions.session_probabilities(
        times, flags, offsets, t=t, e=e, history_days=1e6, excitation=excitation
    )
    found = sessions.session_posterior(times, flags, offsets, excitation=excitation)
    delta = t + e - found.last_copy
    for i in range(offsets.size - 1):
        if np.isnan(found.last_copy[i]):
            assert p[i] == 0.0  # no copy in the window: left off the list
            continue
        quiet = (found.beta[i] / (found.beta[i] + delta[i])) ** found.alpha[i]
        left = found.remaining[i] * (1.0 - math.exp(-0.4 * delta[i]))
        assert p[i] == pytest.approx(1.0 - quiet * math.exp(-left), rel=1e-12, abs=1e-15)
    plain = sessions.session_probabilities(
        times, flags, offsets, t=t, e=e, history_days=1e6, excitation=sessions.NO_SESSIONS
    )
    recent = found.remaining > 0.05
    assert recent.any()
    assert np.all(p[recent] > plain[recent])


def hawkes_pages(
    seed: int, sites: int, share: float, decay: float, days: float = 700.0
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pages whose changes are a Hawkes process (base rate one in 40 days, each change bringing
    ``share`` more with decay ``decay`` a day; share 0: Poisson), copied every day."""
    rng = np.random.default_rng(seed)
    times, flags, offsets = [], [], [0]
    for _ in range(sites):
        events = list(np.cumsum(rng.exponential(40.0, 40)))
        queue = [e for e in events if e < days]
        changes = []
        while queue:
            c = queue.pop()
            changes.append(c)
            for _ in range(rng.poisson(share)):
                child = c + rng.exponential(1.0 / decay)
                if child < days:
                    queue.append(child)
        t = np.arange(0.0, days, 1.0)
        seen = np.searchsorted(np.sort(changes), t, side="right")
        times.append(t)
        flags.append(np.r_[False, np.diff(seen) > 0])
        offsets.append(offsets[-1] + t.size)
    return np.concatenate(times), np.concatenate(flags), np.array(offsets)


def test_the_fit_finds_sessions_where_pages_have_them() -> None:
    times, flags, offsets = hawkes_pages(0, sites=40, share=0.6, decay=0.25)
    evidence = bayes.interval_evidence(times, flags, offsets)
    prior = bayes.fit_interval_prior(evidence)
    found = sessions.fit_excitation(prior, evidence, bayes.fit_reset_rate(prior, evidence))
    assert 0.3 < found.share < 1.0
    assert 0.1 < found.decay < 0.6


def test_the_fit_finds_few_sessions_on_poisson_pages() -> None:
    times, flags, offsets = hawkes_pages(1, sites=40, share=0.0, decay=0.25)
    evidence = bayes.interval_evidence(times, flags, offsets)
    prior = bayes.fit_interval_prior(evidence)
    found = sessions.fit_excitation(prior, evidence, bayes.fit_reset_rate(prior, evidence))
    assert found.share < 0.1


def test_bad_excitation_is_refused() -> None:
    with pytest.raises(ValueError, match="share"):
        sessions.Excitation(-0.1, 1.0)
    with pytest.raises(ValueError, match="decay"):
        sessions.Excitation(0.5, 0.0)
