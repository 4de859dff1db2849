"""A synthetic scholarly web archive with known truth, for tests, demos and benchmarks.

``build_demo_archive(outdir)`` writes four files:

* ``demo.warc.gz`` -- WARC/1.0 ``response`` and ``revisit`` records (one gzip member each, after
  a ``warcinfo`` record) of authors' tilde homepages and the pages under them: 200 HTML pages,
  301/302 redirects, 404/503 errors, PDFs and images, and identical-payload-digest revisits.
  There are no ``request`` records: pywb's indexer (``cdx-indexer``, ``wb-manager add``) only
  reads them to append POST bodies to the urlkey, and every capture here is a GET.
* ``demo.cdx`` -- the same captures as an 11-field CDX file, byte for byte what pywb's
  ``cdx-indexer --sort`` writes for ``demo.warc.gz`` -- plus deliberate dirt listed in the truth:
  exact duplicate lines, a line dated in month 13 and a truncated line.
* ``seeds.csv`` -- ``url,author,tags`` with URLs written several ways, a non-http row, an
  empty-URL row and one duplicate seed written another way.
* ``truth.json`` -- what really happened (schema in ``_truth_document``): per site its seed,
  true update rates and events, and every CDX line of its pages with its kind and link set.

The world: each author has a ``/~name/`` homepage with pages to depth 3 (``publications.html``,
``teaching/``, ``teaching/<course>/``, ``projects/<p>/``, ``projects/<p>/<q>/``, ``cv.pdf``,
``photo.jpg``). Every HTML page adds links in editing sessions (below), and sometimes removes a
link, re-adds an earlier one, edits text, or (site-wide, once) moves to https -- none of which is
an update by DESIGN.md rule 3, and all of which stay homogeneous Poisson processes (removals and
re-adds at a quarter and 0.15 of the page's adding rate, text edits yearly). Captures come
in bursts (on/off periods with clusters of captures hours apart), and the HTML writes the same
link many equivalent ways (relative, root-relative, absolute, http/https, ``www.``, upper-case
host, ``:80``, ``%7E``, ``#fragment``, missing trailing slash, ``<base href>``, ``<area>``), next to
``mailto:``, ``javascript:`` and ``ftp:`` links, ``<link>``/``<img>`` URLs and commented-out anchors
that are not links.

How links are added -- sessions of edits. Real authors do not add links as a memoryless
process: a new paper goes up, then its slides, code, arXiv or DOI link a few days later; a term
start brings a burst of teaching links; then months of quiet. The HACS paper sees this in its
data -- updates are "near-Poisson ... with spikes that may represent non-stochastic activities"
(Section I; Fig. 6 in Section II-D) -- and its evaluation finds the *shortest* history window
(one week) best, which only pays when a recent update predicts another one soon. So each HTML
page adds links as a self-exciting (Hawkes) process with an exponential kernel, in clusters:

* a page has a long-run mean rate λ, log-normal as in the paper's Fig. 4: median interval
  110 days at the homepage (σ = 0.7), 300 days for other pages (σ = 0.8), clipped to
  3-5000 days; the website (Σ over pages at depth ≤ 2) changes several times faster than its
  homepage. ``rate_per_day`` in the truth is this long-run mean;
* editing sessions open as a Poisson process of rate λ(1 − n); every link added brings
  Poisson(n) follow-up additions to the same page, each an Exponential delay (mean d days)
  later, and follow-ups bring their own, so a session holds 1/(1 − n) additions on average and
  the long-run rate stays λ;
* the author's habits set n and d for all their pages: the branching ratio n is uniform in
  [0.4, 0.7] (sessions of 1.7-3.3 links on average; most single, some of four or more) and d is
  log-normal with median 4 days (σ = 0.4: about 2-9 days), so sessions last days to a few weeks;
* teaching and course pages open 60% of their sessions around a term start (10 January,
  25 August; normal, σ = 7 days) -- a community-wide rhythm, the kind of correlated activity the
  paper suspects behind its spikes;
* sessions open from 180 days before ``start`` on, so the process is stationary over the span.

The intervals between a page's additions are then exponential between sessions with a spike of
short ones inside them: their coefficient of variation is about 1.5-2 (1 for Poisson), and more
than half are shorter than a week where Poisson processes of the same rates would give under one
in ten. About 60% of sessions are a single link, 13% hold four or more. Half of the teaching
links arrive within two weeks of a term start (15% would by chance). Sessions are per page and
independent across pages and sites, apart from the terms.
Each add event in the truth names its ``session``; each site its ``update_model`` (n and d).

Canonical link form in the truth ("canonical absolute URL"): ``http://`` + lower-case host
without ``www.`` + path (``%7E`` written ``~``) without trailing slash, query kept, no fragment,
no default port. Paths and queries are never varied in case, so this form maps one-to-one onto
the SURT form of DESIGN.md rule 2. ``index.html`` is *not* removed (rule 2 does not remove it),
but whether a given anchor is written with ``index.html`` never changes over time, so update
flags are the same whether or not a reader folds ``index.html`` into its directory.

Pure: stdlib, NumPy, warcio and surt (for urlkeys exactly as pywb computes them); no Django.
Deterministic for a given (sites, seed, start, end): same bytes every run. A site's world
depends only on (seed, its index), so the first 40 sites of a 500-site archive are the same
authors with the same histories as a 40-site archive.
"""

from __future__ import annotations

import base64
import bisect
import csv
import functools
import hashlib
import html
import io
import json
import posixpath
import unicodedata
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from email.utils import format_datetime
from pathlib import Path
from typing import Any

import numpy as np
import surt
from numpy.typing import NDArray
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

__all__ = ["DemoArchive", "build_demo_archive", "canonical_link"]

WARC_NAME = "demo.warc.gz"
CDX_NAME = "demo.cdx"
SEEDS_NAME = "seeds.csv"
TRUTH_NAME = "truth.json"
CDX_HEADER = " CDX N b a m s k r M S V g"
TRUTH_SCHEMA = 1
DAY = 86400

HOMEPAGE_MEDIAN_INTERVAL_DAYS = 110.0  # of the long-run mean rate, log-normal across sites
PAGE_MEDIAN_INTERVAL_DAYS = 300.0
# Editing sessions (see the module docstring): each link added brings on average n (the
# branching ratio) follow-up additions to the same page, each an exponential delay later.
BRANCHING_RATIO_RANGE = (0.4, 0.7)  # per author, uniform: 1.7-3.3 links per session on average
FOLLOW_UP_MEDIAN_DAYS = 4.0  # per author, log-normal (sigma 0.4): mean delays of about 2-9 days
TERM_STARTS = ((1, 10), (8, 25))  # (month, day): spring and fall semesters
TERM_SHARE = 0.6  # share of teaching and course sessions that open around a term start
TERM_JITTER_DAYS = 7.0  # standard deviation of a term session's start around the term start
BURN_IN_DAYS = 180.0  # sessions that start this long before ``start`` still spill into it

# --------------------------------------------------------------------------------------------
# Vocabulary. Names are Latin-1 encodable because some sites are served as ISO-8859-1.

_FIRST = (
    "Alice", "Bruno", "Chen", "Dana", "Elena", "Farid", "Grace", "Hiro", "Ines", "José",
    "Karin", "Luis", "Maya", "Nikhil", "Olga", "Pierre", "Qing", "Rosa", "Sven", "Tariq",
    "Ursula", "Victor", "Wei", "Ximena", "Yusuf", "Zoë", "Anders", "Björn", "Chloé", "Dmitri",
    "Emeka", "François", "Gustavo", "Hana", "Ivan", "Jürgen", "Kofi", "Leila", "Marco", "Noor",
    "Oscar", "Priya", "Rahul", "Søren", "Tomás", "Uma", "Vera", "Wen", "Yara", "Zeynep",
)  # fmt: skip
_LAST = (
    "Smith", "Nguyen", "García", "Müller", "Okafor", "Tanaka", "Kowalski", "Rossi", "Larsen",
    "Haddad", "Fischer", "Silva", "Chen", "Patel", "Ivanova", "Dubois", "Kim", "Novak", "Berg",
    "Moreau", "Santos", "Yilmaz", "Hansen", "Lopez", "Schmidt", "Wang", "Jensen", "Costa",
    "Nakamura", "Ahmed", "Olsen", "Peters", "Romero", "Sato", "Weber", "Zhang", "Brennan",
    "Castillo", "Dahl", "Eriksen", "Ferreira", "Gómez", "Hoffmann", "Iyer", "Jovanovic",
    "Kraus", "Lindqvist", "Mendes", "Nielsen", "Ortiz",
)  # fmt: skip
_UNIS = (
    "odu", "mit", "stanford", "cmu", "umd", "ucsd", "gatech", "utexas", "wisc", "umich",
    "uiuc", "purdue", "cornell", "rutgers", "vt", "ncsu", "uga", "unc", "uci", "utah",
    "colorado", "virginia", "pitt", "rice", "nyu", "bu", "umass", "psu", "osu", "iastate",
)  # fmt: skip
_DEPTS = ("cs", "cs", "cs", "cse", "eecs", "cis", "ics")
_TOPICS = (
    "digital libraries", "web archiving", "information retrieval", "databases",
    "machine learning", "networks", "security", "hci", "nlp", "systems", "theory", "graphics",
)  # fmt: skip
_VENUES = (
    "JCDL", "TPDL", "WWW", "SIGIR", "CIKM", "KDD", "VLDB", "SIGMOD", "ICDE", "WSDM", "ACL",
    "EMNLP", "NeurIPS", "ICML", "CHI", "USENIX Security", "NSDI", "SOSP", "iPRES", "Hypertext",
)  # fmt: skip
_WORDS = (
    "scalable", "temporal", "archival", "efficient", "robust", "adaptive", "learning",
    "crawling", "index", "graph", "queries", "memento", "provenance", "citation", "ranking",
    "detection", "change", "freshness", "web", "scholarly", "link", "rot", "drift", "models",
    "estimation", "sampling", "streams", "privacy", "embeddings", "evaluation", "towards",
    "revisiting", "understanding", "characterizing", "large-scale", "distributed",
)  # fmt: skip
_COURSE_TOPICS = (
    "Introduction", "Recursion", "Hashing", "Trees", "Graphs", "Sorting", "Dynamic Programming",
    "Transactions", "Indexing", "Crawling", "Ranking", "Review", "Concurrency", "Networking",
)  # fmt: skip
_SERVERS = (
    "Apache/2.2.15 (CentOS)", "Apache/2.4.7 (Ubuntu)", "nginx/1.10.3", "Apache",
    "Microsoft-IIS/7.5",
)  # fmt: skip


# --------------------------------------------------------------------------------------------
# Public API


@dataclass(frozen=True)
class DemoArchive:
    """Where ``build_demo_archive`` wrote its files and how much it wrote."""

    outdir: Path
    warc_path: Path
    cdx_path: Path
    seeds_path: Path
    truth_path: Path
    sites: int
    pages: int
    captures: int  # response + revisit records in the WARC == clean lines of the CDX
    cdx_lines: int  # data lines of the CDX, dirt included (header excluded)
    dirty_lines: int  # duplicate, impossible-date and truncated CDX lines
    observations: int  # captures that are observations by DESIGN.md rule 1 (any depth)
    update_events: int  # true link-adding events on HTML pages, all depths
    seed_rows: int  # data rows of seeds.csv, bad ones included


def canonical_link(url: str) -> str:
    """The truth file's canonical writing of an absolute http(s) URL.

    ``http://`` + lower-case host without ``www.`` and without a default port + path (``%7E``
    as ``~``, trailing slash dropped) + query; fragment dropped. Raises ``ValueError`` for
    anything that is not an absolute http(s) URL. Tests use it on parsed ``href`` values.
    """
    from urllib.parse import urlsplit

    parts = urlsplit(url.strip())
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        raise ValueError(f"not an absolute http(s) URL: {url!r}")
    host = parts.hostname.lower()
    if host.startswith("www."):
        host = host[4:]
    port = parts.port
    if port is not None and port not in (80, 443):
        host += f":{port}"
    path = parts.path.replace("%7E", "~").replace("%7e", "~").rstrip("/")
    return f"http://{host}{path}" + (f"?{parts.query}" if parts.query else "")


def build_demo_archive(
    outdir: Path | str,
    *,
    sites: int = 40,
    seed: int = 0,
    start: date = date(2015, 6, 1),
    end: date = date(2018, 6, 1),
) -> DemoArchive:
    """Write ``demo.warc.gz``, ``demo.cdx``, ``seeds.csv`` and ``truth.json`` into ``outdir``.

    ``sites`` authors, random world drawn from ``seed``, captures between ``start`` (00:00 UTC)
    and ``end`` (00:00 UTC, exclusive). Existing files of those names are replaced.
    """
    if isinstance(sites, bool) or not isinstance(sites, int) or sites < 1:
        raise ValueError(f"sites must be a positive integer, got {sites!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    if not (isinstance(start, date) and isinstance(end, date)):
        raise ValueError("start and end must be dates")
    if (end - start).days < 30:
        raise ValueError(f"end ({end}) must be at least 30 days after start ({start})")

    out = Path(outdir)
    out.mkdir(parents=True, exist_ok=True)
    world = _World(seed=seed, start=start, end=end)
    for index in range(sites):
        world.add_site(index)
    for site in world.sites:
        site.plan_captures()

    captures = world.write_warc(out / WARC_NAME)
    cdx_lines, dirt = world.write_cdx(out / CDX_NAME, captures)
    seed_rows = world.write_seeds(out / SEEDS_NAME)
    world.write_truth(out / TRUTH_NAME, captures, dirt, seed_rows)

    return DemoArchive(
        outdir=out,
        warc_path=out / WARC_NAME,
        cdx_path=out / CDX_NAME,
        seeds_path=out / SEEDS_NAME,
        truth_path=out / TRUTH_NAME,
        sites=sites,
        pages=sum(len(s.pages) for s in world.sites),
        captures=len(captures),
        cdx_lines=cdx_lines,
        dirty_lines=len(dirt),
        observations=sum(1 for c in captures if c.observation),
        update_events=sum(
            1 for s in world.sites for p in s.pages for e in p.events if e.kind == "add"
        ),
        seed_rows=len(seed_rows),
    )


# --------------------------------------------------------------------------------------------
# The world model


@dataclass(frozen=True)
class _Target:
    """Where a link points. ``path`` is relative to the site root for internal targets
    (``""`` is the homepage, ``teaching/`` a directory) and absolute for external ones."""

    internal: bool
    path: str
    host: str = ""  # external only, canonical (no www)
    query: str = ""
    https: bool = False  # external only: the scheme its owner normally writes
    wwwable: bool = False  # external only: a www. form exists

    @property
    def is_dir(self) -> bool:
        return self.path == "" or self.path.endswith("/")


@dataclass
class _Item:
    """A piece of page content: text with links; its id orders it on the page."""

    id: int
    segments: tuple[str | tuple[_Target, str], ...]  # text or (target, label)
    removable: bool = True


@dataclass
class _Event:
    sec: int
    kind: str  # add | remove | readd | cosmetic | restyle
    added: tuple[int, ...] = ()  # item ids
    removed: tuple[int, ...] = ()
    session: int = -1  # add events: the page's editing session (see _session_times)


@dataclass
class _Version:
    sec: int
    items: tuple[int, ...]
    cosmetic: int
    epoch: int


@dataclass
class _Page:
    path: str  # relative to the site root: "", "publications.html", "teaching/cs101/"
    role: str  # home | pubs | teaching | course | project | subproject | cv | photo | gone
    mime: str
    depth: int
    rate: float  # link-adding events per day (0 for non-HTML and gone pages)
    base_href: bool = False
    items: dict[int, _Item] = field(default_factory=dict)
    events: list[_Event] = field(default_factory=list)
    versions: list[_Version] = field(default_factory=list)
    version_secs: list[int] = field(default_factory=list)
    rendered: dict[int, tuple[bytes, str, frozenset[str]]] = field(default_factory=dict)

    @property
    def is_html(self) -> bool:
        return self.mime in ("text/html", "application/xhtml+xml") and self.role != "gone"


@dataclass
class _Capture:
    """One WARC record (response or revisit) and what it means."""

    site: int
    page: _Page
    sec: int
    url: str
    status: int  # HTTP status of the response (the original's for a revisit)
    kind: str
    location: str = ""
    urlkey: str = ""
    record_type: str = "response"
    digest: str = ""
    mime: str = ""  # CDX mime
    refers_to: str = ""  # 14-digit timestamp of the revisit's original ("" if orphan)
    refers_to_url_date: tuple[str, str] = ("", "")  # WARC-Refers-To-Target-URI and -Date
    version: int = -1
    links: frozenset[str] | None = None
    observation: bool = False
    update: bool | None = None
    length: int = 0
    offset: int = 0
    cdx_line: int = 0
    http_headers: list[tuple[str, str]] = field(default_factory=list)
    body: bytes = b""


def _session_times(
    rng: np.random.Generator,
    *,
    rate: float,
    branching: float,
    follow_up_days: float,
    total_days: float,
    term_days: NDArray[np.float64] | None,
) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """One page's link-adding instants in (0, total_days) days, in order, and their sessions.

    A self-exciting (Hawkes) process with an exponential kernel, drawn as its cluster
    representation: sessions open as a Poisson process of rate ``rate * (1 - branching)``;
    every addition brings Poisson(``branching``) follow-ups, each an Exponential(mean
    ``follow_up_days``) delay after it, which bring their own. The long-run mean rate is
    ``rate`` (a session holds 1 / (1 - branching) additions on average). Sessions open from
    ``BURN_IN_DAYS`` before the start on, so the process is stationary over the span; with
    ``term_days``, ``TERM_SHARE`` of them open around a term start instead of uniformly.
    Sessions are numbered 0, 1, ... in the order of their first addition inside the span.
    """
    span = total_days + BURN_IN_DAYS
    count = int(rng.poisson(rate * (1 - branching) * span))
    roots = rng.uniform(-BURN_IN_DAYS, total_days, size=count)
    if term_days is not None and term_days.size and count:
        aligned = rng.random(count) < TERM_SHARE
        k = int(aligned.sum())
        picks = term_days[rng.integers(term_days.size, size=k)]
        roots[aligned] = picks + rng.normal(0.0, TERM_JITTER_DAYS, size=k)
    times, sessions = [roots], [np.arange(count)]
    parents, owners = roots, sessions[0]
    while parents.size:
        children = rng.poisson(branching, size=parents.size)
        parents = np.repeat(parents, children) + rng.exponential(
            follow_up_days, size=int(children.sum())
        )
        owners = np.repeat(owners, children)
        times.append(parents)
        sessions.append(owners)
    when, owner = np.concatenate(times), np.concatenate(sessions)
    keep = (when > 0) & (when < total_days)
    order = np.argsort(when[keep], kind="stable")
    when, owner = when[keep][order], owner[keep][order]
    _, first, inverse = np.unique(owner, return_index=True, return_inverse=True)
    number = np.empty(first.size, dtype=np.int64)
    number[np.argsort(first, kind="stable")] = np.arange(first.size)
    return when, number[inverse.reshape(-1)]


def _stable_hash(*parts: str) -> int:
    h = hashlib.blake2b("\x1f".join(parts).encode("utf-8"), digest_size=8)
    return int.from_bytes(h.digest(), "big")


def _ascii(text: str) -> str:
    return unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")


@functools.lru_cache(maxsize=4096)
def _urlkey(url: str) -> str:
    # surt.surt is what pywb's indexer calls; cached because each page has few URL forms.
    return str(surt.surt(url))


def _payload_digest(body: bytes) -> str:
    return base64.b32encode(hashlib.sha1(body).digest()).decode("ascii")


class _World:
    def __init__(self, *, seed: int, start: date, end: date) -> None:
        self.seed = seed
        self.start = start
        self.end = end
        self.t0 = datetime(start.year, start.month, start.day, tzinfo=UTC)
        self.total_sec = (end - start).days * DAY
        self.sites: list[_Site] = []
        self.used: set[tuple[str, str]] = set()

    @functools.cached_property
    def term_days(self) -> NDArray[np.float64]:
        """Term starts (days since ``start``) from the burn-in on to ``end``."""
        low, high = -BURN_IN_DAYS, self.total_sec / DAY
        found = []
        for year in range(self.start.year - 1, self.end.year + 1):
            for month, day in TERM_STARTS:
                offset = (date(year, month, day) - self.start).days
                if low <= offset < high:
                    found.append(float(offset))
        return np.asarray(found, dtype=np.float64)

    def ts14(self, sec: int) -> str:
        return (self.t0 + timedelta(seconds=sec)).strftime("%Y%m%d%H%M%S")

    def iso(self, sec: int) -> str:
        return (self.t0 + timedelta(seconds=sec)).strftime("%Y-%m-%dT%H:%M:%SZ")

    def http_date(self, sec: int) -> str:
        return format_datetime(self.t0 + timedelta(seconds=sec), usegmt=True)

    def add_site(self, index: int) -> None:
        rng = np.random.default_rng([self.seed, index])
        prev = self.sites[-1] if self.sites else None
        self.sites.append(_Site(self, index, rng, prev))

    # ---------------------------------------------------------------------------- WARC

    def write_warc(self, path: Path) -> list[_Capture]:
        plans = [c for s in self.sites for c in s.captures]
        # A crawl writes in time order; ties broken by site then plan order (stable sort).
        plans.sort(key=lambda c: (c.sec, c.site))
        with open(path, "wb") as f:
            writer = WARCWriter(f, gzip=True, warc_version="WARC/1.0")
            info = (
                "software: hacs archive.demo\r\n"
                "format: WARC File Format 1.0\r\n"
                f"description: synthetic scholarly web archive, seed={self.seed}, "
                f"sites={len(self.sites)}, {self.start}..{self.end}\r\n"
                "isPartOf: hacs-demo\r\n"
            ).encode()
            record = writer.create_warc_record(
                "",
                "warcinfo",
                payload=io.BytesIO(info),
                length=len(info),
                warc_content_type="application/warc-fields",
                warc_headers_dict={
                    "WARC-Record-ID": self.record_id(0),
                    "WARC-Date": self.iso(0),
                    "WARC-Filename": WARC_NAME,
                },
            )
            writer.write_record(record)
            for n, cap in enumerate(plans, start=1):
                self.sites[cap.site].resolve(cap)
                cap.offset = f.tell()
                writer.write_record(self.make_record(writer, cap, n))
                cap.length = f.tell() - cap.offset
                cap.body = b""  # not needed any more; keeps memory flat at 500 sites
        return plans

    def record_id(self, n: int) -> str:
        raw = hashlib.blake2b(f"hacs-demo/{self.seed}/{n}".encode(), digest_size=16).digest()
        return f"<urn:uuid:{uuid.UUID(bytes=raw, version=4)}>"

    def make_record(self, writer: WARCWriter, cap: _Capture, n: int) -> Any:
        reason = {
            200: "OK",
            301: "Moved Permanently",
            302: "Found",
            404: "Not Found",
            503: "Service Unavailable",
        }
        http_headers = StatusAndHeaders(
            f"{cap.status} {reason[cap.status]}", cap.http_headers, protocol="HTTP/1.1"
        )
        headers = {
            "WARC-Record-ID": self.record_id(n),
            "WARC-Date": self.iso(cap.sec),
            "WARC-IP-Address": self.sites[cap.site].ip,
        }
        if cap.record_type == "revisit":
            refers = cap.refers_to_url_date
            return writer.create_revisit_record(
                cap.url,
                digest="sha1:" + cap.digest,
                refers_to_uri=refers[0],
                refers_to_date=refers[1],
                http_headers=http_headers,
                warc_headers_dict=headers,
            )
        headers["WARC-Payload-Digest"] = "sha1:" + cap.digest
        return writer.create_warc_record(
            cap.url,
            "response",
            payload=io.BytesIO(cap.body),
            length=len(cap.body),
            http_headers=http_headers,
            warc_headers_dict=headers,
        )

    # ---------------------------------------------------------------------------- CDX

    def write_cdx(self, path: Path, captures: list[_Capture]) -> tuple[int, list[dict[str, Any]]]:
        """Write the CDX as ``cdx-indexer --sort`` would, then add dirt; returns the number of
        data lines and the dirt, each with its 1-based line number (the header is line 1)."""
        lines = []
        for cap in captures:
            status = "-" if cap.record_type == "revisit" else str(cap.status)
            fields = (
                cap.urlkey, self.ts14(cap.sec), cap.url, cap.mime, status, cap.digest,
                "-", "-", str(cap.length), str(cap.offset), WARC_NAME,
            )  # fmt: skip
            lines.append((" ".join(fields) + "\n", cap))
        # pywb sorts the text lines, newline included (SortedCDXWriter); so do we.
        lines.sort(key=lambda pair: pair[0])

        rng = np.random.default_rng([self.seed, 1_000_003])
        n = len(lines)
        n_dup = max(2, n // 400)
        if n < n_dup + 2:  # a tiny archive (a site or two, rarely captured): no dirt
            dup_idx, bad_idx, trunc_idx = set[int](), -1, -1
        else:
            picks = rng.choice(n, size=n_dup + 2, replace=False).tolist()
            dup_idx, bad_idx, trunc_idx = set(picks[:n_dup]), picks[n_dup], picks[n_dup + 1]

        out: list[tuple[str, dict[str, Any] | None, _Capture]] = []
        for i, (text, cap) in enumerate(lines):
            out.append((text, None, cap))
            if i in dup_idx:
                out.append((text, {"kind": "duplicate", "reason": "repeated line"}, cap))
            if i == trunc_idx:
                cut = text.rstrip("\n")
                cut = cut[: int(len(cut) * 0.55)]
                nfields = len(cut.split())
                why = f"truncated line ({nfields} of 11 fields)"
                out.append((cut + "\n", {"kind": "bad_line", "reason": why}, cap))
        if bad_idx >= 0:
            # The impossible date goes where a sort would put it.
            text, cap = lines[bad_idx]
            key, ts, rest = text.split(" ", 2)
            bad_text = f"{key} {ts[:4]}13{ts[6:]} {rest}"
            month13: dict[str, Any] = {
                "kind": "bad_line",
                "reason": "impossible timestamp (month 13)",
            }
            pos = bisect.bisect_right([t for t, _, _ in out], bad_text)
            out.insert(pos, (bad_text, month13, cap))

        dirt: list[dict[str, Any]] = []
        with open(path, "w", encoding="utf-8", newline="") as f:
            f.write(CDX_HEADER + "\n")
            for lineno, (text, info, cap) in enumerate(out, start=2):
                f.write(text)
                if info is None:
                    cap.cdx_line = lineno
                else:
                    dirt.append({**info, "line": lineno, "text": text.rstrip("\n"), "cap": cap})
        for d in dirt:
            d["of_line"] = d["cap"].cdx_line if d["kind"] == "duplicate" else None
        return len(out), dirt

    # ---------------------------------------------------------------------------- seeds

    def write_seeds(self, path: Path) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = [
            {"url": s.seed_url, "author": s.author, "tags": ";".join(s.tags), "site": s.index,
             "status": "ok", "reason": None}
            for s in self.sites
        ]  # fmt: skip
        first = self.sites[0]
        bad: list[tuple[int, dict[str, Any]]] = [
            (3, {"url": f"ftp://ftp.{first.host}/pub/~{first.user}/", "author": "FTP Mirror",
                 "tags": "", "site": None, "status": "bad", "reason": "not an http(s) URL"}),
            (7, {"url": "", "author": "Jane Roe", "tags": "databases", "site": None,
                 "status": "bad", "reason": "empty URL"}),
        ]  # fmt: skip
        dup_site = self.sites[1] if len(self.sites) > 1 else first
        dup_url = f"HTTPS://WWW.{dup_site.host.upper()}/~{dup_site.user}/index.html"
        bad.append(
            (
                12,
                {"url": dup_url, "author": dup_site.author, "tags": ";".join(dup_site.tags),
                 "site": dup_site.index, "status": "duplicate",
                 "reason": f"same homepage as site {dup_site.index}"},
            )
        )  # fmt: skip
        for pos, row in sorted(bad, key=lambda pair: -pair[0]):
            rows.insert(min(pos, len(rows)), row)
        with open(path, "w", encoding="utf-8", newline="") as f:
            writer = csv.writer(f, lineterminator="\n")
            writer.writerow(["url", "author", "tags"])
            for lineno, row in enumerate(rows, start=2):
                writer.writerow([row["url"], row["author"], row["tags"]])
                row["line"] = lineno
        return rows

    # ---------------------------------------------------------------------------- truth

    def write_truth(
        self,
        path: Path,
        captures: list[_Capture],
        dirt: list[dict[str, Any]],
        seed_rows: list[dict[str, Any]],
    ) -> None:
        doc = self.truth_document(captures, dirt, seed_rows)
        # json.dumps, not json.dump: only the one-shot encoder is the fast C one.
        text = json.dumps(doc, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        path.write_text(text + "\n", encoding="utf-8")

    def truth_document(
        self,
        captures: list[_Capture],
        dirt: list[dict[str, Any]],
        seed_rows: list[dict[str, Any]],
    ) -> dict[str, Any]:
        """truth.json, schema 1::

            {"schema": 1,
             "generator": {"seed", "sites", "start", "end"},     # dates as YYYY-MM-DD
             "update_model": {"kind", "branching_ratio_range", "follow_up_median_days",
                              "term_starts": ["MM-DD"..], "term_share", "term_jitter_days",
                              "burn_in_days"},                   # see the module docstring
             "files": {"warc", "cdx", "seeds"},
             "canonical_form": "<how links are written>",
             "counts": {"captures", "cdx_lines", "dirty_lines", "observations", "update_events"},
             "seeds": [{"line", "url", "author", "tags", "status": ok|bad|duplicate,
                        "reason", "site"}],
             "cdx_dirt": [{"line", "kind": duplicate|bad_line, "reason", "text", "site",
                           "of_line"}],
             "sites": [{
                "index", "seed_url", "author", "tags": [..], "host", "user",
                "homepage": canonical homepage, "charset",
                "rate_per_day": {"homepage": λ, "website": λ},   # website = Σ pages depth ≤ 2
                "update_model": {"branching_ratio": n, "follow_up_mean_days": d},  # the author's
                "update_times": {"homepage": [day..], "website": [day..]},  # add events
                "pages": [{"url", "path", "depth", "mime", "rate_per_day",
                           "session_rate_per_day", "term_sessions", "base_href"}],
                "events": [{"page", "timestamp", "day", "kind", "added": [..], "removed": [..],
                            "session"}],
                "link_sets": {digest: [canonical links, sorted]},  # HTML 200 contents
                "captures": [{"cdx_line", "url", "urlkey", "page", "depth", "timestamp",
                              "status", "mime", "digest", "kind", "observation", "update",
                              "in_warc", "refers_to", "location", "reason"}]}]}

        ``day`` is days since ``start`` 00:00 UTC. ``rate_per_day`` is the long-run mean rate
        of link-adding events; ``session_rate_per_day`` = λ(1 − n) the rate at which editing
        sessions open, ``term_sessions`` whether they favour term starts. An add event's
        ``session`` numbers its editing session on its page (0, 1, ... in time order of the
        sessions' first additions; ``null`` for other kinds). A capture's links are
        ``link_sets[digest]`` when it is an observation. ``update`` is rule 3 over the
        whole history (``null`` unless an observation); other windows are for the reader.
        Capture kinds: observation (200 HTML), revisit (of a 200 HTML capture of the same
        urlkey), orphan_revisit (its original is not in the archive), redirect, error,
        non_html (including revisits of non-HTML), duplicate and bad_line (CDX dirt, not in
        the WARC). ``observation`` is DESIGN.md rule 1 regardless of depth; depth-3 pages are
        outside every site's website level.
        """
        per_site: list[list[dict[str, Any]]] = [[] for _ in self.sites]
        for cap in sorted(captures, key=lambda c: c.cdx_line):
            site = self.sites[cap.site]
            per_site[cap.site].append(
                {
                    "cdx_line": cap.cdx_line,
                    "url": cap.url,
                    "urlkey": cap.urlkey,
                    "page": site.page_url(cap.page),
                    "depth": cap.page.depth,
                    "timestamp": self.ts14(cap.sec),
                    "status": None if cap.record_type == "revisit" else cap.status,
                    "mime": cap.mime,
                    "digest": cap.digest,
                    "kind": cap.kind,
                    "observation": cap.observation,
                    "update": cap.update,
                    "in_warc": True,
                    "refers_to": cap.refers_to or None,
                    "location": cap.location or None,
                    "reason": None,
                }
            )
        cdx_dirt = []
        for d in dirt:
            cap = d["cap"]
            site = self.sites[cap.site]
            entry = {
                "cdx_line": d["line"],
                "url": cap.url,
                "urlkey": cap.urlkey,
                "page": site.page_url(cap.page),
                "depth": cap.page.depth,
                "timestamp": d["text"].split(" ")[1],
                "status": None,
                "mime": None,
                "digest": None,
                "kind": d["kind"],
                "observation": False,
                "update": None,
                "in_warc": False,
                "refers_to": None,
                "location": None,
                "reason": d["reason"],
            }
            per_site[cap.site].append(entry)
            cdx_dirt.append(
                {"line": d["line"], "kind": d["kind"], "reason": d["reason"], "text": d["text"],
                 "site": cap.site, "of_line": d["of_line"]}
            )  # fmt: skip
        for entries in per_site:
            entries.sort(key=lambda e: e["cdx_line"])

        return {
            "schema": TRUTH_SCHEMA,
            "generator": {
                "seed": self.seed,
                "sites": len(self.sites),
                "start": self.start.isoformat(),
                "end": self.end.isoformat(),
            },
            "update_model": {
                "kind": "self-exciting (Hawkes) link additions, exponential follow-up delays",
                "branching_ratio_range": list(BRANCHING_RATIO_RANGE),
                "follow_up_median_days": FOLLOW_UP_MEDIAN_DAYS,
                "term_starts": [f"{month:02d}-{day:02d}" for month, day in TERM_STARTS],
                "term_share": TERM_SHARE,
                "term_jitter_days": TERM_JITTER_DAYS,
                "burn_in_days": BURN_IN_DAYS,
            },
            "files": {"warc": WARC_NAME, "cdx": CDX_NAME, "seeds": SEEDS_NAME},
            "canonical_form": (
                "http://<host lower-case, no www., no default port><path, %7E as ~, no "
                "trailing slash>[?query]; no fragment; index.html kept"
            ),
            "counts": {
                "captures": len(captures),
                "cdx_lines": len(captures) + len(dirt),
                "dirty_lines": len(dirt),
                "observations": sum(1 for c in captures if c.observation),
                "update_events": sum(
                    1 for s in self.sites for p in s.pages for e in p.events if e.kind == "add"
                ),
            },
            "seeds": [
                {k: row[k] for k in ("line", "url", "author", "tags", "status", "reason", "site")}
                for row in seed_rows
            ],
            "cdx_dirt": sorted(cdx_dirt, key=lambda d: d["line"]),
            "sites": [s.truth(per_site[s.index]) for s in self.sites],
        }


class _Site:
    """One author's website: its pages, their histories and its captures."""

    def __init__(self, world: _World, index: int, rng: np.random.Generator, prev: _Site | None):
        self.world = world
        self.index = index
        self.host: str
        self.user: str
        self.rng = rng
        self.next_id = 0
        total_days = world.total_sec / DAY

        first = _FIRST[int(rng.integers(len(_FIRST)))]
        last = _LAST[int(rng.integers(len(_LAST)))]
        uni = _UNIS[int(rng.integers(len(_UNIS)))]
        dept = _DEPTS[int(rng.integers(len(_DEPTS)))]
        self.author = f"{last}, {first}" if rng.random() < 0.06 else f"{first} {last}"
        self.first, self.last = first, last
        if prev is not None and index % 10 == 9:
            # Same host as the previous author and a user name that extends theirs: a prefix
            # query for ~prev also returns this site (DESIGN.md: "~barx is not under ~bar").
            self.host = prev.host
            base_user = prev.user + "xyzs"[int(rng.integers(4))]
        else:
            self.host = f"{dept}.{uni}.edu"
            base_user = _ascii(first[0] + last).lower()
        user, n = base_user, 1
        while (self.host, user) in world.used:
            n += 1
            user = f"{base_user}{n}"
        world.used.add((self.host, user))
        self.user = user
        self.uni = uni
        self.tags = sorted(
            {_TOPICS[int(i)] for i in rng.choice(len(_TOPICS), int(rng.integers(1, 4)), False)}
        )
        self.ip = f"128.{10 + _stable_hash(self.host) % 200}.{index % 250}.{1 + index % 200}"
        self.server = _SERVERS[int(rng.integers(len(_SERVERS)))]

        # Style of the site's HTML and server.
        self.www = bool(rng.random() < 0.6)
        self.migrate_sec = (
            int(rng.uniform(0.15, 0.85) * world.total_sec) if rng.random() < 0.35 else None
        )
        self.https_default = bool(rng.random() < 0.15)
        self.charset = "iso-8859-1" if rng.random() < 0.25 else "utf-8"
        self.declare_charset = bool(rng.random() < 0.9)
        self.upper = bool(rng.random() < 0.2)
        self.quote = ('"', '"', '"', "'", "")[int(rng.integers(5))]
        self.dated_footer = bool(rng.random() < 0.6)
        self.image_map = bool(rng.random() < 0.4)
        seed_style = int(rng.choice(5, p=[0.45, 0.2, 0.15, 0.1, 0.1]))
        scheme = "https" if self.https_default else "http"
        www = "www." if self.www else ""
        self.seed_url = [
            f"{scheme}://{www}{self.host}/~{user}/",
            f"https://{self.host}/~{user}/",
            f"http://{www}{self.host}/~{user}/index.html",
            f"http://{www}{self.host}/~{user}",
            f"http://{self.host}/~{user}/",
        ][seed_style]

        # Pages. Long-run mean rates are log-normal: the homepage's median interval is 110 days.
        home_rate = float(np.exp(rng.normal(np.log(1 / HOMEPAGE_MEDIAN_INTERVAL_DAYS), 0.7)))

        def page_rate() -> float:
            return float(np.exp(rng.normal(np.log(1 / PAGE_MEDIAN_INTERVAL_DAYS), 0.8)))

        def clip(rate: float) -> float:
            return min(max(rate, 1 / 5000), 1 / 3)

        pages = [_Page("", "home", "text/html", 0, clip(home_rate))]
        pages[0].base_href = bool(rng.random() < 0.1)
        if rng.random() < 0.8:
            mime = "application/xhtml+xml" if rng.random() < 0.15 else "text/html"
            pages.append(_Page("publications.html", "pubs", mime, 1, clip(page_rate())))
        if rng.random() < 0.7:
            pages.append(_Page("teaching/", "teaching", "text/html", 1, clip(page_rate())))
            if rng.random() < 0.8:
                course = f"cs{int(rng.integers(100, 800))}"
                pages.append(_Page(f"teaching/{course}/", "course", "text/html", 2, 0.0))
                pages[-1].rate = clip(page_rate())
        if rng.random() < 0.5:
            proj = ("crawler", "memento", "linkrot", "scholar", "graphdb", "webviz")[
                int(rng.integers(6))
            ]
            pages.append(_Page(f"projects/{proj}/", "project", "text/html", 2, clip(page_rate())))
            if rng.random() < 0.6:
                pages.append(
                    _Page(f"projects/{proj}/data/", "subproject", "text/html", 3, clip(page_rate()))
                )
        if rng.random() < 0.6:
            pages.append(_Page("cv.pdf", "cv", "application/pdf", 1, 0.0))
        if rng.random() < 0.6:
            pages.append(_Page("photo.jpg", "photo", "image/jpeg", 1, 0.0))
        if rng.random() < 0.25:
            pages.append(_Page("oldpage.html", "gone", "text/html", 1, 0.0))
        for page in pages[1:]:
            if page.is_html and page.mime == "text/html":
                page.base_href = bool(rng.random() < 0.2)
        self.pages = pages
        self.sparse = bool(rng.random() < 0.1)
        # The author's editing habits: how many follow-up links an addition brings on average,
        # and how many days later they come.
        self.branching = float(rng.uniform(*BRANCHING_RATIO_RANGE))
        self.follow_up_days = float(np.exp(rng.normal(np.log(FOLLOW_UP_MEDIAN_DAYS), 0.4)))

        for page in pages:
            self.build_history(page, total_days)
        self.hrefs: dict[tuple[str, str, str, int], tuple[str, str]] = {}
        self.captures: list[_Capture] = []
        self.known: dict[str, dict[str, tuple[str, str, str]]] = {}  # urlkey -> digest -> orig
        self.page_digests: dict[str, set[str]] = {}  # page path -> digests seen in 200s
        self.seen_links: dict[str, set[str]] = {}  # page path -> links of observations so far
        self.first_obs: set[str] = set()  # page paths with a baseline observation

    # ------------------------------------------------------------------------ URLs

    def root_path(self) -> str:
        return f"/~{self.user}/"

    def page_url(self, page: _Page) -> str:
        return f"http://{self.host}{self.root_path()}{page.path}".rstrip("/")

    def scheme_at(self, epoch: int) -> str:
        return "https" if (epoch or self.https_default) else "http"

    def main_url(self, page: _Page, sec: int) -> str:
        epoch = int(self.migrate_sec is not None and sec >= self.migrate_sec)
        www = "www." if self.www else ""
        return f"{self.scheme_at(epoch)}://{www}{self.host}{self.root_path()}{page.path}"

    # ------------------------------------------------------------------------ content

    def new_item(
        self, segments: Sequence[str | tuple[_Target, str]], removable: bool = True
    ) -> _Item:
        self.next_id += 1
        return _Item(self.next_id, tuple(segments), removable)

    def ext(
        self, host: str, path: str, *, query: str = "", https: bool = True, www: bool = False
    ) -> _Target:
        return _Target(False, path, host=host, query=query, https=https, wwwable=www)

    def title(self) -> str:
        rng = self.rng
        words = [_WORDS[int(i)] for i in rng.choice(len(_WORDS), int(rng.integers(3, 7)), False)]
        return " ".join(words).capitalize()

    def make_item(self, page: _Page, year: int) -> _Item:
        """A new piece of content with at least one link never used before on this site."""
        rng = self.rng
        n = self.next_id + 1
        venue = _VENUES[int(rng.integers(len(_VENUES)))]
        if page.role in ("home", "pubs") and (page.role == "pubs" or rng.random() < 0.5):
            key = f"{_ascii(self.last).lower()}{year % 100:02d}-{n}"
            doi = f"/10.{1000 + int(rng.integers(9000))}/{year}.{n}"
            segs: list[str | tuple[_Target, str]] = [
                f"{self.first[0]}. {self.last} and {_FIRST[int(rng.integers(len(_FIRST)))]} "
                f"{_LAST[int(rng.integers(len(_LAST)))]}. <i>{self.title()}</i>. "
                f"In <b>{venue} {year}</b>. [",
                (_Target(True, f"papers/{key}.pdf"), "pdf"),
                "] [",
                (self.ext("doi.org", doi), "DOI"),
                "]",
            ]
            if rng.random() < 0.3:
                arxiv = f"/abs/{year % 100:02d}{int(rng.integers(1, 13)):02d}.{n:05d}"
                segs += [" [", (self.ext("arxiv.org", arxiv), "arXiv"), "]"]
            if page.role == "pubs" and rng.random() < 0.5:
                segs += [" [", (_Target(True, f"slides/{key}.pdf"), "slides"), "]"]
            return self.new_item(segs)
        if page.role == "home":
            if rng.random() < 0.7:
                # Not "www2012.org": surt strips "www<digits>." as if it were "www.".
                host = f"{venue.lower().replace(' ', '')}conf{year}.org"
                return self.new_item(
                    [
                        f"<b>{year}:</b> Our paper on {self.title().lower()} was accepted at ",
                        (self.ext(host, f"/program/paper{n}.html", www=True), f"{venue} {year}"),
                        ".",
                    ]
                )
            other = f"{_ascii(_FIRST[int(rng.integers(50))]).lower()}{n}"
            target = self.ext(f"cs.{_UNIS[int(rng.integers(len(_UNIS)))]}.edu", f"/~{other}/",
                              https=False, www=True)  # fmt: skip
            return self.new_item(["Welcome to my new student, ", (target, other.capitalize()), "!"])
        if page.role == "teaching":
            code = f"cs{int(rng.integers(100, 900))}"
            term = ("spring", "summer", "fall")[int(rng.integers(3))]
            target = self.ext(
                self.host, f"/courses/{term}{year}/{code}-{n}/", https=False, www=True
            )
            return self.new_item(
                [
                    f"{code.upper()}: {self.title()} ({term.capitalize()} {year}) ",
                    (target, "course page"),
                ]
            )
        if page.role == "course":
            topic = _COURSE_TOPICS[int(rng.integers(len(_COURSE_TOPICS)))]
            prefix = page.path
            segs = [
                f"Lecture {n}: {topic} ",
                (_Target(True, f"{prefix}slides/lec{n:03d}.pdf"), "slides"),
            ]
            if rng.random() < 0.4:
                segs += [", ", (_Target(True, f"{prefix}hw/hw{n:03d}.html"), "homework")]
            return self.new_item(segs)
        # project / subproject
        proj = page.path.strip("/").split("/")[1]
        ver = f"{int(rng.integers(0, 4))}.{n}"
        segs = [
            f"Release {ver} ",
            (self.ext("github.com", f"/{self.user}/{proj}/releases/tag/v{ver}", www=True),
             "release notes"),
        ]  # fmt: skip
        if rng.random() < 0.5:
            segs += [", ", (_Target(True, f"{page.path}files/{proj}-{ver}.tar.gz"), "data")]
        return self.new_item(segs)

    def initial_items(self, page: _Page) -> None:
        rng = self.rng
        counts = {"home": (2, 7), "pubs": (4, 16), "teaching": (1, 4), "course": (2, 9),
                  "project": (1, 5), "subproject": (1, 4)}  # fmt: skip
        lo, hi = counts[page.role]
        year0 = self.world.start.year
        for _ in range(int(rng.integers(lo, hi))):
            item = self.make_item(page, year0 - int(rng.integers(0, 6)))
            page.items[item.id] = item

    def build_history(self, page: _Page, total_days: float) -> None:
        """Draw the page's events and the versions they produce."""
        rng = self.rng
        total = self.world.total_sec
        if page.is_html:
            self.initial_items(page)
        cosmetic_rate = 1 / 365 if page.is_html else (1 / 300 if page.role == "cv" else 0.0)
        draws: list[tuple[int, str, int]] = []  # (second, kind, session of an add or -1)
        if page.rate > 0:
            terms = self.world.term_days if page.role in ("teaching", "course") else None
            days, sessions = _session_times(
                rng,
                rate=page.rate,
                branching=self.branching,
                follow_up_days=self.follow_up_days,
                total_days=total_days,
                term_days=terms,
            )
            draws += [
                (max(1, int(d * DAY)), "add", int(k))
                for d, k in zip(days.tolist(), sessions.tolist(), strict=True)
            ]
        for kind, rate in (
            ("remove", 0.25 * page.rate),
            ("readd", 0.15 * page.rate),
            ("cosmetic", cosmetic_rate),
        ):
            count = int(rng.poisson(rate * total_days)) if rate > 0 else 0
            draws += [(int(s), kind, -1) for s in rng.integers(1, total, size=count)]
        if self.migrate_sec is not None and page.is_html:
            draws.append((self.migrate_sec, "restyle", -1))
        draws.sort()
        # One event per second at most, none at the initial state's second 0.
        last = 0
        for i, (sec, kind, session) in enumerate(draws):
            last = max(sec, last + 1)
            draws[i] = (last, kind, session)
        draws = [draw for draw in draws if draw[0] < total]

        present = sorted(page.items)
        removed: list[int] = []
        cosmetic = 0
        epoch = 0
        page.versions = [_Version(0, tuple(present), 0, 0)]
        for sec, kind, session in draws:
            event = _Event(sec, kind, session=session)
            if kind == "add":
                year = (self.world.t0 + timedelta(seconds=sec)).year
                item = self.make_item(page, year)
                page.items[item.id] = item
                present.append(item.id)
                event.added = (item.id,)
                pubs = [i for i in present if self.is_pub(page.items[i])]
                if page.role == "home" and len(pubs) > 8:
                    # "Selected publications": the oldest drops off when a new one arrives.
                    present.remove(pubs[0])
                    removed.append(pubs[0])
                    event.removed = (pubs[0],)
            elif kind == "remove":
                choices = [i for i in present if page.items[i].removable]
                if len(choices) < 2:
                    continue
                victim = choices[int(rng.integers(len(choices)))]
                present.remove(victim)
                removed.append(victim)
                event.removed = (victim,)
            elif kind == "readd":
                if not removed:
                    continue
                back = removed.pop(int(rng.integers(len(removed))))
                bisect.insort(present, back)
                event.added = (back,)
            elif kind == "cosmetic":
                cosmetic += 1
            else:
                epoch = 1
            page.events.append(event)
            page.versions.append(_Version(sec, tuple(present), cosmetic, epoch))
        page.version_secs = [v.sec for v in page.versions]

    @staticmethod
    def is_pub(item: _Item) -> bool:
        return any(isinstance(s, tuple) and s[0].path.startswith("papers/") for s in item.segments)

    # ------------------------------------------------------------------------ rendering

    def href(self, page: _Page, target: _Target, slot: str, epoch: int) -> tuple[str, str]:
        """How ``page`` writes a link to ``target`` in ``slot`` at style ``epoch``, and the link's
        canonical form. Choices hang on a stable hash, so they do not change between versions
        -- except the scheme and ``www.`` of absolute URLs, which the https move rewrites."""
        key = (page.path, target.path + target.host + target.query, slot, epoch)
        hit = self.hrefs.get(key)
        if hit is not None:
            return hit
        h = _stable_hash(str(self.world.seed), str(self.index), *key[:3])

        def pick(percent: int) -> bool:
            nonlocal h
            hit = h % 100 < percent
            h //= 100
            return hit

        if target.internal:
            path = target.path
            index_form = target.is_dir and pick(8)
            if index_form:
                path += "index.html"
            drop_slash = target.is_dir and path != "" and not index_form and pick(8)
            full = self.root_path() + path
            canon = f"http://{self.host}{full}".rstrip("/")
            if drop_slash:
                full = full.rstrip("/")
            mode = h % 100
            h //= 100
            if mode < 45:
                base = self.root_path() if page.base_href else self.root_path() + page.path
                base_dir = base.rstrip("/") if base.endswith("/") else posixpath.dirname(base)
                rel = posixpath.relpath(full, base_dir) if full.rstrip("/") != base_dir else "."
                if full.endswith("/") or rel == ".":
                    rel = rel.rstrip("/") + "/"
                written = rel
            else:
                if pick(12):
                    full = full.replace("~", "%7E", 1)
                if mode < 60:
                    written = full
                else:
                    scheme = self.scheme_at(epoch)
                    if pick(10):
                        scheme = "https" if scheme == "http" else "http"
                    host = self.host
                    if self.www != pick(15) and not (epoch and pick(50)):
                        host = "www." + host
                    if pick(5):
                        host = host.upper()
                    port = ":80" if scheme == "http" and pick(4) else ""
                    written = f"{scheme}://{host}{port}{full}"
        else:
            canon = f"http://{target.host}{target.path}".rstrip("/")
            canon += f"?{target.query}" if target.query else ""
            scheme = "https" if target.https or epoch else "http"
            if pick(10):
                scheme = "https" if scheme == "http" else "http"
            host = target.host
            if target.wwwable and pick(40):
                host = "www." + host
            if pick(3):
                host = host.upper()
            path = target.path or "/"
            written = f"{scheme}://{host}{path}" + (f"?{target.query}" if target.query else "")
        if pick(8):
            written += ("#top", "#sec2", "#pubs", "#x1")[h % 4]
            h //= 4
        if pick(2):
            written = f" {written}\n"  # real pages have stray whitespace inside href values
        self.hrefs[key] = (written, canon)
        return written, canon

    def render(self, page: _Page, vi: int) -> tuple[bytes, str, frozenset[str]]:
        """The page's bytes at version ``vi``, their payload digest and their true link set."""
        hit = page.rendered.get(vi)
        if hit is not None:
            return hit
        if page.role == "cv":
            body = self.render_pdf(vi)
            result = (body, _payload_digest(body), frozenset[str]())
        elif page.role == "photo":
            body = self.render_jpeg()
            result = (body, _payload_digest(body), frozenset[str]())
        else:
            text, links = self.render_html(page, page.versions[vi])
            charset = "utf-8" if page.mime == "application/xhtml+xml" else self.charset
            body = text.encode(charset, "xmlcharrefreplace")
            result = (body, _payload_digest(body), frozenset(links))
        page.rendered[vi] = result
        return result

    def render_pdf(self, vi: int) -> bytes:
        pad = hashlib.sha256(f"{self.index}/{vi}".encode()).hexdigest()
        return (
            b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<< /Type /Catalog /Pages 2 0 R >>\nendobj\n"
            + f"% Curriculum vitae of {_ascii(self.author)}, revision {vi} {pad}\n".encode()
            + b"trailer\n<< /Root 1 0 R >>\n%%EOF\n"
        )

    def render_jpeg(self) -> bytes:
        noise = hashlib.sha256(f"photo/{self.index}".encode()).digest() * 8
        return (
            b"\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00"
            + noise
            + b"\xff\xd9"
        )

    def render_html(self, page: _Page, ver: _Version) -> tuple[str, set[str]]:
        xhtml = page.mime == "application/xhtml+xml"
        upper = self.upper and not xhtml
        quote = '"' if xhtml else self.quote
        links: set[str] = set()

        def tag(name: str) -> str:
            return name.upper() if upper else name

        def attr(name: str, value: str) -> str:
            name = name.upper() if upper else name
            value = html.escape(value, quote=True)
            if quote == "" and value and all(c.isalnum() or c in "./:-_~%#" for c in value):
                return f"{name}={value}"
            q = quote or '"'
            return f"{name}={q}{value}{q}"

        def a(target: _Target, label: str, slot: str) -> str:
            written, canon = self.href(page, target, slot, ver.epoch)
            links.add(canon)
            return f"<{tag('a')} {attr('href', written)}>{label}</{tag('a')}>"

        li_close = f"</{tag('li')}>" if (xhtml or not upper) else ""
        charset = "utf-8" if xhtml else self.charset
        name_html = html.escape(f"{self.first} {self.last}")
        segments = page.path.strip("/").split("/")
        title = {
            "home": f"{name_html} - Home Page",
            "pubs": f"Publications of {name_html}",
            "teaching": f"Teaching - {name_html}",
            "course": f"{segments[-1].upper()} - {name_html}",
            "project": f"Project {segments[-1]} - {name_html}",
            "subproject": f"Data - {segments[-2 if len(segments) > 1 else -1]} - {name_html}",
        }[page.role]

        out: list[str] = []
        if xhtml:
            out.append('<?xml version="1.0" encoding="UTF-8"?>\n')
            out.append(
                '<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.0 Strict//EN" '
                '"http://www.w3.org/TR/xhtml1/DTD/xhtml1-strict.dtd">\n'
                '<html xmlns="http://www.w3.org/1999/xhtml">\n<head>\n'
            )
        else:
            out.append(
                '<!DOCTYPE HTML PUBLIC "-//W3C//DTD HTML 4.01 Transitional//EN">\n'
                if upper
                else "<!DOCTYPE html>\n"
            )
            out.append(f"<{tag('html')}>\n<{tag('head')}>\n")
        if self.declare_charset or xhtml:
            out.append(
                f'<meta http-equiv="Content-Type" content="text/html; charset={charset}"'
                + (" />\n" if xhtml else ">\n")
            )
        out.append(f"<{tag('title')}>{title}</{tag('title')}>\n")
        if page.base_href:
            www = "www." if self.www else ""
            host = self.host.upper() if self.index % 3 == 0 else self.host
            base = f"{self.scheme_at(ver.epoch)}://{www}{host}{self.root_path()}"
            out.append(f"<{tag('base')} {attr('href', base)}" + (" />\n" if xhtml else ">\n"))
        style = ("../" * page.path.count("/") if not page.base_href else "") + "style.css"
        out.append(
            f"<{tag('link')} {attr('rel', 'stylesheet')} {attr('href', style)}"
            + (" />\n" if xhtml else ">\n")
        )
        out.append(f"</{tag('head')}>\n<{tag('body')}>\n")

        # Navigation: the same on every page of the site.
        nav = [a(_Target(True, ""), "Home", "nav")]
        for other in self.pages:
            if other.role in ("pubs", "teaching", "project", "cv"):
                label = {"pubs": "Publications", "teaching": "Teaching", "project": "Projects",
                         "cv": "CV"}[other.role]  # fmt: skip
                nav.append(a(_Target(True, other.path), label, "nav"))
        out.append(f"<{tag('div')} {attr('id', 'nav')}>" + " | ".join(nav) + f"</{tag('div')}>\n")
        out.append(f"<{tag('h1')}>{title}</{tag('h1')}>\n")

        if page.role == "home":
            photo = any(p.role == "photo" for p in self.pages)
            if photo:
                img = f"<{tag('img')} {attr('src', 'photo.jpg')} {attr('alt', 'photo')}"
                if self.image_map and not xhtml:
                    img += f" {attr('usemap', '#logos')}>\n<{tag('map')} {attr('name', 'logos')}>"
                    for target, coords, slot in (
                        (self.ext(self.host, "/", https=False, www=True), "0,0,60,30", "area1"),
                        (self.ext(f"{self.uni}.edu", "/", https=False, www=True), "60,0,120,30",
                         "area2"),
                    ):  # fmt: skip
                        written, canon = self.href(page, target, slot, ver.epoch)
                        links.add(canon)
                        img += (
                            f"<{tag('area')} {attr('shape', 'rect')} {attr('coords', coords)} "
                            f"{attr('href', written)}>"
                        )
                    img += f"</{tag('map')}>\n"
                else:
                    img += " />\n" if xhtml else ">\n"
                out.append(img)
            out.append(
                f"<{tag('p')}>{name_html} is a professor of computer science at "
                f"{self.uni.upper()}. Research interests: {html.escape(', '.join(self.tags))}."
                + (f"</{tag('p')}>\n" if xhtml or not upper else "\n")
            )
            email = f"{self.user}@{self.host}"
            out.append(
                f"<{tag('p')}>Email: <{tag('a')} {attr('href', 'mailto:' + email)}>{email}"
                f"</{tag('a')}>. Office hours: Tuesday 2-{3 + ver.cosmetic % 4}pm"
                f" (room {100 + ver.cosmetic}).</{tag('p')}>\n"
            )
            profiles = [
                (self.ext("scholar.google.com", "/citations",
                          query=f"user={_stable_hash(self.user) % 10**8:08d}&hl=en"), "Scholar"),
                (self.ext("dblp.org", f"/pid/{self.index}/{_stable_hash(self.user) % 9000}.html"),
                 "DBLP"),
                (self.ext("github.com", f"/{self.user}", www=True), "GitHub"),
            ]  # fmt: skip
            out.append(
                f"<{tag('p')}>Profiles: "
                + ", ".join(a(t, label, "profile") for t, label in profiles)
                + f". <{tag('a')} {attr('href', 'javascript:void(0)')}>Show more</{tag('a')}>"
                + f"</{tag('p')}>\n"
            )
        if page.role == "teaching":
            for other in self.pages:
                if other.role == "course":
                    code = other.path.strip("/").split("/")[-1].upper()
                    out.append(
                        f"<{tag('p')}>Current course: {a(_Target(True, other.path), code, 'body')}"
                        f"</{tag('p')}>\n"
                    )
        if page.role == "project":
            for other in self.pages:
                if other.role == "subproject":
                    out.append(
                        f"<{tag('p')}>Datasets: {a(_Target(True, other.path), 'data', 'body')}"
                        f"</{tag('p')}>\n"
                    )

        heading = {"home": "News and selected publications", "pubs": "Publications",
                   "teaching": "Courses", "course": "Schedule", "project": "Releases",
                   "subproject": "Downloads"}[page.role]  # fmt: skip
        out.append(f"<{tag('h2')}>{heading}</{tag('h2')}>\n<{tag('ul')}>\n")
        for item_id in reversed(ver.items):  # newest first, as people write them
            item = page.items[item_id]
            parts = []
            for seg in item.segments:
                if isinstance(seg, tuple):
                    parts.append(a(seg[0], seg[1], f"item{item_id}"))
                else:
                    parts.append(seg)  # our own markup (<i>, <b>)
            if page.role == "pubs" and not xhtml:
                js = attr("href", f"javascript:toggle({item_id})")
                parts.append(f" [<{tag('a')} {js}>bibtex</{tag('a')}>]")
            out.append(f"<{tag('li')}>" + "".join(parts) + li_close + "\n")
        out.append(f"</{tag('ul')}>\n")

        if not xhtml:
            out.append(
                f'<!-- old link, kept for reference: <a href="old/{page.role}.html">old</a> -->\n'
            )
        if page.role == "home" and not xhtml:
            out.append(
                f"<{tag('p')}>Software mirror: <{tag('a')} "
                f"{attr('href', f'ftp://ftp.{self.host}/pub/{self.user}/')}>ftp</{tag('a')}>"
                f"</{tag('p')}>\n"
            )
        out.append("<hr" + (" />" if xhtml else ">") + "\n")
        stamp = ""
        if self.dated_footer:
            stamp = (self.world.t0 + timedelta(seconds=ver.sec)).strftime("%B %d, %Y")
            stamp = f"Last modified: {stamp}. "
        out.append(
            f"<{tag('address')}>{stamp}{html.escape(self.uni.upper())} Department of Computer "
            f"Science. Revision {ver.cosmetic}.</{tag('address')}>\n"
        )
        out.append(f"</{tag('body')}>\n</{tag('html')}>\n")
        return "".join(out), links

    # ------------------------------------------------------------------------ captures

    def plan_captures(self) -> None:
        """Bursty capture times: on/off periods, sessions within on-periods, clusters."""
        rng = self.rng
        total = self.world.total_sec
        total_days = total / DAY
        rate_on = float(np.exp(rng.normal(np.log(1 / 20), 0.5)))
        if self.sparse:
            rate_on /= 10
        sessions: list[float] = []
        t = float(rng.exponential(60))
        while t < total_days:
            end_on = min(t + float(rng.exponential(150)), total_days)
            count = int(rng.poisson(rate_on * (end_on - t)))
            sessions += rng.uniform(t, end_on, size=count).tolist()
            t = end_on + float(rng.exponential(80))
        sessions.sort()

        home = self.pages[0]
        plans: list[tuple[int, _Page]] = []
        for s in sessions:
            sec = int(s * DAY)
            for k in range(int(rng.geometric(0.55))):
                if k:
                    sec += int(rng.exponential(7200)) + 60
                plans.append((sec, home))
            if rng.random() < 0.25:  # a deep crawl follows the links to every page
                at = int(s * DAY)
                for page in self.pages[1:]:
                    at += int(rng.exponential(40)) + 1
                    plans.append((at, page))
        for page in self.pages[1:]:
            count = int(rng.poisson(total_days / (250 if not self.sparse else 2500)))
            plans += [(int(x), page) for x in rng.integers(0, total, size=count)]
        plans = [(sec, page) for sec, page in plans if 0 <= sec < total - 10]
        plans.sort(key=lambda pair: pair[0])

        used: set[tuple[str, int]] = set()

        def add(sec: int, page: _Page, url: str, status: int, kind: str, location: str = "") -> int:
            key = _urlkey(url)
            while (key, sec) in used:
                sec += 1
            used.add((key, sec))
            self.captures.append(
                _Capture(self.index, page, sec, url, status, kind, location=location, urlkey=key)
            )
            return sec

        for sec, page in plans:
            url = self.main_url(page, sec)
            r = rng.random()
            if page.role == "home" and r < 0.2:
                url = self.variant_url(url)
            if page.role == "gone":
                add(sec, page, url, 404, "error")
                continue
            if rng.random() < 0.02:
                add(sec, page, url, 503, "error")
                continue
            if url.endswith("/"):
                if rng.random() < 0.07:
                    src, status = self.redirect_source(url)
                    sec = add(sec, page, src, status, "redirect", location=url)
                    sec += int(rng.integers(1, 5))
            kind = "observation" if page.is_html else "non_html"
            add(sec, page, url, 200, kind)
        self.captures = [c for c in self.captures if c.sec < total]

    def variant_url(self, url: str) -> str:
        """The homepage written another way: the other host form or scheme, or index.html."""
        choice = int(self.rng.integers(3))
        if choice == 0:
            return url + "index.html"
        if choice == 1:
            return (
                url.replace("://www.", "://", 1)
                if "://www." in url
                else url.replace("://", "://www.", 1)
            )
        return (
            url.replace("http://", "https://", 1)
            if url.startswith("http://")
            else url.replace("https://", "http://", 1)
        )

    def redirect_source(self, url: str) -> tuple[str, int]:
        """A URL that redirects to ``url`` (a directory URL): no slash, other scheme, or www."""
        rng = self.rng
        if url.endswith("/") and rng.random() < 0.5:
            return url.rstrip("/"), 301
        if url.startswith("https://"):
            return url.replace("https://", "http://", 1), int(rng.choice([301, 302]))
        if "://www." in url:
            return url.replace("://www.", "://", 1), 301
        return url.rstrip("/") if url.endswith("/") else url + "/", 302

    def resolve(self, cap: _Capture) -> None:
        """Decide the capture's bytes and record type; called in WARC (time) order."""
        world = self.world
        rng = self.rng
        page = cap.page
        ts = world.ts14(cap.sec)
        if cap.status != 200:
            body = self.status_body(cap)
            cap.body = body
            cap.digest = _payload_digest(body)
            cap.mime = "text/html"
            cap.http_headers = [
                ("Date", world.http_date(cap.sec)),
                ("Server", self.server),
            ]
            if cap.location:
                cap.http_headers.append(("Location", cap.location))
            cap.http_headers += [
                ("Content-Length", str(len(body))),
                ("Connection", "close"),
                ("Content-Type", "text/html; charset=iso-8859-1"),
            ]
            return

        vi = bisect.bisect_right(page.version_secs, cap.sec) - 1
        body, digest, links = self.render(page, vi)
        cap.version = vi
        cap.digest = digest
        cap.mime = page.mime
        content_type = page.mime
        if page.is_html:
            charset = "utf-8" if page.mime == "application/xhtml+xml" else self.charset
            if self.declare_charset and _stable_hash(self.user, "ct") % 3:
                content_type += f"; charset={charset.upper() if self.upper else charset}"
        modified = world.http_date(page.versions[vi].sec or 1)
        cap.http_headers = [
            ("Date", world.http_date(cap.sec)),
            ("Server", self.server),
            ("Last-Modified", modified),
            ("ETag", f'"{digest[:8].lower()}-{len(body):x}"'),
            ("Accept-Ranges", "bytes"),
            ("Content-Length", str(len(body))),
            ("Connection", "close"),
            ("Content-Type", content_type),
        ]
        known = self.known.setdefault(cap.urlkey, {})
        seen_digests = self.page_digests.setdefault(page.path, set())
        if digest in known and rng.random() < 0.65:
            cap.record_type = "revisit"
            cap.mime = "warc/revisit"
            orig_url, orig_iso, orig_ts = known[digest]
            cap.refers_to_url_date = (orig_url, orig_iso)
            cap.refers_to = orig_ts
            cap.kind = "revisit" if page.is_html else "non_html"
        elif page.is_html and digest not in seen_digests and cap.sec > 0 and rng.random() < 0.015:
            # Deduplicated against a capture this archive does not hold (another crawl's WARC).
            cap.record_type = "revisit"
            cap.mime = "warc/revisit"
            cap.refers_to_url_date = (cap.url, "2014-01-01T00:00:00Z")
            cap.refers_to = ""
            cap.kind = "orphan_revisit"
        else:
            cap.body = body
            known[digest] = (cap.url, world.iso(cap.sec), ts)
            seen_digests.add(digest)

        if page.is_html and cap.kind in ("observation", "revisit"):
            cap.observation = True
            cap.links = links
            seen = self.seen_links.setdefault(page.path, set())
            first = page.path not in self.first_obs
            cap.update = (not first) and not links <= seen
            self.first_obs.add(page.path)
            seen |= links

    def status_body(self, cap: _Capture) -> bytes:
        if cap.status in (301, 302):
            title = "301 Moved Permanently" if cap.status == 301 else "302 Found"
            text = (
                f'<!DOCTYPE HTML PUBLIC "-//IETF//DTD HTML 2.0//EN">\n<html><head>\n<title>{title}'
                f"</title>\n</head><body>\n<h1>{title[4:]}</h1>\n<p>The document has moved "
                f'<a href="{html.escape(cap.location)}">here</a>.</p>\n</body></html>\n'
            )
        elif cap.status == 404:
            path = cap.url.split("/", 3)[3]
            text = (
                '<!DOCTYPE HTML PUBLIC "-//IETF//DTD HTML 2.0//EN">\n<html><head>\n<title>404 '
                "Not Found</title>\n</head><body>\n<h1>Not Found</h1>\n<p>The requested URL "
                f"/{html.escape(path)} was not found on this server.</p>\n</body></html>\n"
            )
        else:
            text = (
                '<!DOCTYPE HTML PUBLIC "-//IETF//DTD HTML 2.0//EN">\n<html><head>\n<title>503 '
                "Service Unavailable</title>\n</head><body>\n<h1>Service Unavailable</h1>\n"
                "<p>The server is temporarily unable to service your request due to maintenance "
                "downtime or capacity problems. Please try again later.</p>\n</body></html>\n"
            )
        return text.encode("ascii")

    # ------------------------------------------------------------------------ truth

    def truth(self, captures: list[dict[str, Any]]) -> dict[str, Any]:
        def days(sec: int) -> float:
            return round(sec / DAY, 6)

        website_pages = [p for p in self.pages if p.is_html and p.depth <= 2]
        link_sets: dict[str, list[str]] = {}
        for page in self.pages:
            if page.is_html:
                for _body, digest, links in page.rendered.values():
                    link_sets[digest] = sorted(links)
        events = []
        for page in self.pages:
            for e in page.events:
                events.append(
                    {
                        "page": self.page_url(page),
                        "timestamp": self.world.ts14(e.sec),
                        "day": days(e.sec),
                        "kind": e.kind,
                        "added": sorted(self.item_links(page, e.added, e.sec)),
                        "removed": sorted(self.item_links(page, e.removed, e.sec)),
                        "session": e.session if e.kind == "add" else None,
                    }
                )
        events.sort(key=lambda e: (e["day"], e["page"]))
        home_times = [days(e.sec) for e in self.pages[0].events if e.kind == "add"]
        web_times = sorted(days(e.sec) for p in website_pages for e in p.events if e.kind == "add")
        return {
            "index": self.index,
            "seed_url": self.seed_url,
            "author": self.author,
            "tags": self.tags,
            "host": self.host,
            "user": self.user,
            "homepage": self.page_url(self.pages[0]),
            "charset": self.charset,
            "rate_per_day": {
                "homepage": self.pages[0].rate,
                "website": sum(p.rate for p in website_pages),
            },
            "update_model": {
                "branching_ratio": self.branching,
                "follow_up_mean_days": self.follow_up_days,
            },
            "update_times": {"homepage": home_times, "website": web_times},
            "pages": [
                {
                    "url": self.page_url(p),
                    "path": p.path,
                    "depth": p.depth,
                    "mime": p.mime,
                    "rate_per_day": p.rate if p.is_html else 0.0,
                    "session_rate_per_day": p.rate * (1 - self.branching) if p.is_html else 0.0,
                    "term_sessions": p.is_html and p.role in ("teaching", "course"),
                    "base_href": p.base_href,
                }
                for p in self.pages
            ],
            "events": events,
            "link_sets": link_sets,
            "captures": captures,
        }

    def item_links(self, page: _Page, ids: tuple[int, ...], sec: int) -> set[str]:
        """Canonical links of the given items as the page writes them at ``sec``."""
        epoch = int(self.migrate_sec is not None and sec >= self.migrate_sec)
        out = set()
        for item_id in ids:
            for seg in page.items[item_id].segments:
                if isinstance(seg, tuple):
                    out.add(self.href(page, seg[0], f"item{item_id}", epoch)[1])
        return out
