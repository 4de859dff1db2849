"""Evaluation runs from the database (scheduling.evaluation_service, the job and the command).

* The tables loaded with one query per level equal tables built by hand from the ORM rows.
* On the demo archive, HACS beats its baselines as the issue (and the paper's Table I and Fig. 11)
  claim, at every history size — and why short windows pay (the owners' editing sessions) and
  how thin the one-week case is.
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

import numpy as np
import pytest
import redis
from django.core.management import CommandError, call_command

from archive.models import Capture, LinkSnapshot, Site, Tag
from hacs.clock import to_days
from hacs.evaluation import ObservationTable, reference_points, window_scores
from hacs_demo import build_demo_archive
from jobs.models import JobRecord
from scheduling.evaluation_service import (
    evaluation_run,
    evaluation_run_create,
    evaluation_tables_load,
    parse_w_weeks,
)
from scheduling.jobs import enqueue_evaluation
from scheduling.models import Estimate, EvaluationRun
from scheduling.observations import EpochMilliseconds
from tests.conftest import make_site

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
        readable = i not in unreadable
        rows.append(
            Capture(
                site=site, url=site.seed_url + page.lstrip("/"), urlkey=key, page_key=key,
                timestamp=moment, depth=depth, mimetype="text/html", status=200,
                digest=f"D{i}", kind="observation", is_observation=True,
                page_index=index if readable else None,
                link_floor=min(floor, index) if readable else None,
            )
        )  # fmt: skip
        index += readable
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
    add_page(bob, "", depth=0, moments=days(1, 8, 15, 22, 29), floors=[-1, 0, 1, -1, 3],
             unreadable=(2,))  # fmt: skip
    add_page(zed, "", depth=0, moments=[T0 + timedelta(days=2, microseconds=250_000)], floors=[-1])
    add_page(zed, "/x.html", depth=1, moments=days(2, 9), floors=[-1, -1])
    Capture.objects.create(
        site=amy, url="http://a.edu/~amy/moved", urlkey="edu,a)/~amy/moved",
        page_key="edu,a)/~amy/moved", timestamp=T0 + timedelta(days=5), depth=1, status=301,
        kind="redirect", is_observation=False,
    )  # fmt: skip
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
        zip(table.site.tolist(), table.page.tolist(), table.time.tolist(),
            table.page_index.tolist(), table.link_floor.tolist(), strict=True)
    )  # fmt: skip


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
    millis = Capture.objects.order_by("timestamp").annotate(
        ms=EpochMilliseconds("timestamp")
    ).values_list("timestamp", "ms")  # fmt: skip
    for moment, ms in millis:
        assert ms / 1e3 / 86400.0 == to_days(moment)


def test_no_observations_give_empty_tables(db: None) -> None:
    make_site()
    tables = evaluation_tables_load(levels=["homepage"])
    assert tables["homepage"].size == 0 and tables["homepage"].site_count == 1


def test_a_run_stores_results_status_progress_and_duration(small_collection: list[Site]) -> None:
    run = evaluation_run_create(
        parameters={"start": "2016-01-11", "end": "2016-02-15", "levels": ["homepage", "website"],
                    "w_weeks": [1, 2, 3]},
    )  # fmt: skip
    assert run.status == EvaluationRun.Status.QUEUED
    seen: list[float] = []
    results = evaluation_run(run=run, progress=seen.append)
    run.refresh_from_db()
    assert run.status == EvaluationRun.Status.DONE and run.progress == 1.0
    assert run.duration_seconds is not None and run.finished_at is not None
    assert seen == sorted(seen) and seen[-1] == 1.0
    assert run.results == json.loads(json.dumps(results))
    assert {
        "curves",
        "table",
        "pak",
        "budget",
        "levels",
        "parameters",
        "period",
        "intervals",
    } <= set(results)
    assert results["parameters"]["method"] == "interpolated"
    assert results["parameters"]["reference_points"] == 6
    assert results["period"]["start"] == "2016-01-11"
    assert results["levels"]["website"] == {"sites": 3, "observations": 18}
    # The daily list replayed over the period's last four weeks, from the archive's updates.
    replay = results["replay"]
    assert (replay["start"], replay["days"], replay["level"]) == ("2016-01-18", 28, "homepage")
    policies = [row["policy"] for row in replay["budgets"][0]["rows"]]
    assert policies == ["hacs", "mle_since_copy", "paper", "round_robin", "random"]
    assert all(row["crawls"] == 28 * block["budget"]
               for block in replay["budgets"] for row in block["rows"])  # fmt: skip


def test_bad_parameters_are_refused_with_their_name(db: None) -> None:
    with pytest.raises(ValueError, match="end"):
        evaluation_run_create(parameters={"start": "2018-01-01", "end": "2017-01-01"})
    with pytest.raises(ValueError, match="w_weeks"):
        evaluation_run_create(parameters={"start": "2017-01-01", "end": "2018-01-01",
                                          "w_weeks": [0, 3]})  # fmt: skip
    with pytest.raises(ValueError, match="levels"):
        evaluation_run_create(parameters={"start": "2017-01-01", "end": "2018-01-01",
                                          "levels": ["intranet"]})  # fmt: skip
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

# 1200 sites rather than the default 40 (or 400), for statistical stability at w = 1 week. HACS
# wins at w = 1 only through the site-windows whose one week of captures reveals an update (an
# addition between two captures less than a week apart): about 0.5% of eligible site-windows.
# The default 40-site demo has 8 of them over the three years (none followed by a positive), so
# the claim cannot be tested there. At 400 sites there are 56 (seed 0), with 3 positives next
# week where F1 needed 4 to beat Brute Force: a tie, decided by a handful of sites (3 of seeds
# 0-7 won). At 1200 there are 160 with 19 positives, and HACS wins at every w (micro and macro)
# on seed 0 and on 4 of seeds 1-5 too (seed 5 ties Brute Force in macro F1 at w = 1; micro F1
# and P@K held on all six). A reference point then holds about 4 positives at w = 1 and 21 at
# w = 12 (at 40 sites: 0.1 and 0.8), so weighted P@K is not decided by P@1 over a few sites
# either. The demo is deterministic and its first 40 sites are the default demo's. The seed and
# period are the demo's (and paper's) defaults. Importing it takes about two minutes.
DEMO_SITES = 1200


@pytest.fixture(scope="module")
def demo_results(
    tmp_path_factory: pytest.TempPathFactory, django_db_setup: None, django_db_blocker: Any
) -> dict[str, Any]:
    """Import the demo archive, evaluate its homepage level, compare the loaded tables with the
    truth, and remove the data again (so tests that flush the database cannot interfere)."""
    demo = build_demo_archive(tmp_path_factory.mktemp("eval-demo"), sites=DEMO_SITES, seed=0)
    quiet = open(os.devnull, "w")  # noqa: SIM115 - closed below
    with django_db_blocker.unblock():
        try:
            call_command("import_seeds", str(demo.seeds_path), stdout=quiet, stderr=quiet)
            call_command("import_warc", str(demo.warc_path), stdout=quiet)
            run = evaluation_run_create(
                parameters={"start": "2015-06-01", "end": "2018-06-01", "levels": ["homepage"]}
            )
            results = evaluation_run(run=run)
            start, end = datetime(2015, 6, 1, tzinfo=UTC), datetime(2018, 6, 1, tzinfo=UTC)
            tables = evaluation_tables_load(
                levels=["homepage"], start=start - timedelta(weeks=12), end=end + timedelta(days=7)
            )
            seeds = dict(Site.objects.values_list("pk", "seed_url"))
            site_urls = [seeds[int(pk)] for pk in tables.site_ids]
        finally:
            for model in (EvaluationRun, Estimate, Capture, LinkSnapshot, Site, Tag, JobRecord):
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


def rows_of(results: dict[str, Any], average: str = "micro") -> dict[tuple[int, str], Any]:
    return {
        (r["w_weeks"], r["model"]): r
        for r in results["table"]
        if r["level"] == "homepage" and r["average"] == average
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
    assert len(expected) > 10_000


@pytest.mark.parametrize("average", ["micro", "macro"])
def test_on_the_demo_hacs_f1_at_theta_hat_is_never_below_random_or_brute_force(
    demo_results: dict[str, Any], average: str
) -> None:
    rows = rows_of(demo_results["results"], average)
    for w in range(1, 13):
        hacs = rows[(w, "hacs")]["f1"]
        assert hacs >= rows[(w, "random")]["f1"], w
        assert hacs >= rows[(w, "brute_force")]["f1"], w


def share_of_windows_with_two_observations(data: dict[str, Any], w: int) -> float:
    shares: dict[int, float] = data.setdefault("two_observation_shares", {})  # cached per module
    if w not in shares:
        counts = np.concatenate(
            [
                window_scores(data["table"], t=t, w_weeks=w, method="interpolated").instants
                for t in reference_points(data["start"], data["end"])
            ]
        )
        shares[w] = float(np.mean(counts >= 2))
    return shares[w]


@pytest.mark.parametrize("average", ["micro", "macro"])
def test_on_the_demo_hacs_f1_exceeds_both_baselines_at_every_history_size(
    demo_results: dict[str, Any], average: str
) -> None:
    """HACS selects (θ̂ > 0: fewer sites than Brute Force) and wins, at every w from 1 week on.

    The demo's owners add links in editing sessions (hacs_demo/), so a recent update
    predicts another one soon and even a one-week history pays, as in the paper's Table I.
    Under the earlier memoryless (Poisson) demo HACS tied Brute Force (θ̂ = 0) for w = 1-3."""
    rows = rows_of(demo_results["results"], average)
    for w in range(1, 13):
        hacs = rows[(w, "hacs")]
        assert hacs["theta_hat"] > 0, w
        assert hacs["f1"] > rows[(w, "random")]["f1"], w
        assert hacs["f1"] > rows[(w, "brute_force")]["f1"], w


@pytest.mark.parametrize("average", ["micro", "macro"])
def test_on_the_demo_hacs_f1_exceeds_both_wherever_windows_hold_two_observations(
    demo_results: dict[str, Any], average: str
) -> None:
    """The issue's claim read literally: HACS's F1 at θ̂ exceeds both baselines at every w where
    most eligible sites have two or more observations in the window (every w here, w = 1
    included: captures come in bursts hours apart). It held on no earlier demo: under Poisson
    updates a 1-3-week window barely predicts next week. With editing sessions it holds; w = 1
    is the thin case (see DEMO_SITES, and the test after the next)."""
    rows = rows_of(demo_results["results"], average)
    checked = 0
    for w in range(1, 13):
        if share_of_windows_with_two_observations(demo_results, w) < 0.5:
            continue
        checked += 1
        assert rows[(w, "hacs")]["f1"] > rows[(w, "brute_force")]["f1"], w
        assert rows[(w, "hacs")]["f1"] > rows[(w, "random")]["f1"], w
    assert checked == 12


def test_on_the_demo_true_rates_would_beat_brute_force_even_with_short_windows(
    demo_results: dict[str, Any],
) -> None:
    """Rates differ between sites too: the same eligible sites and positives, selected by
    p = 1 − exp(−λ e) with the demo's true long-run homepage rates λ, beat Brute Force at
    w = 1-3. (Under the Poisson demo this was all there was to learn, and a 1-3-week window
    could not estimate it.)"""
    rates = {s["seed_url"]: s["rate_per_day"]["homepage"] for s in demo_results["truth"]["sites"]}
    true_rate = np.array([rates[url] for url in demo_results["site_urls"]])
    thetas = np.arange(1, 10) / 10
    for w in (1, 2, 3):
        selected, hits, positives, eligible = np.zeros(9), np.zeros(9), 0, 0
        for t in reference_points(demo_results["start"], demo_results["end"]):
            scores = window_scores(demo_results["table"], t=t, w_weeks=w, method="interpolated")
            positive = np.isfinite(scores.first_update)
            chosen = -np.expm1(-true_rate[scores.site] * 7.0)[:, None] >= thetas
            selected += chosen.sum(axis=0)
            hits += (chosen & positive[:, None]).sum(axis=0)
            positives += int(positive.sum())
            eligible += positive.size
        brute_force = 2 * positives / (eligible + positives)
        assert (2 * hits / (selected + positives)).max() > 1.5 * brute_force, w


def test_on_the_demo_a_recent_addition_predicts_one_next_week(
    demo_results: dict[str, Any],
) -> None:
    """Why short windows pay, and why w = 1 is thin. Selecting the eligible sites whose owner
    truly added a homepage link in the window (truth.json's update times) beats Brute Force's F1
    more than threefold at w = 1-3: sessions make a recent addition predict a positive next
    week. HACS sees such an addition only when two of the window's captures straddle it: at
    w = 1 for under a quarter of those site-windows (under 1% of all eligible ones)."""
    start = demo_results["start"]
    added = {
        s["seed_url"]: np.array(s["update_times"]["homepage"]) + start
        for s in demo_results["truth"]["sites"]
    }
    times = [added[url] for url in demo_results["site_urls"]]
    for w in (1, 2, 3):
        selected = hits = positives = eligible = revealed = 0
        for t in reference_points(start, demo_results["end"]):
            scores = window_scores(demo_results["table"], t=t, w_weeks=w, method="interpolated")
            positive = np.isfinite(scores.first_update)
            recent = np.array(
                [bool(((times[i] > t - 7 * w) & (times[i] <= t)).any()) for i in scores.site],
                dtype=bool,
            )
            selected += int(recent.sum())
            hits += int((recent & positive).sum())
            positives += int(positive.sum())
            eligible += positive.size
            revealed += int((np.nan_to_num(scores.probability) > 0).sum())
        brute_force = 2 * positives / (eligible + positives)
        assert 2 * hits / (selected + positives) > 3 * brute_force, w
        if w == 1:
            assert revealed < 0.25 * selected and revealed < 0.01 * eligible


def test_on_the_demo_hacs_weighted_p_at_k_beats_last_obs_and_random(
    demo_results: dict[str, Any],
) -> None:
    pak = {
        (r["w_weeks"], r["model"]): r["weighted_p_at_k"]
        for r in demo_results["results"]["pak"]
        if r["level"] == "homepage"
    }
    for w in range(1, 13):
        assert pak[(w, "hacs")] > pak[(w, "last_obs")], w
        assert pak[(w, "hacs")] > pak[(w, "random")], w


@pytest.mark.parametrize("average", ["micro", "macro"])
def test_on_the_demo_the_posterior_beats_brute_force_from_two_weeks_and_last_obs_everywhere(
    demo_results: dict[str, Any], average: str
) -> None:
    """HACS's default reading in Evaluations 1 and 2 (python -m bench.evaluation --demo prints the
    whole tables). Where it holds: F1 at its own θ̂ above Brute Force's at every w ≥ 2 (θ̂ > 0:
    it selects), weighted P@K above Last-Obs and Random at every w. Where it does not: the
    paper's g has the higher F1 at the homepage level, and Cho–Garcia-Molina the higher P@K
    from w = 2 on."""
    rows = rows_of(demo_results["results"], average)
    for w in range(2, 13):
        assert rows[(w, "posterior")]["theta_hat"] > 0, w
        assert rows[(w, "posterior")]["f1"] > rows[(w, "brute_force")]["f1"], w
    pak = {
        (r["w_weeks"], r["model"]): r["weighted_p_at_k"]
        for r in demo_results["results"]["pak"]
        if r["level"] == "homepage"
    }
    for w in range(1, 13):
        assert pak[(w, "posterior")] > pak[(w, "last_obs")], w
        assert pak[(w, "posterior")] > pak[(w, "random")], w


# --------------------------------------------------------------------------------------------
# The command
# --------------------------------------------------------------------------------------------


def test_the_command_writes_json_with_every_curve_point_and_table_i(
    small_collection: list[Site], tmp_path: Path
) -> None:
    out = tmp_path / "eval.json"
    summary = io.StringIO()
    call_command(
        "evaluate", "--start", "2016-01-11", "--end", "2016-02-15", "--level", "homepage",
        "--w-weeks", "1-3", "--output", str(out), stderr=summary,
    )  # fmt: skip
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
        call_command("evaluate", "--start", "2016-01-11", "--end", "2016-02-15", "--enqueue",
                     stdout=open(os.devnull, "w"))  # fmt: skip
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
    # The worker took the job and died: the run says running, RQ no longer knows the job.
    EvaluationRun.objects.filter(pk=run.pk).update(status=EvaluationRun.Status.RUNNING)
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
    EvaluationRun.objects.filter(pk=run.pk).update(status=EvaluationRun.Status.RUNNING)
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
        "import sys, hacs.charts.evaluation\n"
        "assert not [m for m in sys.modules if m.split('.')[0] == 'django']\n"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=PROJECT, capture_output=True,
                            text=True, timeout=120)  # fmt: skip
    assert result.returncode == 0, result.stderr
