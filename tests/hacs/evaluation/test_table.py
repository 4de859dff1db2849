"""hacs.evaluation.table: the observation table's checks, and rule 3 read as an interval of
window starts (held equal to hacs.updates' reading, DESIGN.md rule 3)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from hacs.evaluation import RANKING_MODELS, ObservationTable, window_scores
from hacs.updates import is_window_update, window_update_flags
from tests.hacs.evaluation._helpers import Obs, columns, random_history, table_of

# --------------------------------------------------------------------------------------------
# Rule 3 within a window
# --------------------------------------------------------------------------------------------


def test_an_update_before_the_window_does_not_flag_inside_it() -> None:
    """Rule 3 is window-relative: a link first seen before the window is new again inside it only
    when no earlier observation *in the window* held it; re-adding within the window is not."""
    a, b = frozenset("a"), frozenset("b")
    observations = [
        Obs(0, 0, 1.0, 0, a),
        Obs(0, 0, 2.0, 1, a | b),  # update, before the window [7, 14]
        Obs(0, 0, 8.0, 2, a),  # baseline of the window
        Obs(0, 0, 9.0, 3, a | b),  # b: held before the window only → an update in it
        Obs(0, 0, 10.0, 4, a),
        Obs(0, 0, 11.0, 5, a | b),  # b re-added, held at 9.0 in the window → not an update
    ]
    scores = window_scores(table_of(observations, 1), t=14.0, w_weeks=1)
    assert scores.tau[0] == 9.0
    assert scores.scores["nad"][0] == pytest.approx(1 / 3 * (21 - 11))
    # Over the full history b is not new at 9.0 or 11.0: no positive anywhere after day 2.
    assert not window_scores(table_of(observations, 1), t=7.0, w_weeks=1).positive.any()


def test_a_history_loaded_from_a_date_on_gives_the_same_windows() -> None:
    """Page indices and link floors count the full history; a table holding only the
    observations from some date on (indices starting above 0, floors pointing before it) gives
    the same results for windows that start on or after that date."""
    rng = np.random.default_rng(3)
    observations = random_history(rng, n_sites=8, horizon=90.0, max_pages=3, max_obs=18)
    full = table_of(observations, 8)
    keep = full.time >= 30.0
    recent = ObservationTable(
        site=full.site[keep],
        page=full.page[keep],
        time=full.time[keep],
        page_index=full.page_index[keep],
        link_floor=full.link_floor[keep],
        n_sites=8,
    )
    assert recent.page_index.min() > 0
    for t, w in ((44.0, 2), (51.0, 3), (60.5, 4), (90.0, 1)):
        # The posterior's prior from the same windows (by default it looks 12 weeks back).
        a = window_scores(full, t=t, w_weeks=w, prior_weeks=w)
        b = window_scores(recent, t=t, w_weeks=w, prior_weeks=w)
        for name in ("site", "rate", "tau", "probability", "instants", "first_update"):
            np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
        for model in RANKING_MODELS:
            np.testing.assert_array_equal(a.scores[model], b.scores[model])


@pytest.mark.parametrize("seed", range(8))
def test_the_engines_reading_of_rule_3_flags_what_is_window_update_flags(seed: int) -> None:
    """Rule 3 has one implementation, hacs.updates.is_window_update; the engine reads it as an
    interval (A, B] of window starts s (hacs.evaluation.table). In random windows [s, t] of
    random small tables, also ones loaded from a date on, both flag the same observations."""
    rng = np.random.default_rng(seed)
    observations = random_history(rng, n_sites=5, horizon=40.0, max_pages=3, max_obs=12)
    full = table_of(observations, 5, seed=seed)
    keep = full.time >= 10.0
    recent = ObservationTable(
        site=full.site[keep],
        page=full.page[keep],
        time=full.time[keep],
        page_index=full.page_index[keep],
        link_floor=full.link_floor[keep],
        n_sites=5,
    )
    bounds = np.arange(-0.5, 41.0, 0.25)  # on the observations' half-day grid and between it
    flagged = 0
    for table in (full, recent):
        for _ in range(60):
            s, t = np.sort(rng.choice(bounds, size=2))
            inside = (table.time >= s) & (table.time <= t)
            page, index = table.page[inside], table.page_index[inside]
            floor = table.link_floor[inside]
            by_interval = (table._update_after[inside] < s) & (s <= table._update_until[inside])
            np.testing.assert_array_equal(by_interval, window_update_flags(page, index, floor))
            first: dict[int, int] = {}
            for p, i in zip(page.tolist(), index.tolist(), strict=True):
                first[p] = min(first.get(p, i), i)
            firsts = [first[p] for p in page.tolist()]
            np.testing.assert_array_equal(by_interval, is_window_update(index, floor, firsts))
            flagged += int(by_interval.sum())
    assert flagged > 0  # not vacuous


# --------------------------------------------------------------------------------------------
# Input validation
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"site": [0, 0]}, "site must have one entry per observation|one entry"),
        ({"time": [1.0, float("nan"), 3.0]}, "time must be finite"),
        ({"time": [1.0, -2.0, 3.0]}, "must not be negative"),
        ({"site": [0, 0, -1]}, r"site\[2\] = -1 is below 0"),
        ({"page_index": [0, 2, 0]}, "consecutive"),
        ({"page_index": [0, 0, 0]}, "two observations with page_index 0"),
        ({"time": [2.0, 1.0, 3.0]}, "must follow time order"),
        ({"link_floor": [-1, 2, -1]}, "exceeds page_index"),
        ({"link_floor": [-2, 0, -1]}, "is below -1"),
        ({"page": [0, 1, 1], "page_index": [0, 0, 1]}, "belongs to two sites"),
        ({"page": [0.5, 0, 1]}, "page must hold integers"),
        ({"n_sites": 1}, "n_sites = 1 but site holds index 1"),
    ],
)
def test_bad_tables_are_rejected_with_a_clear_message(
    overrides: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        ObservationTable(**columns(**overrides))


def test_the_table_copies_and_freezes_its_arrays() -> None:
    time = np.array([1.0, 2.0, 3.0])
    table = ObservationTable(**columns(time=time))
    time[0] = 99.0
    assert table.time[0] == 1.0
    with pytest.raises(ValueError):
        table.time[0] = 5.0
    assert (table.size, table.site_count) == (3, 2)
