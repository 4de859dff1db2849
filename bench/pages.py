"""Page speed with 20,000 sites: server time of the Overview, Evaluation, Jobs and Sites pages, a
Site page and the crawl-list CSV (median and p95 of 50 requests each).

Run from the project root: ``.venv/bin/python -m bench.pages [--sites N] [--requests N]``.
It builds a throw-away SQLite database (or uses ``--database-url``) with synthetic sites, each
with homepage captures, update data and stored estimates, a stored crawl list of every site,
and times requests through Django's test client (server time: no network, no browser).
Goals: p95 under 300 ms for pages, under 2 s for the full CSV.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from datetime import UTC, datetime, timedelta
from typing import Any

from bench.common import argument_parser

START = datetime(2015, 6, 1, tzinfo=UTC)  # the captures' first possible moment


def build(sites: int) -> int:
    """Synthetic sites with captures, estimates and a crawl list; returns a busy site's id."""
    from datetime import date

    import numpy as np

    from scheduling.crawl_lists import CrawlListOptions, crawl_list_store
    from scheduling.estimates import estimates_recompute
    from scheduling.models import CrawlList

    ids = _sites_create(sites)
    _captures_insert(ids, np.random.default_rng(7))
    started = time.perf_counter()
    estimates_recompute()
    print(
        f"recompute of all estimates (2 levels × 3 methods): {time.perf_counter() - started:.1f} s"
    )
    started = time.perf_counter()
    crawl_list_store(
        day=date(2018, 6, 1), options=CrawlListOptions(theta=0.0), source=CrawlList.Source.DAILY_JOB
    )
    print(f"building a crawl list of every site: {time.perf_counter() - started:.2f} s")
    return _busiest(ids)


def _sites_create(sites: int) -> list[int]:
    """The sites, each with one of 20 tags; their ids in order."""
    from archive.models import Site, Tag

    tags = Tag.objects.bulk_create([Tag(name=f"dept-{i}") for i in range(20)])
    Site.objects.bulk_create(
        Site(
            seed_url=f"http://cs{i % 97}.uni{i % 89}.edu/~author{i}/",
            canonical_key=f"edu,uni{i % 89},cs{i % 97})/~author{i}",
            author=f"Author {i}",
            import_status="done",
        )
        for i in range(sites)
    )
    ids = list(Site.objects.order_by("pk").values_list("pk", flat=True))
    through = Site.tags.through
    through.objects.bulk_create(
        through(site_id=pk, tag_id=tags[n % 20].pk) for n, pk in enumerate(ids)
    )
    return ids


CAPTURE_COLUMNS = (
    "site_id, url, urlkey, page_key, timestamp, depth, mimetype, status, digest, length, "
    "source, kind, is_observation, page_index, link_floor, new_links"
)


def _captures_insert(ids: list[int], rng: Any) -> None:
    """Each site's homepage captures over three years, updated at a rate of its own."""
    from django.db import connection

    sql = f"INSERT INTO archive_capture ({CAPTURE_COLUMNS}) VALUES ({', '.join(['%s'] * 16)})"
    rows: list[tuple[Any, ...]] = []
    for n, pk in enumerate(ids):
        rows += _site_rows(n, pk, rng)
        if len(rows) > 50_000:
            with connection.cursor() as cursor:
                cursor.executemany(sql, rows)
            rows = []
    with connection.cursor() as cursor:
        cursor.executemany(sql, rows)


def _site_rows(n: int, pk: int, rng: Any) -> list[tuple[Any, ...]]:
    """The capture rows of site ``n`` (2 to 59 of them, updates drawn at its rate)."""
    import numpy as np

    count = int(rng.integers(2, 60))
    # Whole seconds, distinct: a site holds one capture of a URL per timestamp.
    days = np.unique(rng.integers(0, 3 * 365 * 86400, count)) / 86400.0
    rate = float(np.exp(rng.normal(np.log(1 / 140), 1.0)))
    key = f"edu,uni{n % 89},cs{n % 97})/~author{n}"
    rows = []
    for i, d in enumerate(days):
        updated = i > 0 and rng.random() < 1 - np.exp(-rate * (d - days[i - 1]))
        moment = START + timedelta(days=float(d))
        stamp = str(moment.replace(microsecond=0))[:19]
        rows.append(
            (pk, f"http://x/{n}", key, key, stamp, 0, "text/html", 200, f"D{i}", 1000, "bench")
            + ("observation", True, i, -1 if updated else i - 1, 1 if updated else 0)
        )
    return rows


def _busiest(ids: list[int]) -> int:
    """The site with the most captures."""
    from django.db.models import Count

    from archive.models import Capture

    busiest = (
        Capture.objects.values("site_id").order_by().annotate(n=Count("id")).order_by("-n").first()
    )
    return int(busiest["site_id"]) if busiest else ids[0]


def timed(client: object, url: str, requests: int, *, stream: bool = False) -> list[float]:
    times = []
    for _ in range(requests):
        started = time.perf_counter()
        response = client.get(url)  # type: ignore[attr-defined]
        if stream:
            b"".join(response.streaming_content)
        else:
            response.content  # noqa: B018
        times.append(time.perf_counter() - started)
        assert response.status_code == 200, (url, response.status_code)
    return times


def report(name: str, times: list[float], goal: float) -> None:
    times = sorted(times)
    median = statistics.median(times)
    p95 = times[max(0, int(round(0.95 * len(times))) - 1)]
    verdict = "meets" if p95 < goal else "MISSES"
    print(
        f"{name:<28} median {median * 1000:7.1f} ms   p95 {p95 * 1000:7.1f} ms   "
        f"({verdict} the {goal * 1000:.0f} ms goal)"
    )


def main() -> None:
    parser = argument_parser(__doc__)
    parser.add_argument("--sites", type=int, default=20_000)
    parser.add_argument("--requests", type=int, default=50)
    parser.add_argument("--database-url", default="")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="hacs-pages-") as tmp:
        os.environ["DATABASE_URL"] = options.database_url or f"sqlite:///{tmp}/pages.sqlite3"
        os.environ["HACS_VAR_DIR"] = tmp
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "hacs_site.settings")
        import django

        django.setup()
        from django.conf import settings
        from django.contrib.auth import get_user_model
        from django.core.management import call_command
        from django.test import Client

        from scheduling.models import CrawlList

        settings.ALLOWED_HOSTS = ["testserver"]
        call_command("migrate", verbosity=0)
        started = time.perf_counter()
        busy = build(options.sites)
        print(f"built {options.sites:,} sites in {time.perf_counter() - started:.1f} s")
        user = get_user_model().objects.create_superuser("bench", "", "bench password")
        client = Client()
        client.force_login(user)
        crawl = CrawlList.objects.get()
        n = options.requests
        report("Overview", timed(client, "/", n), 0.3)
        report("Evaluation page", timed(client, "/evaluation/", n), 0.3)
        report("Jobs page", timed(client, "/jobs/", n), 0.3)
        report("Sites page", timed(client, "/sites/", n), 0.3)
        report("Sites page, sorted by p", timed(client, "/sites/?sort=-probability&page=7", n), 0.3)
        report("Sites page, search", timed(client, "/sites/?q=Author%2012", n), 0.3)
        report(f"Site page (busiest, {busy})", timed(client, f"/sites/{busy}/", n), 0.3)
        report("Crawl list page", timed(client, f"/crawl-list/?list={crawl.pk}", n), 0.3)
        report(
            f"Crawl-list CSV ({crawl.entries.count():,} rows)",
            timed(client, f"/crawl-list/{crawl.pk}.csv", n, stream=True),
            2.0,
        )


if __name__ == "__main__":
    main()
