"""The canonical link set of an archived HTML page (DESIGN.md rule 2).

Pure module (stdlib, lxml and ``hacs.formats.canon``): no Django, no network.

``decode_html`` turns a memento's bytes into text; ``extract_links`` returns the set of
``href`` targets of ``<a>`` and ``<area>`` elements, resolved against the capture URL (or the
page's ``<base href>``), http(s) only, as SURT urlkeys, so that the same link written two ways
(``http://www.x.edu/a/``, ``https://x.edu/a#top``, ``HTTP://X.EDU:80/a``) is one link.

In-page anchors (``href="#top"``, ``href=""``) are not links: they point into the page itself,
and counting them would make a page "gain a link" when it merely gains a table of contents.
"""

from __future__ import annotations

import codecs
import re
from urllib.parse import urljoin, urlsplit

from lxml import etree

from hacs.formats.canon import canonical_url

__all__ = ["decode_html", "extract_links"]

# How much of the body to scan for a <meta> charset. The HTML standard's prescan reads 1024
# bytes; old hand-written homepages put long comments or scripts first, so read more.
_META_SCAN_BYTES = 4096
_HEADER_CHARSET = re.compile(r"""charset\s*=\s*["']?\s*([A-Za-z0-9_.:+-]+)""", re.IGNORECASE)
# Matches both <meta charset="x"> and <meta http-equiv="Content-Type" content="...; charset=x">.
_META_CHARSET = re.compile(
    rb"""<meta[^>]*?charset\s*=\s*["']?\s*([A-Za-z0-9_.:+-]+)""", re.IGNORECASE
)
_BOMS = (
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
# Labels that browsers decode differently from Python's codec of the same name (WHATWG
# Encoding Standard): ISO-8859-1 and ASCII pages are decoded as windows-1252, GB2312 as GBK.
_LABEL_ALIASES = {
    "iso-8859-1": "cp1252",
    "iso8859-1": "cp1252",
    "latin-1": "cp1252",
    "latin1": "cp1252",
    "l1": "cp1252",
    "us-ascii": "cp1252",
    "ascii": "cp1252",
    "gb2312": "gbk",
}

_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")
_TAB_OR_NEWLINE = re.compile(r"[\t\n\r]")
# The text is handed to lxml as UTF-8 bytes with the encoding stated, so a <meta charset>
# inside cannot make libxml2 decode it a second time. collect_ids=False: the parser need not
# index id attributes (a publication list has hundreds), which saves a tenth of the time.
# One parser for all pages: HACS's workers are processes, and lxml parsers may be reused.
_PARSER = etree.HTMLParser(encoding="utf-8", collect_ids=False)


def _codec(label: str | bytes | None) -> str | None:
    """The Python codec for a charset label, or None when the label is unknown."""
    if label is None:
        return None
    text = label.decode("ascii", "replace") if isinstance(label, bytes) else label
    text = text.strip().lower()
    text = _LABEL_ALIASES.get(text, text)
    try:
        return codecs.lookup(text).name
    except LookupError:
        return None


def decode_html(body: bytes, content_type: str | None = None) -> str:
    """Decode an HTML body; never raises.

    Order: a byte-order mark; the charset of the ``Content-Type`` header; a ``<meta>``
    charset in the first 4 KB; UTF-8; windows-1252. The first of these that decodes the whole
    body without error wins; if none does, the declared charset (or windows-1252) is used
    with undecodable bytes replaced by U+FFFD.
    """
    for bom, name in _BOMS:
        if body.startswith(bom):
            return body[len(bom) :].decode(name, errors="replace")
    declared: list[str] = []
    if content_type:
        m = _HEADER_CHARSET.search(content_type)
        if m:
            found = _codec(m.group(1))
            if found:
                declared.append(found)
    m2 = _META_CHARSET.search(body, 0, _META_SCAN_BYTES)
    if m2:
        found = _codec(m2.group(1))
        # A <meta> that could be read as ASCII cannot be right about UTF-16 (HTML standard).
        if found and found.startswith("utf-16"):
            found = "utf-8"
        if found and found not in declared:
            declared.append(found)
    for name in [*declared, "utf-8", "cp1252"]:
        try:
            return body.decode(name)
        except (UnicodeDecodeError, LookupError):
            continue
    fallback = declared[0] if declared else "cp1252"
    try:
        return body.decode(fallback, errors="replace")
    except LookupError:  # pragma: no cover - codecs.lookup accepted it above
        return body.decode("latin-1")


def extract_links(html: str | bytes, base_url: str) -> frozenset[str]:
    """The canonical link set of a page: the SURT urlkeys of its ``<a>``/``<area>`` hrefs.

    ``html`` is the page text, or its bytes (decoded with ``decode_html`` and no header).
    ``base_url`` is the capture's URL; a ``<base href>`` in the page takes precedence for
    relative links. Links that are not http(s) after resolution (``mailto:``,
    ``javascript:``, ``ftp:``, ``data:``...), in-page anchors and unparseable URLs are left
    out. Broken markup is parsed the way lxml's HTML parser repairs it; an empty or
    unparseable document has no links.
    """
    text = decode_html(html) if isinstance(html, bytes) else html
    if not text.strip():
        return frozenset()
    try:
        root = etree.fromstring(text.encode("utf-8", errors="replace"), _PARSER)
    except (etree.ParserError, etree.XMLSyntaxError, ValueError):
        return frozenset()
    if root is None:
        return frozenset()

    hrefs: set[str] = set()
    base_href: str | None = None
    for element in root.iter("a", "area", "base"):
        href = element.get("href")
        if href is None:
            continue
        if element.tag == "base":
            if base_href is None:  # the first <base href> counts, as in browsers
                base_href = href
        else:
            hrefs.add(href)
    if not hrefs:
        return frozenset()

    base = _Base(_resolve_base(base_url, base_href))
    links: set[str] = set()
    for href in hrefs:
        url = base.resolve(href)
        if url is None:
            continue
        try:
            links.add(canonical_url(url))
        except ValueError:
            continue
    return frozenset(links)


def _clean(href: str) -> str:
    # What browsers do before parsing a URL: trim spaces and controls, drop tabs/newlines.
    href = href.strip(" \t\n\r\f\x00")
    if "\t" in href or "\n" in href or "\r" in href:
        href = _TAB_OR_NEWLINE.sub("", href)
    return href


def _is_http(url: str) -> bool:
    head = url[:8].lower()
    return head.startswith("http://") or head.startswith("https://")


def _resolve_base(capture_url: str, base_href: str | None) -> str | None:
    """The URL relative links resolve against: <base href> (itself resolved), else the capture."""
    capture = _clean(capture_url)
    if not _is_http(capture):
        capture = ""
    if base_href is not None:
        href = _clean(base_href)
        if href:
            try:
                resolved = urljoin(capture, href) if capture else href
            except ValueError:
                resolved = ""
            if _is_http(resolved):
                return resolved
    return capture or None


class _Base:
    """Resolves hrefs against one base URL.

    The common forms are joined by string operations; ``canonical_url`` then removes ``.``
    segments and duplicate slashes the way surt does. Hrefs with ``..`` (whose resolution
    above the root differs between RFC 3986 and surt) and other rare forms go through
    ``urllib.parse.urljoin``.
    """

    __slots__ = ("url", "scheme", "origin", "no_query", "directory")

    def __init__(self, url: str | None) -> None:
        self.url = url
        self.scheme = self.origin = self.no_query = self.directory = ""
        if url is None:
            return
        try:
            parts = urlsplit(url)
        except ValueError:
            self.url = None
            return
        self.scheme = parts.scheme.lower()
        self.origin = f"{parts.scheme}://{parts.netloc}"
        path = parts.path or "/"
        self.no_query = self.origin + path
        self.directory = self.origin + path[: path.rfind("/") + 1]

    def resolve(self, raw_href: str) -> str | None:
        """The absolute http(s) URL of an href, or None (another scheme, in-page, unusable)."""
        href = _clean(raw_href)
        if href.startswith(("http://", "https://")):
            return href
        if not href or href.startswith("#"):
            return None
        if _SCHEME.match(href):
            if _is_http(href):
                return href
            if not href[:6].lower().startswith(("http:", "https:")):
                return None  # mailto:, javascript:, ftp:, data:, tel: ...
        if self.url is None:
            return None
        if href.startswith("//") and not _has_host(href):
            return None  # "//" with no host: browsers give up (urljoin would keep the base)
        if href.startswith("?"):
            # A query reference keeps the base's path; ".." after "?" is no path segment, and
            # "?" alone sets an empty query (RFC 3986 5.2.2) where urljoin keeps the base's.
            return self.no_query + href
        if "\\" in href or ".." in href or _SCHEME.match(href):
            try:
                url = urljoin(self.url, href)
            except ValueError:
                return None
            return url if _is_http(url) else None
        if href.startswith("//"):
            return f"{self.scheme}:{href}"
        if href.startswith("/"):
            return self.origin + href
        return self.directory + href


def _has_host(network_path: str) -> bool:
    """Whether a network-path reference ("//host/…") names a host."""
    try:
        return bool(urlsplit("http:" + network_path).netloc)
    except ValueError:
        return False
