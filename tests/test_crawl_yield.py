"""The list's own yield: what each handed-off list's crawl reached and found changed, beside a
round-robin list's expected changes; counted from the captures, shown on the Crawl list page
and the Overview."""

from __future__ import annotations

import dataclasses
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from archive.models import Site
from archive.pipeline import FromWarcFiles
from archive.sources import crawl_source
from hacs.clock import reference_instant
from hacs_site.clock import today
from handoff.crawl_yield import list_yield_count, list_yield_start
from handoff.models import ListYield
from operations.refresh import sites_refresh
from scheduling.crawl_lists import CrawlListOptions, crawl_list_rank, crawl_list_store
from scheduling.models import CrawlList, CrawlListEntry
from testbed.crawls import Page, warc_bytes
from tests.factories import add_observations, make_site

pytestmark = pytest.mark.django_db

NOW = datetime.now(UTC).replace(microsecond=0)
T0 = NOW - timedelta(days=2)  # the list's hand-off
LINKS = ["http://doi.org/10.3/a", "http://doi.org/10.3/b"]


def seed(n: int) -> str:
    return f"http://www.cs.example.edu/~y{n}/"


def load(tmp_path: Path, name: str, pages: list[Page], source: str = "") -> None:
    path = tmp_path / name
    path.write_bytes(warc_bytes(pages))
    sites_refresh(FromWarcFiles([path], sources=[source] if source else ()))


@pytest.fixture()
def sites(tmp_path: Path) -> list[Site]:
    made = [make_site(seed_url=seed(n), canonical_key=f"edu,example,cs)/~y{n}") for n in range(4)]
    history = [
        Page(seed(n), T0 - timedelta(days=days), LINKS[: 1 + (days < 50)])
        for n in range(4)
        for days in (90, 30)
    ]
    load(tmp_path, "history.warc.gz", history)
    return made


def handed_off(sites: list[Site], at: datetime, day: Any = None) -> ListYield:
    crawl = CrawlList.objects.create(
        date=day or at.date(), history_days=1095, e_days=1, round_robin_expected=0.4
    )
    CrawlListEntry.objects.bulk_create(
        CrawlListEntry(crawl_list=crawl, rank=n, site=site, probability=0.5)
        for n, site in enumerate(sites, start=1)
    )
    return list_yield_start(crawl_list=crawl, at=at)


def crawl_page(n: int, at: datetime, *, new: bool) -> Page:
    return Page(seed(n), at, [*LINKS, *(["http://doi.org/10.3/new"] if new else [])])


def test_a_list_reached_and_changed_are_counted_from_the_crawls_in_its_window(
    sites: list[Site], tmp_path: Path
) -> None:
    row = handed_off(sites[:3], T0)
    assert (row.listed, row.expected, row.reached) == (3, 1.5, None)
    following = handed_off(sites[2:], T0 + timedelta(hours=20), day=(T0 + timedelta(days=1)).date())
    inbox = crawl_source("inbox", "crawl.warc.gz")
    load(
        tmp_path,
        "crawl.warc.gz",
        [
            crawl_page(0, T0 + timedelta(hours=1), new=True),  # reached, changed
            crawl_page(1, T0 + timedelta(hours=2), new=False),  # reached, unchanged
            crawl_page(2, T0 - timedelta(hours=1), new=True),  # before the hand-off
            crawl_page(2, T0 + timedelta(hours=21), new=False),  # the next list's crawl
            crawl_page(3, T0 + timedelta(hours=3), new=True),  # not on this list
        ],
        source=inbox,
    )
    # The archive's copy in the window is no crawl of the library's.
    load(tmp_path, "archive.warc.gz", [crawl_page(2, T0 + timedelta(hours=4), new=True)])
    counted = list_yield_count(row, now=NOW)
    assert (counted.reached, counted.changed) == (2, 1)
    nxt = list_yield_count(following, now=NOW)
    # Site 2, unchanged; site 3 was crawled before this list was handed off.
    assert (nxt.reached, nxt.changed) == (1, 0)


def test_the_window_ends_after_the_wait_when_no_list_follows(
    sites: list[Site], tmp_path: Path, settings: Any
) -> None:
    settings.HACS_CRAWL_WAIT_HOURS = 6
    row = handed_off(sites[:2], T0)
    load(
        tmp_path,
        "late.warc.gz",
        [
            crawl_page(0, T0 + timedelta(hours=5), new=True),
            crawl_page(1, T0 + timedelta(hours=7), new=True),  # after the wait
        ],
        source=crawl_source("inbox", "late.warc.gz"),
    )
    assert (list_yield_count(row, now=NOW).reached, row.changed) == (1, 1)


def test_a_second_hand_off_of_the_same_list_keeps_the_first_time(sites: list[Site]) -> None:
    row = handed_off(sites[:2], T0)
    again = list_yield_start(crawl_list=row.crawl_list, at=T0 + timedelta(hours=2))
    assert again.pk == row.pk and again.handed_off_at == T0
    assert ListYield.objects.count() == 1


def test_a_daily_list_stores_what_a_round_robin_list_of_its_size_expected() -> None:
    t = reference_instant(today())
    for n, (last, updates) in enumerate([(40, True), (5, True), (90, False), (20, True)]):
        site = make_site(seed_url=seed(n), canonical_key=f"edu,example,cs)/~y{n}")
        add_observations(
            site, [t - timedelta(days=d) for d in (200, 120, last)], updates=[False, True, updates]
        )
    options = dataclasses.replace(CrawlListOptions(), budget=2)
    everyone = crawl_list_rank(day=today(), options=dataclasses.replace(options, budget=None))
    by_copy = sorted(everyone.sites, key=lambda s: s.evidence.last_copy_days or 0)
    expected = sum(s.probability for s in by_copy[:2])  # the two oldest copies: 90 and 40 days
    assert {s.seed_url for s in by_copy[:2]} == {seed(2), seed(0)}
    stored = crawl_list_store(
        day=today(), options=options, source=CrawlList.Source.DAILY_JOB
    ).crawl_list
    assert stored.round_robin_expected == pytest.approx(expected)
    listed_p = sum(stored.entries.values_list("probability", flat=True))
    assert listed_p >= expected  # HACS's own list expects at least as many


def test_a_list_by_the_papers_method_has_no_round_robin_expectation(sites: list[Site]) -> None:
    options = dataclasses.replace(CrawlListOptions(), method="observed", theta=0.0)
    stored = crawl_list_store(
        day=today(), options=options, source=CrawlList.Source.DAILY_JOB
    ).crawl_list
    assert stored.round_robin_expected is None


# --- The pages ------------------------------------------------------------------------------------


@pytest.mark.parametrize("page", ["/", "/crawl-list/"])
def test_the_pages_show_the_yield_chart_and_its_table(
    page: str, sites: list[Site], tmp_path: Path, logged_in_client: Any
) -> None:
    row = handed_off(sites[:3], T0)
    load(
        tmp_path,
        "crawl.warc.gz",
        [crawl_page(0, T0 + timedelta(hours=1), new=True)],
        source=crawl_source("inbox", "crawl.warc.gz"),
    )
    list_yield_count(row, now=NOW)
    html = logged_in_client.get(page).content.decode()
    assert 'id="crawl-yield-chart"' in html and 'id="crawl-yield-data"' in html
    assert re.search(r"/static/js/crawl_yield\.[0-9a-f]{12}\.js", html)  # hashed by collectstatic
    assert "1 of 3 listed sites reached, <strong>1 changed</strong>" in html
    assert "round-robin list of the same sizes was expected to find 0.4" in html


def test_without_a_list_handed_off_the_section_says_so(logged_in_client: Any) -> None:
    html = logged_in_client.get("/crawl-list/").content.decode()
    assert 'id="yield-empty"' in html and 'id="crawl-yield-chart"' not in html


def test_the_admin_lists_what_was_read_back(sites: list[Site], admin_client: Any) -> None:
    handed_off(sites[:2], T0)
    for model in ("listyield", "crawlfile", "followedcrawl"):
        response = admin_client.get(f"/admin/handoff/{model}/")
        assert response.status_code == 200, model
    assert "1 list yield" in admin_client.get("/admin/handoff/listyield/").content.decode()
