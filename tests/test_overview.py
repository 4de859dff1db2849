"""The Overview page: counts, the Figure 4 histogram and the sites due today."""

from __future__ import annotations

import json
import re
from datetime import date, datetime, timedelta
from typing import Any

import pytest

from dashboard.overview import due_today
from hacs.clock import reference_instant
from hacs_site.clock import today
from scheduling.crawl_lists import CrawlListOptions, crawl_list_store
from scheduling.models import CrawlList
from tests.factories import add_observations, make_estimate, make_posterior_estimate, make_site

pytestmark = pytest.mark.django_db
DAY = date(2018, 6, 1)


def copies(site: Any, day: date, days: list[float], updates: list[bool]) -> None:
    """Copies of ``site``'s homepage ``days`` before ``day`` (oldest first), with updates."""
    add_observations(site, [days_before(day, d) for d in days], updates=updates)


def days_before(day: date, days: float) -> datetime:
    """The instant ``days`` before the reference instant (end) of ``day``."""
    return reference_instant(day) - timedelta(days=days)


def test_due_before_the_list_is_built_is_the_list_the_daily_job_then_builds(settings: Any) -> None:
    """Before today's list exists, Overview ranks the sites by the list's own rule: the same
    sites, in the same order, with the same p, as the list the daily job then stores; θ cuts
    both alike."""
    settings.HACS_BUDGET, settings.HACS_E_DAYS = None, 7.0
    now = today()
    histories = [
        ([200, 150, 100, 50, 3], [False, True, True, True, True]),
        ([300, 40], [False, False]),
        ([120, 90, 60, 30], [False, True, False, True]),
        ([80, 60, 40, 20, 10, 1], [False, True, True, True, True, True]),
    ]
    for n, (days, updates) in enumerate(histories):
        copies(make_site(author=f"S{n}"), now, days, updates)
    settings.HACS_THETA = 0.0
    before = due_today(day=now)
    assert before.built is None and before.count == 4
    probabilities = [d.probability for d in before.first]
    assert probabilities == sorted(probabilities, reverse=True) and len(set(probabilities)) == 4
    settings.HACS_THETA = (probabilities[1] + probabilities[2]) / 2
    cut = due_today(day=now)
    assert cut.count == 2
    assert [d.site.pk for d in cut.first] == [d.site.pk for d in before.first[:2]]
    crawl = crawl_list_store(
        day=now, options=CrawlListOptions.from_settings(), source=CrawlList.Source.DAILY_JOB
    ).crawl_list
    entries = list(crawl.entries.order_by("rank"))
    assert [e.site_id for e in entries] == [d.site.pk for d in cut.first]
    assert [e.probability for e in entries] == pytest.approx(probabilities[:2], rel=1e-12)


def test_the_home_page_shows_counts_histogram_and_due_sites(logged_in_client: Any) -> None:
    for n in range(12):
        site = make_site(author=f"Due {n}", import_status="done")
        tau = days_before(today(), 20)
        make_estimate(site, rate=0.01 * (n + 1), tau=tau)
        make_estimate(site, rate=0.02 * (n + 1), tau=tau, level="website")
        make_posterior_estimate(site, rate=0.01 * (n + 1), tau=tau)
        days = [200 - 15 * i for i in range(12)]
        copies(site, today(), days, [False] + [i <= n for i in range(11)])  # n + 1 changes
    response = logged_in_client.get("/")
    page = response.content.decode()
    assert re.search(r'<span class="value">12</span><span class="label">imported', page)
    figure = json.loads(
        re.search(r'id="interval-histogram-data"[^>]*>(.*?)</script>', page, re.S).group(1)
    )
    names = {trace.get("name", "") for trace in figure["data"]}
    assert any("Homepage" in n for n in names) and any("Website" in n for n in names)
    assert "Due 11" in page  # the fastest site is due first


def test_the_home_page_query_count_does_not_grow_with_sites(logged_in_client: Any) -> None:
    """Overview asks the database as many times for 2,000 seeds, with copies, as for 20."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from archive.models import Site

    def queries(first: int, last: int) -> int:
        Site.objects.bulk_create(
            Site(seed_url=f"http://u.edu/~s{i}/", canonical_key=f"edu,u)/~s{i}")
            for i in range(first, last)
        )
        for site in Site.objects.filter(captures__isnull=True)[:20]:
            copies(site, today(), [90, 60, 30], [False, True, True])
        with CaptureQueriesContext(connection) as captured:
            assert logged_in_client.get("/").status_code == 200
        return len(captured.captured_queries)

    few = queries(0, 20)
    assert queries(20, 2000) == few <= 20


def test_the_default_due_list_reads_the_posterior_since_the_newest_copy(settings: Any) -> None:
    """Two sites with the same history of changes: the one whose newest copy is older is due
    first, and its p is higher."""
    settings.HACS_THETA, settings.HACS_BUDGET, settings.HACS_E_DAYS = 0.0, None, 7.0
    now = today()
    fresh, stale = make_site(author="Fresh"), make_site(author="Stale")
    copies(fresh, now, [300, 200, 100, 2], [False, True, True, False])
    copies(stale, now, [300, 200, 100, 40], [False, True, True, False])
    due = due_today(day=now)
    assert due.count == 2 and [d.site.pk for d in due.first] == [stale.pk, fresh.pk]
    assert due.first[0].probability > due.first[1].probability > 0


def test_the_histogram_tells_the_levels_apart_and_labels_its_log_axis_in_days(
    logged_in_client: Any,
) -> None:
    from dashboard.charts import style

    for n, interval in enumerate((1.5, 4.0, 12.0, 35.0, 90.0, 400.0)):
        site = make_site(author=f"Every {n}", import_status="done")
        make_estimate(site, rate=1.0 / interval)
        make_estimate(site, rate=2.0 / interval, level="website")
        make_posterior_estimate(site, rate=1.0 / interval)  # the page counts these
    page = logged_in_client.get("/").content.decode()
    figure = json.loads(
        re.search(r'id="interval-histogram-data"[^>]*>(.*?)</script>', page, re.S).group(1)
    )
    homepage, website = figure["data"]
    assert homepage["name"].startswith("Homepage") and website["name"].startswith("Website")
    assert homepage["marker"]["color"] == style.BLUE
    assert website["marker"]["color"] == style.VERMILLION
    assert homepage["offset"] < website["offset"], "side by side, homepage first"
    axis = figure["layout"]["xaxis"]
    # Intervals from 0.75 to 400 days: ticks at 1, 2, 5 … 500 days, every one inside the axis.
    assert axis["ticktext"] == ["1", "2", "5", "10", "20", "50", "100", "200", "500"]
    low, high = axis["range"]
    assert all(low <= value <= high for value in axis["tickvals"])


def test_due_today_is_the_crawl_lists_rule_and_old_histories_are_not_captured_lately(
    logged_in_client: Any, settings: Any
) -> None:
    """One meaning of "due" (issue: a WARC whose history ended years ago made its sites due at
    P = 1.00 on Overview though no list of the 1,095-day window holds them): Overview counts
    the sites today's list holds, before the daily list is built (the stored estimates read by
    its rule) and after (the list itself), and counts the old ones as not captured lately."""
    settings.HACS_THETA, settings.HACS_BUDGET = 0.5, None
    now = today()
    recent = []
    for n in range(3):
        site = make_site(author=f"Recent {n}")
        copies(site, now, [80 + n, 60 + n, 40 + n, 20 + n], [False, True, True, True])
        recent.append(site)
    calm = make_site(author="Calm")
    copies(calm, now, [400, 300, 200, 100, 1], [False, False, False, False, False])
    for n in range(2):  # histories that ended in 2018: outside the list's window
        old = make_site(author=f"Old {n}")
        copies(old, now, [3000 + n, 2950, 2900], [False, True, True])
    before_list = due_today(day=now)
    assert before_list.built is None
    assert before_list.count == 3
    assert {d.site.author for d in before_list.first} == {"Recent 0", "Recent 1", "Recent 2"}
    page = re.sub(r"\s+", " ", logged_in_client.get("/").content.decode())
    due_stat = '<span class="value">3</span><span class="label"><a href="/crawl-list/">due today'
    assert due_stat + "</a> (p ≥ 0.5)" in page
    assert "Old 0" not in page
    # The daily list, once built, is what Overview shows.
    crawl = crawl_list_store(
        day=now, options=CrawlListOptions.from_settings(), source=CrawlList.Source.DAILY_JOB
    ).crawl_list
    assert crawl.source == CrawlList.Source.DAILY_JOB
    after = due_today(day=now)
    assert after.built == crawl and after.count == crawl.entries.count()
    assert [d.site.pk for d in after.first] == list(
        crawl.entries.order_by("rank").values_list("site_id", flat=True)
    )
    page = logged_in_client.get("/").content.decode()
    assert f'href="/crawl-list/?list={crawl.pk}">today\'s daily list</a>' in page
