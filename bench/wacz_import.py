"""Benchmark: a 1 GiB WACZ of 20,000 records read back through the crawl inbox — peak memory and
time (issue "the crawl comes home": ≤ 200 MB of resident memory, ≤ 10 minutes).

Run from the project root::

    .venv/bin/python -m bench.wacz_import [--records 20000] [--gib 1.0] [--sites 200] [--seed 0]

It writes a WACZ as browsertrix-crawler does (one ``archive/data.warc.gz`` stored in the ZIP,
an index, pages and ``datapackage.json``): ``--records`` responses of ``--sites`` seeds' pages
to depth 2, four in five of them HTML pages of about 20 KB with 60 links each and one in five a
PDF of random bytes sized so that the PDFs alone fill ``--gib`` GiB (the file is a little
larger). A fresh process (so that
``ru_maxrss`` is the import's own; another one migrated a throw-away SQLite database and added
the seeds) finds the file in the crawl inbox and runs what the scheduler runs,
``operations.readback.inbox_read_back``: the WACZ read with ``hacs.formats.wacz``, every
capture stored, every HTML page's links parsed, the sites' updates and estimates computed, the
file moved to ``done/``. It prints the file's size, the wall and CPU time of the read-back, the
peak resident memory of the process and what it held before the import, and the captures
stored. The same seed writes the same records.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import resource
import tempfile
import time
import zipfile
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from bench.common import bench_child, bench_parser, database_env

HTML_SHARE = 0.8
HTML_LINKS = 60
START = datetime(2026, 1, 5, tzinfo=UTC)


def seed_url(site: int) -> str:
    return f"http://www.bench-university.edu/~u{site:04d}/"


def page_url(site: int, n: int) -> str:
    """Page ``n`` of a site: its homepage, pages at depth 1, and pages at depth 2."""
    if n % 7 == 0:
        return seed_url(site)
    if n % 7 < 4:
        return f"{seed_url(site)}p{n % 40}.html"
    return f"{seed_url(site)}teaching/c{n % 25}/index.html"


def html_body(rng: np.random.Generator, site: int, n: int) -> bytes:
    links = "".join(
        f'<li><a href="https://doi.org/10.{1000 + site}/{int(k)}">Paper {int(k)}</a> '
        f"{'lorem ipsum dolor sit amet ' * 10}</li>\n"
        for k in rng.integers(0, 400, size=HTML_LINKS)
    )
    head = f"<html><head><title>u{site} {n}</title></head>"
    return f"{head}<body><ul>{links}</ul></body></html>".encode()


def write_wacz(path: Path, *, records: int, sites: int, target_bytes: int, seed: int) -> int:
    """Write the WACZ; returns the number of response records in it."""
    rng = np.random.default_rng(seed)
    warc = path.with_suffix(".warc.gz")
    pdfs = records - int(records * HTML_SHARE)
    pdf_size = max(1024, target_bytes // max(pdfs, 1))  # the pages come on top: ≥ the target
    with open(warc, "wb") as stream:
        writer = WARCWriter(stream, gzip=True, warc_version="WARC/1.1")
        for r in range(records):
            site, n = r % sites, r // sites
            moment = START + timedelta(seconds=r)
            if r % 5 == 4:
                url, body, mime = (
                    f"{seed_url(site)}cv{n}.pdf",
                    rng.bytes(pdf_size),
                    "application/pdf",
                )
            else:
                url, body, mime = page_url(site, n), html_body(rng, site, n), "text/html"
            http = StatusAndHeaders("200 OK", [("Content-Type", mime)], protocol="HTTP/1.1")
            record = writer.create_warc_record(
                url,
                "response",
                payload=io.BytesIO(body),
                length=len(body),
                http_headers=http,
                warc_headers_dict={"WARC-Date": moment.strftime("%Y-%m-%dT%H:%M:%SZ")},
            )
            writer.write_record(record)
    with zipfile.ZipFile(path, "w", allowZip64=True) as archive:
        archive.write(warc, "archive/data.warc.gz", compress_type=zipfile.ZIP_STORED)
        archive.writestr("indexes/index.cdx", b"", compress_type=zipfile.ZIP_DEFLATED)
        archive.writestr("pages/pages.jsonl", b'{"format": "json-pages-1.0"}\n')
        archive.writestr("datapackage.json", json.dumps({"wacz_version": "1.1.1"}))
    warc.unlink()
    return records


# --- The child: the import, in a process of its own ---------------------------------------------


def prepare(sites: int) -> dict[str, Any]:
    """The database: migrated, with the seeds (a process of its own: migrating holds far more
    memory than any import, and that is not the import's)."""
    import django

    django.setup()
    from django.core.management import call_command

    from archive.models import Site

    call_command("migrate", verbosity=0)
    Site.objects.bulk_create(
        Site(seed_url=seed_url(s), canonical_key=f"edu,bench-university)/~u{s:04d}")
        for s in range(sites)
    )
    return {"sites": Site.objects.count()}


def measure(inbox: str) -> dict[str, Any]:
    import django

    django.setup()
    from archive.models import Capture
    from jobs.models import JobRecord
    from operations.readback import inbox_read_back

    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    wall, cpu = time.perf_counter(), time.process_time()
    record = inbox_read_back()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    assert record is not None
    record = JobRecord.objects.get(pk=record.pk)
    return {
        "wall": wall,
        "cpu": cpu,
        "before_kib": before,
        "peak_kib": peak,
        "captures": Capture.objects.count(),
        "status": record.status,
        "counts": record.counts,
        "done": sorted(os.listdir(Path(inbox) / "done")),
    }


def child(env: dict[str, str], *arguments: str) -> dict[str, Any]:
    return bench_child(env, "bench.wacz_import", *arguments)


def main() -> None:
    parser = bench_parser(__doc__, sites=200, demo=False)
    parser.add_argument("--records", type=int, default=20_000, help="default 20,000")
    parser.add_argument("--gib", type=float, default=1.0, help="size of the WACZ, default 1.0")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        action, value = args.child
        print(json.dumps(prepare(int(value)) if action == "prepare" else measure(value)))
        return
    with tempfile.TemporaryDirectory(prefix="hacs-bench-wacz-") as name:
        directory = Path(name)
        inbox = directory / "inbox"
        inbox.mkdir()
        path = inbox / "crawl.wacz"
        began = time.perf_counter()
        write_wacz(
            path,
            records=args.records,
            sites=args.sites,
            target_bytes=int(args.gib * 1024**3),
            seed=args.seed,
        )
        size = path.stat().st_size
        print(
            f"WACZ      : {size / 1024**3:.3f} GiB ({size:,} bytes), {args.records:,} records "
            f"of {args.sites} seeds, written in {time.perf_counter() - began:.0f} s "
            f"(seed {args.seed})"
        )
        env = {
            **database_env(directory / "bench.sqlite3", directory / "var", quiet=True),
            "HACS_CRAWL_INBOX": str(inbox),
            "HACS_CRAWL_INBOX_SETTLE_SECONDS": "0",
        }
        child(env, "prepare", str(args.sites))
        run = child(env, "measure", str(inbox))
    report(run, args.records)


def report(run: dict[str, Any], records: int) -> None:
    counts = run["counts"]
    print(
        f"read back : {run['wall']:.1f} s wall, {run['cpu']:.1f} s CPU "
        f"({records / run['wall']:,.0f} records/s); job {run['status']}; moved to done/: "
        f"{', '.join(run['done'])}"
    )
    print(
        f"stored    : {run['captures']:,} captures, {counts.get('pages parsed', 0):,} pages parsed"
    )
    peak, before = run["peak_kib"] / 1024, run["before_kib"] / 1024
    print(
        f"memory    : peak RSS {peak:.0f} MiB ({peak * 1.048576:.0f} MB); {before:.0f} MiB "
        f"held before the import (Django and HACS loaded)"
    )
    print(
        f"goals     : ≤ 200 MB RSS: {'met' if peak * 1.048576 <= 200 else 'MISSED'}; "
        f"≤ 10 minutes: {'met' if run['wall'] <= 600 else 'MISSED'}"
    )


if __name__ == "__main__":
    main()
