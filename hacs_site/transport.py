"""HACS's one HTTP transport: every request to a server outside HACS goes through it.

The archive client (``archive.wayback``) and the hand-offs (``handoff.transport``) both send
their requests here; each keeps its own policy (which statuses to retry, the shared rate limit,
what a refusal means to a librarian), and this module owns the machinery they share:

* **One deadline** for a whole exchange — name resolution, connection, sending, headers and
  body — because a per-read timeout never fires for an answer trickled a byte at a time. A
  timer shuts down every socket the exchange used when the deadline passes, which ends a
  blocked read at once; a body is read with ``read1`` (whatever has arrived) and the deadline
  is checked between reads. An answer that "ended" because its connection was cut is not whole:
  the exchange raises :class:`DeadlinePassed`.
* **Pinned addresses.** A connection's host is resolved once, right before connecting, and the
  socket is opened to one of those addresses by this module itself, so no second lookup can lead
  elsewhere (DNS rebinding); TLS still verifies the certificate against the name. Unless the
  operator's configuration trusts the host (``listed``), every address it resolves to must pass
  :func:`address_problem` (public, globally routable) or the request is refused
  (:class:`AddressRefused`).
* **Retries' timing**: :func:`backoff_seconds` (exponential, capped, spread) and
  :func:`retry_after_seconds`; the caller decides what is worth retrying.
* **A capped body**, decompressed here as it arrives (gzip or deflate, the only codings HACS
  asks for), in steps no larger than the room left under the cap, into one buffer that never
  grows past it: a small gzip answer that would inflate to gigabytes costs at most the cap in
  memory (``python -m bench.decompression`` measures it). :func:`read_capped` says whether the
  body was cut at the cap; :func:`read_whole` and :func:`copy_body` raise
  :class:`AnswerTooLarge`, which names the limit.
* **The pool**: a :class:`Transport` keeps up to ``pool_size`` connections per host, shared by
  threads (the deadline of the request each thread sends is a ``ContextVar``), or, with
  ``pool_size=0``, none, so that every request is resolved and checked anew.
"""

from __future__ import annotations

import email.utils
import io
import ipaddress
import random
import socket
import threading
import time
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Protocol

import requests
import requests.adapters
import requests.exceptions
import urllib3
import urllib3.connection
import urllib3.connectionpool
import urllib3.exceptions

# What HACS asks servers to compress with, and all it decompresses (``Inflater``): requests
# would also offer br or zstd whenever their packages happen to be installed.
ACCEPT_ENCODING = "gzip, deflate"
# Bytes asked of the socket per read, and decompressed per step: what a read holds beyond the cap.
READ_SIZE = 64 * 1024
INFLATE_STEP = 64 * 1024
_GZIP_MAGIC = b"\x1f\x8b"


class AddressRefused(Exception):
    """The host resolved to an address HACS may not contact (not an ``OSError``, so that the
    HTTP libraries pass it on untouched instead of retrying or rewording it)."""

    def __init__(self, host: str, problem: str) -> None:
        super().__init__(f"{host} resolves to {problem}")
        self.host, self.problem = host, problem


class DeadlinePassed(Exception):
    """An exchange did not finish within its deadline (a stalled or trickling answer)."""


class AnswerTooLarge(Exception):
    """The answer's body was longer than the caller's cap; the message names the cap."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"the answer was longer than {limit:,} bytes")
        self.limit = limit


class BodyCut(Exception):
    """The connection broke while the body was being read, or its compressed data ended early
    or was damaged (worth asking again)."""


class Unreadable(Exception):
    """The answer is in a form HACS cannot read, however often it asks (an unknown coding)."""


# --- Which addresses may be contacted ----------------------------------------------------------


def address_problem(address: str) -> str:
    """Empty for a public (globally routable) IP address; else what it is, in a few words.

    An IPv6 address that carries an IPv4 one (IPv4-mapped ``::ffff:127.0.0.1``, NAT64, 6to4,
    Teredo) is judged by the IPv4 address too, since that is where it leads.
    """
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return f"not an IP address ({address!r})"
    for each in (*_carried(ip), ip):
        if each.is_loopback:
            return f"a loopback address ({ip})"
        if each.is_link_local:
            return f"a link-local address ({ip}), where cloud metadata services answer"
        if each.is_unspecified:
            return f"the unspecified address ({ip})"
        if each.is_multicast:
            return f"a multicast address ({ip})"
        if each.is_private:
            return f"a private address ({ip})"
        if each.is_reserved or not each.is_global:
            return f"a reserved or non-public address ({ip})"
    return ""


def _carried(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    """The IPv4 addresses an IPv6 address leads to (mapped, 6to4, Teredo, NAT64)."""
    carried: list[ipaddress.IPv4Address] = []
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            carried.append(ip.ipv4_mapped)
        if ip.sixtofour is not None:
            carried.append(ip.sixtofour)
        if ip.teredo is not None:
            carried.extend(ip.teredo)
        if ip in ipaddress.IPv6Network("64:ff9b::/96"):  # NAT64's well-known prefix
            carried.append(ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF))
    return carried


def resolve(host: str, port: int, timeout: float) -> list[tuple[Any, ...]]:
    """``getaddrinfo`` for a TCP connection, given up after ``timeout`` seconds (a resolver
    that does not answer would otherwise hold the request past its deadline)."""
    found: list[list[tuple[Any, ...]]] = []
    failed: list[OSError] = []

    def lookup() -> None:
        try:
            found.append(socket.getaddrinfo(host, port, type=socket.SOCK_STREAM))
        except OSError as error:
            failed.append(error)

    worker = threading.Thread(target=lookup, daemon=True, name=f"resolve {host}")
    worker.start()
    worker.join(max(timeout, 0.0))
    if failed:
        raise failed[0]
    if not found:
        raise TimeoutError(f"resolving {host} took longer than {timeout:.1f} s")
    return found[0]


def checked_addresses(host: str, port: int, *, listed: bool, timeout: float) -> list[Any]:
    """The ``getaddrinfo`` entries of ``host``, every one of them checked unless the host is
    listed; raises ``AddressRefused`` naming the first address HACS may not contact."""
    infos = resolve(host.strip("[]"), port, timeout)
    if not listed:
        for info in infos:
            problem = address_problem(str(info[4][0]))
            if problem:
                raise AddressRefused(host, problem)
    return infos


# --- One exchange: its deadline and its sockets ------------------------------------------------


@dataclass
class Exchange:
    """One request in flight (or a few, such as redirects within one host): its deadline,
    whether its host is trusted, and its sockets, which a timer shuts down at the deadline."""

    deadline: float  # a ``time.monotonic()`` instant
    listed: bool  # the operator trusts the host: its addresses are not checked
    sockets: list[Any] = field(default_factory=list)  # connections and their raw sockets
    cut: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)

    def left(self) -> float:
        return self.deadline - time.monotonic()

    def watch(self, item: Any) -> None:
        with self.lock:
            self.sockets.append(item)
            if self.cut:
                _shut(item)

    def cut_all(self) -> None:
        with self.lock:
            self.cut = True
            for item in self.sockets:
                _shut(item)


def _shut(item: Any) -> None:
    """Shut a connection's socket down (the plain socket's shutdown, also under TLS: only the
    transport is cut, and a read blocked on it returns at once)."""
    sock = getattr(item, "sock", item)
    if isinstance(sock, socket.socket):
        try:
            socket.socket.shutdown(sock, socket.SHUT_RDWR)
        except OSError:
            pass  # not connected yet, already closed, or handed over to TLS


# The exchange this thread is sending, for the connections below.
_EXCHANGE: ContextVar[Exchange | None] = ContextVar("hacs_http_exchange", default=None)


def _current(conn: urllib3.connection.HTTPConnection) -> Exchange:
    exchange = _EXCHANGE.get()
    if exchange is None:  # pragma: no cover - only Transport mounts these connections
        raise RuntimeError(f"a connection to {conn.host} was opened outside Transport.exchange")
    return exchange


def _connect_pinned(conn: urllib3.connection.HTTPConnection) -> socket.socket:
    """Open the connection to a resolved (and, unless listed, checked) address of its host,
    within the exchange's deadline."""
    exchange = _current(conn)
    connect_timeout = conn.timeout if isinstance(conn.timeout, int | float) else exchange.left()
    try:
        infos = checked_addresses(
            conn.host, conn.port or 0, listed=exchange.listed, timeout=exchange.left()
        )
    except socket.gaierror as error:
        raise urllib3.exceptions.NameResolutionError(conn.host, conn, error) from error
    except TimeoutError as error:
        raise urllib3.exceptions.ConnectTimeoutError(conn, str(error)) from error
    last: OSError | None = None
    for family, kind, proto, _, address in infos:
        left = exchange.left()
        if left <= 0:
            break
        sock = socket.socket(family, kind, proto)
        # The raw socket until the connection holds it; then the connection, whose ``sock``
        # becomes the TLS socket (wrapping detaches the raw one).
        exchange.watch(sock)
        exchange.watch(conn)
        try:
            for option in conn.socket_options or ():
                sock.setsockopt(*option)
            sock.settimeout(min(connect_timeout, left))
            sock.connect(address)
        except OSError as error:
            sock.close()
            last = error
            continue
        return sock
    if last is None or isinstance(last, TimeoutError):
        raise urllib3.exceptions.ConnectTimeoutError(conn, f"Connection to {conn.host} timed out.")
    raise urllib3.exceptions.NewConnectionError(
        conn, f"Failed to establish a new connection: {last}"
    ) from last


class _PinnedHTTPConnection(urllib3.connection.HTTPConnection):
    def _new_conn(self) -> socket.socket:
        return _connect_pinned(self)

    def request(self, *args: Any, **kwargs: Any) -> None:
        _current(self).watch(self)  # a pooled connection, reused, is cut at this deadline too
        super().request(*args, **kwargs)


class _PinnedHTTPSConnection(urllib3.connection.HTTPSConnection):
    def _new_conn(self) -> socket.socket:
        return _connect_pinned(self)

    def request(self, *args: Any, **kwargs: Any) -> None:
        _current(self).watch(self)
        super().request(*args, **kwargs)


class _PinnedHTTPPool(urllib3.connectionpool.HTTPConnectionPool):
    ConnectionCls = _PinnedHTTPConnection


class _PinnedHTTPSPool(urllib3.connectionpool.HTTPSConnectionPool):
    ConnectionCls = _PinnedHTTPSConnection


_PINNED_POOLS = {"http": _PinnedHTTPPool, "https": _PinnedHTTPSPool}


class _PinnedAdapter(requests.adapters.HTTPAdapter):
    """requests' adapter, with connections that pin their address and keep the deadline."""

    def __init__(self, *, proxies: bool, pool_maxsize: int) -> None:
        self.proxies = proxies
        super().__init__(pool_maxsize=pool_maxsize, max_retries=0)

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = _PINNED_POOLS

    def proxy_manager_for(self, proxy: str, **proxy_kwargs: Any) -> Any:
        if not self.proxies:
            raise requests.exceptions.InvalidProxyURL("this transport uses no proxy")
        manager = super().proxy_manager_for(proxy, **proxy_kwargs)
        if type(manager) is urllib3.ProxyManager:  # a SOCKS proxy keeps its own connections
            manager.pool_classes_by_scheme = _PINNED_POOLS
        return manager


class Transport:
    """One ``requests`` session whose every request runs within an :meth:`exchange`.

    ``pool_size``: connections kept per host (0: none, each request connects and is checked
    anew); ``proxies``: whether the environment's proxy and ``.netrc`` are used.
    """

    def __init__(self, *, user_agent: str, pool_size: int, proxies: bool) -> None:
        self.pool_size = pool_size
        self._adapter = _PinnedAdapter(proxies=proxies, pool_maxsize=max(pool_size, 1))
        self.session = requests.Session()
        self.session.trust_env = proxies
        self.session.headers["User-Agent"] = user_agent
        self.session.headers["Accept-Encoding"] = ACCEPT_ENCODING
        if not pool_size:
            self.session.headers["Connection"] = "close"
        for scheme in ("http://", "https://"):
            self.session.mount(scheme, self._adapter)

    @contextmanager
    def exchange(self, deadline: float, *, listed: bool) -> Iterator[Exchange]:
        """Run the requests and reads of the ``with`` block within ``deadline``; anything that
        breaks once the deadline has passed, or a block that ends after its connections were
        cut, raises :class:`DeadlinePassed`."""
        exchange = Exchange(deadline=deadline, listed=listed)
        left = exchange.left()
        if left <= 0:
            raise DeadlinePassed()
        timer = threading.Timer(left, exchange.cut_all)
        timer.daemon = True
        token = _EXCHANGE.set(exchange)
        timer.start()
        try:
            yield exchange
        except (requests.RequestException, urllib3.exceptions.HTTPError, OSError, BodyCut):
            if exchange.cut or exchange.left() <= 0:
                # Whatever broke last (a read cut by the timer, a timeout shortened to the
                # time left), the answer did not come in time.
                raise DeadlinePassed() from None
            raise
        finally:
            timer.cancel()
            _EXCHANGE.reset(token)
            if not self.pool_size:
                self._adapter.close()  # no connection is kept: the next one is checked anew
        if exchange.cut:  # an answer that "ended" when its connection was cut is not whole
            raise DeadlinePassed()

    def request(self, method: str, url: str, *, timeout: float, **kwargs: Any) -> Any:
        """Send one request of the current exchange, following no redirect; the answer's body
        is left to read (``read_capped``, ``read_whole``, ``copy_body``). ``timeout`` bounds
        the connection and each read, and is shortened to the time the exchange has left."""
        exchange = _EXCHANGE.get()
        if exchange is None:
            raise RuntimeError("Transport.request is called within Transport.exchange")
        left = exchange.left()
        if left <= 0:
            raise DeadlinePassed()
        return self.session.request(
            method, url, timeout=min(timeout, left), allow_redirects=False, stream=True, **kwargs
        )


# --- Retries' timing ---------------------------------------------------------------------------


def backoff_seconds(attempt: int, *, base: float, cap: float) -> float:
    """How long to wait before retry ``attempt + 1``: doubling from ``base``, at most ``cap``,
    spread by up to a quarter so that many workers' retries do not arrive together."""
    wait = min(cap, base * 2**attempt)
    return wait * (1 + random.random() * 0.25)


def retry_after_seconds(value: str | None, now: float | None = None) -> float | None:
    """Seconds asked for by a ``Retry-After`` header: a number of seconds or an HTTP date."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def unreachable_cause(error: requests.ConnectionError) -> str | None:
    """Why the host cannot be reached at all, or None for a failure worth retrying.

    requests wraps urllib3's ``MaxRetryError`` whose ``reason`` is a ``NewConnectionError``
    when the connection could not be opened (``NameResolutionError`` when the name does not
    resolve); a connect timeout is a different class and stays retryable.
    """
    wrapped = error.args[0] if error.args else None
    reason = getattr(wrapped, "reason", wrapped)
    if isinstance(reason, urllib3.exceptions.NameResolutionError):
        return "its name does not resolve"
    if isinstance(reason, urllib3.exceptions.NewConnectionError):
        cause = reason.__cause__ or reason.__context__
        if isinstance(cause, ConnectionRefusedError):
            return "the connection was refused"
        if isinstance(cause, OSError) and cause.strerror:
            return cause.strerror[0].lower() + cause.strerror[1:]
        return "no connection could be opened"
    return None


def describe(error: Exception) -> str:
    return f"{type(error).__name__}: {short(error)}"


def short(error: BaseException) -> str:
    text = str(error)
    return text if len(text) <= 200 else text[:200] + "…"


# --- The body, within the deadline and the cap -------------------------------------------------


class Sink(Protocol):
    def write(self, data: bytes, /) -> int: ...


def read_capped(response: Any, limit: int, deadline: float) -> tuple[bytes, bool]:
    """The decompressed body, cut at ``limit`` bytes, read before ``deadline``; and whether
    it was longer than that."""
    body = io.BytesIO()  # getvalue() hands over its buffer without copying it
    _, truncated = _pump(response, body, limit, deadline)
    return body.getvalue(), truncated


def read_whole(response: Any, limit: int, deadline: float) -> bytes:
    """The decompressed body; :class:`AnswerTooLarge` if it is longer than ``limit``."""
    body, truncated = read_capped(response, limit, deadline)
    if truncated:
        raise AnswerTooLarge(limit)
    return body


def copy_body(response: Any, sink: Sink, limit: int, deadline: float) -> int:
    """Copy the decompressed body into ``sink`` as it arrives; its size in bytes, or
    :class:`AnswerTooLarge` once it passes ``limit`` (nothing more is read)."""
    size, truncated = _pump(response, sink, limit, deadline)
    if truncated:
        raise AnswerTooLarge(limit)
    return size


def _pump(response: Any, sink: Sink, limit: int, deadline: float) -> tuple[int, bool]:
    """Write at most ``limit`` decompressed bytes of the body to ``sink``: (bytes written,
    whether the body was longer).

    ``read1`` returns whatever has arrived (at most one socket read), so a body trickled a byte
    at a time still meets the deadline check between reads. The raw bytes are decompressed
    here (``Inflater``) rather than by urllib3, which bounds its decompression only from 2.6
    on (requirements do not pin it): whatever the version, memory holds one read and one step.
    """
    raw = response.raw
    inflater = Inflater.for_coding(response.headers.get("Content-Encoding", ""))
    room = limit
    try:
        while True:
            if time.monotonic() > deadline:
                raise DeadlinePassed()
            chunk = raw.read1(READ_SIZE, decode_content=False)
            if not chunk:
                inflater.finish()
                return limit - room, False
            for piece in inflater.inflate(chunk, room + 1):
                if len(piece) > room:
                    # One byte past the cap is enough to know the body is longer.
                    sink.write(memoryview(piece)[:room].tobytes())
                    return limit, True
                sink.write(piece)
                room -= len(piece)
    except urllib3.exceptions.ReadTimeoutError as error:
        raise requests.Timeout(str(error)) from None
    except (urllib3.exceptions.HTTPError, OSError) as error:
        # ProtocolError (a chunked body or a Content-Length body cut short, a reset), SSL errors.
        raise BodyCut(short(error)) from None


class Inflater:
    """Decompresses one ``Content-Encoding`` (gzip, deflate or none) in bounded steps.

    ``inflate`` yields the data of a chunk in pieces of at most ``INFLATE_STEP`` bytes and
    stops once it has yielded ``most`` (zlib keeps the rest of the input, ``unconsumed_tail``),
    so a chunk of a bomb never inflates past what the caller has room for.
    """

    def __init__(self, coding: str) -> None:
        self.coding = coding  # "gzip", "deflate", or "" for none
        self._zlib: Any = None  # the decompressor of the stream (gzip member) being read
        self._pending = b""  # a first byte, until the second says what the stream is
        self._streams = 0  # streams (gzip members) read to their end
        self._ignoring = False  # after the last stream: the rest is ignored, as gzip does

    @classmethod
    def for_coding(cls, header: str) -> Inflater:
        codings = [c.strip().lower() for c in header.split(",") if c.strip()]
        codings = [c for c in codings if c != "identity"]
        if not codings:
            return cls("")
        if len(codings) == 1 and codings[0] in ("gzip", "x-gzip", "deflate"):
            return cls("deflate" if codings[0] == "deflate" else "gzip")
        # HACS asks for gzip or deflate only (ACCEPT_ENCODING); a server stacking codings or
        # sending another one gets the same answer on every retry.
        raise Unreadable(f"answered in Content-Encoding {header!r}, which HACS did not ask for")

    def inflate(self, data: bytes, most: int) -> Iterator[bytes]:
        if not self.coding:
            yield data
            return
        data, self._pending = self._pending + data, b""
        while data and most > 0 and not self._ignoring:
            if self._zlib is None:  # the body's start, or after a gzip member
                if len(data) < 2:
                    self._pending = data
                    return
                if self._streams and (self.coding == "deflate" or data[:2] != _GZIP_MAGIC):
                    self._ignoring = True
                    return
                self._zlib = self._decompressor(data[:2])
            try:
                piece = self._zlib.decompress(data, min(most, INFLATE_STEP))
            except zlib.error as error:
                raise BodyCut(f"the compressed answer is damaged ({error})") from None
            most -= len(piece)
            if piece:
                yield piece
            if self._zlib.eof:
                self._streams += 1
                data, self._zlib = self._zlib.unused_data, None
            else:
                data = self._zlib.unconsumed_tail

    def finish(self) -> None:
        """At the end of the body: compressed data that stops mid-stream was cut short."""
        if self._zlib is not None or (self._pending and not self._streams):
            raise BodyCut("the compressed answer ends early")

    def _decompressor(self, start: bytes) -> Any:
        if self.coding == "gzip":
            return zlib.decompressobj(16 + zlib.MAX_WBITS)
        # HTTP's deflate is zlib-wrapped, but some servers send raw deflate (as browsers
        # accept): a zlib header is two bytes whose big-endian value is a multiple of 31.
        zlib_wrapped = start[0] & 0x0F == 8 and (start[0] << 8 | start[1]) % 31 == 0
        return zlib.decompressobj(zlib.MAX_WBITS if zlib_wrapped else -zlib.MAX_WBITS)
