"""HTTP to a crawler's API that trusts neither the address it was given nor what answers there.

The archive client (``archive.wayback``) reads archives an operator configured in the
environment. A hand-off's address is typed into the admin and reached when a librarian presses a
button, so this client adds what the archive's does not need:

* **Checked, pinned addresses.** The host is resolved right before connecting and every address
  it resolves to must pass ``handoff.trust.address_problem`` (unless the operator listed the
  host in ``HACS_BROWSERTRIX_ALLOWED_HOSTS``). The socket is then opened to one of those checked
  addresses by this module itself, so no second lookup can lead elsewhere (DNS rebinding); TLS
  still verifies the certificate against the name. Connections are not kept between requests,
  so each request is resolved and checked anew.
* **No redirect** is followed, and no proxy or ``.netrc`` is taken from the environment.
* **One deadline** for all the requests of one hand-off together — name resolution,
  connection, sending, headers and body — because a per-read timeout never fires for an answer
  trickled a byte at a time. A timer cuts the connection when the deadline passes, which ends a
  blocked read at once (as ``archive.wayback`` does for headers).
* **A capped answer**: Browsertrix answers with small JSON objects. A crawl's WACZ file is
  downloaded instead (``GuardedClient.download``): streamed to a file as it arrives, within its
  own cap and deadline.

``GuardedClient.send`` raises ``AddressRefused``, ``DeadlinePassed`` or ``AnswerTooLarge`` for
these, and ``requests``' own exceptions for a connection that failed or timed out.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Protocol

import requests
import requests.adapters
import urllib3.connection
import urllib3.connectionpool
import urllib3.exceptions

from handoff.trust import address_problem

MAX_ANSWER_BYTES = 1024 * 1024
CHUNK_BYTES = 256 * 1024  # a download is copied on in pieces of this size
MAX_EXCERPT_BYTES = 2048  # of a refused download's answer, for the log


class AddressRefused(Exception):
    """The host resolved to an address HACS may not contact (not an ``OSError``, so that the
    HTTP libraries pass it on untouched instead of retrying or rewording it)."""

    def __init__(self, host: str, problem: str) -> None:
        super().__init__(f"{host} resolves to {problem}")
        self.host, self.problem = host, problem


class DeadlinePassed(Exception):
    """The hand-off's requests did not finish within their deadline."""


class AnswerTooLarge(Exception):
    """The answer was longer than ``MAX_ANSWER_BYTES``."""


@dataclass(frozen=True)
class Answer:
    status: int
    headers: Mapping[str, str]
    body: bytes


@dataclass(frozen=True)
class Download:
    """A download's outcome: the status, the headers, the bytes copied (a 200 answer's) and,
    for any other status, the start of what the server said."""

    status: int
    headers: Mapping[str, str]
    size: int
    excerpt: bytes


@dataclass
class _Exchange:
    """One request in flight: its deadline, whether its host is trusted, and its sockets, which
    a timer shuts down at the deadline."""

    deadline: float
    listed: bool
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


# The request this thread is sending, for the connections below.
_EXCHANGE: ContextVar[_Exchange | None] = ContextVar("hacs_handoff_exchange", default=None)


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


def _connect_checked(conn: urllib3.connection.HTTPConnection) -> socket.socket:
    """Open the connection to a checked address of its host, within the deadline."""
    exchange = _EXCHANGE.get()
    if exchange is None:  # pragma: no cover - only GuardedClient mounts these connections
        raise RuntimeError("a hand-off connection was opened outside GuardedClient.send")
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


class _CheckedHTTPConnection(urllib3.connection.HTTPConnection):
    def _new_conn(self) -> socket.socket:
        return _connect_checked(self)


class _CheckedHTTPSConnection(urllib3.connection.HTTPSConnection):
    def _new_conn(self) -> socket.socket:
        return _connect_checked(self)


class _CheckedHTTPPool(urllib3.connectionpool.HTTPConnectionPool):
    ConnectionCls = _CheckedHTTPConnection


class _CheckedHTTPSPool(urllib3.connectionpool.HTTPSConnectionPool):
    ConnectionCls = _CheckedHTTPSConnection


class _CheckedAdapter(requests.adapters.HTTPAdapter):
    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = {
            "http": _CheckedHTTPPool,
            "https": _CheckedHTTPSPool,
        }

    def proxy_manager_for(self, proxy: str, **proxy_kwargs: Any) -> Any:
        raise requests.exceptions.InvalidProxyURL("hand-offs use no proxy")


class GuardedClient:
    """Requests to one base address, all of them within one deadline (see the module)."""

    def __init__(
        self, base_url: str, *, listed: bool, user_agent: str, timeout: float, deadline: float
    ) -> None:
        """``listed``: the operator trusts this host (http, private addresses); ``timeout``:
        seconds for the connection and for each read; ``deadline``: a ``time.monotonic()``
        instant by which every request must have been answered whole."""
        self.base_url = base_url.rstrip("/")
        self.listed = listed
        self.timeout = timeout
        self.deadline = deadline
        self._adapter = _CheckedAdapter(max_retries=0)
        self._session = requests.Session()
        self._session.trust_env = False  # no proxy, no .netrc: only this address is contacted
        self._session.headers["User-Agent"] = user_agent
        self._session.headers["Connection"] = "close"
        for scheme in ("http://", "https://"):
            self._session.mount(scheme, self._adapter)

    def send(self, method: str, path: str, **kwargs: Any) -> Answer:
        """Send one request and read its whole answer; ``kwargs`` go to ``requests``
        (``params``, ``data``, ``json``, ``headers``)."""
        exchange = _Exchange(deadline=self.deadline, listed=self.listed)
        left = exchange.left()
        if left <= 0:
            raise DeadlinePassed()
        timer = threading.Timer(left, exchange.cut_all)
        timer.daemon = True
        token = _EXCHANGE.set(exchange)
        timer.start()
        response: requests.Response | None = None
        try:
            response = self._session.request(
                method,
                self.base_url + path,
                timeout=min(self.timeout, left),
                allow_redirects=False,
                stream=True,
                **kwargs,
            )
            body = _read_capped(response)
        except (requests.RequestException, urllib3.exceptions.HTTPError, OSError):
            if exchange.cut or exchange.left() <= 0:
                # Whatever broke last (a read cut by the timer, a timeout shortened to the
                # time left), the answer did not come in time.
                raise DeadlinePassed() from None
            raise
        finally:
            timer.cancel()
            _EXCHANGE.reset(token)
            if response is not None:
                response.close()
            self._adapter.close()  # no connection is kept: the next one is checked anew
        if exchange.cut:  # an answer that "ended" when its connection was cut is not whole
            raise DeadlinePassed()
        return Answer(response.status_code, response.headers, body)

    def download(self, path: str, sink: _Sink, *, max_bytes: int) -> Download:
        """GET ``path`` (with its query, as given) and copy a 200 answer's body into ``sink``
        as it arrives, at most ``max_bytes`` (``AnswerTooLarge`` past them); the same checks
        and deadline as :meth:`send`. Any other status comes back with an empty body and a
        short excerpt of what the server said (for the log only)."""
        exchange = _Exchange(deadline=self.deadline, listed=self.listed)
        left = exchange.left()
        if left <= 0:
            raise DeadlinePassed()
        timer = threading.Timer(left, exchange.cut_all)
        timer.daemon = True
        token = _EXCHANGE.set(exchange)
        timer.start()
        response: requests.Response | None = None
        said = b""
        size = 0
        try:
            response = self._session.request(
                "GET",
                self.base_url + path,
                timeout=min(self.timeout, left),
                allow_redirects=False,
                stream=True,
            )
            if response.status_code == 200:
                size = _read_into(response, sink, max_bytes)
            else:
                said = response.raw.read(MAX_EXCERPT_BYTES, decode_content=True) or b""
        except (requests.RequestException, urllib3.exceptions.HTTPError, OSError):
            if exchange.cut or exchange.left() <= 0:
                raise DeadlinePassed() from None
            raise
        finally:
            timer.cancel()
            _EXCHANGE.reset(token)
            if response is not None:
                response.close()
            self._adapter.close()
        if exchange.cut:
            raise DeadlinePassed()
        return Download(response.status_code, response.headers, size, said)


class _Sink(Protocol):
    def write(self, data: bytes, /) -> int: ...


def _read_into(response: requests.Response, sink: _Sink, max_bytes: int) -> int:
    """Copy the answer's body to ``sink`` as it arrives; raises ``AnswerTooLarge`` past
    ``max_bytes`` (nothing more is read)."""
    size = 0
    try:
        while chunk := response.raw.read(CHUNK_BYTES, decode_content=True):
            size += len(chunk)
            if size > max_bytes:
                raise AnswerTooLarge()
            sink.write(chunk)
    except urllib3.exceptions.ReadTimeoutError as error:
        raise requests.ReadTimeout(str(error)) from None
    except (urllib3.exceptions.HTTPError, OSError) as error:
        raise requests.ConnectionError(f"the answer was cut off: {error}") from None
    return size


def _read_capped(response: requests.Response) -> bytes:
    chunks: list[bytes] = []
    size = 0
    try:
        while chunk := response.raw.read(64 * 1024, decode_content=True):
            chunks.append(chunk)
            size += len(chunk)
            if size > MAX_ANSWER_BYTES:
                raise AnswerTooLarge()
    except urllib3.exceptions.ReadTimeoutError as error:
        raise requests.ReadTimeout(str(error)) from None
    except (urllib3.exceptions.HTTPError, OSError) as error:
        raise requests.ConnectionError(f"the answer was cut off: {error}") from None
    return b"".join(chunks)
