"""The list's own yield as the Crawl list page and the Overview show it: a chart over the last
weeks and a table of the same figures (``handoff.crawl_yield`` counts them)."""

from __future__ import annotations

from typing import Any

from dashboard.charts.crawl_yield import YieldPoint, yield_figure
from handoff.crawl_yield import list_yields_recent

WEEKS = 8


def crawl_yield_context(*, weeks: int = WEEKS) -> dict[str, Any]:
    """The yield section's figures: one point per list handed off in the last ``weeks`` weeks
    (two queries), their totals, and the figure (None when no list was handed off)."""
    rows = list_yields_recent(weeks=weeks)
    points = [
        YieldPoint(
            day=row.crawl_list.date.isoformat(),
            listed=row.listed,
            reached=row.reached,
            changed=row.changed,
            expected=row.expected,
            round_robin=row.crawl_list.round_robin_expected,
        )
        for row in rows
    ]
    counted = [p for p in points if p.reached is not None]
    known = [p.round_robin for p in counted if p.round_robin is not None]
    totals = {
        "lists": len(points),
        "listed": sum(p.listed for p in counted),
        "reached": sum(p.reached or 0 for p in counted),
        "changed": sum(p.changed or 0 for p in counted),
        "expected": sum(p.expected for p in counted),
        "round_robin": sum(known) if known else None,
    }
    return {
        "weeks": weeks,
        "rows": list(zip(rows, points, strict=True))[::-1],  # newest first in the table
        "totals": totals,
        "figure": yield_figure(points) if points else None,
    }
