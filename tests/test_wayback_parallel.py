"""One archive client shared by several threads, as the import's thread pool uses it: every
answer reaches the thread that asked, the counters add up to what the archive saw, the shared
rate limit still holds, and an unreachable archive is remembered once.

The archive is ``testbed.ia_server`` on 127.0.0.1 and the rate limit a real Redis; nothing
is timed but the rate limit itself, read from the arrival times the archive logged.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
import redis

from archive.wayback import ArchiveClient, ArchiveConfig, ArchiveUnreachableError
from hacs.formats.cdx import parse_cdx
from testbed.ia_server import Fault, IAArchive, Row, closed_port

pytestmark = pytest.mark.integration

THREADS = 8
SITES = 20
MEMENTOS_PER_SITE = 10
CDX_PER_MINUTE = 120.0


def site_rows(site: int, n: int) -> list[Row]:
    """``n`` captures of pages under ``example{site}.edu/~a``, ten per page at most."""
    return [
        Row(
            f"edu,example{site})/~a/p{i:03d}",
            f"201701{1 + i % 28:02d}000000",
            f"http://example{site}.edu/~a/p{i:03d}",
            "text/html",
            "200",
            f"D{site}-{i}",
            "100",
        )
        for i in range(n)
    ]


def body_for(stamp: str, url: str) -> tuple[bytes, str]:
    """Every memento is different, so that an answer handed to the wrong thread shows."""
    return f"<html>{stamp} {url}</html>".encode(), "text/html"


def ia_parse(text: str) -> tuple[list[str], str | None]:
    result = parse_cdx(text)
    return [r.urlkey for r in result.records], result.resume_key


def faulty_client(archive: IAArchive, redis_url: str) -> ArchiveClient:
    """A client of ``archive`` (CDX pages of 5 rows, the CDX rate limit under test), with
    throttling, server errors and cut answers queued on the way."""
    archive.state.faults.extend(
        [
            Fault("status", status=503, on="cdx"),
            Fault("status", status=429, retry_after="0", on="web"),
            Fault("status", status=503, on="web"),
            Fault("cut", on="web"),
            Fault("reset", on="web"),
            Fault("short", on="web"),
        ]
    )
    config = ArchiveConfig(
        cdx_url=archive.cdx_url,
        wayback_url=archive.wayback_url,
        page_size=5,
        cdx_per_minute=CDX_PER_MINUTE,
        memento_per_minute=6000,
        backoff_base=0.01,
        retries=3,
    )
    return ArchiveClient(config, redis.Redis.from_url(redis_url))


def run_in_threads(
    client: ArchiveClient, mementos: list[tuple[str, str]]
) -> dict[tuple[Any, ...], Any]:
    """Every site's CDX query and every memento's fetch, interleaved, on ``THREADS`` threads
    sharing ``client``: each answer under its task's arguments."""

    def query(site: int) -> list[str]:
        pages = client.cdx_pages(f"example{site}.edu/~a", ia_parse)
        return [key for page in pages for key in page]

    def fetch(stamp: str, url: str) -> bytes:
        return client.fetch_memento(stamp, url).body

    work: list[tuple[Callable[..., Any], tuple[Any, ...]]] = [
        (query, (site,)) for site in range(SITES)
    ]
    work += [(fetch, memento) for memento in mementos]
    random.Random(0).shuffle(work)  # queries and fetches interleaved
    with ThreadPoolExecutor(THREADS) as pool:
        futures = {args: pool.submit(task, *args) for task, args in work}
        return {args: future.result() for args, future in futures.items()}


def test_eight_threads_share_one_client_and_every_answer_reaches_its_thread(
    redis_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """8 threads fetch 200 mementos and run 20 CDX queries (two of them two pages long)
    through one client, with throttling, server errors and cut answers on the way."""
    sizes = {site: 8 if site in (3, 11) else 3 for site in range(SITES)}
    rows = [row for site, n in sizes.items() for row in site_rows(site, n)]
    mementos = [
        (f"201701{1 + i:02d}000000", f"http://example{site}.edu/~a/p{i:03d}")
        for site in range(SITES)
        for i in range(MEMENTOS_PER_SITE)
    ]
    with IAArchive(rows, body_for=body_for) as archive:
        client = faulty_client(archive, redis_url)
        seconds, micros = redis.Redis.from_url(redis_url).time()
        began = seconds + micros / 1e6  # Redis's clock, which the limiter schedules by
        with caplog.at_level(logging.WARNING):
            answers = run_in_threads(client, mementos)
        log = list(archive.state.log)

    for site, n in sizes.items():
        assert answers[(site,)] == [row.urlkey for row in site_rows(site, n)]
    for stamp, url in mementos:
        assert answers[(stamp, url)] == body_for(stamp, url)[0]

    cdx = [e for e in log if e.path == "/cdx/search/cdx"]
    web = [e for e in log if e.path.startswith("/web/")]
    pages = SITES + 2  # two sites have a second page
    assert client.stats.requests == len(log) == len(cdx) + len(web)
    assert client.stats.cdx_queries == pages and len(cdx) == pages + 1  # one 503
    assert client.stats.mementos == len(mementos) and len(web) == len(mementos) + 5
    assert client.stats.retries == len(log) - pages - len(mementos)

    # The shared limit held across the threads: the limiter's schedule, on Redis's one clock,
    # gave the CDX requests slots 0.5 s apart, so the last slot lies at least (n − 1) × 0.5 s
    # after the run began. (Read from the schedule, not from the arrivals, which a loaded
    # machine can bunch: a thread that wakes late sends its request next to the following one.)
    keys = redis.Redis.from_url(redis_url).keys("hacs:ratelimit:cdx:*")
    assert len(keys) == 1
    next_free = float(redis.Redis.from_url(redis_url).get(keys[0]))
    assert next_free - began >= len(cdx) * 60 / CDX_PER_MINUTE - 1e-6
    assert not [r for r in caplog.records if "pool is full" in r.getMessage()]


def test_threads_that_find_the_archive_unreachable_all_raise_the_first_sentence(
    redis_url: str,
) -> None:
    base = f"http://127.0.0.1:{closed_port()}"
    config = ArchiveConfig(
        cdx_url=f"{base}/cdx",
        wayback_url=f"{base}/web",
        cdx_per_minute=6000,
        memento_per_minute=6000,
        retries=5,
    )
    client = ArchiveClient(config, redis.Redis.from_url(redis_url))

    def fetch(n: int) -> BaseException | None:
        try:
            client.fetch_memento("20170101000000", f"http://example.edu/~a/p{n}")
        except ArchiveUnreachableError as error:
            return error
        return None

    with ThreadPoolExecutor(THREADS) as pool:
        errors = list(pool.map(fetch, range(40)))
    assert client.unreachable is not None
    assert all(error is client.unreachable for error in errors)
    # Threads already sending when the first one failed try once each; none retries.
    assert client.stats.requests <= THREADS and client.stats.retries == 0
