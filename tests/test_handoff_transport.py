"""The one HTTP transport (``hacs_site.transport``) as the hand-offs use it: a body over its cap
ends with an error naming the cap, a compressed answer is inflated only as far as the cap, a
hand-off refuses a private address its host resolves to while the archive, which the operator
configured, may be on this machine, and both callers pin the address they resolved.

Servers are real, on 127.0.0.1, in a thread; nothing reaches the Internet and nothing is timed.
"""

from __future__ import annotations

import gzip
import http.server
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import redis

from archive.wayback import ArchiveClient, ArchiveConfig
from hacs_site.transport import Transport, address_problem
from handoff.transport import MAX_ANSWER_BYTES, AddressRefused, AnswerTooLarge, GuardedClient
from testbed.ia_server import IAArchive, Row

pytestmark = pytest.mark.integration


class _Answers(http.server.BaseHTTPRequestHandler):
    """Answers every GET with ``body`` (sent with ``coding`` as its Content-Encoding)."""

    body = b""
    coding = ""

    def log_message(self, format: str, *args: Any) -> None:
        return

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(self.body)))
        if self.coding:
            self.send_header("Content-Encoding", self.coding)
        self.end_headers()
        try:
            self.wfile.write(self.body)
        except OSError:
            pass  # the client stopped reading at its cap


@pytest.fixture()
def serve() -> Iterator[Any]:
    servers: list[http.server.ThreadingHTTPServer] = []

    def start(body: bytes, coding: str = "") -> str:
        handler = type("Handler", (_Answers,), {"body": body, "coding": coding})
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}"

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def guarded(base: str, *, listed: bool = True) -> GuardedClient:
    return GuardedClient(
        base, listed=listed, user_agent="HACS-test", timeout=10, deadline=time.monotonic() + 30
    )


def test_an_answer_over_the_cap_ends_with_an_error_naming_the_cap(serve: Any) -> None:
    base = serve(b"x" * (MAX_ANSWER_BYTES + 1))
    with pytest.raises(AnswerTooLarge) as caught:
        guarded(base).send("GET", "/api/orgs")
    assert caught.value.limit == MAX_ANSWER_BYTES
    assert str(caught.value) == f"the answer was longer than {MAX_ANSWER_BYTES:,} bytes"


def test_an_answer_at_the_cap_is_read_whole(serve: Any) -> None:
    body = b"y" * MAX_ANSWER_BYTES
    answer = guarded(serve(body)).send("GET", "/api/orgs")
    assert answer.status == 200 and answer.body == body


def test_a_gzip_bomb_sent_to_a_hand_off_is_inflated_no_further_than_the_cap(serve: Any) -> None:
    """256 MiB of zeros in about 250 KB: the hand-off reads at most its 1 MiB cap of them."""
    bomb = gzip.compress(b"\0" * (256 * 1024 * 1024), compresslevel=9)
    assert len(bomb) < MAX_ANSWER_BYTES
    with pytest.raises(AnswerTooLarge):
        guarded(serve(bomb, "gzip")).send("GET", "/api/orgs")


def test_a_small_gzip_answer_to_a_hand_off_comes_out_whole(serve: Any) -> None:
    body = b'{"added": true, "id": "seed-file"}'
    answer = guarded(serve(gzip.compress(body), "gzip")).send("GET", "/api/orgs")
    assert answer.body == body


def test_a_download_over_its_cap_ends_with_an_error_naming_the_cap(serve: Any) -> None:
    base = serve(b"z" * 5000)
    written: list[bytes] = []

    class Sink:
        def write(self, data: bytes, /) -> int:
            written.append(bytes(data))
            return len(data)

    with pytest.raises(AnswerTooLarge, match=r"longer than 4,096 bytes"):
        guarded(base).download("/crawl.wacz", Sink(), max_bytes=4096)
    assert sum(map(len, written)) <= 4096


def test_a_hand_off_refuses_this_machine_unless_listed_and_the_archive_may_use_it(
    serve: Any, redis_url: str
) -> None:
    base = serve(b"{}")
    with pytest.raises(AddressRefused, match=r"resolves to a loopback address \(127\.0\.0\.1\)"):
        guarded(base, listed=False).send("GET", "/api/orgs")
    assert guarded(base, listed=True).send("GET", "/api/orgs").body == b"{}"
    row = Row(
        "edu,example)/~a", "20170101000000", "http://example.edu/~a", "text/html", "200", "D", "1"
    )
    with IAArchive([row]) as archive:
        config = ArchiveConfig(cdx_url=archive.cdx_url, wayback_url=archive.wayback_url)
        client = ArchiveClient(config, redis.Redis.from_url(redis_url))
        text = next(iter(client.cdx_pages("example.edu/~a", lambda text: (text, None))))
    assert "edu,example)/~a" in text
    assert address_problem("127.0.0.1") == "a loopback address (127.0.0.1)"


def test_each_connection_goes_to_the_address_resolved_for_it(
    serve: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A name that resolves to 127.0.0.1 once, and anywhere else afterwards, is reached at
    127.0.0.1: the connection does not look the name up a second time (DNS rebinding)."""
    base = serve(b"{}")
    port = int(base.rsplit(":", 1)[1])
    real = socket.getaddrinfo
    asked: list[str] = []

    def rebinding(host: Any, *args: Any, **kwargs: Any) -> Any:
        if host == "rebinding.test":
            asked.append(host)
            address = "127.0.0.1" if len(asked) == 1 else "192.0.2.1"
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, port))]
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", rebinding)
    transport = Transport(user_agent="HACS-test", pool_size=0, proxies=False)
    with transport.exchange(time.monotonic() + 30, listed=True):
        response = transport.request("GET", f"http://rebinding.test:{port}/", timeout=10)
        response.close()
    assert response.status_code == 200 and asked == ["rebinding.test"]
