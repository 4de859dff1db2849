"""Every page on a 390 px phone in Debian's Chromium: the page never scrolls sideways, the main
menu folds behind a "Menu" button (which works without JavaScript), wide tables scroll in their
own box and the charts fit their box; the ranking charts' axis titles stay clear of their
legends on a phone and on a laptop.

Screenshots go to ``HACS_SCREENSHOTS`` (a folder) when it is set, for a person to look at.
"""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command

from archive.models import Site
from handoff.models import HandOff
from jobs.models import JobRecord
from scheduling.models import CrawlList
from tests.factories import make_user
from tests.support.browser import PASSWORD
from tests.test_evaluation_views import done_run, real_results

pytestmark = [pytest.mark.browser, pytest.mark.integration, pytest.mark.django_db(transaction=True)]

PHONE = {"width": 390, "height": 844}
LAPTOP = {"width": 1366, "height": 768}
PAGE_WIDTH = "document.documentElement.scrollWidth"


def screenshot(page: Any, tmp_path: Path, name: str) -> None:
    folder = Path(os.environ.get("HACS_SCREENSHOTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(folder / name), full_page=True)


@pytest.fixture()
def collection(settings: Any, tmp_path: Path) -> CrawlList:
    """The demo collection with today's crawl list, two hand-offs and a finished evaluation."""
    settings.VAR_DIR = tmp_path
    call_command("load_demo", sites=6, seed=5, stdout=io.StringIO())
    call_command("crawl_list", "--theta", "0", stdout=io.StringIO())
    HandOff.objects.create(
        name="Morning crawl on Browsertrix",
        kind=HandOff.Kind.BROWSERTRIX,
        api_url="https://browsertrix.example.org",
        org_id="0f5e6c2a-1111-2222-3333-444455556666",
        workflow_id="9a8b7c6d-aaaa-bbbb-cccc-ddddeeeeffff",
        token_env="HACS_BT_TOKEN",
    )
    HandOff.objects.create(
        name="Heritrix scholars job",
        kind=HandOff.Kind.HERITRIX_ACTION,
        job_dir=str(tmp_path / "jobs" / "scholars-weekly-crawl-of-the-faculty"),
    )
    done_run(real_results())
    make_user("curator", role="librarian", password=PASSWORD)
    return CrawlList.objects.get()


def log_in(page: Any, base: str, username: str) -> None:
    """Sign in through the login page; on a phone the menu's "Overview" link is folded away,
    so the Overview page's heading says it is done."""
    page.goto(f"{base}/accounts/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.get_by_role("heading", name="Overview", exact=True).wait_for()


def wait_for_charts(page: Any) -> None:
    """Until every chart box on the page holds its drawn figure."""
    page.wait_for_load_state("networkidle")
    page.wait_for_function(
        "() => Array.from(document.querySelectorAll('.chart:not([hidden])'))"
        ".every(c => c.querySelector('svg.main-svg'))"
    )


def test_every_page_fits_a_phone(
    live_server: Any, browser_page: Any, collection: CrawlList, tmp_path: Path
) -> None:
    page, base = browser_page, live_server.url
    page.set_viewport_size(PHONE)
    page.goto(f"{base}/accounts/login/")
    assert page.evaluate(PAGE_WIDTH) <= PHONE["width"], "login"
    log_in(page, base, "curator")
    site = Site.objects.order_by("pk").first()
    assert site is not None
    page.goto(f"{base}/sites/{site.pk}/")
    demo_archive = page.locator("td.when a").first.get_attribute("href")
    pages = {
        "overview": "/",
        "sites": "/sites/",
        "site": f"/sites/{site.pk}/",
        "crawl-list": f"/crawl-list/?list={collection.pk}",
        "evaluation": "/evaluation/",
        "jobs": "/jobs/",
        "upload": "/sites/upload/",
        "demo-archive": demo_archive,
    }
    wide = {}
    for name, path in pages.items():
        page.goto(f"{base}{path}")
        wait_for_charts(page)
        wide[name] = page.evaluate(PAGE_WIDTH)
        screenshot(page, tmp_path, f"phone-{name}.png")
    assert wide == dict.fromkeys(pages, PHONE["width"])
    # The hand-offs, with their long job directories and workflow ids, stay inside the list.
    page.goto(f"{base}/crawl-list/?list={collection.pk}")
    hand_offs = page.locator("#hand-offs tr", has_text="Heritrix scholars job")
    assert hand_offs.count() == 1
    assert page.locator("#hand-offs").bounding_box()["width"] <= PHONE["width"]


def upload_check_width(page: Any, base: str, tmp_path: Path) -> int:
    """The upload's check of a list with long lines and a bad one."""
    seeds = tmp_path / "seeds-with-a-rather-long-file-name-for-a-phone.csv"
    seeds.write_text(
        "url,author,tags\n"
        "http://www.cs.example.edu/~a-very-long-user-name-that-does-not-wrap/,Ada,physics\n"
        "not a url at all, but a long line that a phone must wrap somewhere sensible,Bob,\n"
        "http://www.cs.example.edu/~a-very-long-user-name-that-does-not-wrap/index.html,Ada,\n"
    )
    page.goto(f"{base}/sites/upload/")
    page.get_by_label("Seed list file (CSV or plain text)").set_input_files(str(seeds))
    page.get_by_role("button", name="Check the list").click()
    page.locator("#report").wait_for()
    page.wait_for_load_state("load")
    width = page.evaluate(PAGE_WIDTH)
    screenshot(page, tmp_path, "phone-upload-check.png")
    return width


def list_built_width(page: Any, base: str, tmp_path: Path) -> int:
    """A list just built, with an experiment's notice."""
    page.goto(f"{base}/crawl-list/")
    page.get_by_label("θ").fill("")
    page.get_by_label("Budget k", exact=False).first.fill("3")
    page.get_by_role("button", name="Build crawl list").click()
    page.locator("#experiment-notice").wait_for()
    width = page.evaluate(PAGE_WIDTH)
    screenshot(page, tmp_path, "phone-list-built.png")
    return width


def site_paused_width(page: Any, base: str, tmp_path: Path) -> int:
    """A seed paused, its Manage box open."""
    site = Site.objects.order_by("pk").first()
    assert site is not None
    page.goto(f"{base}/sites/{site.pk}/")
    page.get_by_role("button", name="Pause").click()
    page.locator("#paused-notice").wait_for()
    page.locator("summary", has_text="Remove this seed").click()
    width = page.evaluate(PAGE_WIDTH)
    screenshot(page, tmp_path, "phone-site-manage.png")
    return width


def failed_jobs_width(page: Any, base: str, tmp_path: Path) -> int:
    """The Jobs page with a failed import whose reasons are listed below its sentence."""
    reason = "The CDX server answered 503 five times; retried in the next pass."
    JobRecord.objects.create(
        kind=JobRecord.Kind.IMPORT,
        label="import of 2 sites",
        status=JobRecord.Status.FAILED,
        total=2,
        done=2,
        counts={"failed": 2},
        error="All 2 failed; the reasons are listed below.",
        failures=[
            {"item": "http://www.cs.example.edu/~gone/", "reason": reason},
            {"item": "http://www.cs.example.edu/~also-gone/", "reason": reason},
        ],
    )
    page.goto(f"{base}/jobs/")
    first = page.get_by_text(reason).first
    first.wait_for()
    assert first.is_visible(), "the reasons are below the sentence, not folded away"
    box = first.bounding_box()
    assert box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"], box
    width = page.evaluate(PAGE_WIDTH)
    screenshot(page, tmp_path, "phone-jobs-failed.png")
    return width


def test_every_result_page_fits_a_phone(
    live_server: Any, browser_page: Any, collection: CrawlList, tmp_path: Path
) -> None:
    """The pages an action leads to, not only those a link opens: the upload's check and its
    report, a list just built, the Feeds page with its Copy buttons, a seed's Manage box, a
    seed paused, the Sites table filtered, an experiment's notice."""
    page, base = browser_page, live_server.url
    page.set_viewport_size(PHONE)
    log_in(page, base, "curator")
    widths = {
        "upload-check": upload_check_width(page, base, tmp_path),
        "list-built": list_built_width(page, base, tmp_path),
        "site-paused": site_paused_width(page, base, tmp_path),
        "jobs-failed": failed_jobs_width(page, base, tmp_path),
    }
    for name, path in {"feeds": "/feeds/", "sites-paused": "/sites/?status=paused"}.items():
        page.goto(f"{base}{path}")
        page.wait_for_load_state("load")
        widths[name] = page.evaluate(PAGE_WIDTH)
        screenshot(page, tmp_path, f"phone-{name}.png")
    assert widths == dict.fromkeys(widths, PHONE["width"])


def test_the_menu_button_leads_to_every_page_with_and_without_javascript(
    live_server: Any, browser_page: Any, collection: CrawlList
) -> None:
    page, base = browser_page, live_server.url
    page.set_viewport_size(PHONE)
    log_in(page, base, "curator")
    links = page.locator("nav[aria-label=Main] a")
    assert links.count() >= 6
    assert not any(link.is_visible() for link in links.all()), "the menu starts folded"
    menu = page.locator("summary", has_text="Menu")
    assert menu.is_visible()
    menu.click()
    assert all(link.is_visible() for link in links.all())
    names = links.all_inner_texts()
    assert {"Overview", "Sites", "Upload seeds", "Crawl list", "Evaluation", "Jobs"} <= set(names)
    links.filter(has_text="Crawl list").click()
    page.wait_for_url("**/crawl-list/")
    assert page.get_by_role("heading", name="Crawl list", exact=True).is_visible()

    # A <details>: the same without JavaScript.
    context = page.context.browser.new_context(viewport=PHONE, java_script_enabled=False)
    try:
        plain = context.new_page()
        log_in(plain, base, "curator")
        plain.locator("summary", has_text="Menu").click()
        plain.locator("nav[aria-label=Main] a", has_text="Evaluation").click()
        plain.wait_for_url("**/evaluation/")
        assert plain.evaluate(PAGE_WIDTH) <= PHONE["width"]
    finally:
        context.close()

    # On a laptop the links show in a row and the button is not there.
    page.set_viewport_size(LAPTOP)
    page.goto(f"{base}/")
    assert not page.locator("summary", has_text="Menu").is_visible()
    assert all(link.is_visible() for link in links.all())
    boxes = [link.bounding_box() for link in links.all()]
    assert len({round(box["y"]) for box in boxes}) == 1, "the links stand in one row"


def test_the_crawl_list_scrolls_in_its_own_box(
    live_server: Any, browser_page: Any, collection: CrawlList
) -> None:
    page, base = browser_page, live_server.url
    page.set_viewport_size(PHONE)
    log_in(page, base, "curator")
    page.goto(f"{base}/crawl-list/?list={collection.pk}")
    box = page.locator("#ranked-wrap")
    assert box.locator("table.ranked tbody tr").count() == collection.entries.count() > 0
    scroll_width, client_width = box.evaluate("el => [el.scrollWidth, el.clientWidth]")
    assert scroll_width > client_width, "the table scrolls inside its box"
    assert page.evaluate(PAGE_WIDTH) <= PHONE["width"], "and the page does not"
    box.evaluate("el => { el.scrollLeft = el.scrollWidth; }")
    assert box.evaluate("el => el.scrollLeft") > 0
    assert page.evaluate("window.scrollX") == 0


def test_the_site_timeline_fits_a_phone_and_follows_a_turn_of_the_screen(
    live_server: Any, browser_page: Any, collection: CrawlList, tmp_path: Path
) -> None:
    page, base = browser_page, live_server.url
    page.set_viewport_size(PHONE)
    log_in(page, base, "curator")
    site = Site.objects.order_by("pk").first()
    assert site is not None
    page.goto(f"{base}/sites/{site.pk}/")
    wait_for_charts(page)
    chart = page.locator("#timeline-chart")
    svg = chart.locator("svg.main-svg").first

    def widths() -> tuple[float, float]:
        return svg.bounding_box()["width"], chart.bounding_box()["width"]

    drawn, box = widths()
    assert drawn <= box < PHONE["width"]
    assert chart.bounding_box()["x"] + drawn <= PHONE["width"]
    # Not squashed: the four rows (captures and updates at two levels) keep their height, and
    # the row labels leave the captures most of the width.
    plot = chart.locator(".nsewdrag").first.bounding_box()
    assert plot["height"] >= 4 * 35, plot
    assert plot["width"] >= 0.6 * drawn, plot
    screenshot(page, tmp_path, "phone-timeline.png")

    page.set_viewport_size({"width": 844, "height": 390})  # the phone turned sideways
    page.wait_for_function(
        "w => document.querySelector('#timeline-chart svg.main-svg').getBoundingClientRect()"
        ".width > w",
        arg=drawn + 200,
    )
    drawn, box = widths()
    assert drawn <= box < 844
    page.set_viewport_size(PHONE)
    page.wait_for_function(
        "w => document.querySelector('#timeline-chart svg.main-svg').getBoundingClientRect()"
        ".width <= w",
        arg=PHONE["width"],
    )
    assert page.evaluate(PAGE_WIDTH) <= PHONE["width"]


@pytest.mark.parametrize("viewport", [PHONE, LAPTOP], ids=["phone", "laptop"])
def test_the_ranking_charts_axis_titles_stay_clear_of_their_legends(
    live_server: Any, browser_page: Any, viewport: dict[str, int], tmp_path: Path
) -> None:
    """With the learned schedulers' lines the legend holds twelve entries and wraps to several
    rows; the axis title above it keeps its own room."""
    results = real_results()
    for row in [r for r in results["pak"] if r["model"] == "hacs"]:
        results["pak"].append({**row, "model": "gp4c"})
        results["pak"].append({**row, "model": "lws"})
    for row in [r for r in results["budget"] if r["model"] == "hacs"]:
        results["budget"].append({**row, "model": "gp4c"})
        results["budget"].append({**row, "model": "lws"})
    done_run(results)
    make_user("viewer", role="viewer", password=PASSWORD)
    page, base = browser_page, live_server.url
    page.set_viewport_size(viewport)
    log_in(page, base, "viewer")
    page.goto(f"{base}/evaluation/")
    wait_for_charts(page)
    for chart_id in ("chart-pak", "chart-ndcg"):
        chart = page.locator(f"#{chart_id}")
        entries = chart.locator(".legend .legendtext").evaluate_all(
            "texts => texts.map(t => t.textContent)"
        )
        assert "GP4C (learned)" in entries and "LWS (learned)" in entries
        title = chart.locator(".g-xtitle").bounding_box()
        legend = chart.locator(".legend").bounding_box()
        svg = chart.locator("svg.main-svg").first.bounding_box()
        assert title["y"] + title["height"] <= legend["y"] + 0.5, (chart_id, title, legend)
        assert svg["width"] <= viewport["width"]
        chart.screenshot(path=str(tmp_path / f"{chart_id}.png"))
    assert page.evaluate(PAGE_WIDTH) <= viewport["width"]
