"""The archive client: Internet Archive CDX paging, retries, Retry-After and the shared limit."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
import redis

from archive.ratelimit import SharedRateLimiter
from archive.wayback import (
    ArchiveClient,
    ArchiveConfig,
    ArchiveError,
    BlockedSiteError,
    retry_after_seconds,
)
from testbed.ia_server import IAArchive, Row, first_cdx_page

pytestmark = pytest.mark.integration


def rows(n: int, key: str = "edu,example)/~a") -> list[Row]:
    return [
        Row(
            f"{key}/p{i:03d}",
            f"2017010{1 + i % 9}000000",
            f"http://example.edu/~a/p{i:03d}",
            "text/html",
            "200",
            f"D{i}",
            "1000",
        )
        for i in range(n)
    ]


def client_for(archive: IAArchive, redis_url: str, **kw: Any) -> ArchiveClient:
    kw.setdefault("cdx_per_minute", 6000)
    kw.setdefault("memento_per_minute", 6000)
    kw.setdefault("backoff_base", 0.05)
    kw.setdefault("retries", 3)
    config = ArchiveConfig(cdx_url=archive.cdx_url, wayback_url=archive.wayback_url, **kw)
    return ArchiveClient(config, redis.Redis.from_url(redis_url))


def ia_parse(text: str) -> tuple[list[list[str]], str | None]:
    from hacs.formats.cdx import parse_cdx

    result = parse_cdx(text)
    return [[r.urlkey, r.timestamp14] for r in result.records], result.resume_key


def test_it_follows_resume_keys_through_every_page(redis_url: str) -> None:
    with IAArchive(rows(23)) as archive:
        client = client_for(archive, redis_url, page_size=5)
        pages = list(client.cdx_pages("example.edu/~a", ia_parse))
        assert [len(p) for p in pages] == [5, 5, 5, 5, 3]
        keys = [row[0] for page in pages for row in page]
        assert keys == sorted(set(keys)) and len(keys) == 23
        queries = [entry.query for entry in archive.state.log]
    assert all(q["matchType"] == "prefix" and "collapse" not in q for q in queries)
    assert "resumeKey" not in queries[0] and all("resumeKey" in q for q in queries[1:])


def test_it_honours_retry_after_and_retries_503(redis_url: str) -> None:
    with IAArchive(rows(3)) as archive:
        archive.state.faults.extend([(429, "1"), (503, None)])
        client = client_for(archive, redis_url)
        started = time.monotonic()
        pages = list(client.cdx_pages("example.edu/~a", ia_parse))
        elapsed = time.monotonic() - started
        statuses = [entry.status for entry in archive.state.log]
    assert statuses == [429, 503, 200]
    assert len(pages[0]) == 3
    assert elapsed >= 1.0  # the Retry-After second was waited
    assert client.stats.retries == 2


def test_it_gives_up_after_its_retries_with_a_clear_message(redis_url: str) -> None:
    with IAArchive(rows(1)) as archive:
        archive.state.faults.extend([(503, None)] * 10)
        client = client_for(archive, redis_url, retries=2)
        with pytest.raises(ArchiveError, match=r"failed after 3 attempts \(HTTP 503\)"):
            first_cdx_page(client, "example.edu/~a")


def test_a_blocked_site_is_reported_as_blocked(redis_url: str) -> None:
    with IAArchive(rows(1)) as archive:
        archive.state.blocked_prefixes.add("example.edu/~a")
        client = client_for(archive, redis_url)
        with pytest.raises(BlockedSiteError, match="Blocked Site Error"):
            first_cdx_page(client, "example.edu/~a")


def test_mementos_are_raw_and_capped(redis_url: str) -> None:
    body = b"<html><body>" + b"x" * 5000 + b"</body></html>"
    bodies = {("20170101000000", "http://example.edu/~a/"): (body, "text/html; charset=utf-8")}
    with IAArchive(rows(1), bodies) as archive:
        client = client_for(archive, redis_url, max_memento_bytes=1024)
        memento = client.fetch_memento("20170101000000", "http://example.edu/~a/")
        assert memento.truncated and len(memento.body) == 1024
        full = client_for(archive, redis_url).fetch_memento(
            "20170101000000", "http://example.edu/~a/"
        )
        assert full.body == body and not full.truncated
        assert full.content_type == "text/html; charset=utf-8"
        with pytest.raises(ArchiveError, match="HTTP 404"):
            client.fetch_memento("20170101000000", "http://example.edu/~nobody/")


def test_retry_after_accepts_seconds_and_http_dates() -> None:
    assert retry_after_seconds("7") == 7.0
    assert retry_after_seconds("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412470.0) == 10.0
    assert retry_after_seconds("soon") is None
    assert retry_after_seconds(None) is None


def test_the_rate_limit_is_shared_by_every_client(redis_url: str) -> None:
    """Three threads with their own connections never beat 120 requests/minute together: the
    slots the limiter hands out, on Redis's one clock, lie 0.5 s apart at least. (Read from the
    limiter's schedule, not from when each thread woke up, which a loaded machine delays.)"""
    slots: list[float] = []
    lock = threading.Lock()

    def work() -> None:
        limiter = SharedRateLimiter(redis.Redis.from_url(redis_url), "archive.test", "cdx", 120)
        for _ in range(4):
            limiter.acquire()
            with lock:
                assert limiter.last_slot is not None
                slots.append(limiter.last_slot)

    threads = [threading.Thread(target=work) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    slots.sort()
    gaps = [b - a for a, b in zip(slots, slots[1:], strict=False)]
    assert len(slots) == 12
    assert min(gaps) >= 0.5 - 1e-6  # 120/minute is one request every 0.5 s


def test_a_pause_holds_back_every_client(redis_url: str) -> None:
    connection = redis.Redis.from_url(redis_url)
    first = SharedRateLimiter(connection, "archive.test", "memento", 6000)
    second = SharedRateLimiter(redis.Redis.from_url(redis_url), "archive.test", "memento", 6000)
    until = first.pause(0.6)
    assert until is not None
    second.acquire()
    assert second.last_slot is not None and second.last_slot >= until - 1e-6


def test_redirects_leaving_the_archive_are_refused(redis_url: str) -> None:
    """HACS never fetches seed sites: a redirect to another host is an error, not followed."""
    import http.server

    class Away(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            return

        def do_GET(self) -> None:
            self.send_response(302)
            self.send_header("Location", "http://seed-site.example.edu/~a/")
            self.end_headers()

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Away)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}"
        config = ArchiveConfig(cdx_url=f"{base}/cdx", wayback_url=f"{base}/web", retries=0)
        client = ArchiveClient(config, redis.Redis.from_url(redis_url))
        with pytest.raises(ArchiveError, match="redirects away from the archive"):
            client.fetch_memento("20170101000000", "http://seed-site.example.edu/~a/")
    finally:
        server.shutdown()
        server.server_close()
