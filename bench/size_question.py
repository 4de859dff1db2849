"""A refresh against CDX servers that cannot count pages: requests per group, and that it ends.

Run from the project root: ``.venv/bin/python -m bench.size_question [--sites 1000] [--seed 0]``.

Seeds of ``bench.collection`` (``--seed``): 5 archived seeds of each of the 12 largest
university hosts, and one seed alone on its host, 61 in all, served by the fake Internet Archive
(``testbed.ia_server``) three ways: as the Internet Archive answers (the size question
``showNumPages=true&pageSize=1`` answered with a number), as a CDX server without the pagination
API answers (the size question answered with the query's rows), and behind a proxy that answers
the size question with an HTML error page and status 200. HACS's own commands run in a throw-away
SQLite database and Redis: ``import_seeds``, the first ``import_archive`` (one query a seed),
then, after the archive indexed a night more, a refresh by hand (``import_archive``) and the
nightly job's import (``FromArchive(defer_splits=True)``, as ``operations.jobs.import_site``
runs it). Printed: per server and refresh, the CDX requests, of which size questions, the
groups asked, requests per group, and the seconds it took; the server logged every request.
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from bench.collection import Collection, CollectionSpec
from bench.common import argument_parser

NIGHTLY_SCRIPT = r"""
import django
django.setup()
from archive.models import Site
from archive.pipeline import FromArchive, sites_import
from operations.refresh import archive_client
ids = list(Site.objects.values_list("pk", flat=True))
sites_import(FromArchive(ids, defer_splits=True), client=archive_client())
"""
HTML_ERROR = (
    b"<!DOCTYPE html><html><head><title>502 Bad Gateway</title></head><body>"
    + b"<h1>Bad Gateway</h1><p>The upstream server did not answer in time.</p>" * 30
    + b"</body></html>"
)
SERVERS: dict[str, dict[str, Any]] = {
    "the Internet Archive (counts pages)": {},
    "a CDX server without the pagination API": {"paginated": False},
    "a proxy answering the size with an HTML page, 200": {"size_page": HTML_ERROR},
}


def chosen_seeds(collection: Collection) -> list[int]:
    """5 archived seeds of each of the 12 largest university hosts, and one lone seed."""
    hosts = sorted(
        (h for h in collection.hosts if h.kind == "institution"), key=lambda h: -len(h.seeds)
    )
    picked: list[int] = []
    for host in hosts[:12]:
        picked += [s for s in host.seeds if collection.seeds[s].archived][:5]
    lone = next(i for i, s in enumerate(collection.seeds) if s.kind == "personal" and s.archived)
    return [*picked, lone]


def main() -> int:
    from bench.paper_scale import SampleRun
    from scripts.localservers import start_redis
    from testbed.ia_server import IAArchive

    parser = argument_parser(__doc__)
    parser.add_argument("--sites", type=int, default=1_000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    collection = Collection(CollectionSpec(seeds=args.sites, seed=args.seed))
    history = collection.history_lines()
    night = collection.night(1)
    seeds = chosen_seeds(collection)
    hosts = len({collection.seeds[s].host for s in seeds})
    print(f"{len(seeds)} seeds on {hosts} hosts of bench.collection (seed {args.seed})")
    with tempfile.TemporaryDirectory(prefix="hacs-bench-") as name, start_redis() as redis:
        for n, (label, server) in enumerate(SERVERS.items()):
            with IAArchive(lines=history, body_for=collection.body_for, **server) as archive:
                run = SampleRun(
                    Path(name),
                    archive,
                    redis.url(),
                    [collection.seeds[s].url for s in seeds],
                    name=f"s{n}",
                )
                first = run.first_import()
                archive.add_lines(night)
                print(
                    f"\n{label}: the first import sent {first.cdx:,.0f} requests "
                    f"({first.extra['sizing']} size questions)"
                )
                command = [sys.executable, "manage.py", "import_archive"]
                _refresh(run, archive, "a refresh by hand (import_archive)", command)
                command = [sys.executable, "-c", NIGHTLY_SCRIPT]
                _refresh(run, archive, "the nightly job's import", command)
    return 0


def _refresh(run: Any, archive: Any, label: str, command: list[str]) -> None:
    started = time.perf_counter()
    cost = run.measured(command)
    seconds = time.perf_counter() - started
    firsts = [
        e.query
        for e in archive.requests_to("cdx")
        if "showNumPages" not in e.query and "resumeKey" not in e.query
    ]
    asked = Counter((q.get("url"), q.get("matchType")) for q in firsts)
    queries = len(asked)
    print(
        f"  {label}: {cost.cdx:,.0f} CDX requests, of which {cost.extra['sizing']} size "
        f"questions, for {queries} queries (every group and the lone seed, each asked "
        f"{max(asked.values())} time(s) at most): {cost.cdx / max(1, queries):.2f} requests "
        f"a query; ended by itself in {seconds:,.0f} s"
    )


if __name__ == "__main__":
    sys.exit(main())
