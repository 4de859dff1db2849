"""The archive client of HACS: CDX queries and raw mementos from configured archives.

Every request goes through HACS's one HTTP transport (``hacs_site.transport``: one deadline for
the whole request, pinned addresses, a body capped and decompressed as it arrives, a pool of
connections), waits for its slot in the shared per-host rate limit (``archive.ratelimit``),
honours ``Retry-After``, and backs off exponentially on 429, 5xx, timeouts, resets and bodies
cut mid-way. Redirects are followed only within the archive's own host: HACS never fetches a
seed site itself. The archive is the operator's configuration, so its addresses are not checked
as a hand-off's are; a ``Retry-After`` asks for at most the deadline; a CDX query stops after a
number of pages and bytes. What retries cannot fix — a name that does not resolve, a refused
connection, a URL or header that requests refuses to send — raises
:class:`ArchiveUnreachableError` at once, and the client remembers it, so the run stops instead
of spending minutes, or a traceback, per site.

A CDX query asks for one URL by prefix (a seed's scope), by host (every page of a host, for
seeds that share it) or exactly (one page), as both the Internet Archive and pywb understand
``matchType``. Its pages, retries and waits all end by one deadline (``HACS_CDX_QUERY_DEADLINE``
from its start, or the caller's); a memento fetch takes the caller's deadline too. No wait runs
past such a deadline: a backoff, a ``Retry-After`` or a rate-limit slot that would end after it
ends the query at once with :class:`DeadlineExceededError`, a sentence naming the URL.

One client may be used by several threads at once (the import fetches in a thread pool): the
counters in ``stats`` are kept under a lock, ``unreachable`` is set once, by the first thread
to find the archive unreachable, and the threads share one transport, whose pool holds
``POOL_SIZE`` connections per host. Sharing is safe for what HACS sends: GETs with no redirect
followed by requests, through urllib3's pools and a cookie jar, which lock; the deadline of a
request is a ``ContextVar``, which each thread sets for itself; the rate limit is kept in
Redis, so it holds across threads as it does across processes.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urljoin, urlsplit

import redis
import requests
import requests.exceptions

from archive.ratelimit import RateLimitUnavailable, SharedRateLimiter, SlotPastDeadline
from hacs import defaults
from hacs.formats.cdx import memento_url
from hacs_site.env import http_url_problem
from hacs_site.transport import (
    BodyCut,
    DeadlinePassed,
    Inflater,
    Transport,
    Unreadable,
    backoff_seconds,
    describe,
    read_capped,
    retry_after_seconds,
    unreachable_cause,
)

log = logging.getLogger(__name__)

RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
IA_CDX_FIELDS = "urlkey,timestamp,original,mimetype,statuscode,digest,length"
# Default caps, sized from real answers (docs/security.md): the largest real CDX answer seen is
# 524 KB (2,236 rows) and real rows average 121 bytes as HACS asks for them, so 16 MiB holds
# about 130,000 captures in one query; the largest real raw memento seen is 270 KB.
MAX_CDX_BYTES = defaults.MAX_CDX_BYTES
MAX_MEMENTO_BYTES = defaults.MAX_MEMENTO_BYTES
# The size question's answer is a bare number of pages: a few bytes. Anything longer is read no
# further (``ArchiveClient.cdx_blocks``).
SIZE_ANSWER_BYTES = 1024
# What a CDX query may ask for: a URL's prefix (a seed's scope), its whole host, or it alone.
MATCH_TYPES = ("prefix", "host", "exact")
# Connections kept open per archive host: more than the threads an import runs (4–8), so that
# every thread's connection goes back to the pool instead of being dropped with urllib3's
# "Connection pool is full" warning.
POOL_SIZE = 16


class ArchiveError(Exception):
    """An archive could not answer a request, after retries; the message says what happened."""


class BlockedSiteError(ArchiveError):
    """The archive refuses to serve this site (for example the Internet Archive's exclusions)."""


class SizeUnknownError(ArchiveError):
    """The CDX server answered the size question (``showNumPages``) with something other than a
    number: rows, an HTML page, JSON, an error. It does not count pages (a server without the
    Internet Archive's pagination API, a proxy, an error page served with 200): asking again
    cannot help, so the caller asks its queries without their size."""


class DeadlineExceededError(ArchiveError):
    """A CDX query or a memento was not answered by its deadline (``HACS_CDX_QUERY_DEADLINE``
    or the caller's), retries and waits included; the message names the URL."""


class ArchiveUnreachableError(ArchiveError):
    """The archive's host does not resolve or refuses connections, its configured URL or
    HACS's User-Agent is one requests refuses to send, or Redis (which holds the shared rate
    limit) is down: no retry and no later site can do better, so an import stops at once
    (``ArchiveClient.unreachable`` remembers it)."""


# What requests raises, before anything is sent, for a URL or header it will not send: asking
# again cannot help.
_UNSENDABLE = (
    requests.exceptions.InvalidURL,  # also a port out of range or a bad host name at connect
    requests.exceptions.InvalidSchema,
    requests.exceptions.MissingSchema,
    requests.exceptions.InvalidHeader,
)


@dataclass(frozen=True)
class ArchiveConfig:
    cdx_url: str
    wayback_url: str
    dialect: str = "ia"  # "ia" (Internet Archive CDX server) or "pywb"
    cdx_per_minute: float = defaults.CDX_PER_MINUTE
    memento_per_minute: float = defaults.MEMENTO_PER_MINUTE
    timeout: float = defaults.HTTP_TIMEOUT
    retries: int = defaults.HTTP_RETRIES
    backoff_base: float = defaults.HTTP_BACKOFF_BASE
    backoff_cap: float = 300.0
    max_memento_bytes: int = MAX_MEMENTO_BYTES
    user_agent: str = "HACS/0.1"
    page_size: int = 5000
    deadline: float = defaults.HTTP_DEADLINE  # a whole request: connection, headers and body
    max_cdx_pages: int = defaults.CDX_MAX_PAGES  # pages of one CDX query (``page_size`` rows)
    max_cdx_bytes: int = MAX_CDX_BYTES  # decompressed bytes of one CDX query, all pages
    index_lag_days: float = defaults.CDX_INDEX_LAG_DAYS
    query_deadline: float = defaults.CDX_QUERY_DEADLINE  # all pages, retries and waits

    @classmethod
    def from_settings(cls) -> ArchiveConfig:
        from django.conf import settings

        return cls(
            cdx_url=settings.HACS_CDX_URL,
            wayback_url=settings.HACS_WAYBACK_URL,
            dialect=settings.HACS_CDX_DIALECT,
            cdx_per_minute=settings.HACS_CDX_RATE_PER_MINUTE,
            memento_per_minute=settings.HACS_MEMENTO_RATE_PER_MINUTE,
            timeout=settings.HACS_HTTP_TIMEOUT,
            retries=settings.HACS_HTTP_RETRIES,
            backoff_base=settings.HACS_HTTP_BACKOFF_BASE,
            max_memento_bytes=settings.HACS_MAX_MEMENTO_BYTES,
            user_agent=settings.HACS_USER_AGENT,
            deadline=settings.HACS_HTTP_DEADLINE,
            max_cdx_pages=settings.HACS_CDX_MAX_PAGES,
            max_cdx_bytes=settings.HACS_MAX_CDX_BYTES,
            index_lag_days=settings.HACS_CDX_INDEX_LAG_DAYS,
            query_deadline=settings.HACS_CDX_QUERY_DEADLINE,
        )

    @property
    def cdx_host(self) -> str:
        """The CDX server's host (and port), as the Jobs page and the captures name it."""
        return self.cdx_url.split("://", 1)[-1].split("/", 1)[0]

    @property
    def source(self) -> str:
        """What the captures read from this archive's CDX server record as their source."""
        return f"cdx:{self.cdx_host}"


@dataclass(frozen=True)
class Memento:
    url: str
    timestamp: str
    status: int
    content_type: str | None
    body: bytes
    truncated: bool


@dataclass
class RequestStats:
    """What a client has asked of the archive; ``add`` counts, under a lock (threads share it)."""

    requests: int = 0  # attempts sent (each retry counts)
    retries: int = 0
    waited_seconds: float = 0.0
    cdx_queries: int = 0  # CDX pages asked for (without their retries)
    mementos: int = 0  # mementos asked for (without their retries)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(
        self,
        *,
        requests: int = 0,
        retries: int = 0,
        waited_seconds: float = 0.0,
        cdx_queries: int = 0,
        mementos: int = 0,
    ) -> None:
        with self._lock:
            self.requests += requests
            self.retries += retries
            self.waited_seconds += waited_seconds
            self.cdx_queries += cdx_queries
            self.mementos += mementos


@dataclass(frozen=True)
class _TimeLimit:
    """When a caller's query or fetch must have ended (a ``time.monotonic()`` time), and the
    sentence it ends with when it has not."""

    until: float
    sentence: str

    @classmethod
    def of(cls, until: float, host: str, what: str) -> _TimeLimit:
        seconds = round(max(until - time.monotonic(), 0.0), 1)
        sentence = (
            f"The archive at {host} did not answer {what} within {seconds:g} s; try again "
            "later with import_archive --failed."
        )
        return cls(until, sentence)

    def left(self) -> float:
        return self.until - time.monotonic()

    def error(self) -> DeadlineExceededError:
        return DeadlineExceededError(self.sentence)


@dataclass(frozen=True)
class _Answer:
    """A whole answer: status, headers and the body read within the deadline and the cap."""

    status: int
    headers: Mapping[str, str]
    body: bytes
    truncated: bool  # the body was longer than the cap and was cut there


@dataclass(frozen=True)
class _Request:
    """One GET the client sends, and what its messages call it."""

    kind: str  # "cdx" or "memento": which rate limit, which configured URL
    url: str
    params: dict[str, str] | None
    what: str  # "The memento of … at …"
    setting: str  # the setting that configures the URL, for the messages
    limit: int  # decompressed bytes of the body kept
    time_limit: _TimeLimit | None


@dataclass(frozen=True)
class _Failure:
    """Why an attempt failed, in a way worth retrying, and the wait the archive asked for."""

    reason: str
    wait: float | None = None


@dataclass(frozen=True)
class _CdxQuery:
    """One CDX query, all its pages: what it asks, how its pages parse, when it must end."""

    url: str
    match_type: str
    parse: Callable[[str], tuple[Any, str | None]]
    since: str | None
    row_keys: Callable[[Any], Iterable[Hashable]] | None
    time_limit: _TimeLimit


# The decompressor, under the name the archive's tests know it by.
_Inflater = Inflater


class ArchiveClient:
    def __init__(
        self,
        config: ArchiveConfig,
        connection: redis.Redis,
        *,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.config = config
        # One transport for every thread (the module docstring says why that is safe); the
        # environment's proxy, if any, is used.
        self.transport = Transport(user_agent=config.user_agent, pool_size=POOL_SIZE, proxies=True)
        self.stats = RequestStats()
        # Set by the first request whose host cannot be reached; every later request to the
        # archive raises it again at once, and the import pipeline stops the run on it.
        self.unreachable: ArchiveUnreachableError | None = None
        self._lock = threading.Lock()
        self._sleep = sleep
        self._limiters = {
            "cdx": SharedRateLimiter(
                connection, _host(config.cdx_url), "cdx", config.cdx_per_minute, sleep=sleep
            ),
            "memento": SharedRateLimiter(
                connection,
                _host(config.wayback_url),
                "memento",
                config.memento_per_minute,
                sleep=sleep,
            ),
        }

    # --- CDX -----------------------------------------------------------------------------------
    def cdx_query_params(
        self,
        url: str,
        resume_key: str | None = None,
        since: str | None = None,
        *,
        match_type: str = "prefix",
    ) -> dict[str, str]:
        """Query parameters of a query for ``url``; never ``collapse``: unchanged captures are
        data.

        ``match_type`` (``MATCH_TYPES``) is sent as ``matchType``, which both dialects
        understand: "prefix" every URL under ``url``, "host" every URL of its host (neither
        subdomains nor other ports), "exact" ``url`` alone. ``since`` (a 1–14 digit timestamp)
        asks only for captures from then on (``from``, which both the Internet Archive and pywb
        understand): the incremental refresh.
        """
        _check_match_type(match_type)
        if self.config.dialect == "pywb":
            params = {"url": url, "matchType": match_type, "output": "json", "allowFuzzy": "0"}
        else:
            params = {
                "url": url,
                "matchType": match_type,
                "output": "json",
                "fl": IA_CDX_FIELDS,
                "showResumeKey": "true",
                "limit": str(self.config.page_size),
            }
            if resume_key:
                params["resumeKey"] = resume_key
        if since:
            params["from"] = since
        return params

    def cdx_pages(
        self,
        url: str,
        parse: Callable[[str], tuple[Any, str | None]],
        *,
        since: str | None = None,
        row_keys: Callable[[Any], Iterable[Hashable]] | None = None,
        match_type: str = "prefix",
        deadline: float | None = None,
    ) -> Iterator[Any]:
        """Every page of a query for ``url`` (``cdx_query_params``), following resume keys;
        ``parse`` returns (page, key).

        ``deadline`` (a ``time.monotonic()`` time; by default ``query_deadline`` seconds from
        this call) bounds the whole query: its pages, retries, backoff, ``Retry-After`` and
        rate-limit waits. Each request ends by it too; a wait that would end after it ends the
        query at once, and so does the deadline passing: ``DeadlineExceededError``.

        ``row_keys`` names a page's rows: a page asked for with a resume key that brings no
        row not seen before ends the query at once with an ``ArchiveError`` (an archive that
        answers every key with the same rows would otherwise be asked ``max_cdx_pages`` times).

        A page that does not parse (``ValueError``, as ``CdxError`` is) is asked for again: a
        body cut where HTTP cannot tell (no length, no chunking) arrives as broken JSON. The
        query ends with an ``ArchiveError`` after ``max_cdx_pages`` pages, ``max_cdx_bytes``
        bytes or a resume key seen before: an archive sending fresh keys forever must not
        keep an import running.
        """
        _check_match_type(match_type)  # here, not at the first page
        name = _query_name(url, match_type)
        until = time.monotonic() + self.config.query_deadline if deadline is None else deadline
        time_limit = _TimeLimit.of(until, _host(self.config.cdx_url), f"the CDX query for {name}")
        return self._cdx_query(_CdxQuery(url, match_type, parse, since, row_keys, time_limit))

    def _cdx_query(self, query: _CdxQuery) -> Iterator[Any]:
        host = _host(self.config.cdx_url)
        name = _query_name(query.url, query.match_type)
        resume_key: str | None = None
        seen: set[str] = set()
        rows_seen: set[Hashable] = set()
        budget = self.config.max_cdx_bytes
        for _ in range(self.config.max_cdx_pages):
            page, next_key, size = self._parsed_page(query, resume_key, budget)
            budget -= size
            if query.row_keys is not None:
                keys = set(query.row_keys(page))
                if resume_key is not None and not keys - rows_seen:
                    raise ArchiveError(
                        f"The CDX server at {host} answered resume key {resume_key!r} for "
                        f"{name} with no capture it had not sent already, so its paging would "
                        "not end: try again later with import_archive --failed."
                    )
                rows_seen |= keys
            yield page
            if not next_key or self.config.dialect == "pywb":
                return
            if next_key in seen:
                raise ArchiveError(
                    f"The CDX server at {host} repeated resume key {next_key!r} for {name}, "
                    "so its paging would never end: try again later with import_archive "
                    "--failed."
                )
            seen.add(next_key)
            resume_key = next_key
        raise ArchiveError(
            f"The CDX server at {host} kept sending more pages for {name} after "
            f"{self.config.max_cdx_pages} pages; raise HACS_CDX_MAX_PAGES if the site really "
            "has that many captures."
        )

    def _parsed_page(
        self, query: _CdxQuery, resume_key: str | None, budget: int
    ) -> tuple[Any, str | None, int]:
        """The page after ``resume_key``, parsed, with its next key and its size in bytes; a
        page that does not parse is asked for again (``retries`` times)."""
        name = _query_name(query.url, query.match_type)
        for attempt in range(self.config.retries + 1):
            params = self.cdx_query_params(
                query.url, resume_key, query.since, match_type=query.match_type
            )
            text, size = self._cdx_page(name, params, budget, query.time_limit)
            try:
                page, next_key = query.parse(text)
                return page, next_key, size
            except ValueError as error:
                reason = str(error)
            finally:
                # A page's text (up to the cap) goes before the next one is read.
                del text
            if attempt < self.config.retries:
                why = f"CDX answer for {name} unreadable ({reason})"
                self._back_off(why, attempt, query.time_limit)
        raise ArchiveError(
            f"The CDX server at {_host(self.config.cdx_url)} sent an unreadable answer for "
            f"{name} {self.config.retries + 1} times ({reason}); it may be cutting its answers "
            "short: try again later with import_archive --failed."
        ) from None

    def _cdx_page(
        self, name: str, params: dict[str, str], budget: int, time_limit: _TimeLimit
    ) -> tuple[str, int]:
        """One page as text and its size in bytes, read within ``budget`` bytes."""
        host = _host(self.config.cdx_url)
        answer = self._get_cdx(
            params, what=f"The CDX query for {name}", limit=max(budget, 0), time_limit=time_limit
        )
        if answer.truncated:
            raise ArchiveError(
                f"The CDX answer for {name} from {host} passed {self.config.max_cdx_bytes:,} "
                "bytes; raise HACS_MAX_CDX_BYTES if the site really has that many captures."
            )
        body = answer.body.decode("utf-8", errors="replace")
        if answer.status == 403 or "AdministrativeAccessControlException" in body:
            raise BlockedSiteError(f"The archive blocks {name}: {_first_line(body)}")
        if answer.status == 404 and self.config.dialect == "pywb":
            return "", len(answer.body)  # pywb answers 404 when it holds no capture
        if answer.status != 200:
            raise ArchiveError(
                f"The CDX query for {name} at {host} answered HTTP {answer.status}: "
                f"{_first_line(body)}"
            )
        return body, len(answer.body)

    def cdx_blocks(self, url: str, *, match_type: str = "prefix") -> int:
        """How many index blocks (about 3,000 lines each at the Internet Archive) the query's
        key range spans, in one small request (``showNumPages=true&pageSize=1``).

        The Internet Archive's server reads at most 150,000 index lines for one query, counting
        those ``from`` throws away, and then ends the answer without a resume key: a host query
        over a long history is silently cut short. This tells, before asking, whether a group
        is too big to ask at once. Only the Internet Archive's dialect answers it.

        The answer is read up to :data:`SIZE_ANSWER_BYTES`: a bare number. Anything else — a
        longer answer, rows, an HTML or JSON page, an error status — raises
        ``SizeUnknownError`` naming what came and that limit: the server does not count pages.
        """
        _check_match_type(match_type)
        if self.config.dialect != "ia":
            raise ValueError("only the Internet Archive's CDX server counts index blocks")
        name = url if match_type == "prefix" else f"{url} (matchType={match_type})"
        params = {"url": url, "matchType": match_type, "showNumPages": "true", "pageSize": "1"}
        host = _host(self.config.cdx_url)
        until = time.monotonic() + self.config.query_deadline
        time_limit = _TimeLimit.of(until, host, f"the size of the CDX query for {name}")
        answer = self._get_cdx(
            params,
            what=f"The size of the CDX query for {name}",
            limit=SIZE_ANSWER_BYTES,
            time_limit=time_limit,
        )
        text = answer.body.decode("utf-8", errors="replace").strip()
        if answer.status == 200 and not answer.truncated and text.isdigit() and len(text) < 10:
            return int(text)
        if answer.truncated:
            what = f"more than {SIZE_ANSWER_BYTES:,} bytes ({_kind_of_answer(text)})"
        elif answer.status != 200:
            what = f"HTTP {answer.status} ({_kind_of_answer(text)})"
        else:
            what = _kind_of_answer(text)
        raise SizeUnknownError(
            f"The CDX server at {host} answered the size of the query for {name} with {what}, "
            f"where a number of pages of at most {SIZE_ANSWER_BYTES:,} bytes was asked for: it "
            "does not count pages, so its queries are asked without their size."
        )

    # --- Mementos ------------------------------------------------------------------------------
    def memento_url(self, timestamp: str, url: str) -> str:
        return memento_url(self.config.wayback_url, timestamp, url, raw=True)

    def fetch_memento(self, timestamp: str, url: str, *, deadline: float | None = None) -> Memento:
        """The raw archived page (``id_``: no rewriting), cut at ``max_memento_bytes``.

        ``deadline`` (a ``time.monotonic()`` time, such as a site's) bounds the fetch with its
        retries and waits as ``cdx_pages`` does a query (``DeadlineExceededError``); without
        it, each attempt is bounded by ``HACS_HTTP_DEADLINE`` alone.
        """
        self.stats.add(mementos=1)
        time_limit = None
        if deadline is not None:
            what = f"the request for the memento of {url} at {timestamp}"
            time_limit = _TimeLimit.of(deadline, _host(self.config.wayback_url), what)
        answer = self._get(
            _Request(
                "memento",
                self.memento_url(timestamp, url),
                None,
                what=f"The memento of {url} at {timestamp}",
                setting="HACS_WAYBACK_URL",
                limit=self.config.max_memento_bytes,
                time_limit=time_limit,
            )
        )
        if answer.status != 200:
            raise ArchiveError(f"Memento {timestamp} {url} answered HTTP {answer.status}.")
        return Memento(
            url=url,
            timestamp=timestamp,
            status=answer.status,
            content_type=answer.headers.get("Content-Type"),
            body=answer.body,
            truncated=answer.truncated,
        )

    def _get_cdx(
        self, params: dict[str, str], *, what: str, limit: int, time_limit: _TimeLimit
    ) -> _Answer:
        """One CDX request (a page, or the size question), counted as a CDX query."""
        self.stats.add(cdx_queries=1)
        request = _Request(
            "cdx", self.config.cdx_url, params, what, "HACS_CDX_URL", limit, time_limit
        )
        return self._get(request)

    # --- The one place requests are sent -------------------------------------------------------
    def _get(self, request: _Request) -> _Answer:
        """Send one GET (with retries) and read its whole answer.

        Retried: 429 and 5xx (honouring ``Retry-After`` up to the deadline), timeouts, resets,
        answers cut, or stalled or trickled past the deadline. Not retried: a host that does
        not resolve or refuses the connection, a configured URL or User-Agent that requests
        refuses to send (``ArchiveUnreachableError``, remembered by the client), an answer in
        a coding HACS cannot read (``ArchiveError``). With ``time_limit``, every attempt ends
        by it and no wait runs past it (``DeadlineExceededError``).
        """
        if self.unreachable is not None:
            raise self.unreachable
        try:
            return self._get_with_retries(request)
        except RateLimitUnavailable as error:
            raise self._unreachable_now(ArchiveUnreachableError(str(error))) from None

    def _get_with_retries(self, request: _Request) -> _Answer:
        limiter = self._limiters[request.kind]
        time_limit = request.time_limit
        attempt = 0
        overruns = 0  # attempts that ran out of the whole-request deadline
        while True:
            self.stats.add(waited_seconds=self._acquire(limiter, time_limit), requests=1)
            deadline = time.monotonic() + self.config.deadline
            if time_limit is not None:
                deadline = min(deadline, time_limit.until)
            outcome = self._attempt(request, deadline)
            if isinstance(outcome, _Answer):
                return outcome
            reason, wait = self._judge(outcome, deadline, time_limit)
            overruns += reason == self._overrun
            # An archive that trickled one whole answer past the deadline is tried once more;
            # every further try would hold the site (and the archive's budget) a deadline long.
            if attempt >= self.config.retries or overruns >= 2:
                raise ArchiveError(
                    f"{request.what} at {_host(request.url)} failed after {attempt + 1} attempts "
                    f"({reason}); try again later with import_archive --failed."
                )
            if wait is not None:
                limiter.pause(wait)  # the archive asked everybody to wait, not just this worker
                self._wait(wait, f"{request.url}: {reason}", time_limit)
            else:
                self._back_off(f"{request.url}: {reason}", attempt, time_limit)
            attempt += 1

    @property
    def _overrun(self) -> str:
        """The reason given for an attempt that ran out of the whole-request deadline."""
        return f"no complete answer within {self.config.deadline:g} s"

    def _attempt(self, request: _Request, deadline: float) -> _Answer | _Failure:
        """One attempt, through the transport (no address check: the operator configured the
        archive); the answer, or why it failed in a way worth retrying."""
        try:
            with self.transport.exchange(deadline, listed=True):
                return self._exchange(request, deadline)
        except requests.ConnectionError as error:
            cause = unreachable_cause(error)
            if cause is not None:
                raise self._unreachable_now(
                    ArchiveUnreachableError(
                        f"The archive at {_host(request.url)} cannot be reached ({cause}): "
                        f"check the network or {request.setting}."
                    )
                ) from None
            return _Failure(describe(error))
        except requests.Timeout as error:
            return _Failure(describe(error))
        except DeadlinePassed:
            return _Failure(self._overrun)
        except BodyCut as error:
            return _Failure(f"the answer was cut off: {error}")

    def _exchange(self, request: _Request, deadline: float) -> _Answer | _Failure:
        """Ask, and read the answer unless its status asks to retry."""
        try:
            response = self._get_within_host(request.url, request.params)
        except _UNSENDABLE as error:
            raise self._unsendable(error, request) from None
        try:
            if response.status_code in RETRY_STATUSES:
                return self._retry_status(response)
            body, truncated = read_capped(response, request.limit, deadline)
            return _Answer(response.status_code, response.headers, body, truncated)
        except Unreadable as error:
            raise ArchiveError(f"{request.what} at {_host(request.url)} {error}.") from None
        finally:
            response.close()

    def _retry_status(self, response: requests.Response) -> _Failure:
        """A 429 or 5xx: the reason, and the wait its ``Retry-After`` asks for."""
        reason = f"HTTP {response.status_code}"
        wait = retry_after_seconds(response.headers.get("Retry-After"))
        if wait is not None and wait > self.config.deadline:
            # An archive asking for hours would hold every worker that long (the pause is
            # shared): wait the deadline, as one of the retries.
            reason += f" asking to wait {wait:,.0f} s"
            wait = self.config.deadline
        return _Failure(reason, wait)

    def _judge(
        self, failure: _Failure, deadline: float, time_limit: _TimeLimit | None
    ) -> tuple[str, float | None]:
        """The reason an attempt failed, as the final message gives it, and the wait before
        the next; ``DeadlineExceededError`` once the caller's time is up."""
        if time_limit is not None and time_limit.left() <= 0:
            raise time_limit.error()  # whatever broke last, the caller's time is up
        if failure.wait is None and time.monotonic() >= deadline:
            # Whatever broke last (a read timeout shortened to the time left, headers cut
            # at the deadline), the answer did not come in time.
            return self._overrun, None
        return failure.reason, failure.wait

    def _acquire(self, limiter: SharedRateLimiter, time_limit: _TimeLimit | None) -> float:
        """Wait for the request's slot in the shared rate limit; the seconds waited. A slot
        after the caller's deadline is not taken: the request could not be answered in time."""
        if time_limit is None:
            return limiter.acquire()
        if time_limit.left() <= 0:
            raise time_limit.error()
        try:
            return limiter.acquire(deadline=time_limit.until)
        except SlotPastDeadline:
            raise time_limit.error() from None

    def _unreachable_now(self, error: ArchiveUnreachableError) -> ArchiveUnreachableError:
        """Remember ``error`` unless a thread found the archive unreachable first; the one
        remembered, which every thread raises from then on."""
        with self._lock:
            if self.unreachable is None:
                self.unreachable = error
            return self.unreachable

    def _unsendable(self, error: requests.RequestException, request: _Request) -> ArchiveError:
        """The error for a request requests refused to send.

        A configured URL or User-Agent it refuses fails every request alike: the client
        remembers it and the run stops, naming the setting. A URL refused for its own part (a
        redirect to another scheme) fails that request only.
        """
        if isinstance(error, requests.exceptions.InvalidHeader):
            # The User-Agent is the only header HACS sends that is not fixed.
            return self._unreachable_now(
                ArchiveUnreachableError(
                    f"The archive cannot be asked anything: the User-Agent "
                    f"{self.config.user_agent!r} is not a valid HTTP header value; fix "
                    "HACS_USER_AGENT."
                )
            )
        base = self.config.cdx_url if request.kind == "cdx" else self.config.wayback_url
        problem = http_url_problem(base)
        if problem is not None:
            return self._unreachable_now(
                ArchiveUnreachableError(
                    f"The archive URL {base} cannot be requested ({problem}): "
                    f"fix {request.setting}."
                )
            )
        return ArchiveError(f"{request.what} cannot be requested ({describe(error)}).")

    def _back_off(self, why: str, attempt: int, time_limit: _TimeLimit | None) -> None:
        wait = backoff_seconds(attempt, base=self.config.backoff_base, cap=self.config.backoff_cap)
        self._wait(wait, why, time_limit)

    def _wait(self, seconds: float, why: str, time_limit: _TimeLimit | None) -> None:
        """Wait before a retry; a wait that would end past the caller's deadline ends the
        request now instead: the retry after it could not be answered in time."""
        if time_limit is not None and seconds >= time_limit.left():
            raise time_limit.error()
        log.info("%s; retrying in %.1f s", why, seconds)
        self.stats.add(retries=1, waited_seconds=seconds)
        self._sleep(seconds)

    def _get_within_host(self, url: str, params: dict[str, str] | None) -> requests.Response:
        """GET ``url``, following redirects within the archive's own host (within the
        current exchange, and so its deadline)."""
        archive_host = _host(url)
        for _ in range(10):
            response = self.transport.request(
                "GET", url, params=params, timeout=self.config.timeout
            )
            if response.status_code not in (301, 302, 303, 307, 308):
                return response  # type: ignore[no-any-return]
            location = urljoin(response.url, response.headers.get("Location", ""))
            response.close()
            if _host(location) != archive_host:
                raise ArchiveError(f"{url} redirects away from the archive, to {location}.")
            url, params = location, None
        raise ArchiveError(f"{url} redirects too many times.")


def _check_match_type(match_type: str) -> None:
    if match_type not in MATCH_TYPES:
        raise ValueError(f"match_type must be one of {', '.join(MATCH_TYPES)}, not {match_type!r}")


def _query_name(url: str, match_type: str) -> str:
    """How messages name a query: its URL, and its match type unless it is a prefix query."""
    return url if match_type == "prefix" else f"{url} (matchType={match_type})"


def _host(url: str) -> str:
    return urlsplit(url).netloc.lower()


_CDX_ROW = re.compile(r"\S+ \d{14} ")  # urlkey, then a 14-digit timestamp


def _kind_of_answer(text: str) -> str:
    """What an answer that should have been a number held, in a few words (never the answer
    itself: it comes from a remote server)."""
    start = text.lstrip()[:1]
    if not start:
        return "an empty answer"
    if start == "<":
        return "an HTML page"
    if start in "[{":
        return "JSON"
    if _CDX_ROW.search(text):
        return "CDX rows"
    if text.isdigit():
        return "a number too long to be a page count"
    return "text, not a number"


def _first_line(text: str) -> str:
    line = text.strip().splitlines()[0] if text.strip() else "(empty answer)"
    return line[:300]
