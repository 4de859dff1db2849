"""One site shows one P(change) wherever it is looked at, and SQL ranks by the core's rule.

* The Overview's "due" list, the Sites table, the site's page and today's crawl list take the
  same reference instant for today (the end of the day, ``hacs.clock.reference_instant``) and the
  same g(λ, τ, t, e) (``hacs.estimators.change_probability``), so they show the same number.
  Until this version the Sites table and the site's page took the start of the day.
* The pages that sort and filter thousands of sites in SQL do it on the exposure λ (t + e − τ)
  (``scheduling.estimates.exposure_expression``); through 1 − exp(−x) it is the core's p.
"""

from __future__ import annotations

import csv
import io
import random
from datetime import UTC, date, datetime, timedelta
from typing import Any

import numpy as np
import pytest
from django.core.management import call_command
from django.urls import reverse
from django.utils import timezone

from archive.models import Site
from dashboard.overview import due_today
from dashboard.sites import SiteListQuery, site_row_values, site_rows
from hacs.bayes import posterior_exposure
from hacs.clock import reference_instant, to_days
from hacs.estimators import change_exposure, change_probability, exposure_threshold
from scheduling.crawl_lists import CrawlListOptions, crawl_list_rank
from scheduling.estimates import estimates_recompute, exposure_expression
from scheduling.jobs import daily_crawl_list
from scheduling.models import DEFAULT_METHOD, CrawlList, Estimate, estimate_probabilities
from tests.factories import add_observations, make_estimate, make_site

pytestmark = pytest.mark.django_db

TODAY = date(2024, 3, 15)


@pytest.fixture()
def frozen_today(monkeypatch: pytest.MonkeyPatch) -> date:
    """HACS's "today" (``hacs_site.clock.today``, which asks ``hacs.clock.today``) held at TODAY,
    so that a test running across midnight still looks at one date."""
    monkeypatch.setattr("hacs.clock.today", lambda *args, **kw: TODAY)
    return TODAY


@pytest.fixture()
def estimated_site(frozen_today: date) -> Site:
    """A site observed over the last months with a few updates, its estimates stored."""
    t = reference_instant(frozen_today)
    site = make_site(
        author="Ada Lovelace",
        seed_url="http://a.edu/~ada/",
        canonical_key="edu,a)/~ada",
        import_status="done",
    )
    before = [120, 100, 80, 60, 45, 30, 20, 12]
    add_observations(
        site,
        [t - timedelta(days=d, hours=3) for d in before],
        updates=[False, True, False, True, True, False, True, False],
    )
    estimates_recompute(site_ids=[site.pk])
    return site


def check_the_overview(client: Any, site: Site, p: float, *, theta: float, e_days: float) -> None:
    """The Overview: the sites due today."""
    home = client.get(reverse("home"))
    [due] = home.context["due"].first
    assert due.site.pk == site.pk and due.probability == p
    assert f'<td class="num">{p:.2f}' in home.content.decode()
    [direct] = due_today(day=TODAY).first
    assert direct.probability == p and (theta, e_days) == (
        due_today(day=TODAY).options.theta,
        due_today(day=TODAY).options.e_days,
    )


def check_the_sites_table(client: Any, p: float, t: float, e_days: float) -> None:
    sites = client.get(reverse("site-list"))
    [row] = sites.context["rows"]
    assert row.probability == p
    assert f">{p:.2f}</span>" in sites.content.decode()
    query = site_rows(query=SiteListQuery(), t_days=t, e_days=e_days)
    values = site_row_values(query, method=DEFAULT_METHOD, t_days=t, e_days=e_days)
    assert values[0].probability == p


def check_the_site_page(client: Any, site: Site, p: float) -> None:
    """The site's page: the homepage estimate by the default method, and its curve's first day."""
    detail = client.get(reverse("site-detail", args=[site.pk]))
    estimates = detail.context["estimates"]
    [row] = [r for r in estimates.rows if r.level == "homepage" and r.method == DEFAULT_METHOD]
    assert row.is_default and row.probability == p
    assert f'<td class="num">{p:.3f}' in detail.content.decode()
    assert estimates.dates[0] == TODAY


def check_todays_crawl_list(client: Any, p: float) -> None:
    """Today's crawl list, as the daily job builds it, on its page and in its CSV."""
    found = crawl_list_rank(day=TODAY, options=CrawlListOptions.from_settings())
    [ranked] = found.sites
    assert found.eligible == 1 and ranked.probability == p
    crawl = CrawlList.objects.get(pk=daily_crawl_list())
    assert crawl.date == TODAY and crawl.entries.get().probability == p
    page = client.get(reverse("crawl-list"), {"list": crawl.pk})
    assert f"{p:.3f}</td>" in page.content.decode()
    download = client.get(reverse("crawl-list-csv", args=[crawl.pk]))
    rows = list(csv.reader(io.StringIO(b"".join(download.streaming_content).decode())))
    assert rows[1][3] == f"{p:.6f}"


def test_one_site_shows_one_p_on_home_sites_site_page_and_the_crawl_list(
    logged_in_client: Any, estimated_site: Site, settings: Any
) -> None:
    e_days = settings.HACS_E_DAYS
    settings.HACS_THETA = 0.05  # so that the site is due today and on the daily list
    t = to_days(reference_instant(TODAY))
    stored = Estimate.objects.get(site=estimated_site, level="homepage", method=DEFAULT_METHOD)
    assert stored.rate is not None and stored.last_copy_days is not None
    p = float(estimate_probabilities([stored], t_days=t, e_days=e_days)[0])
    # The data is chosen so that the site is due and the start of the day (the old reading)
    # would show another number even at two decimals.
    at_start_of_day = float(estimate_probabilities([stored], t_days=t - 1, e_days=e_days)[0])
    assert settings.HACS_THETA <= p < 0.99
    assert f"{p:.2f}" != f"{at_start_of_day:.2f}"
    # The model answers the same for itself, at any number of instants.
    assert stored.change_probability(t_days=[t, t - 1], e_days=e_days).tolist() == [
        p,
        at_start_of_day,
    ]

    check_the_overview(
        logged_in_client, estimated_site, p, theta=settings.HACS_THETA, e_days=e_days
    )
    check_the_sites_table(logged_in_client, p, t, e_days)
    check_the_site_page(logged_in_client, estimated_site, p)
    check_todays_crawl_list(logged_in_client, p)


def test_the_sql_exposure_gives_the_papers_probability(frozen_today: date) -> None:
    rng = random.Random(20240315)
    t = to_days(reference_instant(frozen_today))
    e_days = 7.0
    Site.objects.bulk_create(
        Site(seed_url=f"http://u.edu/~s{i}/", canonical_key=f"edu,u)/~s{i}") for i in range(400)
    )
    for i, site in enumerate(Site.objects.order_by("pk")):
        rate = 0.0 if i % 40 == 0 else 10 ** rng.uniform(-5, 0.5)
        # τ up to three years back, and now and then after t + e (a clock skew): p = 0 there.
        tau_days = t - rng.uniform(0, 1100) if i % 25 else t + e_days + rng.uniform(0, 30)
        make_estimate(
            site,
            rate=rate,
            tau_days=tau_days,
            tau=datetime(1970, 1, 1, tzinfo=UTC) + timedelta(days=tau_days),
        )
    rows = list(
        Estimate.objects.annotate(
            x=exposure_expression(method="observed", t_days=t, e_days=e_days)
        ).values_list("rate", "tau_days", "x")
    )
    rates, taus, exposures = (
        np.array(column, dtype=np.float64) for column in zip(*rows, strict=True)
    )
    assert len(rows) == 400 and (exposures < 0).any() and (exposures == 0).any()
    assert np.array_equal(exposures, change_exposure(rates, taus, t, e_days))
    through_sql = -np.expm1(-np.maximum(exposures, 0.0))  # 1 − exp(−x), never below 0
    assert np.array_equal(through_sql, change_probability(rates, taus, t, e_days))

    # Ordering and thresholds in SQL select what the core's p selects.
    ordered = Estimate.objects.annotate(
        x=exposure_expression(method="observed", t_days=t, e_days=e_days)
    ).order_by("-x")
    p_in_sql_order = [
        change_probability(rate, tau, t, e_days)
        for rate, tau in ordered.values_list("rate", "tau_days")
    ]
    assert p_in_sql_order == sorted(p_in_sql_order, reverse=True)
    p = change_probability(rates, taus, t, e_days)
    for theta in (0.05, 0.3, 0.5, 0.9):
        kept = ordered.filter(x__gte=exposure_threshold(theta)).count()
        assert kept == int((p >= theta).sum()) and 0 < kept < 400


def test_the_sql_exposure_gives_the_posteriors_probability(frozen_today: date) -> None:
    rng = random.Random(20240316)
    t = to_days(reference_instant(frozen_today))
    e_days = 7.0
    Site.objects.bulk_create(
        Site(seed_url=f"http://u.edu/~s{i}/", canonical_key=f"edu,u)/~s{i}") for i in range(300)
    )
    for i, site in enumerate(Site.objects.order_by("pk")):
        shape, beta = 10 ** rng.uniform(-1, 2), 10 ** rng.uniform(0, 4)
        # The newest copy up to three years back, and now and then after t + e (a clock skew).
        copy = t - rng.uniform(0, 1100) if i % 25 else t + e_days + rng.uniform(0, 30)
        make_estimate(
            site,
            method="posterior",
            rate=shape / beta,
            posterior_shape=shape,
            posterior_rate=beta,
            last_copy_days=copy,
        )
    rows = list(
        Estimate.objects.annotate(
            x=exposure_expression(method="posterior", t_days=t, e_days=e_days)
        ).values_list("posterior_shape", "posterior_rate", "last_copy_days", "x")
    )
    alpha, beta, copy, exposures = (
        np.array(column, dtype=np.float64) for column in zip(*rows, strict=True)
    )
    assert len(rows) == 300 and (exposures == 0).any()
    assert np.allclose(exposures, posterior_exposure(alpha, beta, t + e_days - copy), rtol=1e-12)
    estimates = list(Estimate.objects.all())
    core = estimate_probabilities(estimates, t_days=t, e_days=e_days)
    by_pk = dict(zip((e.pk for e in estimates), core, strict=True))
    ordered = Estimate.objects.annotate(
        x=exposure_expression(method="posterior", t_days=t, e_days=e_days)
    ).order_by("-x", "pk")
    in_sql_order = [by_pk[pk] for pk in ordered.values_list("pk", flat=True)]
    assert in_sql_order == sorted(in_sql_order, reverse=True)
    for theta in (0.05, 0.3, 0.5, 0.9):
        kept = ordered.filter(x__gte=exposure_threshold(theta)).count()
        assert kept == int((core >= theta).sum())


def check_the_csv_and_the_export(client: Any, crawl: CrawlList, printed: str) -> None:
    """The CSV and the command: τ and the newest copy in ISO 8601 UTC, as the download gives
    them."""
    from scheduling.cells import tau_cell

    [row] = list(csv.DictReader(io.StringIO(printed)))
    entry = crawl.entries.get()
    assert row["tau"] == tau_cell(entry.tau) and row["tau"].endswith("T21:00:00+00:00")
    assert row["last_copy"] == tau_cell(entry.last_copy)
    download = client.get(reverse("crawl-list-csv", args=[crawl.pk]))
    assert b"".join(download.streaming_content).decode() == printed
    export = io.StringIO()
    call_command("export_estimates", stdout=export)
    [exported] = list(csv.DictReader(io.StringIO(export.getvalue())))
    assert exported["tau"] == row["tau"] and exported["last_copy"] == row["last_copy"]


def test_tau_dates_due_and_intervals_read_the_same_on_every_page_the_csv_and_the_command(
    logged_in_client: Any, estimated_site: Site, settings: Any
) -> None:
    """τ, the newest copy, the date a probability reaches to and the mean interval come from
    one formatter (``scheduling.cells``): the pages write τ as the CSV does in their ``datetime``
    attributes and as one date for people, in UTC whatever the display time zone."""
    # A display zone 14 hours ahead of UTC: τ (21:00 UTC) falls on the next day there, so a
    # page formatting τ in the display zone would name another day than the CSV.
    settings.TIME_ZONE = "Pacific/Kiritimati"
    from scheduling.cells import day_text, interval_text

    out, err = io.StringIO(), io.StringIO()
    call_command("crawl_list", "--theta", "0", stdout=out, stderr=err)
    [row] = list(csv.DictReader(io.StringIO(out.getvalue())))
    crawl = CrawlList.objects.get()
    entry = crawl.entries.get()
    assert entry.tau is not None and entry.last_copy is not None and entry.rate
    stored = Estimate.objects.get(site=estimated_site, level="homepage", method=DEFAULT_METHOD)
    assert stored.tau == entry.tau and stored.rate == entry.rate

    check_the_csv_and_the_export(logged_in_client, crawl, out.getvalue())

    # The pages: the same instant in the datetime attribute, the same date for people.
    assert timezone.localtime(entry.tau).date() != entry.tau.date()
    day = day_text(entry.tau)
    assert day == f"{entry.tau.day} {entry.tau:%b %Y}"
    tau = f'<time datetime="{row["tau"]}" title="{day}, 21:00 UTC">{day}</time>'
    interval = interval_text(entry.rate)
    assert interval.endswith(" days")
    pages = {
        "crawl list": logged_in_client.get(reverse("crawl-list"), {"list": crawl.pk}),
        "sites": logged_in_client.get(reverse("site-list")),
        "site": logged_in_client.get(reverse("site-detail", args=[estimated_site.pk])),
    }
    due = "by 16 Mar 2024"  # TODAY + e = 1 day: the probability is of a change by t + e
    for name, page in pages.items():
        text = page.content.decode()
        assert tau in text, name
        assert due in text and "P(change)" in text, name
        assert interval in text, name
    # The site page's tables, headed "(UTC)", give the update at τ in UTC too.
    assert f"{entry.tau.day} {entry.tau:%b %Y}, 21:00 UTC</a>" in pages["site"].content.decode()
    copy = row["last_copy"]
    assert f'<time datetime="{copy}"' in pages["crawl list"].content.decode()
    assert f"P(change) {due}" in err.getvalue()
