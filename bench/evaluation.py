"""Benchmark: the full evaluation grid (Evaluations 1 and 2, the GP4C scorers and budget metrics)
at paper scale.

Run from the project root::

    .venv/bin/python bench/evaluation.py [--sites N] [--seed S] [--method M] [--weeks W]
    .venv/bin/python bench/evaluation.py --demo [--sites 1200] [--seed 0] [--method interpolated]

``--demo`` evaluates the demo archive (``hacs.demo``, written into a temporary directory, read
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
import calendar
import json
import math
import resource
import sys
import tempfile
import time
from datetime import date
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from hacs.demo import build_demo_archive  # noqa: E402
from hacs.evaluation import ObservationTable, evaluate  # noqa: E402
from hacs.updates import link_floors  # noqa: E402

EPOCH = date(1970, 1, 1)
DEMO_START, DEMO_END = date(2015, 6, 1), date(2018, 6, 1)  # the demo's (and paper's) period
START = float((date(2015, 6, 1) - EPOCH).days)
END = float((date(2018, 6, 1) - EPOCH).days)
HISTORY_BEFORE = 180.0  # days of captures before START, so the first windows are full
HOMEPAGE_MEDIAN_INTERVAL = 140.0
OTHER_PAGES_MEDIAN_INTERVAL = 160.0  # with the homepage: a website median of about 75 days


def synthetic_collection(n_sites: int, seed: int) -> dict[str, ObservationTable]:
    rng = np.random.default_rng(seed)

    # Crawl sessions per site: bursty gaps, starting somewhere in the first months.
    per_site = 60  # generous; sessions past END are dropped
    short = rng.random((n_sites, per_site)) < 1 / 3
    gaps = np.where(
        short,
        rng.exponential(0.3, (n_sites, per_site)),
        rng.exponential(45.0, (n_sites, per_site)),
    )
    gaps[:, 0] = rng.uniform(0.0, 90.0, n_sites)
    sessions = START - HISTORY_BEFORE + np.cumsum(gaps, axis=1)
    sessions = np.round(sessions * 86400) / 86400  # whole seconds, as in CDX timestamps
    keep = sessions <= END + 14.0
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
        site,
        session_time[slot_session] + offset,
        page_base[site] + slot_page,
        page_rate[site],
        rng,
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


def demo_collection(n_sites: int, seed: int, workdir: Path) -> dict[str, ObservationTable]:
    """Both levels of a demo archive (``hacs.demo``) as the database would hold them.

    Reads ``truth.json``: each site's observations (DESIGN rule 1) of the homepage (depth 0) or
    of every page at depth ≤ 2, each page's observations in time order (ties in CDX-line order),
    their link sets, and from them the link floors (``hacs.updates.link_floors``). Checks that
    rule 3 over each page's full history gives the truth's own update flags.
    """
    demo = build_demo_archive(workdir, sites=n_sites, seed=seed, start=DEMO_START, end=DEMO_END)
    truth = json.loads(demo.truth_path.read_text(encoding="utf-8"))
    names = ("site", "page", "time", "page_index", "link_floor", "new_links")
    columns: dict[str, dict[str, list[Any]]] = {
        level: {name: [] for name in names} for level in ("homepage", "website")
    }
    mismatched = 0
    page_ids: dict[tuple[int, str], int] = {}
    for site in truth["sites"]:
        index = int(site["index"])
        captures = sorted(
            (c for c in site["captures"] if c["observation"] and c["depth"] <= 2),
            key=lambda c: (c["timestamp"], c["cdx_line"]),
        )
        by_page: dict[str, list[dict[str, Any]]] = {}
        for capture in captures:
            by_page.setdefault(capture["page"], []).append(capture)
        for page, rows in by_page.items():
            page_id = page_ids.setdefault((index, page), len(page_ids))
            links = [frozenset(site["link_sets"][c["digest"]]) for c in rows]
            floors = link_floors(links)
            held: set[str] = set()
            fresh = []
            for held_now in links:  # links no earlier copy of the page held (``new_links``)
                fresh.append(len(held_now - held))
                held |= held_now
            for i, (capture, floor) in enumerate(zip(rows, floors.tolist(), strict=True)):
                mismatched += (i > 0 and floor == -1) != bool(capture["update"])
                moment = calendar.timegm(time.strptime(capture["timestamp"], "%Y%m%d%H%M%S"))
                levels = ("homepage", "website") if capture["depth"] == 0 else ("website",)
                for level in levels:
                    column = columns[level]
                    column["site"].append(index)
                    column["page"].append(page_id)
                    column["time"].append(moment / 86400.0)
                    column["page_index"].append(i)
                    column["link_floor"].append(floor)
                    column["new_links"].append(fresh[i])
    if mismatched:
        raise SystemExit(f"{mismatched} observations disagree with truth.json's update flags")
    return {
        level: ObservationTable(**{k: np.asarray(v) for k, v in column.items()}, n_sites=n_sites)
        for level, column in columns.items()
    }


def demo_main(args: argparse.Namespace) -> None:
    """``--demo``: Table I and weighted P@K on the demo archive (the module docstring)."""
    sites = args.sites or 1200
    seed = 0 if args.seed is None else args.seed
    method = args.method or "interpolated"
    began = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="hacs-eval-demo-") as tmp:
        tables = demo_collection(sites, seed, Path(tmp) / "demo")
    print(f"Demo archive: {sites} sites, seed {seed}, {method} estimate "
          f"({time.perf_counter() - began:.0f} s to write and read)")  # fmt: skip
    for name, table in tables.items():
        print(f"  {name:9}: {table.size:,} observations")
    start = float((DEMO_START - EPOCH).days)
    end = float((DEMO_END - EPOCH).days)
    ws = range(1, args.weeks + 1)
    timings = {}
    for label, kw in (("prior fitted at the first t only", {"prior_every": 10**6}),
                      ("prior every point", {})):  # fmt: skip
        began, cpu = time.perf_counter(), time.process_time()
        result = evaluate(tables, start=start, end=end, w_weeks=ws, method=method, **kw)
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
    table = {(r["level"], r["average"], r["w_weeks"], r["model"]): r for r in result["table"]}
    pak = {(r["level"], r["w_weeks"], r["model"]): r for r in result["pak"]}
    names = {
        "posterior": "posterior", "hacs": "paper", "random": "random", "brute_force": "brute",
        "cho_garcia_molina": "CGM", "last_obs": "last_obs",
    }  # fmt: skip
    for level in tables:
        for average in ("micro", "macro"):
            print(f"\nTable I, {level}, {average}: F1 at θ̂ (θ̂)")
            models = ("posterior", "hacs", "random", "brute_force")
            print("  w  " + "".join(f"{names[m]:>16}" for m in models))
            for w in ws:
                cells = []
                for m in models:
                    row = table[(level, average, w, m)]
                    theta = f" ({_fmt(row['theta_hat'])[:3]})" if m in ("posterior", "hacs") else ""
                    cells.append(f"{_fmt(row['f1']) + theta:>16}")
                print(f"{w:>3}  " + "".join(cells))
        print(f"\nmean weighted P@K, {level}")
        models = ("posterior", "hacs", "cho_garcia_molina", "last_obs", "random")
        print("  w  " + "".join(f"{names[m]:>10}" for m in models))
        for w in ws:
            print(f"{w:>3}  " + "".join(f"{_fmt(pak[(level, w, m)]['weighted_p_at_k']):>10}"
                                        for m in models))  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--demo", action="store_true", help="the demo archive (hacs.demo)")
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
    print(f"built and validated the tables in {built:.1f} s")

    began = time.perf_counter()
    cpu_began = time.process_time()
    result = evaluate(
        tables,
        start=START,
        end=END,
        w_weeks=range(1, args.weeks + 1),
        method=args.method,
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

    print("\nTable I (micro), w = 1, 2, 4, 12:  θ̂   P      R      F1   "
          "(HACS | posterior | Random | Brute)")  # fmt: skip
    rows = {(r["level"], r["average"], r["w_weeks"], r["model"]): r for r in result["table"]}
    for level in tables:
        for w in (1, 2, 4, 12):
            if w > args.weeks:
                continue
            cells = []
            for model in ("hacs", "posterior", "random", "brute_force"):
                r = rows[(level, "micro", w, model)]
                cells.append(" ".join(_fmt(r[k]) for k in ("precision", "recall", "f1")))
            theta = rows[(level, "micro", w, "hacs")]["theta_hat"]
            print(f"  {level:9} w={w:2}  {_fmt(theta)}  " + " | ".join(cells))
    print("\nweighted P@K and NDCG@5% (w = 1, 12):")
    pak = {(r["level"], r["w_weeks"], r["model"]): r for r in result["pak"]}
    budget = {(r["level"], r["w_weeks"], r["model"]): r for r in result["budget"]}
    for level in tables:
        for w in (1, args.weeks):
            cells = [
                f"{model} {_fmt(pak[(level, w, model)]['weighted_p_at_k'])}"
                f"/{_fmt(budget[(level, w, model)]['ndcg_at_k'])}"
                for model in (
                    "posterior",
                    "hacs",
                    "last_obs",
                    "random",
                    "nad",
                    "cho_garcia_molina",
                    "age",
                )  # fmt: skip
            ]
            print(f"  {level:9} w={w:2}  " + "  ".join(cells))


def _fmt(value: float | None) -> str:
    return "  -  " if value is None else f"{value:.3f}"


if __name__ == "__main__":
    main()
