"""The slow reference for the tests of hacs.evaluation, straight from the papers' definitions
(HACS Section III, GP4C Sections 4.2.2 and 5.1, DESIGN.md rules 3-11): every eligible
site of one window by set arithmetic and the estimators' scalar ``estimate``, and the
metrics of one reference point."""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from hacs.bayes import (
    GammaPrior,
    fit_interval_prior,
    interval_evidence,
    interval_posterior,
    posterior_exposure,
)
from hacs.estimators import change_probability, estimate
from hacs.evaluation import RANKING_MODELS
from hacs.ranking import posterior_probabilities
from tests.hacs.evaluation._helpers import Obs
from tests.reference import slow_window_timeline


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
        timelines = [
            [(o.time, o.links) for o in sorted(obs, key=lambda o: o.index)]
            for obs in pages.values()
        ]
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


def site_pages(observations: list[Obs], site: int) -> list[list[Obs]]:
    """One site's observations, page by page, each page's in index order."""
    pages: dict[int, list[Obs]] = {}
    for o in observations:
        if o.site == site:
            pages.setdefault(o.page, []).append(o)
    return [sorted(obs, key=lambda o: o.index) for obs in pages.values()]


def window_and_first_update(
    pages: list[list[Obs]], start: float, t: float, e: float
) -> tuple[list[tuple[float, bool]], float]:
    """Rule 3 inside [start, t], page by page, and the first update in (t, t + e] over the
    full history (+inf when none)."""
    window: list[tuple[float, bool]] = []
    first_update = math.inf
    for page_obs in pages:
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
    return window, first_update


def gp4c_rates(window: list[tuple[float, bool]]) -> dict[str, float]:
    """GP4C's change-rate terminals of one window, before the elapsed-time factor: Cho and
    Garcia-Molina's estimate, NAD, SAD, AAD and GAD (GP4C Section 4.2.2)."""
    instants = sorted({x[0] for x in window})
    changed = [any(f for tm, f in window if tm == i) for i in instants]
    n = len(instants) - 1
    flags = changed[1:]  # I_1 … I_n
    x_count = sum(flags)
    if n == 0:
        return dict.fromkeys(("cho_garcia_molina", "nad", "sad", "aad", "gad"), 0.0)
    r_hat = -math.log((n - x_count + 0.5) / (n + 0.5))
    return {
        "cho_garcia_molina": r_hat * n / (instants[-1] - instants[0]),
        "nad": x_count / n,
        "sad": float(flags[-1]),
        "aad": sum(2 * i / (n * (n + 1)) for i, f in enumerate(flags, 1) if f),
        "gad": float(
            sum((Fraction(2 ** (i - 1), 2**n - 1) for i, f in enumerate(flags, 1) if f), 0)
        ),
    }


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
        window, first_update = window_and_first_update(site_pages(observations, site), start, t, e)
        if not window:
            continue
        window.sort(key=lambda x: x[0])  # rule 4 (ties: any order, instants merge)
        est = estimate([x[0] for x in window], [x[1] for x in window], method)
        p = 0.0 if math.isnan(est.rate) else change_probability(est.rate, est.tau, t, e)
        last = max(x[0] for x in window)
        site_times, site_flags = evidence[site]
        copy = max(site_times)
        assert copy == last
        alpha, beta = interval_posterior(
            prior, interval_evidence(site_times, site_flags, [0, len(site_times)])
        )
        elapsed = t + e - last
        result[site] = SlowSite(
            rate=est.rate,
            tau=est.tau,
            probability=p,
            first_update=first_update,
            alpha=float(alpha[0]),
            beta=float(beta[0]),
            posterior=float(posterior_probabilities(alpha, beta, [copy], t, e)[0]),
            scores={
                "hacs": p,
                "posterior": float(posterior_exposure(alpha, beta, [t + e - copy])[0]),
                "last_obs": t - est.tau,
                **{name: rate * elapsed for name, rate in gp4c_rates(window).items()},
                "age": t - last,
            },
        )
    return result


def slow_ranking(sites: dict[int, SlowSite], model: str) -> list[int]:
    """Score descending; HACS then older τ first; then site index."""
    return sorted(
        sites, key=lambda u: (-sites[u].scores[model], sites[u].tau if model == "hacs" else 0.0, u)
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
        len(sites),
        len(positives),
        selected,
        tp,
        post_selected,
        post_tp,
        k,
        p_at_k,
        ndcg,
        change_rate,
        hits,
    )


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
