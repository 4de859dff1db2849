"""HTTP to a crawler's API that trusts neither the address it was given nor what answers there.

The archive client (``archive.wayback``) reads archives an operator configured in the
environment. A hand-off's address is typed into the admin and reached when a librarian presses a
button, so its requests go through HACS's one transport (``hacs_site.transport``) with the
strictest of its settings:

* **Checked, pinned addresses.** The host is resolved right before connecting and every
  address it resolves to must pass ``hacs_site.transport.address_problem`` (unless the operator
  listed the host in ``HACS_BROWSERTRIX_ALLOWED_HOSTS``); the socket is opened to one of those
  checked addresses, so no second lookup can lead elsewhere (DNS rebinding); TLS still verifies
  the certificate against the name. Connections are not kept between requests, so each request
  is resolved and checked anew.
* **No redirect** is followed, and no proxy or ``.netrc`` is taken from the environment.
* **One deadline** for all the requests of one hand-off together — name resolution,
  connection, sending, headers and body.
* **A capped answer**: Browsertrix answers with small JSON objects (``MAX_ANSWER_BYTES``). A
  crawl's WACZ file is downloaded instead (``GuardedClient.download``): streamed to a file as it
  arrives, within its own cap and deadline.
* **Nothing retried**: a second upload would leave a second file, so a failed hand-off is
  simply run again.

``GuardedClient.send`` raises ``AddressRefused``, ``DeadlinePassed`` or ``AnswerTooLarge`` for
these, and ``requests``' own exceptions for a connection that failed or timed out.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import requests
import requests.exceptions

from hacs_site.transport import (
    AddressRefused,
    AnswerTooLarge,
    BodyCut,
    DeadlinePassed,
    Sink,
    Transport,
    Unreadable,
    checked_addresses,
    copy_body,
    read_capped,
    read_whole,
)

__all__ = [
    "AddressRefused",
    "Answer",
    "AnswerTooLarge",
    "DeadlinePassed",
    "Download",
    "GuardedClient",
    "checked_addresses",
]

MAX_ANSWER_BYTES = 1024 * 1024
MAX_EXCERPT_BYTES = 2048  # of a refused download's answer, for the log


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
        # No connection kept, no proxy, no .netrc: only this address is contacted.
        self._transport = Transport(user_agent=user_agent, pool_size=0, proxies=False)

    def send(self, method: str, path: str, **kwargs: Any) -> Answer:
        """Send one request and read its whole answer; ``kwargs`` go to ``requests``
        (``params``, ``data``, ``json``, ``headers``)."""
        with self._transport.exchange(self.deadline, listed=self.listed), _as_requests_errors():
            response = self._transport.request(
                method, self.base_url + path, timeout=self.timeout, **kwargs
            )
            with response:
                body = read_whole(response, MAX_ANSWER_BYTES, self.deadline)
        return Answer(response.status_code, response.headers, body)

    def download(self, path: str, sink: Sink, *, max_bytes: int) -> Download:
        """GET ``path`` (with its query, as given) and copy a 200 answer's body into ``sink``
        as it arrives, at most ``max_bytes`` (``AnswerTooLarge`` past them); the same checks
        and deadline as :meth:`send`. Any other status comes back with an empty body and a
        short excerpt of what the server said (for the log only)."""
        said = b""
        size = 0
        with self._transport.exchange(self.deadline, listed=self.listed), _as_requests_errors():
            response = self._transport.request("GET", self.base_url + path, timeout=self.timeout)
            with response:
                if response.status_code == 200:
                    size = copy_body(response, sink, max_bytes, self.deadline)
                else:
                    said = _excerpt(response, self.deadline)
        return Download(response.status_code, response.headers, size, said)


@contextmanager
def _as_requests_errors() -> Iterator[None]:
    """Give a body cut short, or in a coding HACS did not ask for, as ``requests`` errors, which
    the hand-off's messages already say (a deadline passing is the exchange's to say)."""
    try:
        yield
    except BodyCut as error:
        raise requests.ConnectionError(f"the answer was cut off: {error}") from None
    except Unreadable as error:
        raise requests.exceptions.ContentDecodingError(str(error)) from None


def _excerpt(response: requests.Response, deadline: float) -> bytes:
    """The start of a refused download's answer, for the log; nothing if it cannot be read."""
    try:
        return read_capped(response, MAX_EXCERPT_BYTES, deadline)[0]
    except (BodyCut, Unreadable):
        return b""
