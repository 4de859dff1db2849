"""Progress reported one way: a report says what changed, and every state adds it up alike."""

from __future__ import annotations

import random

import pytest

from hacs.progress import FAILURES_KEPT, Progress, Tally, inside_units, progress_apply


def test_a_report_checks_what_it_says() -> None:
    with pytest.raises(ValueError, match="done"):
        Progress(done=-1)
    with pytest.raises(ValueError, match="fraction"):
        Progress(fraction=1.5)
    with pytest.raises(ValueError, match="names its item"):
        Progress(failure="HTTP 404")


def test_a_share_finishes_the_units_up_to_it_and_never_goes_back() -> None:
    state = Tally(total=100)
    for fraction, done in ((0.424, 42), (0.42, 42), (0.1, 42), (1.0, 100)):
        changed = Progress(fraction=fraction).against(state)
        if changed is not None:
            progress_apply(state, changed)
        assert state.done == done
    assert Progress(fraction=0.5).against(state) is None  # nothing new: nothing to write


def test_items_already_known_say_nothing_new() -> None:
    state = Tally(items=[3, 4])
    assert Progress(started=[4, 3]).against(state) is None
    changed = Progress(started=[4, 5]).against(state)
    assert changed is not None and list(changed.started) == [5]


def test_an_item_failing_is_listed_and_counted_and_a_late_end_clears_its_interruption() -> None:
    state = Tally(total=2)
    state.failures.append({"item": "a", "reason": "Interrupted", "interrupted": True})
    progress_apply(state, Progress(done=1, item="a", counts={"captures": 2}))
    progress_apply(state, Progress(done=1, item="b", failure="HTTP 404"))
    progress_apply(state, Progress(item="c", failure="refused"))  # listed, not a unit done
    progress_apply(state, Progress(notes={"database": "sqlite"}))
    assert state.done == 2 and state.item == "c"
    assert state.failures == [
        {"item": "b", "reason": "HTTP 404"},
        {"item": "c", "reason": "refused"},
    ]
    assert state.counts == {"captures": 2, "failed": 2, "database": "sqlite"}


def test_the_state_keeps_the_last_failures_and_counts_them_all() -> None:
    state = Tally()
    for n in range(FAILURES_KEPT + 3):
        progress_apply(state, Progress(item=f"site {n}", failure="HTTP 500"))
    assert len(state.failures) == FAILURES_KEPT and state.counts["failed"] == FAILURES_KEPT + 3
    assert state.failures[-1]["item"] == f"site {FAILURES_KEPT + 2}"


def test_reports_add_up_to_the_same_state_in_any_order() -> None:
    """Several threads and processes report to one record: done, counts, items and failures
    (as a set) must not depend on the order; checked against a plain sum on random reports."""
    rng = random.Random(7)
    for _ in range(50):
        reports = [
            Progress(
                done=rng.randint(0, 2),
                counts={name: rng.randint(0, 9) for name in rng.sample("abc", rng.randint(0, 3))},
                item=f"i{n}",
                failure="no" if rng.random() < 0.3 else "",
                started=rng.sample(range(10), rng.randint(0, 3)),
            )
            for n in range(rng.randint(1, 12))
        ]
        states = []
        for order in (reports, list(reversed(reports)), rng.sample(reports, len(reports))):
            state = Tally()
            for report in order:
                changed = report.against(state)
                if changed is not None:
                    progress_apply(state, changed)
            states.append(state)
        done = sum(r.done for r in reports)
        counts = {n: sum(r.counts.get(n, 0) for r in reports) for n in "abc"}
        counts = {n: v for n, v in counts.items() if any(n in r.counts for r in reports)}
        failed = sum(bool(r.failure) for r in reports)
        if failed:
            counts["failed"] = failed
        items = {i for r in reports for i in r.started}
        for state in states:
            assert state.done == done and state.counts == counts
            assert set(state.items) == items and len(state.items) == len(items)
            assert sorted(f["item"] for f in state.failures) == sorted(
                r.item for r in reports if r.failure
            )


def test_inside_units_passes_on_the_work_inside_a_file_but_not_its_end() -> None:
    told: list[Progress] = []
    report = inside_units(told.append)
    report(Progress(started=[1], counts={"bytes read": 10}))
    report(Progress(done=1, item="crawl.warc.gz", counts={"sites": 1}))
    assert told == [Progress(started=[1], counts={"bytes read": 10})]
