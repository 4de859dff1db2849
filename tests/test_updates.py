"""Tests for hacs.updates: link floors against set arithmetic straight from rule 3."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hacs.updates import link_floors, merge_timelines, new_link_counts, window_updates


def reference_window_updates(link_sets: list[frozenset[str]], start: int) -> list[bool]:
    """DESIGN.md rule 3 as set arithmetic: a link no earlier observation in the window held."""
    flags = []
    for i in range(start, len(link_sets)):
        held: set[str] = set()
        for k in range(start, i):
            held |= link_sets[k]
        flags.append(i > start and bool(link_sets[i] - held))
    return flags


def test_link_floors_by_hand() -> None:
    pages = [
        {"a", "b"},  # 0: both new
        {"a"},  # 1: a last held by 0
        {"a", "b", "c"},  # 2: c is new
        set(),  # 3: no links
        {"b"},  # 4: b last held by 2
        {"d", "a"},  # 5: d is new
    ]
    np.testing.assert_array_equal(link_floors(pages), [-1, 0, -1, 3, 2, -1])
    assert link_floors(pages).dtype == np.int64
    assert link_floors([]).shape == (0,)


def test_window_updates_by_hand() -> None:
    floors = link_floors([{"a", "b"}, {"a"}, {"a", "b", "c"}, set(), {"b"}, {"d", "a"}])
    np.testing.assert_array_equal(window_updates(floors, 0), [0, 0, 1, 0, 0, 1])
    np.testing.assert_array_equal(window_updates(floors, 1), [0, 1, 0, 0, 1])
    np.testing.assert_array_equal(window_updates(floors, 1, 4), [0, 1, 0])
    assert window_updates(floors, 6).shape == (0,)


def test_removing_a_link_is_not_an_update() -> None:
    floors = link_floors([{"a", "b"}, {"a"}])
    np.testing.assert_array_equal(window_updates(floors, 0), [False, False])


def test_re_adding_a_link_is_an_update_only_when_the_window_never_held_it() -> None:
    floors = link_floors([{"a"}, {"b"}, {"a"}])
    np.testing.assert_array_equal(floors, [-1, -1, 0])
    # Window from 0: "a" was held at 0, so its return at 2 is not an update.
    np.testing.assert_array_equal(window_updates(floors, 0), [False, True, False])
    # Window from 1: the window never held "a", so its return at 2 is one.
    np.testing.assert_array_equal(window_updates(floors, 1), [False, True])


def test_the_first_observation_of_a_window_is_the_baseline() -> None:
    floors = link_floors([{"a"}, {"b"}, {"c"}])
    for start in range(3):
        assert not window_updates(floors, start)[0]


def test_window_updates_rejects_bad_bounds() -> None:
    with pytest.raises(ValueError, match=r"need 0 <= start <= stop <= len\(floors\) = 2"):
        window_updates([-1, 0], 3)
    with pytest.raises(ValueError, match=r"got start=1, stop=0"):
        window_updates([-1, 0], 1, 0)
    with pytest.raises(ValueError, match=r"floors must be a one-dimensional array of integers"):
        window_updates([0.5, 1.0], 0)


def test_new_link_counts_over_the_full_history() -> None:
    counts = new_link_counts([{"a", "b"}, {"a"}, {"a", "c", "d"}, set(), {"b", "e"}, {"c"}])
    np.testing.assert_array_equal(counts, [2, 0, 2, 0, 1, 0])


def test_merge_timelines_keeps_each_pages_flags_in_time_order() -> None:
    times, flags = merge_timelines(
        [[0.0, 10.0, 30.0], [5.0, 10.0], []],
        [[False, True, False], [False, False], []],
    )
    np.testing.assert_array_equal(times, [0.0, 5.0, 10.0, 10.0, 30.0])
    # Ties keep the page order: page 0's update at 10 comes before page 1's observation.
    np.testing.assert_array_equal(flags, [False, False, True, False, False])
    assert flags.dtype == np.bool_


def test_merge_timelines_with_no_pages() -> None:
    times, flags = merge_timelines([], [])
    assert times.shape == flags.shape == (0,)


@pytest.mark.parametrize(
    ("times", "flags", "message"),
    [
        ([[0.0, 1.0]], [[False]], r"page 0: times and flags must be one-dimensional and of"),
        ([[0.0], [2.0, 1.0]], [[False], [False, False]], r"page 1: times must be sorted"),
        ([[0.0, float("nan")]], [[False, False]], r"page 0: times must be finite"),
        ([[0.0, 1.0]], [[0, 3]], r"page 0: flags must be booleans"),
        ([[0.0]], [], r"one entry per page; got 1 and 0"),
    ],
)
def test_merge_timelines_rejects_bad_pages(
    times: list[list[float]], flags: list[list[object]], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        merge_timelines(times, flags)  # type: ignore[arg-type]


link_sets = st.lists(st.frozensets(st.sampled_from("abcdefg"), max_size=4), max_size=14)


@settings(max_examples=200, deadline=None)
@given(pages=link_sets)
def test_link_floors_agree_with_set_arithmetic_in_every_window(
    pages: list[frozenset[str]],
) -> None:
    floors = link_floors(pages)
    for start in range(len(pages) + 1):
        expected = reference_window_updates(pages, start)
        assert window_updates(floors, start).tolist() == expected


@settings(max_examples=200, deadline=None)
@given(pages=link_sets)
def test_new_link_counts_agree_with_set_arithmetic(pages: list[frozenset[str]]) -> None:
    expected = [len(links - set().union(*pages[:i])) for i, links in enumerate(pages)]
    assert new_link_counts(pages).tolist() == expected
    # Over the full history a link is new exactly when its floor is -1.
    floors = link_floors(pages)
    assert [(f == -1) for f in floors.tolist()] == [c > 0 for c in expected]


@settings(max_examples=100, deadline=None)
@given(
    pages=st.lists(
        st.lists(st.tuples(st.integers(0, 20), st.booleans()), max_size=6).map(sorted),
        max_size=4,
    )
)
def test_merge_timelines_is_a_stable_sort(pages: list[list[tuple[int, bool]]]) -> None:
    times, flags = merge_timelines(
        [[float(t) for t, _ in page] for page in pages], [[f for _, f in page] for page in pages]
    )
    expected = sorted(
        ((t, p, k, f) for p, page in enumerate(pages) for k, (t, f) in enumerate(page)),
        key=lambda row: (row[0], row[1], row[2]),
    )
    assert times.tolist() == [float(row[0]) for row in expected]
    assert flags.tolist() == [row[3] for row in expected]
