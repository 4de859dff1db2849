"""Shared by the tests of hacs.evaluation and hacs.learning: random histories of observations
with link sets, the ObservationTable a caller would build from them, a hand-worked table,
and a tolerant float comparison."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from hacs.evaluation import ObservationTable
from hacs.updates import link_floors

REL = 1e-9


def close(a: float | None, b: float | None, rel: float = REL, abs_: float = 1e-12) -> bool:
    if a is None or b is None:
        return a is None and b is None
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    if math.isinf(a) or math.isinf(b):
        return a == b
    return abs(a - b) <= max(rel * max(abs(a), abs(b)), abs_)


# --------------------------------------------------------------------------------------------
# Histories: observations with link sets, and their ObservationTable
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Obs:
    site: int
    page: int
    time: float
    index: int  # among the page's observations, time order
    links: frozenset[str]


def table_of(
    observations: list[Obs], n_sites: int, seed: int = 0, *, new_links: bool = False
) -> ObservationTable:
    """The table a caller would build: link floors per page (hacs.updates), rows shuffled;
    with ``new_links``, each observation's count of links no earlier copy of its page held."""
    floors: dict[tuple[int, int], int] = {}
    fresh: dict[tuple[int, int], int] = {}
    by_page: dict[int, list[Obs]] = {}
    for o in observations:
        by_page.setdefault(o.page, []).append(o)
    for page_obs in by_page.values():
        page_obs.sort(key=lambda o: o.index)
        held: frozenset[str] = frozenset()
        for o, floor in zip(page_obs, link_floors([o.links for o in page_obs]), strict=True):
            floors[(o.page, o.index)] = int(floor)
            fresh[(o.page, o.index)] = len(o.links - held)
            held |= o.links
    rows = list(observations)
    rows = [rows[i] for i in np.random.default_rng(seed).permutation(len(rows))]
    return ObservationTable(
        site=np.array([o.site for o in rows], dtype=np.int64),
        page=np.array([o.page for o in rows], dtype=np.int64),
        time=np.array([o.time for o in rows], dtype=np.float64),
        page_index=np.array([o.index for o in rows], dtype=np.int64),
        link_floor=np.array([floors[(o.page, o.index)] for o in rows], dtype=np.int64),
        n_sites=n_sites,
        new_links=(
            np.array([fresh[(o.page, o.index)] for o in rows], dtype=np.int64)
            if new_links
            else None
        ),
    )


def random_history(
    rng: np.random.Generator, n_sites: int, horizon: float, max_pages: int, max_obs: int
) -> list[Obs]:
    """Small random histories on a half-day grid, so that observations of different pages share
    instants and fall exactly on window boundaries. Links are added, removed, re-added after
    removal, and sometimes a capture holds no links at all."""
    grid = np.arange(0.0, horizon, 0.5)
    observations: list[Obs] = []
    page_id = 0
    fresh = 0
    for site in range(n_sites):
        for _ in range(int(rng.integers(1, max_pages + 1))):
            n_obs = int(rng.integers(0, max_obs + 1))
            times = np.sort(rng.choice(grid, size=n_obs, replace=False))
            current: set[str] = set()
            ever: list[str] = []
            for index, t in enumerate(times.tolist()):
                roll = rng.random()
                if roll < 0.3 or not ever:
                    fresh += 1
                    current.add(f"l{fresh}")
                    ever.append(f"l{fresh}")
                elif roll < 0.45:
                    current.add(ever[int(rng.integers(0, len(ever)))])  # maybe re-added
                elif roll < 0.6 and current:
                    current.discard(sorted(current)[int(rng.integers(0, len(current)))])
                links = frozenset() if rng.random() < 0.08 else frozenset(current)
                observations.append(Obs(site, page_id, float(t), index, links))
            page_id += 1
    return observations


def small_table(seed: int, n_sites: int = 40, horizon: float = 200.0) -> ObservationTable:
    rng = np.random.default_rng(seed)
    return table_of(random_history(rng, n_sites, horizon, max_pages=2, max_obs=30), n_sites)


def columns(**overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "site": [0, 0, 1],
        "page": [0, 0, 1],
        "time": [1.0, 2.0, 3.0],
        "page_index": [0, 1, 0],
        "link_floor": [-1, 0, -1],
    }
    base.update(overrides)
    return base


def hand_table() -> ObservationTable:
    a, b, c, x, y, z = (frozenset({s}) for s in "abcxyz")
    observations = [
        Obs(0, 0, 0.0, 0, a),
        Obs(0, 0, 3.0, 1, a | b),  # b is new: an update in [0, 7]
        Obs(0, 0, 10.0, 2, a | b),
        Obs(0, 0, 12.0, 3, a | b | c),  # c is new: site 0 changes in (7, 14]
        Obs(1, 1, 5.0, 0, x),
        Obs(1, 1, 6.0, 1, x),
        Obs(1, 1, 13.0, 2, x),
        Obs(2, 2, 1.0, 0, y),
        Obs(2, 2, 8.0, 1, y | z),  # z is new: site 2 changes in (7, 14]
        Obs(3, 3, 20.0, 0, y),  # no observation in [0, 7]: not eligible
    ]
    return table_of(observations, n_sites=4)
