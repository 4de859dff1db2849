"""A local HTTP server that answers like the Internet Archive's CDX API and Wayback ``id_``.

It serves captures given by the test (as CDX records and page bodies) on 127.0.0.1, pages the
CDX answer with resume keys exactly as the Internet Archive does for ``showResumeKey=true``
(JSON array of arrays: header row, rows, an empty row, then ``[resume key]``), and can be told
to misbehave: answer 429 with ``Retry-After``, answer 503, or refuse a blocked site with the
Internet Archive's error body. Every request is logged with its arrival time so tests can check
the client's pacing. ``from`` limits a CDX query to captures from that timestamp on, as at the
Internet Archive.

It also fails the way real archives do (``Fault``): a chunked body cut mid-way, a JSON body
truncated behind a matching ``Content-Length``, a body trickled a byte at a time, a status line
and headers trickled a byte at a time, a connection dropped before any answer, and CDX paging
that never ends (``endless_prefixes``: a fresh resume key on every page). ``storm`` injects such
faults at random into a share of the requests.
"""

from __future__ import annotations

import json
import random
import socket
import threading
import time
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

BLOCKED_BODY = (
    "org.archive.util.io.RuntimeIOException: "
    "org.archive.wayback.exception.AdministrativeAccessControlException: Blocked Site Error\n"
)
FIELDS = ["urlkey", "timestamp", "original", "mimetype", "statuscode", "digest", "length"]


@dataclass
class Row:
    urlkey: str
    timestamp: str
    original: str
    mimetype: str
    status: str
    digest: str
    length: str

    def as_list(self) -> list[str]:
        return [self.urlkey, self.timestamp, self.original, self.mimetype, self.status,
                self.digest, self.length]  # fmt: skip


@dataclass
class Logged:
    at: float
    path: str
    query: dict[str, str]
    status: int
    sent: int = 0  # body bytes meant to be sent
    head: int = 0  # bytes of the status line and headers, with a "trickle_headers" fault
    head_sent: int = 0  # of which were written before the client hung up


@dataclass(frozen=True)
class Fault:
    """One misbehaviour for the next matching request (``on``: "cdx", "web" or None for any).

    ``kind``: "status" (answer ``status`` with ``retry_after``), "cut" (a chunked body that
    stops half-way, without its last chunk), "short" (a ``Content-Length`` body that stops
    half-way), "truncated" (half the body, with a ``Content-Length`` that matches it: broken
    JSON the transport cannot notice), "trickle" (one byte every ``interval`` seconds),
    "trickle_headers" (the status line and ``padding`` bytes of headers, one byte every
    ``interval`` seconds, then the body at once) or "reset" (the connection closed before any
    answer).
    """

    kind: str
    status: int = 503
    retry_after: str | None = None
    on: str | None = None
    interval: float = 0.2
    padding: int = 0  # bytes of an extra header sent by "trickle_headers"


STORM_KINDS = ("cut", "short", "trickle", "reset", "429", "503")


@dataclass
class IAState:
    rows: list[Row] = field(default_factory=list)
    bodies: dict[tuple[str, str], tuple[bytes, str]] = field(default_factory=dict)
    blocked_prefixes: set[str] = field(default_factory=set)
    faults: deque[tuple[int, str | None] | Fault] = field(default_factory=deque)
    endless_prefixes: set[str] = field(default_factory=set)
    storm: random.Random | None = None  # set with ``storm_share`` to fault requests at random
    storm_share: float = 0.3
    log: list[Logged] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def next_fault(self, kind_of_path: str) -> Fault | None:
        """The fault for this request: the first queued one that applies, else the storm's."""
        with self.lock:
            for index, fault in enumerate(self.faults):
                if isinstance(fault, tuple):
                    fault = Fault("status", status=fault[0], retry_after=fault[1])
                if fault.on in (None, kind_of_path):
                    del self.faults[index]
                    return fault
            if self.storm is None or self.storm.random() >= self.storm_share:
                return None
            kind = self.storm.choice(
                STORM_KINDS + (("truncated",) if kind_of_path == "cdx" else ())
            )
            if kind in ("429", "503"):
                return Fault("status", status=int(kind), retry_after="0" if kind == "429" else None)
            return Fault(kind, interval=0.05)


class IAArchive:
    """Context manager running the server; ``cdx_url`` and ``wayback_url`` point at it."""

    def __init__(self, rows: Iterable[Row] = (), bodies: dict[Any, Any] | None = None) -> None:
        self.state = IAState(rows=sorted(rows, key=lambda r: (r.urlkey, r.timestamp)))
        self.state.bodies.update(bodies or {})
        state = self.state

        class Handler(BaseHTTPRequestHandler):
            fault: Fault | None = None  # this request's misbehaviour

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                return

            def do_GET(self) -> None:  # noqa: N802
                parts = urlsplit(self.path)
                query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
                kind_of_path = "cdx" if parts.path == "/cdx/search/cdx" else "web"
                self.fault = state.next_fault(kind_of_path)
                if self.fault is not None and self.fault.kind == "status":
                    retry_after = self.fault.retry_after
                    headers = {"Retry-After": retry_after} if retry_after else {}
                    self._send(self.fault.status, b"slow down\n", "text/plain", headers,
                               parts.path, query)  # fmt: skip
                    return
                if self.fault is not None and self.fault.kind == "reset":
                    with state.lock:
                        state.log.append(Logged(time.monotonic(), parts.path, query, 0))
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                if parts.path == "/cdx/search/cdx":
                    self._cdx(query, parts.path)
                elif parts.path.startswith("/web/"):
                    self._memento(parts.path)
                else:
                    self._send(404, b"not found\n", "text/plain", {}, parts.path, query)

            def _cdx(self, query: dict[str, str], path: str) -> None:
                prefix = query.get("url", "")
                if any(prefix.startswith(b) for b in state.blocked_prefixes):
                    self._send(403, BLOCKED_BODY.encode(), "text/plain", {}, path, query)
                    return
                key = _prefix_urlkey(prefix)
                matching = [r for r in state.rows if r.urlkey.startswith(key)]
                if query.get("from"):
                    since = query["from"].ljust(14, "0")
                    matching = [r for r in matching if r.timestamp >= since]
                if prefix in state.endless_prefixes:
                    # A server that never stops paging: the same rows, a fresh key each time.
                    endless = [FIELDS, *(r.as_list() for r in matching[:3]), [],
                               [f"endless-{len(state.log)}-{random.random()}"]]  # fmt: skip
                    self._send(200, json.dumps(endless).encode(), "application/json", {}, path,
                               query)  # fmt: skip
                    return
                start = 0
                if "resumeKey" in query:
                    token = unquote(query["resumeKey"])
                    start = next(
                        (i for i, r in enumerate(matching) if f"{r.urlkey} {r.timestamp}" > token),
                        len(matching),
                    )
                limit = int(query.get("limit", "0") or 0) or len(matching)
                page = matching[start : start + limit]
                body: list[list[str]] = [FIELDS] if page or start == 0 else []
                body += [r.as_list() for r in page]
                more = start + limit < len(matching)
                if more and query.get("showResumeKey") == "true":
                    last = page[-1]
                    body += [[], [f"{last.urlkey} {last.timestamp}"]]
                if not page and start == 0:
                    body = []
                data = json.dumps(body).encode()
                self._send(200, data, "application/json", {}, path, query)

            def _memento(self, path: str) -> None:
                rest = path[len("/web/") :]
                stamp, _, url = rest.partition("id_/")
                found = state.bodies.get((stamp, url))
                if found is None:
                    self._send(404, b"no such memento\n", "text/plain", {}, path, {})
                    return
                body, content_type = found
                self._send(200, body, content_type, {}, path, {})

            def _send(
                self, status: int, body: bytes, content_type: str, headers: dict[str, str],
                path: str, query: dict[str, str],
            ) -> None:  # fmt: skip
                entry = Logged(time.monotonic(), path, query, status, len(body))
                with state.lock:
                    state.log.append(entry)
                fault = self.fault if self.fault is not None and status == 200 else None
                kind = fault.kind if fault is not None else ""
                if kind == "trickle_headers" and fault is not None:
                    self._trickle_headers(entry, fault, body, content_type)
                    return
                if kind == "truncated":
                    body = body[: len(body) // 2]
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                if kind == "cut":
                    self.send_header("Transfer-Encoding", "chunked")
                else:
                    self.send_header("Content-Length", str(len(body)))
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                try:
                    if kind == "cut":  # one chunk of half the body, then the connection drops
                        half = body[: max(1, len(body) // 2)]
                        self.wfile.write(f"{len(body):x}\r\n".encode() + half)
                        self.close_connection = True
                    elif kind == "short":
                        self.wfile.write(body[: len(body) // 2])
                        self.close_connection = True
                    elif kind == "trickle" and fault is not None:
                        for index in range(len(body)):
                            self.wfile.write(body[index : index + 1])
                            self.wfile.flush()
                            time.sleep(fault.interval)
                    else:
                        self.wfile.write(body)
                except OSError:
                    self.close_connection = True  # the client gave up: fine

            def _trickle_headers(
                self, entry: Logged, fault: Fault, body: bytes, content_type: str
            ) -> None:
                head = (
                    f"{self.protocol_version} 200 OK\r\nContent-Type: {content_type}\r\n"
                    f"Content-Length: {len(body)}\r\nX-Padding: {'p' * fault.padding}\r\n\r\n"
                ).encode()
                entry.head = len(head)
                self.close_connection = True
                try:
                    for index in range(len(head)):
                        self.wfile.write(head[index : index + 1])
                        self.wfile.flush()
                        entry.head_sent = index + 1
                        time.sleep(fault.interval)
                    self.wfile.write(body)
                except OSError:
                    return  # the client gave up: what the tests look for

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def cdx_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/cdx/search/cdx"

    @property
    def wayback_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/web"

    def __enter__(self) -> IAArchive:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def requests_to(self, kind: str) -> list[Logged]:
        """The logged requests for CDX pages (``"cdx"``) or mementos (``"web"``)."""
        with self.state.lock:
            entries = list(self.state.log)
        if kind == "cdx":
            return [e for e in entries if e.path == "/cdx/search/cdx"]
        return [e for e in entries if e.path.startswith("/web/")]


def closed_port() -> int:
    """A port of 127.0.0.1 where nothing listens: connections to it are refused."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _prefix_urlkey(prefix: str) -> str:
    """The urlkey prefix of a ``url=host/path`` prefix query (as the CDX server builds it)."""
    from hacs.formats.canon import canonical_url

    key = canonical_url(prefix if "://" in prefix else "http://" + prefix)
    return key[:-1] if key.endswith("/") else key


def ia_rows_and_bodies(demo: Any) -> tuple[list[Row], dict[tuple[str, str], Any]]:
    """What an Internet Archive would hold of a demo archive: its clean CDX rows and bodies."""
    from warcio.archiveiterator import ArchiveIterator

    from hacs.formats.cdx import parse_cdx

    parsed = parse_cdx(demo.cdx_path.read_bytes())
    seen: set[tuple[str, str]] = set()
    rows = []
    for r in parsed.records:
        if (r.urlkey, r.timestamp14) in seen:
            continue
        seen.add((r.urlkey, r.timestamp14))
        rows.append(Row(r.urlkey, r.timestamp14, r.original, r.mimetype,
                        "-" if r.status is None else str(r.status), r.digest,
                        "-" if r.length is None else str(r.length)))  # fmt: skip
    bodies = {}
    with open(demo.warc_path, "rb") as stream:
        for record in ArchiveIterator(stream):
            if record.rec_type != "response":
                continue
            stamp = record.rec_headers.get_header("WARC-Date")
            digits = "".join(ch for ch in stamp if ch.isdigit())[:14]
            url = record.rec_headers.get_header("WARC-Target-URI")
            bodies[(digits, url)] = (
                record.content_stream().read(),
                record.http_headers.get_header("Content-Type") or "text/html",
            )
    return rows, bodies


def first_cdx_page(client: Any, prefix: str) -> str:
    """The text of a prefix query's first page, read the way imports read every page."""
    return str(next(iter(client.cdx_pages(prefix, lambda text: (text, None)))))
