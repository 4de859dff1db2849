"""Slow, obviously correct readings of DESIGN.md's method rules, used only by the tests.

Each function here follows the text of DESIGN.md ("Method", rules 3, 5 and 6, and our reading
of zero-length intervals in ``hacs.estimators``) one step at a time, in plain Python lists,
sets and ``math``: no NumPy arrays, no vectorisation, no link floors, no sorting tricks. They
share nothing with ``hacs`` but its vocabulary (``CdxRecord``, ``CaptureKind``) and the MIME-type
test of ``hacs.formats.cdx``. The fast code in ``hacs`` is tested by agreeing with these
(STYLE.md, "Tests": "an independent slow implementation to compare against").
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from itertools import pairwise

from hacs.formats.cdx import CdxRecord, is_html_type
from hacs.updates import CaptureKind

__all__ = [
    "SlowEstimate",
    "slow_accesses",
    "slow_classify",
    "slow_estimate",
    "slow_midpoints",
    "slow_mle",
    "slow_window_updates",
]


@dataclass(frozen=True)
class SlowEstimate:
    """What :func:`slow_estimate` finds for one timeline (NaN rate and τ when unknown)."""

    rate: float
    tau: float
    observations: int
    updates: int


def slow_mle(changed: Sequence[float], unchanged: Sequence[float]) -> float:
    """DESIGN.md rule 5 written plainly, with Eq. 5 solved by bisection to adjacent floats.

    n = 0: unknown (NaN); m = 0: 0; m = n: Eq. 4, λ = r·f with r = −log((n−m+0.5)/(n+0.5)) and
    f = n / (total observed time); otherwise the root of Σ t_c/(exp(λ t_c) − 1) = Σ t_u.
    """
    n, m = len(changed) + len(unchanged), len(changed)
    if n == 0:
        return math.nan
    if m == 0:
        return 0.0
    if m == n:
        return -math.log((n - m + 0.5) / (n + 0.5)) * n / math.fsum(changed)
    s = math.fsum(unchanged)

    def f(lam: float) -> float:  # decreasing in λ, from +∞ to −S
        return math.fsum(t / math.expm1(lam * t) if lam * t < 700 else 0.0 for t in changed) - s

    lo = hi = 1.0
    while f(lo) < 0:
        lo /= 2
    while f(hi) > 0:
        hi *= 2
    for _ in range(3000):
        mid = (lo + hi) / 2
        if mid in (lo, hi):
            break
        if f(mid) > 0:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def slow_accesses(
    times: Sequence[float], updated: Sequence[bool]
) -> tuple[list[float], list[bool]]:
    """One timeline's observations as accesses: observations at one instant are one access, an
    update if any of them is; the first access is the baseline and never an update.

    ``times`` sorted ascending. Returns the accesses' instants and update flags.
    """
    instants: list[float] = []
    changed: list[bool] = []
    for time, flag in zip(times, updated, strict=True):
        if instants and time == instants[-1]:
            changed[-1] = changed[-1] or bool(flag)
        else:
            instants.append(float(time))
            changed.append(bool(flag))
    if changed:
        changed[0] = False
    return instants, changed


def slow_midpoints(instants: Sequence[float], changed: Sequence[bool]) -> list[float]:
    """DESIGN.md rule 6: each update access moves to the midpoint with the access before it."""
    return [
        (instants[k - 1] + instants[k]) / 2 if changed[k] and k > 0 else instants[k]
        for k in range(len(instants))
    ]


def slow_estimate(
    times: Sequence[float], updated: Sequence[bool], method: str = "observed"
) -> SlowEstimate:
    """λ and τ of one timeline by DESIGN.md rules 5 and 6, the way ``hacs`` computed it before
    ``estimate`` became a wrapper over ``estimate_many`` (a scalar loop over one timeline).

    Observed: intervals between consecutive accesses, changed when the closing access is an
    update. Interpolated: the updates move to their midpoints and the events are merged into
    accesses again (a midpoint of two adjacent floats may round onto its left neighbour).
    τ: the last update (its midpoint when interpolated), else the first observation.
    """
    if method not in ("observed", "interpolated"):
        raise ValueError(f"unknown method {method!r}")
    observations = len(times)
    updates = sum(bool(flag) for flag in updated)
    if observations == 0:
        return SlowEstimate(math.nan, math.nan, 0, 0)
    instants, changed = slow_accesses(times, updated)
    if method == "interpolated":
        instants, changed = slow_accesses(slow_midpoints(instants, changed), changed)
    closing = list(zip(pairwise(instants), changed[1:], strict=True))
    rate = slow_mle(
        [b - a for (a, b), flag in closing if flag], [b - a for (a, b), flag in closing if not flag]
    )
    tau = instants[0]
    for instant, flag in zip(instants, changed, strict=True):
        if flag:
            tau = instant
    return SlowEstimate(rate, tau, observations, updates)


def slow_window_updates(
    link_sets_in_time_order: Sequence[AbstractSet[str]], first_index: int
) -> list[bool]:
    """DESIGN.md rule 3 by set arithmetic, for a window whose first observation of the page is
    ``first_index``: the flags of observations ``first_index, first_index + 1, …``.

    An observation is an update when it holds a link that no earlier observation in the window
    held; the window's first observation is the baseline and never an update.
    """
    flags = []
    for i in range(first_index, len(link_sets_in_time_order)):
        held: set[str] = set()
        for k in range(first_index, i):
            held |= link_sets_in_time_order[k]
        flags.append(i > first_index and bool(link_sets_in_time_order[i] - held))
    return flags


def slow_classify(records: Sequence[CdxRecord]) -> list[CaptureKind]:
    """DESIGN.md rule 1 read literally, one record at a time, looking at every other record.

    A repeated (urlkey, timestamp) row after the first is a duplicate; a revisit (IA style:
    status '-'; pywb style: ``warc/revisit`` with status 200) is an observation when a
    strictly earlier 200 HTML capture of the same urlkey, itself no duplicate, has its digest;
    other rows are read by status, then by type.
    """
    kinds = []
    for i, r in enumerate(records):
        if any(o.urlkey == r.urlkey and o.timestamp == r.timestamp for o in records[:i]):
            kinds.append(CaptureKind.DUPLICATE)
            continue

        def first_at(o: CdxRecord) -> bool:
            return all(
                not (p.urlkey == o.urlkey and p.timestamp == o.timestamp) or p is o
                for p in records[: records.index(o)]
            )

        if (r.mimetype == "warc/revisit" or r.status is None) and r.status in (None, 200):
            original = any(
                o.urlkey == r.urlkey
                and o.timestamp < r.timestamp
                and o.status == 200
                and is_html_type(o.mimetype)
                and o.mimetype != "warc/revisit"
                and o.digest == r.digest
                and r.digest != "-"
                and first_at(o)
                for o in records
            )
            kinds.append(CaptureKind.REVISIT if original else CaptureKind.REVISIT_ORPHAN)
        elif r.status is not None and 300 <= r.status < 400:
            kinds.append(CaptureKind.REDIRECT)
        elif r.status != 200:
            kinds.append(CaptureKind.ERROR)
        elif not is_html_type(r.mimetype):
            kinds.append(CaptureKind.NON_HTML)
        else:
            kinds.append(CaptureKind.OBSERVATION)
    return kinds


def slow_window_timeline(
    pages: Sequence[Sequence[tuple[float, AbstractSet[str]]]], start: float, end: float
) -> tuple[list[float], list[bool]]:
    """One site's timeline in the window [start, end] by DESIGN.md rules 3 and 4, by set
    arithmetic: each page's observations (given in the page's time order as (time, links)) that
    fall in the window, each an update when it holds a link that no earlier observation of the
    page *in the window* held (the page's first one there is the baseline), merged in time order
    (ties in any order: observations at one instant are one access)."""
    merged: list[tuple[float, bool]] = []
    for page in pages:
        inside = [links for time, links in page if start <= time <= end]
        times = [time for time, _ in page if start <= time <= end]
        flags = slow_window_updates(inside, 0)
        merged.extend(zip(times, flags, strict=True))
    merged.sort(key=lambda item: item[0])
    return [time for time, _ in merged], [flag for _, flag in merged]
