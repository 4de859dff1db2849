"""A librarian's morning in a real browser: Debian's Chromium driven by Playwright against the
live server, with a real Redis, a real worker process and a local Internet Archive-style server.
"""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from archive.models import Site
from hacs_demo import DemoArchive, build_demo_archive
from scheduling.models import CrawlList
from testbed.ia_server import IAArchive, ia_rows_and_bodies
from tests.factories import make_user
from tests.support.browser import PASSWORD, log_in

ROOT = Path(__file__).resolve().parent.parent
pytestmark = [pytest.mark.browser, pytest.mark.integration, pytest.mark.django_db(transaction=True)]


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> DemoArchive:
    return build_demo_archive(tmp_path_factory.mktemp("browser-demo"), sites=5, seed=11)


@pytest.fixture()
def archive_and_worker(
    demo: DemoArchive, settings: Any, worker_env: dict[str, str]
) -> Iterator[IAArchive]:
    rows, bodies = ia_rows_and_bodies(demo)
    with IAArchive(rows, bodies) as archive:
        values = {
            "HACS_CDX_URL": archive.cdx_url,
            "HACS_WAYBACK_URL": archive.wayback_url,
            "HACS_CDX_DIALECT": "ia",
            "HACS_CDX_RATE_PER_MINUTE": "6000",
            "HACS_MEMENTO_RATE_PER_MINUTE": "60000",
        }
        settings.HACS_CDX_URL, settings.HACS_WAYBACK_URL = archive.cdx_url, archive.wayback_url
        settings.HACS_CDX_DIALECT = "ia"
        worker = subprocess.Popen(
            [
                sys.executable,
                str(ROOT / "manage.py"),
                "rqworker",
                "default",
                "import",
                "estimation",
                "evaluation",
            ],
            env={**worker_env, **values},
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            yield archive
        finally:
            worker.terminate()
            worker.wait(timeout=30)


CRAWL_LIST_COLUMNS = [
    "rank",
    "url",
    "author",
    "probability",
    "rate_per_day",
    "interval_days",
    "tau",
    "observations",
    "span_days",
    "interval_low_days",
    "interval_high_days",
    "last_copy",
    "score",
]


def check_the_seed_list(page: Any, demo: DemoArchive) -> None:
    """Check first: every bad line is reported with its number; nothing is stored."""
    truth = json.loads(demo.truth_path.read_text())
    bad_lines = [s["line"] for s in truth["seeds"] if s["status"] == "bad"]
    page.get_by_label("Seed list file (CSV or plain text)").set_input_files(str(demo.seeds_path))
    page.get_by_role("button", name="Check the list").click()
    report = page.locator("table.rejected")
    report.wait_for()  # the checked page has arrived, not only started to
    page.wait_for_load_state()
    for line in bad_lines:
        assert report.locator(f"td.num:text-is('{line}')").count() == 1
    assert Site.objects.count() == 0


def add_and_import(page: Any, demo: DemoArchive) -> None:
    """Then add and import; the report links to the job's progress."""
    page.get_by_label("Seed list file (CSV or plain text)").set_input_files(str(demo.seeds_path))
    page.get_by_role("button", name="Add and import").click()
    page.get_by_role("link", name="follow its progress on the Jobs page").click()
    row = page.locator("#jobs-table tbody tr").first
    finished = "document.querySelector('#jobs-table [data-field=status]').textContent"
    page.wait_for_function(f"() => {finished} === 'Finished'", timeout=180_000)
    assert row.locator("progress").evaluate("el => el.value") == 1
    assert "(100%)" in row.locator("[data-field=percent]").inner_text()
    assert Site.objects.filter(import_status="done").count() == demo.sites


def download_a_crawl_list(page: Any) -> list[list[str]]:
    """Today's crawl list, built for a date inside the archive's span, downloaded as CSV."""
    page.get_by_role("link", name="Crawl list").click()
    page.get_by_label("Date").fill("2018-06-01")
    page.get_by_label("Threshold θ").fill("0")
    page.get_by_role("button", name="Build crawl list").click()
    with page.expect_download() as download_info:
        page.get_by_role("link", name="Download CSV").click()
    text = Path(download_info.value.path()).read_text()
    return list(csv.reader(io.StringIO(text)))


def check_the_crawl_list(rows: list[list[str]]) -> None:
    crawl = CrawlList.objects.get()
    assert rows[0] == CRAWL_LIST_COLUMNS
    assert crawl.method == "posterior"  # the form's default: the posterior, since the copy
    # The evidence behind every rate: at least one copy, and the credible interval of 1/λ.
    assert all(int(r[7]) >= 1 and r[9] and r[10] and r[11] for r in rows[1:] if r[4])
    expected = list(crawl.entries.order_by("rank").values_list("site__seed_url", flat=True))
    assert [r[1] for r in rows[1:]] == expected and len(expected) >= 1
    assert [float(r[3]) for r in rows[1:]] == sorted((float(r[3]) for r in rows[1:]), reverse=True)


def check_a_viewer_cannot_upload(page: Any, base: str) -> None:
    """A viewer browses but cannot upload."""
    page.get_by_role("button", name="Log out").click()
    log_in(page, base, "reader")
    page.get_by_role("link", name="Crawl list", exact=True).wait_for()  # the reader's menu is drawn
    assert page.get_by_role("link", name="Upload seeds").count() == 0
    response = page.goto(f"{base}/sites/upload/")
    assert response is not None and response.status == 403
    page.goto(f"{base}/crawl-list/")
    assert page.get_by_role("button", name="Build crawl list").count() == 0


def test_a_librarians_morning(
    live_server: Any,
    browser_page: Any,
    demo: DemoArchive,
    archive_and_worker: IAArchive,
    tmp_path: Path,
) -> None:
    page, base = browser_page, live_server.url
    make_user("curator", role="librarian", password=PASSWORD)
    make_user("reader", role="viewer", password=PASSWORD)

    log_in(page, base, "curator")
    page.get_by_role("link", name="Upload seeds").click()
    check_the_seed_list(page, demo)
    add_and_import(page, demo)

    # One author's change history: the timeline chart is drawn.
    page.get_by_role("link", name="Sites").click()
    page.locator("table a[href^='/sites/']").first.click()
    page.wait_for_selector(".js-plotly-plot .main-svg")
    page.screenshot(path=str(tmp_path / "site.png"))

    check_the_crawl_list(download_a_crawl_list(page))
    check_a_viewer_cannot_upload(page, base)
