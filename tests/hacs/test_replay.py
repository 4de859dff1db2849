"""hacs.replay: daily crawling replayed over a past period, with the LWS measures."""

from __future__ import annotations

import numpy as np
import pytest

from hacs.replay import CRAWL_HOUR, POLICIES, ReplayState, replay


def history(*sites: list[tuple[float, bool]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    times = [t for site in sites for t, _ in site]
    flags = [f for site in sites for _, f in site]
    offsets = np.cumsum([0, *(len(site) for site in sites)])
    return np.array(times), np.array(flags, dtype=bool), offsets


def test_a_crawl_finds_a_change_made_since_the_newest_copy() -> None:
    # One site, last copy at day 5; it changes on days 7.2 and 12.0; crawled daily from day 10.
    (result,) = replay(
        history=history([(0.0, False), (5.0, False)]), changes=[[3.0, 7.2, 12.0]],
        start=10.0, days=4, budget=1, policies=["round_robin"],
    )  # fmt: skip
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
        history=history(*sites), changes=[[] for _ in sites], start=10.0, days=6, budget=2,
        policies=[], extra={"round_robin": round_robin},
    )  # fmt: skip
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
        history=history(busy, quiet), changes=[[], []], start=20.0, days=10, budget=1,
        policies=["paper"],
    )  # fmt: skip
    assert results[0].most_days_listed == 10
    assert results[0].overlisted_sites == 1


def test_the_posterior_prefers_a_site_that_changes_often() -> None:
    often = [(float(d), d > 0) for d in range(0, 40, 4)]
    never = [(float(d), False) for d in range(0, 40, 4)]
    results = replay(
        history=history(often, never), changes=[[40.2], []], start=40.0, days=1, budget=1,
        policies=["hacs", "mle_since_copy"],
    )  # fmt: skip
    assert [r.found for r in results] == [1, 1]


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
