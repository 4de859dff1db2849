"""The data model's constraints keep archive data free of duplicates."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, transaction

from archive.models import Capture, LinkSnapshot, Site
from scheduling.models import CrawlList, CrawlListEntry, Estimate
from tests.factories import WHEN, make_capture, make_estimate, make_site, make_snapshot

pytestmark = pytest.mark.django_db


def test_a_duplicate_capture_row_is_rejected() -> None:
    site = make_site()
    make_capture(site)
    with pytest.raises(IntegrityError), transaction.atomic():
        make_capture(site, digest="BBBB")
    assert Capture.objects.count() == 1


def test_the_same_page_at_another_second_is_a_new_capture() -> None:
    site = make_site()
    make_capture(site)
    make_capture(site, timestamp=WHEN.replace(second=8))
    assert site.captures.count() == 2


def test_bulk_import_with_ignore_conflicts_adds_nothing_twice() -> None:
    site = make_site()
    rows = [
        Capture(site=site, url="u", urlkey=f"k{i}", timestamp=WHEN, depth=1, kind="observation")
        for i in range(5)
    ]
    Capture.objects.bulk_create(rows, ignore_conflicts=True)
    again = [
        Capture(site=site, url="u", urlkey=f"k{i}", timestamp=WHEN, depth=1, kind="observation")
        for i in range(7)
    ]
    Capture.objects.bulk_create(again, ignore_conflicts=True)
    assert site.captures.count() == 7


def test_site_canonical_key_is_unique() -> None:
    make_site(canonical_key="edu,example)/~a")
    with pytest.raises(IntegrityError), transaction.atomic():
        make_site(canonical_key="edu,example)/~a", seed_url="https://example.edu/~a/index.html")
    assert Site.objects.count() == 1


def test_link_snapshot_is_unique_per_content() -> None:
    make_snapshot(urlkey="edu,x)/~a", digest="D1", links=["b", "a"])
    with pytest.raises(IntegrityError), transaction.atomic():
        LinkSnapshot.objects.create(urlkey="edu,x)/~a", digest="D1")
    snapshot = LinkSnapshot.objects.get()
    assert snapshot.link_set() == frozenset({"a", "b"})


def test_one_estimate_per_site_level_and_method() -> None:
    site = make_site()
    make_estimate(site, level="homepage", method="observed", rate=0.01)
    make_estimate(site, level="website", method="observed", rate=0.02)
    with pytest.raises(IntegrityError), transaction.atomic():
        make_estimate(site, level="homepage", method="observed", rate=0.03)
    assert Estimate.objects.get(level="homepage").interval_days == pytest.approx(100.0)


def test_unknown_rate_has_no_interval() -> None:
    estimate = Estimate(rate=None)
    assert estimate.interval_days is None
    assert "insufficient history" in str(estimate)


def test_crawl_list_ranks_and_sites_are_unique() -> None:
    a, b = make_site(), make_site()
    crawl = CrawlList.objects.create(date=WHEN.date(), history_days=1095, e_days=7)
    CrawlListEntry.objects.create(crawl_list=crawl, rank=1, site=a, probability=0.9)
    with pytest.raises(IntegrityError), transaction.atomic():
        CrawlListEntry.objects.create(crawl_list=crawl, rank=1, site=b, probability=0.5)
    with pytest.raises(IntegrityError), transaction.atomic():
        CrawlListEntry.objects.create(crawl_list=crawl, rank=2, site=a, probability=0.5)
    assert crawl.entries.count() == 1


def test_search_matches_author_and_url_case_insensitively() -> None:
    make_site(author="Ada Lovelace", seed_url="http://a.edu/~ada/", canonical_key="edu,a)/~ada")
    make_site(author="Alan Turing", seed_url="http://b.edu/~alan/", canonical_key="edu,b)/~alan")
    assert [s.author for s in Site.objects.search("LOVELACE")] == ["Ada Lovelace"]
    assert [s.author for s in Site.objects.search("b.edu")] == ["Alan Turing"]
    assert Site.objects.search("  ").count() == 2
