"""hacs.replay: daily crawling replayed over a past period, with the LWS measures."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from scipy.optimize import minimize

from hacs.baselines import (
    NUTCH_MAX_INTERVAL_DAYS,
    NUTCH_MIN_INTERVAL_DAYS,
    lambdacrawl_rates,
    nutch_schedule,
)
from hacs.defaults import HISTORY_DAYS
from hacs.ranking import default_posterior, rank_order, window_timelines
from hacs.refresh_budget import RefreshPolicy
from hacs.replay import CRAWL_HOUR, POLICIES, ArchiveStream, Refresh, ReplayState, replay


def history(*sites: list[tuple[float, bool]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    times = [t for site in sites for t, _ in site]
    flags = [f for site in sites for _, f in site]
    offsets = np.cumsum([0, *(len(site) for site in sites)])
    return np.array(times), np.array(flags, dtype=bool), offsets


def test_a_crawl_finds_a_change_made_since_the_newest_copy() -> None:
    # One site, last copy at day 5; it changes on days 7.2 and 12.0; crawled daily from day 10.
    (result,) = replay(
        history=history([(0.0, False), (5.0, False)]),
        changes=[[3.0, 7.2, 12.0]],
        start=10.0,
        days=4,
        budget=1,
        policies=["round_robin"],
    )
    # Day 10.5 finds 7.2 (after the copy at 5); 11.5 finds nothing; 12.5 finds 12.0; 13.5 nothing.
    assert (result.crawls, result.found) == (4, 2)
    assert result.utilisation == 0.5
    # Changes in the period [10, 14): only 12.0, caught at 12.5.
    assert (result.changes, result.caught) == (1, 1)
    assert result.mean_delay_days == pytest.approx(CRAWL_HOUR)
    # Listed every day, changed on two of the four: not "most of them", so over-listed.
    assert result.most_days_listed == 4 and result.overlisted_sites == 1


def test_round_robin_crawls_the_oldest_copy_first_and_cycles() -> None:
    # Site i's newest copy is from day copies[i]; site 6 has never been copied.
    copies = [3.0, 0.0, 5.0, 1.0, 4.0, 2.0]
    sites = [*([(day, False)] for day in copies), []]
    seen: list[ReplayState] = []

    def round_robin(state: ReplayState) -> np.ndarray:
        seen.append(state)  # one state, updated day by day: it ends holding every crawl
        return POLICIES["round_robin"](state)

    (result,) = replay(
        history=history(*sites),
        changes=[[] for _ in sites],
        start=10.0,
        days=6,
        budget=2,
        policies=[],
        extra={"round_robin": round_robin},
    )
    crawls = [(t, site) for site, times in enumerate(seen[-1].times) for t in times if t > 10]
    days = [sorted(site for t, site in crawls if t == 10 + day + CRAWL_HOUR) for day in range(6)]
    # Never copied first, then the oldest copies; day 3 reaches the copies made on day 0,
    # equally old (site 1 before 6, by index), and day 4 the older of those of days 0 and 1.
    assert days == [[1, 6], [3, 5], [0, 4], [1, 2], [3, 6], [0, 5]]
    assert result.most_days_listed == 2  # every site at most twice in six days
    assert result.found == 0 and result.changes == 0 and result.coverage == 0.0


def test_sites_listed_most_days_without_changing_are_counted() -> None:
    # The paper's g since the last update keeps listing a site whose copies show no change.
    busy = [(float(d), d % 2 == 1 and d > 0) for d in range(0, 20)]
    quiet = [(0.0, False), (19.0, False)]
    results = replay(
        history=history(busy, quiet),
        changes=[[], []],
        start=20.0,
        days=10,
        budget=1,
        policies=["paper"],
    )
    assert results[0].most_days_listed == 10
    assert results[0].overlisted_sites == 1


def test_the_posterior_prefers_a_site_that_changes_often() -> None:
    often = [(float(d), d > 0) for d in range(0, 40, 4)]
    never = [(float(d), False) for d in range(0, 40, 4)]
    results = replay(
        history=history(often, never),
        changes=[[40.2], []],
        start=40.0,
        days=1,
        budget=1,
        policies=["hacs", "mle_since_copy"],
    )
    assert [r.found for r in results] == [1, 1]


def test_progress_is_told_after_every_policys_every_day() -> None:
    often = [(float(d), d > 0) for d in range(0, 40, 4)]
    never = [(float(d), False) for d in range(0, 40, 4)]
    seen: list[float] = []
    replay(
        history=history(often, never),
        changes=[[41.2], []],
        start=40.0,
        days=4,
        budget=1,
        policies=["hacs", "round_robin", "random"],
        progress=seen.append,
    )
    assert seen == [(i + 1) / 12 for i in range(12)]


def test_random_is_seeded_and_the_oracle_needs_rates() -> None:
    sites = [[(0.0, False)] for _ in range(20)]
    changes = [[float(i)] for i in range(20)]
    args = dict(history=history(*sites), changes=changes, start=5.0, days=10, budget=3)
    first = replay(**args, policies=["random"], seed=4)  # type: ignore[arg-type]
    again = replay(**args, policies=["random"], seed=4)  # type: ignore[arg-type]
    assert first == again
    with pytest.raises(ValueError, match="true rates"):
        replay(**args, policies=["true_rates"])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="budget"):
        replay(**{**args, "budget": 0}, policies=["random"])  # type: ignore[arg-type]


# The archive during the period ------------------------------------------------------------


def example(
    seed: int = 3, n_sites: int = 30, days: float = 60.0, cut: tuple[float, float] = (40.0, 40.0)
) -> tuple[tuple[np.ndarray, np.ndarray, np.ndarray], list[list[float]], ArchiveStream]:
    """Seeded sites over [0, days): true changes, archive observations flagged from them, the
    history those before each site's last check (drawn in ``cut``), the stream those after."""
    rng = np.random.default_rng(seed)
    times, flags, offsets, changes = [], [], [0], []
    s_times, s_offsets, checked = [], [0], []
    for _ in range(n_sites):
        rate = rng.gamma(1.0, 0.05)
        c = np.sort(rng.uniform(0, days, rng.poisson(rate * days)))
        obs = np.sort(rng.uniform(0, days, rng.integers(0, 14)))
        at = float(rng.uniform(*cut))
        prev = -np.inf
        for j, t in enumerate(obs[obs < at]):
            times.append(float(t))
            flags.append(bool(j > 0 and ((c > prev) & (c <= t)).any()))
            prev = t
        offsets.append(len(times))
        s_times += obs[obs >= at].tolist()
        s_offsets.append(len(s_times))
        checked.append(at)
        changes.append(c.tolist())
    stream = ArchiveStream(np.array(s_times), np.array(s_offsets), checked=np.array(checked))
    return (np.array(times), np.array(flags, dtype=bool), np.array(offsets)), changes, stream


def test_with_the_archive_off_the_results_are_todays() -> None:
    # Figures of the replay before the archive during the period was modelled.
    history_, changes, _ = example(cut=(40.0, 40.0))
    results = replay(
        history=history_,
        changes=changes,
        start=40.0,
        days=20,
        budget=3,
        policies=["hacs", "round_robin", "paper", "random", "mle_since_copy"],
        e_days=1.0,
        seed=5,
    )
    # hacs/replay.py before the option, on this example; HACS's row re-read when its default
    # became the posterior of the rate now over the list's window (hacs.ranking).
    today = [
        ("hacs", 29, 30, 2.851377736240992, 7, 0),
        ("round_robin", 26, 29, 5.054586358244838, 2, 0),
        ("paper", 14, 17, 3.612823501443358, 10, 0),
        ("random", 23, 24, 5.107356904670386, 5, 0),
        ("mle_since_copy", 18, 21, 2.7318816304901574, 11, 1),
    ]
    got = [
        (r.policy, r.found, r.caught, r.mean_delay_days, r.most_days_listed, r.overlisted_sites)
        for r in results
    ]
    assert got == [pytest.approx(row) for row in today]
    assert all(
        (r.crawls, r.changes, r.refresh, r.cdx_requests) == (60, 39, None, 0) for r in results
    )


def oracle(
    history_: tuple[np.ndarray, np.ndarray, np.ndarray],
    changes: list[list[float]],
    stream: ArchiveStream,
    *,
    start: float,
    days: int,
    budget: int,
    policy: str,
    e_days: float,
) -> tuple[int, list[list[int]]]:
    """A slow replay that sees every archive capture the moment it is made: each day it builds
    every timeline from scratch (the history, the captures made so far and its crawls, the
    period's observations flagged from the truth), then crawls. Changes found, sites a day."""
    times, flags, offsets = history_
    s_times, s_offsets = np.asarray(stream.times), np.asarray(stream.offsets)
    n = offsets.size - 1
    bounds = list(zip(offsets[:-1], offsets[1:], strict=True))
    hist = [(times[a:b].tolist(), flags[a:b].tolist()) for a, b in bounds]
    captures = [s_times[s_offsets[i] : s_offsets[i + 1]].tolist() for i in range(n)]
    crawled: list[list[float]] = [[] for _ in range(n)]
    found, picks = 0, []
    rng = np.random.default_rng(0)
    for day in range(days):
        now = start + day + CRAWL_HOUR
        timelines, updated = [], []
        for i in range(n):
            h_times, h_flags = hist[i]
            period = sorted([t for t in captures[i] if t < now] + crawled[i])
            seq = h_times + period
            period_flags = [
                k > 0 and any(seq[k - 1] < c <= seq[k] for c in changes[i])
                for k in range(len(h_times), len(seq))
            ]
            timelines.append(seq)
            updated.append(h_flags + period_flags)
        last = np.array([t[-1] if t else -np.inf for t in timelines])
        state = ReplayState(timelines, updated, last, now, e_days, rng, None)
        order = rank_order(POLICIES[policy](state), last, np.arange(n))
        picked = sorted(order[:budget].tolist())
        for i in picked:
            made = [t for t in hist[i][0] + captures[i] + crawled[i] if t < now]
            since = max(made, default=-np.inf)
            found += any(since < c <= now for c in changes[i])
            crawled[i].append(now)
        picks.append(picked)
    return found, picks


def crawls_by_day(state: ReplayState, start: float, days: int) -> list[list[int]]:
    return [
        sorted(i for i, t in enumerate(state.times) if start + day + CRAWL_HOUR in t)
        for day in range(days)
    ]


@pytest.mark.parametrize("policy", ["hacs", "round_robin", "mle_since_copy"])
def test_every_night_without_lag_equals_an_oracle_that_sees_all_captures_at_once(
    policy: str,
) -> None:
    history_, changes, stream = example(seed=11, n_sites=40, cut=(30.0, 40.0))
    seen: list[ReplayState] = []

    def recorded(state: ReplayState) -> np.ndarray:
        seen.append(state)
        return POLICIES[policy](state)

    (result,) = replay(
        history=history_,
        changes=changes,
        start=40.0,
        days=20,
        budget=4,
        policies=[],
        extra={policy: recorded},
        e_days=1.0,
        archive=stream,
        refresh=Refresh("every_night"),
    )
    found, picks = oracle(
        history_, changes, stream, start=40.0, days=20, budget=4, policy=policy, e_days=1.0
    )
    assert crawls_by_day(seen[-1], 40.0, 20) == picks
    assert result.found == found > 0
    assert result.blind_crawls == 0 and result.late_sites == ()
    assert result.cdx_requests == 40 * 20  # one query a site, every night
    assert result.mean_learn_delay_days is not None and result.mean_learn_delay_days < 1.0


def test_a_crawl_finds_nothing_the_archive_already_holds_whatever_hacs_has_learned() -> None:
    # Last copy on day 0; a change on day 3, captured by the archive on day 5; crawled on 10.5.
    args = dict(
        history=history([(0.0, False)]),
        changes=[[3.0]],
        start=10.0,
        days=1,
        budget=1,
        policies=["round_robin"],
    )
    (off,) = replay(**args)  # type: ignore[arg-type]
    assert off.found == 1  # the archive during the period not modelled: the crawl finds it
    stream = ArchiveStream(np.array([5.0]), np.array([0, 1]))
    for policy in ("never", "every_night"):
        (on,) = replay(**args, archive=stream, refresh=Refresh(policy))  # type: ignore[arg-type]
        assert on.found == 0 and on.refresh == policy
        # Never refreshed, HACS crawled a site whose newest copy it did not know: blind.
        assert (on.blind_crawls, on.blind_found) == ((1, 0) if policy == "never" else (0, 0))


def test_a_capture_learned_late_joins_the_timeline_in_order_and_takes_the_update() -> None:
    # Copy on day 0; the site changes on 11.2, the archive captures it on 11.3, indexed half a
    # day later; crawled daily at midday from day 10.
    seen: list[tuple[list[float], list[bool]]] = []

    def record(state: ReplayState) -> np.ndarray:
        seen.append((list(state.times[0]), list(state.updated[0])))
        return POLICIES["round_robin"](state)

    (result,) = replay(
        history=history([(0.0, False)]),
        changes=[[11.2]],
        start=10.0,
        days=3,
        budget=1,
        policies=[],
        extra={"rr": record},
        archive=ArchiveStream(np.array([11.3]), np.array([0, 1])),
        refresh=Refresh("every_night", index_lag_days=0.5),
    )
    # Day 11.5: the capture exists (the crawl finds nothing) but is not indexed yet, so HACS
    # flags its crawl as the update; on 12.5 it learns the capture, which takes the update.
    assert seen[1] == ([0.0, 10.5], [False, False])
    assert seen[2] == ([0.0, 10.5, 11.3, 11.5], [False, False, True, False])
    assert result.found == 0 and result.blind_crawls == 1
    assert result.mean_learn_delay_days == pytest.approx(12.5 - 11.3)
    assert result.late_sites == (0,)  # learned more than a day after it was made


def test_never_refreshing_finds_no_more_than_every_night() -> None:
    history_, changes, stream = example(seed=2, n_sites=120, cut=(25.0, 40.0))
    found = {}
    for policy in ("every_night", "never"):
        (result,) = replay(
            history=history_,
            changes=changes,
            start=40.0,
            days=20,
            budget=6,
            policies=["hacs"],
            e_days=1.0,
            archive=stream,
            refresh=Refresh(policy),
        )
        found[policy] = result.found
    assert found["never"] <= found["every_night"]


def test_a_budget_of_every_site_each_night_equals_every_night() -> None:
    history_, changes, stream = example(seed=5, n_sites=50, cut=(20.0, 40.0))
    args = dict(
        history=history_,
        changes=changes,
        start=40.0,
        days=20,
        budget=5,
        policies=["hacs", "round_robin"],
        e_days=1.0,
        archive=stream,
    )
    every = replay(**args, refresh=Refresh("every_night"))  # type: ignore[arg-type]
    budget = replay(**args, refresh=Refresh("budget", budget=50))  # type: ignore[arg-type]
    assert [dataclasses.replace(r, refresh="every_night") for r in budget] == every
    # A smaller budget checks fewer sites and spends what it is given.
    (small, _) = replay(**args, refresh=Refresh("budget", budget=5))  # type: ignore[arg-type]
    assert small.cdx_requests == 5 * 20 and small.captures_learned < every[0].captures_learned


def test_the_budget_counts_due_sites_it_leaves_waiting() -> None:
    # Four sites checked at the start, one request a night, a max age of one day: night 0 has
    # none due (half a day), night 1 all four (one checked, three wait), night 2 again four.
    sites = [[(0.0, False)] for _ in range(4)]
    (result,) = replay(
        history=history(*sites),
        changes=[[], [], [], []],
        start=10.0,
        days=3,
        budget=1,
        policies=["round_robin"],
        archive=ArchiveStream(np.zeros(0), np.zeros(5, dtype=int)),
        refresh=Refresh("budget", budget=1, rule=RefreshPolicy(max_age_days=1.0)),
    )
    assert result.cdx_requests == 3 and result.due_waits == 0 + 3 + 3


def test_the_archive_option_rejects_bad_input() -> None:
    args = dict(
        history=history([(5.0, False)]),
        changes=[[]],
        start=10.0,
        days=1,
        budget=1,
        policies=["round_robin"],
    )
    with pytest.raises(ValueError, match="needs the archive"):
        replay(**args, refresh=Refresh("never"))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="refresh policy"):
        Refresh("sometimes")
    with pytest.raises(ValueError, match="needs a budget"):
        Refresh("budget")
    with pytest.raises(ValueError, match="last history observation"):
        replay(**args, archive=ArchiveStream(np.array([4.0]), np.array([0, 1])))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="every site exactly once"):
        replay(**args, archive=ArchiveStream(np.zeros(0), np.array([0, 0]), queries=[]))  # type: ignore[arg-type]


# Baselines crawl operators know: Nutch adaptive and LambdaCrawl (hacs.baselines) -------------


def test_nutch_multiplies_the_interval_by_0_8_on_a_change_and_1_4_without() -> None:
    # Site 0: fetched at 0 (baseline: 30 days kept), 1 (changed), 2 and 3 (unchanged);
    # site 1: fetched at 5 and 6 (changed); site 2: never fetched.
    schedule = nutch_schedule(
        np.array([0.0, 1.0, 2.0, 3.0, 5.0, 6.0]),
        np.array([False, True, False, False, False, True]),
        np.array([0, 4, 6, 6]),
    )
    assert schedule.interval.tolist() == pytest.approx([30 * 0.8 * 1.4 * 1.4, 30 * 0.8, 30.0])
    assert schedule.next_fetch.tolist() == pytest.approx([3 + 47.04, 6 + 24.0, -np.inf])
    # Nutch's defaults: the interval never leaves [60 seconds, 365 days].
    many = np.arange(40.0)
    grown = nutch_schedule(many, np.zeros(40, dtype=bool), np.array([0, 40]))
    shrunk = nutch_schedule(many, np.arange(40) > 0, np.array([0, 40]))
    assert grown.interval[0] == NUTCH_MAX_INTERVAL_DAYS == 365.0
    assert shrunk.interval[0] == pytest.approx(30 * 0.8**39)
    tiny = nutch_schedule(np.arange(80.0), np.arange(80) > 0, np.array([0, 80]))
    assert tiny.interval[0] == NUTCH_MIN_INTERVAL_DAYS == pytest.approx(60 / 86400)


def test_nutch_reads_the_archives_captures_on_its_own_schedule() -> None:
    # Captures at 0, 10, 31, 40, 50, then Nutch's own fetch at 61.6 (from day 55 on). The first
    # capture is the first fetch (30 days); 10 is not due but shows a change; 31 is due and
    # counts it (×0.8: 24 days); 40 and 50 are not due (31 + 24 = 55); Nutch's own fetch at
    # 61.6 finds nothing since 31 (×1.4).
    times = np.array([0.0, 10.0, 31.0, 40.0, 50.0, 61.6])
    flags = np.array([False, True, False, False, False, False])
    (interval,), (next_fetch,) = dataclasses.astuple(
        nutch_schedule(times, flags, np.array([0, 6]), own_fetches_from=55.0)
    )
    assert interval == pytest.approx(24 * 1.4) and next_fetch == pytest.approx(61.6 + 33.6)
    # Every capture a fetch instead: 30 × 0.8 × 1.4⁴.
    (every,) = nutch_schedule(times, flags, np.array([0, 6])).interval
    assert every == pytest.approx(30 * 0.8 * 1.4**4)
    # Started afresh: the newest capture before day 55 (50) is the first fetch, 30 days.
    fresh = nutch_schedule(times, flags, np.array([0, 6]), own_fetches_from=55.0, history="newest")
    assert fresh.interval[0] == pytest.approx(30 * 1.4)
    assert fresh.next_fetch[0] == pytest.approx(61.6 + 42)
    with pytest.raises(ValueError, match="default_interval"):
        nutch_schedule(times, flags, np.array([0, 6]), default_interval=400.0)
    with pytest.raises(ValueError, match="history"):
        nutch_schedule(times, flags, np.array([0, 6]), history="all")


def test_nutch_crawls_the_most_overdue_and_backs_off_a_site_that_did_not_change() -> None:
    # Three sites last fetched on day 100 (two accesses each): two unchanged (30 × 1.4 = 42
    # days), the third changed (30 × 0.8 = 24 days): on day 130 only it is due.
    sites = [
        [(70.0, False), (100.0, False)],
        [(69.0, False), (100.0, False)],
        [(70.0, False), (100.0, True)],
    ]
    seen: list[ReplayState] = []

    def nutch(state: ReplayState) -> np.ndarray:
        seen.append(state)
        return POLICIES["nutch_adaptive"](state)

    (result,) = replay(
        history=history(*sites),
        changes=[[], [], [120.0]],
        start=130.0,
        days=2,
        budget=1,
        policies=[],
        extra={"nutch": nutch},
    )
    # Day 130.5: site 2 is the most overdue (6.5 days) and found changed; its interval falls
    # to 24 × 0.8. Day 131.5: no site is due, the budget is spent on the least early: site 0
    # or 1 (both due at 142, copied at 100: the lower index).
    assert crawls_by_day(seen[-1], 130.0, 2) == [[2], [0]]
    assert result.found == 1 and result.crawls == 2
    schedule = nutch_schedule(*seen[-1].arrays(), own_fetches_from=130.0)
    assert schedule.interval.tolist() == pytest.approx([42 * 1.4, 42.0, 24 * 0.8])


def slow_lambdacrawl(delta: np.ndarray, bandwidth: float, objective: str) -> np.ndarray:
    """The same optimum by a general solver: maximise the freshness over ρ ≥ 0, Σ ρ = R."""

    def cost(rho: np.ndarray) -> float:
        rho = np.maximum(rho, 1e-300)
        if objective == "harmonic":
            return float(-np.sum(np.log(rho / (rho + delta))))
        return float(-np.sum(rho / (rho + delta)))

    found = minimize(
        cost,
        np.full(delta.size, bandwidth / delta.size),
        method="SLSQP",
        bounds=[(1e-12 if objective == "harmonic" else 0.0, bandwidth)] * delta.size,
        constraints=[{"type": "eq", "fun": lambda rho: rho.sum() - bandwidth}],
        options={"ftol": 1e-14, "maxiter": 1000},
    )
    assert found.success, found.message
    return np.asarray(found.x)


@pytest.mark.parametrize("objective", ["harmonic", "binary"])
@pytest.mark.parametrize("seed", range(6))
def test_lambdacrawl_matches_a_general_solver_on_small_random_inputs(
    objective: str, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    delta = rng.gamma(0.7, 0.3, size=int(rng.integers(2, 7)))
    bandwidth = float(rng.uniform(0.2, 3.0))
    fast = lambdacrawl_rates(delta, bandwidth, objective=objective)
    slow = slow_lambdacrawl(delta, bandwidth, objective)
    assert fast.sum() == pytest.approx(bandwidth, rel=1e-9)
    assert np.all(fast >= 0)
    assert fast == pytest.approx(slow, abs=2e-4 * bandwidth)


def test_lambdacrawl_properties() -> None:
    rng = np.random.default_rng(7)
    delta = np.sort(rng.gamma(0.5, 0.1, size=200))
    for bandwidth in (0.5, 4.0, 40.0):
        harmonic = lambdacrawl_rates(delta, bandwidth)
        assert harmonic.sum() == pytest.approx(bandwidth, rel=1e-12)
        # Harmonic freshness: every changing site is crawled, the faster-changing more often.
        assert np.all(harmonic > 0) and np.all(np.diff(harmonic) >= 0)
    # Equal sites share equally; a site that never changes gets nothing.
    assert lambdacrawl_rates([0.1, 0.1, 0.0], 1.0).tolist() == pytest.approx([0.5, 0.5, 0.0])
    # Binary freshness gives up on a site that changes far faster than the bandwidth allows
    # (PNAS 2018): one change an hour against a crawl a day for three sites.
    binary = lambdacrawl_rates([0.05, 0.1, 24.0], 1.0, objective="binary")
    assert binary[2] == 0.0 and binary.sum() == pytest.approx(1.0)
    assert lambdacrawl_rates([0.05, 0.1, 24.0], 1.0)[2] > 0
    # Importance: twice as important, crawled more often.
    weighted = lambdacrawl_rates([0.1, 0.1], 1.0, importance=[2.0, 1.0])
    assert weighted[0] > weighted[1]
    # Nothing changes anywhere: the bandwidth split evenly.
    assert lambdacrawl_rates([0.0, 0.0], 1.0).tolist() == [0.5, 0.5]


def test_lambdacrawl_rates_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="objective"):
        lambdacrawl_rates([0.1], 1.0, objective="age")
    with pytest.raises(ValueError, match="bandwidth"):
        lambdacrawl_rates([0.1], 0.0)
    with pytest.raises(ValueError, match="change_rates"):
        lambdacrawl_rates([0.1, -1.0], 1.0)
    with pytest.raises(ValueError, match="importance"):
        lambdacrawl_rates([0.1, 0.2], 1.0, importance=[1.0])


def test_lambdacrawl_lists_the_sites_furthest_behind_their_optimal_schedule() -> None:
    # Two well-measured sites, one changing about every 2 days and one about every 20,
    # copied 4 and 3 days ago; a third never copied.
    busy = [(float(d), d > 100) for d in range(100, 298, 2)]
    quiet = [(float(d), d > 100) for d in range(100, 298, 20)] + [(297.0, False)]
    state = ReplayState(
        times=[[t for t, _ in busy], [t for t, _ in quiet], []],
        updated=[[f for _, f in busy], [f for _, f in quiet], []],
        last_copy=np.array([296.0, 297.0, -np.inf]),
        now=300.0,
        e_days=1.0,
        rng=np.random.default_rng(0),
        true_rates=None,
        budget=1,
    )
    scores = POLICIES["lambdacrawl"](state)
    assert scores[2] == np.inf  # never copied: first of all
    # On the default posterior of the day's list: its window before the end of the day.
    found = default_posterior(*window_timelines(*state.arrays(), 301.0 - HISTORY_DAYS, 301.0))
    rho = lambdacrawl_rates(found.alpha / found.beta, 1.0)
    assert scores[:2] == pytest.approx(rho[:2] * [4.0, 3.0])
    assert scores[0] > scores[1]
    with pytest.raises(ValueError, match="budget"):
        POLICIES["lambdacrawl"](dataclasses.replace(state, budget=None))


@pytest.mark.parametrize("archive", [False, True])
def test_every_policy_makes_all_its_crawls(archive: bool) -> None:
    history_, changes, stream = example(seed=4, n_sites=30, cut=(30.0, 40.0))
    results = replay(
        history=history_,
        changes=changes,
        start=40.0,
        days=12,
        budget=3,
        policies=[p for p in POLICIES if p != "true_rates"],
        e_days=1.0,
        archive=stream if archive else None,
    )
    assert {r.policy for r in results} >= {"nutch_adaptive", "lambdacrawl"}
    assert all(r.crawls == 3 * 12 for r in results)
    assert all(0 <= r.found <= r.crawls for r in results)
