"""Benchmark: the full evaluation grid (Evaluations 1 and 2, the GP4C scorers and budget metrics)
at paper scale.

Run from the project root::

    .venv/bin/python -m bench.evaluation [--sites N] [--seed S] [--method M] [--weeks W]
    .venv/bin/python -m bench.evaluation --demo [--sites 1200] [--seed 0] [--method interpolated]

``--demo`` evaluates the demo archive (``hacs_demo``, written into a temporary directory, read
from its ``truth.json`` as the database would hold it; pure, no database) over its three years,
as the dashboard runs it (interpolated estimate by default), and prints Table I's F1 at θ̂ (the
HACS posterior, the paper's HACS, Random, Brute Force) and the mean weighted P@K (the posterior,
the paper's HACS, Cho–Garcia-Molina, Last-Obs, Random) at every w, with the time the posterior's
prior fits take. Same seed, same figures.

Builds a synthetic collection as arrays, shaped after the HACS paper's D0 and D2 datasets:
N sites (default 20,000) from 2015-06-01 to 2018-06-01 (157 weekly reference points), with
history from half a year before. Each site is crawled in bursty, irregular sessions (a third of
the gaps minutes to a day apart, the rest exponential with mean 45 days: about 40 homepage
captures over the three years). The homepage is captured in every session; the website level
adds a log-normal number of other pages (median 5), each captured in most sessions a few
seconds to minutes after the homepage — a few hundred website observations per site. Each page
changes as a Poisson process with a log-normal rate: median interval 140 days for homepages,
and the other pages together bring a site's website-level median to about 75 days. A capture
after a change adds a brand-new link (link floor −1); otherwise it holds the links of the capture
before it (floor i − 1), re-adds a link removed a while ago (a floor further back) or holds no
links at all (floor i).

Times ``ObservationTable`` construction (validation) and ``evaluate`` over the whole grid
(157 t × 12 w × 11 θ × both levels, every model), and prints wall and CPU times (the machine is
shared: CPU time shows the work itself), the peak resident set size (``ru_maxrss``) and a few
headline figures. Goal: evaluate under 60 s and under 4 GiB.
"""

from __future__ import annotations

import argparse
import math
import resource
import time
from typing import Any

import numpy as np
from numpy.typing import NDArray

from bench.common import END_DAYS, START_DAYS, argument_parser, demo_archive, demo_tables
from hacs.evaluation import ObservationTable, evaluate

HISTORY_BEFORE = 180.0  # days of captures before the period, so the first windows are full
HOMEPAGE_MEDIAN_INTERVAL = 140.0
OTHER_PAGES_MEDIAN_INTERVAL = 160.0  # with the homepage: a website median of about 75 days


def synthetic_collection(n_sites: int, seed: int) -> dict[str, ObservationTable]:
    rng = np.random.default_rng(seed)

    # Crawl sessions per site: bursty gaps, starting somewhere in the first months.
    per_site = 60  # generous; sessions past END are dropped
    short = rng.random((n_sites, per_site)) < 1 / 3
    gaps = np.where(
        short, rng.exponential(0.3, (n_sites, per_site)), rng.exponential(45.0, (n_sites, per_site))
    )
    gaps[:, 0] = rng.uniform(0.0, 90.0, n_sites)
    sessions = START_DAYS - HISTORY_BEFORE + np.cumsum(gaps, axis=1)
    sessions = np.round(sessions * 86400) / 86400  # whole seconds, as in CDX timestamps
    keep = sessions <= END_DAYS + 14.0
    session_site = np.nonzero(keep)[0].astype(np.int64)
    session_time = sessions[keep]

    homepage_rate = np.exp(rng.normal(math.log(1 / HOMEPAGE_MEDIAN_INTERVAL), 0.9, n_sites))
    other_rate = np.exp(rng.normal(math.log(1 / OTHER_PAGES_MEDIAN_INTERVAL), 0.9, n_sites))
    other_pages = np.minimum(np.round(np.exp(rng.normal(math.log(5.0), 0.8, n_sites))), 40)
    other_pages = other_pages.astype(np.int64)

    # Homepage captures: one per session. Website: the homepage plus each other page with
    # probability 0.8 per session, a few seconds to ten minutes after the session starts.
    homepage = _page_rows(
        session_site,
        session_time,
        session_site,  # page id = site id
        homepage_rate[session_site],
        rng,
    )
    n_other = other_pages[session_site]
    slot_session = np.repeat(np.arange(session_site.size), n_other)
    slot_page = np.arange(slot_session.size) - np.repeat(np.cumsum(n_other) - n_other, n_other)
    captured = rng.random(slot_session.size) < 0.8
    slot_session, slot_page = slot_session[captured], slot_page[captured]
    site = session_site[slot_session]
    offset = np.round(rng.uniform(2.0, 600.0, site.size)) / 86400
    page_base = n_sites + np.cumsum(other_pages) - other_pages  # other pages' ids after sites
    page_rate = other_rate / np.maximum(other_pages, 1)  # the site's other pages share the rate
    others = _page_rows(
        site, session_time[slot_session] + offset, page_base[site] + slot_page, page_rate[site], rng
    )
    website = {key: np.concatenate([homepage[key], others[key]]) for key in homepage}
    return {
        "homepage": ObservationTable(**homepage, n_sites=n_sites),
        "website": ObservationTable(**website, n_sites=n_sites),
    }


def _page_rows(
    site: NDArray[np.int64],
    time: NDArray[np.float64],
    page: NDArray[np.int64],
    rate: NDArray[np.float64],
    rng: np.random.Generator,
) -> dict[str, NDArray[Any]]:
    """Page indices and link floors for captures of pages changing at Poisson ``rate``."""
    order = np.lexsort((time, page))
    site, time, page, rate = site[order], time[order], page[order], rate[order]
    first = np.ones(page.size, dtype=np.bool_)
    first[1:] = page[1:] != page[:-1]
    starts = np.flatnonzero(first)
    index = np.arange(page.size) - np.repeat(starts, np.diff(np.append(starts, page.size)))
    gap = np.diff(time, prepend=time[0])
    gap[first] = 0.0
    changed = rng.random(page.size) < -np.expm1(-rate * gap)
    roll = rng.random(page.size)
    floor = index - 1  # the links of the capture before
    readd = roll < 0.05  # a link removed a while ago comes back
    floor[readd] = np.maximum(index[readd] - 1 - rng.integers(1, 10, int(readd.sum())), 0)
    floor[roll > 0.98] = index[roll > 0.98]  # no links at all
    floor[changed | first] = -1  # a brand-new link (the first capture: all links are new)
    floor = np.minimum(floor, index)
    return {"site": site, "page": page, "time": time, "page_index": index, "link_floor": floor}


def demo_main(args: argparse.Namespace) -> None:
    """``--demo``: Table I and weighted P@K on the demo archive (the module docstring)."""
    sites = args.sites or 1200
    seed = 0 if args.seed is None else args.seed
    method = args.method or "interpolated"
    began = time.perf_counter()
    with demo_archive(sites, seed) as demo:
        tables = demo_tables(demo)
    print(
        f"Demo archive: {sites} sites, seed {seed}, {method} estimate "
        f"({time.perf_counter() - began:.0f} s to write and read)"
    )
    for name, table in tables.items():
        print(f"  {name:9}: {table.size:,} observations")
    ws = range(1, args.weeks + 1)
    timings = {}
    for label, kw in (
        ("prior fitted at the first t only", {"prior_every": 10**6}),
        ("prior every point", {}),
    ):
        began, cpu = time.perf_counter(), time.process_time()
        result = evaluate(tables, start=START_DAYS, end=END_DAYS, w_weeks=ws, method=method, **kw)
        timings[label] = (time.perf_counter() - began, time.process_time() - cpu)
    for label, (wall, cpu) in timings.items():
        print(f"evaluate, {label:30}: {wall:6.1f} s (CPU {cpu:.1f} s)")
    print(
        "  (the first run fits the prior once per level and w only: the difference is the "
        "cost of one fit per reference point)"
    )
    parameters = result["parameters"]
    print(
        f"prior: fitted on {parameters['prior_weeks']}-week windows ending at t, every "
        f"{parameters['prior_every']} reference point(s); {parameters['reference_points']} t"
    )
    for level in tables:
        _print_demo_level(result, level, ws)


#: The models' short names in the demo's tables.
SHORT_NAMES = {
    "posterior": "posterior",
    "hacs": "paper",
    "random": "random",
    "brute_force": "brute",
    "cho_garcia_molina": "CGM",
    "last_obs": "last_obs",
}


def _print_demo_level(result: dict[str, Any], level: str, ws: range) -> None:
    """One level's Table I (micro and macro: F1 at θ̂) and mean weighted P@K, by w."""
    table = {(r["level"], r["average"], r["w_weeks"], r["model"]): r for r in result["table"]}
    pak = {(r["level"], r["w_weeks"], r["model"]): r for r in result["pak"]}
    for average in ("micro", "macro"):
        print(f"\nTable I, {level}, {average}: F1 at θ̂ (θ̂)")
        models = ("posterior", "hacs", "random", "brute_force")
        print("  w  " + "".join(f"{SHORT_NAMES[m]:>16}" for m in models))
        for w in ws:
            cells = []
            for m in models:
                row = table[(level, average, w, m)]
                theta = f" ({_fmt(row['theta_hat'])[:3]})" if m in ("posterior", "hacs") else ""
                cells.append(f"{_fmt(row['f1']) + theta:>16}")
            print(f"{w:>3}  " + "".join(cells))
    print(f"\nmean weighted P@K, {level}")
    models = ("posterior", "hacs", "cho_garcia_molina", "last_obs", "random")
    print("  w  " + "".join(f"{SHORT_NAMES[m]:>10}" for m in models))
    for w in ws:
        print(
            f"{w:>3}  "
            + "".join(f"{_fmt(pak[(level, w, m)]['weighted_p_at_k']):>10}" for m in models)
        )


def main() -> None:
    parser = argument_parser(__doc__)
    parser.add_argument("--demo", action="store_true", help="the demo archive (hacs_demo)")
    parser.add_argument("--sites", type=int, default=None, help="20,000 (demo: 1,200)")
    parser.add_argument("--seed", type=int, default=None, help="20150601 (demo: 0)")
    parser.add_argument("--method", default=None, help="observed (demo: interpolated)")
    parser.add_argument("--weeks", type=int, default=12, help="history sizes 1 … W weeks")
    args = parser.parse_args()
    if args.demo:
        demo_main(args)
        return
    args.sites = args.sites or 20_000
    args.seed = 20150601 if args.seed is None else args.seed
    args.method = args.method or "observed"

    began = time.perf_counter()
    tables = synthetic_collection(args.sites, args.seed)
    built = time.perf_counter() - began
    for name, table in tables.items():
        per_site = table.size / args.sites
        print(f"{name:9}: {table.size:12,} observations ({per_site:.0f} per site)")
    print(f"built and validated the tables in {built:.1f} s (seed {args.seed})")

    began = time.perf_counter()
    cpu_began = time.process_time()
    result = evaluate(
        tables, start=START_DAYS, end=END_DAYS, w_weeks=range(1, args.weeks + 1), method=args.method
    )
    seconds = time.perf_counter() - began
    cpu_seconds = time.process_time() - cpu_began
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    points = result["parameters"]["reference_points"]
    print(
        f"evaluate : {seconds:.1f} s for {points} reference points × {args.weeks} windows × "
        f"{len(result['parameters']['thetas'])} θ × {len(tables)} levels "
        f"({len(result['curves']):,} curve rows); CPU {cpu_seconds:.1f} s"
    )
    print(f"peak RSS : {peak_kib / 1024**2:.2f} GiB (ru_maxrss {peak_kib:,} KiB)")
    _print_table_i(result, list(tables), args.weeks)
    _print_pak_ndcg(result, list(tables), args.weeks)


def _print_table_i(result: dict[str, Any], levels: list[str], weeks: int) -> None:
    """Table I (micro) at w = 1, 2, 4 and 12: θ̂, precision, recall and F1 of each model."""
    print(
        "\nTable I (micro), w = 1, 2, 4, 12:  θ̂   P      R      F1   "
        "(HACS | posterior | Random | Brute)"
    )
    rows = {(r["level"], r["average"], r["w_weeks"], r["model"]): r for r in result["table"]}
    for level in levels:
        for w in (1, 2, 4, 12):
            if w > weeks:
                continue
            cells = []
            for model in ("hacs", "posterior", "random", "brute_force"):
                r = rows[(level, "micro", w, model)]
                cells.append(" ".join(_fmt(r[k]) for k in ("precision", "recall", "f1")))
            theta = rows[(level, "micro", w, "hacs")]["theta_hat"]
            print(f"  {level:9} w={w:2}  {_fmt(theta)}  " + " | ".join(cells))


PAK_MODELS = ("posterior", "hacs", "last_obs", "random", "nad", "cho_garcia_molina", "age")


def _print_pak_ndcg(result: dict[str, Any], levels: list[str], weeks: int) -> None:
    """Weighted P@K and NDCG@5% of each model at w = 1 and the largest w."""
    print("\nweighted P@K and NDCG@5% (w = 1, 12):")
    pak = {(r["level"], r["w_weeks"], r["model"]): r for r in result["pak"]}
    budget = {(r["level"], r["w_weeks"], r["model"]): r for r in result["budget"]}
    for level in levels:
        for w in (1, weeks):
            cells = [
                f"{model} {_fmt(pak[(level, w, model)]['weighted_p_at_k'])}"
                f"/{_fmt(budget[(level, w, model)]['ndcg_at_k'])}"
                for model in PAK_MODELS
            ]
            print(f"  {level:9} w={w:2}  " + "  ".join(cells))


def _fmt(value: float | None) -> str:
    return "  -  " if value is None else f"{value:.3f}"


if __name__ == "__main__":
    main()
