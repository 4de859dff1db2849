"""The default crawl list and the closed-loop replay rank alike: the benches measure what ships.

``bench.replay`` and ``bench.real_loop`` replay HACS's default through ``hacs.replay``'s
``hacs`` policy (``hacs.ranking.default_probabilities`` on the replay's timelines); the
``crawl_list`` command, the daily job and the Crawl list page read the same sites from the
database (``scheduling.crawl_lists.crawl_list_rank``). Both must give every site the same p,
bit for bit, and so the same list.
"""

from __future__ import annotations

from datetime import date, timedelta

import numpy as np
import pytest

from hacs.clock import day_start, reference_instant, to_days
from hacs.defaults import HISTORY_DAYS
from hacs.ranking import default_posterior, rank_order, window_timelines
from hacs.replay import POLICIES, ReplayState
from scheduling.crawl_lists import CrawlListOptions, crawl_list_rank
from scheduling.estimates import estimates_recompute
from scheduling.models import RatePrior
from tests.factories import add_observations, make_site

pytestmark = pytest.mark.django_db
DAY = date(2024, 3, 15)


def drifting_sites(seed: int, count: int) -> list[tuple[list[float], list[bool]]]:
    """Timelines (days since 1970, update flags) of sites whose rate changes once: copies at
    random gaps over four years before DAY, some older than the three-year window, a change
    between copies drawn from each half's own rate."""
    rng = np.random.default_rng(seed)
    end = to_days(reference_instant(DAY))
    sites = []
    for _ in range(count):
        gap = float(np.exp(rng.uniform(np.log(5.0), np.log(120.0))))
        times = end - 4 * 365.0 + np.cumsum(rng.exponential(gap, 400))
        # Whole seconds, as the database holds them (microseconds would do).
        times = np.round(times[times < end - 0.25] * 86400.0) / 86400.0
        switch = end - rng.uniform(100.0, 900.0)
        early, late = np.exp(rng.uniform(np.log(1 / 400), np.log(1 / 5), 2))
        rate = np.where(times < switch, early, late)
        gaps = np.r_[0.0, np.diff(times)]
        flags = rng.random(times.size) < -np.expm1(-rate * gaps)
        flags[:1] = False
        sites.append((times.tolist(), flags.tolist()))
    return sites


def test_the_replay_gives_every_site_the_crawl_lists_p() -> None:
    timelines = drifting_sites(seed=3, count=30)
    # One site copied once in the window, one only before it (not eligible for the list).
    end = to_days(reference_instant(DAY))
    timelines += [([end - 40.0], [False]), ([end - HISTORY_DAYS - 30.0], [False])]
    sites = []
    for times, flags in timelines:
        site = make_site()
        moments = [day_start(date(1970, 1, 1)) + timedelta(days=t) for t in times]
        add_observations(site, moments, updates=flags)  # type: ignore[arg-type]
        sites.append(site.pk)
    ranked = crawl_list_rank(day=DAY, options=CrawlListOptions())
    service = {r.site_id: r.probability for r in ranked.sites}
    assert ranked.eligible == len(sites) - 1 and sites[-1] not in service

    counts = [len(times) for times, _ in timelines]
    offsets = np.r_[0, np.cumsum(counts)]
    times = np.concatenate([t for t, _ in timelines])
    flags = np.concatenate([f for _, f in timelines]).astype(bool)
    # The replay's day: crawled at noon, listed with the day's reference instant.
    state = ReplayState(
        times=[list(t) for t, _ in timelines],
        updated=[list(f) for _, f in timelines],
        last_copy=np.array([t[-1] for t, _ in timelines]),
        now=to_days(day_start(DAY)) + 0.5,
        e_days=1.0,
        rng=np.random.default_rng(0),
        true_rates=None,
    )
    scores = POLICIES["hacs"](state)
    # The collection's rates reset in this history: the filter is what is compared.
    window = window_timelines(times, flags, offsets, end - HISTORY_DAYS, end)
    assert default_posterior(*window).reset_rate > 0.0
    for site_id, p in zip(sites, scores.tolist(), strict=True):
        assert p == service.get(site_id, 0.0)
    order = rank_order(scores, state.last_copy, np.arange(len(sites)))
    listed = [sites[i] for i in order.tolist() if scores[i] > 0]
    assert listed == [r.site_id for r in ranked.sites if r.probability > 0]


def test_the_stored_prior_keeps_the_reset_rate_the_list_fits() -> None:
    for times, flags in drifting_sites(seed=4, count=30):
        site = make_site()
        moments = [day_start(date(1970, 1, 1)) + timedelta(days=t) for t in times]
        add_observations(site, moments, updates=flags)
    estimates_recompute(levels=["homepage"], methods=["posterior"])
    stored = RatePrior.objects.get(level="homepage")
    assert 0.0 < stored.reset_rate < 0.1
