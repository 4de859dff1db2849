"""Issue #26's fault storm: what one import_archive of 30 sites costs when a few of them misbehave,
and whether import_archive --failed completes it once the faults are gone.

Run from the project root: ``.venv/bin/python -m bench.fault_storm [--sites 30] [--seed 0]``.
The sites are a demo archive's (``hacs_demo``), served like the Internet Archive by
``testbed.ia_server`` on 127.0.0.1 in this process; HACS's own commands (``import_seeds``,
``import_archive``) run as subprocesses on a throw-away SQLite database and a throw-away Redis,
with ``HACS_HTTP_TIMEOUT=3`` and, unless ``--cdx-rate``/``--memento-rate`` say otherwise,
HACS's default rates. Seven sites, drawn with ``--seed``, misbehave on every request about
them unless a count is given: one's CDX answer trickles at 1 byte a second; one answers every
resume key with its first page again; one answers 429 with ``Retry-After: 10`` twice; one
answers 503 always, another three times; one's CDX body is cut half-way always; one memento
of one site has its connection reset always.

The bench prints, for the storm and then for ``import_archive --failed`` with the faults
cleared: the wall time, the sites imported and failed (each failure's sentence, cut at 100
characters), and the CDX requests and mementos the archive logged; at the end, whether every
site ended imported. Figures only, no thresholds. A command still running after ``--timeout``
seconds is interrupted (as Ctrl-C would, so its sites end failed; killed if it has not ended
150 s later) and reported as not ended.
"""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from bench.common import (
    ROOT,
    bench_parser,
    demo_archive,
    fake_archive_env,
    last_json,
    manage,
    run_python,
)
from hacs.formats.canon import SeedScope
from hacs.formats.cdx import memento_url
from scripts.localservers import start_redis
from testbed.ia_server import Aimed, Fault, IAArchive, Row, ia_rows_and_bodies

SENTENCE_CHARS = 100
HTTP_TIMEOUT = "3"
INTERRUPT_GRACE = 150.0  # seconds an interrupted import has to mark its sites failed

# Each site's import status, its error and whether some of its pages could not be fetched.
STATUS_SCRIPT = r"""
import json, django
django.setup()
from archive.models import Site
from operations.refresh import sites_with_failed_fetches
missing = set(sites_with_failed_fetches())
print(json.dumps([[s.seed_url, s.import_status, s.import_error, s.pk in missing]
                  for s in Site.objects.order_by("pk")]))
"""


@dataclass(frozen=True)
class Run:
    """One command's figures: wall time, whether it ended, what the archive logged."""

    label: str
    seconds: float
    ended: bool
    exit_code: int | None
    sites: list[list[Any]]  # [seed URL, status, error, pages missing]
    cdx_requests: int
    mementos: int
    resets: int
    timeline: str = ""  # when the archive saw requests, from the command's start


def storm(archive: IAArchive, seeds: list[str], rows: list[Row], rng: random.Random) -> list[str]:
    """Aim the issue's faults at seven sites drawn by ``rng``; what each site gets, as lines."""
    trickle, endless, throttled, down, flaky, cut, reset = rng.sample(seeds, 7)
    query = {seed: SeedScope.from_url(seed).cdx_query_url() for seed in seeds}
    state = archive.state
    state.aimed += [
        Aimed(query[trickle], Fault("trickle", on="cdx", interval=1.0)),
        Aimed(query[throttled], Fault("status", status=429, retry_after="10", on="cdx"), 2),
        Aimed(query[down], Fault("status", status=503, on="cdx")),
        Aimed(query[flaky], Fault("status", status=503, on="cdx"), 3),
        Aimed(query[cut], Fault("cut", on="cdx")),
    ]
    state.endless_prefixes.add(query[endless])
    # The homepage's newest content, at its first capture: the one capture of it the import
    # fetches (``archive.snapshots.snapshots_missing``).
    scope = SeedScope.from_url(reset)
    first: dict[tuple[str, str], Row] = {}
    for row in sorted(rows, key=lambda r: r.timestamp):
        if scope.is_homepage(row.urlkey) and row.status == "200" and "html" in row.mimetype:
            first.setdefault((row.urlkey, row.digest), row)
    homepage = max(first.values(), key=lambda r: r.timestamp)
    path = urlsplit(
        memento_url(archive.wayback_url, homepage.timestamp, homepage.original, raw=True)
    ).path
    state.aimed.append(Aimed(path, Fault("reset", on="web")))
    return [
        f"CDX answer trickled at 1 byte/s: {trickle}",
        f"every resume key answered with the first page: {endless}",
        f"429 with Retry-After: 10, twice: {throttled}",
        f"503 always: {down}",
        f"503 three times: {flaky}",
        f"CDX body cut half-way always: {cut}",
        f"connection reset always: the memento {path}",
    ]


def calm(archive: IAArchive) -> None:
    """Clear every fault."""
    with archive.state.lock:
        archive.state.aimed.clear()
        archive.state.faults.clear()
    archive.state.endless_prefixes.clear()


def site_statuses(env: dict[str, str]) -> list[list[Any]]:
    statuses: list[list[Any]] = last_json(run_python(env, "-c", STATUS_SCRIPT))
    return statuses


def timed_import(
    label: str, archive: IAArchive, env: dict[str, str], timeout: float, *args: str
) -> Run:
    """Run ``import_archive *args``; interrupt it (SIGINT, as Ctrl-C) after ``timeout`` s."""
    with archive.state.lock:
        archive.state.log.clear()
    started = time.perf_counter()
    began = time.monotonic()  # the fake logs arrivals on this clock
    ended, code = _import_until(env, timeout, *args)
    seconds = time.perf_counter() - started
    web = archive.requests_to("web")
    cdx = archive.requests_to("cdx")
    return Run(
        label,
        seconds,
        ended,
        code,
        site_statuses(env),
        len(cdx),
        len(web),
        sum(1 for e in web if e.status == 0),
        _timeline(cdx, web, began),
    )


def _import_until(env: dict[str, str], timeout: float, *args: str) -> tuple[bool, int | None]:
    """``import_archive *args``, interrupted after ``timeout`` s: whether it ended, and how."""
    child = subprocess.Popen(
        [sys.executable, str(ROOT / "manage.py"), "import_archive", *args],
        env=env,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        return True, child.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        child.send_signal(signal.SIGINT)  # its unfinished sites end failed, as interrupted
        try:
            # Requests already sent end by their deadline (HACS_HTTP_DEADLINE, 60 s).
            child.wait(timeout=INTERRUPT_GRACE)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
    return False, None


def _timeline(cdx: list[Any], web: list[Any], began: float) -> str:
    """When the archive saw the last requests, from the command's start."""
    if not cdx:
        return ""
    by_url: dict[str, list[float]] = {}
    for entry in cdx:
        by_url.setdefault(entry.query.get("url", ""), []).append(entry.at - began)
    last = max(by_url.items(), key=lambda item: item[1][-1])
    return (
        f"last CDX request at {max(e.at for e in cdx) - began:,.0f} s (the latest query's "
        f"attempts: {', '.join(f'{t:,.0f}' for t in last[1])} s, {last[0]}); last memento "
        f"request at {max((e.at for e in web), default=began) - began:,.0f} s"
    )


def report(run: Run, timeout: float) -> None:
    print(f"\n{run.label}")
    if run.ended:
        print(f"  wall time: {run.seconds:,.0f} s (exit code {run.exit_code})")
    else:
        print(f"  did not end within {timeout:,.0f} s (interrupted after {run.seconds:,.0f} s)")
    done = [s for s in run.sites if s[1] == "done"]
    failed = [s for s in run.sites if s[1] == "failed"]
    other = len(run.sites) - len(done) - len(failed)
    missing = sum(1 for s in done if s[3])
    print(
        f"  sites imported: {len(done)} ({missing} with pages not fetched); failed: "
        f"{len(failed)}" + (f"; neither: {other}" if other else "")
    )
    for seed, _status, error, _missing in failed:
        print(f"    {seed}: {error[:SENTENCE_CHARS]}")
    print(
        f"  archive logged: {run.cdx_requests:,} CDX requests, {run.mementos:,} mementos "
        f"({run.resets} connections reset)"
    )
    if run.timeline:
        print(f"  {run.timeline}")


def main() -> None:
    parser = bench_parser(__doc__, sites=30)
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per command")
    parser.add_argument("--cdx-rate", type=float, default=24.0, help="CDX requests a minute")
    parser.add_argument("--memento-rate", type=float, default=480.0, help="mementos a minute")
    options = parser.parse_args()

    with (
        tempfile.TemporaryDirectory(prefix="hacs-bench-") as name,
        start_redis() as redis_server,
        demo_archive(options.sites, options.seed, bursts=not options.no_bursts) as demo,
    ):
        rows, bodies = ia_rows_and_bodies(demo)
        with IAArchive(rows, bodies) as archive:
            env = {
                **fake_archive_env(archive, redis_server.url(), Path(name) / "storm.sqlite3"),
                "HACS_HTTP_TIMEOUT": HTTP_TIMEOUT,
                "HACS_CDX_RATE_PER_MINUTE": str(options.cdx_rate),
                "HACS_MEMENTO_RATE_PER_MINUTE": str(options.memento_rate),
            }
            manage(env, "migrate", "--verbosity", "0")
            manage(env, "import_seeds", str(demo.seeds_path))
            seeds = [site[0] for site in site_statuses(env)]
            faults = storm(archive, seeds, rows, random.Random(options.seed))

            print(
                f"Fault storm: {len(seeds)} sites of a demo archive (seed {options.seed}), "
                f"{len(rows):,} captures, served like the Internet Archive; "
                f"{options.cdx_rate:g} CDX requests and {options.memento_rate:g} mementos a "
                f"minute, HACS_HTTP_TIMEOUT={HTTP_TIMEOUT}, other settings at their "
                "defaults"
            )
            for line in faults:
                print(f"  {line}")
            first = timed_import("import_archive (the storm)", archive, env, options.timeout)
            report(first, options.timeout)
            calm(archive)
            again = timed_import(
                "import_archive --failed (faults cleared)",
                archive,
                env,
                options.timeout,
                "--failed",
            )
            report(again, options.timeout)
    complete = all(s[1] == "done" and not s[3] for s in again.sites)
    print(f"\nevery site ended imported, every page fetched: {'yes' if complete else 'no'}")


if __name__ == "__main__":
    main()
