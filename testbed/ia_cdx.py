"""What the fake Internet Archive (``testbed.ia_server``) holds, and how its CDX server answers.

The state holds the captures given by the test (``Row`` objects, or for benches whole CDX
lines), the bodies of its mementos and the faults to come. Its CDX answers follow the Internet
Archive's CDX server, read from its code
(internetarchive/wayback ``wayback-cdx-server/.../CDXServer.java`` and ``CDXQuery.java`` at
a331f968, iipc/webarchive-commons ``UrlSurtRangeComputer.java`` and ``ZipNumIndex.java`` at
3921259, the server's README) and checked against answers the real server gave (the VCR
cassettes of edgi-govdata-archiving/wayback, ``src/wayback/tests/cassettes/``):

* **The index** is one list of CDX lines sorted as text (``urlkey timestamp original ...``),
  that is by urlkey (SURT) and then timestamp, as the real index files are. Every match type
  is a key range ``[start, end)`` over that list (``cdx_range``): ``exact`` is the urlkey alone
  (``start + "!"`` ends it), ``prefix`` every urlkey starting with the URL's SURT *keeping a
  trailing slash* (so ``example.edu/~a/`` misses the homepage, whose urlkey is
  ``edu,example)/~a``), ``host`` ``edu,example)/`` to ``edu,example*`` (neither subdomains nor
  other ports), ``domain`` the host and its subdomains (``edu,example)/`` to ``edu,example-``).
  A prefix query on a host's root is a host query. Without ``matchType``, ``*.example.edu``
  means domain and ``example.edu/~a/*`` prefix; a ``matchType`` the server does not know (a
  misspelling such as ``Prefix``) is ignored, which makes the query exact.
* **from/to** (1–14 digits) compare as text: ``from=2017`` keeps 2017 on, ``to=2017`` keeps
  all of 2017. They filter the lines the query reads; they do not move the end of the range.
* **limit and resume keys.** A query reads at most ``max_lines_read`` lines (the server's
  ``queryMaxLimit``, 150,000 at web.archive.org per the README), counting the lines ``from``
  or ``to`` throw away: a host query with ``from`` on a host with a long history can stop there
  *without* a resume key, its answer silently short (``Logged.cut_short`` records it). With
  ``showResumeKey=true`` a page that reached ``limit`` ends with ``[]`` and the key
  ``urlencode(urlkey + " " + incLastChar(timestamp))`` (``com%2Ccnn%29%2F+2001041400593%3A``
  in the cassettes): it is printed whenever the page is full, so a query whose rows end exactly
  at a page boundary costs one more request that answers ``[]``; and the next page starts after
  every line of that second, so a page boundary between two captures of the same urlkey and
  second loses the second one. The key is accepted as printed and sent again through a client's
  URL encoding (what edgi ``wayback`` and HACS do, and the real server answers) or decoded.
* **Paged queries** (``page``, ``pageSize``, ``showNumPages=true``) read the ZipNum index: the
  lines in blocks of ``lines_per_block`` (3,000 at the Internet Archive), a page being
  ``pageSize`` blocks (at most ``max_page_size``, 50 at web.archive.org). ``showNumPages``
  answers a bare number, counted from the blocks the key range touches, ignoring ``from``
  (so a ``from`` query pages through the whole range, mostly empty pages); a page past the last
  answers an empty body; no ``max_lines_read`` cap applies. The README says paged answers may
  lack recent captures and edgi ``wayback`` does not use them for that reason:
  ``paged_until`` leaves captures after that timestamp out of paged answers.
* **fl** chooses and orders the fields (the JSON header row names them), ``output=json`` gives
  a JSON array of arrays, plain text otherwise; ``collapse`` is ignored (HACS must never use it);
  ``filter``, ``offset``, ``closest``, ``sort``, a negative ``limit`` and the other options HACS
  does not use answer 400 naming them, so a client that starts using one notices. The fake is
  stricter than the real server on malformed ``from``/``to``/``limit``/``fl`` too (400).
* **Recall gap.** The Internet Archive leaves some indexes out of prefix and domain queries:
  edgi-govdata-archiving/web-monitoring-processing commit 5220721 ("HOTFIX: Don't use domain
  prefix queries for CDX", 2020) stopped grouping for it, and internetarchive/wayback issues
  #136 and #226 show prefix answers missing rows an exact query returns. ``exact_only``
  captures model that: exact (non-paged) queries return them, prefix, host, domain and paged
  queries do not.
* **Servers that cannot count pages.** ``paginated=False`` is a CDX server without the
  pagination API (another Wayback, an older one): ``page``, ``pageSize`` and ``showNumPages`` are
  ignored, so the size question is answered with the query's rows. ``size_page`` is what a proxy
  or a load balancer in front of the server answers the size question with: an HTML error page,
  status 200.
* **gzip**: the real server compresses whenever the client accepts gzip (``gzip=false`` turns
  it off); here only with ``IAArchive(gzip=True)``, so fault tests keep cutting plain bodies.
"""

from __future__ import annotations

import heapq
import json
import random
import threading
from bisect import bisect_left, bisect_right
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote_plus, unquote_plus

import surt

BLOCKED_BODY = (
    "org.archive.util.io.RuntimeIOException: "
    "org.archive.wayback.exception.AdministrativeAccessControlException: Blocked Site Error\n"
)
FIELDS = ["urlkey", "timestamp", "original", "mimetype", "statuscode", "digest", "length"]
MATCH_TYPES = ("exact", "prefix", "host", "domain")
QUERY_MAX_LIMIT = 150_000  # web.archive.org's queryMaxLimit (wayback-cdx-server README)
LINES_PER_BLOCK = 3_000  # ZipNum block size (README "Pagination API")
MAX_PAGE_SIZE = 50  # blocks per page at web.archive.org (README "Pagination API")
# Parameters the real server knows that neither HACS nor this fake uses: answered with a 400.
UNSUPPORTED = (
    "filter",
    "offset",
    "closest",
    "sort",
    "fastLatest",
    "last",
    "showDupeCount",
    "resolveRevisits",
    "showGroupCount",
    "showUniqCount",
    "lastSkipTimestamp",
    "showSkipCount",
    "showPagedIndex",
    "collapseTime",
)
JSON_TYPE = "application/json"
TEXT_TYPE = "text/plain;charset=UTF-8"


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
        return [
            self.urlkey,
            self.timestamp,
            self.original,
            self.mimetype,
            self.status,
            self.digest,
            self.length,
        ]

    def line(self) -> str:
        """The row as a line of the index (fields separated by one space)."""
        return " ".join(self.as_list())


@dataclass
class Logged:
    at: float
    path: str
    query: dict[str, str]
    status: int
    sent: int = 0  # body bytes meant to be sent (compressed, with ``gzip=True``)
    head: int = 0  # bytes of the status line and headers, with a "trickle_headers" fault
    head_sent: int = 0  # of which were written before the client hung up
    rows: int = 0  # CDX rows in the answer
    read: int = 0  # index lines the CDX query read, counting those from/to threw away
    cut_short: bool = False  # stopped at ``max_lines_read`` with lines left and no resume key
    raw: int = 0  # body bytes before compression


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
class Aimed:
    """A fault for the requests about one thing: a CDX query whose ``url`` parameter is
    ``text``, or the memento whose path is ``text``; ``times`` requests (None: every one) get
    it."""

    text: str
    fault: Fault
    times: int | None = None


@dataclass(frozen=True)
class CdxAnswer:
    """What the CDX server answers one query: status, body and what it read to answer."""

    status: int
    body: bytes
    content_type: str = JSON_TYPE
    headers: dict[str, str] = field(default_factory=dict)
    rows: int = 0
    read: int = 0
    cut_short: bool = False


@dataclass
class IAState:
    rows: list[Row] = field(default_factory=list)
    bodies: dict[tuple[str, str], tuple[bytes, str]] = field(default_factory=dict)
    # Asked for a memento not in ``bodies``: (timestamp, url) -> (body, content type) or None.
    body_for: Callable[[str, str], tuple[bytes, str] | None] | None = None
    lines: list[str] = field(default_factory=list)  # bulk index lines, kept sorted
    exact_only: list[Row] = field(default_factory=list)  # the recall gap (module docstring)
    blocked_prefixes: set[str] = field(default_factory=set)
    faults: deque[tuple[int, str | None] | Fault] = field(default_factory=deque)
    aimed: list[Aimed] = field(default_factory=list)  # before ``faults`` and the storm
    endless_prefixes: set[str] = field(default_factory=set)
    storm: random.Random | None = None  # set with ``storm_share`` to fault requests at random
    storm_share: float = 0.3
    max_lines_read: int | None = QUERY_MAX_LIMIT
    lines_per_block: int = LINES_PER_BLOCK
    max_page_size: int = MAX_PAGE_SIZE
    paged_until: str | None = None  # paged answers hold no capture after this timestamp
    # A server without the pagination API ignores ``page``, ``pageSize`` and ``showNumPages``
    # and answers the query's rows; ``size_page`` is an HTML page a proxy answers the size
    # question with, status 200 (module docstring).
    paginated: bool = True
    size_page: bytes | None = None
    gzip: bool = False
    log: list[Logged] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    _index: list[str] = field(default_factory=list, repr=False)
    _index_key: tuple[Any, ...] | None = field(default=None, repr=False)

    def add_lines(self, lines: Iterable[str]) -> None:
        """Add index lines (``urlkey timestamp original mimetype status digest length``)."""
        with self.lock:
            self.lines.extend(lines)
            self.lines.sort()  # the old lines are one sorted run: timsort merges in O(n)
            self._index_key = None

    def index(self) -> list[str]:
        """Every line the main index holds, sorted: ``lines`` and ``rows`` together.

        Tests append to ``rows`` and sort it in place; the rows are few, so they are read
        again on every query and merged with the bulk lines only when they changed.
        """
        row_lines = sorted(r.line() for r in self.rows)
        with self.lock:
            key = (id(self.lines), len(self.lines), row_lines)
            if self._index_key != key:
                self._index = list(heapq.merge(self.lines, row_lines)) if row_lines else self.lines
                self._index_key = key
            return self._index

    def next_fault(self, kind_of_path: str, about: str = "") -> Fault | None:
        """The fault for this request about ``about`` (a CDX query's ``url``, a memento's
        path): the first aimed one that applies, else the first queued one, else the storm's."""
        with self.lock:
            for aimed in self.aimed:
                if aimed.fault.on in (None, kind_of_path) and aimed.text == about:
                    if aimed.times is not None:
                        aimed.times -= 1
                        if aimed.times <= 0:
                            self.aimed.remove(aimed)
                    return aimed.fault
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


# --- Key ranges (UrlSurtRangeComputer.determineRange) ------------------------------------------


def inc_last_char(text: str) -> str:
    """``UrlSurtRangeComputer.incLastChar``: the last character, one code point up."""
    return text[:-1] + chr(ord(text[-1]) + 1)


def _surt(url: str, *, keep_slash: bool) -> str:
    # A URL without a scheme is read as http, as the server's URLParser does.
    full = url if "://" in url else "http://" + url
    return str(surt.surt(full, path_strip_trailing_slash_unless_empty=not keep_slash))


def cdx_range(url: str, match_type: str) -> tuple[str, str]:
    """The ``[start, end)`` key range of a query for ``url`` with an explicit match type."""
    url = url[1:] if url.startswith(".") else url
    key = _surt(url, keep_slash=match_type == "prefix")
    host_surt = key.partition(")")[0].partition(":")[0]  # hostToSURT drops the port
    if match_type == "prefix" and key.endswith(")/"):
        match_type = "host"  # a prefix query on the root is a host query
    if match_type == "exact":
        return key, key + "!"
    if match_type == "prefix":
        return key, inc_last_char(key)
    if match_type == "host":
        return host_surt + ")/", host_surt + "*"
    start = host_surt + (")/" if "," in host_surt else ",")
    return start, host_surt + "-"


def query_match(url: str, match_type: str | None) -> tuple[str, str]:
    """(url, match type) as ``CDXServer.getCdx`` reads them: wildcards only without a type."""
    if match_type in MATCH_TYPES:
        return url, match_type
    if url.startswith("*."):
        return url[2:], "domain"
    if url.endswith("*"):
        return url[:-1], "prefix"
    return url, "exact"


def resume_key(line: str) -> str:
    """The key printed after a full page: Java's URLEncoder of "urlkey incLastChar(ts)"."""
    urlkey, stamp, _ = line.split(" ", 2)
    # URLEncoder keeps letters, digits and ".-*_"; Python's quote_plus also keeps "~".
    return quote_plus(f"{urlkey} {inc_last_char(stamp)}", safe="*").replace("~", "%7E")


def decode_resume_key(value: str) -> str:
    """The search key of a ``resumeKey`` parameter already URL-decoded once.

    A key sent as printed goes through the client's encoding again (edgi ``wayback`` and HACS
    pass it to requests as a parameter; the cassettes show the real server answering the next
    page), so a value without a space is still encoded once: decode it again.
    """
    return value if " " in value else unquote_plus(value)


# --- Answering a query ---------------------------------------------------------------------


def _error(message: str) -> CdxAnswer:
    return CdxAnswer(400, (message + "\n").encode(), TEXT_TYPE)


def _digits(value: str) -> bool:
    return value.isascii() and value.isdigit() and 1 <= len(value) <= 14


def _prefix_ranges(prefixes: Iterable[str]) -> list[tuple[str, str]]:
    ranges = []
    for prefix in prefixes:
        url, match_type = query_match(prefix, "prefix")
        ranges.append(cdx_range(url, match_type))
    return ranges


def _within(key: str, ranges: list[tuple[str, str]]) -> bool:
    return any(start <= key < end for start, end in ranges)


def _covers(start: str, end: str, ranges: list[tuple[str, str]]) -> bool:
    return any(start <= r_start and r_end <= end for r_start, r_end in ranges)


def _span(lines: list[str], start: str, end: str) -> Iterator[str]:
    return map(lines.__getitem__, range(bisect_left(lines, start), bisect_left(lines, end)))


def cdx_answer(state: IAState, query: dict[str, str]) -> CdxAnswer:
    """The answer to one CDX query (``query``: the parameters, each URL-decoded once)."""
    ask = _checked(query)
    if isinstance(ask, CdxAnswer):
        return ask
    blocked = _prefix_ranges(state.blocked_prefixes)
    if any(query["url"].startswith(b) for b in state.blocked_prefixes) or _within(
        ask.start, blocked
    ):
        return CdxAnswer(403, BLOCKED_BODY.encode(), TEXT_TYPE)
    main = state.index()
    if query["url"] in state.endless_prefixes or _covers(
        ask.start, ask.end, _prefix_ranges(state.endless_prefixes)
    ):
        # A server that never stops paging: the same rows, a fresh key each time.
        first = [line.split(" ") for line in list(_span(main, ask.start, ask.end))[:3]]
        endless = [FIELDS, *first, [], [f"endless-{len(state.log)}-{random.random()}"]]
        return CdxAnswer(200, json.dumps(endless).encode(), rows=len(first), read=len(first))
    if state.size_page is not None and query.get("showNumPages") == "true":
        return CdxAnswer(200, state.size_page, "text/html; charset=utf-8")
    if state.paginated and (ask.page >= 0 or query.get("showNumPages") == "true"):
        return _paged_answer(state, ask, query, main, blocked)
    return _rows_answer(state, ask, query, _Lines(main, state.max_lines_read, False), blocked)


@dataclass(frozen=True)
class _Ask:
    """A CDX query's parameters, checked: the key range it reads and what it asks for."""

    url: str
    match_type: str
    start: str
    end: str
    since: str
    until: str
    limit: int
    page: int
    page_size: int
    names: list[str]


@dataclass(frozen=True)
class _Lines:
    """The index lines a query reads, at most how many of them, and whether they are a page."""

    lines: list[str]
    read_limit: int | None
    paged: bool
    headers: dict[str, str] = field(default_factory=dict)


def _checked(query: dict[str, str]) -> _Ask | CdxAnswer:
    """The query's parameters, or the 400 answer naming the first one that is wrong."""
    if not query.get("url"):
        return _error("url parameter is required")
    unsupported = [name for name in UNSUPPORTED if name in query]
    if unsupported:
        return _error(f"This fake CDX server does not implement {', '.join(unsupported)}.")
    url, match_type = query_match(query["url"], query.get("matchType"))
    try:
        start, end = cdx_range(url, match_type)
    except Exception as error:  # surt raises several kinds of error for a URL it refuses
        return _error(f"Bad url {url!r}: {error}")
    since, until = query.get("from", ""), query.get("to", "")
    if any(value and not _digits(value) for value in (since, until)):
        return _error("from and to take 1 to 14 digits (yyyyMMddhhmmss).")
    try:
        limit = int(query.get("limit") or 0)
        page = int(query.get("page", "-1"))
        page_size = int(query.get("pageSize", "0"))
    except ValueError:
        return _error("limit, page and pageSize take integers.")
    if limit < 0:
        return _error("This fake CDX server does not implement a negative limit.")
    names = query["fl"].split(",") if query.get("fl") else FIELDS
    if any(name not in FIELDS for name in names):
        return _error(f"fl names fields of {', '.join(FIELDS)}.")
    return _Ask(url, match_type, start, end, since, until, limit, page, page_size, names)


def _paged_answer(
    state: IAState, ask: _Ask, query: dict[str, str], main: list[str], blocked: list[Any]
) -> CdxAnswer:
    """A page of the ZipNum index, or the number of pages (``showNumPages``)."""
    if state.paged_until is not None:
        main = [line for line in main if line.split(" ", 2)[1] <= state.paged_until]
    page_size = ask.page_size
    if page_size <= 0 or page_size > state.max_page_size:
        page_size = state.max_page_size
    pages, lines = _paged(main, ask.start, ask.end, ask.page, page_size, state.lines_per_block)
    headers = {"X-CDX-Num-Pages": str(pages)}
    if query.get("showNumPages") == "true":
        return CdxAnswer(200, f"{pages}\n".encode(), TEXT_TYPE, headers)
    if lines is None:
        return CdxAnswer(200, b"", TEXT_TYPE, headers)  # past the last page: nothing
    headers["X-CDX-Max-Lines"] = str(page_size * state.lines_per_block)
    # The page's size bounds what it reads, instead of ``max_lines_read``.
    return _rows_answer(state, ask, query, _Lines(lines, None, True, headers), blocked)


def _rows_answer(
    state: IAState, ask: _Ask, query: dict[str, str], given: _Lines, blocked: list[Any]
) -> CdxAnswer:
    """The rows the query reads from ``given``, from its resume key, ``from`` or start on."""
    if query.get("resumeKey"):
        search = decode_resume_key(query["resumeKey"])
    elif ask.since:
        search = f"{ask.start} {ask.since}"
    else:
        search = ask.start
    sources = [_span(given.lines, max(search, ask.start) if given.paged else search, ask.end)]
    if ask.match_type == "exact" and not given.paged and state.exact_only:
        extra = sorted(r.line() for r in state.exact_only)
        sources.append(_span(extra, search, ask.end))
    scanned = heapq.merge(*sources) if len(sources) > 1 else sources[0]
    read_limit = given.read_limit
    write_limit = ask.limit or (read_limit or 0)
    if read_limit is not None:
        write_limit = min(write_limit, read_limit)
    written, read, last, cut_short = _scan(
        scanned,
        since=ask.since,
        until=ask.until,
        exact=ask.match_type == "exact",
        blocked=blocked,
        write_limit=write_limit,
        read_limit=read_limit,
    )
    key = None
    full = bool(write_limit) and len(written) >= write_limit
    if query.get("showResumeKey") == "true" and last is not None and full:
        key = resume_key(last)
        cut_short = False
    json_output = query.get("output") == "json"
    return CdxAnswer(
        200,
        _render(written, ask.names, key, json_output=json_output),
        JSON_TYPE if json_output else TEXT_TYPE,
        dict(given.headers),
        rows=len(written),
        read=read,
        cut_short=cut_short,
    )


def _scan(
    scanned: Iterable[str],
    *,
    since: str,
    until: str,
    exact: bool,
    blocked: list[tuple[str, str]],
    write_limit: int,
    read_limit: int | None,
) -> tuple[list[str], int, str | None, bool]:
    """Read lines as the server does: (the lines answered, the lines read, the last one read,
    whether the read limit cut the answer short)."""
    written: list[str] = []
    read = 0
    last: str | None = None
    for line in scanned:
        if write_limit and len(written) >= write_limit:
            break
        if read_limit is not None and read >= read_limit:
            return written, read, last, True
        read += 1
        last = line
        stamp = line.split(" ", 2)[1]
        if since and stamp < since:
            continue
        if until and stamp > until and not stamp.startswith(until):
            if exact:
                break  # one urlkey's lines are in time order: none later can match
            continue
        if blocked and _within(line.split(" ", 1)[0], blocked):
            continue  # the real server drops excluded captures one by one
        written.append(line)
    return written, read, last, False


def _paged(
    main: list[str], start: str, end: str, page: int, page_size: int, per_block: int
) -> tuple[int, list[str] | None]:
    """(number of pages, the lines of page ``page`` or None past the last) of a key range.

    ``ZipNumIndex.getNthPage``: the summary holds each block's first line; the range touches
    the blocks from the last one starting at or before ``start`` to the last starting before
    ``end``; a page is ``page_size`` of those blocks, and there is always at least one page.
    """
    firsts = main[::per_block]
    first = max(0, bisect_right(firsts, start) - 1)
    last = max(first, bisect_left(firsts, end) - 1)
    pages = max(1, -(-(last - first + 1) // page_size))
    if page < 0 or page >= pages:
        return pages, None
    low = first + page * page_size
    high = min(low + page_size, last + 1)
    return pages, main[low * per_block : high * per_block]


def _render(lines: list[str], names: list[str], key: str | None, *, json_output: bool) -> bytes:
    positions = [FIELDS.index(name) for name in names]
    rows = [[fields[i] for i in positions] for fields in (line.split(" ") for line in lines)]
    if json_output:
        body: list[list[str]] = [names, *rows] if rows else []
        if key is not None:
            body += [[], [key]]
        return json.dumps(body).encode()
    text = "".join(" ".join(row) + "\n" for row in rows)
    if key is not None:
        text += f"\n{key}\n"
    return text.encode()
