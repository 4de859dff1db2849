"""The method on the demo archive: HACS beats its baselines as the issue (and the paper's Table I
and Fig. 11) claim, at every history size — and why short windows pay (the owners' editing
sessions) and how thin the one-week case is.

Pure: the demo's homepage observations are read from its truth as the database holds them
(``testbed/demo_tables.py``) and evaluated with the parameters of an evaluation run.
``tests/test_evaluation_service.py`` checks, on SQLite and PostgreSQL, that an imported demo
loads into exactly these tables and that its run gives exactly these results.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from hacs.clock import to_days
from hacs.evaluation import reference_points, window_scores
from hacs_demo import build_demo_archive
from testbed.demo_tables import evaluate_as_a_run, run_window, truth_tables

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
# period are the demo's (and paper's) defaults.
DEMO_SITES = 1200


@pytest.fixture(scope="module")
def demo_results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The demo's homepage level over its three years, evaluated as an evaluation run does."""
    demo = build_demo_archive(tmp_path_factory.mktemp("eval-demo"), sites=DEMO_SITES, seed=0)
    truth = json.loads(Path(demo.truth_path).read_text(encoding="utf-8"))
    start = to_days(datetime(2015, 6, 1, tzinfo=UTC))
    end = to_days(datetime(2018, 6, 1, tzinfo=UTC))
    table = run_window(truth_tables(truth, n_sites=DEMO_SITES)["homepage"], start=start, end=end)
    results = evaluate_as_a_run(table, start=start, end=end)
    by_index = {int(site["index"]): site["seed_url"] for site in truth["sites"]}
    return {
        "results": results,
        "table": table,
        "site_urls": [by_index[i] for i in range(DEMO_SITES)],
        "truth": truth,
        "start": start,
        "end": end,
    }


def rows_of(results: dict[str, Any], average: str = "micro") -> dict[tuple[int, str], Any]:
    return {
        (r["w_weeks"], r["model"]): r
        for r in results["table"]
        if r["level"] == "homepage" and r["average"] == average
    }


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


def test_on_the_demo_a_recent_addition_predicts_one_next_week(demo_results: dict[str, Any]) -> None:
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
