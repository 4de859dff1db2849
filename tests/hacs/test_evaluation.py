"""Tests for hacs.evaluation: a hand-worked case, a slow reference written straight from the
papers' definitions (HACS Section III, GP4C Sections 4.2.2 and 5.1, DESIGN.md rules 3, 9-11),
seeded simulations of the Random baseline against its exact expectation, rule 3's two readings
held equal, and the Figure 6 check (HACS Section II-D)."""

from __future__ import annotations

import math
import subprocess
import sys
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hacs.bayes import (
    GammaPrior,
    fit_interval_prior,
    interval_evidence,
    interval_posterior,
    posterior_exposure,
)
from hacs.estimators import change_probability, estimate
from hacs.evaluation import (
    DEFAULT_THETAS,
    RANKING_MODELS,
    SELECTION_MODELS,
    ObservationTable,
    evaluate,
    interval_distribution,
    reference_points,
    window_scores,
)
from hacs.ranking import posterior_probabilities
from hacs.updates import is_window_update, link_floors, window_update_flags
from hacs.website import PageLinks, fit_page_prior, page_links, website_posterior
from tests.reference import slow_window_timeline

PROJECT = Path(__file__).resolve().parents[2]
REL = 1e-9


def close(a: float | None, b: float | None, rel: float = REL, abs_: float = 1e-12) -> bool:
    if a is None or b is None:
        return a is None and b is None
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    if math.isinf(a) or math.isinf(b):
        return a == b
    return abs(a - b) <= max(rel * max(abs(a), abs(b)), abs_)


# --------------------------------------------------------------------------------------------
# Histories: observations with link sets, and their ObservationTable
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Obs:
    site: int
    page: int
    time: float
    index: int  # among the page's observations, time order
    links: frozenset[str]


def table_of(
    observations: list[Obs], n_sites: int, seed: int = 0, *, new_links: bool = False
) -> ObservationTable:
    """The table a caller would build: link floors per page (hacs.updates), rows shuffled;
    with ``new_links``, each observation's count of links no earlier copy of its page held."""
    floors: dict[tuple[int, int], int] = {}
    fresh: dict[tuple[int, int], int] = {}
    by_page: dict[int, list[Obs]] = {}
    for o in observations:
        by_page.setdefault(o.page, []).append(o)
    for page_obs in by_page.values():
        page_obs.sort(key=lambda o: o.index)
        held: frozenset[str] = frozenset()
        for o, floor in zip(page_obs, link_floors([o.links for o in page_obs]), strict=True):
            floors[(o.page, o.index)] = int(floor)
            fresh[(o.page, o.index)] = len(o.links - held)
            held |= o.links
    rows = list(observations)
    rows = [rows[i] for i in np.random.default_rng(seed).permutation(len(rows))]
    return ObservationTable(
        site=np.array([o.site for o in rows], dtype=np.int64),
        page=np.array([o.page for o in rows], dtype=np.int64),
        time=np.array([o.time for o in rows], dtype=np.float64),
        page_index=np.array([o.index for o in rows], dtype=np.int64),
        link_floor=np.array([floors[(o.page, o.index)] for o in rows], dtype=np.int64),
        n_sites=n_sites,
        new_links=(
            np.array([fresh[(o.page, o.index)] for o in rows], dtype=np.int64)
            if new_links
            else None
        ),
    )


def random_history(
    rng: np.random.Generator, n_sites: int, horizon: float, max_pages: int, max_obs: int
) -> list[Obs]:
    """Small random histories on a half-day grid, so that observations of different pages share
    instants and fall exactly on window boundaries. Links are added, removed, re-added after
    removal, and sometimes a capture holds no links at all."""
    grid = np.arange(0.0, horizon, 0.5)
    observations: list[Obs] = []
    page_id = 0
    fresh = 0
    for site in range(n_sites):
        for _ in range(int(rng.integers(1, max_pages + 1))):
            n_obs = int(rng.integers(0, max_obs + 1))
            times = np.sort(rng.choice(grid, size=n_obs, replace=False))
            current: set[str] = set()
            ever: list[str] = []
            for index, t in enumerate(times.tolist()):
                roll = rng.random()
                if roll < 0.3 or not ever:
                    fresh += 1
                    current.add(f"l{fresh}")
                    ever.append(f"l{fresh}")
                elif roll < 0.45:
                    current.add(ever[int(rng.integers(0, len(ever)))])  # maybe re-added
                elif roll < 0.6 and current:
                    current.discard(sorted(current)[int(rng.integers(0, len(current)))])
                links = frozenset() if rng.random() < 0.08 else frozenset(current)
                observations.append(Obs(site, page_id, float(t), index, links))
            page_id += 1
    return observations


# --------------------------------------------------------------------------------------------
# The slow reference, straight from the definitions
# --------------------------------------------------------------------------------------------


@dataclass
class SlowSite:
    rate: float
    tau: float
    probability: float
    first_update: float  # +inf when not positive
    scores: dict[str, float]
    alpha: float = math.nan  # the posterior Gamma(α, β), its p
    beta: float = math.nan
    posterior: float = math.nan


def slow_evidence(
    observations: list[Obs], n_sites: int, start: float, t: float
) -> dict[int, tuple[list[float], list[bool]]]:
    """Per eligible site: its own full window timeline (rules 3 and 4 by set arithmetic)."""
    result: dict[int, tuple[list[float], list[bool]]] = {}
    for site in range(n_sites):
        pages: dict[int, list[Obs]] = {}
        for o in observations:
            if o.site == site:
                pages.setdefault(o.page, []).append(o)
        timelines = [[(o.time, o.links) for o in sorted(obs, key=lambda o: o.index)]
                     for obs in pages.values()]  # fmt: skip
        times, flags = slow_window_timeline(timelines, start, t)
        if times:
            result[site] = (times, flags)
    return result


def slow_prior(observations: list[Obs], n_sites: int, t: float, weeks: int) -> GammaPrior:
    """The prior at t: ``fit_interval_prior`` on every eligible site's evidence in
    [t − 7·weeks, t], each site's timeline read by ``interval_evidence`` on its own."""
    timelines = slow_evidence(observations, n_sites, t - 7.0 * weeks, t).values()
    times = [x for site_times, _ in timelines for x in site_times]
    flags = [f for _, site_flags in timelines for f in site_flags]
    offsets = np.cumsum([0, *(len(site_times) for site_times, _ in timelines)])
    return fit_interval_prior(interval_evidence(times, flags, offsets))


def slow_window(
    observations: list[Obs],
    n_sites: int,
    t: float,
    w: int,
    e: float,
    method: str,
    prior: GammaPrior | None = None,
) -> dict[int, SlowSite]:
    """Every eligible site at (t, w): rule 3 by set arithmetic in the window, rule 4, the
    estimators' scalar `estimate`, rule 7, positives over the full history, GP4C scorers; the
    posterior under ``prior`` (default: fitted on 12-week windows ending at t)."""
    start = t - 7.0 * w
    if prior is None:
        prior = slow_prior(observations, n_sites, t, 12)
    evidence = slow_evidence(observations, n_sites, start, t)
    result: dict[int, SlowSite] = {}
    for site in range(n_sites):
        pages: dict[int, list[Obs]] = {}
        for o in observations:
            if o.site == site:
                pages.setdefault(o.page, []).append(o)
        for page_obs in pages.values():
            page_obs.sort(key=lambda o: o.index)
        window: list[tuple[float, bool]] = []
        first_update = math.inf
        for page_obs in pages.values():
            held: set[str] = set()
            in_window = [o for o in page_obs if start <= o.time <= t]
            for q, o in enumerate(in_window):  # rule 3, inside the window
                window.append((o.time, q > 0 and bool(o.links - held)))
                held |= o.links
            ever: set[str] = set()
            for q, o in enumerate(page_obs):  # positives: new for the page's whole history
                if q > 0 and o.links - ever and t < o.time <= t + e:
                    first_update = min(first_update, o.time)
                ever |= o.links
        if not window:
            continue
        window.sort(key=lambda x: x[0])  # rule 4 (ties: any order, instants merge)
        est = estimate([x[0] for x in window], [x[1] for x in window], method)
        p = 0.0 if math.isnan(est.rate) else change_probability(est.rate, est.tau, t, e)

        instants = sorted({x[0] for x in window})
        changed = [any(f for tm, f in window if tm == i) for i in instants]
        n = len(instants) - 1
        flags = changed[1:]  # I_1 … I_n
        x_count = sum(flags)
        last = instants[-1]
        elapsed = t + e - last
        if n == 0:
            cg = nad = sad = aad = gad = 0.0
        else:
            r_hat = -math.log((n - x_count + 0.5) / (n + 0.5))
            cg = r_hat * n / (last - instants[0])
            nad = x_count / n
            sad = float(flags[-1])
            aad = sum(2 * i / (n * (n + 1)) for i, f in enumerate(flags, 1) if f)
            gad = float(
                sum((Fraction(2 ** (i - 1), 2**n - 1) for i, f in enumerate(flags, 1) if f), 0)
            )
        site_times, site_flags = evidence[site]
        copy = max(site_times)
        assert copy == last
        alpha, beta = interval_posterior(
            prior, interval_evidence(site_times, site_flags, [0, len(site_times)])
        )
        p_post = float(posterior_probabilities(alpha, beta, [copy], t, e)[0])
        result[site] = SlowSite(
            rate=est.rate,
            tau=est.tau,
            probability=p,
            first_update=first_update,
            alpha=float(alpha[0]),
            beta=float(beta[0]),
            posterior=p_post,
            scores={
                "hacs": p,
                "posterior": float(posterior_exposure(alpha, beta, [t + e - copy])[0]),
                "last_obs": t - est.tau,
                "cho_garcia_molina": cg * elapsed,
                "nad": nad * elapsed,
                "sad": sad * elapsed,
                "aad": aad * elapsed,
                "gad": gad * elapsed,
                "age": t - last,
            },
        )
    return result


def slow_ranking(sites: dict[int, SlowSite], model: str) -> list[int]:
    """Score descending; HACS then older τ first; then site index."""
    return sorted(
        sites,
        key=lambda u: (
            -sites[u].scores[model],
            sites[u].tau if model == "hacs" else 0.0,
            u,
        ),
    )


def slow_weighted_p_at_k(model: list[int], expected: list[int]) -> float:
    """Σ_K w_K |top-K(model) ∩ top-K(expected)| / K, w_K ∝ 1/log2(K + 1), Σ w_K = 1."""
    weights = [1 / math.log2(k + 1) for k in range(1, len(expected) + 1)]
    total = sum(weights)
    return (
        sum(w * len(set(model[:k]) & set(expected[:k])) / k for k, w in enumerate(weights, 1))
        / total
    )


def slow_discount(i: int) -> float:
    """Järvelin–Kekäläinen with base e: ranks below the base undiscounted, then 1/ln(i)."""
    return 1.0 if i < math.e else 1.0 / math.log(i)


def slow_budget(eligible: int, fraction: float) -> int:
    return min(eligible, max(1, math.floor(fraction * eligible + 0.5)))


@dataclass
class SlowPoint:
    eligible: int
    positives: int
    selected: list[int]
    tp: list[int]
    posterior_selected: list[int]
    posterior_tp: list[int]
    k: int
    p_at_k: dict[str, float | None]
    ndcg: dict[str, float | None]
    change_rate: dict[str, float | None]
    hits: dict[str, float]


def slow_point(sites: dict[int, SlowSite], thetas: tuple[float, ...], fraction: float) -> SlowPoint:
    positives = [u for u in sites if math.isfinite(sites[u].first_update)]
    pos_set = set(positives)
    expected = sorted(positives, key=lambda u: (sites[u].first_update, u))
    selected = [sum(sites[u].probability >= th for u in sites) for th in thetas]
    tp = [sum(sites[u].probability >= th for u in positives) for th in thetas]
    post_selected = [sum(sites[u].posterior >= th for u in sites) for th in thetas]
    post_tp = [sum(sites[u].posterior >= th for u in positives) for th in thetas]
    k = slow_budget(len(sites), fraction) if sites else 0
    p_at_k: dict[str, float | None] = {}
    ndcg: dict[str, float | None] = {}
    change_rate: dict[str, float | None] = {}
    hits: dict[str, float] = {}
    idcg = sum(slow_discount(i) for i in range(1, min(k, len(positives)) + 1))
    for model in RANKING_MODELS:
        ranking = slow_ranking(sites, model)
        top = ranking[:k]
        hits[model] = float(sum(u in pos_set for u in top))
        change_rate[model] = hits[model] / k if sites else None
        if positives:
            p_at_k[model] = slow_weighted_p_at_k(ranking, expected)
            dcg = sum(slow_discount(i) for i, u in enumerate(top, 1) if u in pos_set)
            ndcg[model] = dcg / idcg
        else:
            p_at_k[model] = ndcg[model] = None
    return SlowPoint(
        len(sites), len(positives), selected, tp, post_selected, post_tp, k, p_at_k, ndcg,
        change_rate, hits,
    )  # fmt: skip


def prf(tp: float, selected: float, positives: float) -> tuple[float | None, ...]:
    """P, R and F1 = 2TP/(2TP + FP + FN) from counts; None where the denominator is 0."""
    return (
        tp / selected if selected else None,
        tp / positives if positives else None,
        2 * tp / (selected + positives) if selected + positives else None,
    )


def mean_defined(values: list[float | None]) -> float | None:
    defined = [v for v in values if v is not None]
    return sum(defined) / len(defined) if defined else None


# --------------------------------------------------------------------------------------------
# Hand-worked example, end to end
# --------------------------------------------------------------------------------------------


def hand_table() -> ObservationTable:
    a, b, c, x, y, z = (frozenset({s}) for s in "abcxyz")
    observations = [
        Obs(0, 0, 0.0, 0, a),
        Obs(0, 0, 3.0, 1, a | b),  # b is new: an update in [0, 7]
        Obs(0, 0, 10.0, 2, a | b),
        Obs(0, 0, 12.0, 3, a | b | c),  # c is new: site 0 changes in (7, 14]
        Obs(1, 1, 5.0, 0, x),
        Obs(1, 1, 6.0, 1, x),
        Obs(1, 1, 13.0, 2, x),
        Obs(2, 2, 1.0, 0, y),
        Obs(2, 2, 8.0, 1, y | z),  # z is new: site 2 changes in (7, 14]
        Obs(3, 3, 20.0, 0, y),  # no observation in [0, 7]: not eligible
    ]
    return table_of(observations, n_sites=4)


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


def test_hand_worked_evaluation() -> None:
    result = evaluate({"homepage": hand_table()}, start=7.0, end=7.0, w_weeks=[1], details=True)
    assert result["parameters"]["reference_points"] == 1
    (point,) = result["points"]
    assert (point["eligible"], point["positives"], point["budget_k"]) == (3, 2, 1)
    # p = (0.98, 0, 0): θ = 0 selects all three, 0 < θ < 1 selects site 0, θ = 1 none.
    assert point["hacs_selected"] == [3] + [1] * 9 + [0]
    assert point["hacs_tp"] == [2] + [1] * 9 + [0]

    curves = {(r["average"], r["theta"], r["model"]): r for r in result["curves"]}
    assert curves[("micro", 0.0, "hacs")]["f1"] == pytest.approx(0.8)
    assert curves[("micro", 0.5, "hacs")]["f1"] == pytest.approx(2 / 3)
    assert curves[("micro", 1.0, "hacs")]["precision"] is None
    assert curves[("micro", 1.0, "hacs")]["recall"] == 0.0
    random = curves[("micro", 0.5, "random")]  # one of three at random, two positives
    assert random["tp"] == pytest.approx(2 / 3) and random["fp"] == pytest.approx(1 / 3)
    assert random["precision"] == pytest.approx(2 / 3) and random["recall"] == pytest.approx(1 / 3)
    brute = curves[("micro", 0.5, "brute_force")]
    assert (brute["tp"], brute["fp"], brute["fn"], brute["tn"]) == (2, 1, 0, 0)

    table = {(r["average"], r["model"]): r for r in result["table"]}
    assert table[("micro", "hacs")]["theta_hat"] == 0.0  # F1 0.8 beats 2/3
    assert table[("micro", "random")]["theta_hat"] == 0.0
    assert table[("micro", "random")]["f1"] == pytest.approx(0.8)

    # Evaluation 2: expected ranking (site 2 at day 8, site 0 at day 12).
    # HACS ranks 0, then p = 0 by older τ: 2 (τ = 1), 1 (τ = 5): P@1 = 0, P@2 = 1.
    w1, w2 = 1.0, 1 / math.log2(3)
    pak = {r["model"]: r["weighted_p_at_k"] for r in result["pak"]}
    assert pak["hacs"] == pytest.approx(w2 / (w1 + w2))
    assert pak["last_obs"] == pytest.approx(1.0)  # t − τ: 6 (site 2), 4 (site 0), 2
    assert pak["random"] == pytest.approx((w1 * 1 / 3 + w2 * 2 / 3) / (w1 + w2))
    budget = {r["model"]: r for r in result["budget"]}
    assert budget["hacs"]["change_rate_at_k"] == 1.0 and budget["hacs"]["ndcg_at_k"] == 1.0
    assert budget["random"]["change_rate_at_k"] == pytest.approx(2 / 3)
    assert budget["random"]["ndcg_at_k"] == pytest.approx(2 / 3)
    assert budget["age"]["change_rate_at_k"] == 1.0  # site 2, last visited longest ago
    assert budget["sad"]["change_rate_at_k"] == 1.0  # site 0's last access was an update


def test_an_update_before_the_window_does_not_flag_inside_it() -> None:
    """Rule 3 is window-relative: a link first seen before the window is new again inside it only
    when no earlier observation *in the window* held it; re-adding within the window is not."""
    a, b = frozenset("a"), frozenset("b")
    observations = [
        Obs(0, 0, 1.0, 0, a),
        Obs(0, 0, 2.0, 1, a | b),  # update, before the window [7, 14]
        Obs(0, 0, 8.0, 2, a),  # baseline of the window
        Obs(0, 0, 9.0, 3, a | b),  # b: held before the window only → an update in it
        Obs(0, 0, 10.0, 4, a),
        Obs(0, 0, 11.0, 5, a | b),  # b re-added, held at 9.0 in the window → not an update
    ]
    scores = window_scores(table_of(observations, 1), t=14.0, w_weeks=1)
    assert scores.tau[0] == 9.0
    assert scores.scores["nad"][0] == pytest.approx(1 / 3 * (21 - 11))
    # Over the full history b is not new at 9.0 or 11.0: no positive anywhere after day 2.
    assert not window_scores(table_of(observations, 1), t=7.0, w_weeks=1).positive.any()


def test_a_pages_first_observation_is_not_a_positive() -> None:
    observations = [Obs(0, 0, 1.0, 0, frozenset("a")), Obs(0, 1, 9.0, 0, frozenset("b"))]
    scores = window_scores(table_of(observations, 1), t=7.0, w_weeks=1)
    assert not scores.positive.any()


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


def slow_evaluation(
    observations: list[Obs],
    n_sites: int,
    *,
    start: float,
    end: float,
    w_weeks: list[int],
    method: str,
    fraction: float,
) -> dict[int, list[SlowPoint]]:
    ts: list[float] = []
    r = 0
    while start + r * 7.0 <= end:
        ts.append(start + r * 7.0)
        r += 1
    return {
        w: [
            slow_point(
                slow_window(observations, n_sites, t, w, 7.0, method), DEFAULT_THETAS, fraction
            )
            for t in ts
        ]
        for w in w_weeks
    }


@pytest.mark.parametrize(
    ("seed", "method", "fraction"),
    [(0, "observed", 0.05), (1, "observed", 0.3), (2, "interpolated", 0.2), (3, "observed", 1.0)],
)
def test_evaluate_matches_the_slow_reference(seed: int, method: str, fraction: float) -> None:
    rng = np.random.default_rng(100 + seed)
    n_sites = 12
    observations = random_history(rng, n_sites=n_sites, horizon=84.0, max_pages=3, max_obs=16)
    homepage = [o for o in observations if o.index >= 0 and o.page % 3 == 0]
    levels = {"homepage": homepage, "website": observations}
    w_weeks = [1, 2, 4]
    result = evaluate(
        {name: table_of(obs, n_sites, seed) for name, obs in levels.items()},
        start=7.0,
        end=80.0,
        w_weeks=w_weeks,
        method=method,
        budget_fraction=fraction,
        details=True,
    )
    points = {(p["level"], p["w_weeks"], p["t"]): p for p in result["points"]}
    curves = {
        (r["level"], r["average"], r["w_weeks"], r["theta"], r["model"]): r
        for r in result["curves"]
    }
    table = {(r["level"], r["average"], r["w_weeks"], r["model"]): r for r in result["table"]}
    pak = {(r["level"], r["w_weeks"], r["model"]): r for r in result["pak"]}
    budget = {(r["level"], r["w_weeks"], r["model"]): r for r in result["budget"]}
    ts = reference_points(7.0, 80.0).tolist()
    assert ts == [7.0 + 7 * r for r in range(11)]

    for level, obs in levels.items():
        slow = slow_evaluation(
            obs, n_sites, start=7.0, end=80.0, w_weeks=w_weeks, method=method, fraction=fraction
        )
        for w, slow_points in slow.items():
            # Per reference point: U, Pos, selection sets per θ, ranks and budget metrics.
            for t, ref in zip(ts, slow_points, strict=True):
                got = points[(level, w, t)]
                where = (level, w, t)
                assert (got["eligible"], got["positives"]) == (ref.eligible, ref.positives), where
                assert got["hacs_selected"] == ref.selected, where
                assert got["hacs_tp"] == ref.tp, where
                assert got["posterior_selected"] == ref.posterior_selected, where
                assert got["posterior_tp"] == ref.posterior_tp, where
                assert got["budget_k"] == ref.k, where
                for model in RANKING_MODELS:
                    m = got["models"][model]
                    assert close(m["weighted_p_at_k"], ref.p_at_k[model]), (where, model)
                    assert close(m["ndcg_at_k"], ref.ndcg[model]), (where, model)
                    assert close(m["change_rate_at_k"], ref.change_rate[model]), (where, model)
                    assert m["hits_at_k"] == ref.hits[model], (where, model)

            # Micro and macro averaging, every θ and model; θ̂ with ties to the smaller θ.
            f1_by_average: dict[str, list[float | None]] = {}
            for j, theta in enumerate(DEFAULT_THETAS):
                per_model: dict[str, list[tuple[float, float, float]]] = {
                    "hacs": [(p.tp[j], p.selected[j], p.positives) for p in slow_points],
                    "posterior": [
                        (p.posterior_tp[j], p.posterior_selected[j], p.positives)
                        for p in slow_points
                    ],
                    "random": [
                        (
                            p.selected[j] * p.positives / p.eligible if p.eligible else 0.0,
                            p.selected[j],
                            p.positives,
                        )
                        for p in slow_points
                    ],
                    "brute_force": [(p.positives, p.eligible, p.positives) for p in slow_points],
                }
                for model, rows in per_model.items():
                    tp = sum(r[0] for r in rows)
                    sel = sum(r[1] for r in rows)
                    pos = sum(r[2] for r in rows)
                    micro = prf(tp, sel, pos)
                    per_t = [prf(*r) for r in rows]
                    macro = tuple(mean_defined([x[i] for x in per_t]) for i in range(3))
                    for average, expected in (("micro", micro), ("macro", macro)):
                        row = curves[(level, average, w, theta, model)]
                        got_prf = (row["precision"], row["recall"], row["f1"])
                        assert all(close(g, x) for g, x in zip(got_prf, expected, strict=True)), (
                            level,
                            average,
                            w,
                            theta,
                            model,
                            got_prf,
                            expected,
                        )
                        assert close(row["tp"], tp) and close(row["fp"], sel - tp)
                        assert close(row["fn"], pos - tp)
                        if model in ("hacs", "posterior"):
                            f1_by_average.setdefault(f"{average} {model}", []).append(expected[2])
            for key, f1s in f1_by_average.items():
                average, selecting = key.split()
                defined = [(f, j) for j, f in enumerate(f1s) if f is not None]
                best = max(defined, key=lambda x: (x[0], -x[1]))[1] if defined else None
                # θ̂: HACS's for HACS, Random and Brute Force; the posterior's own for it.
                models = (
                    ("posterior",)
                    if selecting == "posterior"
                    else ("hacs", "random", "brute_force")
                )
                for model in models:
                    row = table[(level, average, w, model)]
                    if best is None:
                        assert row["theta_hat"] is None
                        continue
                    assert row["theta_hat"] == DEFAULT_THETAS[best]
                    curve = curves[(level, average, w, DEFAULT_THETAS[best], model)]
                    assert row["f1"] == curve["f1"] and row["precision"] == curve["precision"]

            # Means over t of the ranking metrics.
            for model in RANKING_MODELS:
                assert close(
                    pak[(level, w, model)]["weighted_p_at_k"],
                    mean_defined([p.p_at_k[model] for p in slow_points]),
                )
                row = budget[(level, w, model)]
                assert close(row["ndcg_at_k"], mean_defined([p.ndcg[model] for p in slow_points]))
                assert close(
                    row["change_rate_at_k"],
                    mean_defined([p.change_rate[model] for p in slow_points]),
                )
                hits = sum(p.hits[model] for p in slow_points)
                ks = sum(p.k for p in slow_points)
                pos = sum(p.positives for p in slow_points)
                assert row["tp"] == hits and row["fp"] == ks - hits and row["fn"] == pos - hits
                assert all(
                    close(g, x)
                    for g, x in zip(
                        (row["precision"], row["recall"], row["f1"]),
                        prf(hits, ks, pos),
                        strict=True,
                    )
                )


def test_a_history_loaded_from_a_date_on_gives_the_same_windows() -> None:
    """Page indices and link floors count the full history; a table holding only the
    observations from some date on (indices starting above 0, floors pointing before it) gives
    the same results for windows that start on or after that date."""
    rng = np.random.default_rng(3)
    observations = random_history(rng, n_sites=8, horizon=90.0, max_pages=3, max_obs=18)
    full = table_of(observations, 8)
    keep = full.time >= 30.0
    recent = ObservationTable(
        site=full.site[keep],
        page=full.page[keep],
        time=full.time[keep],
        page_index=full.page_index[keep],
        link_floor=full.link_floor[keep],
        n_sites=8,
    )
    assert recent.page_index.min() > 0
    for t, w in ((44.0, 2), (51.0, 3), (60.5, 4), (90.0, 1)):
        # The posterior's prior from the same windows (by default it looks 12 weeks back).
        a = window_scores(full, t=t, w_weeks=w, prior_weeks=w)
        b = window_scores(recent, t=t, w_weeks=w, prior_weeks=w)
        for name in ("site", "rate", "tau", "probability", "instants", "first_update"):
            np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
        for model in RANKING_MODELS:
            np.testing.assert_array_equal(a.scores[model], b.scores[model])


@pytest.mark.parametrize("seed", range(8))
def test_the_engines_reading_of_rule_3_flags_what_is_window_update_flags(seed: int) -> None:
    """Rule 3 has one implementation, hacs.updates.is_window_update; the engine reads it as an
    interval (A, B] of window starts s (hacs.evaluation.table). In random windows [s, t] of
    random small tables, also ones loaded from a date on, both flag the same observations."""
    rng = np.random.default_rng(seed)
    observations = random_history(rng, n_sites=5, horizon=40.0, max_pages=3, max_obs=12)
    full = table_of(observations, 5, seed=seed)
    keep = full.time >= 10.0
    recent = ObservationTable(
        site=full.site[keep],
        page=full.page[keep],
        time=full.time[keep],
        page_index=full.page_index[keep],
        link_floor=full.link_floor[keep],
        n_sites=5,
    )
    bounds = np.arange(-0.5, 41.0, 0.25)  # on the observations' half-day grid and between it
    flagged = 0
    for table in (full, recent):
        for _ in range(60):
            s, t = np.sort(rng.choice(bounds, size=2))
            inside = (table.time >= s) & (table.time <= t)
            page, index = table.page[inside], table.page_index[inside]
            floor = table.link_floor[inside]
            by_interval = (table._update_after[inside] < s) & (s <= table._update_until[inside])
            np.testing.assert_array_equal(by_interval, window_update_flags(page, index, floor))
            first: dict[int, int] = {}
            for p, i in zip(page.tolist(), index.tolist(), strict=True):
                first[p] = min(first.get(p, i), i)
            firsts = [first[p] for p in page.tolist()]
            np.testing.assert_array_equal(by_interval, is_window_update(index, floor, firsts))
            flagged += int(by_interval.sum())
    assert flagged > 0  # not vacuous


def test_theta_hat_takes_the_smaller_theta_on_ties() -> None:
    # Every site has p = 0 or is selected by every θ < 1 alike: F1 is the same for θ 0.1 … 0.9.
    a, b = frozenset("a"), frozenset("b")
    observations = [
        Obs(0, 0, 0.0, 0, a),
        Obs(0, 0, 1.0, 1, a | b),  # m = n = 1 in one day: λ = log 3, p = 1 − 3^−13
        Obs(0, 0, 9.0, 2, a | b | frozenset("c")),  # positive
        Obs(1, 1, 0.0, 0, a),
        Obs(1, 1, 2.0, 1, a),  # λ = 0
    ]
    result = evaluate({"homepage": table_of(observations, 2)}, start=7.0, end=7.0, w_weeks=[1])
    hacs = [r for r in result["curves"] if r["model"] == "hacs" and r["average"] == "micro"]
    f1 = [r["f1"] for r in hacs]
    assert f1[0] == pytest.approx(2 / 3)  # θ = 0: both selected, one positive
    assert f1[1] == f1[5] == 1.0  # θ = 0.1 … : site 0 only
    table = {(r["average"], r["model"]): r for r in result["table"]}
    assert table[("micro", "hacs")]["theta_hat"] == 0.1
    assert table[("macro", "hacs")]["theta_hat"] == 0.1


def test_f1_is_undefined_only_without_selections_and_positives() -> None:
    # No positives at all: R undefined everywhere; P is 0 where something is selected; F1 is 0
    # there (count form 2TP/(2TP + FP + FN)) and undefined at θ = 1 (nothing selected either).
    a, b = frozenset("a"), frozenset("b")
    observations = [Obs(0, 0, 0.0, 0, a), Obs(0, 0, 1.0, 1, a | b), Obs(0, 0, 9.0, 2, a)]
    result = evaluate({"homepage": table_of(observations, 1)}, start=7.0, end=7.0, w_weeks=[1])
    rows = {(r["average"], r["theta"]): r for r in result["curves"] if r["model"] == "hacs"}
    for average in ("micro", "macro"):
        assert rows[(average, 0.5)]["precision"] == 0.0 and rows[(average, 0.5)]["f1"] == 0.0
        assert rows[(average, 0.5)]["recall"] is None
        assert rows[(average, 1.0)]["f1"] is None and rows[(average, 1.0)]["precision"] is None
    pak = {r["model"]: r for r in result["pak"]}
    assert pak["hacs"]["weighted_p_at_k"] is None and pak["hacs"]["points"] == 0


# --------------------------------------------------------------------------------------------
# Random against its exact expectation
# --------------------------------------------------------------------------------------------


def test_random_expectations_match_simulation() -> None:
    rng = np.random.default_rng(7)
    n_sites = 40
    observations = random_history(rng, n_sites=n_sites, horizon=84.0, max_pages=3, max_obs=16)
    table = table_of(observations, n_sites)
    result = evaluate(
        {"website": table}, start=14.0, end=70.0, w_weeks=[2], budget_fraction=0.2, details=True
    )
    windows = [
        slow_window(observations, n_sites, t, 2, 7.0, "observed")
        for t in reference_points(14.0, 70.0).tolist()
    ]
    draws = 4000
    sim = np.random.default_rng(11)
    theta_j = 3  # θ = 0.3
    tp_sum = 0.0
    precision: list[list[float]] = []
    recall: list[list[float]] = []
    pak: list[list[float]] = []
    ndcg: list[list[float]] = []
    rate: list[list[float]] = []
    for sites in windows:
        universe = sorted(sites)
        positives = [u for u in universe if math.isfinite(sites[u].first_update)]
        pos_set = set(positives)
        expected = sorted(positives, key=lambda u: (sites[u].first_update, u))
        d = sum(sites[u].probability >= DEFAULT_THETAS[theta_j] for u in universe)
        k = slow_budget(len(universe), 0.2) if universe else 0
        idcg = sum(slow_discount(i) for i in range(1, min(k, len(positives)) + 1))
        ps, rs, pks, ns, cs = [], [], [], [], []
        for _ in range(draws):
            order = [universe[i] for i in sim.permutation(len(universe))]
            tp = sum(u in pos_set for u in order[:d])
            tp_sum += tp / draws
            if d:
                ps.append(tp / d)
            if positives:
                rs.append(tp / len(positives))
                pks.append(slow_weighted_p_at_k(order, expected))
                ns.append(
                    sum(slow_discount(i) for i, u in enumerate(order[:k], 1) if u in pos_set) / idcg
                )
            if universe:
                cs.append(sum(u in pos_set for u in order[:k]) / k)
        precision.append(ps)
        recall.append(rs)
        pak.append(pks)
        ndcg.append(ns)
        rate.append(cs)

    def mean_of_means(samples: list[list[float]]) -> float:
        return float(np.mean([np.mean(s) for s in samples if s]))

    curves = {(r["average"], r["theta"]): r for r in result["curves"] if r["model"] == "random"}
    micro = curves[("micro", DEFAULT_THETAS[theta_j])]
    assert micro["tp"] == pytest.approx(tp_sum, rel=0.03)
    macro = curves[("macro", DEFAULT_THETAS[theta_j])]
    assert macro["precision"] == pytest.approx(mean_of_means(precision), rel=0.03)
    assert macro["recall"] == pytest.approx(mean_of_means(recall), rel=0.03)
    (pak_row,) = [r for r in result["pak"] if r["model"] == "random"]
    assert pak_row["weighted_p_at_k"] == pytest.approx(mean_of_means(pak), rel=0.03)
    (budget_row,) = [r for r in result["budget"] if r["model"] == "random"]
    assert budget_row["ndcg_at_k"] == pytest.approx(mean_of_means(ndcg), rel=0.03)
    assert budget_row["change_rate_at_k"] == pytest.approx(mean_of_means(rate), rel=0.03)


# --------------------------------------------------------------------------------------------
# Input validation, ordering, output shape
# --------------------------------------------------------------------------------------------


def columns(**overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "site": [0, 0, 1],
        "page": [0, 0, 1],
        "time": [1.0, 2.0, 3.0],
        "page_index": [0, 1, 0],
        "link_floor": [-1, 0, -1],
    }
    base.update(overrides)
    return base


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"site": [0, 0]}, "site must have one entry per observation|one entry"),
        ({"time": [1.0, float("nan"), 3.0]}, "time must be finite"),
        ({"time": [1.0, -2.0, 3.0]}, "must not be negative"),
        ({"site": [0, 0, -1]}, r"site\[2\] = -1 is below 0"),
        ({"page_index": [0, 2, 0]}, "consecutive"),
        ({"page_index": [0, 0, 0]}, "two observations with page_index 0"),
        ({"time": [2.0, 1.0, 3.0]}, "must follow time order"),
        ({"link_floor": [-1, 2, -1]}, "exceeds page_index"),
        ({"link_floor": [-2, 0, -1]}, "is below -1"),
        ({"page": [0, 1, 1], "page_index": [0, 0, 1]}, "belongs to two sites"),
        ({"page": [0.5, 0, 1]}, "page must hold integers"),
        ({"n_sites": 1}, "n_sites = 1 but site holds index 1"),
    ],
)
def test_bad_tables_are_rejected_with_a_clear_message(
    overrides: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        ObservationTable(**columns(**overrides))


def test_the_table_copies_and_freezes_its_arrays() -> None:
    time = np.array([1.0, 2.0, 3.0])
    table = ObservationTable(**columns(time=time))
    time[0] = 99.0
    assert table.time[0] == 1.0
    with pytest.raises(ValueError):
        table.time[0] = 5.0
    assert (table.size, table.site_count) == (3, 2)


def test_bad_arguments_are_rejected() -> None:
    tables = {"homepage": ObservationTable(**columns())}
    with pytest.raises(ValueError, match="end must not be before start"):
        evaluate(tables, start=10.0, end=5.0)
    with pytest.raises(ValueError, match="w_weeks"):
        evaluate(tables, start=0.0, end=7.0, w_weeks=[0])
    with pytest.raises(ValueError, match="thetas"):
        evaluate(tables, start=0.0, end=7.0, thetas=[1.5])
    with pytest.raises(ValueError, match="method"):
        evaluate(tables, start=0.0, end=7.0, method="guess")
    with pytest.raises(ValueError, match="budget_fraction"):
        evaluate(tables, start=0.0, end=7.0, budget_fraction=0.0)
    with pytest.raises(ValueError, match="at least one level"):
        evaluate({}, start=0.0, end=7.0)
    with pytest.raises(ValueError, match="prior_every"):
        evaluate(tables, start=0.0, end=7.0, prior_every=0)
    with pytest.raises(ValueError, match="prior_weeks"):
        evaluate(tables, start=0.0, end=7.0, prior_weeks=0)


def test_the_result_does_not_depend_on_row_order_and_is_json() -> None:
    import json

    rng = np.random.default_rng(5)
    observations = random_history(rng, n_sites=6, horizon=60.0, max_pages=3, max_obs=12)
    calls: list[float] = []
    results = [
        evaluate(
            {"website": table_of(observations, 6, seed)},
            start=14.0,
            end=56.0,
            w_weeks=[1, 3],
            progress=calls.append,
        )
        for seed in (1, 2)
    ]
    assert json.dumps(results[0], allow_nan=False) == json.dumps(results[1], allow_nan=False)
    assert calls == [0.5, 1.0, 0.5, 1.0]
    models = {r["model"] for r in results[0]["pak"]}
    assert models == {*RANKING_MODELS, "random"}
    assert len(results[0]["curves"]) == 2 * 2 * 11 * len(
        SELECTION_MODELS
    )  # average × w × θ × model


def test_reference_points_run_from_start_to_end_every_step() -> None:
    assert reference_points(0.0, 14.0).tolist() == [0.0, 7.0, 14.0]
    assert reference_points(0.0, 13.9).tolist() == [0.0, 7.0]
    assert reference_points(16587.0, 17683.0).size == 157  # 2015-06-01 … 2018-06-01


def test_importing_the_evaluation_core_does_not_import_django() -> None:
    code = (
        "import sys\nimport hacs.evaluation\n"
        "loaded = sorted(m for m in sys.modules if m == 'django' or m.startswith('django.'))\n"
        "assert not loaded, loaded\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=PROJECT, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr


def test_empty_levels_give_undefined_metrics() -> None:
    empty = ObservationTable(
        site=np.zeros(0, np.int64),
        page=np.zeros(0, np.int64),
        time=np.zeros(0),
        page_index=np.zeros(0, np.int64),
        link_floor=np.zeros(0, np.int64),
        n_sites=3,
    )
    result = evaluate({"homepage": empty}, start=7.0, end=21.0, w_weeks=[1, 2], details=True)
    assert all(p["eligible"] == 0 for p in result["points"])
    assert all(r["f1"] is None and r["tp"] == 0 for r in result["curves"] if r["model"] != "random")
    assert all(r["theta_hat"] is None for r in result["table"])
    assert all(r["weighted_p_at_k"] is None for r in result["pak"])
    assert all(r["ndcg_at_k"] is None and r["change_rate_at_k"] is None for r in result["budget"])
    assert window_scores(empty, t=7.0, w_weeks=1).site.size == 0


# --------------------------------------------------------------------------------------------
# Figure 6
# --------------------------------------------------------------------------------------------


def test_interval_distribution_uses_the_interpolated_update_midpoints() -> None:
    # One site, one page: observations at 0, 10, 20, 30, 40, 50 days; updates at 20, 30 and 50
    # (brand-new links). Midpoints 15, 25 and 45: intervals 10 and 20 days.
    times = [0.0, 10.0, 20.0, 30.0, 40.0, 50.0]
    floors = [-1, 0, -1, -1, 3, -1]
    table = ObservationTable(
        site=[0] * 6, page=[0] * 6, time=times, page_index=list(range(6)), link_floor=floors
    )
    [group] = interval_distribution(table, start=0.0, end=60.0)
    assert group["sites"] == 1 and group["intervals"] == 2
    edges = np.array(group["d_edges"])
    widths = np.diff(edges)
    observed = np.array(group["observed"]) * widths  # back to probabilities per bin
    assert observed.sum() == pytest.approx(1.0)
    for d in (10.0, 20.0):
        k = int(np.searchsorted(edges, d, side="right")) - 1
        assert observed[k] == pytest.approx(0.5)
    assert (np.array(group["expected"]) * widths).sum() == pytest.approx(1.0)
    assert group["low"] <= group["mean_interval"] < group["high"]


def test_poisson_updates_follow_the_expectation() -> None:
    """Seeded simulation: sites changing as Poisson processes, observed daily, give interval
    histograms close to the exponential expectation (Fig. 6's claim, on data where it holds)."""
    rng = np.random.default_rng(7)
    looks = np.arange(0.0, 1000.0, 0.25)  # four observations a day
    site, time, floor, index = [], [], [], []
    for s in range(300):
        changes = np.cumsum(rng.exponential(40.0, 60))
        seen = np.searchsorted(changes, looks, side="right")  # changes up to each look
        changed = np.r_[False, seen[1:] > seen[:-1]]
        k = np.arange(looks.size)
        site.extend([s] * looks.size)
        time.extend(looks.tolist())
        index.extend(k.tolist())
        floor.extend(np.where(changed | (k == 0), -1, k - 1).tolist())
    table = ObservationTable(site=site, page=site, time=time, page_index=index, link_floor=floor)
    groups = interval_distribution(table, start=0.0, end=999.0)
    big = max(groups, key=lambda g: g["intervals"])
    assert big["low"] <= 40 < big["high"] and big["intervals"] > 3000
    widths = np.diff(big["d_edges"])
    observed = np.array(big["observed"]) * widths
    expected = np.array(big["expected"]) * widths
    assert np.abs(observed - expected).sum() < 0.1  # total variation distance under 5%


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
            later.append(Obs(last.site, page, 50.0 + 6.0 * k, last.index + k,
                             last.links | {f"late{page}-{k}"}))  # fmt: skip
    before, after = table_of(observations, 8), table_of(later, 8, seed=1)
    kw = {"prior_weeks": prior_weeks, "prior_every": prior_every}
    a, b = posterior_details(before, **kw), posterior_details(after, **kw)
    earlier = [t for t in a if t < 50.0]
    assert len(earlier) == 6
    for t in earlier:
        assert a[t]["prior"] == b[t]["prior"], t
        assert a[t]["posterior_selected"] == b[t]["posterior_selected"], t
        w_scores = [window_scores(table, t=t, w_weeks=2, prior_weeks=prior_weeks)
                    for table in (before, after)]  # fmt: skip
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


# --------------------------------------------------------------------------------------------
# The website level's posterior from its pages' new links, as the crawl list reads it
# --------------------------------------------------------------------------------------------


def slow_website_posterior(
    observations: list[Obs], table: ObservationTable, t: float, w: int, e: float = 7.0
) -> dict[int, float]:
    """p of each site with a copy in [t − 7w, t], straight from hacs.website: the pages of the
    window, the page prior and κ of the 12-week window ending at t, the sum of the posteriors
    of the site's pages copied by t, and p since the site's newest copy in the window."""
    assert table.new_links is not None
    fresh = {(int(p), float(x)): int(n) for p, x, n in
             zip(table.page, table.time, table.new_links, strict=True)}  # fmt: skip

    def pages(lo: float, hi: float) -> tuple[PageLinks, list[Obs]]:
        inside = [o for o in observations if lo <= o.time <= hi]
        found = page_links([o.site for o in inside], [o.page for o in inside],
                           [o.time for o in inside],
                           [fresh[(o.page, o.time)] for o in inside])  # fmt: skip
        return found, inside

    prior, kappa = fit_page_prior(pages(t - 7.0 * 12, t)[0])
    window, inside = pages(t - 7.0 * w, t)
    known = [len({o.page for o in observations if o.site == site and o.time <= t})
             for site in range(table.site_count)]  # fmt: skip
    alpha, beta = website_posterior(window, table.site_count, prior, kappa, known)
    result = {}
    for site in sorted({o.site for o in inside}):
        last = max(o.time for o in inside if o.site == site)
        p = posterior_probabilities(alpha[[site]], beta[[site]], np.array([last]), t, e)
        result[site] = float(p[0])
    return result


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_the_website_posterior_sums_the_pages_new_links_as_the_crawl_list_does(seed: int) -> None:
    """At website level a table with link counts gives the posterior of hacs.website on each
    window's pages (the crawl list's reading); the merged timeline's posterior differs."""
    rng = np.random.default_rng(seed)
    observations = random_history(rng, n_sites=6, horizon=120.0, max_pages=3, max_obs=14)
    table = table_of(observations, 6, seed=seed % 7, new_links=True)
    for t, w in ((98.0, 2), (112.0, 5), (119.5, 1)):
        expected = slow_website_posterior(observations, table, t, w)
        found = window_scores(table, t=t, w_weeks=w, website=True)
        assert found.site.tolist() == sorted(expected)
        for site, p in zip(found.site.tolist(), found.posterior_probability.tolist(), strict=True):
            assert close(p, expected[site], rel=1e-9, abs_=1e-12), (t, w, site)


def test_the_website_reading_needs_the_level_and_the_link_counts() -> None:
    """Without link counts, or read as a homepage level, the merged timeline's posterior stays;
    with both, Evaluation 1 counts the page posterior's selections."""
    rng = np.random.default_rng(5)
    observations = random_history(rng, n_sites=10, horizon=120.0, max_pages=3, max_obs=16)
    linked = table_of(observations, 10, new_links=True)
    plain = table_of(observations, 10)
    t = 112.0
    merged = window_scores(plain, t=t, w_weeks=4).posterior_probability
    np.testing.assert_array_equal(
        window_scores(plain, t=t, w_weeks=4, website=True).posterior_probability, merged
    )
    np.testing.assert_array_equal(
        window_scores(linked, t=t, w_weeks=4).posterior_probability, merged
    )
    pages = window_scores(linked, t=t, w_weeks=4, website=True).posterior_probability
    assert not np.allclose(pages, merged)

    result = evaluate({"website": linked, "homepage": linked}, start=98.0, end=112.0,
                      w_weeks=[4], details=True)  # fmt: skip
    for point in result["points"]:
        found = window_scores(
            linked, t=point["t"], w_weeks=4, website=point["level"] == "website"
        ).posterior_probability
        selected = [int((found >= theta).sum()) for theta in DEFAULT_THETAS]
        assert point["posterior_selected"] == selected, (point["level"], point["t"])
    by_level = {(p["level"], p["t"]): p["posterior_selected"] for p in result["points"]}
    assert any(by_level[("website", t)] != by_level[("homepage", t)] for _, t in by_level)
