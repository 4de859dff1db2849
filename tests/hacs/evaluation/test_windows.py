"""hacs.evaluation.windows: every window's estimates, probabilities and scores against a
hand-worked case and the slow reference (DESIGN.md rules 3-7, GP4C Section 5.1), and the
posterior's prior, which never looks past t."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hacs.bayes import GammaPrior, interval_evidence, interval_posterior
from hacs.evaluation import ObservationTable, evaluate, window_scores
from tests.hacs.evaluation._helpers import REL, Obs, close, hand_table, random_history, table_of
from tests.hacs.evaluation._slow import slow_window

# --------------------------------------------------------------------------------------------
# Hand-worked window
# --------------------------------------------------------------------------------------------


def test_hand_worked_window() -> None:
    scores = window_scores(hand_table(), t=7.0, w_weeks=1)
    np.testing.assert_array_equal(scores.site, [0, 1, 2])
    # Site 0: one interval, changed (m = n = 1): Eq. 4, λ = log(1.5/0.5) · 1/3; τ = 3.
    lam = math.log(3.0) / 3.0
    assert close(float(scores.rate[0]), lam)
    assert scores.rate[1] == 0.0 and math.isnan(scores.rate[2])
    np.testing.assert_array_equal(scores.tau, [3.0, 5.0, 1.0])
    np.testing.assert_array_equal(scores.instants, [2, 2, 1])
    assert close(float(scores.probability[0]), 1 - 3.0 ** (-11 / 3))  # 1 − exp(−λ (14 − 3))
    np.testing.assert_array_equal(scores.probability[1:], [0.0, 0.0])
    np.testing.assert_array_equal(scores.first_update, [12.0, math.inf, 8.0])
    np.testing.assert_array_equal(scores.positive, [True, False, True])
    np.testing.assert_array_equal(scores.scores["last_obs"], [4.0, 2.0, 6.0])
    np.testing.assert_array_equal(scores.scores["age"], [4.0, 1.0, 6.0])
    # NAD: one access, changed: λ_p = 1, Δ = 7 + 7 − 3 = 11.
    np.testing.assert_array_equal(scores.scores["nad"], [11.0, 0.0, 0.0])
    assert close(float(scores.scores["cho_garcia_molina"][0]), lam * 11)


# --------------------------------------------------------------------------------------------
# Against the slow reference
# --------------------------------------------------------------------------------------------


def compare_window(observations: list[Obs], n_sites: int, t: float, w: int, method: str) -> None:
    table = table_of(observations, n_sites)
    fast = window_scores(table, t=t, w_weeks=w, method=method)
    slow = slow_window(observations, n_sites, t, w, 7.0, method)
    assert fast.site.tolist() == sorted(slow)
    for j, u in enumerate(fast.site.tolist()):
        ref = slow[u]
        where = f"site {u} at t={t}, w={w}"
        assert close(float(fast.rate[j]), ref.rate), where
        assert close(float(fast.tau[j]), ref.tau), where
        assert close(float(fast.probability[j]), ref.probability), where
        assert float(fast.first_update[j]) == ref.first_update, where
        # The posterior from the compressed timelines equals interval_evidence's on the full
        # window timeline. Its prior comes from a Nelder-Mead run over sums in another order:
        # equal to its tolerance.
        assert close(float(fast.alpha[j]), ref.alpha, 1e-6), where
        assert close(float(fast.beta[j]), ref.beta, 1e-6), where
        assert close(float(fast.posterior_probability[j]), ref.posterior, 1e-6), where
        for model, value in ref.scores.items():
            rel = 1e-6 if model == "posterior" else REL
            assert close(float(fast.scores[model][j]), value, rel, abs_=1e-9), (where, model)


@pytest.mark.parametrize("method", ["observed", "interpolated"])
@pytest.mark.parametrize("seed", range(6))
def test_window_scores_match_the_slow_reference(seed: int, method: str) -> None:
    rng = np.random.default_rng(seed)
    observations = random_history(rng, n_sites=7, horizon=70.0, max_pages=3, max_obs=14)
    for t in (14.0, 28.0, 35.5, 49.0, 70.0):
        for w in (1, 2, 5):
            compare_window(observations, 7, t, w, method)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), t=st.sampled_from([7.0, 14.0, 21.0, 30.5]))
def test_window_scores_match_the_slow_reference_hypothesis(seed: int, t: float) -> None:
    rng = np.random.default_rng(seed)
    observations = random_history(rng, n_sites=4, horizon=35.0, max_pages=3, max_obs=10)
    compare_window(observations, 4, t, int(rng.integers(1, 4)), "observed")


# --------------------------------------------------------------------------------------------
# The posterior model: its prior never looks past t
# --------------------------------------------------------------------------------------------


def posterior_details(table: ObservationTable, **kw: Any) -> dict[float, dict[str, Any]]:
    result = evaluate({"homepage": table}, start=14.0, end=84.0, w_weeks=[2], details=True, **kw)
    return {p["t"]: p for p in result["points"]}


@pytest.mark.parametrize(("prior_weeks", "prior_every"), [(12, 1), (None, 1), (12, 3)])
def test_observations_after_t_leave_the_posterior_at_t_unchanged(
    prior_weeks: int | None, prior_every: int
) -> None:
    """Appending observations after a cut (new updates of old pages, new pages) changes no
    prior, selection or score of the posterior at a reference point before the cut — and does
    change the priors after it, so the comparison can fail."""
    rng = np.random.default_rng(11)
    observations = random_history(rng, n_sites=8, horizon=50.0, max_pages=2, max_obs=12)
    later = list(observations)
    for page in {o.page for o in observations}:
        last = max((o for o in observations if o.page == page), key=lambda o: o.index)
        for k in range(1, 4):  # three new links, days apart, after the cut
            later.append(
                Obs(
                    last.site,
                    page,
                    50.0 + 6.0 * k,
                    last.index + k,
                    last.links | {f"late{page}-{k}"},
                )
            )
    before, after = table_of(observations, 8), table_of(later, 8, seed=1)
    kw = {"prior_weeks": prior_weeks, "prior_every": prior_every}
    a, b = posterior_details(before, **kw), posterior_details(after, **kw)
    earlier = [t for t in a if t < 50.0]
    assert len(earlier) == 6
    for t in earlier:
        assert a[t]["prior"] == b[t]["prior"], t
        assert a[t]["posterior_selected"] == b[t]["posterior_selected"], t
        w_scores = [
            window_scores(table, t=t, w_weeks=2, prior_weeks=prior_weeks)
            for table in (before, after)
        ]
        if prior_every == 1:  # window_scores fits its prior at t, as evaluate does then
            assert w_scores[0].prior == GammaPrior(**a[t]["prior"])
        np.testing.assert_array_equal(
            w_scores[0].posterior_probability, w_scores[1].posterior_probability
        )
        np.testing.assert_array_equal(
            w_scores[0].scores["posterior"], w_scores[1].scores["posterior"]
        )
    assert any(a[t]["prior"] != b[t]["prior"] for t in a if t > 50.0)


def test_a_prior_refitted_every_few_points_is_carried_forward() -> None:
    """prior_every = 3: the points 0, 3, 6, … fit; each other point uses the latest fit before
    it, the same as the per-point fit there."""
    rng = np.random.default_rng(12)
    table = table_of(random_history(rng, n_sites=8, horizon=90.0, max_pages=2, max_obs=14), 8)
    every = posterior_details(table, prior_every=3)
    each = posterior_details(table, prior_every=1)
    ts = sorted(each)
    for r, t in enumerate(ts):
        assert every[t]["prior"] == each[ts[r - r % 3]]["prior"], t
    assert len({(p["prior"]["shape"], p["prior"]["rate"]) for p in each.values()}) > 3


def test_a_window_of_one_instant_has_the_prior_as_posterior() -> None:
    """No evidence: p = 1 − (β/(β + Δ))^α with the prior's (α, β) and Δ = t + e − the copy."""
    table = hand_table()
    scores = window_scores(table, t=14.0, w_weeks=1)
    # Site 2's only observation in [7, 14] is at 8.
    j = scores.site.tolist().index(2)
    assert scores.instants[j] == 1
    a, b = interval_posterior(scores.prior, interval_evidence([8.0], [False], [0, 1]))
    assert close(float(scores.alpha[j]), float(a[0])) and close(float(scores.beta[j]), float(b[0]))
    # The prior's mass on the rate grid, matched to a Gamma: the prior's own mean to within the
    # grid's spacing (9 %; this prior is nearly a point mass, between two grid rates).
    assert close(float(a[0] / b[0]), scores.prior.shape / scores.prior.rate, 0.05)
    expected = 1 - (float(b[0]) / (float(b[0]) + 14.0 + 7.0 - 8.0)) ** float(a[0])
    assert close(float(scores.posterior_probability[j]), expected)
    assert scores.last_copy[j] == 8.0
