"""Closed-loop replay: daily crawling over a past period, as a crawl list is used day after day.

Each day a policy picks k sites from what it knows: the history before the period (every
observation with its update flag) and the outcome of its own earlier crawls. A crawl of a site
on day d *finds a change* when the site changed between the newest copy held — the latest
observation before the period, or the policy's previous crawl — and the crawl. The crawl then
becomes the site's newest copy and one more observation of its timeline, flagged as an update
when it found a change, exactly as a crawl imported back into HACS would be.

The measures are the list-wise forum crawling paper's (LWS, Section 5): *bandwidth utilisation*,
changes found per crawl; *coverage*, the share of the period's changes that some crawl caught
(every change between two crawls of a site is caught by the second); *timeliness*, the mean
delay from a change to the crawl that caught it. Pure: NumPy and the estimators.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from hacs.bayes import fit_interval_prior, interval_evidence, interval_posterior
from hacs.estimators import estimate_many
from hacs.ranking import crawl_probabilities, posterior_probabilities, rank_order

__all__ = [
    "POLICIES",
    "Policy",
    "PolicyResult",
    "ReplayState",
    "replay",
]

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]
BoolArray = NDArray[np.bool_]

CRAWL_HOUR = 0.5  # a day's crawls happen at midday


@dataclass
class ReplayState:
    """What a policy knows on a day: every site's timeline so far, and its newest copy."""

    times: list[list[float]]
    updated: list[list[bool]]
    last_copy: FloatArray  # −∞ for a site with no copy at all
    now: float
    e_days: float
    rng: np.random.Generator
    true_rates: FloatArray | None

    def arrays(self) -> tuple[FloatArray, BoolArray, IntArray]:
        counts = np.array([len(t) for t in self.times], dtype=np.int64)
        offsets = np.zeros(counts.size + 1, dtype=np.int64)
        np.cumsum(counts, out=offsets[1:])
        times = np.fromiter((x for t in self.times for x in t), np.float64, int(offsets[-1]))
        flags = np.fromiter((x for u in self.updated for x in u), np.bool_, int(offsets[-1]))
        return times, flags, offsets


Policy = Callable[[ReplayState], FloatArray]


def _round_robin(state: ReplayState) -> FloatArray:
    """The oldest copy first (never copied: first of all)."""
    return state.now - state.last_copy


def _random(state: ReplayState) -> FloatArray:
    return state.rng.random(state.last_copy.size)


def _true_rates(state: ReplayState) -> FloatArray:
    """A list that knows each site's true long-run rate (on the demo archive)."""
    if state.true_rates is None:
        raise ValueError("the oracle policy needs the true rates")
    return -np.expm1(-state.true_rates * (state.now + state.e_days - state.last_copy))


def _paper(state: ReplayState) -> FloatArray:
    """The paper's g(λ̂, τ, t, e): the MLE, since the last update (DESIGN rule 7)."""
    times, flags, offsets = state.arrays()
    found = estimate_many(times, flags, offsets)
    return crawl_probabilities(found.rate, found.tau, state.now, state.e_days)


def _mle_since_copy(state: ReplayState) -> FloatArray:
    """The MLE, since the newest copy."""
    times, flags, offsets = state.arrays()
    found = estimate_many(times, flags, offsets)
    return crawl_probabilities(found.rate, state.last_copy, state.now, state.e_days)


def _bayes_since_copy(state: ReplayState) -> FloatArray:
    """HACS's default, exactly as a crawl list reads it: the posterior under the collection's
    fitted prior (the prior itself for a site with one copy), since the newest copy."""
    times, flags, offsets = state.arrays()
    evidence = interval_evidence(times, flags, offsets)
    alpha, beta = interval_posterior(fit_interval_prior(evidence), evidence)
    return posterior_probabilities(alpha, beta, state.last_copy, state.now, state.e_days)


POLICIES: Mapping[str, Policy] = {
    "hacs": _bayes_since_copy,
    "mle_since_copy": _mle_since_copy,
    "paper": _paper,
    "round_robin": _round_robin,
    "random": _random,
    "true_rates": _true_rates,
}


@dataclass(frozen=True)
class PolicyResult:
    policy: str
    crawls: int
    found: int
    changes: int
    caught: int
    mean_delay_days: float | None
    most_days_listed: int  # the largest number of days any one site was on the list
    overlisted_sites: int  # listed on more than half the days while changed on fewer of them

    @property
    def utilisation(self) -> float:
        return self.found / self.crawls if self.crawls else 0.0

    @property
    def coverage(self) -> float:
        return self.caught / self.changes if self.changes else 0.0


def replay(
    *,
    history: tuple[ArrayLike, ArrayLike, ArrayLike],
    changes: Sequence[ArrayLike],
    start: float,
    days: int,
    budget: int,
    policies: Sequence[str] = tuple(POLICIES),
    e_days: float = 0.0,
    true_rates: ArrayLike | None = None,
    seed: int = 0,
    extra: Mapping[str, Policy] | None = None,
) -> list[PolicyResult]:
    """Replay ``days`` days of crawling ``budget`` sites a day from ``start`` (days since 1970).

    ``history`` is (times, updated, offsets) of every site's timeline before ``start``, as for
    ``estimate_many``; ``changes[i]`` are the times site i really changed (sorted), from the
    archive's updates or, on the demo archive, from its truth. Ties in a day's scores go to
    the older copy, then the lower site index. ``extra`` adds policies by name (the learned
    schedulers of ``hacs.learning``), replayed after ``policies``.
    """
    times, flags, offsets = (np.asarray(history[0], np.float64), np.asarray(history[1], bool),
                             np.asarray(history[2], np.int64))  # fmt: skip
    n_sites = offsets.size - 1
    if len(changes) != n_sites:
        raise ValueError(f"changes must have one entry per site: {n_sites}; got {len(changes)}")
    if not 0 < budget <= n_sites:
        raise ValueError(f"budget must lie in 1 … {n_sites}; got {budget}")
    change_lists = [np.sort(np.asarray(c, dtype=np.float64)) for c in changes]
    rates = None if true_rates is None else np.asarray(true_rates, dtype=np.float64)
    results = []
    for name, policy in _policies(policies, extra).items():
        state = _first_state(times, flags, offsets, start, e_days, seed, rates)
        crawls = _Crawls.none(change_lists)
        for day in range(days):
            state.now = start + day + CRAWL_HOUR
            _crawl_day(state, policy, budget, change_lists, crawls)
        results.append(_result(name, crawls, change_lists, start, days, budget))
    return results


def _policies(names: Sequence[str], extra: Mapping[str, Policy] | None) -> dict[str, Policy]:
    """The policies to replay by name, in order: ``names`` from :data:`POLICIES`, then
    ``extra`` (whose names must be new)."""
    chosen = {name: POLICIES[name] for name in names}
    for name, policy in (extra or {}).items():
        if name in chosen:
            raise ValueError(f"extra policy {name!r} repeats a policy's name")
        chosen[name] = policy
    return chosen


def _first_state(
    times: FloatArray,
    flags: BoolArray,
    offsets: IntArray,
    start: float,
    e_days: float,
    seed: int,
    rates: FloatArray | None,
) -> ReplayState:
    """What a policy knows on the first day: the history, each site's newest copy its last
    observation (−∞ for a site without one); a fresh random generator from ``seed``."""
    bounds = list(zip(offsets[:-1], offsets[1:], strict=True))
    return ReplayState(
        times=[times[a:b].tolist() for a, b in bounds],
        updated=[flags[a:b].tolist() for a, b in bounds],
        last_copy=np.array([times[b - 1] if b > a else -np.inf for a, b in bounds]),
        now=start,
        e_days=e_days,
        rng=np.random.default_rng(seed),
        true_rates=rates,
    )


@dataclass
class _Crawls:
    """A policy's crawls so far: when each change was first caught (NaN while it is not),
    how many days each site was listed and found a change, and the changes found in all."""

    caught_at: list[FloatArray]
    listed: IntArray
    found_by_site: IntArray
    found: int

    @classmethod
    def none(cls, change_lists: Sequence[FloatArray]) -> _Crawls:
        n_sites = len(change_lists)
        return cls(
            caught_at=[np.full(c.size, np.nan) for c in change_lists],
            listed=np.zeros(n_sites, dtype=np.int64),
            found_by_site=np.zeros(n_sites, dtype=np.int64),
            found=0,
        )


def _crawl_day(
    state: ReplayState,
    policy: Policy,
    budget: int,
    change_lists: Sequence[FloatArray],
    crawls: _Crawls,
) -> None:
    """One day at ``state.now``: the policy scores every site, the first ``budget`` in DESIGN
    rule 8's order (score descending, the older copy, then the site index:
    :func:`hacs.ranking.rank_order`) are crawled. A crawl finds a change when the site changed
    since its newest copy, catches every change since then not caught before, and becomes the
    newest copy and one more observation, an update when it found a change (the module
    docstring)."""
    scores = np.asarray(policy(state), dtype=np.float64)
    order = rank_order(scores, state.last_copy, np.arange(state.last_copy.size))
    for site in order[:budget].tolist():
        since = state.last_copy[site]
        c = change_lists[site]
        lo = np.searchsorted(c, since, side="right")
        hi = np.searchsorted(c, state.now, side="right")
        changed = hi > lo
        if changed:
            crawls.found += 1
            crawls.found_by_site[site] += 1
            fresh = crawls.caught_at[site][lo:hi]
            fresh[np.isnan(fresh)] = state.now
        state.times[site].append(state.now)
        # A site's first copy is its baseline, as the first observation of a timeline.
        state.updated[site].append(bool(changed) and len(state.times[site]) > 1)
        state.last_copy[site] = state.now
        crawls.listed[site] += 1


def _result(
    name: str,
    crawls: _Crawls,
    change_lists: Sequence[FloatArray],
    start: float,
    days: int,
    budget: int,
) -> PolicyResult:
    """The LWS paper's measures of one policy's crawls (Section 5; the module docstring) over
    the period [start, start + days): the changes in it, those caught and their delays, and
    the sites listed on more than half the days while changed on at most half their listings."""
    end = start + days
    in_period = [(c >= start) & (c < end) for c in change_lists]
    total = int(sum(int(m.sum()) for m in in_period))
    delays = np.concatenate(
        [crawls.caught_at[i][m] - change_lists[i][m] for i, m in enumerate(in_period)]
        or [np.zeros(0)]
    )
    caught = delays[np.isfinite(delays)]
    listed = crawls.listed
    over = (listed * 2 > days) & (crawls.found_by_site * 2 <= listed)
    return PolicyResult(
        policy=name,
        crawls=days * budget,
        found=crawls.found,
        changes=total,
        caught=int(caught.size),
        mean_delay_days=float(caught.mean()) if caught.size else None,
        most_days_listed=int(listed.max()) if len(change_lists) else 0,
        overlisted_sites=int(over.sum()),
    )
