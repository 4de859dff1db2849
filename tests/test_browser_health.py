"""Seed health in Debian's Chromium at 1366×768: from the Overview's count of moved seeds to the
Sites table filtered, the site's evidence, and the new address added with one button.

Screenshots go to ``HACS_SCREENSHOTS`` (a folder) when it is set, for a person to look at.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from archive.models import Capture, Site
from archive.status import sites_finish
from jobs.models import JobRecord
from tests.factories import add_observations, make_capture, make_site, make_user
from tests.support.browser import PASSWORD, log_in

pytestmark = [pytest.mark.browser, pytest.mark.integration, pytest.mark.django_db(transaction=True)]

FITS = "document.documentElement.scrollWidth <= window.innerWidth"
TARGET = "https://physics.example.org/people/bar/"


def screenshot(page: Any, tmp_path: Path, name: str) -> None:
    folder = Path(os.environ.get("HACS_SCREENSHOTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(folder / name), full_page=True)


def test_a_librarian_follows_a_moved_seed_to_its_new_address(
    live_server: Any, browser_page: Any, redis_url: str, tmp_path: Path
) -> None:
    page, base = browser_page, live_server.url
    make_user("curator", role="librarian", password=PASSWORD)
    make_site(author="Still Here")
    old = make_site(
        author="Bea Moved",
        seed_url="http://www.cs.example.edu/~bar/",
        canonical_key="edu,example,cs)/~bar",
    )
    start = datetime.now(UTC) - timedelta(days=200)
    add_observations(old, [start - timedelta(days=50)], updates=[False])
    for k in range(4):
        make_capture(
            old,
            timestamp=start + timedelta(days=20 * k),
            status=301,
            kind=Capture.Kind.REDIRECT,
            location=TARGET,
            digest="R",
        )
    sites_finish(done=[old.pk])

    log_in(page, base, "curator")
    page.goto(f"{base}/")
    box = page.locator("section.seed-health")
    box.get_by_role("link", name="1 moved").click()
    page.wait_for_url("**/sites/?health=moved")
    rows = page.locator("table.sites tbody tr")
    assert rows.count() == 1 and "Bea Moved" in rows.inner_text()
    assert page.locator("table.sites .health-badge").inner_text() == "Moved"
    rows.get_by_role("link", name="Bea Moved").click()
    evidence = page.locator("section.seed-health")
    assert f"Redirects to {TARGET} since {start:%-d %b %Y} (4 captures)." in evidence.inner_text()
    assert page.evaluate(FITS)
    screenshot(page, tmp_path, "health-moved.png")

    page.get_by_role("button", name=f"Add {TARGET} as a new seed").click()
    page.wait_for_selector("text=Moved from ←")
    new = Site.objects.get(seed_url=TARGET)
    assert page.url.endswith(f"/sites/{new.pk}/")
    assert JobRecord.objects.filter(kind="import").count() == 1
    page.get_by_role("link", name="Bea Moved").first.click()
    page.wait_for_selector("text=Moved to →")
    assert page.get_by_role("button", name=f"Add {TARGET} as a new seed").count() == 0
    screenshot(page, tmp_path, "health-moved-linked.png")
