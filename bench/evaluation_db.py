"""Benchmark: a paper-scale evaluation run read from the database, as the dashboard runs it.

Run from the project root::

    .venv/bin/python -m bench.evaluation_db [--sites N] [--seed S] [--method M] [--keep DIR]

Builds the synthetic collection of ``bench.evaluation`` (N sites, default 20,000, homepage and
website level, 2015-06-01 to 2018-06-01 with half a year of history before) directly in a
throw-away SQLite database: raw bulk inserts of ``archive.Capture`` rows with
``is_observation``, ``page_index``, ``link_floor``, ``page_key`` and ``depth`` already set, no
HTML. Captures of one page that fall in the same second are moved a second apart, as a unique
(site, urlkey, timestamp) demands. Then a fresh process (so that ``ru_maxrss`` is the run's own)
creates an ``EvaluationRun`` for both levels and w = 1 … 12 and runs it with
``scheduling.evaluation_service.evaluation_run``: load both levels' tables from the database,
the full grid (157 t × 12 w × 11 θ, every model), the Figure 6 check, and storing the results.
It prints wall and CPU time of each part and the peak resident set size. Goal: under 60 s and
under 4 GiB.

The database lives in a temporary directory (``DATABASE_URL=sqlite:////tmp/…`` in the
subprocesses, as ``bench.import_cost`` does); ``--keep DIR`` builds it in DIR instead and leaves
it there, and reuses one already built there.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import bench_child, bench_parser, database_env
from hacs.progress import Progress

START, END = "2015-06-01", "2018-06-01"


# --------------------------------------------------------------------------------------------
# Child process 1: build the database
# --------------------------------------------------------------------------------------------


def build(n_sites: int, seed: int) -> dict[str, Any]:
    import django

    django.setup()
    from django.core.management import call_command

    from bench.evaluation import synthetic_collection

    began = time.perf_counter()
    call_command("migrate", verbosity=0)
    website = synthetic_collection(n_sites, seed)["website"]  # the homepage rows are in it
    site, page = website.site, website.page
    seconds = _distinct_seconds(page, website.page_index, np.round(website.time * 86400))
    order = np.lexsort((page, seconds, site))  # insert in (site, time) order: index locality
    site, page, seconds = site[order], page[order], seconds[order]
    page_index, floor = website.page_index[order], website.link_floor[order]
    generated = time.perf_counter() - began

    site_pk = _sites_create(n_sites)
    pages = _page_strings(page, site, n_sites)
    stamps = np.datetime_as_string(seconds.astype("datetime64[s]"), unit="s")
    rows = (
        pages.row(int(site_pk[s]), p, str(stamp).replace("T", " "), i, f)
        for s, p, stamp, i, f in zip(
            site.tolist(), page.tolist(), stamps, page_index.tolist(), floor.tolist(), strict=True
        )
    )
    _captures_insert(rows)
    homepage = int(np.count_nonzero(page < n_sites))
    return {
        "sites": n_sites,
        "seed": seed,
        "homepage": homepage,
        "website": int(site.size),
        "generate_seconds": generated,
        "build_seconds": time.perf_counter() - began,
    }


def _sites_create(n_sites: int) -> Any:
    """The sites, stored; their primary keys by site id."""
    from archive.models import Site

    Site.objects.bulk_create(
        [
            Site(
                seed_url=f"http://{_host(s)}/~user{s}/",
                canonical_key=f"{_surt_host(s)})/~user{s}",
                author=f"Author {s}",
                import_status=Site.ImportStatus.DONE,
            )
            for s in range(n_sites)
        ],
        batch_size=5000,
    )
    pk = dict(Site.objects.values_list("canonical_key", "pk"))
    return np.array([pk[f"{_surt_host(s)})/~user{s}"] for s in range(n_sites)])


@dataclass
class _Pages:
    """Each page's URL, urlkey, page key and depth, by page id."""

    urls: list[str] = field(default_factory=list)
    keys: list[str] = field(default_factory=list)
    page_keys: list[str] = field(default_factory=list)
    depths: list[int] = field(default_factory=list)

    def row(self, site_pk: int, p: int, stamp: str, index: int, floor: int) -> tuple[Any, ...]:
        """An ``archive_capture`` row (the columns of :data:`INSERT`) of page ``p``."""
        return (
            site_pk,
            self.urls[p],
            self.keys[p],
            self.page_keys[p],
            stamp,
            self.depths[p],
            "text/html",
            200,
            "",
            None,
            "bench",
            "observation",
            True,
            None,
            index,
            floor,
            int(floor == -1),
        )


def _page_strings(page: Any, site: Any, n_sites: int) -> _Pages:
    """Page strings, once per page: the homepage has page id = site id, the others follow."""
    n_pages = int(page.max()) + 1
    page_site = np.zeros(n_pages, dtype=np.int64)
    page_site[page] = site
    first_other = np.full(n_sites, n_pages, dtype=np.int64)
    np.minimum.at(first_other, page_site[n_sites:], np.arange(n_sites, n_pages))
    pages = _Pages()
    for p in range(n_pages):
        s = int(page_site[p])
        host, surt_host = _host(s), _surt_host(s)
        if p < n_sites:
            path, depth, key_path = "", 0, ""
        else:
            k = p - int(first_other[s])
            depth = 1 + k % 2
            path = f"p{k}.html" if depth == 1 else f"sec{k}/index.html"
            key_path = f"/p{k}.html" if depth == 1 else f"/sec{k}/index.html"
        pages.urls.append(f"http://{host}/~user{s}/{path}")
        pages.keys.append(f"{surt_host})/~user{s}{key_path}")
        pages.page_keys.append(pages.keys[-1].removesuffix("/index.html"))
        pages.depths.append(depth)
    return pages


INSERT = (
    "INSERT INTO archive_capture (site_id, url, urlkey, page_key, timestamp, depth, "
    "mimetype, status, digest, length, source, kind, is_observation, snapshot_id, "
    "page_index, link_floor, new_links) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, "
    "?, ?, ?, ?)"
)


def _captures_insert(rows: Iterable[tuple[Any, ...]]) -> None:
    """Raw bulk inserts on SQLite, unsynchronised (a throw-away database), then ANALYZE."""
    from django.db import connection

    raw = connection.connection
    raw.execute("PRAGMA synchronous = OFF")
    raw.execute("PRAGMA journal_mode = MEMORY")
    with raw:
        raw.executemany(INSERT, rows)
    raw.execute("ANALYZE")


def _host(s: int) -> str:
    return f"cs{s // 50}.uni{s % 50}.edu"


def _surt_host(s: int) -> str:
    return f"edu,uni{s % 50},cs{s // 50}"


def _distinct_seconds(page: Any, page_index: Any, seconds: Any) -> Any:
    """Whole seconds, strictly increasing along each page's index (t_k ≥ t_{k−1} + 1 s).

    A running maximum of t_k − k within each page; pages are kept apart by an offset far larger
    than any time, in integers so that nothing rounds.
    """
    order = np.lexsort((page_index, page))
    p, k, t = page[order], page_index[order].astype(np.int64), seconds[order].astype(np.int64)
    _, rank = np.unique(p, return_inverse=True)
    lifted = t - k + rank.astype(np.int64) * 10**10
    fixed = np.maximum.accumulate(lifted) - rank.astype(np.int64) * 10**10 + k
    result = np.empty_like(fixed)
    result[order] = fixed
    return result


# --------------------------------------------------------------------------------------------
# Child process 2: the timed run
# --------------------------------------------------------------------------------------------


def measure(method: str) -> dict[str, Any]:
    import resource

    import django

    django.setup()
    from scheduling.evaluation_service import (
        PROGRESS_EVALUATE,
        PROGRESS_LOAD,
        evaluation_run,
        evaluation_run_create,
    )
    from scheduling.models import EvaluationRun

    run = evaluation_run_create(
        parameters={
            "start": START,
            "end": END,
            "levels": ["homepage", "website"],
            "w_weeks": list(range(1, 13)),
            "method": method,
        }
    )
    marks: dict[str, float] = {}
    began, cpu_began = time.perf_counter(), time.process_time()

    def report(progress: Progress) -> None:
        fraction = progress.fraction or 0.0
        for name, at in (("loaded", PROGRESS_LOAD), ("evaluated", PROGRESS_EVALUATE)):
            if fraction >= at and name not in marks:
                marks[name] = time.perf_counter() - began

    results = evaluation_run(run=run, report=report)
    wall, cpu = time.perf_counter() - began, time.process_time() - cpu_began
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    stored = EvaluationRun.objects.get(pk=run.pk)
    return {
        "wall": wall,
        "cpu": cpu,
        "load": marks["loaded"],
        "evaluate": marks["evaluated"] - marks["loaded"],
        "rest": wall - marks["evaluated"],
        "peak_kib": peak_kib,
        "status": stored.status,
        "json_bytes": len(json.dumps(results)),
        "levels": results["levels"],
        "table": results["table"],
        "pak": results["pak"],
    }


# --------------------------------------------------------------------------------------------
# Parent
# --------------------------------------------------------------------------------------------


def child(action: str, directory: Path, *arguments: str) -> dict[str, Any]:
    env = database_env(directory / "bench.sqlite3", directory / "var", quiet=True)
    return bench_child(env, "bench.evaluation_db", action, *arguments)


def report(built: dict[str, Any] | None, run: dict[str, Any]) -> None:
    if built is not None:
        print(
            f"built    : {built['sites']:,} sites (seed {built['seed']}), {built['homepage']:,} "
            f"homepage and {built['website']:,} website observations in "
            f"{built['build_seconds']:.1f} s "
            f"(generation {built['generate_seconds']:.1f} s)"
        )
    for level, info in run["levels"].items():
        print(f"{level:9}: {info['observations']:12,} observations loaded")
    print(
        f"run      : {run['wall']:.1f} s wall (load {run['load']:.1f} s, evaluate "
        f"{run['evaluate']:.1f} s, Figure 6 + store {run['rest']:.1f} s); CPU {run['cpu']:.1f} s; "
        f"status {run['status']}; results {run['json_bytes'] / 1e6:.1f} MB of JSON"
    )
    print(f"peak RSS : {run['peak_kib'] / 1024**2:.2f} GiB (ru_maxrss {run['peak_kib']:,} KiB)")
    table = {(r["level"], r["average"], r["w_weeks"], r["model"]): r for r in run["table"]}
    pak = {(r["level"], r["w_weeks"], r["model"]): r for r in run["pak"]}
    print(
        "\nmicro F1 at θ̂ (HACS | Random | Brute Force) and weighted P@K (HACS | Last-Obs | Random)"
    )
    for level in run["levels"]:
        for w in (1, 2, 4, 8, 12):
            f1 = " | ".join(
                _fmt(table[(level, "micro", w, m)]["f1"]) for m in ("hacs", "random", "brute_force")
            )
            p = " | ".join(
                _fmt(pak[(level, w, m)]["weighted_p_at_k"]) for m in ("hacs", "last_obs", "random")
            )
            theta = _fmt(table[(level, "micro", w, "hacs")]["theta_hat"])
            print(f"  {level:9} w={w:2}  θ̂ {theta}  F1 {f1}   P@K {p}")


def _fmt(value: float | None) -> str:
    return "  -  " if value is None else f"{value:.3f}"


def main() -> None:
    parser = bench_parser(__doc__, sites=20_000, seed=20150601, demo=False)
    parser.add_argument("--method", default="interpolated", choices=("observed", "interpolated"))
    parser.add_argument("--keep", type=Path, help="build the database here and keep it")
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.child:
        action, *rest = args.child
        if action == "build":
            result = build(int(rest[0]), int(rest[1]))
        else:
            result = measure(rest[0])
        print(json.dumps(result))
        return

    def go(directory: Path) -> None:
        built = None
        if not (directory / "bench.sqlite3").exists():
            built = child("build", directory, str(args.sites), str(args.seed))
        report(built, child("measure", directory, args.method))

    if args.keep:
        args.keep.mkdir(parents=True, exist_ok=True)
        go(args.keep.resolve())
    else:
        with tempfile.TemporaryDirectory(prefix="hacs-bench-eval-") as name:
            go(Path(name))


if __name__ == "__main__":
    main()
