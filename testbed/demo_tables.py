"""A demo archive's observation tables as HACS's database holds them, read from its truth alone.

Pure (no Django): the benches evaluate demo archives with it, and the pure tests check the
method's claims on the demo with it; ``tests/test_evaluation_service.py`` checks on both
databases that an imported demo archive loads into exactly these tables and evaluates to exactly
the same results, which is what lets the others skip the import.
"""

from __future__ import annotations

import calendar
import time
from typing import Any

import numpy as np

from hacs.evaluation import ObservationTable, evaluate
from hacs.updates import link_floors

LEVELS = ("homepage", "website")


def truth_tables(
    truth: dict[str, Any], *, n_sites: int, site_order: list[str] | None = None
) -> dict[str, ObservationTable]:
    """Both levels of a demo archive as the database would hold them, times in days since 1970.

    Reads ``truth.json``: each site's observations (DESIGN rule 1) of the homepage (depth 0) or
    of every page at depth ≤ 2, each page's observations in time order (ties in CDX-line order),
    their link sets, and from them the link floors (``hacs.updates.link_floors``). Checks that
    rule 3 over each page's full history gives the truth's own update flags. Sites are numbered
    by the truth's index, or by their place in ``site_order`` (seed URLs) when given, as the
    database numbers them.
    """
    number = (
        {url: i for i, url in enumerate(site_order)}
        if site_order is not None
        else {site["seed_url"]: int(site["index"]) for site in truth["sites"]}
    )
    names = ("site", "page", "time", "page_index", "link_floor", "new_links")
    columns: dict[str, dict[str, list[Any]]] = {
        level: {name: [] for name in names} for level in LEVELS
    }
    mismatched = 0
    page_ids: dict[tuple[int, str], int] = {}
    for site in truth["sites"]:
        index = number[site["seed_url"]]
        captures = sorted(
            (c for c in site["captures"] if c["observation"] and c["depth"] <= 2),
            key=lambda c: (c["timestamp"], c["cdx_line"]),
        )
        by_page: dict[str, list[dict[str, Any]]] = {}
        for capture in captures:
            by_page.setdefault(capture["page"], []).append(capture)
        for page, rows in by_page.items():
            page_id = page_ids.setdefault((index, page), len(page_ids))
            mismatched += _add_page(columns, index, page_id, rows, site["link_sets"])
    if mismatched:
        raise ValueError(f"{mismatched} observations disagree with truth.json's update flags")
    return {
        level: ObservationTable(**{k: np.asarray(v) for k, v in column.items()}, n_sites=n_sites)
        for level, column in columns.items()
    }


def _add_page(
    columns: dict[str, dict[str, list[Any]]],
    index: int,
    page_id: int,
    rows: list[dict[str, Any]],
    link_sets: dict[str, Any],
) -> int:
    """Add one page's observations (in time order) to the columns of the levels they belong
    to; the number of them whose update flag disagrees with the truth's."""
    links = [frozenset(link_sets[c["digest"]]) for c in rows]
    floors = link_floors(links)
    held: set[str] = set()
    fresh = []
    for held_now in links:  # links no earlier copy of the page held (``new_links``)
        fresh.append(len(held_now - held))
        held |= held_now
    mismatched = 0
    for i, (capture, floor) in enumerate(zip(rows, floors.tolist(), strict=True)):
        mismatched += (i > 0 and floor == -1) != bool(capture["update"])
        moment = calendar.timegm(time.strptime(capture["timestamp"], "%Y%m%d%H%M%S"))
        levels = LEVELS if capture["depth"] == 0 else ("website",)
        for level in levels:
            column = columns[level]
            column["site"].append(index)
            column["page"].append(page_id)
            column["time"].append(moment / 86400.0)
            column["page_index"].append(i)
            column["link_floor"].append(floor)
            column["new_links"].append(fresh[i])
    return mismatched


def run_window(table: ObservationTable, *, start: float, end: float) -> ObservationTable:
    """The observations an evaluation run of [start, end] loads: from 12 weeks before the start
    to e (7 days) after the end."""
    keep = (table.time >= start - 84) & (table.time <= end + 7)
    return ObservationTable(
        site=table.site[keep],
        page=table.page[keep],
        time=table.time[keep],
        page_index=table.page_index[keep],
        link_floor=table.link_floor[keep],
        new_links=None if table.new_links is None else table.new_links[keep],
        n_sites=table.n_sites,
    )


def evaluate_as_a_run(table: ObservationTable, *, start: float, end: float) -> dict[str, Any]:
    """The evaluation core on a homepage table with an evaluation run's default parameters
    (w = 1 … 12 weeks, e and the step 7 days, the interpolated method)."""
    return evaluate(
        {"homepage": table},
        start=start,
        end=end,
        step_days=7.0,
        e_days=7.0,
        w_weeks=range(1, 13),
        method="interpolated",
    )
