"""Evaluation runs from the database (scheduling.evaluation_service, the job and the command).

* The tables loaded with one query per level equal tables built by hand from the ORM rows.
* An imported demo archive loads into exactly the tables read from its truth, and its run gives
  exactly the evaluation core's results on them (the method's claims on the demo are checked on
  those tables, in ``tests/hacs_demo/test_evaluation_on_the_demo.py``).
* ``evaluate`` writes JSON with every key the page and the downloads need; ``--enqueue`` and the
  job run through a real Redis and a real worker process.
"""

from __future__ import annotations

import io
import json
import math
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import redis
from django.core.management import CommandError, call_command

from archive.models import Capture, LinkSnapshot, Site, Tag
from hacs.clock import to_days
from hacs.evaluation import ObservationTable
from hacs.progress import Progress
from hacs_demo import build_demo_archive
from jobs.models import JobRecord
from scheduling.evaluation_service import (
    PROGRESS_EVALUATE,
    evaluation_run,
    evaluation_run_create,
    evaluation_tables_load,
    parse_w_weeks,
)
from scheduling.jobs import enqueue_evaluation
from scheduling.models import Estimate, EvaluationRun, RatePrior
from scheduling.observations import EpochMilliseconds
from testbed.demo_tables import evaluate_as_a_run, run_window, truth_tables
from tests.conftest import make_site
from tests.factories import observation_of

# Every test may touch the database: the module fixture imports the demo into the test database,
# and pytest-django sets that database up only for sessions with tests marked like this.
pytestmark = pytest.mark.django_db
PROJECT = Path(__file__).resolve().parent.parent
T0 = datetime(2016, 1, 4, tzinfo=UTC)


def add_page(
    site: Site,
    page: str,
    *,
    depth: int,
    moments: list[datetime],
    floors: list[int],
    unreadable: tuple[int, ...] = (),
) -> None:
    """Observations of one page of ``site`` (``page`` is the path after the seed), in time order.

    ``unreadable`` observations have no page index (their content could not be read); the
    others are numbered 0, 1, … as the importer numbers them.
    """
    key = site.canonical_key + page
    rows, index = [], 0
    for i, (moment, floor) in enumerate(zip(moments, floors, strict=True)):
        row = observation_of(site, page, key, moment, digest=f"D{i}", depth=depth)
        if i not in unreadable:
            row.page_index, row.link_floor = index, min(floor, index)
            index += 1
        rows.append(row)
    Capture.objects.bulk_create(rows)


def days(*offsets: float) -> list[datetime]:
    return [T0 + timedelta(days=d) for d in offsets]


@pytest.fixture()
def small_collection(db: None) -> list[Site]:
    """Three sites made in non-URL order, with website pages, non-observations, an unreadable
    observation, sub-second and same-second captures."""
    zed = make_site(seed_url="http://z.edu/~zed/", canonical_key="edu,z)/~zed", author="Zed")
    amy = make_site(seed_url="http://a.edu/~amy/", canonical_key="edu,a)/~amy", author="Amy")
    bob = make_site(seed_url="http://b.edu/~bob/", canonical_key="edu,b)/~bob", author="Bob")
    add_page(
        amy, "", depth=0, moments=days(0, 3.5, 10, 17.25, 30, 44), floors=[-1, 0, -1, 2, -1, 4]
    )
    add_page(amy, "/pubs.html", depth=1, moments=days(0, 10, 30), floors=[-1, -1, 1])
    add_page(amy, "/a/b/c.html", depth=2, moments=days(3.5, 20), floors=[-1, -1])
    add_page(
        bob, "", depth=0, moments=days(1, 8, 15, 22, 29), floors=[-1, 0, 1, -1, 3], unreadable=(2,)
    )
    add_page(zed, "", depth=0, moments=[T0 + timedelta(days=2, microseconds=250_000)], floors=[-1])
    add_page(zed, "/x.html", depth=1, moments=days(2, 9), floors=[-1, -1])
    Capture.objects.create(
        site=amy,
        url="http://a.edu/~amy/moved",
        urlkey="edu,a)/~amy/moved",
        page_key="edu,a)/~amy/moved",
        timestamp=T0 + timedelta(days=5),
        depth=1,
        status=301,
        kind="redirect",
        is_observation=False,
    )
    return [zed, amy, bob]


def by_hand(level: str, start: datetime | None = None, end: datetime | None = None) -> list[Any]:
    """(site index, page, time, page_index, link_floor) from ORM rows, Python all the way."""
    ids = [s.pk for s in Site.objects.order_by("canonical_key")]
    rows = Capture.objects.filter(is_observation=True, page_index__isnull=False)
    if level == "homepage":
        rows = rows.filter(depth=0)
    if start is not None:
        rows = rows.filter(timestamp__gte=start)
    if end is not None:
        rows = rows.filter(timestamp__lte=end)
    pages: dict[tuple[int, str], int] = {}
    found = []
    for c in rows.order_by("site_id", "page_key", "timestamp"):
        page = pages.setdefault((c.site_id, c.page_key), len(pages))
        found.append((ids.index(c.site_id), page, to_days(c.timestamp), c.page_index, c.link_floor))
    return found


def as_rows(table: ObservationTable) -> list[Any]:
    return list(
        zip(
            table.site.tolist(),
            table.page.tolist(),
            table.time.tolist(),
            table.page_index.tolist(),
            table.link_floor.tolist(),
            strict=True,
        )
    )


def normalise(rows: list[Any]) -> list[Any]:
    """Sort rows and replace page ids by (site, first time of the page): comparable across
    numberings."""
    first: dict[int, float] = {}
    for _, page, time, _, _ in rows:
        first[page] = min(first.get(page, math.inf), time)
    return sorted((site, (site, first[page]), time, i, f) for site, page, time, i, f in rows)


def test_loading_tables_equals_building_them_by_hand(small_collection: list[Site]) -> None:
    tables = evaluation_tables_load(levels=["homepage", "website"])
    zed, amy, bob = small_collection
    assert tables.site_ids.tolist() == [amy.pk, bob.pk, zed.pk]  # canonical-key (URL) order
    for level in ("homepage", "website"):
        table = tables[level]
        assert table.site_count == 3
        assert normalise(as_rows(table)) == normalise(by_hand(level))  # times equal exactly
    assert tables["homepage"].size == 6 + 4 + 1  # bob's unreadable observation is left out
    assert tables["website"].size == 11 + 4 + 3


def test_a_window_loads_only_its_observations_with_their_full_history_indices(
    small_collection: list[Site],
) -> None:
    start, end = T0 + timedelta(days=8), T0 + timedelta(days=22)
    tables = evaluation_tables_load(levels=["website"], start=start, end=end)
    assert normalise(as_rows(tables["website"])) == normalise(by_hand("website", start, end))
    assert min(tables["website"].page_index.tolist()) > 0


def test_timestamps_become_exactly_the_days_of_to_days(small_collection: list[Site]) -> None:
    millis = (
        Capture.objects.order_by("timestamp")
        .annotate(ms=EpochMilliseconds("timestamp"))
        .values_list("timestamp", "ms")
    )
    for moment, ms in millis:
        assert ms / 1e3 / 86400.0 == to_days(moment)


def test_no_observations_give_empty_tables(db: None) -> None:
    make_site()
    tables = evaluation_tables_load(levels=["homepage"])
    assert tables["homepage"].size == 0 and tables["homepage"].site_count == 1


RESULT_PARTS = {"curves", "table", "pak", "budget", "levels", "parameters", "period", "intervals"}
# The replay's policies, in the order its table lists them.
REPLAY_POLICIES = [
    "hacs",
    "mle_since_copy",
    "paper",
    "round_robin",
    "random",
    "nutch_adaptive",
    "lambdacrawl",
]


def test_a_run_stores_results_status_progress_and_duration(small_collection: list[Site]) -> None:
    run = evaluation_run_create(
        parameters={
            "start": "2016-01-11",
            "end": "2016-02-15",
            "levels": ["homepage", "website"],
            "w_weeks": [1, 2, 3],
        }
    )
    assert run.status == EvaluationRun.Status.QUEUED
    told: list[Progress] = []
    results = evaluation_run(run=run, report=told.append)
    seen = [p.fraction for p in told]
    run.refresh_from_db()
    assert run.status == EvaluationRun.Status.DONE and run.progress == 1.0
    assert run.duration_seconds is not None and run.finished_at is not None
    assert seen == sorted(seen) and seen[-1] == 1.0
    # The replay, the run's last part, moves the bar on after the engine's share.
    assert len({f for f in seen if PROGRESS_EVALUATE < f < 1.0}) > 10
    assert run.results == json.loads(json.dumps(results))
    assert RESULT_PARTS <= set(results)
    assert results["parameters"]["method"] == "interpolated"
    assert results["parameters"]["reference_points"] == 6
    assert results["period"]["start"] == "2016-01-11"
    assert results["levels"]["website"] == {"sites": 3, "observations": 18}
    # The daily list replayed over the period's last four weeks, from the archive's updates.
    replay = results["replay"]
    assert (replay["start"], replay["days"], replay["level"]) == ("2016-01-18", 28, "homepage")
    policies = [row["policy"] for row in replay["budgets"][0]["rows"]]
    assert policies == REPLAY_POLICIES
    assert all(
        row["crawls"] == 28 * block["budget"]
        for block in replay["budgets"]
        for row in block["rows"]
    )


def test_bad_parameters_are_refused_with_their_name(db: None) -> None:
    with pytest.raises(ValueError, match="end"):
        evaluation_run_create(parameters={"start": "2018-01-01", "end": "2017-01-01"})
    with pytest.raises(ValueError, match="w_weeks"):
        evaluation_run_create(
            parameters={"start": "2017-01-01", "end": "2018-01-01", "w_weeks": [0, 3]}
        )
    with pytest.raises(ValueError, match="levels"):
        evaluation_run_create(
            parameters={"start": "2017-01-01", "end": "2018-01-01", "levels": ["intranet"]}
        )
    assert not EvaluationRun.objects.exists()


def test_a_failing_run_is_marked_failed_with_the_reason(db: None) -> None:
    run = EvaluationRun.objects.create(parameters={"start": "2018-01-01"})
    with pytest.raises(ValueError):
        evaluation_run(run=run)
    run.refresh_from_db()
    assert run.status == EvaluationRun.Status.FAILED and "end" in run.error


def test_w_weeks_are_read_as_ranges_and_lists() -> None:
    assert parse_w_weeks("1-12") == list(range(1, 13))
    assert parse_w_weeks("4") == [4]
    assert parse_w_weeks("1,2, 4-6") == [1, 2, 4, 5, 6]
    for bad in ("0-3", "3-1", "x", "1-99", ""):
        with pytest.raises(ValueError):
            parse_w_weeks(bad)


# --------------------------------------------------------------------------------------------
# The demo archive
# --------------------------------------------------------------------------------------------

# The demo archive imported into the database, at a size that takes seconds: the loaded tables
# must equal the tables read from its truth alone (testbed/demo_tables.py), and its run
# must give exactly the results the evaluation core gives on them. That is what lets the method's
# claims on the larger demo (tests/hacs_demo/test_evaluation_on_the_demo.py) be checked once, on
# the truth's tables, without importing 1,200 sites on each database.
DEMO_SITES = 120
PERIOD = {"start": "2015-06-01", "end": "2018-06-01", "levels": ["homepage"]}


@pytest.fixture(scope="module")
def demo_results(
    tmp_path_factory: pytest.TempPathFactory, django_db_setup: None, django_db_blocker: Any
) -> dict[str, Any]:
    """Import the demo archive, evaluate its homepage level, load its tables, and remove the
    data again (so tests that flush the database cannot interfere)."""
    demo = build_demo_archive(tmp_path_factory.mktemp("eval-demo"), sites=DEMO_SITES, seed=0)
    quiet = open(os.devnull, "w")
    with django_db_blocker.unblock():
        try:
            call_command("import_seeds", str(demo.seeds_path), stdout=quiet, stderr=quiet)
            call_command("import_warc", str(demo.warc_path), stdout=quiet)
            run = evaluation_run_create(parameters=PERIOD)
            results = evaluation_run(run=run)
            start, end = datetime(2015, 6, 1, tzinfo=UTC), datetime(2018, 6, 1, tzinfo=UTC)
            tables = evaluation_tables_load(
                levels=["homepage"], start=start - timedelta(weeks=12), end=end + timedelta(days=7)
            )
            seeds = dict(Site.objects.values_list("pk", "seed_url"))
            site_urls = [seeds[int(pk)] for pk in tables.site_ids]
        finally:
            # The import's fitted priors too: a test that estimates one site alone reads them.
            for model in (
                EvaluationRun,
                Estimate,
                RatePrior,
                Capture,
                LinkSnapshot,
                Site,
                Tag,
                JobRecord,
            ):
                model.objects.all().delete()
            quiet.close()
    table = tables["homepage"]
    truth = json.loads(demo.truth_path.read_text(encoding="utf-8"))
    return {
        "results": results,
        "table": table,
        "site_urls": site_urls,
        "truth": truth,
        "start": to_days(start),
        "end": to_days(end),
    }


def test_the_demo_tables_hold_exactly_the_truths_homepage_observations(
    demo_results: dict[str, Any],
) -> None:
    """The glue's loading, checked against truth.json: same observations, same update flags."""
    table = demo_results["table"]
    index = {url: i for i, url in enumerate(demo_results["site_urls"])}
    low, high = demo_results["start"] - 84, demo_results["end"] + 7
    expected = []
    for site in demo_results["truth"]["sites"]:
        for capture in site["captures"]:
            if not capture["observation"] or capture["depth"] != 0:
                continue
            moment = datetime.strptime(capture["timestamp"], "%Y%m%d%H%M%S").replace(tzinfo=UTC)
            if low <= to_days(moment) <= high:
                expected.append((index[site["seed_url"]], to_days(moment), capture["update"]))
    updated = (table.page_index > 0) & (table.link_floor == -1)
    loaded = zip(table.site.tolist(), table.time.tolist(), updated.tolist(), strict=True)
    assert sorted(loaded) == sorted(expected)
    assert len(expected) > 1_000


def windowed_truth_table(data: dict[str, Any]) -> ObservationTable:
    """The truth's homepage table, sites numbered as the database numbered them, cut to the
    window the run loads (12 weeks before the start to e after the end)."""
    full = truth_tables(
        data["truth"], n_sites=len(data["site_urls"]), site_order=data["site_urls"]
    )["homepage"]
    return run_window(full, start=data["start"], end=data["end"])


def test_the_loaded_tables_are_the_tables_read_from_the_truth(demo_results: dict[str, Any]) -> None:
    """Every column the evaluation reads, observation for observation (pages are numbered
    apart, so a page is named by its site and its observations)."""
    loaded, truth = demo_results["table"], windowed_truth_table(demo_results)

    def rows(table: ObservationTable) -> list[tuple[Any, ...]]:
        columns = (table.site, table.time, table.page_index, table.link_floor, table.new_links)
        return sorted(zip(*(c.tolist() for c in columns), strict=True))

    assert loaded.n_sites == truth.n_sites == DEMO_SITES
    assert rows(loaded) == rows(truth)
    assert len(rows(truth)) > 1_000


def test_an_imported_demo_evaluates_exactly_as_the_core_does_on_its_truth_tables(
    demo_results: dict[str, Any],
) -> None:
    """The run's Table I and P@K are the evaluation core's on the truth's tables with the run's
    parameters (the service adds nothing and loses nothing on the way)."""
    core = evaluate_as_a_run(
        windowed_truth_table(demo_results), start=demo_results["start"], end=demo_results["end"]
    )
    run = demo_results["results"]
    assert run["table"] == core["table"] and run["pak"] == core["pak"]
    assert run["curves"] == core["curves"]
    assert {r["w_weeks"] for r in run["table"]} == set(range(1, 13))


# --------------------------------------------------------------------------------------------
# The command
# --------------------------------------------------------------------------------------------


def test_the_command_writes_json_with_every_curve_point_and_table_i(
    small_collection: list[Site], tmp_path: Path
) -> None:
    out = tmp_path / "eval.json"
    summary = io.StringIO()
    call_command(
        "evaluate",
        "--start",
        "2016-01-11",
        "--end",
        "2016-02-15",
        "--level",
        "homepage",
        "--w-weeks",
        "1-3",
        "--output",
        str(out),
        stderr=summary,
    )
    doc = json.loads(out.read_text())
    assert {"curves", "table", "pak", "budget", "intervals", "parameters", "period"} <= set(doc)
    assert set(doc["levels"]) == {"homepage"}
    # Every curve point: 2 averages × 3 w × 11 θ × 4 models (the posterior beside HACS).
    assert len(doc["curves"]) == 2 * 3 * 11 * 4
    assert {r["model"] for r in doc["table"]} == {"hacs", "posterior", "random", "brute_force"}
    assert "posterior" in {r["model"] for r in doc["pak"]}
    # The summary on stderr: F1 at θ̂ and P@K per w, the posterior first.
    text = summary.getvalue()
    assert "Homepage level, Table I (micro): F1 at θ̂ (θ̂)" in text
    header = next(line for line in text.splitlines() if line.startswith("  w  "))
    assert header.split()[1:4] == ["HACS", "posterior", "(default)"]
    row = {(r["w_weeks"], r["model"]): r for r in doc["table"] if r["average"] == "micro"}[
        (2, "posterior")
    ]
    line = next(line for line in text.splitlines() if line.startswith("  2  "))
    assert f"{row['f1']:.3f} ({row['theta_hat']:.1f})" in line
    assert {r["w_weeks"] for r in doc["table"]} == {1, 2, 3}
    assert {"theta_hat", "precision", "recall", "f1"} <= set(doc["table"][0])
    assert EvaluationRun.objects.get().status == EvaluationRun.Status.DONE


def test_the_command_prints_json_on_stdout_by_default(
    small_collection: list[Site], capsys: Any
) -> None:
    call_command("evaluate", "--start", "2016-01-11", "--end", "2016-01-25", "--w-weeks", "2")
    doc = json.loads(capsys.readouterr().out)
    assert set(doc["levels"]) == {"homepage", "website"}
    assert doc["parameters"]["w_weeks"] == [2]


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--start", "2016-02-01", "--end", "2016-01-01"], "before"),
        (["--start", "2016-01-01", "--end", "2016-02-01", "--w-weeks", "0-2"], "weeks"),
        (["--start", "2016-13-01", "--end", "2016-02-01"], "not a date"),
    ],
)
def test_the_command_names_a_bad_option(db: None, arguments: list[str], message: str) -> None:
    with pytest.raises(CommandError, match=message):
        call_command("evaluate", *arguments)


def test_the_command_can_hand_the_run_to_a_worker(
    small_collection: list[Site], redis_url: str, django_capture_on_commit_callbacks: Any
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        call_command(
            "evaluate",
            "--start",
            "2016-01-11",
            "--end",
            "2016-02-15",
            "--enqueue",
            stdout=open(os.devnull, "w"),
        )
    run = EvaluationRun.objects.get()
    assert run.status == EvaluationRun.Status.QUEUED
    assert JobRecord.objects.get().kind == JobRecord.Kind.EVALUATION
    assert redis.Redis.from_url(redis_url).llen("rq:queue:evaluation") == 1


# --------------------------------------------------------------------------------------------
# The job, through a real Redis and a real worker process
# --------------------------------------------------------------------------------------------


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_the_job_runs_in_a_worker_and_reports_progress(
    small_collection: list[Site], redis_url: str, run_worker: Any
) -> None:
    run = evaluation_run_create(
        parameters={"start": "2016-01-11", "end": "2016-02-15", "w_weeks": [1, 2]}
    )
    record = enqueue_evaluation(run)
    assert redis.Redis.from_url(redis_url).llen("rq:queue:evaluation") == 1

    run_worker("evaluation")

    run.refresh_from_db()
    record.refresh_from_db()
    assert run.status == EvaluationRun.Status.DONE, run.error
    assert run.progress == 1.0 and run.duration_seconds is not None
    assert {"curves", "table", "pak"} <= set(run.results)
    assert record.status == JobRecord.Status.FINISHED
    assert record.done == record.total == 100
    assert record.label.startswith(f"run {run.pk}:")


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_a_job_whose_worker_died_marks_its_run_failed(redis_url: str) -> None:
    from scheduling.evaluation_service import evaluation_run_refresh

    run = evaluation_run_create(parameters={"start": "2016-01-11", "end": "2016-02-15"})
    record = enqueue_evaluation(run)
    # The worker took the job and died: its job says running, RQ no longer knows the job.
    JobRecord.objects.filter(pk=record.pk).update(status=JobRecord.Status.RUNNING)
    redis.Redis.from_url(redis_url).flushdb()
    run.refresh_from_db()
    evaluation_run_refresh(run)
    assert run.status == EvaluationRun.Status.FAILED and "worker" in run.error


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_a_job_found_interrupted_marks_its_run_failed(redis_url: str) -> None:
    from scheduling.evaluation_service import evaluation_run_refresh

    run = evaluation_run_create(parameters={"start": "2016-01-11", "end": "2016-02-15"})
    record = enqueue_evaluation(run)
    JobRecord.objects.filter(pk=record.pk).update(
        status=JobRecord.Status.INTERRUPTED, error="Interrupted: its worker stopped."
    )
    redis.Redis.from_url(redis_url).flushdb()
    run.refresh_from_db()
    evaluation_run_refresh(run)
    assert run.status == EvaluationRun.Status.FAILED
    assert run.error == "Interrupted: its worker stopped."


def test_evaluation_charts_imports_without_django() -> None:
    code = (
        "import sys, dashboard.charts.evaluation\n"
        "assert not [m for m in sys.modules if m.split('.')[0] == 'django']\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=PROJECT, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
