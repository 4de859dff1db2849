"""What a librarian sees in Debian's Chromium: archive text in a chart's hover box is text, never
a link or markup; a demo capture opens in HACS's own demo archive, under its banner; the
Overview histogram tells the levels apart; the Evaluation page explains each ranking model."""

from __future__ import annotations

import io
from datetime import UTC, datetime
from typing import Any

import pytest
from django.core.management import call_command

from archive.models import Site
from tests.factories import (
    make_capture,
    make_estimate,
    make_posterior_estimate,
    make_site,
    make_user,
)
from tests.support.browser import PASSWORD, log_in
from tests.test_evaluation_views import done_run, real_results

pytestmark = [pytest.mark.browser, pytest.mark.integration, pytest.mark.django_db(transaction=True)]

LINK = '<a href="http://x">x</a>'


def test_hovering_a_capture_whose_url_holds_a_link_shows_the_link_as_text(
    browser_page: Any, live_server: Any
) -> None:
    make_user("viewer", role="viewer", password=PASSWORD)
    site = make_site(seed_url="http://u.example.edu/~ana/", author="Ana")
    make_capture(
        site,
        url=f"http://u.example.edu/~ana/{LINK}",
        urlkey="edu,example,u)/~ana/x",
        page_key="edu,example,u)/~ana/x",
        depth=1,
        timestamp=datetime(2020, 3, 1, tzinfo=UTC),
    )
    page = browser_page
    log_in(page, live_server.url, "viewer")
    page.goto(f"{live_server.url}/sites/{site.pk}/")
    # The capture is the only point of the timeline's captures row at website level.
    point = page.locator("#timeline-chart .scatterlayer .point").first
    point.wait_for()
    point.hover(force=True)
    hover = page.locator("#timeline-chart .hoverlayer")
    hover.get_by_text("observation 200", exact=False).first.wait_for()
    shown = page.evaluate(
        "() => Array.from(document.querySelectorAll('#timeline-chart .hoverlayer text'))"
        ".map(t => t.textContent).join(' ')"
    )
    assert f"/~ana/{LINK} · observation 200" in shown
    assert hover.locator("a").count() == 0
    assert hover.locator("b").count() == 0


def test_a_demo_capture_opens_in_hacss_own_demo_archive_with_its_banner(
    browser_page: Any, live_server: Any, settings: Any, tmp_path: Any
) -> None:
    settings.VAR_DIR = tmp_path
    call_command("load_demo", sites=3, seed=5, stdout=io.StringIO())
    make_user("viewer", role="viewer", password=PASSWORD)
    site = Site.objects.order_by("pk").first()
    page = browser_page
    log_in(page, live_server.url, "viewer")
    page.goto(f"{live_server.url}/sites/{site.pk}/")
    page.locator("td.when a").first.click()
    banner = page.locator("#hacs-demo-archive-banner")
    banner.wait_for()
    page.wait_for_load_state()
    assert "HACS demo archive — synthetic." in banner.inner_text()
    assert page.url.startswith(f"{live_server.url}/demo-archive/")
    # A link on the archived page leads to the demo archive's nearest copy, banner and all.
    inside = page.locator("body a[href^='/demo-archive/']")
    assert inside.count() > 0
    inside.first.click()
    page.wait_for_url(f"{live_server.url}/demo-archive/**")
    page.wait_for_load_state()
    # An archived page under the banner, or HACS's own page saying what the archive holds there.
    shown = page.locator("#hacs-demo-archive-banner").count()
    said = page.get_by_role("heading", name="Demo archive").count()
    assert shown + said == 1


def test_the_overview_histogram_draws_each_level_apart_with_readable_ticks(
    browser_page: Any, live_server: Any
) -> None:
    """Homepage and website bars are drawn side by side in two colours, and the log axis carries
    1-2-5 ticks a librarian can read (not just two powers of ten)."""
    make_user("viewer", role="viewer", password=PASSWORD)
    for i, interval in enumerate((6.0, 14.0, 30.0, 45.0, 90.0, 200.0, 400.0, 900.0)):
        site = make_site(seed_url=f"http://u.example.edu/~s{i}/")
        make_estimate(site, rate=1 / interval)  # the histogram reads the paper's estimate
        make_estimate(site, level="website", rate=1 / (interval * 0.7))
        make_posterior_estimate(site, rate=1 / interval)  # the page's count of estimated sites
    page = browser_page
    log_in(page, live_server.url, "viewer")
    page.goto(f"{live_server.url}/")
    bars = page.locator("#interval-histogram .barlayer .trace")
    bars.first.wait_for()
    assert bars.count() == 2
    fills = page.evaluate(
        "() => Array.from(document.querySelectorAll('#interval-histogram .barlayer .trace'))"
        ".map(t => t.querySelector('.point path').style.fill)"
    )
    assert len(set(fills)) == 2, fills
    ticks = page.evaluate(
        "() => Array.from(document.querySelectorAll('#interval-histogram .xtick text'))"
        ".map(t => t.textContent)"
    )
    assert {"10", "20", "50", "100", "200", "500"} <= set(ticks), ticks


def test_the_ranking_charts_key_names_every_model_and_leads_to_its_formula(
    browser_page: Any, live_server: Any
) -> None:
    """Under the P@K and NDCG charts, one line per model; a name leads to the model's formula
    further down the page (GP4C's estimators under the paper's own names)."""
    make_user("viewer", role="viewer", password=PASSWORD)
    done_run(real_results())
    page = browser_page
    log_in(page, live_server.url, "viewer")
    page.goto(f"{live_server.url}/evaluation/")
    key = page.locator(".model-legend")
    key.wait_for()
    names = key.locator("dt a").all_inner_texts()
    for name in ("NAD", "SAD", "AAD", "GAD", "Cho–Garcia-Molina", "Last-Obs", "Random"):
        assert any(name in shown for shown in names), (name, names)
    key.locator("dt a", has_text="NAD").first.click()
    page.wait_for_url("**#model-nad")
    target = page.locator("#model-nad")
    assert target.is_visible()
    assert "Nonadaptive" in target.inner_text()
    assert "Score:" in target.inner_text()
