"""Stored learning runs that were edited or damaged say so in a sentence, on every page and
command that reads them, instead of answering 500: parameters without their period, a model
that is not a JSON object, and a GP4C formula too large to score (capped in size as well as in
depth, ``hacs.learning.gp4c.MAX_LOADED_SIZE``)."""

from __future__ import annotations

import html
from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest
from django.core.management import CommandError

from hacs.clock import reference_instant
from hacs.learning.gp4c import MAX_LOADED_CHARACTERS, MAX_LOADED_SIZE, ScoreFunction
from scheduling.learning import learned_scorer_summary
from scheduling.models import CrawlList, LearnedScorer
from tests.factories import add_observations, make_site
from tests.support.commands import learned_list_command
from tests.support.runs import stored_run

LIST_DAY = date(2018, 6, 1)
PERIOD = {"kind": "gp4c", "level": "homepage", "start": "2017-03-01", "end": "2017-10-01"}
FORM = {
    "day": LIST_DAY.isoformat(),
    "budget": "5",
    "level": "homepage",
    "method": "gp4c",
    "history_days": "400",
    "e_days": "7",
}


def stored_scorer(*, parameters: Any, model: Any) -> LearnedScorer:
    t = reference_instant(LIST_DAY)
    site = make_site()
    add_observations(site, [t - timedelta(days=d) for d in (90, 60, 30)], updates=[False] * 3)
    return stored_run(
        LearnedScorer,
        kind="gp4c",
        level="homepage",
        start=date(2017, 3, 1),
        end=date(2017, 10, 1),
        parameters=parameters,
        status=LearnedScorer.Status.DONE,
        model=model,
        validation_fitness=0.4,
        finished_at=datetime(2018, 1, 1, tzinfo=UTC),
    )


def wide(terms: int) -> str:
    """A shallow formula of ``terms`` terminals: add(X, add(X, …)) folded into a balanced
    tree, so that it stays within the depth cap while being far larger than GP4C learns."""
    nodes = ["X"] * terms
    while len(nodes) > 1:
        paired = [f"add({a}, {b})" for a, b in zip(nodes[::2], nodes[1::2], strict=False)]
        nodes = paired + (nodes[-1:] if len(nodes) % 2 else [])
    return nodes[0]


@pytest.mark.parametrize(
    ("parameters", "model", "reason"),
    [
        (
            {"kind": "gp4c", "level": "homepage"},
            {"expression": "X"},
            "its parameters are not usable (a learning run needs 'start')",
        ),
        (
            {**PERIOD, "start": "last spring"},
            {"expression": "X"},
            "its parameters are not usable (start and end must be dates like 2018-06-01",
        ),
        (
            ["not", "an", "object"],
            {"expression": "X"},
            "its parameters are not usable (they are not a JSON object)",
        ),
        (PERIOD, ["X"], "its parameters are not usable (they are not a JSON object)"),
        (
            PERIOD,
            {"expression": wide(MAX_LOADED_SIZE)},
            f"score function of {2 * MAX_LOADED_SIZE - 1:,} terms; a score function may hold at "
            f"most {MAX_LOADED_SIZE:,}",
        ),
    ],
)
@pytest.mark.django_db
def test_a_damaged_learning_run_is_a_sentence_on_the_list_page_command_and_evaluation(
    logged_in_client: Any, parameters: Any, model: Any, reason: str
) -> None:
    scorer = stored_scorer(parameters=parameters, model=model)
    which = (
        "The GP4C scheduler learned at the homepage level on 1 Mar 2017 to 1 Oct 2017 "
        f"(learning run {scorer.pk}) cannot be read back: "
    )

    response = logged_in_client.post("/crawl-list/build/", FORM)
    assert response.status_code == 400
    assert which + reason in html.unescape(response.content.decode())

    with pytest.raises(CommandError, match="cannot be read back"):
        learned_list_command("gp4c", LIST_DAY)
    assert not CrawlList.objects.exists()

    summary = learned_scorer_summary(scorer)
    assert summary.fit.worse and summary.formula is None
    assert which + reason in summary.fit.sentence
    page = logged_in_client.get("/evaluation/")
    assert page.status_code == 200
    assert which + reason in html.unescape(page.content.decode())


def test_a_stored_formula_is_capped_in_characters_before_it_is_read() -> None:
    huge = "add(X, " + " " * MAX_LOADED_CHARACTERS + "X)"
    with pytest.raises(ValueError, match=f"at most {MAX_LOADED_CHARACTERS:,} characters"):
        ScoreFunction(huge)


def test_the_largest_formula_gp4c_can_learn_still_loads() -> None:
    # A full binary tree ten deep, GP4C's largest: 2^10 terminals, well within the cap.
    function = ScoreFunction(wide(2**10))
    assert function.size == 2**11 - 1
    assert function.depth == 10  # GP4C's MAX_DEPTH, counted in edges
