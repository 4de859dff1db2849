"""Seed health rules (hacs.health), from their definitions in the module and the README."""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest

from hacs.formats.canon import SeedScope
from hacs.health import (
    Answer,
    answer_of,
    capture_health,
    is_stale,
    redirect_target,
    stopped_changing,
)

SEED = "http://www.cs.example.edu/~bar/"
HOME = "http://www.cs.example.edu/~bar/"
NEW = "https://new.example.org/~bar/"


def health(answers: list[tuple[float, str]], recent: int = 3, seed: str = SEED):
    """Captures from (time, what) pairs: "ok", "404", "410", "503", "away" (301 to NEW),
    "away?" (302, no Location), "tidy" (301 to the https form with a slash)."""
    statuses, good, locations, urls = [], [], [], []
    for _t, what in answers:
        good.append(what == "ok")
        statuses.append(
            {"ok": 200, "404": 404, "410": 410, "503": 503, "away": 301, "away?": 302, "tidy": 301}[
                what
            ]
        )
        locations.append({"away": NEW, "tidy": "https://cs.example.edu/~bar/"}.get(what))
        urls.append("http://cs.example.edu/~bar" if what == "tidy" else HOME)
    return capture_health(
        seed_url=seed,
        times=[t for t, _ in answers],
        good=good,
        statuses=statuses,
        locations=locations,
        urls=urls,
        recent=recent,
    )


def test_it_imports_no_django() -> None:
    code = "import sys, hacs.health; assert 'django' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


# --- One capture's answer -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("location", "url", "expected"),
    [
        ("https://new.example/~bar/", HOME, "https://new.example/~bar/"),
        ("/~baz/", HOME, "http://www.cs.example.edu/~baz/"),
        ("other/", "http://cs.example.edu/~bar/a", "http://cs.example.edu/~bar/other/"),
        ("", HOME, ""),
        (None, HOME, ""),
    ],
)
def test_redirect_target_resolves_location_against_the_capture_url(location, url, expected):
    assert redirect_target(location, url) == expected


@pytest.mark.parametrize(
    "location",
    [
        "https://cs.example.edu/~bar/",  # other scheme, no www.
        "http://www.cs.example.edu/~bar/",  # trailing slash added
        "http://cs.example.edu/~bar/index.html",
        "/~bar/papers/",  # a page under the seed
    ],
)
def test_a_redirect_inside_the_seed_scope_is_not_a_move(location: str) -> None:
    scope = SeedScope.from_url(SEED)
    answer = answer_of(
        good=False, status=301, location=location, url="http://cs.example.edu/~bar", scope=scope
    )
    assert answer == (Answer.NEUTRAL, "")


@pytest.mark.parametrize(
    ("location", "target"),
    [
        ("https://new.example/~bar/", "https://new.example/~bar/"),  # another host
        ("/~barx/", "http://www.cs.example.edu/~barx/"),  # another ~user path
        ("http://cs.example.edu/people/bar", "http://cs.example.edu/people/bar"),
        ("http://other.cs.example.edu/~bar/", "http://other.cs.example.edu/~bar/"),
    ],
)
def test_a_redirect_to_another_scope_is_away_with_its_target(location: str, target: str):
    scope = SeedScope.from_url(SEED)
    assert answer_of(good=False, status=302, location=location, url=HOME, scope=scope) == (
        Answer.AWAY,
        target,
    )


def test_answers_of_other_statuses() -> None:
    scope = SeedScope.from_url(SEED)

    def answer(**kw):
        kw.setdefault("location", None)
        return answer_of(url=HOME, scope=scope, **kw)[0]

    assert answer(good=True, status=200) is Answer.GOOD
    assert answer(good=True, status=None) is Answer.GOOD  # a revisit of a good capture
    assert answer(good=False, status=404) is Answer.GONE
    assert answer(good=False, status=410) is Answer.GONE
    assert answer(good=False, status=302) is Answer.AWAY  # target not recorded
    for status in (403, 500, 503, 200, None):  # 200 not HTML, orphan revisit
        assert answer(good=False, status=status) is Answer.NEUTRAL


# --- The trailing run ----------------------------------------------------------------------


def test_three_redirects_away_after_the_last_good_capture_are_a_move() -> None:
    found = health([(1, "ok"), (2, "ok"), (10, "away"), (11, "away"), (12, "away")])
    assert found.problem == "moved"
    assert found.target == NEW
    assert (found.since, found.count, found.status) == (10, 3, 301)
    assert found.last_good == 2 and found.captured


def test_two_redirects_away_are_not_enough_with_recent_three() -> None:
    found = health([(1, "ok"), (10, "away"), (11, "away")])
    assert found.problem == ""
    assert found.last_good == 1
    assert health([(1, "ok"), (10, "away"), (11, "away")], recent=2).problem == "moved"


def test_a_good_capture_after_the_redirects_clears_the_move() -> None:
    found = health([(1, "ok"), (10, "away"), (11, "away"), (12, "away"), (13, "ok")])
    assert found.problem == ""
    assert found.last_good == 13


def test_neutral_captures_neither_count_nor_break_the_run() -> None:
    answers = [
        (1, "ok"),
        (10, "away"),
        (11, "503"),
        (12, "tidy"),
        (13, "away"),
        (14, "503"),
        (15, "away"),
    ]
    found = health(answers)
    assert (found.problem, found.since, found.count) == ("moved", 10, 3)


def test_tidying_redirects_alone_are_never_a_move() -> None:
    assert health([(1, "ok"), (2, "tidy"), (3, "tidy"), (4, "tidy"), (5, "tidy")]).problem == ""


def test_404_and_410_in_the_newest_captures_are_gone() -> None:
    found = health([(1, "ok"), (5, "404"), (6, "410"), (7, "404")])
    assert (found.problem, found.since, found.count, found.status) == ("gone", 5, 3, 404)
    assert found.target == ""


def test_the_newest_answer_names_the_problem_and_its_stretch_the_evidence() -> None:
    # Redirected away for a while, then the new address's old URL answers 404.
    found = health([(1, "ok"), (2, "away"), (3, "away"), (4, "404"), (5, "404")])
    assert (found.problem, found.since, found.count, found.status) == ("gone", 4, 2, 404)
    found = health([(1, "ok"), (2, "404"), (3, "404"), (4, "away")])
    assert (found.problem, found.since, found.count, found.target) == ("moved", 4, 1, NEW)


def test_a_seed_never_captured_good_is_flagged_even_with_fewer_captures() -> None:
    found = health([(3, "404")])
    assert (found.problem, found.count, found.last_good) == ("gone", 1, None)
    found = health([(3, "away?"), (4, "away?")])
    assert (found.problem, found.target) == ("moved", "")


def test_the_newest_known_target_is_named_when_some_are_unknown() -> None:
    found = health([(1, "ok"), (2, "away"), (3, "away?"), (4, "away?")])
    assert (found.problem, found.target, found.count) == ("moved", NEW, 3)


def test_captures_are_read_in_time_order_whatever_order_they_come_in() -> None:
    found = health([(12, "away"), (1, "ok"), (11, "away"), (10, "away")])
    assert (found.problem, found.since) == ("moved", 10)
    assert health([(12, "ok"), (1, "ok"), (11, "away"), (10, "away")]).problem == ""


def test_no_captures_is_no_problem_and_not_captured() -> None:
    found = health([])
    assert (found.problem, found.captured, found.last_good) == ("", False, None)


def test_it_checks_its_arguments() -> None:
    with pytest.raises(ValueError, match="same length"):
        capture_health(seed_url=SEED, times=[1.0], good=[], statuses=[], locations=[], urls=[])
    with pytest.raises(ValueError, match="recent"):
        health([(1, "ok")], recent=0)


def test_it_matches_a_slow_reading_of_the_definition_on_random_histories() -> None:
    rng = np.random.default_rng(28)
    kinds = ["ok", "404", "410", "503", "away", "away?", "tidy"]
    for _ in range(300):
        n = int(rng.integers(0, 9))
        answers = [(float(t), kinds[int(rng.integers(len(kinds)))]) for t in range(n)]
        recent = int(rng.integers(1, 4))
        # The definition, read literally: drop neutral captures, take the captures after the
        # last good one, flag when there are ≥ recent of them or no good capture at all.
        decisive = [w for _t, w in answers if w not in ("503", "tidy")]
        tail: list[str] = []
        for what in reversed(decisive):
            if what == "ok":
                break
            tail.insert(0, what)
        flagged = bool(tail) and (len(tail) >= recent or len(tail) == len(decisive))
        expected = "" if not flagged else ("gone" if tail[-1] in ("404", "410") else "moved")
        assert health(answers, recent=recent).problem == expected, (answers, recent)


# --- Not captured lately --------------------------------------------------------------------


def test_stale_when_the_last_good_capture_is_older_than_the_setting() -> None:
    assert is_stale(last_good=100.0, captured=True, now=1200.0, stale_after_days=1095)
    assert not is_stale(last_good=105.0, captured=True, now=1200.0, stale_after_days=1095)
    assert is_stale(last_good=None, captured=True, now=1200.0, stale_after_days=1095)
    assert not is_stale(last_good=None, captured=False, now=1200.0, stale_after_days=1095)
    with pytest.raises(ValueError, match="stale_after_days"):
        is_stale(last_good=1.0, captured=True, now=2.0, stale_after_days=math.inf)


# --- Stopped changing -----------------------------------------------------------------------


def stopped(rate, tau, last_copy, observations=10, updates=3, **kw):
    return bool(
        stopped_changing(
            rate=[rate],
            tau=[tau],
            last_copy=[last_copy],
            observations=[observations],
            updates=[updates],
            **kw,
        )[0]
    )


def test_stopped_when_quiet_for_factor_mean_intervals_and_at_least_min_days() -> None:
    # Mean interval 100 days: 500 days without a new link is 5 intervals.
    assert stopped(0.01, tau=1000.0, last_copy=1500.0)
    assert not stopped(0.01, tau=1000.0, last_copy=1499.0)
    # Mean interval 30 days: 300 days is 10 intervals but under the 365-day minimum.
    assert not stopped(1 / 30, tau=1000.0, last_copy=1300.0)
    assert stopped(1 / 30, tau=1000.0, last_copy=1365.0)
    assert stopped(1 / 30, tau=1000.0, last_copy=1300.0, min_days=300)


def test_no_update_or_zero_rate_stops_after_min_days() -> None:
    assert stopped(0.0, tau=0.0, last_copy=400.0, updates=0)
    assert stopped(0.002, tau=0.0, last_copy=400.0, updates=0)  # the posterior's prior mean
    assert not stopped(0.0, tau=0.0, last_copy=300.0, updates=0)


def test_unknown_or_thin_estimates_never_stop() -> None:
    assert not stopped(math.nan, tau=0.0, last_copy=5000.0, updates=0)
    assert not stopped(0.01, tau=math.nan, last_copy=5000.0)
    assert not stopped(0.01, tau=0.0, last_copy=5000.0, observations=1)


def test_stopped_changing_is_vectorised_and_checks_its_arguments() -> None:
    flags = stopped_changing(
        rate=[0.01, 0.01, np.nan],
        tau=[0, 0, 0],
        last_copy=[600, 400, 600],
        observations=[5, 5, 5],
        updates=[2, 2, 0],
    )
    assert flags.tolist() == [True, False, False]
    with pytest.raises(ValueError, match="factor"):
        stopped(0.01, tau=0.0, last_copy=1.0, factor=0)
    with pytest.raises(ValueError, match="min_days"):
        stopped(0.01, tau=0.0, last_copy=1.0, min_days=-1)


def test_a_poisson_site_that_keeps_changing_is_rarely_stopped() -> None:
    # Sites changing at rate λ and observed daily: the quiet span since the last update is
    # exponential, so about e⁻⁵ of them are past 5 mean intervals (min_days 0 here).
    rng = np.random.default_rng(7)
    rate = 0.05
    quiet = rng.exponential(1 / rate, size=20_000)
    share = stopped_changing(
        rate=np.full(quiet.size, rate),
        tau=np.zeros(quiet.size),
        last_copy=quiet,
        observations=np.full(quiet.size, 10),
        updates=np.full(quiet.size, 5),
        min_days=0,
    ).mean()
    assert abs(share - math.exp(-5)) < 0.003
