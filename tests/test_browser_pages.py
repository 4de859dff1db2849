"""Pages in Debian's Chromium at 1366×768: an upload added without choosing its file again, the
Jobs page's long failures kept inside the page, and the page a viewer sees when refused.

Screenshots go to ``HACS_SCREENSHOTS`` (a folder) when it is set, for a person to look at.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from archive.models import Site
from jobs.models import JobRecord
from tests.factories import make_user
from tests.support.browser import PASSWORD, log_in

pytestmark = [pytest.mark.browser, pytest.mark.integration, pytest.mark.django_db(transaction=True)]

FITS = "document.documentElement.scrollWidth <= window.innerWidth"


def screenshot(page: Any, tmp_path: Path, name: str) -> None:
    folder = Path(os.environ.get("HACS_SCREENSHOTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(folder / name), full_page=True)


def test_a_checked_file_is_added_without_choosing_it_again(
    live_server: Any, browser_page: Any, redis_url: str, settings: Any, tmp_path: Path
) -> None:
    settings.VAR_DIR = tmp_path
    page, base = browser_page, live_server.url
    make_user("curator", role="librarian", password=PASSWORD)
    seeds = tmp_path / "history-dept.csv"
    seeds.write_text(
        "url,author,tags\n"
        "http://cs.uni.edu/~ada/,Ada Lovelace,ml;theory\n"
        "http://cs.uni.edu/~dmitri/home.html,Dmitri,\n"
        "https://www.cs.uni.edu/~dmitri/,Dmitri again,\n"
        "not a url at all,,\n"
    )
    log_in(page, base, "curator")
    page.goto(f"{base}/sites/upload/")
    page.get_by_label("Seed list file (CSV or plain text)").set_input_files(str(seeds))
    page.get_by_role("button", name="Check the list").click()
    page.locator("table.rejected").wait_for()
    page.wait_for_load_state()
    held = page.locator("#held-file")
    assert "Adding history-dept.csv" in held.inner_text()
    assert "4 seed lines" in held.inner_text()
    rejected = page.locator("table.rejected tbody tr")
    assert rejected.count() == 1 and "Not a URL" in rejected.inner_text()
    assert rejected.locator("td.num").inner_text() == "5"
    merged = page.locator("table", has=page.get_by_text("Same site as line"))
    assert merged.locator("tbody td").all_inner_texts()[:1] == ["4"]  # Dmitri's two lines
    screenshot(page, tmp_path, "upload-checked.png")
    assert Site.objects.count() == 0

    # No file chosen again: the one checked is added.
    page.get_by_role("button", name="Add and import").click()
    page.wait_for_selector("text=history-dept.csv added")
    assert sorted(Site.objects.values_list("author", flat=True)) == ["Ada Lovelace", "Dmitri"]
    assert JobRecord.objects.filter(kind="import").count() == 1
    screenshot(page, tmp_path, "upload-added.png")


def test_long_failures_wrap_inside_the_jobs_page(
    live_server: Any, browser_page: Any, redis_url: str, tmp_path: Path
) -> None:
    page, base = browser_page, live_server.url
    make_user("curator", role="librarian", password=PASSWORD)
    long_url = "http://cs.uni.edu/~ada/" + "very-long-directory-name-" * 12 + "index.html"
    trace = "\n".join(
        f'  File "/srv/hacs/archive/pipeline.py", line {n}, in step' for n in range(30)
    )
    JobRecord.objects.create(
        rq_id="job-long",
        kind="import",
        queue="import",
        status="partial",
        total=2,
        done=2,
        error="RuntimeError: " + "the archive kept the connection open and sent nothing " * 8,
        failures=[
            {"item": long_url, "reason": "The CDX server answered 503 " * 20},
            {
                "item": "http://cs.uni.edu/~bob/",
                "reason": f"Traceback (most recent call last):\n{trace}\nOSError: disk full",
            },
        ],
    )
    log_in(page, base, "curator")
    page.goto(f"{base}/jobs/")
    page.locator("details.failures > summary").click()
    for toggle in page.locator("details.raw summary").all():
        toggle.click()
    assert page.evaluate(FITS), "the Jobs page is wider than the window"
    row = page.locator("#jobs-table tbody tr").first
    assert row.locator("[data-field=error]").inner_text().startswith("The archive kept")
    assert "Traceback" in row.locator("details.failures pre").last.inner_text()
    page.locator("details.failures ul").evaluate("el => { el.scrollTop = 0; }")
    screenshot(page, tmp_path, "jobs-long-failures.png")
    with page.expect_response(lambda r: "/jobs/status.json" in r.url):
        pass  # the page's poll redraws the row from the status endpoint
    page.wait_for_function("() => document.querySelector('[data-field=percent]').textContent")
    assert page.evaluate(FITS)
    assert row.locator("[data-field=error]").inner_text().startswith("The archive kept")


def test_a_viewer_sees_what_the_role_allows_and_the_favicon(
    live_server: Any, browser_page: Any, redis_url: str, tmp_path: Path
) -> None:
    page, base = browser_page, live_server.url
    make_user("head", role="admin")
    make_user("reader", role="viewer", password=PASSWORD)
    log_in(page, base, "reader")
    response = page.goto(f"{base}/sites/upload/")
    assert response is not None and response.status == 403
    text = page.locator("#denied").inner_text()
    assert "Your role, Viewer, lets you look at the sites" in text
    assert "but not add seeds." in text and "ask an admin (head)" in text
    assert page.evaluate(FITS)
    screenshot(page, tmp_path, "403-viewer.png")
    icon = page.locator("link[rel=icon]").get_attribute("href")
    assert page.request.get(f"{base}{icon}").headers["content-type"] == "image/svg+xml"
    ico = page.request.get(f"{base}/favicon.ico")
    assert ico.ok and ico.headers["content-type"] == "image/svg+xml"
