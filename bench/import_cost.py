"""Import speed: CDX lines parsed and stored per second (SQLite and PostgreSQL), link extraction
pages per second, memento fetches per observation on the demo archive, and what a first import
and a nightly refresh of a 2,000-site demo archive ask of the archive.

Run from the project root: ``.venv/bin/python -m bench.import_cost [--lines N] [--sites N]``;
``--refresh-only`` runs the last part alone (``--refresh-sites N`` for its size);
``--paper-scale`` runs instead what HACS asks of the Internet Archive for a paper-scale
synthetic collection, before and after issue #26 (``bench.paper_scale``: ``--sites`` seeds,
20,000 by default, ``--sample`` of them through HACS's commands, ``--nights`` of the archive
capturing more, 30 by default, ``--seed``).
It creates throw-away databases (a SQLite file in a temporary directory and a PostgreSQL
cluster started with ``scripts.localservers``), a throw-away Redis, and a pywb serving the demo
archive; nothing of the developer's own data is touched. Goals: >= 50,000 CDX lines/s stored on
SQLite; >= 500 pages/s link extraction; fetches never above distinct (urlkey, digest) pairs;
a nightly refresh with nothing new sends one CDX request per site and fetches no memento.

The refresh part serves the demo archive like the Internet Archive (``testbed.ia_server``
on 127.0.0.1, in this process) without its last day, imports it with ``import_archive``, then
adds the last day's captures and runs ``import_archive`` again (the nightly refresh), once more
with nothing new, and once with ``--full`` (what every refresh cost before it was incremental).
Requests are counted at the server.
"""

from __future__ import annotations

import argparse
import os
import random
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import (
    CHILD_ENV,
    argument_parser,
    database_env,
    fake_archive_env,
    last_json,
    manage,
    run_python,
)
from scripts.localservers import postgres_url, start_postgres, start_redis

# The child processes run Django on the project's modules: the project root on their path.


def synthetic_cdx(path: Path, *, sites: int, lines: int, seed: int = 0) -> None:
    """IA-style 7-field CDX text for ``sites`` tilde homepages and their pages to depth 2."""
    rng = random.Random(seed)
    pages = ["", "/publications.html", "/teaching", "/teaching/cs101", "/cv.pdf", "/projects/a"]
    rows = []
    for n in range(lines):
        site = n % sites
        page = rng.choice(pages)
        host = f"cs{site // 50}.uni{site % 50}.edu"
        url = f"http://{host}/~user{site}{page}"
        key = f"edu,uni{site % 50},cs{site // 50})/~user{site}{page}"
        stamp = f"{2010 + rng.randrange(10)}{rng.randrange(1, 13):02d}{rng.randrange(1, 29):02d}"
        stamp += f"{rng.randrange(24):02d}{rng.randrange(60):02d}{rng.randrange(60):02d}"
        kind = rng.random()
        if kind < 0.7:
            mime, status = (
                ("application/pdf", "200") if page.endswith(".pdf") else ("text/html", "200")
            )
        elif kind < 0.85:
            mime, status = "warc/revisit", "-"
        else:
            mime, status = "text/html", rng.choice(["301", "302", "404", "503"])
        digest = f"D{rng.randrange(200):03d}{site}"
        rows.append(f"{key} {stamp} {url} {mime} {status} {digest} {rng.randrange(500, 9000)}")
    rows.sort()
    path.write_text("\n".join(rows) + "\n")


STORE_SCRIPT = r"""
import sys, time, json, django
django.setup()
from django.core.management import call_command
from archive.models import Site, Capture
from archive.seeds import seeds_import
from archive.pipeline import FromCdxFiles, sites_import
from pathlib import Path
call_command("migrate", verbosity=0)
sites = int(sys.argv[2])
seeds = "\n".join(f"http://cs{s // 50}.uni{s % 50}.edu/~user{s}/" for s in range(sites))
seeds_import(data=seeds.encode())
started = time.perf_counter()
report = sites_import(FromCdxFiles([Path(sys.argv[1])], fetch=False))
elapsed = time.perf_counter() - started
print(json.dumps({"read": report.captures.read, "added": report.captures.added,
                  "seconds": elapsed, "stored": Capture.objects.count()}))
"""


def store_rate(cdx: Path, sites: int, database_url: str) -> dict[str, float]:
    env = {**os.environ, **CHILD_ENV, "DATABASE_URL": database_url}
    result: dict[str, float] = last_json(run_python(env, "-c", STORE_SCRIPT, str(cdx), str(sites)))
    return result


FETCH_SCRIPT = r"""
import sys, json, django
django.setup()
from django.core.management import call_command
from archive.models import Capture, LinkSnapshot
call_command("migrate", verbosity=0)
call_command("import_seeds", sys.argv[1], verbosity=0, stdout=open("/dev/null", "w"),
             stderr=open("/dev/null", "w"))
quiet = open("/dev/null", "w")
call_command("import_cdx", sys.argv[2], stdout=quiet, stderr=quiet)
obs = Capture.objects.filter(is_observation=True).count()
pairs = Capture.objects.filter(kind="observation").values("urlkey", "digest").distinct().count()
print(json.dumps({"observations": obs, "distinct_pairs": pairs,
                  "snapshots": LinkSnapshot.objects.count()}))
"""


def memento_fetches(tmp: Path, redis_url: str) -> dict[str, float]:
    from hacs_demo import build_demo_archive
    from testbed.pywb import PywbServer

    demo = build_demo_archive(tmp / "demo", sites=40, seed=0)
    with PywbServer([demo.warc_path], "demo") as pywb:
        env = {
            **database_env(tmp / "fetch.sqlite3"),
            "REDIS_URL": redis_url,
            "HACS_CDX_URL": pywb.cdx_url,
            "HACS_CDX_DIALECT": "pywb",
            "HACS_WAYBACK_URL": f"{pywb.base_url}/demo",
            "HACS_MEMENTO_RATE_PER_MINUTE": "60000",
        }
        out = run_python(env, "-c", FETCH_SCRIPT, str(demo.seeds_path), str(demo.cdx_path))
        fetched = sum(
            1 for line in pywb.log_text().splitlines() if "id_/" in line and "GET" in line
        )
    result: dict[str, float] = last_json(out)
    result["fetches"] = fetched
    return result


def refresh_costs(tmp: Path, redis_url: str, sites: int) -> list[tuple[str, dict[str, float]]]:
    """CDX requests, CDX bytes and memento fetches of a first import and of refreshes."""
    from hacs_demo import build_demo_archive
    from testbed.ia_server import IAArchive, ia_rows_and_bodies

    demo = build_demo_archive(tmp / "refresh-demo", sites=sites, seed=0)
    rows, bodies = ia_rows_and_bodies(demo)
    last_day = max(r.timestamp for r in rows)[:8]
    runs: list[tuple[str, dict[str, float]]] = []
    with IAArchive([r for r in rows if r.timestamp[:8] < last_day], bodies) as archive:
        env = fake_archive_env(archive, redis_url, tmp / "refresh.sqlite3")
        manage(env, "migrate", "--verbosity", "0")
        manage(env, "import_seeds", str(demo.seeds_path))
        steps = [
            ("first import (all but the last day)", ()),
            ("nightly refresh (the last day's captures are new)", ()),
            ("refresh with nothing new", ()),
            ("refresh with --full (every refresh before)", ("--full",)),
        ]
        for number, (label, extra) in enumerate(steps):
            if number == 1:
                archive.state.rows = sorted(rows, key=lambda r: (r.urlkey, r.timestamp))
            runs.append((label, _import_counted(archive, env, *extra)))
    return runs


def _import_counted(archive: Any, env: dict[str, str], *extra: str) -> dict[str, float]:
    """``import_archive *extra``: what the archive logged of it, and its wall time."""
    archive.state.log.clear()
    started = time.perf_counter()
    manage(env, "import_archive", *extra)
    elapsed = time.perf_counter() - started
    cdx = archive.requests_to("cdx")
    return {
        "cdx": len(cdx),
        "from": sum("from" in e.query for e in cdx),
        "cdx_bytes": sum(e.sent for e in cdx),
        "mementos": len(archive.requests_to("web")),
        "seconds": elapsed,
    }


def print_refresh_costs(runs: list[tuple[str, dict[str, float]]], sites: int) -> None:
    print(f"Archive requests, {sites:,}-site demo archive served like the Internet Archive:")
    for label, run in runs:
        print(
            f"  {label:<50}: {run['cdx']:>6,.0f} CDX requests ({run['from']:,.0f} with "
            f"'from', {run['cdx_bytes'] / 1e6:,.1f} MB), {run['mementos']:>7,.0f} memento "
            f"fetches, {run['seconds']:,.0f} s"
        )


def main() -> None:
    parser = argument_parser(__doc__)
    parser.add_argument("--lines", type=int, default=200_000)
    parser.add_argument("--sites", type=int, help="2,000 (20,000 with --paper-scale)")
    parser.add_argument("--pages", type=int, default=1000, help="pages for link extraction")
    parser.add_argument("--refresh-sites", type=int, default=2_000, help="sites of the refresh")
    parser.add_argument("--refresh-only", action="store_true", help="only the refresh part")
    parser.add_argument("--paper-scale", action="store_true", help="the paper-scale archive cost")
    parser.add_argument("--sample", type=int, default=500, help="paper scale: seeds through HACS")
    parser.add_argument("--nights", type=int, default=30, help="paper scale: nights")
    parser.add_argument("--seed", type=int, default=0, help="paper scale: the collection's seed")
    options = parser.parse_args()
    if options.paper_scale:
        _paper_scale(options)
        return
    options.sites = options.sites or 2_000
    if options.refresh_only:
        with tempfile.TemporaryDirectory(prefix="hacs-bench-") as name, start_redis() as redis:
            runs = refresh_costs(Path(name), redis.url(), options.refresh_sites)
        print_refresh_costs(runs, options.refresh_sites)
        return
    with tempfile.TemporaryDirectory(prefix="hacs-bench-") as name:
        tmp = Path(name)
        _store_rates(tmp, options)
        # Link extraction is measured by bench.links (cold pages, one core); relay it.
        links = run_python(
            {**os.environ, **CHILD_ENV}, "-m", "bench.links", "--pages", str(options.pages)
        )
        print("Link extraction (python -m bench.links):")
        for line in links.strip().splitlines():
            print(f"  {line}")
        with start_redis() as redis:
            fetch = memento_fetches(tmp, redis.url())
            runs = refresh_costs(tmp, redis.url(), options.refresh_sites)
        print(
            f"Memento fetches on the demo archive: {fetch['fetches']:.0f} fetches for "
            f"{fetch['observations']:.0f} observations "
            f"({fetch['fetches'] / fetch['observations']:.3f} per observation); "
            f"distinct (urlkey, digest) pairs: {fetch['distinct_pairs']:.0f}"
        )
        print_refresh_costs(runs, options.refresh_sites)


def _paper_scale(options: argparse.Namespace) -> None:
    """What HACS asks of the Internet Archive for a paper-scale collection."""
    from bench import paper_scale

    with tempfile.TemporaryDirectory(prefix="hacs-bench-") as name, start_redis() as redis:
        paper_scale.run(
            sites=options.sites or 20_000,
            sample=options.sample,
            nights=options.nights,
            seed=options.seed,
            redis_url=redis.url(),
            tmp=Path(name),
        )


def _store_rates(tmp: Path, options: argparse.Namespace) -> None:
    """CDX lines parsed and stored a second, on SQLite and on PostgreSQL."""
    cdx = tmp / "bench.cdx"
    synthetic_cdx(cdx, sites=options.sites, lines=options.lines)
    print(f"CDX parse + store: {options.lines:,} lines for {options.sites:,} sites")
    sqlite = store_rate(cdx, options.sites, f"sqlite:///{tmp}/bench.sqlite3")
    print(
        f"  SQLite     : {sqlite['read'] / sqlite['seconds']:>10,.0f} lines/s "
        f"({sqlite['seconds']:.1f} s, {sqlite['stored']:,} captures stored)"
    )
    with start_postgres() as pg:
        postgres = store_rate(cdx, options.sites, postgres_url(pg, "postgres"))
    print(
        f"  PostgreSQL : {postgres['read'] / postgres['seconds']:>10,.0f} lines/s "
        f"({postgres['seconds']:.1f} s, {postgres['stored']:,} captures stored)"
    )


if __name__ == "__main__":
    main()
