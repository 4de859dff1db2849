"""The Sites table (/sites/) and the Site page (/sites/<pk>/)."""

from __future__ import annotations

import io
import json
import math
import random
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from archive.models import Capture, Site, Tag
from dashboard.sites import SiteListQuery, site_rows
from hacs.clock import reference_instant, to_days
from hacs.estimators import change_probability
from hacs.formats.canon import surt_to_url
from hacs.formats.cdx import memento_url
from hacs_demo import build_demo_archive
from hacs_site.clock import today
from scheduling.models import DEFAULT_METHOD, Estimate
from tests.factories import add_observations, make_capture, make_estimate, make_site

pytestmark = pytest.mark.django_db

LIST = reverse("site-list")

# The Sites table's queries, whatever the number of sites: the session, the user and the
# user's groups (role check), then the tag names for the filter, the count, the page of rows
# and the page's tags.
LIST_QUERIES = 7


def today_t() -> float:
    """The reference time of every page for today: the END of today (00:00 UTC tomorrow)."""
    return to_days(reference_instant(today()))


def authors(response: Any) -> list[str]:
    return [row.site.author for row in response.context["rows"]]


def html_text(response: Any) -> str:
    return str(response.content.decode())


# --- The Sites table ---------------------------------------------------------------------------


def test_it_shows_each_estimate_state_in_words(logged_in_client: Any) -> None:
    make_estimate(make_site(author="Every Hundred"), rate=0.01)
    make_estimate(make_site(author="Never Changed"), rate=0.0, updates=0)
    make_estimate(make_site(author="Too Few"), rate=None, tau=None, observations=1, updates=0)
    make_site(author="Not Yet")
    response = logged_in_client.get(LIST, {"method": "observed"})  # the paper's reading
    assert response.status_code == 200
    rows = {row.site.author: row for row in response.context["rows"]}
    assert rows["Every Hundred"].interval_days == pytest.approx(100.0)
    expected = change_probability(
        0.01, to_days(datetime(2024, 1, 1, tzinfo=UTC)), today_t(), settings.HACS_E_DAYS
    )
    assert rows["Every Hundred"].probability == pytest.approx(expected, rel=1e-12)
    assert rows["Never Changed"].probability == 0.0
    assert rows["Too Few"].probability is None
    text = html_text(response)
    assert "100.0" in text
    assert "no update seen" in text
    assert "insufficient history" in text
    assert "not estimated" in text
    # The last update is τ only when there was an update.
    assert rows["Every Hundred"].last_update == datetime(2024, 1, 1, tzinfo=UTC)
    assert rows["Never Changed"].last_update is None


def test_it_searches_author_and_url(logged_in_client: Any) -> None:
    make_site(
        author="Grace Hopper",
        seed_url="http://cs.example.edu/~ghopper/",
        canonical_key="edu,example,cs)/~ghopper",
    )
    make_site(
        author="Alan Turing",
        seed_url="http://math.example.ac.uk/~turing/",
        canonical_key="uk,ac,example,math)/~turing",
    )
    assert authors(logged_in_client.get(LIST, {"q": "hopper"})) == ["Grace Hopper"]
    assert authors(logged_in_client.get(LIST, {"q": "ac.uk"})) == ["Alan Turing"]
    assert authors(logged_in_client.get(LIST, {"q": "nobody"})) == []
    assert "No sites match" in html_text(logged_in_client.get(LIST, {"q": "nobody"}))


def test_the_search_box_has_a_label(logged_in_client: Any) -> None:
    text = html_text(logged_in_client.get(LIST))
    match = re.search(r'<input[^>]*name="q"[^>]*id="([^"]+)"', text)
    assert match, "no search box"
    assert f'<label for="{match.group(1)}">' in text


def test_it_filters_by_tag_status_and_history(logged_in_client: Any) -> None:
    physics = Tag.objects.create(name="physics")
    a = make_site(author="A", import_status="done")
    a.tags.add(physics)
    make_estimate(a, rate=0.02)
    b = make_site(author="B", import_status="failed", import_error="CDX server said 503")
    make_estimate(b, rate=0.0, updates=0)
    c = make_site(author="C", import_status="done")
    make_estimate(c, rate=None, tau=None)
    make_site(author="D")  # no estimate at all: λ unknown too

    def shown(**params: str) -> list[str]:
        return sorted(authors(logged_in_client.get(LIST, {"method": "observed", **params})))

    # The default estimate, the posterior, gives a site with no update a rate from the prior:
    # "No update seen" still finds it, by its updates.
    e = make_site(author="E")
    make_estimate(e, method="posterior", rate=0.004, updates=0, observations=3)
    make_estimate(a, method="posterior", rate=0.03, updates=2, observations=5)
    posterior = {"method": "posterior"}
    assert sorted(authors(logged_in_client.get(LIST, {**posterior, "history": "no_update"}))) == [
        "E"
    ]
    assert sorted(authors(logged_in_client.get(LIST, {**posterior, "history": "estimated"}))) == [
        "A"
    ]

    assert shown(tag="physics") == ["A"]
    assert shown(status="failed") == ["B"]
    assert shown(status="done") == ["A", "C"]
    assert shown(history="estimated") == ["A"]
    assert shown(history="no_update") == ["B"]
    assert shown(history="insufficient") == ["C", "D", "E"]  # E has no observed estimate
    assert shown(tag="physics", history="insufficient") == []


def test_level_and_method_pick_the_estimate_shown(logged_in_client: Any) -> None:
    site = make_site(author="Two Levels")
    make_estimate(site, level="homepage", method="observed", rate=0.01)
    make_estimate(site, level="website", method="observed", rate=0.1)
    make_estimate(site, level="website", method="interpolated", rate=0.5, observations=77)
    rows = logged_in_client.get(LIST, {"method": "observed"}).context["rows"]
    assert rows[0].rate == 0.01
    # The default method (the posterior) has no stored estimate here: the site shows without.
    assert logged_in_client.get(LIST).context["rows"][0].has_estimate is False
    rows = logged_in_client.get(LIST, {"level": "website", "method": "interpolated"}).context[
        "rows"
    ]
    assert rows[0].rate == 0.5 and rows[0].observations == 77 and rows[0].interval_days == 2.0
    # A level/method pair with no stored estimate shows the site without one.
    rows = logged_in_client.get(LIST, {"level": "homepage", "method": "interpolated"}).context[
        "rows"
    ]
    assert rows[0].has_estimate is False


def _random_sites(n: int, seed: int = 7) -> None:
    rng = random.Random(seed)
    for i in range(n):
        site = make_site(author=f"Author {i:03d}")
        kind = rng.random()
        if kind < 0.15:
            continue  # no estimate
        if kind < 0.3:
            make_estimate(site, rate=None, tau=None, observations=1, updates=0)
        elif kind < 0.4:
            make_estimate(site, rate=0.0, updates=0, observations=rng.randint(2, 50))
        else:
            tau = datetime(2020, 1, 1, tzinfo=UTC) + timedelta(days=rng.uniform(0, 2000))
            make_estimate(
                site,
                rate=10 ** rng.uniform(-4, -0.5),
                tau=tau,
                observations=rng.randint(2, 300),
                updates=rng.randint(1, 40),
            )


def _all_rows(client: Any, **params: str) -> list[Any]:
    rows: list[Any] = []
    page = 1
    while True:
        response = client.get(LIST, {**params, "page": str(page)})
        rows += response.context["rows"]
        if not response.context["page"].has_next():
            return rows
        page += 1


def test_sorting_by_probability_in_sql_matches_g(logged_in_client: Any) -> None:
    _random_sites(120)
    t = today_t()
    for sort, descending in (("-probability", True), ("probability", False)):
        rows = _all_rows(logged_in_client, sort=sort)
        assert len(rows) == 120
        known = [r for r in rows if r.probability is not None]
        unknown = [r for r in rows if r.probability is None]
        assert rows == known + unknown, "unknown probabilities sort last"
        keys = [r.rate * (t + settings.HACS_E_DAYS - to_days(r.site.est_tau)) for r in known]
        assert keys == sorted(keys, reverse=descending)
        probabilities = [r.probability for r in known]
        assert probabilities == sorted(probabilities, reverse=descending)


@pytest.mark.parametrize(
    ("sort", "value", "reverse"),
    [
        ("interval", lambda r: r.interval_days if r.rate else math.inf, False),
        ("-interval", lambda r: r.interval_days if r.rate else math.inf, True),
        ("-updated", lambda r: r.last_update, True),
        ("updated", lambda r: r.last_update, False),
        ("-observations", lambda r: r.observations, True),
        ("updates", lambda r: r.updates, False),
        ("author", lambda r: r.site.author, False),
        ("-url", lambda r: r.site.seed_url, True),
    ],
)
def test_each_sortable_column_orders_with_unknowns_last(
    logged_in_client: Any, sort: str, value: Any, reverse: bool
) -> None:
    _random_sites(70, seed=3)
    rows = _all_rows(logged_in_client, sort=sort)
    assert len(rows) == 70
    known = [r for r in rows if r.rate is not None or sort.lstrip("-") in ("author", "url")]
    if sort.lstrip("-") in ("updated",):
        known = [r for r in rows if r.last_update is not None]
    if sort.lstrip("-") in ("observations", "updates"):
        known = [r for r in rows if r.has_estimate]
    assert rows[: len(known)] == known, "unknown values sort last"
    values = [value(r) for r in known]
    assert values == sorted(values, reverse=reverse)


def test_headers_are_sort_links_with_aria_sort(logged_in_client: Any) -> None:
    make_estimate(make_site())
    text = html_text(logged_in_client.get(LIST, {"q": "author", "sort": "interval"}))
    header = re.search(r"<thead>(.*?)</thead>", text, re.S)
    assert header
    cells = re.findall(r"<th[^>]*>.*?</th>", header.group(1), re.S)
    sorted_cells = [c for c in cells if "aria-sort" in c]
    assert len(sorted_cells) == 1
    assert 'aria-sort="ascending"' in sorted_cells[0] and "Interval" in sorted_cells[0]
    # The sorted column's link reverses the order and keeps the search; others keep it too.
    assert "sort=-interval" in sorted_cells[0] and "q=author" in sorted_cells[0]
    probability = next(c for c in cells if "P(change)" in c)
    assert "sort=-probability" in probability and "q=author" in probability
    assert all("<a href=" in c for c in cells if "Tags" not in c and "Import" not in c)
    # With no sort asked for, the default order (most likely to change first) is announced.
    text = html_text(logged_in_client.get(LIST))
    assert re.search(r'<th[^>]*aria-sort="descending"[^>]*><a[^>]*>P\(change\)', text)


def test_pagination_keeps_search_filters_and_sort(logged_in_client: Any) -> None:
    tag = Tag.objects.create(name="cs")
    for i in range(120):
        site = make_site(author=f"Kept {i:03d}")
        site.tags.add(tag)
        make_estimate(site, rate=0.001 * (i + 1))
    make_site(author="Filtered Out")
    params = {
        "q": "kept",
        "tag": "cs",
        "sort": "-interval",
        "level": "homepage",
        "method": "observed",
    }
    response = logged_in_client.get(LIST, params)
    page = response.context["page"]
    assert page.paginator.count == 120 and page.paginator.num_pages == 3
    text = html_text(response)
    nav = re.search(r'<nav class="pagination".*?</nav>', text, re.S)
    assert nav
    next_link = re.search(r'<a href="\?([^"]+)" rel="next">', nav.group(0))
    assert next_link
    query = next_link.group(1).replace("&amp;", "&")
    assert set(query.split("&")) >= {
        "q=kept",
        "tag=cs",
        "sort=-interval",
        "page=2",
        "method=observed",
    }
    second = logged_in_client.get(f"{LIST}?{query}")
    assert second.context["page"].number == 2
    assert authors(second)[0] == "Kept 050"  # -interval: longest intervals (smallest λ) first
    # Every page of a sort shows each site once.
    rows = _all_rows(logged_in_client, **params)
    assert len({r.site.pk for r in rows}) == 120


@pytest.mark.parametrize(
    "params",
    [
        {"sort": "nonsense", "level": "galaxy", "method": "guess", "page": "-4"},
        {"page": "abc", "tag": "no such tag", "status": "exploded", "history": "?"},
        {"page": "999999", "q": "x" * 5000},
        {"sort": "-probability'; DROP TABLE archive_site; --"},
    ],
)
def test_bad_parameters_fall_back_to_defaults(
    logged_in_client: Any, params: dict[str, str]
) -> None:
    make_estimate(make_site(author="Still Here"))
    response = logged_in_client.get(LIST, params)
    assert response.status_code == 200
    query = response.context["query"]
    assert query.sort == SiteListQuery().sort
    assert query.level == "homepage" and query.method == DEFAULT_METHOD
    assert query.tag == "" and query.status == "" and query.history == ""
    if "q" not in params:
        assert authors(response) == ["Still Here"]
    assert Site.objects.count() == 1


def test_anonymous_visitors_are_sent_to_log_in(client: Any) -> None:
    site = make_site()
    for url in (LIST, reverse("site-detail", args=[site.pk])):
        response = client.get(url)
        assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def _bulk_sites(n: int) -> None:
    """n sites, 90 % with all four estimates, a third tagged — written in a few statements."""
    tags = Tag.objects.bulk_create([Tag(name=f"dept-{k}") for k in range(12)])
    Site.objects.bulk_create(
        [
            Site(
                seed_url=f"http://cs{i % 97}.example.edu/~user{i}/",
                canonical_key=f"edu,example,cs{i % 97})/~user{i}",
                author=f"User {i:05d}",
                import_status="done" if i % 10 else "pending",
            )
            for i in range(n)
        ],
        batch_size=2000,
    )
    ids = list(Site.objects.order_by("pk").values_list("pk", flat=True))
    rng = random.Random(n)
    estimates = [
        _random_estimate(rng, pk, level, method, known=i % 7 != 0)
        for i, pk in enumerate(ids)
        if i % 10
        for level in ("homepage", "website")
        for method in ("observed", "interpolated", "posterior")
    ]
    Estimate.objects.bulk_create(estimates, batch_size=2000)
    through = Site.tags.through
    through.objects.bulk_create(
        [through(site_id=pk, tag_id=tags[i % 12].pk) for i, pk in enumerate(ids) if i % 3 == 0]
        + [
            through(site_id=pk, tag_id=tags[(i + 5) % 12].pk)
            for i, pk in enumerate(ids)
            if i % 6 == 0
        ],
        batch_size=2000,
    )
    if connection.vendor == "postgresql":
        # What autovacuum does for committed rows: without statistics on rows this test's
        # transaction wrote, PostgreSQL may plan the estimate join as a scan per site.
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE archive_site, scheduling_estimate, archive_site_tags")


def _random_estimate(
    rng: random.Random, pk: int, level: str, method: str, *, known: bool
) -> Estimate:
    """An unsaved estimate with random figures; without a rate or τ unless ``known``."""
    rate = 10 ** rng.uniform(-4, -1) if known else None
    tau_days = 17_000 + rng.uniform(0, 3000) if known else None
    shape = rng.uniform(0.5, 30) if method == "posterior" else None
    return Estimate(
        site_id=pk,
        level=level,
        method=method,
        rate=rate,
        tau_days=tau_days,
        tau=datetime(1970, 1, 1, tzinfo=UTC) + timedelta(days=tau_days) if tau_days else None,
        posterior_shape=shape,
        posterior_rate=shape / rate if shape and rate else None,
        last_copy_days=tau_days + 30 if shape and tau_days else None,
        observations=rng.randint(0, 400),
        updates=rng.randint(0, 30),
    )


@pytest.mark.parametrize("n", [20, 20_000])
def test_the_sites_table_costs_the_same_queries_at_20_and_20000_sites(
    logged_in_client: Any, django_assert_num_queries: Any, n: int
) -> None:
    _bulk_sites(n)
    assert Site.objects.count() == n
    for params in (
        {},
        {"method": "observed"},
        {"sort": "-probability", "level": "website", "method": "interpolated"},
        {
            "sort": "interval",
            "history": "estimated",
            "tag": "dept-3",
            "page": "2",
            "method": "observed",
        },
        {"q": "user1", "sort": "-updated", "status": "done", "method": "observed"},
        {"sort": "observations", "page": "99999"},
    ):
        with django_assert_num_queries(LIST_QUERIES):
            response = logged_in_client.get(LIST, params)
        assert response.status_code == 200
        assert len(response.context["rows"]) == min(50, response.context["page"].paginator.count)


# --- The Site page -----------------------------------------------------------------------------


@pytest.fixture()
def demo_site(tmp_path: Path) -> Site:
    """A small demo archive imported as a librarian would: seeds, then the WARC file."""
    demo = build_demo_archive(tmp_path, sites=3, seed=1)
    out = io.StringIO()
    call_command("import_seeds", str(demo.seeds_path), stdout=out, stderr=out)
    call_command("import_warc", str(demo.warc_path), stdout=out)
    # The site with the most updates, so that every part of the page has something to show.
    site_ids = Capture.objects.values_list("site_id", flat=True).distinct()
    return max(
        Site.objects.filter(pk__in=site_ids),
        key=lambda s: Capture.objects.filter(site=s, page_index__gt=0, link_floor__lt=0).count(),
    )


def json_script(text: str, element_id: str) -> Any:
    match = re.search(
        rf'<script id="{element_id}" type="application/json">(.*?)</script>', text, re.S
    )
    assert match, f"no {element_id} script"

    def no_constants(name: str) -> None:
        raise AssertionError(f"{name} is not JSON that browsers parse")

    return json.loads(match.group(1), parse_constant=no_constants)


def test_the_site_page_shows_the_timeline_of_every_capture(
    logged_in_client: Any, demo_site: Site
) -> None:
    response = logged_in_client.get(reverse("site-detail", args=[demo_site.pk]))
    assert response.status_code == 200
    figure = json_script(html_text(response), "timeline-data")
    rows = figure["layout"]["yaxis"]["ticktext"]
    assert rows == [
        "Homepage · captures",
        "Homepage · updates",
        "Website · captures",
        "Website · updates",
    ]
    assert figure["layout"]["yaxis"]["tickvals"] == [0, 1, 2, 3]

    def points(row: str, legend: str | None = None) -> int:
        return sum(
            len(trace["x"])
            for trace in figure["data"]
            if trace["y"]
            and rows[trace["y"][0]] == row
            and (legend is None or trace["name"] == legend)
        )

    captures = Capture.objects.filter(site=demo_site)
    assert points("Website · captures") == captures.count()
    assert points("Homepage · captures") == captures.filter(depth=0).count()
    revisits = captures.filter(kind="revisit").count()
    assert points("Website · captures", "Revisit (same content)") == revisits
    bad = captures.filter(kind__in=["redirect", "error"]).count()
    assert points("Website · captures", "Redirect or error") == bad
    updates = captures.filter(is_observation=True, page_index__gt=0, link_floor__lt=0)
    assert updates.count() > 0
    assert points("Website · updates", "Detected update") == updates.count()
    assert points("Homepage · updates", "Detected update") == updates.filter(depth=0).count()
    interpolated = points("Website · updates", "Interpolated update instant")
    assert 0 < interpolated <= updates.count()
    assert re.search(r'<script src="/static/plotly/plotly\.min\.\w{12}\.js">', html_text(response))
    assert re.search(r'<script src="/static/js/site_detail\.\w{12}\.js">', html_text(response))


def test_interpolated_instants_are_midpoints_before_each_homepage_update(
    logged_in_client: Any, demo_site: Site
) -> None:
    figure = json_script(
        html_text(logged_in_client.get(reverse("site-detail", args=[demo_site.pk]))),
        "timeline-data",
    )
    shown = next(
        t["x"]
        for t in figure["data"]
        if t["name"] == "Interpolated update instant" and t["y"][0] == 1  # homepage updates
    )
    observations = list(
        Capture.objects.filter(
            site=demo_site, depth=0, is_observation=True, page_index__isnull=False
        )
        .order_by("timestamp")
        .values_list("timestamp", "page_index", "link_floor")
    )
    expected = []
    for k in range(1, len(observations)):
        moment, index, floor = observations[k]
        if index > 0 and floor < 0 and moment != observations[k - 1][0]:
            before = observations[k - 1][0]
            expected.append((before + (moment - before) / 2).strftime("%Y-%m-%d %H:%M:%S"))
    assert shown == expected


def test_the_updates_table_lists_the_links_each_update_added(
    logged_in_client: Any, demo_site: Site
) -> None:
    response = logged_in_client.get(reverse("site-detail", args=[demo_site.pk]))
    text = html_text(response)
    updates = response.context["history"].updates
    stored = Capture.objects.filter(site=demo_site, page_index__gt=0, link_floor__lt=0)
    assert len(updates) == stored.count()
    # An independent computation: each update's links minus every earlier observation's.
    observations = Capture.objects.filter(site=demo_site, page_index__isnull=False).select_related(
        "snapshot"
    )
    for update in stored:
        earlier: set[str] = set()
        for obs in observations:
            if obs.page_key == update.page_key and obs.page_index < update.page_index:
                earlier |= obs.snapshot.link_set()
        assert update.snapshot is not None
        added = sorted(update.snapshot.link_set() - earlier)
        assert len(added) == update.new_links > 0
        row = next(
            u
            for u in updates
            if u.capture.timestamp == update.timestamp and u.capture.url == update.url
        )
        assert row.added == added
        assert [link.url for link in row.added_links] == [surt_to_url(link) for link in added]
        for link in added:
            assert surt_to_url(link) in text
        replay = memento_url(settings.HACS_WAYBACK_URL, update.timestamp, update.url)
        assert f'<a href="{replay}" rel="noopener noreferrer">' in text
    # Newest first.
    moments = [u.capture.timestamp for u in updates]
    assert moments == sorted(moments, reverse=True)


def test_the_estimate_panel_shows_all_four_estimates_and_the_90_day_curve(
    logged_in_client: Any, demo_site: Site, settings: Any
) -> None:
    settings.HACS_HISTORY_DAYS = 36500  # the demo's captures end in 2018: keep them in the window
    response = logged_in_client.get(reverse("site-detail", args=[demo_site.pk]))
    text = html_text(response)
    estimate = Estimate.objects.get(site=demo_site, level="homepage", method="observed")
    assert estimate.rate is not None and estimate.rate > 0
    assert f"{estimate.rate:.3g}" in text
    assert f"{1 / estimate.rate:.1f}" in text
    assert "whole history" in text
    rows = response.context["estimates"].rows
    assert [(r.level, r.method) for r in rows] == [
        ("homepage", "observed"),
        ("homepage", "interpolated"),
        ("homepage", "posterior"),
        ("website", "observed"),
        ("website", "interpolated"),
        ("website", "posterior"),
    ]
    figure = json_script(text, "probability-data")
    assert len(figure["data"]) == 6
    curve = figure["data"][0]
    assert curve["name"] == "Homepage · observed"
    assert len(curve["x"]) == 91 and curve["x"][0] == today().isoformat()
    t = today_t()
    first, last = (
        change_probability(estimate.rate, estimate.tau_days, t + k, settings.HACS_E_DAYS)
        for k in (0, 90)
    )
    assert curve["y"][0] == pytest.approx(first, abs=1e-6)
    assert curve["y"][-1] == pytest.approx(last, abs=1e-6)
    assert rows[0].probability == pytest.approx(first, rel=1e-12)


def test_the_site_page_costs_a_few_queries(
    logged_in_client: Any, demo_site: Site, django_assert_max_num_queries: Any
) -> None:
    # session, user, groups, site, tags, captures, link sets, estimates, the archive's last
    # check of the site and, without one, the sources of its captures
    with django_assert_max_num_queries(10):
        logged_in_client.get(reverse("site-detail", args=[demo_site.pk]))


def test_user_text_is_escaped(logged_in_client: Any) -> None:
    evil = "<script>alert('x')</script>"
    site = make_site(author=evil, import_status="failed", import_error=f"bad {evil}")
    site.tags.add(Tag.objects.create(name=f"<b>{evil}</b>"))
    Capture.objects.create(
        site=site,
        url=f"http://cs.example.edu/~a/{evil}",
        urlkey="edu,example,cs)/~a/x",
        page_key="edu,example,cs)/~a/x",
        timestamp=datetime(2020, 1, 1, tzinfo=UTC),
        depth=1,
        kind="error",
        status=404,
    )
    make_estimate(site)
    for url in (LIST, reverse("site-detail", args=[site.pk])):
        text = html_text(logged_in_client.get(url))
        assert evil not in text
        assert "&lt;script&gt;" in text
    figure = json_script(
        html_text(logged_in_client.get(reverse("site-detail", args=[site.pk]))), "timeline-data"
    )
    # Plotly reads hover text as markup: it gets the text escaped, and shows it as written.
    escaped = "&lt;script&gt;alert('x')&lt;/script&gt;"
    assert any(escaped in text for trace in figure["data"] for text in trace["customdata"])


def test_a_site_without_data(logged_in_client: Any) -> None:
    site = make_site(author="Nobody Yet")
    response = logged_in_client.get(reverse("site-detail", args=[site.pk]))
    assert response.status_code == 200
    text = html_text(response)
    assert "No captures of this site have been imported yet" in text
    assert "Not estimated yet" in text
    assert "timeline-data" not in text and "probability-data" not in text
    assert "plotly.min.js" not in text


def test_a_failed_import_shows_its_reason(logged_in_client: Any) -> None:
    site = make_site(
        import_status="failed", import_error="CDX server answered 503 five times", import_attempts=3
    )
    text = html_text(logged_in_client.get(reverse("site-detail", args=[site.pk])))
    assert 'role="alert"' in text
    assert "CDX server answered 503 five times" in text
    assert "3 attempts" in text


def test_insufficient_history_and_no_update_seen_on_the_site_page(logged_in_client: Any) -> None:
    site = make_site()
    make_estimate(
        site, level="homepage", method="observed", rate=None, tau=None, updates=0, observations=1
    )
    make_estimate(site, level="website", method="observed", rate=0.0, updates=0)
    response = logged_in_client.get(reverse("site-detail", args=[site.pk]))
    text = html_text(response)
    assert "insufficient history" in text
    assert "no update seen" in text
    figure = json_script(text, "probability-data")
    assert [trace["name"] for trace in figure["data"]] == ["Website · observed"]
    assert set(figure["data"][0]["y"]) == {0.0}


def test_a_missing_site_is_404(logged_in_client: Any) -> None:
    assert logged_in_client.get(reverse("site-detail", args=[999_999])).status_code == 404


def test_surt_links_read_as_urls() -> None:
    assert surt_to_url("com,github)/mnovak/webviz") == "http://github.com/mnovak/webviz"
    assert surt_to_url("edu,foo:8080)/~a?b=1") == "http://foo.edu:8080/~a?b=1"
    assert surt_to_url("org,example)") == "http://example.org/"


def test_site_rows_is_one_query_for_any_page() -> None:
    _bulk_sites(300)
    rows = site_rows(query=SiteListQuery(sort="-probability"), t_days=20_000.0, e_days=7.0)
    with CaptureQueriesContext(connection) as queries:
        page = list(rows[:50])
    assert len(page) == 50
    # The page itself and its tags (prefetch); the estimate comes in the same row.
    assert len(queries) == 2
    assert "JOIN" in queries[0]["sql"] and "scheduling_estimate" in queries[0]["sql"]


def test_revisits_count_as_observations_and_a_site_without_author_is_headed_by_its_url(
    client: Any, django_user_model: Any
) -> None:
    """A revisit is an observation (the content of an earlier capture), so the timeline's
    counts agree with the estimates' observations; one capture of a kind reads in the
    singular; a site without an author is headed by its seed URL, not "(no author)"."""
    site = make_site(author="")
    start = datetime(2020, 1, 1, tzinfo=UTC)
    captures = add_observations(site, [start, start + timedelta(days=9)], updates=[False, True])
    revisit = captures[-1]
    revisit.pk, revisit.kind = None, Capture.Kind.REVISIT
    revisit.timestamp = start + timedelta(days=20)
    revisit.page_index, revisit.link_floor = 2, 1
    revisit.save()
    make_capture(site, timestamp=start + timedelta(days=30), status=503, kind=Capture.Kind.ERROR)
    client.force_login(django_user_model.objects.create_user("reader"))
    page = client.get(reverse("site-detail", args=[site.pk])).content.decode()
    text = re.sub(r"\s+", " ", page)
    assert (
        "3 observations (1 of them a revisit: the content of an earlier capture); 1 error." in text
    )
    assert "1 errors" not in text and "1 revisits" not in text
    assert f'<h1 class="url-heading">{site.seed_url}</h1>' in page
    assert "(no author)" not in page


def test_a_site_without_a_copy_in_the_lists_window_is_not_captured_lately_not_due(
    client: Any, django_user_model: Any
) -> None:
    """One meaning of "due": a site whose newest copy is older than the crawl list's history
    window shows no probability on the Sites table and its page (no list holds it) and sorts
    after every site that has one, however likely its old estimate says a change is."""
    from tests.factories import make_posterior_estimate

    now = reference_instant(today())
    old = make_site(author="Old History")
    make_posterior_estimate(
        old, rate=0.5, tau=now - timedelta(days=3000), last_copy=now - timedelta(days=2900)
    )
    calm = make_site(author="Calm Recent")
    make_posterior_estimate(
        calm, rate=0.001, tau=now - timedelta(days=40), last_copy=now - timedelta(days=2)
    )
    client.force_login(django_user_model.objects.create_user("reader"))
    table = client.get(LIST).content.decode()
    assert table.index("Calm Recent") < table.index("Old History")
    old_row = table[table.index("Old History") :].split("</tr>")[0]
    assert "not captured lately" in old_row and 'class="prob"' not in old_row
    calm_row = table[table.index("Calm Recent") :].split("</tr>")[0]
    assert 'class="prob"' in calm_row
    page = client.get(reverse("site-detail", args=[old.pk])).content.decode()
    assert "not captured lately" in page
    # The website level's two readings are told apart beside the table.
    assert "the paper's reading of one merged timeline" in page
