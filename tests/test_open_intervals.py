"""Open intervals: a site captured less often than it changes is stored, listed and shown as
"≤ N d: captured too rarely to say how often" (``hacs.bayes.interval_bounds``)."""

from __future__ import annotations

import csv
import io
from datetime import date, datetime, timedelta
from typing import Any

import pytest
from django.urls import reverse

from archive.models import Site
from hacs.clock import reference_instant
from scheduling.crawl_lists import CrawlListOptions, crawl_list_csv, crawl_list_store
from scheduling.estimates import estimates_recompute
from scheduling.models import CrawlList, Estimate, Level, Method
from tests.factories import add_observations, make_posterior_estimate, make_site

pytestmark = pytest.mark.django_db
DAY = date(2018, 6, 1)
FLAG = "captured too rarely to say how often"


def before(*days: float) -> list[datetime]:
    t = reference_instant(DAY)
    return [t - timedelta(days=d) for d in days]


@pytest.fixture()
def sites() -> dict[str, Site]:
    """Rare: a copy every 45 days, each after the first holding new links. Dense: a copy every
    5 days, one in three with new links. Calm: every 30 days, one in four."""
    rare = make_site(author="Rare", seed_url="http://a.edu/~rare/", canonical_key="edu,a)/~rare")
    add_observations(
        rare, before(*[45.0 * k + 2 for k in range(12, -1, -1)]), updates=[False] + [True] * 12
    )
    dense = make_site(author="Dense", seed_url="http://a.edu/~den/", canonical_key="edu,a)/~den")
    add_observations(
        dense,
        before(*[5.0 * k + 1 for k in range(60, -1, -1)]),
        updates=[k % 3 == 1 for k in range(61)],
    )
    calm = make_site(author="Calm", seed_url="http://a.edu/~calm/", canonical_key="edu,a)/~calm")
    add_observations(
        calm,
        before(*[30.0 * k + 3 for k in range(16, -1, -1)]),
        updates=[k % 4 == 3 for k in range(17)],
    )
    estimates_recompute(levels=[Level.HOMEPAGE], methods=[Method.POSTERIOR])
    return {"rare": rare, "dense": dense, "calm": calm}


def stored(site: Site) -> Estimate:
    return Estimate.objects.get(site=site, level=Level.HOMEPAGE, method=Method.POSTERIOR)


def test_a_site_captured_less_often_than_it_changes_stores_an_open_interval(
    sites: dict[str, Site],
) -> None:
    rare, dense = stored(sites["rare"]), stored(sites["dense"])
    assert rare.interval_open and rare.interval_low is None
    assert rare.interval_high is not None and 0 < rare.interval_high <= 45.0
    # The point estimate is the posterior mean, as before.
    assert rare.rate == pytest.approx(rare.posterior_shape / rare.posterior_rate, rel=1e-12)
    assert not dense.interval_open
    assert dense.interval_low is not None and dense.interval_high is not None
    assert dense.interval_low < 1 / dense.rate < dense.interval_high


def test_the_crawl_list_keeps_the_flag_and_its_csv_leaves_the_lower_bound_empty(
    sites: dict[str, Site], logged_in_client: Any
) -> None:
    options = CrawlListOptions(method=Method.POSTERIOR, theta=0.0, history_days=1000, e_days=7)
    crawl = crawl_list_store(day=DAY, options=options, source=CrawlList.Source.PAGE).crawl_list
    entry = crawl.entries.get(site=sites["rare"])
    assert entry.interval_open and entry.interval_low is None and entry.interval_high
    assert not crawl.entries.get(site=sites["dense"]).interval_open
    rows = list(csv.DictReader(io.StringIO("".join(crawl_list_csv(crawl)))))
    rare = next(row for row in rows if row["url"] == sites["rare"].seed_url)
    dense = next(row for row in rows if row["url"] == sites["dense"].seed_url)
    assert rare["interval_low_days"] == "" and float(rare["interval_high_days"]) > 0
    assert float(dense["interval_low_days"]) < float(dense["interval_high_days"])
    page = logged_in_client.get(reverse("crawl-list"), {"list": crawl.pk}).content.decode()
    high = f"{entry.interval_high:.0f}"
    assert f"1/λ ≤ {high} d: {FLAG}" in page
    assert page.count(FLAG) == 1


def test_the_sites_table_flags_an_open_interval_and_explains_it(
    sites: dict[str, Site], logged_in_client: Any
) -> None:
    response = logged_in_client.get(reverse("site-list"))
    rows = {row.site.author: row for row in response.context["rows"]}
    assert rows["Rare"].interval_open and not rows["Dense"].interval_open
    text = response.content.decode()
    assert f"≤ {stored(sites['rare']).interval_high:.0f} d: {FLAG}" in text
    assert text.count(f": {FLAG}</span>") == 1  # Dense and Calm keep their two-sided bands
    dense = stored(sites["dense"])
    assert f"{dense.interval_low:.0f}–{dense.interval_high:.0f}</span>" in text
    assert "note-open-interval" in text and "at least every N days" in text


def test_the_sites_table_has_no_note_when_no_interval_is_open(logged_in_client: Any) -> None:
    make_posterior_estimate(make_site(author="Closed"), interval_low=20.0, interval_high=80.0)
    text = logged_in_client.get(reverse("site-list")).content.decode()
    assert "20–80" in text
    assert FLAG not in text and "note-open-interval" not in text


def test_the_site_page_flags_an_open_interval_and_explains_it(
    sites: dict[str, Site], logged_in_client: Any
) -> None:
    rare = stored(sites["rare"])
    text = logged_in_client.get(reverse("site-detail", args=[sites["rare"].pk])).content.decode()
    assert f"(≤ {rare.interval_high:.0f} d: {FLAG})" in text
    assert "note-open-interval" in text
    dense = stored(sites["dense"])
    other = logged_in_client.get(reverse("site-detail", args=[sites["dense"].pk])).content.decode()
    assert f"({dense.interval_low:.0f}–{dense.interval_high:.0f})" in other
    assert FLAG not in other and "note-open-interval" not in other


def test_the_site_page_says_which_rate_its_interval_states(
    sites: dict[str, Site], logged_in_client: Any
) -> None:
    dense = stored(sites["dense"])
    text = logged_in_client.get(reverse("site-detail", args=[sites["dense"].pk])).content.decode()
    assert "pseudo-true rate at the site's capture gaps" in text.replace("&#x27;", "'")
    span = f'capture gaps (the pseudo-true rate)">({dense.interval_low:.0f}–'
    assert span in text.replace("&#x27;", "'")
