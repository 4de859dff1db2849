"""A librarian manages one seed from its page, without the admin: retry a failed import, pause
it (on no crawl list) and resume it, set its tags, remove it; and downloads the Sites table as
CSV. A viewer can do none of these but the download."""

from __future__ import annotations

import csv
import html
from datetime import date, timedelta
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from archive.models import Capture, Site, Tag
from dashboard.overview import due_today
from hacs.clock import reference_instant
from hacs_site.clock import today
from jobs.models import JobRecord
from scheduling.crawl_lists import CrawlListOptions, crawl_list_store
from scheduling.estimates import estimates_recompute
from scheduling.models import CrawlList, CrawlListEntry
from tests.factories import add_observations, make_site, make_user

DAY = date(2018, 6, 1)


def librarian() -> Client:
    client = Client()
    client.force_login(make_user("lib", role="librarian"))
    return client


def viewer() -> Client:
    client = Client()
    client.force_login(make_user("reader", role="viewer"))
    return client


def observed(author: str, n: int) -> Site:
    site = make_site(author=author)
    t = reference_instant(DAY)
    add_observations(
        site,
        [t - timedelta(days=d) for d in (90 + n, 60 + n, 20 + n)],
        updates=[False, True, False],
    )
    return site


@pytest.mark.django_db
def test_a_failed_sites_page_retries_its_import(redis_url: str) -> None:
    site = make_site(import_status="failed", import_error="The CDX server said 503.")
    client = librarian()
    page = client.get(reverse("site-detail", args=[site.pk])).content.decode()
    assert "Retry the import</button>" in page
    response = client.post(reverse("site-retry", args=[site.pk]))
    assert response.status_code == 302
    job = JobRecord.objects.get(kind="import")
    assert job.total == 1 and site.seed_url in job.label
    done = make_site(import_status="done")
    assert (
        "Retry the import"
        not in client.get(reverse("site-detail", args=[done.pk])).content.decode()
    )
    assert viewer().post(reverse("site-retry", args=[site.pk])).status_code == 403


@pytest.mark.django_db
def test_a_paused_seed_is_on_no_list_until_it_is_resumed(settings: Any) -> None:
    settings.HACS_THETA = None
    a, b = observed("Ann", 0), observed("Bea", 1)
    client = librarian()
    client.post(reverse("site-pause", args=[a.pk]), {"paused": "1"})
    a.refresh_from_db()
    assert a.paused
    options = CrawlListOptions(theta=0.0, history_days=400)
    crawl = crawl_list_store(day=DAY, options=options, source=CrawlList.Source.PAGE).crawl_list
    assert list(crawl.entries.values_list("site_id", flat=True)) == [b.pk]
    page = html.unescape(client.get(reverse("site-detail", args=[a.pk])).content.decode())
    assert "Paused: this seed is on no crawl list" in page
    listed = client.get(reverse("site-list"), {"status": "paused"}).content.decode()
    assert "Ann" in listed and "Bea" not in listed

    client.post(reverse("site-pause", args=[a.pk]), {"paused": "0"})
    crawl = crawl_list_store(day=DAY, options=options, source=CrawlList.Source.PAGE).crawl_list
    assert set(crawl.entries.values_list("site_id", flat=True)) == {a.pk, b.pk}
    assert viewer().post(reverse("site-pause", args=[a.pk]), {"paused": "1"}).status_code == 403


@pytest.mark.django_db
def test_paused_seeds_are_not_due_on_overview(settings: Any) -> None:
    settings.HACS_THETA, settings.HACS_BUDGET = 0.5, None
    now = today()
    sites = []
    t = reference_instant(now)
    for n in range(2):
        site = make_site(author=f"Due {n}")
        add_observations(
            site,
            [t - timedelta(days=d + n) for d in (80, 60, 40, 20)],
            updates=[False, True, True, True],
        )
        sites.append(site)
    assert due_today(day=now).count == 2
    Site.objects.filter(pk=sites[0].pk).update(paused=True)
    assert due_today(day=now).count == 1


@pytest.mark.django_db
def test_tags_are_set_from_the_page() -> None:
    site = make_site()
    site.tags.add(Tag.objects.create(name="old"))
    client = librarian()
    client.post(reverse("site-tags", args=[site.pk]), {"tags": "physics; 2026 intake, physics"})
    assert sorted(site.tags.values_list("name", flat=True)) == ["2026 intake", "physics"]
    assert Tag.objects.filter(name="old").exists()  # kept for the filters
    response = client.post(reverse("site-tags", args=[site.pk]), {"tags": "x" * 101}, follow=True)
    assert "The tags were not changed. The tag" in html.unescape(response.content.decode())
    assert sorted(site.tags.values_list("name", flat=True)) == ["2026 intake", "physics"]
    assert viewer().post(reverse("site-tags", args=[site.pk]), {"tags": ""}).status_code == 403


@pytest.mark.django_db
def test_removing_needs_the_url_typed_and_says_what_went() -> None:
    keep, gone = observed("Keep", 0), observed("Gone", 1)
    crawl_list_store(
        day=DAY, options=CrawlListOptions(theta=0.0, history_days=400), source=CrawlList.Source.PAGE
    )
    client = librarian()
    response = client.post(reverse("site-remove", args=[gone.pk]), {"confirm": "yes"}, follow=True)
    assert "Nothing was removed" in response.content.decode()
    assert Site.objects.filter(pk=gone.pk).exists()
    assert (
        viewer()
        .post(reverse("site-remove", args=[gone.pk]), {"confirm": gone.seed_url})
        .status_code
        == 403
    )

    response = client.post(
        reverse("site-remove", args=[gone.pk]), {"confirm": gone.seed_url}, follow=True
    )
    said = html.unescape(response.content.decode())
    assert f"Removed Gone ({gone.seed_url}) with its 3 captures and its line on 1 stored" in said
    assert not Site.objects.filter(pk=gone.pk).exists()
    assert not Capture.objects.filter(site_id=gone.pk).exists()
    assert list(CrawlListEntry.objects.values_list("site_id", flat=True)) == [keep.pk]


@pytest.mark.django_db
def test_the_sites_table_downloads_as_csv_with_its_filters() -> None:
    physics = Tag.objects.create(name="physics")
    a, b = observed("Ann", 0), observed("=cmd()", 1)
    a.tags.add(physics)
    Site.objects.filter(pk=b.pk).update(paused=True)
    estimates_recompute()
    client = viewer()
    page = client.get(reverse("site-list"), {"tag": "physics"}).content.decode()
    assert 'href="/sites.csv?tag=physics"' in page
    response = client.get(reverse("site-list-csv"), {"method": "observed"})
    assert response["Content-Disposition"].startswith('attachment; filename="hacs-sites-')
    rows = list(csv.DictReader(b"".join(response.streaming_content).decode().splitlines()))
    by_author = {row["author"]: row for row in rows}
    assert set(by_author) == {"Ann", "'=cmd()"}  # a formula is neutralised
    assert by_author["Ann"]["tags"] == "physics" and by_author["Ann"]["updates"] == "1"
    assert by_author["'=cmd()"]["paused"] == "yes"
    assert by_author["Ann"]["observations"] == "3" and by_author["Ann"]["interval_days"] != ""
    only = client.get(reverse("site-list-csv"), {"tag": "physics"})
    lines = b"".join(only.streaming_content).decode().splitlines()
    assert len(lines) == 2 and "Ann" in lines[1]
