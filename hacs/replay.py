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
delay from a change to the crawl that caught it.

**The archive during the period** (``archive=``, off by default: then the archive's captures
during the period are not modelled, as before). The archive keeps capturing the sites while the
list is crawled (:class:`ArchiveStream`: its observations not in the history), and HACS learns
a capture only when the nightly refresh has checked that site after it was made and indexed
(:class:`Refresh`: every night, never, or a nightly budget of CDX requests spent by
``hacs.refresh_budget.choose_queries``). The refresh runs just before each day's list (the
replay's day is one instant, at midday). Readings:

* What a crawl *finds* does not depend on the refresh: a crawl on day d finds a change when the
  site changed since the later of its previous crawl and the newest archive capture that exists
  before d, whether HACS has learned of it or not. The refresh policies differ only in what the
  list is built from (the timelines and newest copies HACS holds).
* A capture HACS learns joins its timeline in time order, so it may come before crawls already
  made. Every observation of the period, capture or crawl, is flagged from ``changes``: an update
  when the site changed between it and the observation before it in the timeline HACS holds
  (DESIGN rule 3 read on the truth: a crawl that saw a change makes the capture after it no
  update). The history keeps its own flags. On the demo archive (1,200 sites, seed 0) this
  reading and the link sets' flags differ on 128 of 73,281 homepage observations.
* The refresh's capture rate of a site (``hacs.refresh_budget.capture_rate``) reads the
  captures HACS holds: the history's observations and those learned since.

The policies (:data:`POLICIES`) score every site each day: HACS's default, the MLE, the paper's
g, round-robin, random, the schedules crawl operators know (``hacs.baselines``: Nutch adaptive,
read two ways, and LambdaCrawl, which spends ``ReplayState.budget``) and, on the demo archive,
the list that knows the true rates.

Pure: NumPy, the estimators and the refresh budget.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from hacs.baselines import lambdacrawl_policy, nutch_fresh_policy, nutch_policy
from hacs.estimators import estimate_many
from hacs.formats.queries import CdxQuery
from hacs.ranking import crawl_probabilities, default_probabilities, rank_order
from hacs.refresh_budget import RefreshPolicy, SiteState, capture_rate, choose_queries
from hacs.replay_state import BoolArray, FloatArray, IntArray, ReplayState

__all__ = [
    "POLICIES",
    "REFRESH_POLICIES",
    "ArchiveStream",
    "Policy",
    "PolicyResult",
    "Refresh",
    "ReplayState",
    "replay",
    "truth_flags",
]


CRAWL_HOUR = 0.5  # a day's crawls happen at midday


Policy = Callable[[ReplayState], FloatArray]


def _round_robin(state: ReplayState) -> FloatArray:
    """The oldest copy first (never copied: first of all)."""
    return state.now - state.last_copy


def _random(state: ReplayState) -> FloatArray:
    return state.rng.random(state.last_copy.size)


def known_rate_probabilities(rates: FloatArray, state: ReplayState) -> FloatArray:
    """p = 1 − e^{−λ (now + e − newest copy)} with each site's rate λ given rather than
    estimated: the p of the reference lists that know the rates."""
    p: FloatArray = -np.expm1(-rates * (state.now + state.e_days - state.last_copy))
    return p


def _true_rates(state: ReplayState) -> FloatArray:
    """A list that knows each site's true long-run rate (on the demo archive)."""
    if state.true_rates is None:
        raise ValueError("the oracle policy needs the true rates")
    return known_rate_probabilities(state.true_rates, state)


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
    """HACS's default, exactly as the day's crawl list reads it
    (``hacs.ranking.default_probabilities``): the observations in its history window before
    the end of the day, the posterior of each site's rate now under the collection's fitted
    prior and reset rate (the prior itself for a site with one copy), since the newest copy."""
    times, flags, offsets = state.arrays()
    return default_probabilities(
        times, flags, offsets, t=state.list_instant, e=state.e_days, history_days=state.history_days
    )


POLICIES: Mapping[str, Policy] = {
    "hacs": _bayes_since_copy,
    "mle_since_copy": _mle_since_copy,
    "paper": _paper,
    "round_robin": _round_robin,
    "random": _random,
    "nutch_adaptive": nutch_policy,
    "nutch_fresh": nutch_fresh_policy,
    "lambdacrawl": lambdacrawl_policy,
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
    # With the archive during the period (``archive=``); the defaults when it is off.
    refresh: str | None = None  # the refresh policy
    cdx_requests: int = 0  # CDX requests the refreshes sent
    blind_crawls: int = 0  # crawls of a site with an archive capture HACS had not learned yet
    blind_found: int = 0  # of those, the crawls that found a change
    due_waits: int = 0  # site-nights past the max age that the budget left waiting
    captures_learned: int = 0  # of the archive's captures made in the period, those learned
    mean_learn_delay_days: float | None = None  # from such a capture to the check that learned it
    found_by_site: tuple[int, ...] = ()  # changes found, by site
    late_sites: tuple[int, ...] = ()  # sites with a capture of the period learned late (LATE_DAYS)
    # By day of the period: the crawls that found a change, and the changes made in the period
    # that the day's crawls caught with the sum of their delays (days), for any run of days.
    found_by_day: tuple[int, ...] = ()
    caught_by_day: tuple[int, ...] = ()
    delay_by_day: tuple[float, ...] = ()

    def days(self, first: int, last: int) -> tuple[int, int, float | None]:
        """Changes found, period changes caught and their mean delay over days first … last
        (from 0) of the period."""
        found = sum(self.found_by_day[first : last + 1])
        caught = sum(self.caught_by_day[first : last + 1])
        delay = sum(self.delay_by_day[first : last + 1])
        return found, caught, (delay / caught if caught else None)

    @property
    def utilisation(self) -> float:
        return self.found / self.crawls if self.crawls else 0.0

    @property
    def coverage(self) -> float:
        return self.caught / self.changes if self.changes else 0.0


#: The refresh policies of the archive during the period (:class:`Refresh`).
REFRESH_POLICIES = ("every_night", "budget", "never")
#: A capture is learned late when the check that learned it came more than a day after it was
#: made, or when no check learned it though it was made over a day before the period's last list.
LATE_DAYS = 1.0


@dataclass(frozen=True)
class ArchiveStream:
    """The archive's captures that the history does not hold, which HACS learns by refreshing.

    ``times`` and ``offsets`` are every site's observation times not in the history, as the
    history's (sorted within a site, none before the site's last history observation);
    ``queries`` the refresh's CDX queries over the site indices (``plan_queries`` on the seeds;
    None: one query per site); ``checked`` each site's last check before the period (days;
    None: every site at ``start``, when the history was read). A site checked before ``start``
    has its captures since that check here, not in the history.
    """

    times: ArrayLike
    offsets: ArrayLike
    queries: Sequence[CdxQuery] | None = None
    checked: ArrayLike | None = None


@dataclass(frozen=True)
class Refresh:
    """How HACS learns the archive's captures during the period: ``policy`` "every_night" (every
    site checked every night), "budget" (``budget`` CDX requests a night chosen by
    ``hacs.refresh_budget.choose_queries`` under ``rule``, the nightly job's rule) or "never". A
    capture is visible to a check ``index_lag_days`` after it was made."""

    policy: str = "every_night"
    budget: int | None = None
    rule: RefreshPolicy = RefreshPolicy()
    index_lag_days: float = 0.0
    # With a budget: tonight's provisional list is the top ``list_share`` × k of the crawl
    # policy's own scores (the nightly job builds it at twice the list's budget); its sites'
    # probabilities are their stakes (``SiteState.stake``). None: no list.
    list_share: float | None = 2.0

    @property
    def max_age_days(self) -> float:
        return self.rule.max_age_days

    def __post_init__(self) -> None:
        if self.policy not in REFRESH_POLICIES:
            raise ValueError(
                f"refresh policy must be one of {', '.join(REFRESH_POLICIES)}; got {self.policy!r}"
            )
        if self.policy == "budget" and (self.budget is None or self.budget < 0):
            raise ValueError(f"a budget refresh needs a budget ≥ 0; got {self.budget}")
        if not self.index_lag_days >= 0:
            raise ValueError(f"index_lag_days must be ≥ 0; got {self.index_lag_days}")


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
    archive: ArchiveStream | None = None,
    refresh: Refresh | None = None,
    progress: Callable[[float], None] | None = None,
) -> list[PolicyResult]:
    """Replay ``days`` days of crawling ``budget`` sites a day from ``start`` (days since 1970).

    ``history`` is (times, updated, offsets) of every site's timeline before ``start``, as for
    ``estimate_many``; ``changes[i]`` are the times site i really changed (sorted), from the
    archive's updates or, on the demo archive, from its truth. Ties in a day's scores go to
    the older copy, then the lower site index. ``extra`` adds policies by name (the learned
    schedulers of ``hacs.learning``), replayed after ``policies``. ``archive`` models the
    archive's captures during the period, learned by ``refresh`` (default: every night); the
    module docstring gives the readings. ``progress`` receives the finished share of the
    policies' days, 0 … 1, after each day.
    """
    times, flags, offsets = (
        np.asarray(history[0], np.float64),
        np.asarray(history[1], bool),
        np.asarray(history[2], np.int64),
    )
    n_sites = offsets.size - 1
    if len(changes) != n_sites:
        raise ValueError(f"changes must have one entry per site: {n_sites}; got {len(changes)}")
    if not 0 < budget <= n_sites:
        raise ValueError(f"budget must lie in 1 … {n_sites}; got {budget}")
    if refresh is not None and archive is None:
        raise ValueError("a refresh policy needs the archive's captures during the period")
    change_lists = [np.sort(np.asarray(c, dtype=np.float64)) for c in changes]
    rates = None if true_rates is None else np.asarray(true_rates, dtype=np.float64)
    results = []
    chosen = _policies(policies, extra)
    for n, (name, policy) in enumerate(chosen.items()):
        state = _first_state(times, flags, offsets, start, e_days, seed, rates, budget)
        crawls = _Crawls.none(change_lists)
        world = None
        if archive is not None:
            world = _Archive.start(archive, refresh or Refresh(), times, offsets, start)
        for day in range(days):
            state.now = start + day + CRAWL_HOUR
            if world is not None:
                world.refresh_night(state, change_lists, policy, budget)
            _crawl_day(state, policy, budget, change_lists, crawls, world)
            if progress is not None:
                progress((n * days + day + 1) / (len(chosen) * days))
        results.append(_result(name, crawls, change_lists, start, days, budget, world))
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
    budget: int,
) -> ReplayState:
    """What a policy knows on the first day: the history, each site's newest copy its last
    observation (−∞ for a site without one); a fresh random generator from ``seed``; the
    day's budget and the period's start."""
    bounds = list(zip(offsets[:-1], offsets[1:], strict=True))
    return ReplayState(
        times=[times[a:b].tolist() for a, b in bounds],
        updated=[flags[a:b].tolist() for a, b in bounds],
        last_copy=np.array([times[b - 1] if b > a else -np.inf for a, b in bounds]),
        now=start,
        e_days=e_days,
        rng=np.random.default_rng(seed),
        true_rates=rates,
        budget=budget,
        start=float(start),
    )


@dataclass
class _Crawls:
    """A policy's crawls so far: when each change was first caught (NaN while it is not),
    how many days each site was listed and found a change, and the changes found in all."""

    caught_at: list[FloatArray]
    listed: IntArray
    found_by_site: IntArray
    found: int
    found_by_day: list[int]

    @classmethod
    def none(cls, change_lists: Sequence[FloatArray]) -> _Crawls:
        n_sites = len(change_lists)
        return cls(
            caught_at=[np.full(c.size, np.nan) for c in change_lists],
            listed=np.zeros(n_sites, dtype=np.int64),
            found_by_site=np.zeros(n_sites, dtype=np.int64),
            found=0,
            found_by_day=[],
        )


def _crawl_day(
    state: ReplayState,
    policy: Policy,
    budget: int,
    change_lists: Sequence[FloatArray],
    crawls: _Crawls,
    world: _Archive | None = None,
) -> None:
    """One day at ``state.now``: the policy scores every site, the first ``budget`` in DESIGN
    rule 8's order (score descending, the older copy, then the site index:
    :func:`hacs.ranking.rank_order`) are crawled. A crawl finds a change when the site changed
    since its newest copy, catches every change since then not caught before, and becomes the
    newest copy and one more observation, an update when it found a change (the module
    docstring). With the archive during the period (``world``), the newest copy a crawl is
    compared with is the newest that exists, which HACS may not have learned yet."""
    scores = np.asarray(policy(state), dtype=np.float64)
    order = rank_order(scores, state.last_copy, np.arange(state.last_copy.size))
    crawls.found_by_day.append(0)
    for site in order[:budget].tolist():
        since = state.last_copy[site] if world is None else world.newest_copy(site, state.now)
        c = change_lists[site]
        lo = np.searchsorted(c, since, side="right")
        hi = np.searchsorted(c, state.now, side="right")
        changed = hi > lo
        if changed:
            crawls.found += 1
            crawls.found_by_day[-1] += 1
            crawls.found_by_site[site] += 1
            fresh = crawls.caught_at[site][lo:hi]
            fresh[np.isnan(fresh)] = state.now
        if world is None:
            state.times[site].append(state.now)
            # A site's first copy is its baseline, as the first observation of a timeline.
            state.updated[site].append(bool(changed) and len(state.times[site]) > 1)
        else:
            world.crawled(state, site, bool(changed), change_lists[site])
        state.last_copy[site] = state.now
        crawls.listed[site] += 1


class _Archive:
    """The archive during the period and what HACS has learned of it (the module docstring)."""

    def __init__(
        self,
        refresh: Refresh,
        stream: list[FloatArray],
        queries: list[CdxQuery],
        checked: FloatArray,
        history_times: list[list[float]],
    ) -> None:
        self.refresh = refresh
        self.stream = stream
        self.queries = queries
        self.checked = checked  # NaN: never checked
        self.history_times = history_times
        self.history_last = np.array([t[-1] if t else -np.inf for t in history_times])
        self.history_len = np.array([len(t) for t in history_times], dtype=np.int64)
        self.learned = np.zeros(len(stream), dtype=np.int64)  # a prefix of each site's stream
        self.learned_at = [np.full(own.size, np.nan) for own in stream]
        self.last_crawl = np.full(len(stream), -np.inf)
        self.requests = 0
        self.blind_crawls = 0
        self.blind_found = 0
        self.due_waits = 0

    @classmethod
    def start(
        cls,
        archive: ArchiveStream,
        refresh: Refresh,
        times: FloatArray,
        offsets: IntArray,
        start: float,
    ) -> _Archive:
        n_sites = offsets.size - 1
        stream_times = np.asarray(archive.times, dtype=np.float64)
        stream_offsets = np.asarray(archive.offsets, dtype=np.int64)
        if stream_offsets.size != n_sites + 1:
            raise ValueError(
                f"the archive's captures need offsets for {n_sites} sites; "
                f"got {stream_offsets.size - 1}"
            )
        history_times = [
            times[a:b].tolist() for a, b in zip(offsets[:-1], offsets[1:], strict=True)
        ]
        stream = []
        for site, (a, b) in enumerate(zip(stream_offsets[:-1], stream_offsets[1:], strict=True)):
            own = stream_times[a:b]
            if own.size and (
                np.any(np.diff(own) < 0)
                or (history_times[site] and own[0] < history_times[site][-1])
            ):
                raise ValueError(
                    f"site {site}: the archive's captures must be sorted and none before the "
                    "site's last history observation"
                )
            stream.append(own)
        if archive.queries is None:
            queries = [
                CdxQuery(f"site {i}", "prefix", (i,), None, f"{i:09d}") for i in range(n_sites)
            ]
        else:
            queries = list(archive.queries)
        covered = sorted(i for q in queries for i in q.site_ids)
        if covered != list(range(n_sites)):
            raise ValueError("the refresh queries must hold every site exactly once")
        if archive.checked is None:
            checked = np.full(n_sites, start, dtype=np.float64)
        else:
            checked = np.asarray(archive.checked, dtype=np.float64).copy()
            if checked.shape != (n_sites,) or np.any(checked > start):
                raise ValueError(f"checked must give {n_sites} times, none after the start")
        return cls(refresh, stream, queries, checked, history_times)

    def newest_copy(self, site: int, now: float) -> float:
        """The newest copy that exists before ``now``: the site's last crawl, its last history
        observation or the newest archive capture made before ``now``, learned or not."""
        own = self.stream[site]
        made = int(np.searchsorted(own, now, side="left"))
        newest = own[made - 1] if made else -np.inf
        return float(max(self.last_crawl[site], self.history_last[site], newest))

    def refresh_night(
        self, state: ReplayState, change_lists: Sequence[FloatArray], crawl: Policy, k: int
    ) -> None:
        """The night's refresh, just before the list at ``state.now``: check the sites the
        policy chooses and learn their captures indexed by then. With ``list_share``, the
        provisional list is the crawl policy's top ``list_share × k`` as HACS knows it now."""
        now = state.now
        policy = self.refresh.policy
        if policy == "never":
            return
        if policy == "every_night":
            sites: Sequence[int] = range(len(self.stream))
            self.requests += len(self.queries)
        else:
            stakes = self._stakes(state, crawl, k)
            states = {
                site: SiteState(
                    site_id=site,
                    rate=capture_rate(self._known_captures(site), now),
                    checked=None if np.isnan(self.checked[site]) else float(self.checked[site]),
                    stake=stakes.get(site, 0.0),
                )
                for site in range(len(self.stream))
            }
            assert self.refresh.budget is not None  # Refresh checks it
            choice = choose_queries(
                self.queries, states, now=now, budget=self.refresh.budget, policy=self.refresh.rule
            )
            sites = choice.checked_sites
            self.requests += choice.requests
            self.due_waits += choice.overdue_left
        for site in sites:
            self._learn(state, site, change_lists[site])

    def _stakes(self, state: ReplayState, crawl: Policy, k: int) -> dict[int, float]:
        """Tonight's provisional list, as the nightly job builds it: the crawl policy's top
        ``list_share`` × k as HACS knows them now, each with its score as its stake when the
        scores are probabilities (1 when they are not)."""
        if self.refresh.list_share is None:
            return {}
        scores = np.asarray(crawl(state), dtype=np.float64)
        order = rank_order(scores, state.last_copy, np.arange(state.last_copy.size))
        top = order[: int(self.refresh.list_share * k)].tolist()
        probabilities = bool(np.all((scores >= 0) & (scores <= 1)))
        return {site: float(scores[site]) if probabilities else 1.0 for site in top}

    def _known_captures(self, site: int) -> list[float]:
        learned: list[float] = self.stream[site][: self.learned[site]].tolist()
        return self.history_times[site] + learned

    def _learn(self, state: ReplayState, site: int, changes: FloatArray) -> None:
        """Check ``site`` at ``state.now``: learn its captures indexed by now, each joining the
        timeline in time order, and flag the period's observations again."""
        now = state.now
        self.checked[site] = now
        own = self.stream[site]
        indexed = int(np.searchsorted(own, now - self.refresh.index_lag_days, side="left"))
        if indexed <= self.learned[site]:
            return
        new = own[self.learned[site] : indexed]
        self.learned_at[site][self.learned[site] : indexed] = now
        self.learned[site] = indexed
        h = int(self.history_len[site])
        period = sorted(state.times[site][h:] + new.tolist())
        state.times[site][h:] = period
        state.updated[site][h:] = truth_flags(state.times[site], h, changes)
        state.last_copy[site] = max(state.last_copy[site], float(new[-1]))

    def crawled(self, state: ReplayState, site: int, found: bool, changes: FloatArray) -> None:
        """A crawl of ``site`` at ``state.now``, found a change or not: one more observation of
        the timeline HACS holds, an update when the site changed since the copy before it."""
        own = self.stream[site]
        made = int(np.searchsorted(own, state.now, side="left"))
        if made > self.learned[site] and own[made - 1] > state.last_copy[site]:
            self.blind_crawls += 1
            self.blind_found += found
        self.last_crawl[site] = state.now
        state.times[site].append(state.now)
        state.updated[site] += truth_flags(state.times[site], len(state.times[site]) - 1, changes)


def truth_flags(times: list[float], first: int, changes: FloatArray) -> list[bool]:
    """The update flags of ``times[first:]`` on the truth: an observation is an update when the
    site changed since the observation before it; the first of a timeline is its baseline."""
    t = np.asarray(times, dtype=np.float64)
    at = np.arange(first, t.size)
    before = np.searchsorted(changes, t[np.maximum(at - 1, 0)], side="right")
    upto = np.searchsorted(changes, t[at], side="right")
    flags: list[bool] = ((upto > before) & (at > 0)).tolist()
    return flags


def _result(
    name: str,
    crawls: _Crawls,
    change_lists: Sequence[FloatArray],
    start: float,
    days: int,
    budget: int,
    world: _Archive | None = None,
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
    caught_day = np.floor(
        np.concatenate([crawls.caught_at[i][m] for i, m in enumerate(in_period)] or [np.zeros(0)])
        - start
    )[np.isfinite(delays)].astype(np.int64)
    listed = crawls.listed
    over = (listed * 2 > days) & (crawls.found_by_site * 2 <= listed)
    return PolicyResult(
        policy=name,
        crawls=int(listed.sum()),  # the crawls made, counted: k a day when all went out
        found=crawls.found,
        changes=total,
        caught=int(caught.size),
        mean_delay_days=float(caught.mean()) if caught.size else None,
        most_days_listed=int(listed.max()) if len(change_lists) else 0,
        overlisted_sites=int(over.sum()),
        found_by_day=tuple(crawls.found_by_day),
        caught_by_day=tuple(np.bincount(caught_day, minlength=days)[:days].tolist()),
        delay_by_day=tuple(np.bincount(caught_day, caught, minlength=days)[:days].tolist()),
        **({} if world is None else _archive_measures(world, crawls, start, end - 1 + CRAWL_HOUR)),
    )


def _archive_measures(
    world: _Archive, crawls: _Crawls, start: float, last_list: float
) -> dict[str, Any]:
    """The refresh's share of a result: its policy and requests, the blind crawls, how soon the
    captures made in the period were learned, and the sites where that was late."""
    delays: list[FloatArray] = []
    late = []
    for site, (own, at) in enumerate(zip(world.stream, world.learned_at, strict=True)):
        made = own >= start
        delay = at[made] - own[made]
        delays.append(delay[np.isfinite(delay)])
        unlearned = np.isnan(at[made]) & (own[made] < last_list - LATE_DAYS)
        if np.any(delay > LATE_DAYS) or np.any(unlearned):
            late.append(site)
    learned = np.concatenate(delays) if delays else np.zeros(0)
    return {
        "refresh": world.refresh.policy,
        "cdx_requests": world.requests,
        "blind_crawls": world.blind_crawls,
        "blind_found": world.blind_found,
        "due_waits": world.due_waits,
        "captures_learned": int(learned.size),
        "mean_learn_delay_days": float(learned.mean()) if learned.size else None,
        "found_by_site": tuple(crawls.found_by_site.tolist()),
        "late_sites": tuple(late),
    }
