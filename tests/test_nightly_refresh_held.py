"""Both readings of the new captures a nightly refresh holds (``bench.held_captures``)."""

from __future__ import annotations

import math

from bench.held_captures import HeldCaptures

KINDS = ("grouped", "personal")


def _captures() -> HeldCaptures:
    held = HeldCaptures(lambda urlkey: "grouped" if urlkey.startswith("edu") else "personal")
    held.index(1, [("edu,a)/", "20180601"), ("org,b)/", "20180601")])
    held.index(3, [("edu,a)/", "20180602"), ("org,b)/", "20180601")])  # the second again
    held.index(5, [("org,b)/", "20180603")])
    return held


def test_on_a_night_only_what_the_archive_indexed_by_then_counts() -> None:
    held = _captures()
    have = {("edu,a)/", "20180601"), ("org,b)/", "20180603")}
    night_1 = held.on_night(have, 1, KINDS)
    assert night_1["all"] == 0.5 and night_1["grouped"] == 1.0 and night_1["personal"] == 0.0
    night_5 = held.on_night(have, 5, KINDS)
    assert night_5["all"] == 2 / 4 and night_5["lone"] == 1 / 2  # org,b indexed on night 1 kept


def test_after_visible_counts_each_capture_from_the_night_it_was_indexed() -> None:
    held = _captures()
    held_at = {("edu,a)/", "20180601"): 1, ("edu,a)/", "20180602"): 5, ("org,b)/", "20180603"): 5}
    after_1 = held.after_visible(held_at, 1, 5, KINDS)
    # Indexed on nights 1, 1, 3, 5; held the night they became visible: the first and the last.
    assert after_1["all"] == 2 / 4
    after_3 = held.after_visible(held_at, 3, 5, KINDS)
    # Only captures indexed by night 3 had three refreshes: edu,a of night 3 held on night 5.
    assert after_3["all"] == 2 / 3 and after_3["grouped"] == 1.0 and after_3["personal"] == 0.0
    assert math.isnan(held.after_visible(held_at, 6, 5, KINDS)["all"])  # none had six nights
