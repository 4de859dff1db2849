"""What HACS trusts of an archive: compressed answers cost at most their cap in memory, and an
archive URL or User-Agent that cannot be sent stops start-up, or a run, once with a sentence.

Every archive here is a real HTTP server on 127.0.0.1 in a thread; nothing reaches the Internet.
Memory is measured with ``tracemalloc`` around one request (a bound, not a timing).
"""

from __future__ import annotations

import gzip
import http.server
import io
import logging
import os
import threading
import tracemalloc
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import redis
from django.core.exceptions import ImproperlyConfigured
from django.core.management import call_command
from django.core.management.base import CommandError

from archive.models import Site
from archive.pipeline import FromArchive, sites_import
from archive.wayback import ArchiveClient, ArchiveConfig, ArchiveError, ArchiveUnreachableError
from hacs_site.env import env_url
from testbed.ia_server import first_cdx_page
from tests.factories import make_site
from tests.support.commands import manage_check

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parent.parent
MIB = 1024 * 1024
SEED = "http://example.edu/~a/"
STAMP = "20170101000000"


def gzip_of_zeros(size: int) -> bytes:
    """``size`` NUL bytes as gzip, compressed a MiB at a time (never held whole)."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    block = bytes(MIB)
    parts = [packer.compress(block[: min(MIB, size - done)]) for done in range(0, size, MIB)]
    return b"".join(parts) + packer.flush()


# An answer: (status, headers, body). The server hands out the queued ones in order, then the
# last one again; it logs each request's path and headers.
Answer = tuple[int, dict[str, str], bytes]


class Archive:
    def __init__(self, *answers: Answer) -> None:
        self.answers = list(answers)
        self.requests: list[tuple[str, dict[str, str]]] = []
        archive = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                return

            def do_GET(self) -> None:
                archive.requests.append((self.path, dict(self.headers.items())))
                status, headers, body = (
                    archive.answers.pop(0) if len(archive.answers) > 1 else archive.answers[0]
                )
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                if "Content-Length" not in headers:
                    self.close_connection = True  # the body ends where the connection does
                self.end_headers()
                try:
                    self.wfile.write(body)
                except OSError:
                    pass  # the client stopped reading at its cap

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> Archive:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


def encoded(body: bytes, coding: str = "gzip", **headers: str) -> Answer:
    return 200, {"Content-Encoding": coding, "Content-Length": str(len(body)), **headers}, body


def client_for(base: str, redis_url: str, **kw: Any) -> ArchiveClient:
    kw.setdefault("cdx_per_minute", 60000)
    kw.setdefault("memento_per_minute", 60000)
    kw.setdefault("backoff_base", 0.01)
    kw.setdefault("retries", 2)
    config = ArchiveConfig(cdx_url=f"{base}/cdx", wayback_url=f"{base}/web", **kw)
    return ArchiveClient(config, redis.Redis.from_url(redis_url))


def traced_peak(work: Callable[[], object]) -> int:
    """The peak of memory Python allocated while ``work`` ran, in bytes."""
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        try:
            work()
        except ArchiveError:
            pass  # the outcome is checked by the caller
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


# --- Decompression: a bomb costs its cap, not what it inflates to -------------------------------


@pytest.fixture(scope="module")
def bomb() -> bytes:
    """64 MiB of zeros in 64 KB of gzip: sixteen times the caps below."""
    return gzip_of_zeros(64 * MIB)


@pytest.mark.parametrize("kind", ["cdx", "memento"])
def test_a_gzip_bomb_costs_no_more_memory_than_its_cap(
    kind: str, bomb: bytes, redis_url: str
) -> None:
    cap = 4 * MIB
    with Archive(encoded(bomb)) as archive:
        client = client_for(archive.base, redis_url, max_cdx_bytes=cap, max_memento_bytes=cap)
        if kind == "cdx":
            peak = traced_peak(lambda: first_cdx_page(client, "example.edu/~a"))
            with pytest.raises(ArchiveError, match="passed 4,194,304 bytes; raise HACS_MAX_CDX"):
                first_cdx_page(client, "example.edu/~a")
        else:
            peak = traced_peak(lambda: client.fetch_memento(STAMP, SEED))
            memento = client.fetch_memento(STAMP, SEED)
            assert memento.truncated and memento.body == bytes(cap)
    # The buffer may be over-allocated by an eighth as it grows; then one read and one step of
    # 64 KiB each, and what the server's thread allocates meanwhile.
    assert peak < cap * 5 // 4 + MIB, f"{peak / MIB:.1f} MiB for a {cap / MIB:.0f} MiB cap"


@pytest.mark.django_db
def test_by_default_a_100_mb_cdx_answer_fails_its_site_naming_the_setting(
    settings: Any, redis_url: str
) -> None:
    """100 KB of gzip inflating to 100 MB: the default cap, sized from real answers, refuses it."""
    site = make_site(seed_url=SEED, canonical_key="edu,example)/~a")
    with Archive(encoded(gzip_of_zeros(100_000_000), "gzip")) as archive:
        settings.HACS_CDX_URL = f"{archive.base}/cdx"
        settings.HACS_WAYBACK_URL = f"{archive.base}/web"
        settings.HACS_CDX_RATE_PER_MINUTE = 60000.0
        config = ArchiveConfig.from_settings()
        client = ArchiveClient(config, redis.Redis.from_url(redis_url))
        report = sites_import(FromArchive([site.pk]), client=client)
        asked = len(archive.requests)
    reason = report.failed.get(site.pk, "")
    assert "passed 16,777,216 bytes; raise HACS_MAX_CDX_BYTES" in reason
    assert asked == 1  # not retried: the next answer would be as large
    assert Site.objects.get(pk=site.pk).import_status == Site.ImportStatus.FAILED


PAGE = b'[["urlkey","timestamp"],["edu,example)/~a","20170101000000"]]' * 50


@pytest.mark.parametrize(
    ("coding", "body"),
    [
        ("gzip", gzip.compress(PAGE)),
        ("x-gzip", gzip.compress(PAGE)),
        ("deflate", zlib.compress(PAGE)),  # as HTTP defines deflate: zlib-wrapped
        ("deflate", zlib.compress(PAGE, wbits=-15)),  # raw, as some servers send it
        ("gzip", gzip.compress(PAGE[:1000]) + gzip.compress(PAGE[1000:])),  # two members
        ("gzip", gzip.compress(PAGE) + b"\0\0trailing"),  # bytes after it, ignored as gzip does
        ("identity", PAGE),
        ("", PAGE),
    ],
    ids=["gzip", "x-gzip", "deflate", "raw-deflate", "two-members", "trailing", "identity", "none"],
)
def test_compressed_answers_come_out_whole(coding: str, body: bytes) -> None:
    """Fed a byte at a time (the smallest read a socket can return), and at once."""
    from archive.wayback import _Inflater

    for size in (1, len(body)):
        inflater = _Inflater.for_coding(coding)
        pieces = [
            piece
            for start in range(0, len(body), size)
            for piece in inflater.inflate(body[start : start + size], len(PAGE) + 1)
        ]
        inflater.finish()
        assert b"".join(pieces) == PAGE


def test_a_compressed_answer_cut_short_is_asked_for_again(redis_url: str) -> None:
    """A gzip body ended by the connection closing, with no length to tell it was cut: the
    gzip stream itself says so, and the answer is asked for again."""
    whole = gzip.compress(PAGE)
    cut: Answer = (200, {"Content-Encoding": "gzip"}, whole[: len(whole) // 2])
    with Archive(cut, encoded(whole)) as archive:
        client = client_for(archive.base, redis_url)
        memento = client.fetch_memento(STAMP, SEED)
        asked = len(archive.requests)
    assert memento.body == PAGE and not memento.truncated
    assert asked == 2 and client.stats.retries == 1


def test_an_answer_in_a_coding_not_asked_for_fails_without_retrying(redis_url: str) -> None:
    with Archive(encoded(b"\x8b\x0b\x80hello\x03", "br")) as archive:
        client = client_for(archive.base, redis_url)
        with pytest.raises(ArchiveError) as caught:
            client.fetch_memento(STAMP, SEED)
        (_path, headers), *again = archive.requests
    assert str(caught.value) == (
        f"The memento of {SEED} at {STAMP} at {archive.base[7:]} answered in Content-Encoding "
        "'br', which HACS did not ask for."
    )
    assert again == [] and headers["Accept-Encoding"] == "gzip, deflate"


# --- Start-up: archive URLs that cannot be requested ----------------------------------------


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("http://127.0.0.1:99999/cdx", "its port (99999) is not a number from 1 to 65535"),
        ("http://127.0.0.1:cdx/cdx", "its port (cdx) is not a number from 1 to 65535"),
        ("http://127.0.0.1:0/cdx", "its port (0) is not a number from 1 to 65535"),
        ("http://web archive.org/cdx", "contains invalid character ' '"),
        ("http://☃.example/cdx", "is not a valid IDNA label"),
        ("http://archive..example/cdx", "has an empty or over-long label"),
        ("http://.archive.example/cdx", "URL has an invalid label"),
        ("http://[::1/cdx", "is not a URL starting with http://, https:// and naming a host"),
        ("http://user:secret@archive.example/cdx", "holds a user name or password"),
        ("http://archive.example/cdx#top", "has a fragment"),
        ("file:///srv/cdx", "is not a URL starting with http://, https://"),
    ],
)
def test_an_archive_url_requests_cannot_send_is_refused(value: str, reason: str) -> None:
    with pytest.raises(ImproperlyConfigured, match="^HACS_CDX_URL=") as caught:
        env_url("HACS_CDX_URL", "", {"HACS_CDX_URL": value})
    assert reason in str(caught.value)


@pytest.mark.parametrize(
    "value",
    [
        "https://web.archive.org/cdx/search/cdx",
        "http://127.0.0.1:8080/cdx",
        "http://[::1]:80/c",
        "http://my_archive.example/cdx",
        "http://bücher.example/web",
        "http://archive.example:/c",
    ],
)
def test_archive_urls_requests_can_send_are_accepted(value: str) -> None:
    assert env_url("HACS_CDX_URL", "", {"HACS_CDX_URL": value}) == value


def test_a_user_agent_with_a_line_break_is_refused() -> None:
    from hacs_site.env import env_header

    with pytest.raises(ImproperlyConfigured, match="^HACS_USER_AGENT='HACS\\\\nX: 1' is not a"):
        env_header("HACS_USER_AGENT", "", {"HACS_USER_AGENT": "HACS\nX: 1"})


@pytest.mark.parametrize(
    ("variable", "value", "reason"),
    [
        ("HACS_CDX_URL", "http://127.0.0.1:99999/cdx", "its port (99999) is not a number"),
        ("HACS_WAYBACK_URL", "https://me:pw@archive.example/web", "holds a user name"),
        ("HACS_USER_AGENT", "HACS\r\nX-Injected: 1", "is not a valid HTTP header value"),
    ],
)
def test_start_up_stops_naming_the_variable(variable: str, value: str, reason: str) -> None:
    env = {**os.environ, variable: value}
    env.pop("PYTEST_CURRENT_TEST", None)
    result = manage_check(env)
    assert result.returncode != 0
    assert f"ImproperlyConfigured: {variable}={value!r}" in result.stderr
    assert reason in result.stderr


# --- At run time: what no retry can fix stops the run once -------------------------------------


@pytest.fixture()
def five_sites(db: None) -> list[Site]:
    return [
        make_site(seed_url=f"http://cs.uni{n}.edu/~u{n}/", canonical_key=f"edu,uni{n},cs)/~u{n}")
        for n in range(5)
    ]


@pytest.mark.django_db
def test_an_archive_url_that_cannot_be_requested_stops_an_import_once(
    settings: Any, redis_url: str, five_sites: list[Site], caplog: pytest.LogCaptureFixture
) -> None:
    """Set after start-up (start-up refuses it): one sentence for the run, not a traceback per
    site."""
    settings.HACS_CDX_URL = "http://127.0.0.1:99999/cdx/search/cdx"
    settings.HACS_CDX_RATE_PER_MINUTE = 60000.0
    sentence = (
        "The archive URL http://127.0.0.1:99999/cdx/search/cdx cannot be requested (its port "
        "(99999) is not a number from 1 to 65535): fix HACS_CDX_URL."
    )
    out, err = io.StringIO(), io.StringIO()
    with caplog.at_level(logging.ERROR), pytest.raises(CommandError) as caught:
        call_command("import_archive", stdout=out, stderr=err)
    assert str(caught.value) == f"{sentence} 5 of 5 sites not imported."
    assert err.getvalue() == ""
    assert [r for r in caplog.records if r.levelno >= logging.ERROR] == []  # no traceback
    statuses = set(Site.objects.values_list("import_status", "import_error"))
    assert statuses == {("failed", sentence)}

    config = ArchiveConfig(cdx_url=settings.HACS_CDX_URL, wayback_url="http://127.0.0.1:1/web")
    client = ArchiveClient(config, redis.Redis.from_url(redis_url))
    report = sites_import(FromArchive([s.pk for s in five_sites]), client=client)
    assert report.stopped == sentence and client.stats.requests == 1


def test_a_user_agent_requests_cannot_send_stops_the_client_once(redis_url: str) -> None:
    with Archive(encoded(gzip.compress(PAGE))) as archive:
        client = client_for(archive.base, redis_url, user_agent="HACS\r\nX-Injected: 1")
        with pytest.raises(ArchiveUnreachableError) as caught:
            client.fetch_memento(STAMP, SEED)
        with pytest.raises(ArchiveUnreachableError):
            first_cdx_page(client, "example.edu/~a")  # remembered: not tried again
        assert archive.requests == []
    assert str(caught.value).endswith("is not a valid HTTP header value; fix HACS_USER_AGENT.")
    assert client.stats.requests == 1


def test_a_redirect_that_cannot_be_requested_fails_that_request_only(redis_url: str) -> None:
    """The configured URL is fine: only this answer's redirect (to ftp://, on the archive's own
    host) cannot be followed, so the memento fails and the client carries on."""
    with Archive() as archive:
        away = f"ftp://{archive.base[len('http://') :]}/x"
        archive.answers = [(302, {"Location": away, "Content-Length": "0"}, b"")]
        client = client_for(archive.base, redis_url)
        with pytest.raises(ArchiveError) as caught:
            client.fetch_memento(STAMP, SEED)
    assert not isinstance(caught.value, ArchiveUnreachableError)
    assert str(caught.value).startswith(
        f"The memento of {SEED} at {STAMP} cannot be requested (InvalidSchema: No connection "
        f"adapters were found for '{away}'"
    )
    assert client.unreachable is None and client.stats.requests == 1
