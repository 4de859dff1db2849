"""The Evaluation page: who may start runs, progress, the results view and the downloads."""

from __future__ import annotations

import csv
import io
import json
import re
from typing import Any

import numpy as np
import pytest
import redis

from dashboard.charts.evaluation import TABLE_COLUMNS
from hacs.evaluation import ObservationTable, evaluate, interval_distribution
from jobs.models import JobRecord
from scheduling.models import EvaluationRun
from tests.conftest import make_user
from tests.support.runs import stored_run

pytestmark = pytest.mark.django_db

START, END = 16800.0, 17200.0  # days since 1970: 2015-12-31 to 2017-02-03
PERIOD = {
    "start": "2015-12-31",
    "end": "2017-02-03",
    "levels": ["homepage", "website"],
    "w_weeks": [1, 2, 3, 4],
    "method": "interpolated",
    "e_days": 7.0,
    "step_days": 7.0,
}


def synthetic_table(seed: int = 1, sites: int = 80) -> ObservationTable:
    """Sites observed every few days, each changing as a Poisson process (brand-new links)."""
    rng = np.random.default_rng(seed)
    site, time, index, floor = [], [], [], []
    for s in range(sites):
        looks = START - 120 + np.cumsum(rng.exponential(4.0, 200))
        looks = np.unique(np.round(looks[looks < END + 30], 3))
        changes = np.cumsum(rng.exponential(float(np.exp(rng.normal(np.log(30), 0.8))), 400))
        seen = np.searchsorted(changes, looks, side="right")
        k = np.arange(looks.size)
        changed = np.r_[False, seen[1:] > seen[:-1]]
        site += [s] * looks.size
        time += looks.tolist()
        index += k.tolist()
        floor += np.where(changed | (k == 0), -1, k - 1).tolist()
    return ObservationTable(site=site, page=site, time=time, page_index=index, link_floor=floor)


def real_results() -> dict[str, Any]:
    table = synthetic_table()
    tables = {"homepage": table, "website": synthetic_table(seed=2)}
    results = evaluate(tables, start=START, end=END, w_weeks=[1, 2, 3, 4], method="interpolated")
    results["period"] = PERIOD
    results["intervals"] = {
        level: interval_distribution(t, start=START, end=END) for level, t in tables.items()
    }
    return json.loads(json.dumps(results))


@pytest.fixture(scope="module")
def results() -> dict[str, Any]:
    return real_results()


def done_run(results: dict[str, Any], **kw: Any) -> EvaluationRun:
    kw.setdefault("parameters", PERIOD)
    kw.setdefault("status", EvaluationRun.Status.DONE)
    kw.setdefault("progress", 1.0)
    kw.setdefault("duration_seconds", 1.5)
    return stored_run(EvaluationRun, results=results, **kw)


@pytest.fixture()
def viewer_client(client: Any) -> Any:
    client.force_login(make_user("viewer", role="viewer"))
    return client


FORM = {
    "start": "2015-06-01",
    "end": "2018-06-01",
    "level": "homepage",
    "w_from": "1",
    "w_to": "12",
    "method": "interpolated",
}


# --------------------------------------------------------------------------------------------
# Who may do what
# --------------------------------------------------------------------------------------------


def test_the_page_renders_for_a_viewer_without_the_start_form(viewer_client: Any) -> None:
    response = viewer_client.get("/evaluation/")
    assert response.status_code == 200
    page = response.content.decode()
    assert "<h1>Evaluation</h1>" in page
    assert "No evaluation runs yet." in page
    assert "Only librarians can start evaluations" in page
    assert 'action="/evaluation/start/"' not in page


@pytest.mark.parametrize("path", ["/evaluation/start/", "/evaluation/"])
def test_a_viewer_cannot_start_a_run(viewer_client: Any, path: str) -> None:
    response = viewer_client.post(path, FORM)
    assert response.status_code == 403
    assert not EvaluationRun.objects.exists()
    assert not JobRecord.objects.exists()


def test_a_librarian_sees_the_form_with_a_label_on_every_control(logged_in_client: Any) -> None:
    page = logged_in_client.get("/evaluation/").content.decode()
    assert 'action="/evaluation/start/"' in page
    for name in FORM:
        control = re.search(rf'<(?:input|select)[^>]*name="{name}"[^>]*id="([^"]+)"', page)
        assert control, name
        assert f'<label for="{control.group(1)}">' in page, name


def test_a_librarian_starts_a_run_and_it_is_queued_for_a_worker(
    logged_in_client: Any, redis_url: str, django_capture_on_commit_callbacks: Any
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        response = logged_in_client.post("/evaluation/start/", FORM)
    run = EvaluationRun.objects.get()
    assert response.status_code == 302
    assert response["Location"] == f"/evaluation/?run={run.pk}"
    assert run.status == EvaluationRun.Status.QUEUED
    assert run.parameters == {
        "start": "2015-06-01",
        "end": "2018-06-01",
        "levels": ["homepage"],
        "w_weeks": list(range(1, 13)),
        "method": "interpolated",
        "e_days": 7.0,
        "step_days": 7.0,
    }
    assert run.created_by is not None and run.created_by.username == "librarian"
    record = JobRecord.objects.get()
    assert record.kind == JobRecord.Kind.EVALUATION and record.created_by == run.created_by
    assert redis.Redis.from_url(redis_url).llen("rq:queue:evaluation") == 1
    page = logged_in_client.get(response["Location"]).content.decode()
    assert f"Evaluation run {run.pk} queued" in page
    assert '<progress id="run-progress"' in page
    assert f'data-status-url="/evaluation/{run.pk}/status.json"' in page


def test_both_levels_and_a_w_range_become_the_runs_parameters(
    logged_in_client: Any, redis_url: str
) -> None:
    logged_in_client.post(
        "/evaluation/start/", {**FORM, "level": "both", "w_from": "3", "w_to": "5"}
    )
    run = EvaluationRun.objects.get()
    assert run.parameters["levels"] == ["homepage", "website"]
    assert run.parameters["w_weeks"] == [3, 4, 5]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"end": "2014-01-01"}, "The end must not be before the start."),
        ({"w_from": "6", "w_to": "2"}, "must not be below the smallest"),
        ({"w_to": "53"}, "less than or equal to 52"),
        ({"level": "intranet"}, "Select a valid choice"),
        ({"start": "June"}, "Enter a valid date"),
    ],
)
def test_a_bad_form_is_shown_again_with_the_reason(
    logged_in_client: Any, change: dict[str, str], message: str
) -> None:
    response = logged_in_client.post("/evaluation/start/", {**FORM, **change})
    assert response.status_code == 400
    assert message in response.content.decode()
    assert not EvaluationRun.objects.exists()


# --------------------------------------------------------------------------------------------
# Progress
# --------------------------------------------------------------------------------------------


def test_the_status_endpoint_reports_progress(viewer_client: Any) -> None:
    run = stored_run(
        EvaluationRun, parameters=PERIOD, status=EvaluationRun.Status.RUNNING, progress=0.42
    )
    data = viewer_client.get(f"/evaluation/{run.pk}/status.json").json()
    assert data == {
        "id": run.pk,
        "status": "running",
        "status_label": "Running",
        "progress": 0.42,
        "error": "",
        "duration_seconds": None,
    }
    assert viewer_client.get("/evaluation/999/status.json").status_code == 404


def test_a_failed_run_shows_its_reason(viewer_client: Any) -> None:
    run = stored_run(
        EvaluationRun,
        parameters=PERIOD,
        status=EvaluationRun.Status.FAILED,
        error="ValueError: no sites",
    )
    page = viewer_client.get(f"/evaluation/?run={run.pk}").content.decode()
    assert "This run failed: ValueError: no sites" in page


def test_an_unknown_run_is_not_found(viewer_client: Any) -> None:
    assert viewer_client.get("/evaluation/?run=12345").status_code == 404
    assert viewer_client.get("/evaluation/?run=abc").status_code == 404


# --------------------------------------------------------------------------------------------
# Results
# --------------------------------------------------------------------------------------------


def charts_on(page: str) -> dict[str, Any]:
    """The charts' data the page embeds (json_script)."""
    found = re.search(r'id="evaluation-charts"[^>]*>(.*?)</script>', page, re.S)
    assert found is not None, "the page embeds no chart data"
    return json.loads(found[1])


def table_row(results: dict[str, Any], model: str) -> dict[str, Any]:
    """Table I's row of ``model`` at the homepage level, micro average, w = 1."""
    return next(
        r
        for r in results["table"]
        if r["level"] == "homepage"
        and r["average"] == "micro"
        and r["w_weeks"] == 1
        and r["model"] == model
    )


@pytest.fixture()
def results_page(viewer_client: Any, results: dict[str, Any]) -> tuple[EvaluationRun, str]:
    """A finished run and its results page, as a viewer sees it."""
    run = done_run(results)
    response = viewer_client.get(f"/evaluation/?run={run.pk}")
    assert response.status_code == 200
    return run, response.content.decode()


def test_the_results_page_shows_table_i_as_in_the_paper(
    results_page: tuple[EvaluationRun, str],
) -> None:
    _run, page = results_page
    # One Table I per level, laid out as in the paper, with headers scoped for screen readers.
    assert page.count('<table class="table-one">') == 2
    # The ranking chart says what its positives are: changes the archive saw.
    note = re.search(r'<p class="muted small chart-note">(.*?)</p>', page, re.S)
    assert note and "archive captured it changed in the week after t" in note.group(1)
    assert '<th scope="colgroup" colspan="6" class="group">Micro average</th>' in page
    assert page.count('<th scope="col" class="num theta-hat">θ̂</th>') == 4
    assert page.count('<th scope="col" class="num theta-hat">θ̂ post.</th>') == 4
    assert page.count('<th scope="col" class="num">HACS posterior (default)</th>') == 4
    assert page.count('<th scope="col" class="num">HACS, paper&#x27;s g</th>') == 4
    rows = re.findall(r"<tr>\s*(?:<th scope=\"rowgroup\".*?</th>)?\s*<th scope=\"row\"", page)
    assert len(rows) == 2 * 3 * 4  # levels × metrics × w


def test_the_results_page_highlights_theta_hat_and_the_best_values(
    results_page: tuple[EvaluationRun, str], results: dict[str, Any]
) -> None:
    _run, page = results_page
    # θ̂ of every row is shown highlighted, with the value the engine chose.
    f1 = table_row(results, "hacs")
    assert f1["theta_hat"] is not None
    assert f'<td class="num theta-hat">{f1["theta_hat"]:.1f}</td>' in page
    # The best value of each row (within each average) is highlighted: the highest F1 at θ̂ of
    # the two HACS models and the baselines.
    best = max(
        r["f1"]
        for r in results["table"]
        if r["level"] == "homepage" and r["average"] == "micro" and r["w_weeks"] == 1
    )
    assert f'<td class="num best"><strong>{best:.3f}</strong></td>' in page
    # The posterior's own θ̂ and F1 are in its columns.
    post = table_row(results, "posterior")
    assert re.search(
        rf'<td class="num theta-hat">{post["theta_hat"]:.1f}</td><td class="num( best)?">'
        rf"(<strong>)?{post['f1']:.3f}",
        page,
    )


def test_the_results_page_carries_the_charts_data_and_the_two_downloads(
    results_page: tuple[EvaluationRun, str],
) -> None:
    run, page = results_page
    assert 'id="evaluation-charts" type="application/json"' in page
    assert re.search(r"plotly/plotly\.min\.\w{12}\.js", page) and re.search(
        r"js/evaluation\.\w{12}\.js", page
    )
    assert f'href="/evaluation/{run.pk}/results.json"' in page
    assert f'href="/evaluation/{run.pk}/table.csv"' in page
    charts = charts_on(page)
    assert set(charts["threshold"]) >= {"homepage|micro|1", "website|macro|4"}
    assert set(charts["ranking"]["homepage"]) == {"pak", "ndcg"}
    assert charts["intervals"]["homepage"]


def test_a_run_stored_before_the_posterior_still_renders_without_it(
    viewer_client: Any, results: dict[str, Any]
) -> None:
    old = {
        **results,
        **{
            key: [r for r in results[key] if r["model"] != "posterior"]
            for key in ("curves", "table", "pak", "budget")
        },
    }
    run = done_run(old)
    response = viewer_client.get(f"/evaluation/?run={run.pk}")
    page = response.content.decode()
    assert response.status_code == 200
    assert '<th scope="colgroup" colspan="4" class="group">Micro average</th>' in page
    assert "θ̂ post.</th>" not in page and "HACS posterior (default)</th>" not in page
    rows = re.findall(r"<tr>\s*(?:<th scope=\"rowgroup\".*?</th>)?\s*<th scope=\"row\"", page)
    assert len(rows) == 2 * 3 * 4
    text = viewer_client.get(f"/evaluation/{run.pk}/table.csv").content.decode()
    assert len(list(csv.reader(io.StringIO(text)))) == 1 + 2 * 3 * 4


def test_the_newest_run_is_shown_when_none_is_chosen(
    viewer_client: Any, results: dict[str, Any]
) -> None:
    done_run(results)
    newest = stored_run(EvaluationRun, parameters=PERIOD, status="queued")
    page = viewer_client.get("/evaluation/").content.decode()
    assert f'<a href="?run={newest.pk}" aria-current="true">' in page


def test_the_page_stays_flat_in_queries_with_many_runs(
    viewer_client: Any, results: dict[str, Any], django_assert_max_num_queries: Any
) -> None:
    for _ in range(30):
        done_run(results)
    with django_assert_max_num_queries(8):
        response = viewer_client.get("/evaluation/")
    assert response.status_code == 200
    assert response.content.decode().count('<a href="?run=') == 20


def test_the_json_download_holds_the_results(viewer_client: Any, results: dict[str, Any]) -> None:
    run = done_run(results)
    response = viewer_client.get(f"/evaluation/{run.pk}/results.json")
    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    assert f'filename="hacs-evaluation-{run.pk}.json"' in response["Content-Disposition"]
    doc = json.loads(response.content)
    assert doc["run"] == run.pk
    assert doc["curves"] == results["curves"] and doc["table"] == results["table"]
    assert doc["pak"] == results["pak"] and doc["period"] == PERIOD


def test_the_csv_download_is_table_i(viewer_client: Any, results: dict[str, Any]) -> None:
    run = done_run(results)
    response = viewer_client.get(f"/evaluation/{run.pk}/table.csv")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/csv")
    rows = list(csv.reader(io.StringIO(response.content.decode())))
    assert rows[0] == TABLE_COLUMNS
    assert len(rows) == 1 + 2 * 3 * 4
    by_key = {(r[0], r[1], r[2]): dict(zip(rows[0], r, strict=True)) for r in rows[1:]}
    row = by_key[("homepage", "f1", "2")]
    engine = {
        (r["average"], r["model"]): r
        for r in results["table"]
        if r["level"] == "homepage" and r["w_weeks"] == 2
    }
    assert float(row["micro_hacs"]) == engine[("micro", "hacs")]["f1"]
    assert float(row["macro_brute_force"]) == engine[("macro", "brute_force")]["f1"]
    assert float(row["micro_theta_hat"]) == engine[("micro", "hacs")]["theta_hat"]
    assert float(row["macro_posterior"]) == engine[("macro", "posterior")]["f1"]
    assert float(row["micro_posterior_theta_hat"]) == engine[("micro", "posterior")]["theta_hat"]


def test_csv_cells_that_a_spreadsheet_would_run_are_neutralised(
    viewer_client: Any, results: dict[str, Any]
) -> None:
    text = json.dumps(results).replace('"homepage"', '"=HYPERLINK(\\"x\\")"')
    hostile = json.loads(text.replace('"website"', '"@SUM(A1)"'))
    hostile["table"][0]["f1"] = -0.5  # cannot happen, but a minus sign starts a formula too
    run = done_run(hostile)
    text = viewer_client.get(f"/evaluation/{run.pk}/table.csv").content.decode()
    cells = [cell for row in csv.reader(io.StringIO(text)) for cell in row]
    assert '\'=HYPERLINK("x")' in cells and "'@SUM(A1)" in cells and "'-0.5" in cells
    assert not [c for c in cells if c[:1] in ("=", "+", "-", "@")]


def test_downloads_of_an_unfinished_run_are_not_found(viewer_client: Any) -> None:
    run = stored_run(EvaluationRun, parameters=PERIOD, status="running")
    assert viewer_client.get(f"/evaluation/{run.pk}/results.json").status_code == 404
    assert viewer_client.get(f"/evaluation/{run.pk}/table.csv").status_code == 404


def test_a_run_over_a_period_without_observations_says_so(
    viewer_client: Any, results: dict[str, Any]
) -> None:
    empty = {**results, "levels": {"homepage": {"sites": 40, "observations": 0}}}
    run = done_run(empty)
    page = viewer_client.get(f"/evaluation/?run={run.pk}").content.decode()
    assert "No observations fall in this period" in page
    assert (
        "No observations fall"
        not in viewer_client.get(f"/evaluation/?run={done_run(results).pk}").content.decode()
    )


def test_the_replay_section_shows_each_policy_and_its_chart(
    viewer_client: Any, results: dict[str, Any]
) -> None:
    row = {
        "policy": "hacs",
        "label": "HACS (posterior, since the newest copy)",
        "crawls": 56,
        "found": 20,
        "changes": 30,
        "caught": 18,
        "mean_delay_days": 3.25,
        "most_days_listed": 4,
        "overlisted_sites": 0,
        "utilisation": 20 / 56,
        "coverage": 0.6,
    }
    other = {
        **row,
        "policy": "round_robin",
        "label": "Round-robin (oldest copy first)",
        "found": 14,
        "utilisation": 0.25,
        "mean_delay_days": None,
    }
    replay = {
        "level": "homepage",
        "start": "2016-01-18",
        "days": 28,
        "e_days": 0.0,
        "sites": 100,
        "changes_from": "the archive's updates",
        "budgets": [{"share": 0.02, "budget": 2, "rows": [row, other]}],
    }
    run = done_run({**results, "replay": replay})
    page = viewer_client.get(f"/evaluation/?run={run.pk}").content.decode()
    assert "Day after day: the daily list replayed" in page
    assert "28 days from 18 Jan 2016, homepage level" in page
    assert '<tr class="best"><th scope="row">HACS (posterior, since the newest copy)</th>' in page
    assert '<td class="num">20 / 56</td><td class="num">0.357</td>' in page
    charts = charts_on(page)
    [bars] = charts["replay"]["data"]
    assert bars["x"] == [row["label"], other["label"]] and bars["y"] == [20 / 56, 0.25]
    # A run stored before the replay existed shows no section.
    older = done_run(results)
    assert "Day after day" not in viewer_client.get(f"/evaluation/?run={older.pk}").content.decode()


# --------------------------------------------------------------------------------------------
# Learned schedulers on the Evaluation page
# --------------------------------------------------------------------------------------------

LEARN_FORM = {"kind": "lws", "level": "homepage", "start": "2016-01-01", "end": "2016-12-01"}


def test_a_librarian_queues_the_learning_of_a_scheduler(
    logged_in_client: Any, redis_url: str, django_capture_on_commit_callbacks: Any
) -> None:
    from scheduling.models import LearnedScorer

    with django_capture_on_commit_callbacks(execute=True):
        response = logged_in_client.post("/evaluation/learn/", LEARN_FORM)
    assert response.status_code == 302
    scorer = LearnedScorer.objects.get()
    assert (scorer.kind, scorer.level, str(scorer.start), str(scorer.end)) == (
        "lws",
        "homepage",
        "2016-01-01",
        "2016-12-01",
    )
    assert scorer.status == LearnedScorer.Status.QUEUED and scorer.job is not None
    assert scorer.job.kind == JobRecord.Kind.LEARNING  # "Learning a scheduler" on Jobs
    assert redis.Redis.from_url(redis_url).llen("rq:queue:evaluation") == 1
    page = logged_in_client.get("/evaluation/").content.decode()
    assert f"Learning run {scorer.pk} (LWS, the predicted next update) queued" in page
    assert f"{scorer.pk} · LWS · homepage" in page


def test_a_too_short_learning_period_is_refused_with_the_reason(logged_in_client: Any) -> None:
    from scheduling.models import LearnedScorer

    response = logged_in_client.post("/evaluation/learn/", {**LEARN_FORM, "end": "2016-01-20"})
    assert response.status_code == 400
    assert "the learning period is too short" in response.content.decode()
    assert not LearnedScorer.objects.exists() and not JobRecord.objects.exists()


def test_a_viewer_cannot_learn_a_scheduler(viewer_client: Any) -> None:
    from scheduling.models import LearnedScorer

    assert viewer_client.post("/evaluation/learn/", LEARN_FORM).status_code == 403
    page = viewer_client.get("/evaluation/").content.decode()
    assert "Only librarians can learn schedulers." in page
    assert not LearnedScorer.objects.exists()


def learned_gp4c_results(function: Any) -> dict[str, Any]:
    """An evaluation's results with a learned GP4C scheduler scoring by ``function``."""
    tables = {"homepage": synthetic_table(), "website": synthetic_table(seed=2)}
    learned = evaluate(
        tables,
        start=START,
        end=END,
        w_weeks=[1, 2, 3, 4],
        method="interpolated",
        scorers={"homepage": {"gp4c": lambda t, s, c: function.score(c)}},
    )
    learned["period"] = PERIOD
    learned["learned"] = [
        {
            "id": 7,
            "kind": "gp4c",
            "level": "homepage",
            "start": "2015-01-01",
            "end": "2015-12-01",
            "overlaps": False,
            "parameters": {
                "w_weeks": 4,
                "fitness": "ndcg",
                "budget_fraction": 0.05,
                "generations": 2,
                "population": 10,
                "seed": 0,
            },
            "model": {"expression": function.expression, "formula": function.formula},
            "curve": {"best": [0.1, 0.2, 0.25], "mean": [0.05, 0.1, 0.12]},
            "training_fitness": 0.25,
            "validation_fitness": 0.2,
        }
    ]
    return learned


def test_a_runs_learned_schedulers_show_their_model_curve_and_figures(
    viewer_client: Any, results: dict[str, Any]
) -> None:
    from hacs.learning.gp4c import ScoreFunction

    learned = learned_gp4c_results(ScoreFunction("mul(cg, add(X, 1))"))
    run = done_run(json.loads(json.dumps(learned)))
    page = viewer_client.get(f"/evaluation/?run={run.pk}").content.decode()
    assert "GP4C (learned) — Homepage level" in page
    assert "score = <code>cg × (X + 1)</code>" in page
    assert "This run&#x27;s period comes after it: its figures here are test figures." in page
    ndcg = next(
        r["ndcg_at_k"]
        for r in learned["budget"]
        if r["model"] == "gp4c" and r["w_weeks"] == 4 and r["level"] == "homepage"
    )
    assert f"{ndcg:.4f}" in page
    charts = charts_on(page)
    best, mean = charts["learned"]["gp4c-homepage"]["data"]
    assert best["y"] == [0.1, 0.2, 0.25] and mean["y"] == [0.05, 0.1, 0.12]
    assert 'id="chart-learned-gp4c-homepage"' in page
    # The P@K chart draws the learned scheduler as a line of its own.
    names = [trace["name"] for trace in charts["ranking"]["homepage"]["pak"]["data"]]
    assert "GP4C (learned)" in names


def test_every_line_of_the_ranking_charts_is_explained_under_them_with_a_link_on_the_page(
    viewer_client: Any, results: dict[str, Any]
) -> None:
    from html import unescape

    run = done_run(results)
    page = viewer_client.get(f"/evaluation/?run={run.pk}").content.decode()
    charts = charts_on(page)
    drawn = {unescape(t["name"]) for t in charts["ranking"]["homepage"]["pak"]["data"]}
    key = page[page.index('<dl class="model-legend">') : page.index("</dl>")]
    terms = re.findall(
        r'<dt>.*?<a href="#(model-[a-z_0-9]+)">(.*?)</a></dt>\s*<dd>(.+?)</dd>', key, re.S
    )
    assert {unescape(label) for _anchor, label, _note in terms} == drawn
    expected = {
        "NAD": "Nonadaptive",
        "SAD": "Shortsighted adaptive",
        "AAD": "Arithmetically adaptive",
        "GAD": "Geometrically adaptive",
        "Cho–Garcia-Molina": "Cho and Garcia-Molina",
        "Last-Obs": "last update",
        "HACS, paper's g": "HACS paper",
        "HACS posterior (default)": "default",
        "Random": "equally likely",
    }
    notes = {unescape(label): unescape(note) for _anchor, label, note in terms}
    for label, words in expected.items():
        assert words in notes[label], label
    # Each name leads to an entry further down the same page, with the score's formula and
    # its sources; HACS serves no documentation pages, so no link leaves the page.
    for anchor, label, _note in terms:
        entry = re.search(
            rf'<div class="model-detail" id="{anchor}">\s*<dt>(.*?)</dt>(.*?)</div>', page, re.S
        )
        assert entry is not None and unescape(entry[1]) == unescape(label)
        assert "Score: <code>" in entry[2]
    assert "w_i = 2^(i − 1) / (2^n − 1)" in page
    assert "GP4C paper, Section 5.1" in page and "docs/readings.md" in page
    # The swatch beside each name is drawn in its line's colour.
    pak_colours = {
        unescape(t["name"]): t["line"]["color"]
        for t in charts["ranking"]["homepage"]["pak"]["data"]
    }
    swatches = re.findall(
        r'stroke="(#[0-9A-Fa-f]{6})".*?<a href="#model-[a-z_0-9]+">(.*?)</a>', key, re.S
    )
    assert {unescape(label): colour for colour, label in swatches} == pak_colours


@pytest.mark.django_db
def test_a_first_evaluation_defaults_to_the_history_hacs_holds(logged_in_client: Any) -> None:
    """With no run yet, the form's period lies in the collection's own history (a history that
    ended years ago included), so a first click evaluates something: the part of it the Learn
    box keeps for testing."""
    from datetime import UTC, datetime, timedelta

    from tests.factories import add_observations, make_site

    first = datetime(2016, 1, 4, tzinfo=UTC)
    add_observations(
        make_site(),
        [first + timedelta(days=9 * i) for i in range(200)],
        updates=[i % 3 == 0 for i in range(200)],
    )
    last = (first + timedelta(days=9 * 199)).date()
    page = logged_in_client.get("/evaluation/").content.decode()
    start = re.search(r'name="start" value="([0-9-]+)"', page).group(1)  # type: ignore[union-attr]
    end = re.search(r'name="end" value="([0-9-]+)"', page).group(1)  # type: ignore[union-attr]
    assert end == str(last - timedelta(days=7))
    # The later third, which the Learn box keeps for testing: never the days it learns on.
    split = first.date() + timedelta(days=round((last - first.date()).days * 2 / 3))
    assert start == str(split + timedelta(days=7))
    assert first.date().isoformat() <= start
