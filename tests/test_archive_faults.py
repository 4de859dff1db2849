"""Archive answers that go wrong one request at a time: bodies cut, truncated or trickled,
throttling, runaway paging and bodies, and the one deadline of a whole query.

Every fault comes from ``testbed.ia_server``, a real HTTP server on 127.0.0.1 in a thread.
Nothing here reaches the Internet, and nothing is timed: tests count requests. The imports'
side of faults is in ``test_archive_faults_imports.py``, the queries' kinds and the refresh
in ``test_archive_faults_queries.py``.
"""

from __future__ import annotations

import gzip
import http.server
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest
import redis

from archive.ratelimit import SharedRateLimiter, SlotPastDeadline
from archive.wayback import ArchiveClient, ArchiveConfig, ArchiveError, DeadlineExceededError
from hacs.formats.cdx import parse_cdx
from testbed.ia_server import Fault, IAArchive, Row, first_cdx_page

pytestmark = [pytest.mark.integration, pytest.mark.django_db]

SEED = "http://example.edu/~a/"


def rows(n: int, key: str = "edu,example)/~a", url: str = "http://example.edu/~a") -> list[Row]:
    return [
        Row(
            f"{key}/p{i:03d}",
            f"2017010{1 + i % 9}000000",
            f"{url}/p{i:03d}",
            "text/html",
            "200",
            f"D{i}",
            "1000",
        )
        for i in range(n)
    ]


def client_for(cdx_url: str, wayback_url: str, redis_url: str, **kw: Any) -> ArchiveClient:
    kw.setdefault("cdx_per_minute", 6000)
    kw.setdefault("memento_per_minute", 6000)
    kw.setdefault("backoff_base", 0.01)
    kw.setdefault("retries", 2)
    config = ArchiveConfig(cdx_url=cdx_url, wayback_url=wayback_url, **kw)
    return ArchiveClient(config, redis.Redis.from_url(redis_url))


def archive_client(archive: IAArchive, redis_url: str, **kw: Any) -> ArchiveClient:
    return client_for(archive.cdx_url, archive.wayback_url, redis_url, **kw)


def ia_parse(text: str) -> tuple[list[str], str | None]:
    result = parse_cdx(text)
    return [r.urlkey for r in result.records], result.resume_key


def all_rows(client: ArchiveClient, prefix: str = "example.edu/~a") -> list[str]:
    return [key for page in client.cdx_pages(prefix, ia_parse) for key in page]


def use_archive(settings: Any, cdx_url: str, wayback_url: str, **extra: Any) -> None:
    settings.HACS_CDX_URL = cdx_url
    settings.HACS_WAYBACK_URL = wayback_url
    settings.HACS_CDX_DIALECT = "ia"
    settings.HACS_CDX_RATE_PER_MINUTE = 60000.0
    settings.HACS_MEMENTO_RATE_PER_MINUTE = 60000.0
    settings.HACS_HTTP_BACKOFF_BASE = 0.01
    for name, value in extra.items():
        setattr(settings, name, value)


# --- Bodies cut, truncated, trickled: retried, or failed within the deadline -------------------


@pytest.mark.parametrize("kind", ["cut", "short", "truncated", "reset"])
def test_an_answer_cut_off_once_is_asked_for_again(redis_url: str, kind: str) -> None:
    with IAArchive(rows(40)) as archive:
        archive.state.faults.append(Fault(kind, on="cdx"))
        client = archive_client(archive, redis_url)
        keys = all_rows(client)
        asked = archive.requests_to("cdx")
    assert len(keys) == 40 and keys == sorted(keys)
    assert len(asked) == 2  # the faulty answer, then the whole one
    assert client.stats.retries == 1


def test_a_chunked_body_cut_every_time_fails_with_a_sentence(redis_url: str) -> None:
    with IAArchive(rows(40)) as archive:
        archive.state.faults.extend([Fault("cut", on="cdx")] * 5)
        client = archive_client(archive, redis_url, retries=2)
        with pytest.raises(ArchiveError) as caught:
            all_rows(client)
        asked = archive.requests_to("cdx")
    message = str(caught.value)
    assert message.startswith("The CDX query for example.edu/~a at 127.0.0.1:")
    assert "failed after 3 attempts (the answer was cut off" in message
    assert message.endswith("try again later with import_archive --failed.")
    assert len(asked) == 3


def test_json_truncated_every_time_is_an_unreadable_answer(redis_url: str) -> None:
    with IAArchive(rows(40)) as archive:
        archive.state.faults.extend([Fault("truncated", on="cdx")] * 5)
        client = archive_client(archive, redis_url, retries=1)
        with pytest.raises(ArchiveError, match=r"sent an unreadable answer for example.edu/~a 2"):
            all_rows(client)
        assert len(archive.requests_to("cdx")) == 2


def test_a_trickled_body_ends_at_the_whole_request_deadline(redis_url: str) -> None:
    """One byte every 0.2 s never trips a per-read timeout of 30 s; the deadline stops it."""
    body = b"<html><body>" + b"x" * 4000 + b"</body></html>"
    bodies = {("20170101000000", SEED): (body, "text/html")}
    with IAArchive(rows(40), bodies) as archive:
        archive.state.faults.extend([Fault("trickle", on="web", interval=0.2)] * 2)
        archive.state.faults.extend([Fault("trickle", on="cdx", interval=0.2)] * 2)
        client = archive_client(archive, redis_url, retries=1, deadline=1.0, timeout=30.0)
        with pytest.raises(ArchiveError) as memento:
            client.fetch_memento("20170101000000", SEED)
        with pytest.raises(ArchiveError) as query:
            all_rows(client)
        assert len(archive.requests_to("web")) == 2 and len(archive.requests_to("cdx")) == 2
    assert "failed after 2 attempts (no complete answer within 1 s)" in str(memento.value)
    assert "failed after 2 attempts (no complete answer within 1 s)" in str(query.value)


def test_a_trickle_that_stops_in_time_is_read_whole(redis_url: str) -> None:
    body = b"<html>" + b"y" * 10 + b"</html>"
    bodies = {("20170101000000", SEED): (body, "text/html")}
    with IAArchive(rows(1), bodies) as archive:
        archive.state.faults.append(Fault("trickle", on="web", interval=0.01))
        client = archive_client(archive, redis_url, deadline=60.0)
        memento = client.fetch_memento("20170101000000", SEED)
    assert memento.body == body and client.stats.retries == 0


def test_headers_trickled_a_byte_at_a_time_end_at_the_whole_request_deadline(
    redis_url: str,
) -> None:
    """A status line and headers trickled a byte every 0.05 s never trip a per-read timeout;
    the connection is cut at the deadline, long before the headers' last byte would come."""
    body = b"<html>fine</html>"
    bodies = {("20170101000000", SEED): (body, "text/html")}
    with IAArchive(rows(3), bodies) as archive:
        trickle = Fault("trickle_headers", interval=0.05, padding=400)
        archive.state.faults.extend([replace(trickle, on="web")] * 2)
        archive.state.faults.extend([replace(trickle, on="cdx")] * 2)
        client = archive_client(archive, redis_url, retries=1, deadline=0.5, timeout=30.0)
        with pytest.raises(ArchiveError) as memento:
            client.fetch_memento("20170101000000", SEED)
        with pytest.raises(ArchiveError) as query:
            all_rows(client)
        sent = archive.requests_to("web") + archive.requests_to("cdx")
    assert "failed after 2 attempts (no complete answer within 0.5 s)" in str(memento.value)
    assert "failed after 2 attempts (no complete answer within 0.5 s)" in str(query.value)
    assert len(sent) == 4
    # The client hung up mid-headers every time: it never waited for the rest.
    assert all(0 < e.head_sent < e.head // 2 for e in sent), [(e.head_sent, e.head) for e in sent]


@pytest.mark.parametrize(
    "retry_after", ["999999999", "Fri, 31 Dec 2100 23:59:59 GMT"], ids=["seconds", "date"]
)
def test_a_huge_retry_after_waits_the_deadline_and_counts_as_a_retry(
    redis_url: str, retry_after: str
) -> None:
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        time.sleep(seconds)

    body = b"<html>ok</html>"
    with IAArchive(rows(1), {("20170101000000", SEED): (body, "text/html")}) as archive:
        archive.state.faults.extend(
            [Fault("status", status=429, retry_after=retry_after, on="web")] * 3
        )
        config = ArchiveConfig(
            cdx_url=archive.cdx_url,
            wayback_url=archive.wayback_url,
            cdx_per_minute=6000,
            memento_per_minute=6000,
            retries=2,
            deadline=0.5,
        )
        client = ArchiveClient(config, redis.Redis.from_url(redis_url), sleep=sleep)
        with pytest.raises(ArchiveError) as caught:
            client.fetch_memento("20170101000000", SEED)
        assert [e.status for e in archive.requests_to("web")] == [429, 429, 429]
        # The archive's pause was shared at the cap too: the next request goes out.
        assert client.fetch_memento("20170101000000", SEED).body == body
    assert "failed after 3 attempts (HTTP 429 asking to wait" in str(caught.value)
    assert client.stats.retries == 2
    assert slept and max(slept) <= 0.5


def test_throttling_and_server_errors_are_retried_until_the_answer_comes(redis_url: str) -> None:
    body = b"<html>ok</html>"
    with IAArchive(rows(3), {("20170101000000", SEED): (body, "text/html")}) as archive:
        archive.state.faults.extend(
            [
                Fault("status", status=429, retry_after="0", on="web"),
                Fault("status", status=500, on="web"),
                Fault("status", status=502, on="web"),
                Fault("status", status=503, on="cdx"),
                Fault("status", status=504, on="cdx"),
            ]
        )
        client = archive_client(archive, redis_url, retries=3)
        memento = client.fetch_memento("20170101000000", SEED)
        keys = all_rows(client)
        web = [e.status for e in archive.requests_to("web")]
        cdx = [e.status for e in archive.requests_to("cdx")]
    assert memento.body == body and len(keys) == 3
    assert web == [429, 500, 502, 200] and cdx == [503, 504, 200]


# --- Runaway archives: endless paging, oversized bodies ----------------------------------------


def test_endless_fresh_resume_keys_stop_at_the_page_cap(redis_url: str) -> None:
    with IAArchive(rows(10)) as archive:
        archive.state.endless_prefixes.add("example.edu/~a")
        client = archive_client(archive, redis_url, max_cdx_pages=5)
        with pytest.raises(ArchiveError) as caught:
            all_rows(client)
        asked = archive.requests_to("cdx")
    assert len(asked) == 5
    assert len({e.query.get("resumeKey") for e in asked[1:]}) == 4  # every key was fresh
    assert "kept sending more pages for example.edu/~a after 5 pages" in str(caught.value)
    assert "HACS_CDX_MAX_PAGES" in str(caught.value)


def test_a_cdx_query_larger_than_its_byte_cap_fails_without_retrying(redis_url: str) -> None:
    with IAArchive(rows(200)) as archive:
        client = archive_client(archive, redis_url, max_cdx_bytes=4096, page_size=20)
        with pytest.raises(ArchiveError, match="passed 4,096 bytes; raise HACS_MAX_CDX_BYTES"):
            all_rows(client)
        pages = len(archive.requests_to("cdx"))
    assert 1 < pages < 10  # the cap counts the whole query, not one page


@pytest.fixture()
def gzip_bomb() -> Iterator[str]:
    """A server whose every answer is 2 KB of gzip that inflates to 50 MB of zeros."""
    payload = gzip.compress(b"\0" * 50_000_000)

    class Bomb(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            return

        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Encoding", "gzip")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Bomb)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_decompressed_bodies_are_capped(gzip_bomb: str, redis_url: str) -> None:
    client = client_for(
        f"{gzip_bomb}/cdx",
        f"{gzip_bomb}/web",
        redis_url,
        max_memento_bytes=1 << 20,
        max_cdx_bytes=1 << 20,
    )
    memento = client.fetch_memento("20170101000000", SEED)
    assert memento.truncated and len(memento.body) == 1 << 20
    with pytest.raises(ArchiveError, match="passed 1,048,576 bytes"):
        first_cdx_page(client, "example.edu/~a")


# --- One deadline for a whole query: its pages, retries and every wait ------------------------


def too_late(archive: IAArchive, what: str, seconds: str) -> str:
    """The sentence of a query or fetch the archive did not answer in the time it was given."""
    return (
        f"The archive at 127.0.0.1:{archive.port} did not answer {what} within {seconds} s; "
        "try again later with import_archive --failed."
    )


def test_a_query_trickled_past_its_query_deadline_ends_there_with_a_sentence(
    redis_url: str,
) -> None:
    """A byte every 0.2 s never trips the 1 s read timeout, and the whole-request deadline is
    a minute away: the query's own deadline ends it, during its first request."""
    with IAArchive(rows(40)) as archive:
        archive.state.faults.extend([Fault("trickle", on="cdx", interval=0.2)] * 5)
        client = archive_client(
            archive, redis_url, retries=5, timeout=1.0, deadline=60.0, query_deadline=1.5
        )
        with pytest.raises(DeadlineExceededError) as caught:
            all_rows(client)
        asked = archive.requests_to("cdx")
    assert str(caught.value) == too_late(archive, "the CDX query for example.edu/~a", "1.5")
    assert len(asked) == 1 and client.stats.retries == 0


def test_a_query_and_a_memento_end_by_the_deadline_their_caller_gives(redis_url: str) -> None:
    body = b"<html>" + b"z" * 400 + b"</html>"
    with IAArchive(rows(40), {("20170101000000", SEED): (body, "text/html")}) as archive:
        archive.state.faults.extend([Fault("trickle", interval=0.2)] * 4)
        client = archive_client(archive, redis_url, retries=5, timeout=1.0, deadline=60.0)
        with pytest.raises(DeadlineExceededError) as query:
            list(client.cdx_pages("example.edu/~a", ia_parse, deadline=time.monotonic() + 1.0))
        with pytest.raises(DeadlineExceededError) as memento:
            client.fetch_memento("20170101000000", SEED, deadline=time.monotonic() + 1.0)
        with pytest.raises(DeadlineExceededError) as passed:
            client.fetch_memento("20170101000000", SEED, deadline=time.monotonic() - 1.0)
        asked = len(archive.state.log)
    assert str(query.value) == too_late(archive, "the CDX query for example.edu/~a", "1")
    assert str(memento.value) == too_late(
        archive, f"the request for the memento of {SEED} at 20170101000000", "1"
    )
    assert "within 0 s" in str(passed.value)
    assert asked == 2  # one request each; none once the deadline had passed


def test_a_backoff_that_would_end_past_the_query_deadline_ends_the_query_at_once(
    redis_url: str,
) -> None:
    slept: list[float] = []
    with IAArchive(rows(3)) as archive:
        archive.state.faults.extend([Fault("status", status=503, on="cdx")] * 5)
        config = ArchiveConfig(
            cdx_url=archive.cdx_url,
            wayback_url=archive.wayback_url,
            cdx_per_minute=6000,
            retries=5,
            backoff_base=100.0,
            query_deadline=30.0,
        )
        client = ArchiveClient(config, redis.Redis.from_url(redis_url), sleep=slept.append)
        with pytest.raises(DeadlineExceededError) as caught:
            all_rows(client)
        statuses = [e.status for e in archive.requests_to("cdx")]
    assert str(caught.value) == too_late(archive, "the CDX query for example.edu/~a", "30")
    assert statuses == [503] and slept == [] and client.stats.retries == 0


def test_a_retry_after_longer_than_the_time_left_is_not_waited_but_still_holds_everyone(
    redis_url: str,
) -> None:
    """The archive asks for 30 s with 5 s left: the query ends at once, and the pause it
    asked for still holds back the next query, which is not sent at all."""
    slept: list[float] = []
    with IAArchive(rows(3)) as archive:
        archive.state.faults.append(Fault("status", status=429, retry_after="30", on="cdx"))
        config = ArchiveConfig(
            cdx_url=archive.cdx_url,
            wayback_url=archive.wayback_url,
            cdx_per_minute=6000,
            retries=5,
            deadline=60.0,
            query_deadline=5.0,
        )
        client = ArchiveClient(config, redis.Redis.from_url(redis_url), sleep=slept.append)
        with pytest.raises(DeadlineExceededError) as caught:
            all_rows(client)
        with pytest.raises(DeadlineExceededError) as held:
            all_rows(client, "example.edu/~b")
        statuses = [e.status for e in archive.requests_to("cdx")]
    assert str(caught.value) == too_late(archive, "the CDX query for example.edu/~a", "5")
    assert str(held.value) == too_late(archive, "the CDX query for example.edu/~b", "5")
    assert statuses == [429] and slept == []


def test_a_rate_limit_slot_past_the_deadline_is_neither_waited_for_nor_taken(
    redis_url: str,
) -> None:
    connection = redis.Redis.from_url(redis_url)
    with IAArchive(rows(3)) as archive:
        client = archive_client(archive, redis_url, cdx_per_minute=1.0, query_deadline=5.0)
        assert len(all_rows(client)) == 3  # takes the minute's only slot
        with pytest.raises(
            DeadlineExceededError,
            match="did not answer the CDX query for example.edu/~a within 5 s",
        ):
            all_rows(client)
        assert len(archive.requests_to("cdx")) == 1
    limiter = SharedRateLimiter(connection, f"127.0.0.1:{archive.port}", "cdx", 1.0)
    # The refused slot was left free: the next one is still the one after the first request's.
    with pytest.raises(SlotPastDeadline) as refused:
        limiter.acquire(deadline=time.monotonic() + 1.0)
    assert 55 < refused.value.wait <= 60
