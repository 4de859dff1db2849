"""A librarian hands the day's list to Browsertrix from the Crawl list page, in a real browser
(Debian's Chromium driven by Playwright) against the live server and a local Browsertrix."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from archive.models import Site
from handoff.models import HandOff, HandOffRun
from jobs.models import JobRecord
from scheduling.models import CrawlList, CrawlListEntry
from testbed.browsertrix_server import ORG_ID, TOKEN, WORKFLOW_ID, BrowsertrixServer
from tests.factories import make_site, make_user
from tests.support.browser import PASSWORD, log_in

pytestmark = [pytest.mark.browser, pytest.mark.integration, pytest.mark.django_db(transaction=True)]
SCREENSHOTS = Path(os.environ.get("HACS_SCREENSHOT_DIR", "/tmp/handoff"))


TOKEN_VAR = "HACS_BROWSERTRIX_TOKEN_BROWSER_TEST"


@pytest.fixture()
def browsertrix(monkeypatch: pytest.MonkeyPatch, settings: Any) -> Iterator[BrowsertrixServer]:
    monkeypatch.setenv(TOKEN_VAR, TOKEN)
    with BrowsertrixServer() as server:
        # The local Browsertrix answers over http on 127.0.0.1: trusted as an operator would.
        settings.HACS_BROWSERTRIX_ALLOWED_HOSTS = [server.url.removeprefix("http://")]
        yield server


def crawl_list_with_a_browsertrix_hand_off(
    browsertrix: BrowsertrixServer,
) -> tuple[CrawlList, list[Site]]:
    """A list of three sites and a Browsertrix hand-off to the local server."""
    sites = [make_site(seed_url=f"http://www.cs.example.edu/~p{n}/") for n in range(1, 4)]
    crawl = CrawlList.objects.create(
        date="2026-11-24", level="homepage", history_days=1095, e_days=1
    )
    for rank, site in enumerate(sites, start=1):
        CrawlListEntry.objects.create(crawl_list=crawl, rank=rank, site=site, probability=0.9)
    HandOff.objects.create(
        name="Morning crawl on Browsertrix",
        kind=HandOff.Kind.BROWSERTRIX,
        api_url=browsertrix.url,
        org_id=ORG_ID,
        workflow_id=WORKFLOW_ID,
        token_env=TOKEN_VAR,
    )
    return crawl, sites


def hand_off_to_browsertrix(page: Any) -> None:
    row = page.locator("#hand-offs tr", has_text="Morning crawl on Browsertrix")
    assert "Not run yet." in row.inner_text()
    row.get_by_role("button", name="Hand off now").click()
    page.wait_for_selector(".messages li.success")
    message = page.locator(".messages li.success").inner_text()
    assert "sent 3 seeds to Browsertrix" in message and "started workflow" in message
    row = page.locator("#hand-offs tr", has_text="Morning crawl on Browsertrix")
    assert "Sent" in row.inner_text() and "3 sites" in row.inner_text()
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.locator("#hand-offs").scroll_into_view_if_needed()
    page.screenshot(path=str(SCREENSHOTS / "crawl-list-hand-off.png"), full_page=True)


def check_browsertrix_received_the_list(browsertrix: BrowsertrixServer, sites: list[Site]) -> None:
    upload = browsertrix.requests[0]
    assert (upload.method, upload.path) == ("PUT", f"/api/orgs/{ORG_ID}/files/seedFile")
    assert upload.body.decode().splitlines() == [s.seed_url for s in sites]
    assert [r.method for r in browsertrix.requests] == ["PUT", "PATCH", "POST"]
    run = HandOffRun.objects.get()
    assert run.created_by.username == "curator" and run.status == "sent"
    assert JobRecord.objects.get(kind="hand_off").status == "finished"


def hand_off_to_a_missing_heritrix_job(page: Any, tmp_path: Path) -> None:
    """A Heritrix job directory that is not there: the page says which."""
    HandOff.objects.create(
        name="Heritrix scholars job",
        kind=HandOff.Kind.HERITRIX_ACTION,
        job_dir=str(tmp_path / "jobs" / "scholars"),
    )
    page.reload()
    page.locator("#hand-offs tr", has_text="Heritrix scholars job").get_by_role(
        "button", name="Hand off now"
    ).click()
    page.wait_for_selector(".messages li.error")
    error = page.locator(".messages li.error").inner_text()
    assert f"the Heritrix job directory {tmp_path / 'jobs' / 'scholars'} does not exist" in error
    assert "Failed" in page.locator("#hand-offs tr", has_text="Heritrix scholars job").inner_text()
    page.screenshot(path=str(SCREENSHOTS / "crawl-list-hand-off-failed.png"), full_page=True)


def test_a_librarian_hands_the_list_to_browsertrix(
    live_server: Any,
    browser_page: Any,
    browsertrix: BrowsertrixServer,
    redis_url: str,
    tmp_path: Path,
    settings: Any,
) -> None:
    page, base = browser_page, live_server.url
    settings.HACS_HERITRIX_ROOT = str(tmp_path)
    make_user("curator", role="librarian", password=PASSWORD)
    crawl, sites = crawl_list_with_a_browsertrix_hand_off(browsertrix)

    log_in(page, base, "curator")
    page.goto(f"{base}/crawl-list/?list={crawl.pk}")
    hand_off_to_browsertrix(page)
    check_browsertrix_received_the_list(browsertrix, sites)

    hand_off_to_a_missing_heritrix_job(page, tmp_path)
    assert crawl.entries.count() == 3  # the failed hand-off leaves the list as it was

    page.goto(f"{base}/jobs/")
    jobs = page.locator("#jobs-table").inner_text()
    assert "Hand-off" in jobs and "does not exist" in jobs
    page.screenshot(path=str(SCREENSHOTS / "jobs-hand-off.png"), full_page=True)
