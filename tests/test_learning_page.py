"""Learning a scheduler as a new librarian meets it: the Evaluation page's default period, the
fit said in words, GP4C's formula simplified, learning runs on the Jobs page, and failures as
sentences (issue #28)."""

from __future__ import annotations

import dataclasses
import io
import re
from datetime import UTC, date, datetime, timedelta
from typing import Any

import numpy as np
import pytest
from django.core.management import CommandError, call_command

from hacs.evaluation.terminals import TERMINALS
from hacs.learning.formula import TERMINAL_LABELS
from jobs.models import JobRecord
from scheduling import learning
from scheduling.jobs import enqueue_learning, run_learning
from scheduling.learning import (
    learned_scorer_create,
    learned_scorer_run,
    learned_scorer_summary,
    learning_period_default,
)
from scheduling.models import LearnedScorer
from tests.factories import add_observations, make_site
from tests.support.runs import stored_run

pytestmark = pytest.mark.django_db

ORIGIN = datetime(2016, 3, 1, tzinfo=UTC)
TODAY = date(2026, 11, 26)  # long after the collection's history, as for the demo archive


@pytest.fixture()
def collection() -> tuple[date, date]:
    """Thirty sites captured every 2–20 days for a year and a half, long before today, each
    changing as a Poisson process (a capture after a change adds a link): like the demo
    archive. Returns the first and the last day with an observation."""
    rng = np.random.default_rng(11)
    times = []
    for _ in range(30):
        rate = 1 / np.exp(rng.uniform(np.log(5), np.log(120)))
        moments = np.cumsum(rng.exponential(rng.uniform(2, 20), 200))
        moments = moments[moments < 540]
        changed = [False] + [
            bool(rng.random() < -np.expm1(-rate * (b - a)))
            for a, b in zip(moments[:-1], moments[1:], strict=True)
        ]
        at = [ORIGIN + timedelta(days=float(d)) for d in moments]
        add_observations(make_site(), at, updates=changed)
        times += at
    return min(times).date(), max(times).date()


def form_period(page: str) -> tuple[str, str]:
    form = page[page.index('class="eval-form learn-form"') :]
    start = re.search(r'name="start" value="([0-9-]+)"', form)
    end = re.search(r'name="end" value="([0-9-]+)"', form)
    assert start and end
    return start[1], end[1]


# --- The default period -------------------------------------------------------------------------


def test_the_default_period_learns_on_the_earlier_part_of_the_history_and_tests_on_the_rest(
    collection: tuple[date, date], logged_in_client: Any
) -> None:
    first, last = collection
    page = logged_in_client.get("/evaluation/").content.decode()
    start, end = form_period(page)
    split = first + timedelta(days=round((last - first).days * 2 / 3))
    assert (start, end) == (first.isoformat(), split.isoformat())
    test_from, test_to = split + timedelta(days=7), last - timedelta(days=7)
    note = (
        f"The first two thirds of the collection&#x27;s homepage history, {first.day} "
        f"{first:%b %Y} to {split.day} {split:%b %Y}; evaluate {test_from.day} "
        f"{test_from:%b %Y} to {test_to.day} {test_to:%b %Y} to test what it learns."
    )
    assert note in page
    # The Evaluation form offers that test period: the two defaults do not overlap.
    evaluation_form = page[
        page.index('class="eval-form"') : page.index('class="eval-form learn-form"')
    ]
    offered = re.findall(r'name="(?:start|end)" value="([0-9-]+)"', evaluation_form)
    assert offered == [test_from.isoformat(), test_to.isoformat()]


def test_a_first_click_with_the_default_period_learns(
    collection: tuple[date, date],
    logged_in_client: Any,
    redis_url: str,
    django_capture_on_commit_callbacks: Any,
) -> None:
    start, end = form_period(logged_in_client.get("/evaluation/").content.decode())
    with django_capture_on_commit_callbacks(execute=True):
        response = logged_in_client.post(
            "/evaluation/learn/", {"kind": "lws", "level": "homepage", "start": start, "end": end}
        )
    assert response.status_code == 302
    scorer = LearnedScorer.objects.get()
    assert scorer.job is not None
    run_learning(scorer.job.pk, scorer.pk)  # what the worker does
    scorer.refresh_from_db()
    assert scorer.status == LearnedScorer.Status.DONE, scorer.error
    assert scorer.model["samples"] > 0
    # GP4C on the same period (a short search: the page's defaults take minutes).
    gp4c = learned_scorer_create(
        parameters={"kind": "gp4c", "start": start, "end": end, "generations": 2, "population": 10}
    )
    learned_scorer_run(scorer=gp4c)
    assert gp4c.status == LearnedScorer.Status.DONE
    assert gp4c.validation_fitness is not None and gp4c.validation_fitness > 0


def test_with_no_observation_the_form_says_nothing_can_be_learned_yet(
    logged_in_client: Any,
) -> None:
    period = learning_period_default(level="homepage", today=TODAY)
    assert (period.start, period.end) == (TODAY - timedelta(days=365), TODAY)
    assert period.test_start is None
    page = logged_in_client.get("/evaluation/").content.decode()
    assert "No observations are stored yet, so nothing can be learned" in page


def test_a_history_too_short_to_split_is_learned_whole() -> None:
    # 48 days: two thirds would be shorter than the 42 days GP4C needs.
    moments = [ORIGIN + timedelta(days=3.0 * i) for i in range(17)]
    add_observations(make_site(), moments, updates=[i % 3 == 1 for i in range(17)])
    period = learning_period_default(level="homepage", today=TODAY)
    assert (period.start, period.end) == (moments[0].date(), moments[-1].date())
    assert period.test_start is None and "too short to keep a later part" in period.note


def test_the_default_period_is_one_query(
    collection: tuple[date, date], django_assert_num_queries: Any
) -> None:
    with django_assert_num_queries(1):
        learning_period_default(level="homepage", today=TODAY)


# --- How well it learned, in words --------------------------------------------------------------

LWS_MODEL = {
    "features": ["log_since_update"],
    "means": [1.0],
    "scales": [1.0],
    "coefficients": [0.5],
    "intercept": 0.0,
    "regressor": "ridge",
    "window_days": 84.0,
    "alpha": 1.0,
    "samples": 40,
    "period": None,
    "held_out_mae": None,
    "held_out_r2": None,
}


def done(**kw: Any) -> LearnedScorer:
    kw.setdefault("kind", "lws")
    kw.setdefault("start", date(2017, 3, 1))
    kw.setdefault("end", date(2017, 10, 1))
    kw.setdefault("parameters", {"start": "2017-03-01", "end": "2017-10-01"})
    kw.setdefault("model", LWS_MODEL)
    return stored_run(LearnedScorer, status=LearnedScorer.Status.DONE, **kw)


def test_an_lws_model_worse_than_the_mean_says_so_on_the_page(logged_in_client: Any) -> None:
    done(validation_fitness=-0.176)
    done(validation_fitness=0.21)
    page = logged_in_client.get("/evaluation/").content.decode()
    assert page.count("Worse than guessing") == 1
    assert "Worse than guessing: R² −0.176 on held-out sites, so predicting every site" in page
    assert (
        "R² 0.210 on held-out sites: it explains 21.0 % of how the wait for the next update "
        "varies between sites (the mean wait explains none), clearly better than guessing the "
        "mean wait." in page
    )
    # Dates as the rest of the dashboard writes them.
    assert "1 Mar 2017 – 1 Oct 2017" in page and "March 1, 2017" not in page


def gp4c_scorer(expression: str, validation: float, baselines: dict[str, Any]) -> LearnedScorer:
    return done(
        kind="gp4c",
        validation_fitness=validation,
        training_fitness=0.5,
        parameters={"start": "2017-03-01", "end": "2017-10-01", "fitness": "ndcg"},
        model={"expression": expression, "formula": expression, "baselines": baselines},
    )


@pytest.mark.parametrize(
    ("expression", "validation", "baselines", "worse", "said"),
    [
        (
            "add(p, t)",
            0.21,
            {"random": 0.3, "terminals": {"p": 0.2}},
            True,
            "Worse than guessing: NDCG at a 5 % crawl budget on the validation period 0.210, "
            "below crawling at random (0.300 expected)",
        ),
        (
            "add(p, t)",
            0.41,
            {"random": 0.3, "terminals": {"p": 0.45, "t": 0.1}},
            True,
            "Worse than one of its terminals alone: NDCG at a 5 % crawl budget on the "
            "validation period 0.410, against 0.450 for p.",
        ),
        (
            "add(p, t)",
            0.41,
            {"random": 0.3, "terminals": {"p": 0.4, "lam": 0.1}},
            False,
            "against the best terminal alone, p, 0.400; crawling at random 0.300.",
        ),
        (
            "lam",
            0.41,
            {"random": 0.3, "terminals": {"lam": 0.41}},
            False,
            "No evolved formula did better than one terminal alone: it ranks by λ",
        ),
        (
            "add(p, t)",
            0.0,
            {"random": None, "terminals": {"p": 0.0}},
            True,
            "the validation period holds no update",
        ),
    ],
)
def test_a_gp4c_fit_is_judged_against_random_and_its_terminals(
    expression: str, validation: float, baselines: dict[str, Any], worse: bool, said: str
) -> None:
    fit = learned_scorer_summary(gp4c_scorer(expression, validation, baselines)).fit
    assert fit.worse is worse and said in fit.sentence


def test_the_page_shows_a_gp4c_function_simplified_with_its_legend(logged_in_client: Any) -> None:
    stored = "add(mul(sub(t, t), gad), mul(lam, div(p, 1)))"
    gp4c_scorer(stored, 0.4, {"random": 0.3, "terminals": {"p": 0.35}})
    page = logged_in_client.get("/evaluation/").content.decode()
    assert "<code>score = λ × p</code>" in page
    assert f"λ = {TERMINAL_LABELS['lam']}; p = {TERMINAL_LABELS['p']}." in page.replace(
        "&#x27;", "'"
    )
    assert "gad" not in page[page.index('id="learned-heading"') : page.index("</table>")]


def test_learn_scorer_says_the_fit_and_the_simplified_formula(
    collection: tuple[date, date], monkeypatch: pytest.MonkeyPatch
) -> None:
    out = io.StringIO()
    call_command(
        "learn_scorer",
        "--start",
        "2016-04-01",
        "--end",
        "2017-01-01",
        "--generations",
        "2",
        "--population",
        "10",
        stdout=out,
    )
    scorer = LearnedScorer.objects.get()
    shown = learned_scorer_summary(scorer)
    assert shown.formula is not None
    assert f"score = {shown.formula.text}" in out.getvalue()
    assert shown.fit.sentence in out.getvalue()
    baselines = scorer.model["baselines"]
    assert set(baselines["terminals"]) == set(TERMINALS)  # every terminal alone is a finalist
    assert 0 < baselines["random"] < 1
    # An LWS fit worse than the mean wait says so on the command line too.
    fitted = learning.fit_lws

    def worse_fit(*args: Any, **kw: Any) -> Any:
        return dataclasses.replace(fitted(*args, **kw), held_out_r2=-0.176)

    monkeypatch.setattr(learning, "fit_lws", worse_fit)
    out = io.StringIO()
    call_command(
        "learn_scorer", "--kind", "lws", "--start", "2016-04-01", "--end", "2017-01-01", stdout=out
    )
    assert "Worse than guessing: R² −0.176 on held-out sites" in out.getvalue()


# --- Learning runs on the Jobs page, and failures as sentences ------------------------------------


def test_a_queued_learning_run_is_named_as_learning_on_the_jobs_page(
    logged_in_client: Any, redis_url: str
) -> None:
    scorer = learned_scorer_create(
        parameters={"kind": "gp4c", "start": "2017-03-01", "end": "2017-10-01"}
    )
    record = enqueue_learning(scorer)
    assert record.kind == JobRecord.Kind.LEARNING and record.queue == "evaluation"
    page = logged_in_client.get("/jobs/").content.decode()
    row = page[page.index(f'id="job-{record.pk}"') :]
    assert "<td>Learning a scheduler<br>" in row[:100]
    assert "GP4C at the homepage level, learned on 1 Mar 2017 to 1 Oct 2017 (learning run " in row


def test_a_terminal_run_of_learn_scorer_is_kept_as_a_job(collection: tuple[date, date]) -> None:
    call_command(
        "learn_scorer",
        "--kind",
        "lws",
        "--start",
        "2016-04-01",
        "--end",
        "2017-01-01",
        stdout=io.StringIO(),
    )
    record = JobRecord.objects.get()
    scorer = LearnedScorer.objects.get()
    assert (record.kind, record.queue, record.status) == ("learning", "terminal", "finished")
    assert record.label.endswith(f"(learning run {scorer.pk}) from the terminal")
    assert record.done == record.total == 100 and scorer.job == record
    # Its stage, as the Jobs page shows it beside the counts: the last one the learning told.
    assert record.counts["stage"] == "fitted"


def test_lws_learns_over_a_period_of_whole_weeks(collection: tuple[date, date]) -> None:
    """2016-04-01 to 2016-12-30 is 39 weeks: its last reference point is its end."""
    out = io.StringIO()
    period = ["--start", "2016-04-01", "--end", "2016-12-30"]
    call_command("learn_scorer", "--kind", "lws", *period, stdout=out)
    assert LearnedScorer.objects.get().status == LearnedScorer.Status.DONE
    assert "samples" in out.getvalue()


def test_a_failed_run_says_what_happened_and_what_to_do_without_exception_names(
    collection: tuple[date, date], logged_in_client: Any
) -> None:
    first, last = collection
    with pytest.raises(CommandError, match="too few updates") as raised:
        call_command(
            "learn_scorer",
            "--kind",
            "lws",
            "--start",
            "2014-01-01",
            "--end",
            "2014-06-01",
            stdout=io.StringIO(),
        )
    history = f"{first.day} {first:%b %Y} to {last.day} {last:%b %Y}"
    assert f"homepage observations run from {history}; learn on the earlier part" in str(
        raised.value
    )
    record = JobRecord.objects.get()
    assert record.status == JobRecord.Status.FAILED and record.kind == "learning"
    sentence = (
        "The period 1 Jan 2014 to 1 Jun 2014 holds too few updates to learn from (0 samples); "
        f"the collection&#x27;s homepage observations run from {history}"
    )
    for url in ("/jobs/", "/evaluation/"):
        page = logged_in_client.get(url).content.decode()
        assert f'<span class="error">{sentence}' in page or f">{sentence}" in page, url
        shown = re.sub(r"<details.*?</details>", "", page, flags=re.S)
        assert "ValueError" not in shown, url


def test_a_learning_run_stopped_in_the_terminal_is_not_left_running(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from scheduling.jobs import learning_run_here

    def stopped(*args: Any) -> Any:
        raise KeyboardInterrupt

    monkeypatch.setattr(learning, "_learn", stopped)
    scorer = learned_scorer_create(
        parameters={"kind": "lws", "start": "2017-03-01", "end": "2017-10-01"}
    )
    with pytest.raises(KeyboardInterrupt):
        learning_run_here(scorer)
    scorer.refresh_from_db()
    assert scorer.job is not None and scorer.job.status == JobRecord.Status.INTERRUPTED
    assert scorer.status == LearnedScorer.Status.FAILED
    assert scorer.error.startswith("Interrupted: its worker, Redis or terminal stopped")
