"""The list's own yield in Debian's Chromium, on a laptop (1366 px) and a phone (390 px): the
Crawl list page and the Overview draw the bars and both expectations, with a legend, and the
page never scrolls sideways.

With ``HACS_SCREENSHOTS=DIR`` in the environment the test also saves what it saw there
(``crawl-list-1366.png``, …), for a person to look at; it asserts nothing more then.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from django.utils import timezone

from handoff.models import ListYield
from scheduling.models import CrawlList, CrawlListEntry
from tests.factories import make_site, make_user
from tests.support.browser import PASSWORD, log_in

pytestmark = [pytest.mark.browser, pytest.mark.integration, pytest.mark.django_db(transaction=True)]
SIZES = {"1366": {"width": 1366, "height": 900}, "390": {"width": 390, "height": 844}}


def three_weeks_of_yields() -> None:
    """Twenty-one daily lists of 40 sites, each handed off at 05:00, with its crawl counted."""
    sites = [
        make_site(
            seed_url=f"http://www.cs.example.edu/~w{n}/", canonical_key=f"edu,example,cs)/~w{n}"
        )
        for n in range(40)
    ]
    now = timezone.now()
    for back in range(21, 0, -1):
        moment = (now - timedelta(days=back)).replace(hour=5, minute=0, tzinfo=UTC)
        crawl = CrawlList.objects.create(
            date=moment.date(),
            history_days=1095,
            e_days=1,
            budget=40,
            round_robin_expected=2.0 + (back % 4) * 0.5,
        )
        CrawlListEntry.objects.bulk_create(
            CrawlListEntry(crawl_list=crawl, rank=n, site=site, probability=0.3 - n * 0.005)
            for n, site in enumerate(sites, start=1)
        )
        reached = 40 - back % 5
        ListYield.objects.create(
            crawl_list=crawl,
            handed_off_at=moment,
            listed=40,
            expected=8.1,
            reached=reached,
            changed=5 + (back * 7) % 6,
            computed_at=now,
        )


@pytest.mark.parametrize("width", ["1366", "390"])
@pytest.mark.parametrize("path", ["/crawl-list/", "/"])
def test_the_yield_chart_is_drawn_at_laptop_and_phone_width(
    browser_page: Any, live_server: Any, width: str, path: str
) -> None:
    three_weeks_of_yields()
    make_user("viewer", role="viewer", password=PASSWORD)
    page = browser_page
    log_in(page, live_server.url, "viewer")
    page.set_viewport_size(SIZES[width])
    page.goto(f"{live_server.url}{path}")
    chart = page.locator("#crawl-yield-chart")
    chart.locator(".barlayer .point").first.wait_for()
    assert chart.locator(".barlayer .point").count() == 2 * 21  # reached and changed, per list
    assert chart.locator(".scatterlayer .trace").count() == 2  # the two expectations
    legend = page.evaluate(
        "() => Array.from(document.querySelectorAll('#crawl-yield-chart .legend text'))"
        ".map(t => t.textContent).join(' ')"
    )
    assert "Round-robin" in legend and "reached" in legend and "changed" in legend
    box = chart.bounding_box()
    assert box is not None and box["width"] <= SIZES[width]["width"]
    sideways = page.evaluate("() => document.documentElement.scrollWidth > window.innerWidth")
    assert not sideways
    shots = os.environ.get("HACS_SCREENSHOTS")
    if shots:
        name = "crawl-list" if path != "/" else "overview"
        chart.scroll_into_view_if_needed()
        Path(shots).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(shots) / f"{name}-{width}.png"), full_page=True)
        section = page.locator("section.crawl-yield")
        section.screenshot(path=str(Path(shots) / f"{name}-yield-{width}.png"))


def test_a_keyboard_reaches_the_figures_behind_the_chart(
    browser_page: Any, live_server: Any
) -> None:
    three_weeks_of_yields()
    make_user("viewer", role="viewer", password=PASSWORD)
    page = browser_page
    log_in(page, live_server.url, "viewer")
    page.goto(f"{live_server.url}/crawl-list/")
    summary = page.locator("section.crawl-yield summary")
    summary.focus()
    page.keyboard.press("Enter")
    rows = page.locator("section.crawl-yield details table tbody tr")
    rows.first.wait_for()
    assert rows.count() == 21
    first = datetime.now(UTC).date() - timedelta(days=1)
    assert rows.first.locator("time").get_attribute("datetime") == first.isoformat()
