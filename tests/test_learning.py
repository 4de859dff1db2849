"""Learned schedulers in the product: learn_scorer, its job, and crawl lists that rank by them."""

from __future__ import annotations

import io
from datetime import UTC, date, datetime, timedelta

import numpy as np
import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext

from archive.captures import MAX_DEPTH
from dashboard.forms import CrawlListForm
from hacs.clock import reference_instant, to_days
from hacs.evaluation import window_scores
from hacs.learning.gp4c import ScoreFunction, empty_window_terminals, learn_gp4c
from hacs.learning.lws import LwsModel, lws_scores
from jobs.models import JobRecord
from jobs.services import job_record_create
from scheduling.crawl_lists import CrawlListOptions, crawl_list_store
from scheduling.estimates import estimates_recompute, timelines_load
from scheduling.evaluation_service import evaluation_tables_load
from scheduling.jobs import run_learning
from scheduling.learning import learned_scorer_create, learned_scorer_latest, learning_history
from scheduling.models import CrawlList, LearnedScorer
from tests.factories import add_observations, make_capture, make_site
from tests.support.commands import learned_list_command

pytestmark = pytest.mark.django_db

ORIGIN = datetime(2017, 1, 1, tzinfo=UTC)
LIST_DAY = date(2017, 12, 20)


@pytest.fixture()
def collection() -> list[int]:
    """Thirty sites over a year: each changes as a Poisson process (mean intervals from 5 to
    200 days) and is captured every 2–20 days; a capture after a change adds a new link."""
    rng = np.random.default_rng(4)
    ids = []
    for _ in range(30):
        site = make_site()
        rate = 1 / np.exp(rng.uniform(np.log(5), np.log(200)))
        gap = rng.uniform(2, 20)
        moments = np.cumsum(rng.exponential(gap, 60))
        moments = moments[moments < 350]
        changed = [False] + [
            bool(rng.random() < -np.expm1(-rate * (b - a)))
            for a, b in zip(moments[:-1], moments[1:], strict=True)
        ]
        add_observations(
            site, [ORIGIN + timedelta(days=float(d)) for d in moments], updates=changed
        )
        ids.append(site.pk)
    estimates_recompute()
    return ids


def learn(*args: str) -> str:
    out = io.StringIO()
    call_command("learn_scorer", *args, stdout=out)
    return out.getvalue()


GP_ARGS = (
    "--start",
    "2017-03-01",
    "--end",
    "2017-10-01",
    "--weeks",
    "6",
    "--generations",
    "3",
    "--population",
    "12",
    "--seed",
    "5",
)


def test_learn_scorer_stores_the_function_the_pure_core_learns(collection: list[int]) -> None:
    text = learn(*GP_ARGS)
    scorer = LearnedScorer.objects.get()
    assert scorer.status == LearnedScorer.Status.DONE and scorer.kind == "gp4c"
    assert f"score = {scorer.model['formula']}" in text
    assert "crawl_list --method gp4c --level homepage now ranks with it." in text
    assert len(scorer.curve["best"]) == 4  # generation 0 and three more

    # The same learning, straight from the pure core on the same observations.
    tables = evaluation_tables_load(
        levels=["homepage"],
        start=datetime(2016, 12, 7, tzinfo=UTC),
        end=datetime(2017, 10, 8, tzinfo=UTC),
    )
    again = learn_gp4c(
        tables["homepage"],
        start=to_days(datetime(2017, 3, 1, tzinfo=UTC)),
        end=to_days(datetime(2017, 10, 1, tzinfo=UTC)),
        w_weeks=6,
        generations=3,
        population=12,
        seed=5,
    )
    assert scorer.model["expression"] == again.function.expression
    assert scorer.training_fitness == again.training_fitness
    assert scorer.validation_fitness == again.validation_fitness


QUIET_FIRSTS = (3.0, 40.0, 90.0)


def add_quiet_sites() -> list[int]:
    """Three sites the archive stopped capturing in the summer: nothing in the 6-week window."""
    quiet = []
    for first in QUIET_FIRSTS:
        site = make_site()
        moments = [ORIGIN + timedelta(days=first + 20.0 * i) for i in range(8)]
        add_observations(site, moments, updates=[False] + [True] * 7)
        quiet.append(site.pk)
    return quiet


def expected_gp4c_scores(scorer: LearnedScorer, quiet: list[int]) -> dict[int, float]:
    """What the stored function gives each site: its window's terminals, or its newest copy's."""
    t = reference_instant(LIST_DAY)
    function = ScoreFunction(scorer.model["expression"])
    tables = evaluation_tables_load(levels=["homepage"], start=t - timedelta(weeks=12), end=t)
    found = window_scores(tables["homepage"], t=to_days(t), w_weeks=6, e_days=7.0)
    expected = dict(
        zip(
            tables.site_ids[found.site].tolist(),
            function.score(found.terminals).tolist(),
            strict=True,
        )
    )
    assert not set(quiet) & set(expected)
    timelines = timelines_load(level="homepage", end=t - timedelta(microseconds=1))
    newest = dict(
        zip(timelines.site_ids.tolist(), timelines.times[timelines.offsets[1:] - 1], strict=True)
    )
    assert all(
        newest[pk] == to_days(ORIGIN) + first + 140.0
        for pk, first in zip(quiet, QUIET_FIRSTS, strict=True)
    )
    rest = sorted(set(newest) - set(expected))
    assert set(quiet) <= set(rest)
    columns = empty_window_terminals(
        to_days(t), 7.0, np.array([newest[pk] for pk in rest]), found.prior
    )
    assert not columns["n"].any() and list(columns["t"]) == pytest.approx(
        [to_days(t) + 7.0 - newest[pk] for pk in rest]
    )
    expected.update(zip(rest, function.score(columns).tolist(), strict=True))
    return expected


def gp4c_csv_first_row() -> tuple[str, str]:
    """The header and first row of the crawl_list command's CSV of a GP4C list."""
    out, _err = learned_list_command("gp4c", LIST_DAY, "--history-days", "400")
    header, first_row = out.splitlines()[:2]
    return header, first_row


def test_a_gp4c_crawl_list_ranks_every_site_by_the_stored_function(collection: list[int]) -> None:
    """Every site with an estimate gets the function's score, those without an observation in
    its window too (from their newest copy: gp4c.empty_window_terminals), and the list is in
    the order of the scores, whatever θ keeps."""
    learn(*GP_ARGS)
    scorer = learned_scorer_latest("gp4c", "homepage")
    quiet = add_quiet_sites()
    estimates_recompute()
    crawl = crawl_list_store(
        day=LIST_DAY,
        options=CrawlListOptions(method="gp4c", budget=40, history_days=400),
        source=CrawlList.Source.PAGE,
    ).crawl_list
    assert crawl.scorer == scorer and crawl.method == "gp4c"
    entries = list(crawl.entries.order_by("rank"))
    assert len(entries) == 33 and all(e.score is not None for e in entries)
    expected = expected_gp4c_scores(scorer, quiet)
    assert {e.site_id: e.score for e in entries} == pytest.approx(expected, rel=1e-12)
    assert [e.score for e in entries] == sorted(expected.values(), reverse=True)
    # With θ the list keeps the sites whose p reaches it, still in the function's order.
    kept = crawl_list_store(
        day=LIST_DAY,
        options=CrawlListOptions(method="gp4c", theta=0.5, budget=None, history_days=400),
        source=CrawlList.Source.PAGE,
    ).crawl_list
    scores = list(kept.entries.order_by("rank").values_list("score", "probability"))
    assert scores and all(score is not None and p >= 0.5 for score, p in scores)
    assert [s for s, _ in scores] == sorted((s for s, _ in scores), reverse=True)
    # The CSV carries the score beside the probability.
    header, first_row = gp4c_csv_first_row()
    assert header.endswith(",score")
    assert float(first_row.split(",")[-1]) == pytest.approx(entries[0].score, rel=1e-5)


def test_lws_learns_and_ranks_by_the_updates_expected_since_the_copy(collection: list[int]) -> None:
    text = learn("--kind", "lws", "--start", "2017-03-01", "--end", "2017-10-01")
    scorer = LearnedScorer.objects.get()
    assert scorer.status == LearnedScorer.Status.DONE
    model = LwsModel.from_dict(scorer.model)
    assert model.samples > 0 and f"{model.samples:,} samples" in text
    assert "log_since_update" in text
    crawl = crawl_list_store(
        day=LIST_DAY,
        options=CrawlListOptions(method="lws", budget=30, history_days=400),
        source=CrawlList.Source.PAGE,
    ).crawl_list
    t = reference_instant(LIST_DAY)
    timelines = timelines_load(level="homepage", end=t - timedelta(microseconds=1))
    last = timelines.times[timelines.offsets[1:] - 1]
    scores = lws_scores(
        model,
        timelines.times,
        timelines.updated,
        timelines.offsets,
        last,
        to_days(t),
        1.0,
        new_links=timelines.new_links,
        page=timelines.page,
    )
    expected = dict(zip(timelines.site_ids.tolist(), scores.tolist(), strict=True))
    entries = list(crawl.entries.order_by("rank"))
    assert len(entries) == 30
    assert all(e.score == expected[e.site_id] for e in entries)
    assert [e.score for e in entries] == sorted(expected.values(), reverse=True)


def test_a_learned_method_without_a_learned_scheduler_says_how_to_learn_one(
    collection: list[int],
) -> None:
    with pytest.raises(CommandError, match="No GP4C scheduler has been learned at the homepage"):
        call_command("crawl_list", "--method", "gp4c", "--budget", "3", stdout=io.StringIO())
    form = CrawlListForm(
        data={
            "day": "2017-12-20",
            "budget": 5,
            "level": "homepage",
            "method": "lws",
            "history_days": 400,
            "e_days": 1,
        }
    )
    assert not form.is_valid()
    assert "learn_scorer --kind lws --level homepage" in form.errors["method"][0]
    assert not CrawlList.objects.exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--start", "2017-03-01", "--end", "2017-03-20"), "learning period is too short"),
        (("--start", "2017-03-01", "--end", "2017-10-01", "--weeks", "99"), "w_weeks must lie"),
    ],
)
def test_bad_parameters_are_refused_by_name(args: tuple[str, ...], message: str) -> None:
    with pytest.raises(CommandError, match=message):
        learn(*args)
    assert not LearnedScorer.objects.exists()


def test_the_learning_job_reports_progress_and_stores_the_result(collection: list[int]) -> None:
    scorer = learned_scorer_create(
        parameters={
            "kind": "gp4c",
            "start": "2017-03-01",
            "end": "2017-10-01",
            "w_weeks": 6,
            "generations": 2,
            "population": 10,
        }
    )
    record = job_record_create(kind=JobRecord.Kind.LEARNING, label="learn")
    run_learning(record.pk, scorer.pk)
    record.refresh_from_db()
    scorer.refresh_from_db()
    assert record.status == JobRecord.Status.FINISHED and record.done == record.total == 100
    assert scorer.status == LearnedScorer.Status.DONE and scorer.progress == 1.0
    assert scorer.duration_seconds is not None and scorer.finished_at is not None


def test_a_failed_learning_run_is_marked_failed_with_its_reason(collection: list[int]) -> None:
    # A period before any observation: nothing to learn from.
    with pytest.raises(CommandError, match="too few updates"):
        learn("--kind", "lws", "--start", "2015-01-01", "--end", "2015-06-01")
    scorer = LearnedScorer.objects.get()
    assert scorer.status == LearnedScorer.Status.FAILED and "too few updates" in scorer.error
    with pytest.raises(Exception, match="No LWS scheduler"):
        learned_scorer_latest("lws", "homepage")


def test_an_evaluation_run_ranks_with_the_newest_learned_schedulers(collection: list[int]) -> None:
    from scheduling.evaluation_service import evaluation_run, evaluation_run_create

    learn(*GP_ARGS)
    learn("--kind", "lws", "--start", "2017-03-01", "--end", "2017-10-01")
    later = evaluation_run_create(
        parameters={
            "start": "2017-10-08",
            "end": "2017-12-10",
            "levels": ["homepage"],
            "w_weeks": [6],
        }
    )
    results = evaluation_run(run=later)
    models = {row["model"] for row in results["budget"]}
    assert {"gp4c", "lws"} <= models
    shown = {item["kind"]: item for item in results["learned"]}
    assert set(shown) == {"gp4c", "lws"}
    # Learned up to 2017-10-01, its last positives by 2017-10-08: a run from then on tests it.
    assert shown["gp4c"]["overlaps"] is False and shown["lws"]["overlaps"] is False
    assert (
        shown["gp4c"]["model"]["expression"]
        == LearnedScorer.objects.get(kind="gp4c").model["expression"]
    )
    overlapping = evaluation_run(
        run=evaluation_run_create(
            parameters={
                "start": "2017-09-01",
                "end": "2017-12-10",
                "levels": ["homepage"],
                "w_weeks": [6],
            }
        )
    )
    assert all(item["overlaps"] for item in overlapping["learned"])
    # The replay section replays them too, by the name of their kind and period.
    rows = {row["policy"]: row for row in results["replay"]["budgets"][0]["rows"]}
    assert rows["gp4c"]["label"] == "GP4C, learned on 1 Mar 2017 to 1 Oct 2017"
    assert rows["lws"]["crawls"] == rows["hacs"]["crawls"]


def test_the_crawl_list_page_shows_a_learned_lists_scores_and_scheduler(
    collection: list[int], client: object
) -> None:
    from tests.factories import make_user

    learn(*GP_ARGS)
    crawl = crawl_list_store(
        day=LIST_DAY,
        options=CrawlListOptions(method="gp4c", budget=5, history_days=400),
        source=CrawlList.Source.PAGE,
    ).crawl_list
    client.force_login(make_user("viewer", role="viewer"))  # type: ignore[attr-defined]
    page = client.get(f"/crawl-list/?list={crawl.pk}").content.decode()  # type: ignore[attr-defined]
    scorer = LearnedScorer.objects.get()
    assert f"Ranked by {scorer} (learning run {scorer.pk})" in page
    assert '<th scope="col" class="num">Score</th>' in page
    first = crawl.entries.order_by("rank").first()
    assert first is not None and first.score is not None
    assert f'<td class="num">{first.score:.4g}</td>' in page


def test_the_collections_history_is_the_first_and_last_day_of_its_observations() -> None:
    """``learning_history`` reads the homepage's ends through their own index and the website's
    through one aggregate; both equal the first and last observation a level reads, and pages
    deeper than the level's, copies without update data and non-observations do not count."""
    assert learning_history(level="homepage") is None
    site = make_site()
    add_observations(
        site,
        [ORIGIN + timedelta(days=d) for d in (3, 40, 90)],
        updates=[False, True, False],
        unreadable=[2],
    )
    add_observations(
        site,
        [ORIGIN - timedelta(days=30), ORIGIN + timedelta(days=200)],
        updates=[False, True],
        page="/pubs.html",
        depth=1,
    )
    add_observations(
        site,
        [ORIGIN - timedelta(days=400)],
        updates=[False],
        page="/a/b/c.html",
        depth=MAX_DEPTH + 1,
    )
    make_capture(site, timestamp=ORIGIN + timedelta(days=300), is_observation=False)
    day = ORIGIN.date()
    assert learning_history(level="homepage") == (day + timedelta(3), day + timedelta(40))
    assert learning_history(level="website") == (day - timedelta(30), day + timedelta(200))


def test_the_homepage_history_is_read_from_its_own_index() -> None:
    """The Evaluation page's query reads both ends of the partial index capture_homepage_time,
    not every capture (at 5.5 M captures the aggregate took about a second;
    ``bench.pages`` times the page)."""
    site = make_site()
    add_observations(
        site,
        [ORIGIN + timedelta(days=d) for d in range(0, 300, 7)],
        updates=[d % 3 == 0 for d in range(0, 300, 7)],
    )
    with CaptureQueriesContext(connection) as queries:
        learning_history(level="homepage")
    (query,) = queries.captured_queries
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SET LOCAL enable_seqscan = off")  # a few rows: make the choice
            cursor.execute(f"EXPLAIN {query['sql']}")
        else:
            cursor.execute(f"EXPLAIN QUERY PLAN {query['sql']}")
        plan = " ".join(str(cell) for row in cursor.fetchall() for cell in row)
    assert plan.count("capture_homepage_time") == 2, plan
