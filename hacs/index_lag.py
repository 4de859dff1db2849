"""How late the archive indexes its captures, measured from the captures a refresh finds.

A refresh asks the archive ``from`` the newest capture its last answer held (its *anchor*) less a
margin, because the archive indexes some captures days after it made them. A capture that a
refresh finds, made before the anchor of the answer before, was not in that answer although it
was asked for: the archive indexed it late, and ``anchor − its time`` is the margin that answer
needed. Such margins, counted per whole day (:func:`add_margins`), give the margin a host's
queries need (:func:`index_lag`): the smallest that held ``quantile`` of them, a day more.

A margin narrower than the configured longest lag reads fewer rows on every query and misses
the rare capture indexed later still, so the caller asks each group with the longest lag now
and then (``archive.archive_import``: once every 30 days), which finds those captures and keeps
their margins in the counts: the measurement sees the tail it is cut at.

Pure (stdlib only).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

__all__ = ["FORGET_AFTER", "add_margins", "host_lag", "index_lag", "late_margins"]

#: When a host's counts pass this many late captures, every count is halved: old evidence fades,
#: so the margin follows an archive whose indexing speeds up or slows down.
FORGET_AFTER = 20_000


def late_margins(times: Iterable[float], anchor: float) -> list[float]:
    """The margins (days) that the captures found at ``times`` needed: ``anchor − t`` for each
    made before ``anchor``, the newest capture of the answer before (days; later ones say
    nothing about lateness)."""
    check_finite("anchor", anchor)
    margins = []
    for t in times:
        check_finite("a capture time", t)
        if t < anchor:
            margins.append(anchor - t)
    return margins


def add_margins(counts: Sequence[int], margins: Iterable[float], *, days: int) -> list[int]:
    """``counts`` (late captures per whole day of margin, ``days`` buckets, the last holding
    every longer margin) with ``margins`` added; halved when they pass :data:`FORGET_AFTER`."""
    if days < 1:
        raise ValueError(f"days must be ≥ 1; got {days}")
    merged = [int(n) for n in counts[:days]] + [0] * max(0, days - len(counts))
    if any(n < 0 for n in merged):
        raise ValueError("counts must be ≥ 0")
    for margin in margins:
        if not (math.isfinite(margin) and margin >= 0):
            raise ValueError(f"a margin must be a finite number of days ≥ 0; got {margin}")
        merged[min(days - 1, int(margin))] += 1
    if sum(merged) > FORGET_AFTER:
        merged = [n // 2 for n in merged]
    return merged


def index_lag(
    counts: Sequence[int],
    *,
    cap: float,
    quantile: float = 0.99,
    least: int = 100,
    slack: float = 1.0,
) -> float | None:
    """The margin (days) that held ``quantile`` of the late captures counted: the upper end of
    the day holding that quantile, plus ``slack``, at most ``cap``; None with fewer than
    ``least`` captures (too little evidence: the caller uses another count or the cap)."""
    check_positive("cap", cap)
    if not 0 < quantile <= 1:
        raise ValueError(f"quantile must lie in (0, 1]; got {quantile}")
    total = sum(counts)
    if total < max(1, least):
        return None
    needed = quantile * total
    running = 0
    for day, n in enumerate(counts):
        running += n
        if running >= needed - 1e-9:
            return min(cap, day + 1 + slack)
    return cap


def host_lag(
    own: Sequence[int],
    pooled: Sequence[int],
    *,
    cap: float,
    quantile: float = 0.99,
    least: int = 100,
) -> float:
    """A host's margin: from its own counts when they hold ``least`` late captures (a host whose
    archive indexes differently shows it), else from every host's together, else ``cap``."""
    for counts in (own, pooled):
        found = index_lag(counts, cap=cap, quantile=quantile, least=least)
        if found is not None:
            return found
    return cap


def check_finite(name: str, value: float) -> None:
    if not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number of days; got {value}")


def check_positive(name: str, value: float) -> None:
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a finite number > 0; got {value}")
