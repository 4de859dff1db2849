"""The Atom feeds at each user's secret address (/feeds/<token>/…) and the Feeds page."""

from __future__ import annotations

import io
import logging
import re
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import feedparser
import pytest
from django.conf import settings
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from archive.models import Capture, Site, Tag
from dashboard.feeds import feed_address_token, feed_token_of, recent_updates
from dashboard.models import FeedToken
from dashboard.sites import site_history
from hacs.formats.canon import surt_to_url
from hacs.updates import link_floors
from hacs_demo import build_demo_archive
from hacs_site.log_redaction import FeedTokenFilter, GunicornLogger, redact_feed_tokens
from scheduling.models import CrawlList, CrawlListEntry
from tests.factories import add_observations, make_capture, make_site, make_snapshot, make_user

pytestmark = pytest.mark.django_db

DAY = timedelta(days=1)
T0 = datetime(2024, 3, 1, 12, 0, tzinfo=UTC)


def add_page(
    site: Site, history: Sequence[tuple[datetime, Sequence[str]]], *, page: str = "", depth: int = 0
) -> list[Capture]:
    """Observations of one page of ``site``, each holding the given links (SURT form), with the
    update data the importer stores."""
    link_sets = [frozenset(links) for _moment, links in history]
    captures = add_observations(
        site,
        [moment for moment, _links in history],
        floors=list(link_floors(link_sets)),
        page=page,
        depth=depth,
    )
    for capture, links in zip(captures, link_sets, strict=True):
        capture.snapshot = make_snapshot(urlkey=capture.urlkey, digest=capture.digest, links=links)
        capture.save(update_fields=["snapshot"])
    return captures


def surt(site: Site, path: str) -> str:
    return f"{site.canonical_key}/{path}"


def feed_url(name: str, user: Any, *args: Any, query: str = "") -> str:
    return reverse(name, args=[feed_token_of(user=user), *args]) + query


def parse(response: Any) -> Any:
    assert response.status_code == 200, response.status_code
    assert response["Content-Type"].startswith("application/atom+xml")
    feed = feedparser.parse(response.content)
    assert not feed.bozo, feed.bozo_exception
    assert feed.version == "atom10"
    return feed


def links_in(entry: Any) -> list[str]:
    """The added links an entry's content lists, as the reader shows them."""
    html = entry.content[0].value
    return re.findall(r"<li><a [^>]*>(.*?)</a></li>", html)


@pytest.fixture()
def reader() -> Any:
    """A feed reader: a client with no login."""
    return Client()


@pytest.fixture()
def collection() -> dict[str, Site]:
    """Two sites with homepage updates on different days; Ada's has an inner page updated too."""
    ada = make_site(
        author="Ada Lovelace",
        seed_url="http://cs.example.edu/~ada/",
        canonical_key="edu,example,cs)/~ada",
    )
    bob = make_site(
        author="", seed_url="http://math.example.org/~bob/", canonical_key="org,example,math)/~bob"
    )
    a1, a2, a3 = (surt(ada, f"paper{n}.pdf") for n in (1, 2, 3))
    add_page(
        ada,
        [
            (T0, [a1]),
            (T0 + 10 * DAY, [a1, a2]),
            (T0 + 20 * DAY, [a2]),
            (T0 + 30 * DAY, [a1, a2, a3]),
        ],
    )
    b1, b2 = surt(bob, "talk1.html"), surt(bob, "talk2.html")
    add_page(bob, [(T0 + 5 * DAY, [b1]), (T0 + 25 * DAY, [b1, b2])])
    add_page(
        ada,
        [(T0 + 2 * DAY, [a1]), (T0 + 40 * DAY, [a1, surt(ada, "teaching/new.html")])],
        page="teaching/",
        depth=1,
    )
    return {"ada": ada, "bob": bob}


# --- Detected updates --------------------------------------------------------------------------


def test_the_updates_feed_lists_homepage_updates_newest_first_with_the_links_they_added(
    reader: Any, user: Any, collection: dict[str, Site]
) -> None:
    ada, bob = collection["ada"], collection["bob"]
    feed = parse(reader.get(feed_url("feed-updates", user)))
    assert "homepage level" in feed.feed.title
    titles = [entry.title for entry in feed.entries]
    assert titles == [
        "Ada Lovelace (http://cs.example.edu/~ada/) · updated 31 Mar 2024, 12:00 UTC",
        "http://math.example.org/~bob/ · updated 26 Mar 2024, 12:00 UTC",
        "Ada Lovelace (http://cs.example.edu/~ada/) · updated 11 Mar 2024, 12:00 UTC",
    ]
    # Ada's update of 31 March re-adds paper1 (seen in the page's history) and adds paper3.
    assert [links_in(entry) for entry in feed.entries] == [
        ["http://cs.example.edu/~ada/paper3.pdf"],
        ["http://math.example.org/~bob/talk2.html"],
        ["http://cs.example.edu/~ada/paper2.pdf"],
    ]
    assert [entry.link for entry in feed.entries] == [
        f"http://testserver/sites/{site.pk}/" for site in (ada, bob, ada)
    ]
    assert [entry.updated_parsed[:5] for entry in feed.entries] == [
        (2024, 3, 31, 12, 0),
        (2024, 3, 26, 12, 0),
        (2024, 3, 11, 12, 0),
    ]
    ids = [entry.id for entry in feed.entries]
    assert all(re.fullmatch(r"tag:testserver,2024-03-\d\d:update/\d+", i) for i in ids)
    assert len(set(ids)) == 3
    assert feed.entries[0].summary == "1 link added to http://cs.example.edu/~ada/"


def test_a_new_update_comes_first_and_earlier_entries_keep_their_ids(
    reader: Any, user: Any, collection: dict[str, Site]
) -> None:
    first = parse(reader.get(feed_url("feed-updates", user)))
    bob = collection["bob"]
    link = surt(bob, "talk3.html")
    make_capture(
        bob,
        url=bob.seed_url,
        urlkey=bob.canonical_key,
        timestamp=T0 + 60 * DAY,
        digest="D9",
        page_index=2,
        link_floor=-1,
        new_links=1,
        snapshot=make_snapshot(
            urlkey=bob.canonical_key, digest="D9", links=[surt(bob, "talk1.html"), link]
        ),
    )
    again = parse(reader.get(feed_url("feed-updates", user)))
    assert links_in(again.entries[0]) == [surt_to_url(link)]
    assert [e.id for e in again.entries[1:]] == [e.id for e in first.entries]


def test_the_website_level_adds_the_inner_pages_updates(
    reader: Any, user: Any, collection: dict[str, Site]
) -> None:
    feed = parse(reader.get(feed_url("feed-updates", user, query="?level=website")))
    assert "website level" in feed.feed.title
    assert len(feed.entries) == 4
    newest = feed.entries[0]
    assert newest.title.startswith("Ada Lovelace") and "10 Apr 2024" in newest.title
    assert links_in(newest) == ["http://cs.example.edu/~ada/teaching/new.html"]
    assert "http://cs.example.edu/~ada/teaching/" in newest.summary


def test_an_unknown_level_is_not_found(reader: Any, user: Any) -> None:
    assert reader.get(feed_url("feed-updates", user, query="?level=everything")).status_code == 404


def test_the_feed_holds_the_newest_hundred_updates(reader: Any, user: Any) -> None:
    site = make_site()
    history = [(T0 + n * DAY, [surt(site, f"p{k}") for k in range(n + 1)]) for n in range(105)]
    add_page(site, history)
    feed = parse(reader.get(feed_url("feed-updates", user)))
    assert len(feed.entries) == 100
    assert links_in(feed.entries[0]) == [surt_to_url(surt(site, "p104"))]
    assert links_in(feed.entries[-1]) == [surt_to_url(surt(site, "p5"))]


def test_the_updates_query_costs_the_same_for_any_number_of_sites(
    collection: dict[str, Site], django_assert_num_queries: Any
) -> None:
    with django_assert_num_queries(4):
        found = recent_updates(level="website", wayback_url="https://web.archive.org/web")
    assert len(found) == 4


def test_the_tag_feed_lists_only_the_tagged_sites(
    reader: Any, user: Any, collection: dict[str, Site]
) -> None:
    theory = Tag.objects.create(name="theory & <logic>")
    Tag.objects.create(name="empty")
    collection["bob"].tags.add(theory)
    feed = parse(reader.get(feed_url("feed-tag", user, theory.pk)))
    assert [links_in(e) for e in feed.entries] == [["http://math.example.org/~bob/talk2.html"]]
    assert (
        feed.feed.title == "HACS · updates of the sites tagged “theory & <logic>” (homepage level)"
    )
    assert feed.feed.link == "http://testserver/sites/?tag=theory+%26+%3Clogic%3E"
    empty = parse(reader.get(feed_url("feed-tag", user, Tag.objects.get(name="empty").pk)))
    assert empty.entries == []


def test_an_unknown_or_malformed_tag_is_not_found(reader: Any, user: Any) -> None:
    assert reader.get(feed_url("feed-tag", user, 999)).status_code == 404
    token = feed_token_of(user=user)
    for bad in ("x", "1;drop", "..%2f1", "-1"):
        assert reader.get(f"/feeds/{token}/tags/{bad}.atom").status_code == 404


def test_the_feed_lists_updates_as_the_site_page_does(
    reader: Any, user: Any, tmp_path: Path
) -> None:
    """On an imported demo archive, the website-level feed's updates of each site are the Site
    page's updates, with the same added links."""
    demo = build_demo_archive(tmp_path, sites=3, seed=1)
    out = io.StringIO()
    call_command("import_seeds", str(demo.seeds_path), stdout=out, stderr=out)
    call_command("import_warc", str(demo.warc_path), stdout=out)
    wayback = settings.HACS_WAYBACK_URL
    found = recent_updates(level="website", wayback_url=wayback, limit=100_000)
    shown = [
        (site.pk, u.capture.timestamp, u.capture.url, u.added)
        for site in Site.objects.all()
        for u in site_history(site=site, wayback_url=wayback).updates
    ]
    assert len(shown) > 5
    assert sorted(
        (f.site.pk, f.update.capture.timestamp, f.update.capture.url, f.update.added) for f in found
    ) == sorted(shown)
    assert [f.update.capture.timestamp for f in found] == sorted(
        (f.update.capture.timestamp for f in found), reverse=True
    )
    homepage = parse(reader.get(feed_url("feed-updates", user)))
    assert len(homepage.entries) == sum(1 for f in found if f.update.is_homepage)


# --- The day's crawl list ----------------------------------------------------------------------


def make_list(day: date, ranked: Sequence[tuple[Site, float]], **kw: Any) -> CrawlList:
    crawl = CrawlList.objects.create(date=day, history_days=1095, e_days=7.0, theta=0.5, **kw)
    for rank, (site, probability) in enumerate(ranked, start=1):
        CrawlListEntry.objects.create(
            crawl_list=crawl, rank=rank, site=site, probability=probability, rate=0.05
        )
    return crawl


def test_the_crawl_list_feed_lists_the_newest_daily_list_in_rank_order(
    reader: Any, user: Any
) -> None:
    a, b, c = (make_site(author=name) for name in ("Ada", "Bob", "Cy"))
    make_list(date(2024, 5, 1), [(a, 0.9)], is_daily=True)
    newest = make_list(date(2024, 5, 2), [(c, 0.95), (a, 0.8), (b, 0.61)], is_daily=True)
    make_list(date(2024, 5, 2), [(b, 0.99)])  # a librarian's experiment, built later
    make_list(date(2024, 5, 3), [(b, 0.99)])  # ... and one for a later date
    feed = parse(reader.get(feed_url("feed-list", user)))
    assert feed.feed.title == "HACS · daily crawl list for 2 May 2024 (Homepage, 3 sites)"
    assert feed.feed.link == f"http://testserver/crawl-list/?list={newest.pk}"
    assert [e.title for e in feed.entries] == [
        f"#1 Cy ({c.seed_url}) · p = 0.950",
        f"#2 Ada ({a.seed_url}) · p = 0.800",
        f"#3 Bob ({b.seed_url}) · p = 0.610",
    ]
    assert [e.link for e in feed.entries] == [
        f"http://testserver/sites/{site.pk}/" for site in (c, a, b)
    ]
    assert feed.entries[1].id == f"tag:testserver,2024-05-02:crawl-list/{newest.pk}/2"
    assert "20.0 days" in feed.entries[1].content[0].value  # the mean interval, 1/λ


def test_the_crawl_list_feed_without_a_daily_list_is_empty(reader: Any, user: Any) -> None:
    make_list(date(2024, 5, 3), [(make_site(), 0.99)])  # an experiment is not the day's list
    feed = parse(reader.get(feed_url("feed-list", user)))
    assert feed.entries == []
    assert "none stored yet" in feed.feed.title


# --- Secret addresses --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "args"), [("feed-updates", ()), ("feed-tag", (1,)), ("feed-list", ())]
)
def test_a_wrong_token_is_not_found(reader: Any, user: Any, name: str, args: Any) -> None:
    Tag.objects.create(pk=1, name="ml")
    token = feed_token_of(user=user)
    assert reader.get(reverse(name, args=[token, *args])).status_code == 200
    wrong = ("A" if token[0] != "A" else "B") + token[1:]
    for bad in (wrong, token[:-1], token + "x", "x" * 43, "%00" * 3):
        assert reader.get(reverse(name, args=[bad, *args])).status_code == 404, bad


def test_a_reset_retires_the_old_address(logged_in_client: Any, reader: Any, user: Any) -> None:
    old = feed_url("feed-updates", user)
    assert reader.get(old).status_code == 200
    response = logged_in_client.post(reverse("feed-reset"))
    assert response.status_code == 302
    assert reader.get(old).status_code == 404
    new = feed_url("feed-updates", user)
    assert new != old
    assert reader.get(new).status_code == 200
    page = logged_in_client.get(reverse("feeds")).content.decode()
    assert new in page and old not in page


def test_the_reset_needs_a_post_with_the_csrf_token(user: Any) -> None:
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(user)
    token = feed_token_of(user=user)
    assert browser.get(reverse("feed-reset")).status_code == 405
    assert browser.post(reverse("feed-reset")).status_code == 403
    assert feed_token_of(user=user) == token


def test_an_inactive_users_token_is_not_found(reader: Any, user: Any) -> None:
    address = feed_url("feed-list", user)
    assert reader.get(address).status_code == 200
    user.is_active = False
    user.save()
    assert reader.get(address).status_code == 404


def test_a_new_secret_key_retires_every_address(reader: Any, user: Any, settings: Any) -> None:
    old = feed_url("feed-updates", user)
    settings.SECRET_KEY = "another key " * 5
    assert reader.get(old).status_code == 404
    assert reader.get(feed_url("feed-updates", user)).status_code == 200


def test_the_database_holds_no_working_address(user: Any) -> None:
    token = feed_token_of(user=user)
    row = FeedToken.objects.get(user=user)
    assert token not in (row.nonce, row.digest)
    assert feed_address_token(row.nonce) == token


def test_each_user_has_an_address_of_their_own(logged_in_client: Any, user: Any) -> None:
    other = make_user("viewer", role="viewer")
    assert feed_token_of(user=other) != feed_token_of(user=user)
    page = logged_in_client.get(reverse("feeds"))
    assert feed_token_of(user=user) in page.content.decode()
    assert feed_token_of(user=other) not in page.content.decode()


def test_the_feeds_page_shows_working_addresses_and_is_not_cached(
    logged_in_client: Any, reader: Any, user: Any
) -> None:
    Tag.objects.create(name="ml")
    response = logged_in_client.get(reverse("feeds"))
    assert response.status_code == 200
    assert "no-cache" in response["Cache-Control"] and "private" in response["Cache-Control"]
    text = response.content.decode()
    addresses = re.findall(r'readonly value="(http://testserver/feeds/[^"]+)"', text)
    assert len(addresses) == 4  # updates at two levels, the crawl list, one tag
    for address in addresses:
        parse(reader.get(address.replace("&amp;", "&")))
    assert 'action="/feeds/reset/"' in text
    nav = logged_in_client.get(reverse("home")).content.decode()
    assert 'href="/feeds/"' in nav


def test_the_feeds_page_needs_a_login(reader: Any) -> None:
    response = reader.get(reverse("feeds"))
    assert response.status_code == 302 and "/login/" in response["Location"]


def test_a_feed_is_private_to_caches_and_search_engines(reader: Any, user: Any) -> None:
    response = reader.get(feed_url("feed-updates", user))
    assert response["Cache-Control"] == "private, no-cache"
    assert response["X-Robots-Tag"] == "noindex"
    assert response["Referrer-Policy"] == "no-referrer"


# --- Escaping ----------------------------------------------------------------------------------


def test_hostile_links_and_names_are_escaped(reader: Any, user: Any) -> None:
    site = make_site(author='<img src=x onerror=alert(1)> "Eve"')
    hostile = surt(site, 'x?q=<script>alert(1)</script>"&b=1')
    add_page(site, [(T0, [surt(site, "a")]), (T0 + DAY, [surt(site, "a"), hostile])])
    response = reader.get(feed_url("feed-updates", user))
    raw = response.content.decode()
    assert "<script" not in raw and "<img" not in raw
    # The HTML inside the XML escapes the link once more: its text, and its quote in href.
    atom = "{http://www.w3.org/2005/Atom}"
    content = ET.fromstring(response.content).find(f"{atom}entry/{atom}content")
    assert content is not None and content.get("type") == "html"
    html = content.text or ""
    assert "&lt;script&gt;alert(1)&lt;/script&gt;&quot;&amp;b=1" in html
    assert "<script" not in html
    assert re.search(r'href="[^"<>]*&lt;script&gt;[^"<>]*&quot;', html)
    feed = parse(response)
    entry = feed.entries[0]
    assert entry.title.startswith('<img src=x onerror=alert(1)> "Eve"')  # shown as text
    assert links_in(entry) == [
        "http://cs.example.edu/~author1/x?q=&lt;script&gt;alert(1)&lt;/script&gt;&quot;&amp;b=1"
    ]


# --- Logs --------------------------------------------------------------------------------------


def test_no_log_line_holds_a_feed_token(user: Any) -> None:
    token = feed_token_of(user=user)
    path = f"/feeds/{token}/updates.atom"
    record = logging.LogRecord(
        "django.request", logging.WARNING, __file__, 1, "Not Found: %s", (path,), None
    )
    assert FeedTokenFilter().filter(record)
    assert token not in record.getMessage()
    assert record.getMessage() == "Not Found: /feeds/…/updates.atom"
    assert redact_feed_tokens("POST /feeds/reset/ HTTP/1.1") == "POST /feeds/reset/ HTTP/1.1"
    console = settings.LOGGING["handlers"]["console"]
    assert "feed_tokens" in console["filters"]


def test_the_web_servers_access_log_holds_no_feed_token(user: Any) -> None:
    from gunicorn.config import Config

    token = feed_token_of(user=user)
    path = f"/feeds/{token}/tags/3.atom"

    class Response:
        status, sent, headers = "200 OK", 10, [("Content-Type", "application/atom+xml")]

    environ = {
        "REQUEST_METHOD": "GET",
        "RAW_URI": path + "?level=website",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "PATH_INFO": path,
        "QUERY_STRING": "level=website",
        "REMOTE_ADDR": "127.0.0.1",
    }
    atoms = GunicornLogger(Config()).atoms(Response(), [], environ, timedelta(seconds=1))
    assert atoms["r"] == "GET /feeds/…/tags/3.atom?level=website HTTP/1.1"
    assert all(token not in str(value) for value in atoms.values())
