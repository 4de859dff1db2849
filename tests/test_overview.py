"""The Overview page: counts, the Figure 4 histogram and the sites due today."""

from __future__ import annotations

import json
import re
from datetime import date, datetime, timedelta
from typing import Any

import pytest

from dashboard.overview import due_today, sites_due
from hacs.clock import reference_instant, to_days
from hacs.estimators import change_probability
from hacs_site.clock import today
from scheduling.crawl_lists import CrawlListOptions, crawl_list_store
from scheduling.models import CrawlList
from tests.factories import make_estimate, make_posterior_estimate, make_site

pytestmark = pytest.mark.django_db
DAY = date(2018, 6, 1)


def days_before(day: date, days: float) -> datetime:
    """The instant ``days`` before the reference instant (end) of ``day``."""
    return reference_instant(day) - timedelta(days=days)


def test_sites_due_are_ranked_and_cut_by_probability() -> None:
    cases = [(0.05, 3), (0.001, 400), (0.02, 30), (None, 10), (0.0, 5), (0.2, 1)]
    sites = []
    for rate, days_ago in cases:
        site = make_site()
        make_estimate(site, rate=rate, tau=days_before(DAY, days_ago))
        sites.append(site)
    t = to_days(reference_instant(DAY))
    pairs = zip(cases, sites, strict=True)
    expected = sorted(
        ((change_probability(r, t - d, t, 7.0), s.pk) for (r, d), s in pairs if r is not None),
        reverse=True,
    )
    total, shown = sites_due(day=DAY, theta=0.0, e_days=7.0, limit=10, method="observed")
    assert total == 5  # the unknown rate is not listed
    assert [d.site.pk for d in shown] == [pk for _, pk in expected]
    for due, (p, _) in zip(shown, expected, strict=True):
        assert due.probability == pytest.approx(p, rel=1e-9)
    cutoff, _ = expected[2]
    total, shown = sites_due(day=DAY, theta=cutoff - 1e-9, e_days=7.0, method="observed")
    assert total == 3 and all(d.probability >= cutoff - 1e-9 for d in shown)


def test_the_home_page_shows_counts_histogram_and_due_sites(logged_in_client: Any) -> None:
    for n in range(12):
        site = make_site(author=f"Due {n}", import_status="done")
        tau = days_before(today(), 20)
        make_estimate(site, rate=0.01 * (n + 1), tau=tau)
        make_estimate(site, rate=0.02 * (n + 1), tau=tau, level="website")
        make_posterior_estimate(site, rate=0.01 * (n + 1), tau=tau)
    response = logged_in_client.get("/")
    page = response.content.decode()
    assert re.search(r'<span class="value">12</span><span class="label">imported', page)
    figure = json.loads(
        re.search(r'id="interval-histogram-data"[^>]*>(.*?)</script>', page, re.S).group(1)
    )
    names = {trace.get("name", "") for trace in figure["data"]}
    assert any("Homepage" in n for n in names) and any("Website" in n for n in names)
    assert "Due 11" in page  # the fastest site is due first


def test_the_home_page_query_count_does_not_grow_with_sites(
    logged_in_client: Any, django_assert_max_num_queries: Any
) -> None:
    from archive.models import Site

    Site.objects.bulk_create(
        Site(seed_url=f"http://u.edu/~s{i}/", canonical_key=f"edu,u)/~s{i}") for i in range(2000)
    )
    with django_assert_max_num_queries(16):
        assert logged_in_client.get("/").status_code == 200


def test_the_default_due_list_reads_the_posterior_since_the_newest_copy() -> None:
    """Two sites with the same posterior: the one whose newest copy is older is due first."""
    from hacs.bayes import change_probability_since

    fresh, stale = make_site(), make_site()
    make_posterior_estimate(
        fresh, rate=0.02, tau=days_before(DAY, 100), last_copy=days_before(DAY, 2)
    )
    make_posterior_estimate(
        stale, rate=0.02, tau=days_before(DAY, 100), last_copy=days_before(DAY, 40)
    )
    total, shown = sites_due(day=DAY, theta=0.0, e_days=7.0)
    assert total == 2 and [d.site.pk for d in shown] == [stale.pk, fresh.pk]
    expected = change_probability_since(2.0, 100.0, 47.0)
    assert shown[0].probability == pytest.approx(float(expected), rel=1e-9)


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
        make_posterior_estimate(
            site, rate=0.5, tau=days_before(now, 30 + n), last_copy=days_before(now, 20 + n)
        )
        recent.append(site)
    calm = make_site(author="Calm")
    make_posterior_estimate(
        calm, rate=0.0005, tau=days_before(now, 40), last_copy=days_before(now, 1)
    )
    for n in range(2):  # histories that ended in 2018: p = 1.00, outside the window
        old = make_site(author=f"Old {n}")
        make_posterior_estimate(
            old, rate=0.5, tau=days_before(now, 3000), last_copy=days_before(now, 2900)
        )
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
