"""The `simulate` command: daily crawling replayed on the collection's own history."""

from __future__ import annotations

import io
import json
import re
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from scheduling.replays import replay_collection
from tests.factories import add_observations, make_site

pytestmark = pytest.mark.django_db
START = date(2018, 5, 1)


def days_from_start(*days: float) -> list[datetime]:
    origin = datetime(2018, 5, 1, tzinfo=UTC)
    return [origin + timedelta(days=d) for d in days]


@pytest.fixture()
def collection() -> list[int]:
    """Two busy sites (a change seen every few days, before and during the period) and four
    quiet ones."""
    ids = []
    for _ in range(2):
        site = make_site()
        moments = days_from_start(*range(-60, 28, 3))
        add_observations(site, moments, updates=[False] + [(i % 2 == 1) for i in range(1, 30)])
        ids.append(site.pk)
    for _ in range(4):
        site = make_site()
        add_observations(site, days_from_start(-300, -200, -100, 5), updates=[False] * 4)
        ids.append(site.pk)
    return ids


def test_changes_come_from_the_archives_updates_in_the_period(collection: list[int]) -> None:
    result = replay_collection(level="homepage", start=START, days=10, shares=(0.34,))
    assert result["sites"] == 6 and result["changes_from"] == "the archive's updates"
    [block] = result["budgets"]
    assert block["budget"] == 2
    rows = {row["policy"]: row for row in block["rows"]}
    assert "true_rates" not in rows
    assert all(row["crawls"] == 20 for row in rows.values())
    # The busy sites change every six days in the archive; the posterior lists them and finds
    # at least as many changes as crawling in turn.
    assert rows["hacs"]["found"] >= rows["round_robin"]["found"]
    assert rows["hacs"]["changes"] > 0


def test_the_command_prints_a_table_or_json(collection: list[int]) -> None:
    out = io.StringIO()
    call_command("simulate", "--start", "2018-05-01", "--days", "7", "--budgets", "0.5", stdout=out)
    text = out.getvalue()
    assert "6 sites, homepage level, 7 days from 2018-05-01" in text
    assert "Round-robin (oldest copy first)" in text and "Budget 50% a day (3 sites)" in text
    out = io.StringIO()
    call_command("simulate", "--start", "2018-05-01", "--days", "7", "--json", stdout=out)
    data = json.loads(out.getvalue())
    assert [b["share"] for b in data["budgets"]] == [0.02, 0.05]


def test_a_truth_file_gives_the_true_changes_and_rates(
    collection: list[int], tmp_path: Path
) -> None:
    from archive.models import Site

    sites = list(Site.objects.order_by("pk"))
    truth = {
        "generator": {"start": "2018-04-01"},
        "sites": [
            {
                "seed_url": s.seed_url,
                "rate_per_day": {"homepage": 0.5 if i == 0 else 0.001},
                "update_times": {"homepage": [30.5 + k for k in range(10)] if i == 0 else []},
            }
            for i, s in enumerate(sites)
        ],
    }
    path = tmp_path / "truth.json"
    path.write_text(json.dumps(truth))
    out = io.StringIO()
    call_command(
        "simulate",
        "--start",
        "2018-05-01",
        "--days",
        "5",
        "--budgets",
        "0.17",
        "--truth",
        str(path),
        "--json",
        stdout=out,
    )
    rows = {r["policy"]: r for r in json.loads(out.getvalue())["budgets"][0]["rows"]}
    # The site that changes daily (from 2018-05-01 12:00 on) is found every day by the list
    # that knows its rate.
    assert rows["true_rates"]["found"] == 5
    with pytest.raises(CommandError, match="truth"):
        bad = tmp_path / "bad.json"
        bad.write_text("{}")
        call_command("simulate", "--start", "2018-05-01", "--truth", str(bad))


def test_nutch_adaptive_and_lambdacrawl_are_replayed_beside_hacs(collection: list[int]) -> None:
    seen: list[float] = []
    result = replay_collection(
        level="homepage", start=START, days=10, shares=(0.34, 0.5), progress=seen.append
    )
    # Progress climbs through both budgets' replays, day by day, to the end.
    policies = len(result["budgets"][0]["rows"])
    assert len(seen) == 2 * policies * 10 and seen == sorted(seen) and seen[-1] == 1.0
    assert seen[policies * 10 - 1] == 0.5
    for block in result["budgets"]:
        rows = {row["policy"]: row for row in block["rows"]}
        assert rows["nutch_adaptive"]["label"] == "Nutch adaptive (interval ×0.8 / ×1.4)"
        assert rows["lambdacrawl"]["label"] == "LambdaCrawl (optimal rates, posterior means)"
        # Compared on the same crawls: every policy made its k a day.
        assert {row["crawls"] for row in rows.values()} == {10 * block["budget"]}
        assert all(0 <= row["found"] <= row["crawls"] for row in rows.values())
        # The afresh reading of Nutch is the bench's, not the page's.
        assert "nutch_fresh" not in rows
    # Both find changes on the busy sites (they change every six days in the period).
    assert rows["nutch_adaptive"]["found"] > 0 and rows["lambdacrawl"]["found"] > 0


def test_simulate_and_the_evaluation_page_show_both_baselines(
    collection: list[int], client: Any
) -> None:
    from tests.conftest import make_user
    from tests.test_evaluation_views import done_run, real_results

    out = io.StringIO()
    call_command("simulate", "--start", "2018-05-01", "--days", "7", "--budgets", "0.5", stdout=out)
    lines = out.getvalue().splitlines()
    nutch = next(line for line in lines if line.startswith("Nutch adaptive (interval"))
    lambdacrawl = next(line for line in lines if line.startswith("LambdaCrawl (optimal rates"))
    assert "/21" in nutch and "/21" in lambdacrawl  # 3 sites a day for 7 days

    replay = replay_collection(level="homepage", start=START, days=7, shares=(0.5,))
    run = done_run({**real_results(), "replay": replay})
    client.force_login(make_user("viewer", role="viewer"))
    page = client.get(f"/evaluation/?run={run.pk}").content.decode()
    assert '<th scope="row">Nutch adaptive (interval ×0.8 / ×1.4)</th>' in page
    assert '<th scope="row">LambdaCrawl (optimal rates, posterior means)</th>' in page
    charts = json.loads(re.search(r'id="evaluation-charts"[^>]*>(.*?)</script>', page, re.S)[1])
    [bars] = charts["replay"]["data"]
    assert {
        "Nutch adaptive (interval ×0.8 / ×1.4)",
        "LambdaCrawl (optimal rates, posterior means)",
    } <= set(bars["x"])
