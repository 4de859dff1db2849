"""Benchmark: what reading the crawls back buys — 28 days of a demo world crawled from each
day's list, with the crawls read back and without (the list from the archive's copies only).

Run from the project root::

    .venv/bin/python -m bench.crawl_loop [--sites 600] [--seeds 0,1,2] [--days 28]
        [--budgets 0.02,0.05]

For each seed it writes a demo archive with known truth (``hacs_demo``, 2015-06-01 to
2018-06-01) and splits its WARC at the start of the last ``--days`` days: the captures before
are the history, imported into a throw-away SQLite database with the seed list; the archive's
captures of each later day are imported the next night (``sites_refresh``, as the nightly
refresh would bring them). Then, for each budget share and with and without read-back, a fresh
process replays the days on a copy of that database, running what ships:

1. the daily job, ``operations.daily.daily_crawl_list_and_hand_offs`` (HACS's "today" set to
   the day), which builds the list with the daily defaults (``HACS_BUDGET`` = share × sites,
   no θ) and hands it to a Heritrix hand-off (``HACS_HERITRIX_ROOT``);
2. a fake Heritrix that takes the ``action/`` seeds file and crawls each listed seed's homepage
   at noon, rendering it as the demo world holds it then (``hacs_demo.render``), into a WARC
   file in ``JOB/LAUNCH/warcs/`` (written ``.open``, then renamed);
3. with read-back only: the scheduler's read-back, ``operations.readback.crawl_read_back``,
   which finds the file and imports it.

A crawl *finds a change* when the demo's homepage had a link-adding event (the truth) after
the newest copy the library held before the crawl: the later of the archive's newest homepage
capture and the library's own previous crawl of the site (kept in both runs: without
read-back the library still holds its WARC files, HACS just never reads them). The table:
changes found per crawl and in total per seed, budget and run, and the ratio with/without read-
back (goal ≥ 1.1 at both budgets, on every seed). The same seed writes the same world.
"""

from __future__ import annotations

import argparse
import bisect
import io
import json
import os
import shutil
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

from warcio.archiveiterator import ArchiveIterator
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from bench.common import END, START, argument_parser, bench_child, database_env

JOB = "scholars"
LAUNCH = "20180101000000"
HAND_OFF = "Scholars on Heritrix"


# --- The parent: the world, its archive split by day, the runs ------------------------------------


def split_warc(warc: Path, out: Path, first: date, days: int) -> None:
    """``history.warc.gz`` (records before ``first``) and ``day-NN.warc.gz`` (the records of
    each later day), copied record by record (one gzip member each)."""
    data = warc.read_bytes()
    parts: dict[str, list[bytes]] = {}
    iterator = ArchiveIterator(io.BytesIO(data))
    for record in iterator:
        when = record.rec_headers.get_header("WARC-Date") or ""
        record.raw_stream.read()
        iterator.read_to_end(record)
        start, length = iterator.get_record_offset(), iterator.get_record_length()
        if record.rec_type not in ("response", "revisit") or not when:
            continue
        day = datetime.fromisoformat(when.replace("Z", "+00:00")).date()
        offset = (day - first).days
        name = "history" if offset < 0 else f"day-{offset:02d}" if offset < days else ""
        if name:
            parts.setdefault(name, []).append(data[start : start + length])
    for name, members in parts.items():
        (out / f"{name}.warc.gz").write_bytes(b"".join(members))


def child(env: dict[str, str], *arguments: str) -> dict[str, Any]:
    return bench_child(env, "bench.crawl_loop", json.dumps(arguments))


def environment(directory: Path, database: Path) -> dict[str, str]:
    return {
        **database_env(database, directory / "var", quiet=True),
        "HACS_HERITRIX_ROOT": str(directory / "jobs"),
        "HACS_CRAWL_READBACK_CRON": "off",
    }


def seed_runs(seed: int, args: argparse.Namespace) -> list[dict[str, Any]]:
    from hacs_demo import build_demo_archive

    first = END - timedelta(days=args.days)
    runs = []
    with tempfile.TemporaryDirectory(prefix="hacs-bench-loop-") as name:
        directory = Path(name)
        began = time.perf_counter()
        demo = build_demo_archive(directory / "demo", sites=args.sites, seed=seed)
        split_warc(demo.warc_path, directory / "demo", first, args.days)
        base = directory / "base.sqlite3"
        built = child(environment(directory, base), "base", str(directory / "demo"))
        print(
            f"seed {seed}: {args.sites} sites, {demo.captures:,} captures; history of "
            f"{built['captures']:,} captures imported in {time.perf_counter() - began:.0f} s",
            flush=True,
        )
        for share in args.budgets:
            for readback in (True, False):
                work = directory / f"run-{share}-{readback}"
                work.mkdir()
                shutil.copy(base, work / "db.sqlite3")
                result = child(
                    environment(work, work / "db.sqlite3"),
                    "run",
                    str(directory / "demo"),
                    str(seed),
                    str(args.sites),
                    str(share),
                    str(int(readback)),
                    first.isoformat(),
                    str(args.days),
                )
                result.update(seed=seed, share=share, readback=readback)
                runs.append(result)
                print(
                    f"  {share:.0%} {'with' if readback else 'without'} read-back: "
                    f"{result['changes']} changes in {result['crawls']} crawls "
                    f"({result['seconds']:.0f} s)",
                    flush=True,
                )
                shutil.rmtree(work)
    return runs


def report(runs: list[dict[str, Any]], budgets: list[float]) -> None:
    print("\nchanges found (per crawl) — with read-back | without | ratio")
    for share in budgets:
        rows = [r for r in runs if r["share"] == share]
        seeds = sorted({r["seed"] for r in rows})
        total = {True: [0, 0], False: [0, 0]}
        for seed in seeds:
            got = {r["readback"]: r for r in rows if r["seed"] == seed}
            for flag in (True, False):
                total[flag][0] += got[flag]["changes"]
                total[flag][1] += got[flag]["crawls"]
            print(
                f"  {share:.0%} seed {seed}: {_cell(got[True])} | {_cell(got[False])} | "
                f"{_ratio(got[True]['changes'], got[False]['changes'])}"
            )
        print(
            f"  {share:.0%} total : {total[True][0]} ({total[True][0] / total[True][1]:.3f}) "
            f"| {total[False][0]} ({total[False][0] / total[False][1]:.3f}) | "
            f"{_ratio(total[True][0], total[False][0])}"
        )
    for share in budgets:
        for flag in (True, False):
            per_day = [r["per_day"] for r in runs if r["share"] == share and r["readback"] == flag]
            days = [sum(day) for day in zip(*per_day, strict=True)]
            print(
                f"  {share:.0%} {'with   ' if flag else 'without'} per day (all seeds): "
                f"{' '.join(str(d) for d in days)}"
            )


def _cell(run: dict[str, Any]) -> str:
    return f"{run['changes']} ({run['changes'] / max(run['crawls'], 1):.3f})"


def _ratio(a: int, b: int) -> str:
    return f"{a / b:.2f}×" if b else "∞"


# --- Child 1: the history, imported once per seed ------------------------------------------------


def base(demo_dir: str) -> dict[str, Any]:
    import django

    django.setup()
    from django.core.management import call_command

    from archive.models import Capture
    from archive.pipeline import FromWarcFiles
    from archive.seeds import seeds_import
    from operations.refresh import sites_refresh

    call_command("migrate", verbosity=0)
    seeds_import(data=(Path(demo_dir) / "seeds.csv").read_bytes())
    sites_refresh(FromWarcFiles([Path(demo_dir) / "history.warc.gz"]))
    return {"captures": Capture.objects.count()}


# --- Child 2: one run of the days -----------------------------------------------------------------


@dataclass
class Loop:
    """One run: the demo world, the library's crawls so far, what they found."""

    world: Any
    by_key: dict[str, Any]  # seed key → demo site
    job: Path
    last_crawl: dict[int, float]  # demo site index → seconds of its last crawl
    changes: int = 0
    crawls: int = 0


def run(
    demo_dir: str, seed: int, sites: int, share: float, readback: bool, first: str, days: int
) -> dict[str, Any]:
    import django

    django.setup()
    from django.conf import settings

    import hacs.clock
    from hacs.formats.canon import seed_key
    from hacs_demo.world import World
    from handoff.models import HandOff

    world = World(seed=seed, start=START, end=END)
    for index in range(sites):
        world.add_site(index)
    settings.HACS_BUDGET = max(1, round(share * sites))
    settings.HACS_THETA = None
    job = Path(settings.HACS_HERITRIX_ROOT) / JOB
    (job / "action").mkdir(parents=True)
    (job / LAUNCH / "warcs").mkdir(parents=True)
    HandOff.objects.create(name=HAND_OFF, kind=HandOff.Kind.HERITRIX_ACTION, job_dir=str(job))
    loop = Loop(world, {seed_key(s.seed_url): s for s in world.sites}, job, {})
    began = time.perf_counter()
    per_day = []
    start = date.fromisoformat(first)
    for offset in range(days):
        day = start + timedelta(days=offset)
        hacs.clock.today = lambda zone=None, *, now=None, day=day: day  # type: ignore[misc]
        before = loop.changes
        _one_day(loop, day, offset, Path(demo_dir), readback)
        per_day.append(loop.changes - before)
    return {
        "changes": loop.changes,
        "crawls": loop.crawls,
        "per_day": per_day,
        "seconds": time.perf_counter() - began,
    }


def _one_day(loop: Loop, day: date, offset: int, demo_dir: Path, readback: bool) -> None:
    from archive.pipeline import FromWarcFiles
    from operations.daily import daily_crawl_list_and_hand_offs
    from operations.readback import crawl_read_back
    from operations.refresh import sites_refresh

    night = demo_dir / f"day-{offset - 1:02d}.warc.gz"
    if offset and night.exists():  # the archive's copies of yesterday, learned overnight
        sites_refresh(FromWarcFiles([night]))
    daily_crawl_list_and_hand_offs()
    [seeds] = list((loop.job / "action").glob("*.seeds"))
    urls = [u for u in seeds.read_text().splitlines() if u and not u.startswith("#")]
    seeds.unlink()  # Heritrix moves what it took to its done directory
    noon = datetime(day.year, day.month, day.day, 12, tzinfo=UTC)
    _crawl(loop, urls, noon, offset)
    if readback:
        crawl_read_back()


def _crawl(loop: Loop, urls: list[str], noon: datetime, offset: int) -> None:
    """Heritrix's crawl of the listed homepages at noon: a WARC file, and the changes found."""
    from hacs.formats.canon import seed_key
    from hacs_demo.render import render

    span = loop.world.span
    sec = int((noon - span.t0).total_seconds())
    name = f"HACS-{noon:%Y%m%d%H%M%S}-{offset:05d}-4242~crawler~8443.warc.gz"
    path = loop.job / LAUNCH / "warcs" / f"{name}.open"
    with open(path, "wb") as stream:
        writer = WARCWriter(stream, gzip=True, warc_version="WARC/1.1")
        for url in urls:
            site = loop.by_key.get(seed_key(url))
            if site is None:
                continue
            page = site.pages[0]
            version = bisect.bisect_right(page.version_secs, sec) - 1
            if version < 0 or not page.is_html:
                continue
            body = render(site, page, version).body
            charset = "utf-8" if page.mime == "application/xhtml+xml" else site.style.charset
            http = StatusAndHeaders(
                "200 OK", [("Content-Type", f"{page.mime}; charset={charset}")], protocol="HTTP/1.1"
            )
            writer.write_record(
                writer.create_warc_record(
                    site.urls.main_url(page, sec),
                    "response",
                    payload=io.BytesIO(body),
                    length=len(body),
                    http_headers=http,
                    warc_headers_dict={"WARC-Date": noon.strftime("%Y-%m-%dT%H:%M:%SZ")},
                )
            )
            _count(loop, site, url, sec)
    os.replace(path, path.with_name(name))  # closed: Heritrix drops ".open"


def _count(loop: Loop, site: Any, url: str, sec: int) -> None:
    """One crawl, and whether it found a change: a link added to the homepage after the newest
    copy the library held (the archive's newest homepage capture, or its own last crawl)."""
    from django.db.models import Max

    from archive.models import Capture, Site
    from archive.sources import CRAWL_PREFIX
    from hacs.formats.canon import seed_key

    span = loop.world.span
    stored = Site.objects.filter(canonical_key=seed_key(url)).values_list("pk", flat=True).first()
    newest = (
        Capture.objects.filter(
            site_id=stored, depth=0, is_observation=True, timestamp__lt=span.at(sec)
        )
        .exclude(source__startswith=CRAWL_PREFIX)
        .aggregate(newest=Max("timestamp"))["newest"]
    )
    copy = max(
        loop.last_crawl.get(site.index, -1e18),
        (newest - span.t0).total_seconds() if newest is not None else -1e18,
    )
    adds = [e.sec for e in site.pages[0].events if e.kind == "add"]
    loop.crawls += 1
    loop.changes += any(copy < at <= sec for at in adds)
    loop.last_crawl[site.index] = sec


def main() -> None:
    parser = argument_parser(__doc__)
    parser.add_argument("--sites", type=int, default=600, help="default 600")
    parser.add_argument("--seeds", default="0,1,2", help="default 0,1,2")
    parser.add_argument("--days", type=int, default=28, help="default 28")
    parser.add_argument("--budgets", default="0.02,0.05", help="default 0.02,0.05")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        action, *rest = json.loads(args.child)
        if action == "base":
            result = base(rest[0])
        else:
            demo, seed, sites, share, readback, first, days = rest
            result = run(
                demo, int(seed), int(sites), float(share), readback == "1", first, int(days)
            )
        print(json.dumps(result))
        return
    args.budgets = [float(b) for b in args.budgets.split(",")]
    runs: list[dict[str, Any]] = []
    for seed in (int(s) for s in args.seeds.split(",")):
        runs += seed_runs(seed, args)
    report(runs, args.budgets)
    print(
        f"\n(--sites {args.sites} --seeds {args.seeds} --days {args.days}; the same seeds "
        "repeat these figures)"
    )


if __name__ == "__main__":
    main()
