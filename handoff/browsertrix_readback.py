"""Following a crawl that a Browsertrix hand-off started, and downloading its WACZ files.

Browsertrix's API (``backend/btrixcloud`` in webrecorder/browsertrix) answers
``GET /api/orgs/{oid}/crawls/{crawl_id}/replay.json`` with the crawl: its ``state`` and, once
it has files, ``resources``, one object per WACZ file: ``{"name": "….wacz", "path": ADDRESS,
"hash": SHA-256, "size": BYTES, …}``. The address is most often a signed one on a storage host
(S3, MinIO: another host than Browsertrix's), sometimes a path on the Browsertrix host. A crawl
is:

* under way in ``starting``, ``waiting_capacity``, ``waiting_org_limit``, ``running``,
  ``pending-wait``, ``generate-wacz``, ``uploading-wacz``, ``stopping`` and any state HACS does
  not know (it is asked again at the next pass, until ``HACS_CRAWL_WAIT_HOURS``);
* finished in ``complete`` and the ``stopped_…`` states (stopped by a user, at a time or storage
  limit: what it crawled is kept), :data:`FINISHED`: its files are read back;
* failed in ``failed``, ``canceled`` and the ``skipped_…`` states, :data:`FAILED`: reported,
  never asked again.

The address rules of the hand-off hold (``handoff.trust``, ``handoff.transport``): the API is
asked with the hand-off's credentials within ``HACS_HTTP_DEADLINE``; a file is downloaded only
from the Browsertrix host or a host listed in ``HACS_BROWSERTRIX_STORAGE_HOSTS``, over https at a
public address unless ``HACS_BROWSERTRIX_ALLOWED_HOSTS`` lists it, without the Browsertrix token
(a signed address needs none), following no redirect, streamed to disk within
``HACS_MAX_CRAWL_FILE_BYTES`` and ``HACS_CRAWL_DOWNLOAD_SECONDS``, and checked against the size
and SHA-256 Browsertrix gave. Messages name hosts and file names, never a signed address.
"""

from __future__ import annotations

import hashlib
import logging
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, BinaryIO
from urllib.parse import urlsplit

import requests
from django.conf import settings

from handoff.browsertrix import BrowsertrixSession
from handoff.delivery import HandOffFailed
from handoff.models import HandOff
from handoff.transport import (
    AddressRefused,
    AnswerTooLarge,
    DeadlinePassed,
    Download,
    GuardedClient,
)
from handoff.trust import host_is_listed, storage_address_problem

logger = logging.getLogger(__name__)

FINISHED = frozenset(
    {
        "complete",
        "stopped_by_user",
        "stopped_pause_expired",
        "stopped_storage_quota_reached",
        "stopped_time_quota_reached",
        "stopped_org_readonly",
    }
)
FAILED = frozenset(
    {
        "failed",
        "canceled",
        "skipped_storage_quota_reached",
        "skipped_time_quota_reached",
        "failed_not_logged_in",
    }
)
MAX_RESOURCES = 1000
_STATE = re.compile(r"[a-z][a-z_-]{0,39}")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,199}\.wacz")
_SHA256 = re.compile(r"[0-9a-f]{64}")


class DownloadRefused(Exception):
    """A crawl's file was not downloaded, or not whole: ``sentence`` says why."""

    def __init__(self, sentence: str) -> None:
        super().__init__(sentence)
        self.sentence = sentence


@dataclass(frozen=True)
class Resource:
    """One WACZ file of a crawl, as Browsertrix gave it (``url`` absolute; never shown)."""

    name: str
    url: str
    size: int | None
    sha256: str

    @property
    def host(self) -> str:
        return urlsplit(self.url).netloc.rsplit("@", 1)[-1]


@dataclass(frozen=True)
class CrawlCheck:
    """What Browsertrix said about a crawl: its state (empty when it could not be asked, then
    ``problem`` says why), whether it ended and how, its files and the resources refused
    (name, sentence)."""

    state: str = ""
    problem: str = ""
    resources: Sequence[Resource] = ()
    refused: Sequence[tuple[str, str]] = field(default_factory=list)

    @property
    def finished(self) -> bool:
        return self.state in FINISHED

    @property
    def failed(self) -> bool:
        return self.state in FAILED


def crawl_check(*, hand_off: HandOff, crawl_id: str) -> CrawlCheck:
    """Ask Browsertrix about the crawl (see the module); never raises for Browsertrix's
    trouble, which ``problem`` says."""
    session = BrowsertrixSession(hand_off)
    step = f"checking crawl {crawl_id}"
    path = f"/api/orgs/{hand_off.org_id}/crawls/{crawl_id}/replay.json"
    try:
        answer = session.call("GET", path, step=step)
    except HandOffFailed as failure:
        return CrawlCheck(problem=failure.message)
    state = answer.get("state")
    if not isinstance(state, str) or not _STATE.fullmatch(state):
        logger.warning(
            "Hand-off %r: crawl %s has the state %r", hand_off.name, crawl_id, str(state)[:100]
        )
        return CrawlCheck(
            problem=f'Hand-off "{hand_off.name}": Browsertrix at {hand_off.host} answered '
            f"{step} without a crawl state; is the address Browsertrix's API?"
        )
    if state not in FINISHED:
        return CrawlCheck(state=state)
    resources, refused = _resources(hand_off, answer.get("resources"))
    return CrawlCheck(state=state, resources=resources, refused=refused)


def _resources(hand_off: HandOff, given: Any) -> tuple[list[Resource], list[tuple[str, str]]]:
    """The crawl's WACZ files from ``resources``; an entry that is not one is refused."""
    if not isinstance(given, list):
        return [], [("resources", "Browsertrix gave no list of the crawl's files.")]
    found: list[Resource] = []
    refused: list[tuple[str, str]] = []
    for number, item in enumerate(given[:MAX_RESOURCES], start=1):
        item = item if isinstance(item, dict) else {}
        name = str(item.get("name") or "").rsplit("/", 1)[-1]
        path, size, digest = item.get("path"), item.get("size"), item.get("hash") or ""
        label = name if _NAME.fullmatch(name) else f"file {number}"
        if not _NAME.fullmatch(name):
            refused.append((label, "its name is not that of a WACZ file (….wacz)."))
        elif not isinstance(path, str) or not 0 < len(path) <= 8192:
            refused.append((label, "Browsertrix gave no address for it."))
        elif size is not None and (not isinstance(size, int) or isinstance(size, bool) or size < 0):
            refused.append((label, "Browsertrix gave a size that is not a number of bytes."))
        elif not isinstance(digest, str) or (digest and not _SHA256.fullmatch(digest.lower())):
            refused.append((label, "Browsertrix gave a hash that is not a SHA-256."))
        elif path.startswith("/") and not path.startswith("//"):
            found.append(Resource(name, hand_off.api_url + path, size, digest.lower()))
        elif path.startswith(("https://", "http://")):
            found.append(Resource(name, path, size, digest.lower()))
        else:
            refused.append((label, "its address is neither http(s) nor a path on Browsertrix."))
    if len(given) > MAX_RESOURCES:
        refused.append(("resources", f"only the first {MAX_RESOURCES:,} files are read."))
    return found, refused


def resource_download(*, hand_off: HandOff, resource: Resource, sink: BinaryIO) -> str:
    """Download the WACZ file into ``sink``; returns its SHA-256. Raises ``DownloadRefused``
    with a sentence when the address is not allowed, the file is too large, the download fails
    or the file is not the one Browsertrix described."""
    what = f'Hand-off "{hand_off.name}": the crawl\'s file {resource.name}'
    _refuse_before_asking(hand_off, resource, what)
    parts = urlsplit(resource.url)
    client = GuardedClient(
        f"{parts.scheme}://{parts.netloc}",
        listed=host_is_listed(resource.url),
        user_agent=settings.HACS_USER_AGENT,
        timeout=settings.HACS_HTTP_TIMEOUT,
        deadline=time.monotonic() + settings.HACS_CRAWL_DOWNLOAD_SECONDS,
    )
    digest = _Hashing(sink)
    target = parts.path + (f"?{parts.query}" if parts.query else "")
    try:
        result = client.download(target, digest, max_bytes=settings.HACS_MAX_CRAWL_FILE_BYTES)
    except (AddressRefused, DeadlinePassed, AnswerTooLarge, requests.RequestException) as error:
        raise DownloadRefused(f"{what} could not be downloaded: {_why(error, resource)}") from None
    _refuse_what_came(hand_off, resource, what, result, parts.path)
    found = digest.hexdigest()
    if resource.sha256 and found != resource.sha256:
        raise DownloadRefused(
            f"{what} does not match the SHA-256 Browsertrix gave for it; it was not read."
        )
    return found


def _refuse_before_asking(hand_off: HandOff, resource: Resource, what: str) -> None:
    """``DownloadRefused`` for a file whose address is not allowed or whose size, as
    Browsertrix gave it, is over the cap."""
    problem = storage_address_problem(resource.url, api_url=hand_off.api_url)
    if problem:
        raise DownloadRefused(f"{what} was not downloaded: {problem}")
    cap = settings.HACS_MAX_CRAWL_FILE_BYTES
    if resource.size is not None and resource.size > cap:
        raise DownloadRefused(
            f"{what} holds {resource.size:,} bytes, more than HACS_MAX_CRAWL_FILE_BYTES "
            f"({cap:,}); it was not downloaded."
        )


def _refuse_what_came(
    hand_off: HandOff, resource: Resource, what: str, result: Download, path: str
) -> None:
    """``DownloadRefused`` for an answer other than 200, or a file of another size than
    Browsertrix said."""
    if result.status != 200:
        logger.warning(
            "Hand-off %r: %s answered %s for %s: %r",
            hand_off.name,
            resource.host,
            result.status,
            path[:200],
            result.excerpt[:500],
        )
        expired = " (a signed address may have expired: it is asked again)" * (result.status == 403)
        raise DownloadRefused(
            f"{what} could not be downloaded: {resource.host} answered {result.status}"
            f"{expired}; the log has what it said."
        )
    if resource.size is not None and result.size != resource.size:
        raise DownloadRefused(
            f"{what} came with {result.size:,} bytes where Browsertrix said {resource.size:,}; "
            "it was not read."
        )


class _Hashing:
    """Writes to a file and hashes what it writes."""

    def __init__(self, sink: BinaryIO) -> None:
        self.sink = sink
        self.hash = hashlib.sha256()

    def write(self, data: bytes, /) -> int:
        self.hash.update(data)
        return self.sink.write(data)

    def hexdigest(self) -> str:
        return self.hash.hexdigest()


def _why(error: BaseException, resource: Resource) -> str:
    host = resource.host
    if isinstance(error, AddressRefused):
        return (
            f"{host} resolves to {error.problem}; for storage on this machine or the library's "
            "network, list it in HACS_BROWSERTRIX_ALLOWED_HOSTS."
        )
    if isinstance(error, DeadlinePassed):
        return (
            f"{host} did not finish sending it within {settings.HACS_CRAWL_DOWNLOAD_SECONDS:g} s "
            "(HACS_CRAWL_DOWNLOAD_SECONDS); it is asked again at the next pass."
        )
    if isinstance(error, AnswerTooLarge):
        return (
            f"{host} sent more than HACS_MAX_CRAWL_FILE_BYTES "
            f"({settings.HACS_MAX_CRAWL_FILE_BYTES:,}); nothing of it was read."
        )
    if isinstance(error, requests.Timeout):
        return f"{host} did not answer within {settings.HACS_HTTP_TIMEOUT:g} s."
    if isinstance(error, requests.exceptions.SSLError):
        return f"{host}'s TLS certificate was not accepted."
    if isinstance(error, requests.ConnectionError):
        return f"{host} could not be reached."
    return f"the request to {host} failed ({type(error).__name__})."
