"""Slow clients hold no thread of the web server, and are closed past their deadline
(``hacs_site.web_worker``).

Against the web server as ``run.py`` starts it (2 processes): more slow clients than it has
threads send their headers, or a declared body, a few bytes at a time. Before, they held every
thread and the login page never answered; now the login page answers while they trickle, and
the server closes them, with a 408, once their deadline has passed. No test measures a time:
the timeouts below only stop a test that would otherwise wait for ever.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest
import requests

from hacs_site.web_worker import MIN_RATE, Deadline, body_to_read
from scripts.run import WEB_PROCESSES, WEB_THREADS
from tests.conftest import database_url_of_test_db
from tests.support.web_server import WebServer, web_server

SLOW_CLIENTS = WEB_PROCESSES * WEB_THREADS + 4  # more than the server's threads, of each kind
GUARD = 120  # seconds a test waits at most for what must happen


@pytest.fixture()
def server(tmp_path: Path, redis_url: str, transactional_db: None) -> Any:
    # A short deadline, so that the test sees the slow clients closed soon.
    with web_server(
        database_url_of_test_db(), tmp_path, REDIS_URL=redis_url, HACS_REQUEST_READ_SECONDS="2"
    ) as running:
        yield running


class SlowClient:
    """A connection sending ``head`` and then ``drip`` one byte every half second until the
    server closes it; records what the server answered."""

    def __init__(self, server: WebServer, head: bytes, drip: bytes) -> None:
        self.connection = server.connect(timeout=GUARD)
        self.connection.sendall(head)
        self.drip = drip
        self.answer = b""
        self.closed = threading.Event()
        self.stop = threading.Event()
        threading.Thread(target=self._trickle, daemon=True).start()
        threading.Thread(target=self._listen, daemon=True).start()

    def _trickle(self) -> None:
        for byte in self.drip:
            if self.stop.wait(0.5) or self.closed.is_set():
                return
            try:
                self.connection.send(bytes([byte]))
            except OSError:
                return

    def _listen(self) -> None:
        try:
            while chunk := self.connection.recv(4096):
                self.answer += chunk
        except OSError:
            pass
        self.closed.set()

    def close(self) -> None:
        self.stop.set()
        self.connection.close()


def slow_headers(server: WebServer) -> SlowClient:
    head = f"GET /accounts/login/ HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n".encode()
    return SlowClient(server, head, b"X-Slow: " + b"a" * 10_000)


def slow_body(server: WebServer) -> SlowClient:
    head = (
        f"POST /accounts/login/ HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n"
        "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 10000\r\n\r\n"
    ).encode()
    return SlowClient(server, head, b"username=" + b"a" * 9_991)


@pytest.mark.integration
@pytest.mark.parametrize("kind", [slow_headers, slow_body], ids=["slow headers", "slow body"])
def test_the_login_page_answers_while_slow_clients_trickle_and_they_are_closed(
    server: WebServer, kind: Any
) -> None:
    clients = [kind(server) for _ in range(SLOW_CLIENTS)]
    try:
        time.sleep(0.5)  # every slow client has sent its first bytes
        page = requests.get(f"{server.url}/accounts/login/", timeout=GUARD)
        assert page.status_code == 200
        assert 'name="password"' in page.text
        for client in clients:
            assert client.closed.wait(GUARD), "a slow client was never closed"
        assert all(c.answer.startswith(b"HTTP/1.1 408 ") for c in clients), clients[0].answer
    finally:
        for client in clients:
            client.close()
    assert "not sent within its deadline" in server.log_text()


@pytest.mark.integration
def test_a_request_sent_in_pieces_within_its_deadline_is_served(server: WebServer) -> None:
    """A request is read whole before a thread serves it, however it is cut into packets."""
    with server.connect(timeout=GUARD) as connection:
        request = f"GET /accounts/login/ HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n\r\n"
        for piece in (request[:7], request[7:30], request[30:]):
            connection.sendall(piece.encode())
            time.sleep(0.05)
        answer = b""
        while b"</html>" not in answer and (chunk := connection.recv(65536)):
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 200 ")


def test_only_a_declared_body_within_the_limit_is_read_before_the_thread() -> None:
    head = b"POST /sites/upload/ HTTP/1.1\r\nHost: h\r\nContent-Length: %d"
    assert body_to_read(b"GET / HTTP/1.1\r\nHost: h", 100) == 0
    assert body_to_read(head % 100, 100) == 100
    assert body_to_read(head % 101, 100) is None  # refused unread by the application
    assert body_to_read(b"POST / HTTP/1.1\r\ncontent-length:  7 ", 100) == 7
    assert body_to_read(b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked", 100) is None
    assert body_to_read(b"POST / HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 5", 9) is None
    assert body_to_read(b"POST / HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6", 9) is None
    assert body_to_read(b"POST / HTTP/1.1\r\nContent-Length: -5", 9) is None


def test_a_deadline_grows_a_second_for_every_min_rate_bytes_headers_at_most_twice() -> None:
    deadline = Deadline(20, started=time.monotonic() - 50)
    assert deadline.remaining() < 0  # 50 s and nothing received
    deadline.received = 40 * MIN_RATE  # 60 s earned, but headers have twice 20 s at most
    assert -11 < deadline.remaining() <= -10
    deadline.headers_done = True
    assert 9 < deadline.remaining() <= 10


def test_the_run_command_serves_with_the_request_reading_worker() -> None:
    from scripts.run import web_command

    command = web_command(8000, {})
    worker = command[command.index("--worker-class") + 1]
    assert worker == "hacs_site.web_worker.RequestReadingWorker"
    assert command[command.index("--threads") + 1] == str(WEB_THREADS)
