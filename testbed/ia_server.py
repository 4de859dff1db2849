"""A local HTTP server that answers like the Internet Archive's CDX API and Wayback ``id_``.

It serves, on 127.0.0.1, what its state holds (``testbed.ia_cdx``, which also says how its CDX
answers follow the real server's).

It can also be told to misbehave: answer 429 with ``Retry-After``, answer 503, or refuse a
blocked site with the Internet Archive's error body (a query whose URL is under a blocked
prefix answers 403; a wider query leaves the blocked captures out silently, as the real server
filters captures one by one). Every request is logged with its arrival time, its bytes, the
rows it returned and the lines it read, so tests and benches can count what a client asked.

It fails the way real archives do (``Fault``): a chunked body cut mid-way, a JSON body
truncated behind a matching ``Content-Length``, a body trickled a byte at a time, a status line
and headers trickled a byte at a time, a connection dropped before any answer, and CDX paging
that never ends (``endless_prefixes``: a fresh resume key on every page, for a query of that
URL or one whose range covers that prefix's, such as a host query). ``storm`` injects such
faults at random into a share of the requests; ``aimed`` gives the requests about one site
theirs (every CDX query of one URL, or every fetch of one memento), as long as it is there.
"""

from __future__ import annotations

import gzip as gzip_module
import socket
import threading
import time
from collections.abc import Callable, Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from testbed.ia_cdx import (
    FIELDS,
    LINES_PER_BLOCK,
    MAX_PAGE_SIZE,
    QUERY_MAX_LIMIT,
    Aimed,
    CdxAnswer,
    Fault,
    IAState,
    Logged,
    Row,
    cdx_answer,
    resume_key,
)

__all__ = [
    "FIELDS",
    "Aimed",
    "Fault",
    "IAArchive",
    "IAState",
    "Logged",
    "Row",
    "cdx_answer",
    "closed_port",
    "first_cdx_page",
    "ia_rows_and_bodies",
    "resume_key",
]


# --- The server ----------------------------------------------------------------------------


class _IAHandler(BaseHTTPRequestHandler):
    """One request to the fake archive; ``state`` is the archive's (``IAArchive`` sets it)."""

    state: IAState
    fault: Fault | None = None  # this request's misbehaviour

    def log_message(self, format: str, *args: Any) -> None:
        return

    def do_GET(self) -> None:
        parts = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        kind_of_path = "cdx" if parts.path == "/cdx/search/cdx" else "web"
        about = query.get("url", "") if kind_of_path == "cdx" else parts.path
        self.fault = self.state.next_fault(kind_of_path, about)
        if self.fault is not None and self.fault.kind == "status":
            retry_after = self.fault.retry_after
            headers = {"Retry-After": retry_after} if retry_after else {}
            self._send(self.fault.status, b"slow down\n", "text/plain", headers, parts.path, query)
            return
        if self.fault is not None and self.fault.kind == "reset":
            with self.state.lock:
                self.state.log.append(Logged(time.monotonic(), parts.path, query, 0))
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
        answer = cdx_answer(self.state, query)
        headers = dict(answer.headers)
        body = answer.body
        raw = len(body)
        accepts = "gzip" in self.headers.get("Accept-Encoding", "")
        if self.state.gzip and accepts and query.get("gzip") != "false":
            body = gzip_module.compress(body, 6)
            headers["Content-Encoding"] = "gzip"
        self._send(
            answer.status, body, answer.content_type, headers, path, query, answer=answer, raw=raw
        )

    def _memento(self, path: str) -> None:
        rest = path[len("/web/") :]
        stamp, _, url = rest.partition("id_/")
        found = self.state.bodies.get((stamp, url))
        if found is None and self.state.body_for is not None:
            found = self.state.body_for(stamp, url)
        if found is None:
            self._send(404, b"no such memento\n", "text/plain", {}, path, {})
            return
        body, content_type = found
        self._send(200, body, content_type, {}, path, {})

    def _send(
        self,
        status: int,
        body: bytes,
        content_type: str,
        headers: dict[str, str],
        path: str,
        query: dict[str, str],
        *,
        answer: CdxAnswer | None = None,
        raw: int | None = None,
    ) -> None:
        entry = Logged(
            time.monotonic(), path, query, status, len(body), raw=len(body) if raw is None else raw
        )
        if answer is not None:
            entry.rows, entry.read = answer.rows, answer.read
            entry.cut_short = answer.cut_short
        with self.state.lock:
            self.state.log.append(entry)
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
        self._write_body(kind, fault, body)

    def _write_body(self, kind: str, fault: Fault | None, body: bytes) -> None:
        """Write the body, or the part of it that ``kind`` (a fault's) lets through."""
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

    def _trickle_headers(self, entry: Logged, fault: Fault, body: bytes, content_type: str) -> None:
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


class IAArchive:
    """Context manager running the server; ``cdx_url`` and ``wayback_url`` point at it.

    ``rows`` and ``bodies`` are what tests give; ``lines`` (CDX lines, for benches),
    ``body_for`` (bodies made on demand), ``exact_only`` (the recall gap), ``max_lines_read``,
    ``lines_per_block``, ``max_page_size``, ``paged_until``, ``gzip``, ``paginated`` and
    ``size_page`` are described in the module docstring.
    """

    def __init__(
        self,
        rows: Iterable[Row] = (),
        bodies: dict[Any, Any] | None = None,
        *,
        lines: Iterable[str] = (),
        body_for: Callable[[str, str], tuple[bytes, str] | None] | None = None,
        exact_only: Iterable[Row] = (),
        max_lines_read: int | None = QUERY_MAX_LIMIT,
        lines_per_block: int = LINES_PER_BLOCK,
        max_page_size: int = MAX_PAGE_SIZE,
        paged_until: str | None = None,
        gzip: bool = False,
        paginated: bool = True,
        size_page: bytes | None = None,
    ) -> None:
        self.state = IAState(
            rows=sorted(rows, key=lambda r: (r.urlkey, r.timestamp)),
            body_for=body_for,
            lines=sorted(lines),
            exact_only=list(exact_only),
            max_lines_read=max_lines_read,
            lines_per_block=lines_per_block,
            max_page_size=max_page_size,
            paged_until=paged_until,
            gzip=gzip,
            paginated=paginated,
            size_page=size_page,
        )
        self.state.bodies.update(bodies or {})
        handler = type("Handler", (_IAHandler,), {"state": self.state})
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
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

    def add_lines(self, lines: Iterable[str]) -> None:
        """The archive indexes more captures (CDX lines): later queries see them."""
        self.state.add_lines(lines)

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
        rows.append(
            Row(
                r.urlkey,
                r.timestamp14,
                r.original,
                r.mimetype,
                "-" if r.status is None else str(r.status),
                r.digest,
                "-" if r.length is None else str(r.length),
            )
        )
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
