"""The web server's worker: a request is read whole before a thread serves it, within deadlines.

gunicorn's threaded worker (``gthread``) gives a connection a thread once its first bytes
arrive; the thread then waits, blocking, for the rest of the headers, and for the body while
the application reads it. Ten clients sending a byte now and then held all 8 threads of
``run.sh``'s web server, and the login page timed out. gunicorn advises a buffering proxy in
front of it (docs/operating.md, "Behind a proxy"); this worker also protects a server without one.

``RequestReadingWorker`` reads each plain HTTP/1 request in the worker's event loop instead,
without a thread: the headers, then a body of declared length up to the largest one HACS
accepts in memory (``hacs_site.request_size``: a seed list), at most ``BUFFER_BUDGET`` bytes
for all the requests of a process being read at once. Only a complete request is handed to a
thread, so a slow client costs a socket and its bytes, never a thread. Reading has deadlines,
after Apache's mod_reqtimeout (``header=20-40,MinRate=500 body=20,MinRate=500``): a request
has ``HACS_REQUEST_READ_SECONDS`` (20) and one more second for every ``MIN_RATE`` (500) bytes
that arrive, its headers at most twice that time; past its deadline the client is answered
408 and its connection closed. What is not read in the loop — a chunked body, a body over the
limit (which the application refuses unread), an ``Expect: 100-continue`` body, a TLS
connection, bytes past the budget — is read by the thread under the same deadline.
"""

from __future__ import annotations

import errno
import selectors
import socket
import time
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from gunicorn.http.errors import NoMoreData
from gunicorn.http2 import negotiation
from gunicorn.workers.gthread import TConn, ThreadWorker

#: Bytes a second that earn a slow request one more second (Apache mod_reqtimeout's MinRate).
MIN_RATE = 500
#: Bytes of requests one worker process holds while reading them; past it, a thread reads.
BUFFER_BUDGET = 64 * 1024 * 1024
#: Bytes of headers read in the loop; longer ones go to gunicorn's parser, which refuses them.
MAX_HEADER_BYTES = 64 * 1024
#: Bytes read from one socket in one turn of the loop, so one fast client cannot hold it.
TURN_BYTES = 1024 * 1024
_TIMEOUT_ANSWER = (
    b"HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Type: text/plain\r\n"
    b"Content-Length: 40\r\n\r\nThe request was not sent in time: closed\n"
)


class RequestTimeout(NoMoreData):
    """A request's bytes did not arrive by its deadline. A ``NoMoreData`` (an ``OSError``), so
    that gunicorn closes the connection quietly, and Django reads it as a client gone."""

    def __str__(self) -> str:
        return "the request was not sent in time"


@dataclass
class Deadline:
    """When a request must have arrived: ``seconds`` after it began, one more second for every
    ``MIN_RATE`` bytes received, its headers by twice ``seconds`` at most."""

    seconds: float
    started: float = field(default_factory=time.monotonic)
    received: int = 0
    headers_done: bool = False

    def remaining(self) -> float:
        grace = self.seconds + self.received / MIN_RATE
        if not self.headers_done:
            grace = min(grace, 2 * self.seconds)
        return self.started + grace - time.monotonic()


class _DeadlineSocket:
    """The socket as gunicorn's parser reads it: each ``recv`` waits until the deadline at most."""

    def __init__(self, sock: socket.socket, deadline: Deadline) -> None:
        self.sock = sock
        self.deadline = deadline

    def recv(self, size: int) -> bytes:
        remaining = self.deadline.remaining()
        if remaining <= 0:
            raise RequestTimeout()
        prior = self.sock.gettimeout()
        self.sock.settimeout(remaining if prior is None else min(prior, remaining))
        try:
            data = self.sock.recv(size)
        except TimeoutError:
            if self.deadline.remaining() <= 0:
                raise RequestTimeout() from None
            raise  # the caller's own, shorter timeout (gunicorn's body drain)
        finally:
            self.sock.settimeout(prior)
        self.deadline.received += len(data)
        return data

    def gettimeout(self) -> float | None:
        return self.sock.gettimeout()

    def settimeout(self, value: float | None) -> None:
        self.sock.settimeout(value)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.sock, name)


class _Reading:
    """A request being read in the event loop: its bytes so far, its deadline, and how many
    bytes complete it (None until its headers are in)."""

    def __init__(self, data: bytes, deadline: Deadline, max_body: int) -> None:
        self.data = bytearray()
        self.deadline = deadline
        self.max_body = max_body
        self.wanted: int | None = None
        self.hand_over = False  # a thread must read the rest
        self.feed(data)

    def feed(self, chunk: bytes) -> None:
        self.data += chunk
        self.deadline.received += len(chunk)
        if self.wanted is None:
            end = self.data.find(b"\r\n\r\n")
            if end < 0:
                self.hand_over = len(self.data) > MAX_HEADER_BYTES
                return
            self.deadline.headers_done = True
            body = body_to_read(bytes(self.data[:end]), self.max_body)
            if body is None:
                self.hand_over = True
                return
            self.wanted = end + 4 + body

    @property
    def ready(self) -> bool:
        """Whether a thread may serve the request now."""
        return self.hand_over or (self.wanted is not None and len(self.data) >= self.wanted)


def body_to_read(head: bytes, max_body: int) -> int | None:
    """Bytes of body to read in the loop after the headers ``head``, or None when a thread must
    read it: sent in chunks, announced with ``Expect: 100-continue``, of an unclear length (for
    gunicorn's parser to refuse), or longer than ``max_body`` (for the application to refuse)."""
    lengths = []
    for line in head.split(b"\r\n")[1:]:
        name, _colon, value = line.partition(b":")
        name = name.strip().lower()
        if name in (b"transfer-encoding", b"expect"):
            return None
        if name == b"content-length":
            lengths.append(value.strip())
    if not lengths:
        return 0
    if len(lengths) > 1 or not (lengths[0].isascii() and lengths[0].isdigit()):
        return None
    length = int(lengths[0])
    return length if length <= max_body else None


class _Conn(TConn):  # type: ignore[misc]
    """gunicorn's connection, whose parser reads the socket under the request's deadline."""

    deadline: Deadline | None = None
    preread: bytes | None = None

    def init(self) -> None:
        super().init()
        unreader = getattr(self.parser, "unreader", None)  # none on an HTTP/2 connection
        if unreader is not None and not isinstance(unreader.sock, _DeadlineSocket):
            unreader.sock = _DeadlineSocket(unreader.sock, self.deadline or Deadline(20))


class RequestReadingWorker(ThreadWorker):  # type: ignore[misc]
    """gunicorn's threaded worker reading each request whole in its event loop first."""

    def run(self) -> None:
        from django.conf import settings

        from hacs_site.request_size import upload_request_bytes

        self.read_seconds = float(settings.HACS_REQUEST_READ_SECONDS)
        self.max_body = upload_request_bytes()
        self.reading: dict[_Conn, _Reading] = {}
        self.buffered = 0
        super().run()

    def accept(self, listener: socket.socket) -> None:
        """gunicorn's ``accept``, making a ``_Conn``."""
        try:
            client_sock, client_addr = listener.accept()
        except OSError as error:
            if error.errno not in (errno.EAGAIN, errno.ECONNABORTED, errno.EWOULDBLOCK):
                raise
            return
        self.nr_conns += 1
        client_sock.setblocking(True)
        self.enqueue_req(_Conn(self.cfg, client_sock, client_addr, listener.getsockname()))

    def enqueue_req(self, conn: _Conn) -> None:
        """A request's way to a thread: through the event loop first, when it can be read there."""
        if not self._reads_in_loop(conn):
            conn.deadline = Deadline(self.read_seconds)
            super().enqueue_req(conn)
            return
        early = conn.parser.unreader.take_buffered() if conn.parser is not None else b""
        reading = _Reading(early, Deadline(self.read_seconds), self.max_body)
        if reading.ready:
            self._hand_over(conn, reading)
            return
        conn.sock.setblocking(False)
        self.reading[conn] = reading
        self.buffered += len(reading.data)
        self.poller.register(conn.sock, selectors.EVENT_READ, partial(self._readable, conn))

    def _reads_in_loop(self, conn: _Conn) -> bool:
        """Plain HTTP/1 only: TLS and HTTP/2 connections are read by gunicorn's own code."""
        return not (
            self.cfg.is_ssl
            or conn.is_http2
            or negotiation.prior_knowledge_allowed(self.cfg, conn.client)
        )

    def _readable(self, conn: _Conn, _sock: socket.socket) -> None:
        reading = self.reading[conn]
        received = 0
        while received < TURN_BYTES:
            try:
                chunk = conn.sock.recv(min(65536, self.max_body + MAX_HEADER_BYTES))
            except (BlockingIOError, InterruptedError):
                break
            except OSError:
                self._close_reading(conn)
                return
            if not chunk:  # the client left before its request was whole
                self._close_reading(conn)
                return
            received += len(chunk)
            self.buffered += len(chunk)
            reading.feed(chunk)
            if reading.ready or self.buffered > BUFFER_BUDGET:
                reading.hand_over = True
                break
        if reading.ready:
            self._stop_reading(conn)
            self._hand_over(conn, reading)

    def _hand_over(self, conn: _Conn, reading: _Reading) -> None:
        conn.preread = bytes(reading.data)
        conn.deadline = reading.deadline
        super().enqueue_req(conn)

    def handle(self, conn: _Conn) -> Any:
        """gunicorn's ``handle``, the request's bytes read so far put back before it parses."""
        data, conn.preread = conn.preread, None
        if data is not None:
            conn.sock.setblocking(True)
            conn.init()
            conn.parser.unreader.unread(data)
            conn.data_ready = True
        unreader = getattr(conn.parser, "unreader", None)
        sock = getattr(unreader, "sock", None)
        if isinstance(sock, _DeadlineSocket):
            sock.deadline = conn.deadline or Deadline(self.read_seconds)
        return super().handle(conn)

    def murder_pending(self) -> None:
        """gunicorn's sweep of idle connections, and of requests past their deadline (every
        request being read, once the worker stops)."""
        super().murder_pending()
        for conn, reading in list(self.reading.items()):
            if reading.deadline.remaining() <= 0 or not self.alive:
                self.log.info(
                    "Closed a connection from %s: its request was not sent within its deadline",
                    conn.client[0] if isinstance(conn.client, tuple) else conn.client,
                )
                try:
                    conn.sock.send(_TIMEOUT_ANSWER)
                except OSError:
                    pass  # the answer is a courtesy; the connection closes anyway
                self._close_reading(conn)

    def _stop_reading(self, conn: _Conn) -> None:
        reading = self.reading.pop(conn)
        self.buffered -= len(reading.data)
        try:
            self.poller.unregister(conn.sock)
        except (KeyError, ValueError, OSError):
            pass

    def _close_reading(self, conn: _Conn) -> None:
        self._stop_reading(conn)
        self.nr_conns -= 1
        conn.close()
