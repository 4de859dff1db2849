"""Seed health: stored when imports finish, counted on the Overview, filtered and badged in the
Sites table, explained on the Site page, and the "add the new address" action."""

from __future__ import annotations

import html
import io
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from archive.health import sites_health_update
from archive.models import Capture, Site, SiteHealth, Tag
from archive.status import sites_finish
from dashboard.health import health_counts
from hacs.formats.canon import seed_key
from hacs_demo import build_demo_archive
from jobs.models import JobRecord
from scheduling.estimates import estimates_recompute
from tests.factories import (
    add_observations,
    make_capture,
    make_posterior_estimate,
    make_site,
    make_user,
)

pytestmark = pytest.mark.django_db

NOW = datetime.now(UTC).replace(microsecond=0)
MOVED_SINCE = (NOW - timedelta(days=400)).replace(hour=10, minute=0, second=0)
TARGET = "https://new.example.org/~bar/"
LIST = reverse("site-list")


def days_ago(n: float) -> datetime:
    return NOW - timedelta(days=n)


def redirects(site: Site, moments: list[datetime], *, location: str | None, **kw: Any) -> None:
    for moment in moments:
        make_capture(
            site,
            timestamp=moment,
            status=kw.get("status", 301),
            mimetype="text/html",
            kind=Capture.Kind.REDIRECT,
            location=location,
            digest="R",
            url=kw.get("url", site.seed_url),
        )


def errors(site: Site, moments: list[datetime], status: int) -> None:
    for moment in moments:
        make_capture(site, timestamp=moment, status=status, kind=Capture.Kind.ERROR, digest="E")


@pytest.fixture()
def sites() -> dict[str, Site]:
    """One seed per problem and one healthy seed, their health computed as an import does."""
    found = {
        "healthy": make_site(author="Hale Healthy"),
        "moved": make_site(
            author="Mo Moved",
            seed_url="http://www.cs.example.edu/~bar/",
            canonical_key="edu,example,cs)/~bar",
        ),
        "gone": make_site(author="Gil Gone"),
        "stale": make_site(author="Stan Stale"),
        "stopped": make_site(author="Stef Stopped"),
    }
    recent = [days_ago(30 * k) for k in (12, 8, 4, 1)]
    add_observations(found["healthy"], recent, updates=[False, True, True, True])
    # http→https and slash-adding redirects after the last good capture: not a move.
    redirects(
        found["healthy"],
        [days_ago(10), days_ago(5), days_ago(2)],
        location="https://cs.example.edu/~author1/",
        url="http://www.cs.example.edu/~author1",
    )
    add_observations(found["moved"], [MOVED_SINCE - timedelta(days=90)], updates=[False])
    redirects(
        found["moved"], [MOVED_SINCE + timedelta(days=30 * k) for k in range(5)], location=TARGET
    )
    add_observations(found["gone"], [days_ago(400)], updates=[False])
    errors(found["gone"], [days_ago(300), days_ago(200), days_ago(100)], 404)
    add_observations(found["stale"], [datetime(2019, 4, 2, 12, tzinfo=UTC)], updates=[False])
    add_observations(found["stopped"], [days_ago(60), days_ago(3)], updates=[False, False])
    make_posterior_estimate(found["healthy"], rate=0.02, tau=days_ago(30), last_copy=days_ago(30))
    tau = days_ago(1000)
    for level in ("homepage", "website"):  # quiet on the homepage and every page under it
        make_posterior_estimate(
            found["stopped"],
            rate=0.01,
            tau=tau,
            last_copy=tau + timedelta(days=900),
            updates=4,
            level=level,
        )
    sites_finish(done=[site.pk for site in found.values()])
    return found


def client_of(username: str, role: str) -> Client:
    from django.contrib.auth import get_user_model

    user = get_user_model().objects.filter(username=username).first()
    client = Client()
    client.force_login(user or make_user(username, role=role))
    return client


def librarian() -> Client:
    return client_of("lib", "librarian")


def viewer() -> Client:
    return client_of("reader", "viewer")


# --- Stored health ------------------------------------------------------------------------------


def test_finishing_an_import_stores_each_sites_health(sites: dict[str, Site]) -> None:
    health = {name: SiteHealth.objects.get(site=site) for name, site in sites.items()}
    assert health["moved"].problem == "moved"
    assert health["moved"].target == TARGET
    assert (health["moved"].since, health["moved"].count) == (MOVED_SINCE, 5)
    assert health["gone"].problem == "gone"
    assert (health["gone"].status, health["gone"].count) == (404, 3)
    assert health["healthy"].problem == ""
    assert health["stale"].last_good == datetime(2019, 4, 2, 12, tzinfo=UTC)
    assert all(h.captured for h in health.values())


def test_health_follows_new_captures(sites: dict[str, Site]) -> None:
    site = sites["moved"]
    add_observations(site, [days_ago(1)], updates=[False])
    sites_health_update(site_ids=[site.pk])
    assert SiteHealth.objects.get(site=site).problem == ""


def test_a_full_recompute_of_the_estimates_reaches_every_site(sites: dict[str, Site]) -> None:
    SiteHealth.objects.all().delete()
    estimates_recompute(levels=["homepage"], methods=["observed"])
    assert SiteHealth.objects.count() == len(sites)
    assert SiteHealth.objects.get(site=sites["gone"]).problem == "gone"


@pytest.mark.parametrize("n", [3, 30])
def test_updating_health_costs_the_same_queries_for_any_number_of_sites(
    n: int, django_assert_num_queries: Any
) -> None:
    made = [make_site() for _ in range(n)]
    for site in made:
        errors(site, [days_ago(3), days_ago(2), days_ago(1)], 410)
    # the sites' URLs, their homepage captures, one upsert (inside a savepoint)
    with django_assert_num_queries(5):
        assert sites_health_update(site_ids=[site.pk for site in made]) == n
    assert SiteHealth.objects.filter(problem="gone").count() == n


def test_the_demo_archives_redirects_and_gone_pages_are_not_moves(tmp_path: Path) -> None:
    # The demo writes redirects from slashless, other-scheme and www. forms of a page to the
    # page itself, and 404s for pages that have gone; none of them is a move of the seed.
    demo = build_demo_archive(tmp_path, sites=4, seed=4)
    out = io.StringIO()
    call_command("import_seeds", str(demo.seeds_path), stdout=out, stderr=out)
    call_command("import_warc", str(demo.warc_path), stdout=out)
    homepage_redirects = Capture.objects.filter(kind=Capture.Kind.REDIRECT, depth=0)
    assert homepage_redirects.exists()
    assert not homepage_redirects.filter(location=None).exists()  # the WARC's Location kept
    assert Capture.objects.filter(status=404).exists()
    assert SiteHealth.objects.filter(captured=True).count() == 4
    assert not SiteHealth.objects.exclude(problem="").exists()
    # Made to move and die: one demo seed's homepage now redirects to another host, another's
    # answers 410, after their newest good capture.
    mover, dier = Site.objects.order_by("pk")[:2]
    after = Capture.objects.order_by("-timestamp").first().timestamp  # type: ignore[union-attr]
    later = [after + timedelta(days=k) for k in (1, 2, 3)]
    redirects(mover, later, location="//elsewhere.example.net/people/x", status=302)
    errors(dier, later, 410)
    sites_health_update(site_ids=[mover.pk, dier.pk])
    moved = SiteHealth.objects.get(site=mover)
    assert (moved.problem, moved.count) == ("moved", 3)
    assert moved.target == "http://elsewhere.example.net/people/x"
    assert SiteHealth.objects.get(site=dier).problem == "gone"


# --- Overview -----------------------------------------------------------------------------------


def test_the_overview_counts_each_problem_and_links_to_the_filtered_table(
    logged_in_client: Any, sites: dict[str, Site]
) -> None:
    response = logged_in_client.get(reverse("home"))
    assert response.status_code == 200
    counts = {key: count for key, _label, count in response.context["health"]}
    # The gone site's last good capture is 400 days old: gone, not stale (1,095 days).
    assert counts == {"moved": 1, "gone": 1, "stale": 1, "stopped": 1, "any": 4}
    html = response.content.decode()
    for key in counts:
        assert f'href="{LIST}?health={key}"' in html
    assert "Seed health" in html


# --- Sites table --------------------------------------------------------------------------------


def authors(response: Any) -> set[str]:
    return {row.site.author for row in response.context["rows"]}


@pytest.mark.parametrize(
    ("kind", "expected"),
    [
        ("moved", {"Mo Moved"}),
        ("gone", {"Gil Gone"}),
        ("stale", {"Stan Stale"}),
        ("stopped", {"Stef Stopped"}),
        ("any", {"Mo Moved", "Gil Gone", "Stan Stale", "Stef Stopped"}),
        ("", {"Hale Healthy", "Mo Moved", "Gil Gone", "Stan Stale", "Stef Stopped"}),
        ("bogus", {"Hale Healthy", "Mo Moved", "Gil Gone", "Stan Stale", "Stef Stopped"}),
    ],
)
def test_the_health_filter_keeps_the_sites_with_that_problem(
    logged_in_client: Any, sites: dict[str, Site], kind: str, expected: set[str]
) -> None:
    response = logged_in_client.get(LIST, {"health": kind})
    assert response.status_code == 200
    assert authors(response) == expected


def test_each_row_wears_its_problems_as_badges(
    logged_in_client: Any, sites: dict[str, Site]
) -> None:
    response = logged_in_client.get(LIST)
    badges = {row.site.author: [k for k, _label in row.badges] for row in response.context["rows"]}
    assert badges == {
        "Hale Healthy": [],
        "Mo Moved": ["moved"],
        "Gil Gone": ["gone"],
        "Stan Stale": ["stale"],
        "Stef Stopped": ["stopped"],
    }
    html = response.content.decode()
    assert re.search(r'class="health-badge health-gone" href="\?health=gone"', html)


def test_the_filtered_table_stays_at_the_same_queries(
    logged_in_client: Any, sites: dict[str, Site], django_assert_num_queries: Any
) -> None:
    for n in range(20):
        errors(make_site(author=f"Extra {n}"), [days_ago(3)], 404)
    sites_health_update()
    logged_in_client.get(LIST)  # warm the session
    # session, user, groups, tag names, the count and the page of rows, the page's tags
    with django_assert_num_queries(7):
        response = logged_in_client.get(LIST, {"health": "any"})
    assert response.context["page"].paginator.count == 24


# --- Site page ----------------------------------------------------------------------------------


def site_page(client: Any, site: Site) -> str:
    response = client.get(reverse("site-detail", args=[site.pk]))
    assert response.status_code == 200
    return " ".join(response.content.decode().split())


def test_the_site_page_gives_the_evidence(logged_in_client: Any, sites: dict[str, Site]) -> None:
    moved = site_page(logged_in_client, sites["moved"])
    assert f"Redirects to {TARGET} since {MOVED_SINCE:%-d %b %Y} (5 captures)." in moved
    gone = site_page(logged_in_client, sites["gone"])
    assert f"Answered 404 in the last 3 captures since {days_ago(300):%-d %b %Y}." in gone
    stale = site_page(logged_in_client, sites["stale"])
    assert "Last good capture 2 Apr 2019, more than 1,095 days ago." in stale
    stopped = site_page(logged_in_client, sites["stopped"])
    assert "No new link on the homepage for 900 days, 9 × its mean interval" in stopped
    assert "nor on the pages under it" in stopped
    healthy = site_page(logged_in_client, sites["healthy"])
    assert "Seed health" not in healthy


def test_only_librarians_see_the_add_button(sites: dict[str, Site]) -> None:
    label = f"Add {TARGET} as a new seed"
    assert label in site_page(librarian(), sites["moved"])
    assert label not in site_page(viewer(), sites["moved"])
    assert "as a new seed" not in site_page(librarian(), sites["gone"])


@pytest.mark.parametrize(
    ("chosen", "said"),
    [
        (
            False,
            "imported from the archive at web.archive.org, HACS's default: no archive has "
            "been configured (an administrator sets HACS_CDX_URL to choose another)",
        ),
        (True, "imported from the archive at cdx.library.example (HACS_CDX_URL)"),
    ],
)
def test_the_add_button_says_which_archive_the_import_will_ask(
    sites: dict[str, Site], settings: Any, chosen: bool, said: str
) -> None:
    if chosen:
        settings.HACS_CDX_URL = "https://cdx.library.example/cdx"
    settings.HACS_CDX_URL_CHOSEN = chosen
    page = html.unescape(site_page(librarian(), sites["moved"]))
    assert said in page


# --- Adding the new address ---------------------------------------------------------------------


def move(client: Any, site: Site) -> Any:
    return client.post(reverse("site-move", args=[site.pk]))


def test_adding_the_target_creates_a_linked_seed_and_imports_it(
    sites: dict[str, Site], redis_url: str
) -> None:
    old = sites["moved"]
    old.tags.add(Tag.objects.create(name="physics"))
    captures = old.captures.count()
    response = move(librarian(), old)
    new = Site.objects.get(canonical_key=seed_key(TARGET))
    assert response.status_code == 302
    assert response["Location"] == reverse("site-detail", args=[new.pk])
    assert (new.seed_url, new.author) == (TARGET, "Mo Moved")
    assert list(new.tags.values_list("name", flat=True)) == ["physics"]
    old.refresh_from_db()
    assert old.moved_to == new
    assert old.captures.count() == captures  # the old history stays
    job = JobRecord.objects.get(kind="import")
    assert job.total == 1
    client = librarian()
    assert f'Moved to → <a href="{reverse("site-detail", args=[new.pk])}">' in site_page(
        client, old
    )
    assert f'Moved from ← <a href="{reverse("site-detail", args=[old.pk])}">' in site_page(
        client, new
    )
    assert "as a new seed" not in site_page(client, old)  # done once


def test_a_target_already_a_seed_is_linked_not_duplicated(
    sites: dict[str, Site], redis_url: str
) -> None:
    existing = make_site(
        author="Already Here",
        seed_url="http://new.example.org/~bar",
        canonical_key=seed_key(TARGET),
    )
    count = Site.objects.count()
    response = move(librarian(), sites["moved"])
    assert response["Location"] == reverse("site-detail", args=[existing.pk])
    assert Site.objects.count() == count
    sites["moved"].refresh_from_db()
    assert sites["moved"].moved_to == existing
    existing.refresh_from_db()
    assert existing.author == "Already Here"
    assert not JobRecord.objects.exists()


def test_viewers_cannot_add_the_target(sites: dict[str, Site]) -> None:
    count = Site.objects.count()
    assert move(viewer(), sites["moved"]).status_code == 403
    assert Site.objects.count() == count
    sites["moved"].refresh_from_db()
    assert sites["moved"].moved_to is None


def test_the_action_needs_post_and_a_csrf_token(sites: dict[str, Site]) -> None:
    url = reverse("site-move", args=[sites["moved"].pk])
    assert librarian().get(url).status_code == 405
    client = Client(enforce_csrf_checks=True)
    client.force_login(make_user("lib2"))
    assert client.post(url).status_code == 403
    assert Site.objects.filter(canonical_key=seed_key(TARGET)).count() == 0


def test_a_site_that_did_not_move_has_nothing_to_add(sites: dict[str, Site]) -> None:
    count = Site.objects.count()
    client = librarian()
    response = move(client, sites["gone"])
    assert response.status_code == 302
    assert Site.objects.count() == count
    page = client.get(response["Location"])
    assert "knows no address this seed redirects to" in page.content.decode()


def test_a_quiet_homepage_over_pages_that_still_change_has_not_stopped(
    logged_in_client: Any, sites: dict[str, Site]
) -> None:
    """Stopped changing needs both levels: a homepage without a new link for 900 days whose
    teaching pages still gain links is a site that changes."""
    site = make_site(author="Quiet Homepage")
    tau = days_ago(1000)
    make_posterior_estimate(
        site, rate=0.01, tau=tau, last_copy=tau + timedelta(days=900), updates=0
    )
    make_posterior_estimate(
        site, rate=0.05, tau=days_ago(20), last_copy=days_ago(3), updates=9, level="website"
    )
    assert health_counts(now=timezone.now())["stopped"] == 1  # Stef only
    assert "Stopped changing" not in site_page(logged_in_client, site)
