"""The demo world's nouns: link targets, page content, events, versions, pages and captures.

A page's content is a list of items (a publication, a lecture, a release note), each text with
links. Events add, remove or restore items, or change only text or style; every event makes a
new version of the page. A capture is one WARC record of one page at one instant; what it holds
is decided when the WARC is written, in the order a crawler would have fetched it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

XHTML = "application/xhtml+xml"


@dataclass(frozen=True)
class Target:
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


def internal(path: str) -> Target:
    """A page or file under the author's own ``/~user/`` directory."""
    return Target(True, path)


def external(
    host: str, path: str, *, query: str = "", https: bool = True, www: bool = False
) -> Target:
    """A page elsewhere on the web: a DOI, a conference, a colleague, GitHub."""
    return Target(False, path, host=host, query=query, https=https, wwwable=www)


Segment = str | tuple[Target, str]  # text (our own markup) or a link: (target, label)


@dataclass
class Item:
    """A piece of page content: text with links; its id orders it on the page."""

    id: int
    segments: tuple[Segment, ...]
    removable: bool = True

    @property
    def is_publication(self) -> bool:
        return any(isinstance(s, tuple) and s[0].path.startswith("papers/") for s in self.segments)


@dataclass
class Event:
    """Something the author did to a page; only ``add`` is an update by DESIGN.md rule 3."""

    sec: int
    kind: str  # add | remove | readd | cosmetic | restyle
    added: tuple[int, ...] = ()  # item ids
    removed: tuple[int, ...] = ()
    session: int = -1  # add events: the page's editing session (see hacs_demo.sessions)


@dataclass
class Version:
    """The page from ``sec`` on: its items in page order, its text revision and its style
    epoch (1 once the site has moved to https, which rewrites absolute links)."""

    sec: int
    items: tuple[int, ...]
    cosmetic: int
    epoch: int


class Rendered(NamedTuple):
    """A version's bytes as served, their payload digest and their true canonical links."""

    body: bytes
    digest: str
    links: frozenset[str]


@dataclass
class Page:
    path: str  # relative to the site root: "", "publications.html", "teaching/cs101/"
    role: str  # home | pubs | teaching | course | project | subproject | cv | photo | gone
    mime: str
    depth: int
    rate: float  # long-run link-adding events per day (0 for non-HTML and gone pages)
    base_href: bool = False
    items: dict[int, Item] = field(default_factory=dict)
    events: list[Event] = field(default_factory=list)
    versions: list[Version] = field(default_factory=list)
    version_secs: list[int] = field(default_factory=list)
    rendered: dict[int, Rendered] = field(default_factory=dict)  # version index -> bytes

    @property
    def is_html(self) -> bool:
        return self.mime in ("text/html", XHTML) and self.role != "gone"


@dataclass
class Capture:
    """One WARC record (response or revisit) and what it means."""

    site: int
    page: Page
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


@dataclass
class ArchiveMemory:
    """What the crawl has stored of one site so far, as the WARC is written in time order.

    The crawler deduplicates against it (identical payloads become revisits) and the truth's
    update flags follow DESIGN.md rule 3 from it: an observation is an update when it shows a
    link none of its page's earlier observations showed.
    """

    # urlkey -> payload digest -> the stored response's (URL, WARC-Date, 14-digit timestamp)
    originals: dict[str, dict[str, tuple[str, str, str]]] = field(default_factory=dict)
    page_digests: dict[str, set[str]] = field(default_factory=dict)  # page path -> 200 digests
    seen_links: dict[str, set[str]] = field(default_factory=dict)  # page path -> links so far
    observed: set[str] = field(default_factory=set)  # page paths with a baseline observation
