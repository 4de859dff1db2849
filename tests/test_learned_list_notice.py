"""A learned list that is not ranked by its scheduler says so, on the page and in the command:
when θ (which selects on HACS's probability) removes every site the scheduler scored, and when
the scheduler gives every listed site the same score."""

from __future__ import annotations

import html
import io
from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest
from django.core.management import call_command

from hacs.clock import reference_instant
from scheduling.crawl_lists import CrawlListOptions, crawl_list_store
from scheduling.models import CrawlList, LearnedScorer
from tests.factories import add_observations, make_site
from tests.support.runs import stored_run

LIST_DAY = date(2018, 6, 1)


@pytest.fixture()
def sites(db: None) -> None:
    t = reference_instant(LIST_DAY)
    for n in range(6):
        gaps = [200 - 10 * n, 120 - 10 * n, 60 - 5 * n]
        add_observations(
            make_site(), [t - timedelta(days=d) for d in gaps], updates=[False, n % 2 == 0, False]
        )


def scorer(expression: str) -> LearnedScorer:
    return stored_run(
        LearnedScorer,
        kind="gp4c",
        level="homepage",
        start=date(2017, 3, 1),
        end=date(2017, 10, 1),
        parameters={"kind": "gp4c", "start": "2017-03-01", "end": "2017-10-01", "w_weeks": 52},
        status=LearnedScorer.Status.DONE,
        model={"expression": expression},
        finished_at=datetime(2018, 1, 1, tzinfo=UTC),
    )


def build(**options: Any) -> CrawlList:
    options.setdefault("history_days", 400)
    stored = crawl_list_store(
        day=LIST_DAY,
        options=CrawlListOptions(method="gp4c", **options),
        source=CrawlList.Source.PAGE,
    )
    return stored.crawl_list


@pytest.mark.usefixtures("sites")
def test_a_scheduler_that_scores_every_site_alike_is_said(logged_in_client: Any) -> None:
    scorer("0.5")
    crawl = build(budget=4)
    assert crawl.entries.count() == 4
    assert crawl.notice == (
        "The GP4C scheduler gave every listed site the same score (0.5): it does not tell them "
        "apart, so they are in HACS's probability order."
    )
    page = html.unescape(logged_in_client.get(f"/crawl-list/?list={crawl.pk}").content.decode())
    assert crawl.notice in page

    err = io.StringIO()
    call_command(
        "crawl_list",
        "--method",
        "gp4c",
        "--budget",
        "4",
        "--date",
        LIST_DAY.isoformat(),
        "--history-days",
        "400",
        stdout=io.StringIO(),
        stderr=err,
    )
    assert "gave every listed site the same score (0.5)" in err.getvalue()


@pytest.mark.usefixtures("sites")
def test_a_list_ranked_by_its_scheduler_has_no_notice() -> None:
    scorer("X")
    assert build(budget=4).notice == ""


def test_theta_that_removes_every_site_the_scheduler_told_apart_is_said(db: None) -> None:
    """GP4C ranking by X (changes seen in its window) tells apart only the site that changed
    lately, whose newest copy is recent: its P(change) is low. θ between its p and the others'
    keeps only sites the function scores 0, so the list is the probability's order."""
    t = reference_instant(LIST_DAY)
    recent = make_site(author="Changed lately")
    add_observations(
        recent, [t - timedelta(days=d) for d in (300, 30, 2)], updates=[False, False, True]
    )
    for n in range(3):
        add_observations(
            make_site(author=f"Quiet {n}"),
            [t - timedelta(days=d) for d in (420 + n, 210 + n)],
            updates=[False, False],
        )
    scorer("X")
    everything = build(budget=10)
    assert everything.notice == ""
    p = dict(everything.entries.values_list("site_id", "probability"))
    others = [value for site, value in p.items() if site != recent.pk]
    assert p[recent.pk] < min(others)
    theta = round((p[recent.pk] + min(others)) / 2, 3)

    crawl = build(theta=theta)
    assert set(crawl.entries.values_list("site__author", flat=True)) == {
        "Quiet 0",
        "Quiet 1",
        "Quiet 2",
    }
    assert crawl.notice == (
        f"θ {theta:g} removed every site the GP4C scheduler told apart from the listed ones "
        f"(their P(change) is at most {p[recent.pk]:.3f}); every listed site has the same score "
        "(0), so the list is in HACS's probability order. Build it with a budget k and no θ to "
        "rank by the scheduler."
    )
