"""Today's crawl list (DESIGN rule 8): ranking, thresholds, budgets, CSV and the page."""

from __future__ import annotations

import csv
import html
import io
import re
import threading
from datetime import date, datetime, timedelta
from typing import Any

import pytest
from django.core.management import call_command
from django.db import connection, transaction

from archive.models import Site
from hacs.clock import reference_instant, to_days
from hacs.estimators import change_probability, estimate
from jobs.models import JobRecord
from scheduling.crawl_lists import (
    CSV_COLUMNS,
    CrawlListOptions,
    RankedSite,
    StoredList,
    crawl_list_csv,
    crawl_list_lock,
    crawl_list_rank,
    crawl_list_store,
)
from scheduling.jobs import daily_crawl_list
from scheduling.models import CrawlList, Method
from tests.factories import add_observations, make_site, make_user

pytestmark = pytest.mark.django_db
DAY = date(2018, 6, 1)


def before(*days: float) -> list[datetime]:
    """Instants the given numbers of days before the reference instant of DAY."""
    t = reference_instant(DAY)
    return [t - timedelta(days=d) for d in days]


def rank(**options: Any) -> tuple[list[RankedSite], int]:
    """A list by the paper's reading (observed MLE, g since τ) unless ``method`` says else."""
    options.setdefault("method", Method.OBSERVED)
    found = crawl_list_rank(day=DAY, options=CrawlListOptions(**options))
    return found.sites, found.eligible


@pytest.fixture()
def three_sites() -> list[Site]:
    busy = make_site(author="Busy", seed_url="http://a.edu/~busy/", canonical_key="edu,a)/~busy")
    add_observations(
        busy, before(100, 80, 60, 40, 20, 10), updates=[False, True, True, False, True, True]
    )
    calm = make_site(author="Calm", seed_url="http://a.edu/~calm/", canonical_key="edu,a)/~calm")
    add_observations(
        calm, before(400, 300, 200, 100, 50), updates=[False, False, True, False, False]
    )
    new = make_site(author="New", seed_url="http://a.edu/~new/", canonical_key="edu,a)/~new")
    add_observations(new, before(5), updates=[False])
    return [busy, calm, new]


def test_probabilities_follow_the_estimators(three_sites: list[Site]) -> None:
    ranked, eligible = rank(history_days=1000, e_days=7)
    assert eligible == 3
    assert [r.seed_url for r in ranked] == [
        "http://a.edu/~busy/",
        "http://a.edu/~calm/",
        "http://a.edu/~new/",
    ]
    t = to_days(reference_instant(DAY))
    times = [t - d for d in [100, 80, 60, 40, 20, 10]]
    expected = estimate(times, [False, True, True, False, True, True])
    assert ranked[0].rate == pytest.approx(expected.rate, rel=1e-9)
    assert ranked[0].probability == pytest.approx(
        change_probability(expected.rate, expected.tau, t, 7), rel=1e-9
    )
    assert ranked[2].probability == 0.0 and ranked[2].rate is None  # one observation: unknown


def test_threshold_and_budget_cut_the_list(three_sites: list[Site]) -> None:
    everything, _ = rank(history_days=1000, theta=0.0)
    cutoff = everything[1].probability
    by_theta, _ = rank(history_days=1000, theta=cutoff)
    assert [r.seed_url for r in by_theta] == [r.seed_url for r in everything[:2]]
    by_budget, _ = rank(history_days=1000, budget=1)
    assert len(by_budget) == 1 and by_budget[0].seed_url == everything[0].seed_url
    both, _ = rank(history_days=1000, theta=0.99, budget=2)
    assert all(r.probability >= 0.99 for r in both) and len(both) <= 2


def test_the_history_window_limits_the_observations(three_sites: list[Site]) -> None:
    ranked, eligible = rank(history_days=30, theta=0.0)
    # Only the busy site (10 and 20 days back) and the new one (5 days) remain eligible.
    assert eligible == 2
    busy = next(r for r in ranked if "busy" in r.seed_url)
    t = to_days(reference_instant(DAY))
    assert busy.rate == pytest.approx(estimate([t - 20, t - 10], [False, True]).rate)


def test_ties_go_to_the_older_tau_then_the_url() -> None:
    for name in ("b", "a", "c"):
        site = make_site(seed_url=f"http://x.edu/~{name}/", canonical_key=f"edu,x)/~{name}")
        add_observations(site, before(30, 20), updates=[False, False])  # λ = 0: p = 0 for all
    ranked, _ = rank(history_days=100, theta=0.0)
    assert [r.seed_url for r in ranked] == [f"http://x.edu/~{n}/" for n in ("a", "b", "c")]


def test_the_csv_has_the_documented_columns_and_neutralised_cells(three_sites: list[Site]) -> None:
    Site.objects.filter(author="Busy").update(author='=HYPERLINK("http://evil")')
    crawl = crawl_list_store(
        day=DAY,
        options=CrawlListOptions(theta=0.0, history_days=1000),
        source=CrawlList.Source.PAGE,
    ).crawl_list
    out, err = io.StringIO(), io.StringIO()
    call_command(
        "crawl_list",
        "--date",
        "2018-06-01",
        "--theta",
        "0",
        "--history-days",
        "1000",
        stdout=out,
        stderr=err,
    )
    rows = list(csv.reader(io.StringIO(out.getvalue())))
    assert rows[0] == CSV_COLUMNS
    assert [r[0] for r in rows[1:]] == ["1", "2", "3"]
    assert rows[1][2].startswith("'=")  # a spreadsheet shows the text instead of running it
    assert float(rows[1][3]) == pytest.approx(crawl.entries.get(rank=1).probability, abs=1e-6)
    # The same date, options and entries as the list built above: it is not stored twice.
    assert CrawlList.objects.count() == 1
    assert "not stored again" in err.getvalue()


def test_the_command_explains_a_bad_theta() -> None:
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="between 0 and 1"):
        call_command("crawl_list", "--theta", "1.5")


def test_the_daily_job_builds_todays_list_with_the_defaults(three_sites: list[Site]) -> None:
    list_id = daily_crawl_list()
    crawl = CrawlList.objects.get(pk=list_id)
    assert crawl.created_by is None
    assert crawl.theta == 0.5 and crawl.history_days == 1095
    assert JobRecord.objects.get(kind="crawl_list").status == "finished"


def test_the_cron_configuration_registers_the_daily_list_and_the_fetch_retry() -> None:
    from rq.cron import CronScheduler

    scheduler = CronScheduler(connection=None)  # type: ignore[arg-type]
    scheduler.load_config_from_file("operations.cron")
    jobs = {job.func_name: job for job in scheduler.get_jobs()}
    assert jobs["operations.daily.daily_crawl_list_and_hand_offs"].cron == "0 5 * * *"
    assert jobs["operations.jobs.daily_fetch_retry"].cron == "0 4 * * *"
    assert jobs["operations.jobs.nightly_refresh"].cron == "0 3 * * *"
    # The Jobs page names every periodic job waiting in a queue, or hides it on purpose.
    from jobs.services import HIDDEN_FUNCTIONS, KNOWN_FUNCTIONS

    assert set(jobs) == set(KNOWN_FUNCTIONS) | HIDDEN_FUNCTIONS


@pytest.fixture()
def twelve_sites() -> list[Site]:
    """Twelve sites with thin, unchanged histories: p for one day ahead stays far below 0.5."""
    sites = []
    for i in range(12):
        site = make_site(seed_url=f"http://b.edu/~u{i:02d}/", canonical_key=f"edu,b)/~u{i:02d}")
        add_observations(site, before(300 - i, 200 - i, 2 + i), updates=[False, False, False])
        sites.append(site)
    return sites


def run_crawl_list(*args: str) -> tuple[list[list[str]], str]:
    out, err = io.StringIO(), io.StringIO()
    call_command(
        "crawl_list", "--date", DAY.isoformat(), "--e-days", "1", *args, stdout=out, stderr=err
    )
    return list(csv.reader(io.StringIO(out.getvalue())))[1:], err.getvalue()


def test_a_budget_without_a_threshold_fills_its_k(twelve_sites: list[Site], settings: Any) -> None:
    """DESIGN rule 8: ``--budget 8`` alone lists 8 sites though none reaches the default θ 0.5;
    ``--theta`` given as well cuts the list, and the command says why it holds fewer than k."""
    assert settings.HACS_THETA == 0.5 and settings.HACS_BUDGET is None
    rows, said = run_crawl_list("--budget", "8")
    assert len(rows) == 8 and all(float(r[3]) < 0.5 for r in rows)
    assert CrawlList.objects.get().theta is None
    assert "not the budget" not in said
    rows, said = run_crawl_list("--budget", "8", "--theta", "0.5")
    assert rows == []
    assert "It holds 0 sites, not the budget's 8: only 0 reach the threshold θ 0.5." in said
    rows, said = run_crawl_list("--budget", "20", "--theta", "none")
    assert len(rows) == 12
    assert "not the budget's 20: only 12 sites have a capture in the 1,095-day" in said
    # Without a budget the configured θ applies.
    rows, _ = run_crawl_list()
    assert rows == [] and CrawlList.objects.order_by("pk").last().theta == 0.5  # type: ignore[union-attr]


def test_the_daily_job_fills_a_configured_budget(twelve_sites: list[Site], settings: Any) -> None:
    settings.HACS_BUDGET, settings.HACS_THETA, settings.HACS_E_DAYS = 5, None, 1.0
    settings.HACS_HISTORY_DAYS = 36500  # the sites' captures are years before today
    crawl = CrawlList.objects.get(pk=daily_crawl_list())
    assert crawl.budget == 5 and crawl.theta is None and crawl.entries.count() == 5


def test_the_page_says_why_a_list_holds_fewer_than_its_budget(
    logged_in_client: Any, twelve_sites: list[Site]
) -> None:
    form = {
        "day": DAY.isoformat(),
        "theta": "0.5",
        "budget": "8",
        "level": "homepage",
        "method": "posterior",
        "history_days": "1095",
        "e_days": "1",
    }
    response = logged_in_client.post("/crawl-list/build/", form, follow=True)
    assert "It holds 0 sites, not the budget’s 8" in response.content.decode().replace(
        "&#x27;", "’"
    ).replace("'", "’")
    form["theta"] = ""
    response = logged_in_client.post("/crawl-list/build/", form, follow=True)
    text = response.content.decode()
    assert "8 of 12 sites" in text and "not the budget" not in text


# --- the page ----------------------------------------------------------------------------------
def test_a_viewer_can_read_and_download_but_not_build(client: Any, three_sites: list[Site]) -> None:
    crawl = crawl_list_store(
        day=DAY,
        options=CrawlListOptions(theta=0.0, history_days=1000),
        source=CrawlList.Source.DAILY_JOB,
    ).crawl_list
    client.force_login(make_user("reader", role="viewer"))
    page = client.get("/crawl-list/")
    assert page.status_code == 200 and b"Busy" in page.content
    assert b"Build crawl list" not in page.content
    csv_response = client.get(f"/crawl-list/{crawl.pk}.csv")
    text = b"".join(csv_response.streaming_content).decode()
    assert text.splitlines()[0] == ",".join(CSV_COLUMNS)
    urls = b"".join(client.get(f"/crawl-list/{crawl.pk}.txt").streaming_content).decode()
    ranked = list(crawl.entries.order_by("rank").values_list("site__seed_url", flat=True))
    assert urls.split() == ranked and len(ranked) == 3
    forbidden = client.post("/crawl-list/build/", {"day": "2018-06-01", "theta": "0.5"})
    assert forbidden.status_code == 403


def test_a_librarian_builds_a_list_from_the_form(
    logged_in_client: Any, three_sites: list[Site]
) -> None:
    form = {
        "day": "2018-06-01",
        "theta": "0",
        "budget": "2",
        "level": "homepage",
        "method": "observed",
        "history_days": "1000",
        "e_days": "7",
    }
    response = logged_in_client.post("/crawl-list/build/", form)
    crawl = CrawlList.objects.get()
    assert response.status_code == 302 and response["Location"].endswith(f"?list={crawl.pk}")
    assert crawl.created_by is not None and crawl.entries.count() == 2
    page = logged_in_client.get(response["Location"])
    assert b"Download CSV" in page.content and b"2 of 3 sites" in page.content


def test_the_form_explains_bad_values(logged_in_client: Any) -> None:
    response = logged_in_client.post(
        "/crawl-list/build/",
        {
            "day": "2018-13-01",
            "theta": "2",
            "history_days": "0",
            "level": "homepage",
            "method": "observed",
            "e_days": "7",
        },
    )
    assert response.status_code == 400
    assert b"Enter a valid date" in response.content
    assert b"less than or equal to 1" in response.content
    assert CrawlList.objects.count() == 0


def test_the_page_stays_flat_in_queries_with_20000_sites(
    logged_in_client: Any, django_assert_max_num_queries: Any
) -> None:
    sites = Site.objects.bulk_create(
        Site(seed_url=f"http://u.edu/~s{i}/", canonical_key=f"edu,u)/~s{i}") for i in range(20_000)
    )
    crawl = CrawlList.objects.create(
        date=DAY, theta=0.0, history_days=1000, e_days=7, eligible_sites=20_000
    )
    from scheduling.models import CrawlListEntry

    CrawlListEntry.objects.bulk_create(
        CrawlListEntry(crawl_list=crawl, rank=i + 1, site=s, probability=1 - i / 20_000)
        for i, s in enumerate(sites)
    )
    with django_assert_max_num_queries(9):  # 8, and one for the crawls' yield
        response = logged_in_client.get(f"/crawl-list/?list={crawl.pk}&page=3")
    assert response.status_code == 200
    assert b"Page 3 of 200" in response.content
    with django_assert_max_num_queries(8):
        download = logged_in_client.get(f"/crawl-list/{crawl.pk}.csv")
        lines = b"".join(download.streaming_content).decode().splitlines()
    assert len(lines) == 20_001


# --- The default: the posterior's chance of a change since the newest copy -------------------


def test_the_default_list_measures_from_the_newest_copy(three_sites: list[Site]) -> None:
    """Busy's last copy is 10 days old, Calm's 50: under the collection's prior the default
    ranks by the chance of a change since each copy, not since the last update."""
    from hacs.bayes import change_probability_since

    ranked, eligible = rank(method=Method.POSTERIOR, history_days=1000, e_days=7)
    assert eligible == 3
    t = to_days(reference_instant(DAY))
    for row in ranked:
        evidence = row.evidence
        assert evidence.posterior_shape is not None and evidence.posterior_rate is not None
        assert evidence.last_copy_days is not None
        expected = change_probability_since(
            evidence.posterior_shape, evidence.posterior_rate, t + 7 - evidence.last_copy_days
        )
        assert row.probability == pytest.approx(float(expected), rel=1e-12)
        assert evidence.interval_low is not None and evidence.interval_high is not None
        assert evidence.interval_low < 1 / row.rate < evidence.interval_high  # type: ignore[operator]
    # The site with one copy has no interval to learn from: its posterior is the prior, and its
    # p grows with the age of that copy (5 days here), so it is crawled in its turn.
    new = next(r for r in ranked if r.seed_url == "http://a.edu/~new/")
    busy = next(r for r in ranked if r.seed_url == "http://a.edu/~busy/")
    assert new.evidence.observations == 1 and 0 < new.probability < busy.probability
    later, _ = rank(method=Method.POSTERIOR, history_days=1000, e_days=60)
    assert next(r for r in later if r.seed_url == "http://a.edu/~new/").probability > (
        new.probability
    )


def test_thin_history_never_reaches_certainty_soon_after_a_copy() -> None:
    """Four observations a day apart, one update: the MLE's interval is a few days and its g
    says p ≈ 1 five weeks later; the default stays moderate."""
    thin = make_site(author="Thin", seed_url="http://t.edu/~thin/", canonical_key="edu,t)/~thin")
    add_observations(thin, before(40, 39, 38, 37), updates=[False, False, True, False])
    for n in range(30):  # a collection to fit the prior on: slow and steady sites
        site = make_site()
        flags = [False] + [(i + n) % 3 == 0 for i in range(9)]  # a change every ~180 days
        add_observations(site, before(*range(600, 0, -60)), updates=flags)
    (paper,) = [r for r in rank(history_days=1000, e_days=7)[0] if r.site_id == thin.pk]
    (default,) = [
        r
        for r in rank(method=Method.POSTERIOR, history_days=1000, e_days=7)[0]
        if r.site_id == thin.pk
    ]
    assert paper.probability > 0.99
    assert default.probability < 0.5


def test_the_csv_shows_the_evidence_behind_each_probability(three_sites: list[Site]) -> None:
    crawl = crawl_list_store(
        day=DAY,
        options=CrawlListOptions(method=Method.POSTERIOR, theta=0.0, history_days=1000),
        source=CrawlList.Source.PAGE,
    ).crawl_list
    out = io.StringIO()
    for chunk in crawl_list_csv(crawl):
        out.write(chunk)
    rows = list(csv.DictReader(io.StringIO(out.getvalue())))
    busy = next(r for r in rows if r["author"] == "Busy")
    assert busy["observations"] == "6"
    assert float(busy["span_days"]) == pytest.approx(90.0, abs=0.05)
    assert (
        float(busy["interval_low_days"])
        < float(busy["interval_days"])
        < float(busy["interval_high_days"])
    )
    assert busy["last_copy"].startswith(str(DAY - timedelta(days=9)))


@pytest.mark.django_db(transaction=True)
def test_two_builds_of_one_list_at_the_same_instant_store_it_once(three_sites: list[Site]) -> None:
    """The daily job and a librarian's click at the same moment: the second build waits for the
    first to commit, then finds its list identical and stores nothing."""
    options = CrawlListOptions(theta=0.0, history_days=1000)
    parameters = {
        "date": DAY,
        "level": options.level,
        "method": options.method,
        "theta": 0.0,
        "budget": None,
        "history_days": 1000,
        "e_days": options.e_days,
        "scorer": None,
    }
    holding, release = threading.Event(), threading.Event()
    results: dict[str, StoredList] = {}

    def first() -> None:
        try:
            with transaction.atomic():
                crawl_list_lock(parameters)
                holding.set()
                release.wait(30)
                results["first"] = crawl_list_store(
                    day=DAY, options=options, source=CrawlList.Source.PAGE
                )
        finally:
            connection.close()

    def second() -> None:
        try:
            results["second"] = crawl_list_store(
                day=DAY, options=options, source=CrawlList.Source.PAGE
            )
        finally:
            connection.close()

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    threads[0].start()
    assert holding.wait(30)
    threads[1].start()
    threads[1].join(1.5)
    waited = threads[1].is_alive()  # still waiting for the first build's transaction
    release.set()
    for thread in threads:
        thread.join(60)
    assert waited
    assert results["first"].new and not results["second"].new
    assert results["second"].crawl_list.pk == results["first"].crawl_list.pk
    assert CrawlList.objects.count() == 1


def test_stored_lists_are_labelled_with_method_k_and_theta(
    logged_in_client: Any, twelve_sites: list[Site]
) -> None:
    for theta, budget in ((None, 8), (0.5, None), (0.2, 3)):
        crawl_list_store(
            day=DAY,
            options=CrawlListOptions(theta=theta, budget=budget, e_days=1.0),
            source=CrawlList.Source.PAGE if budget != 8 else CrawlList.Source.DAILY_JOB,
        )
    page = logged_in_client.get("/crawl-list/").content.decode()
    labels = re.findall(r"</time> · ([^<]*)</a>", page)
    assert labels == [
        "Homepage · posterior · k 3, θ 0.2",
        "Homepage · posterior · θ 0.5",
        "Homepage · posterior · k 8",
    ]
    kinds = re.findall(r'<span class="list-kind list-kind-(\w+)">', page)
    assert kinds == ["experiment", "experiment", "daily"]
    # The page opens on the daily list, not on the newest experiment.
    assert "Daily list for" in page and 'id="experiment-notice"' not in page
    experiment = CrawlList.objects.filter(is_daily=False).first()
    page = logged_in_client.get(f"/crawl-list/?list={experiment.pk}").content.decode()
    assert "Experiment for" in page and 'id="experiment-notice"' in page


def test_a_site_without_an_update_has_no_last_update_on_the_list(
    logged_in_client: Any, twelve_sites: list[Site], three_sites: list[Site]
) -> None:
    """As on the Sites table: τ of a site with no update is its first observation (rule 5),
    which the list does not show as a last update; a site with updates shows its τ."""
    crawl = crawl_list_store(
        day=DAY,
        options=CrawlListOptions(theta=None, budget=20, e_days=1.0),
        source=CrawlList.Source.PAGE,
    ).crawl_list
    entries = {e.site_id: e for e in crawl.entries.all()}
    assert entries[twelve_sites[0].pk].updates == 0 and entries[three_sites[0].pk].updates == 4
    page = logged_in_client.get(f"/crawl-list/?list={crawl.pk}").content.decode()
    rows = {row.split("</a>")[0].rsplit(">", 1)[-1]: row for row in page.split("<tr>")[1:]}
    assert 'title="No update seen in the window.">–' in rows[twelve_sites[0].author]
    assert "<time" in rows["Busy"].split("</td>")[4]  # the τ column


def test_a_site_without_an_update_has_no_tau_in_the_csv_as_on_the_page(
    logged_in_client: Any, three_sites: list[Site]
) -> None:
    """DESIGN rule 5 puts τ at the first observation when the window held no update; the page
    shows "–" for the last update then, and the CSVs leave the cell empty: both say "none"."""
    silent = make_site(
        author="Silent", seed_url="http://a.edu/~quiet/", canonical_key="edu,a)/~quiet"
    )
    add_observations(silent, before(300, 150, 30), updates=[False, False, False])
    crawl = crawl_list_store(
        day=DAY,
        options=CrawlListOptions(theta=0.0, history_days=1000),
        source=CrawlList.Source.PAGE,
    ).crawl_list
    entry = crawl.entries.get(site=silent)
    assert entry.updates == 0 and entry.tau is not None  # τ for p: the first observation
    rows = list(
        csv.DictReader(
            b"".join(logged_in_client.get(f"/crawl-list/{crawl.pk}.csv").streaming_content)
            .decode()
            .splitlines()
        )
    )
    by_author = {row["author"]: row for row in rows}
    assert by_author["Silent"]["tau"] == ""
    assert by_author["Busy"]["tau"] != ""  # a site with updates keeps its last update
    page = logged_in_client.get(f"/crawl-list/?list={crawl.pk}").content.decode()
    row = page[page.index("~quiet/") :]
    assert 'title="No update seen in the window.">–</span>' in row[: row.index("</tr>")]

    out = io.StringIO()
    call_command(
        "export_estimates",
        "--level",
        "homepage",
        "--method",
        "posterior",
        "--end",
        DAY.isoformat(),
        stdout=out,
    )
    exported = {r["author"]: r for r in csv.DictReader(out.getvalue().splitlines())}
    assert exported["Silent"]["tau"] == "" and exported["Silent"]["updates"] == "0"
    assert exported["Busy"]["tau"] != ""


def test_neither_theta_nor_k_is_refused_saying_no_list_was_built(
    logged_in_client: Any, three_sites: list[Site]
) -> None:
    form = {
        "day": DAY.isoformat(),
        "theta": "",
        "budget": "",
        "level": "homepage",
        "method": "posterior",
        "history_days": "1000",
        "e_days": "1",
    }
    response = logged_in_client.post("/crawl-list/build/", form)
    assert response.status_code == 400
    text = html.unescape(response.content.decode())
    assert "No list was built: give a threshold θ" in text
    assert "θ 0 lists every site." in text
    assert not CrawlList.objects.exists()
