"""hacs.updates: DESIGN rules 1 (classify), 3 (link floors, window updates) and 4 (timelines).

Each rule is checked on hand-worked cases and against the slow, literal readings of
``tests/reference.py`` (set arithmetic for rule 3, Python's ``sorted`` for rule 4).
"""

from __future__ import annotations

import random
from datetime import UTC, datetime

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hacs.formats.cdx import CdxRecord
from hacs.updates import (
    OBSERVATION_KINDS,
    CaptureKind,
    classify,
    is_window_update,
    link_floors,
    new_link_counts,
    timeline_order,
    window_update_flags,
)
from tests.reference import slow_classify, slow_window_updates

# --- Rule 1: classify ----------------------------------------------------------------------


def rec(
    day: int,
    *,
    key: str = "edu,example)/~ada",
    mime: str = "text/html",
    status: int | None = 200,
    digest: str = "AAAA",
    second: int = 0,
) -> CdxRecord:
    return CdxRecord(
        urlkey=key,
        timestamp=datetime(2015, 1, day, 12, 0, second, tzinfo=UTC),
        original="http://example.edu/" + key.partition(")/")[2],
        mimetype=mime,
        status=status,
        digest=digest,
        length=100,
    )


def rev(day: int, *, digest: str, key: str = "edu,example)/~ada") -> CdxRecord:
    """An IA-style revisit row: warc/revisit, status '-'."""
    return rec(day, key=key, mime="warc/revisit", status=None, digest=digest)


K = CaptureKind


def test_a_200_html_capture_is_an_observation() -> None:
    assert classify([rec(1)]) == [K.OBSERVATION]
    assert classify([rec(1, mime="text/html; charset=UTF-8")]) == [K.OBSERVATION]
    assert classify([rec(1, mime="application/xhtml+xml")]) == [K.OBSERVATION]
    assert classify([rec(1, mime="TEXT/HTML")]) == [K.OBSERVATION]


def test_a_revisit_of_an_earlier_html_capture_is_an_observation() -> None:
    kinds = classify([rec(1, digest="AAAA"), rev(2, digest="AAAA")])
    assert kinds == [K.OBSERVATION, K.REVISIT]
    assert set(kinds) <= OBSERVATION_KINDS


def test_it_skips_revisits_without_original() -> None:
    kinds = classify(
        [
            rec(1, digest="AAAA"),
            rev(2, digest="BBBB"),
            rev(3, digest="CCCC"),
            rec(4, digest="CCCC"),  # the original comes later: too late
        ]
    )
    assert kinds == [K.OBSERVATION, K.REVISIT_ORPHAN, K.REVISIT_ORPHAN, K.OBSERVATION]
    assert K.REVISIT_ORPHAN not in OBSERVATION_KINDS


def test_a_revisit_only_matches_html_captures_of_its_own_url() -> None:
    kinds = classify(
        [
            rec(1, key="edu,example)/~ada/other", digest="AAAA"),
            rev(2, digest="AAAA"),
            rec(3, digest="RRRR", status=301, mime="unk"),
            rev(4, digest="RRRR"),
            rec(5, digest="PPPP", mime="application/pdf"),
            rev(6, digest="PPPP"),
            rec(7, digest="-"),
            rev(8, digest="-"),
        ]
    )
    assert kinds == [
        K.OBSERVATION,
        K.REVISIT_ORPHAN,
        K.REDIRECT,
        K.REVISIT_ORPHAN,
        K.NON_HTML,
        K.REVISIT_ORPHAN,
        K.OBSERVATION,
        K.REVISIT_ORPHAN,
    ]


def test_a_pywb_revisit_with_a_status_is_read_by_that_status() -> None:
    kinds = classify(
        [
            rec(1, digest="AAAA"),
            rec(2, digest="AAAA", mime="warc/revisit", status=200),
            rec(3, digest="RRRR", mime="warc/revisit", status=302),
            rec(4, digest="EEEE", mime="warc/revisit", status=404),
        ]
    )
    assert kinds == [K.OBSERVATION, K.REVISIT, K.REDIRECT, K.ERROR]


def test_redirects_errors_and_other_types_are_not_observations() -> None:
    kinds = classify(
        [
            rec(1, status=301),
            rec(2, status=302, mime="unk"),
            rec(3, status=404),
            rec(4, status=503),
            rec(5, status=204),
            rec(6, mime="application/pdf"),
            rec(7, mime="text/plain"),
            rec(8, mime="-"),
        ]
    )
    assert kinds == [
        K.REDIRECT,
        K.REDIRECT,
        K.ERROR,
        K.ERROR,
        K.ERROR,
        K.NON_HTML,
        K.NON_HTML,
        K.NON_HTML,
    ]
    assert not set(kinds) & OBSERVATION_KINDS


def test_repeated_url_and_timestamp_rows_are_duplicates_after_the_first() -> None:
    kinds = classify(
        [
            rec(1, status=301),
            rec(1, digest="BBBB"),  # same second as the redirect: the first row wins
            rec(2),
            rec(2),
            rec(2, key="edu,example)/~ada/pubs"),  # another page at the same time is fine
        ]
    )
    assert kinds == [K.REDIRECT, K.DUPLICATE, K.OBSERVATION, K.DUPLICATE, K.OBSERVATION]


def test_it_classifies_the_same_whatever_the_input_order() -> None:
    records = [
        rev(3, digest="AAAA"),
        rec(1, key="edu,example)/~ada/pubs", digest="AAAA"),
        rec(2, digest="AAAA"),
        rev(4, key="edu,example)/~ada/pubs", digest="AAAA"),
        rec(1, digest="ZZZZ", status=404),
    ]
    by_time = sorted(records, key=lambda r: r.timestamp)
    by_key = sorted(records, key=lambda r: (r.urlkey, r.timestamp))
    expected = dict(zip(records, classify(records), strict=True))
    for ordering in (by_time, by_key, list(reversed(by_key))):
        assert dict(zip(ordering, classify(ordering), strict=True)) == expected
    assert expected[records[0]] is K.REVISIT
    assert expected[records[3]] is K.REVISIT


_records = st.lists(
    st.builds(
        rec,
        st.integers(1, 6),
        key=st.sampled_from(["edu,example)/~ada", "edu,example)/~ada/pubs"]),
        mime=st.sampled_from(["text/html", "warc/revisit", "application/pdf", "unk"]),
        status=st.sampled_from([200, 200, None, 301, 404]),
        digest=st.sampled_from(["AAAA", "BBBB", "-"]),
        second=st.integers(0, 1),
    ),
    max_size=14,
)


@settings(max_examples=300, suppress_health_check=list(HealthCheck), deadline=None)
@given(_records)
def test_classify_agrees_with_a_literal_reading_of_rule_1(records: list[CdxRecord]) -> None:
    assert classify(records) == slow_classify(records)
    shuffled = records[:]
    random.Random(len(records)).shuffle(shuffled)
    assert classify(shuffled) == slow_classify(shuffled)


def test_classify_takes_any_iterable() -> None:
    assert classify(iter([rec(1), rec(2)])) == [K.OBSERVATION, K.OBSERVATION]
    assert classify([]) == []


# --- Rule 3: link floors and window updates ------------------------------------------------

PAGE = [{"a", "b"}, {"a"}, {"a", "b", "c"}, set(), {"b"}, {"d", "a"}]


def window(link_sets: list[set[str]], first: int, stop: int | None = None) -> list[bool]:
    """Rule 3 by :func:`is_window_update` for observations ``first…stop-1`` of one page."""
    floors = link_floors(link_sets)
    stop = len(link_sets) if stop is None else stop
    index = np.arange(first, stop)
    return is_window_update(index, floors[first:stop], first).tolist()


def test_link_floors_by_hand() -> None:
    # 0: both new; 1: a last held by 0; 2: c is new; 3: no links; 4: b last held by 2;
    # 5: d is new.
    np.testing.assert_array_equal(link_floors(PAGE), [-1, 0, -1, 3, 2, -1])
    assert link_floors(PAGE).dtype == np.int64
    assert link_floors([]).shape == (0,)


def test_window_updates_by_hand() -> None:
    assert window(PAGE, 0) == [False, False, True, False, False, True]
    assert window(PAGE, 1) == [False, True, False, False, True]
    assert window(PAGE, 1, 4) == [False, True, False]
    assert window(PAGE, 6) == []


def test_is_window_update_broadcasts_over_every_window_at_once() -> None:
    floors = link_floors(PAGE)
    index = np.arange(len(PAGE))
    table = is_window_update(index, floors, index[:, np.newaxis])  # row j: window from j
    assert table.shape == (6, 6) and table.dtype == np.bool_
    assert table[0].tolist() == [False, False, True, False, False, True]
    assert table[1].tolist() == [False, False, True, False, False, True]
    assert not np.tril(table).any()  # nothing at or before the window's first observation


def test_removing_a_link_is_not_an_update() -> None:
    assert window([{"a", "b"}, {"a"}], 0) == [False, False]


def test_re_adding_a_link_is_an_update_only_when_the_window_never_held_it() -> None:
    pages = [{"a"}, {"b"}, {"a"}]
    np.testing.assert_array_equal(link_floors(pages), [-1, -1, 0])
    # Window from 0: "a" was held at 0, so its return at 2 is not an update.
    assert window(pages, 0) == [False, True, False]
    # Window from 1: the window never held "a", so its return at 2 is one.
    assert window(pages, 1) == [False, True]


def test_the_first_observation_of_a_window_is_the_baseline() -> None:
    pages = [{"a"}, {"b"}, {"c"}]
    for start in range(3):
        assert window(pages, start)[0] is False


def test_an_observation_without_links_is_never_an_update() -> None:
    floors = link_floors([{"a"}, set(), set()])
    np.testing.assert_array_equal(floors, [-1, 1, 2])
    assert not is_window_update([1, 2], floors[1:], [0, 0]).any()


def test_window_update_flags_start_each_pages_window_at_its_first_observation_there() -> None:
    # Page 0 is PAGE seen from its observation 1 on; page 1 holds {"x"}, {"x", "y"}, {"y"},
    # seen from its observation 0; page 2 (PAGE again) only at its observation 2. The rows
    # come in any order.
    floors = link_floors(PAGE)
    other = link_floors([{"x"}, {"x", "y"}, {"y"}])
    rows = [  # (page, page_index, floor, expected)
        (1, 2, other[2], False),
        (0, 4, floors[4], False),  # "b" was held by observation 2, in the window
        (2, 2, floors[2], False),  # the only observation of page 2 here: its baseline
        (0, 1, floors[1], False),
        (1, 0, other[0], False),
        (0, 2, floors[2], True),
        (1, 1, other[1], True),
        (0, 5, floors[5], True),
    ]
    page, index, floor, expected = (list(column) for column in zip(*rows, strict=True))
    assert window_update_flags(page, index, floor).tolist() == expected


def test_window_update_flags_with_no_observations() -> None:
    flags = window_update_flags([], [], [])
    assert flags.shape == (0,) and flags.dtype == np.bool_


def test_new_link_counts_over_the_full_history() -> None:
    counts = new_link_counts([{"a", "b"}, {"a"}, {"a", "c", "d"}, set(), {"b", "e"}, {"c"}])
    np.testing.assert_array_equal(counts, [2, 0, 2, 0, 1, 0])


link_sets = st.lists(st.frozensets(st.sampled_from("abcdefg"), max_size=4), max_size=14)


@settings(max_examples=200, deadline=None)
@given(pages=link_sets)
def test_is_window_update_agrees_with_set_arithmetic_in_every_window(
    pages: list[frozenset[str]],
) -> None:
    floors = link_floors(pages)
    index = np.arange(len(pages))
    for start in range(len(pages) + 1):
        expected = slow_window_updates(pages, start)
        assert is_window_update(index[start:], floors[start:], start).tolist() == expected


@st.composite
def windows(draw: st.DrawFn) -> tuple[list[list[frozenset[str]]], list[tuple[int, int]]]:
    """A few pages' link sets over their full history, and a window [first, stop) in each."""
    pages = draw(st.lists(link_sets, max_size=5))
    bounds = []
    for links in pages:
        first = draw(st.integers(0, len(links)))
        bounds.append((first, draw(st.integers(first, len(links)))))
    return pages, bounds


def window_rows(
    pages: list[list[frozenset[str]]], bounds: list[tuple[int, int]]
) -> tuple[list[int], list[int], list[int], list[bool]]:
    """Each page's observations in its window as rows (page, page_index, floor), with the
    flags that :func:`slow_window_updates` gives them."""
    page, index, floor, expected = [], [], [], []
    for p, (links, (first, stop)) in enumerate(zip(pages, bounds, strict=True)):
        floors = link_floors(links).tolist()
        flags = slow_window_updates(links[:stop], first)
        for i in range(first, stop):
            page.append(p)
            index.append(i)
            floor.append(floors[i])
            expected.append(flags[i - first])
    return page, index, floor, expected


@settings(max_examples=200, deadline=None)
@given(case=windows(), seed=st.integers(0, 2**32 - 1))
def test_window_update_flags_agree_with_set_arithmetic(
    case: tuple[list[list[frozenset[str]]], list[tuple[int, int]]], seed: int
) -> None:
    page, index, floor, expected = window_rows(*case)
    shuffle = list(range(len(page)))
    random.Random(seed).shuffle(shuffle)  # rows of many pages, in any order
    flags = window_update_flags(
        [page[k] for k in shuffle], [index[k] for k in shuffle], [floor[k] for k in shuffle]
    )
    assert flags.tolist() == [expected[k] for k in shuffle]


def test_window_update_flags_agree_with_set_arithmetic_on_a_large_random_collection() -> None:
    rng = random.Random(3)
    vocabulary = [f"http://a.edu/~x/{k}" for k in range(30)]
    pages, bounds = [], []
    for _ in range(300):
        size = rng.randrange(0, 40)
        links: list[frozenset[str]] = []
        for _ in range(size):  # mostly the previous page with a few links added or dropped
            held = set(links[-1]) if links else set(rng.sample(vocabulary, 5))
            held ^= set(rng.sample(vocabulary, rng.choice([0, 0, 1, 2])))
            links.append(frozenset(held))
        pages.append(links)
        first = rng.randrange(0, size + 1)
        bounds.append((first, rng.randrange(first, size + 1)))
    page, index, floor, expected = window_rows(pages, bounds)
    order = list(range(len(page)))
    rng.shuffle(order)
    flags = window_update_flags(
        np.array(page)[order], np.array(index)[order], np.array(floor)[order]
    )
    assert flags.tolist() == [expected[k] for k in order]
    assert 0 < sum(expected) < len(expected)


@settings(max_examples=200, deadline=None)
@given(pages=link_sets)
def test_new_link_counts_agree_with_set_arithmetic(pages: list[frozenset[str]]) -> None:
    expected = [len(links - set().union(*pages[:i])) for i, links in enumerate(pages)]
    assert new_link_counts(pages).tolist() == expected
    # Over the full history a link is new exactly when its floor is -1.
    floors = link_floors(pages)
    assert [(f == -1) for f in floors.tolist()] == [c > 0 for c in expected]


# --- Rule 4: timelines ---------------------------------------------------------------------


def test_timeline_order_merges_pages_in_time_order_keeping_each_pages_flags() -> None:
    # Page 0 at 0, 10 (an update) and 30; page 1 at 5 and 10. Ties in time go by page.
    page = [0, 0, 0, 1, 1]
    times = [0.0, 10.0, 30.0, 5.0, 10.0]
    flags = np.array([False, True, False, False, False])
    order = timeline_order([0] * 5, times, page, [0, 1, 2, 0, 1])
    np.testing.assert_array_equal(np.asarray(times)[order], [0.0, 5.0, 10.0, 10.0, 30.0])
    # Page 0's update at 10 comes before page 1's observation at 10.
    np.testing.assert_array_equal(flags[order], [False, False, True, False, False])


def test_timeline_order_groups_by_site_first() -> None:
    order = timeline_order([1, 0, 1, 0], [1.0, 9.0, 0.0, 2.0])
    np.testing.assert_array_equal(order, [3, 1, 2, 0])


def test_timeline_order_without_ties_keeps_the_input_order_of_equal_keys() -> None:
    np.testing.assert_array_equal(timeline_order([0, 0, 0], [5.0, 5.0, 1.0]), [2, 0, 1])
    assert timeline_order([], []).shape == (0,)


@settings(max_examples=200, deadline=None)
@given(
    rows=st.lists(
        st.tuples(st.integers(0, 3), st.integers(0, 20), st.integers(0, 3), st.integers(0, 3)),
        max_size=30,
    )
)
def test_timeline_order_is_pythons_stable_sort(rows: list[tuple[int, int, int, int]]) -> None:
    site, time, page, index = ([row[c] for row in rows] for c in range(4))
    times = [float(t) / 4 for t in time]  # plenty of ties
    expected = sorted(range(len(rows)), key=lambda k: (site[k], times[k], page[k], index[k]))
    assert timeline_order(site, times, page, index).tolist() == expected
    by_time = sorted(range(len(rows)), key=lambda k: (site[k], times[k]))
    assert timeline_order(site, times).tolist() == by_time


def test_timeline_order_agrees_with_sorted_on_a_large_random_collection() -> None:
    rng = np.random.default_rng(5)
    size = 20_000
    site = rng.integers(0, 500, size)
    time = rng.integers(0, 400, size) * 0.25
    page = rng.integers(0, 8, size)
    index = rng.integers(0, 50, size)
    keys = list(zip(site.tolist(), time.tolist(), page.tolist(), index.tolist(), strict=True))
    expected = sorted(range(size), key=keys.__getitem__)
    assert timeline_order(site, time, page, index).tolist() == expected
