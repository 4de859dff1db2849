"""What each capture holds: the server's response, and what the crawler stored of it.

Captures are resolved in the order the crawl wrote them, because storing depends on history:
a 200 whose payload the archive already holds under the same urlkey usually becomes a
``revisit`` record (identical-payload-digest), and a few HTML captures are revisits of a
capture some other crawl holds (orphans: their original is not in this archive). The same
walk sets the truth's observation and update flags (DESIGN.md rules 1 and 3).
"""

from __future__ import annotations

import bisect
import html

from hacs_demo.hashing import payload_digest, stable_hash
from hacs_demo.model import XHTML, Capture
from hacs_demo.render import render
from hacs_demo.site import Site

REVISIT_SHARE = 0.65  # of 200s whose payload the archive already holds for the urlkey
ORPHAN_SHARE = 0.015  # of new HTML payloads, stored as revisits of another crawl's capture
ORPHAN_ORIGINAL_DATE = "2014-01-01T00:00:00Z"


def resolve(site: Site, cap: Capture) -> None:
    """Decide the capture's bytes and record type; called in WARC (time) order."""
    if cap.status != 200:
        _status_response(site, cap)
        return
    page = cap.page
    vi = bisect.bisect_right(page.version_secs, cap.sec) - 1
    body, digest, links = render(site, page, vi)
    cap.version = vi
    cap.digest = digest
    cap.mime = page.mime
    cap.http_headers = _content_headers(site, cap, body, digest)
    _store(site, cap, body)
    if page.is_html and cap.kind in ("observation", "revisit"):
        _observe(site, cap, links)


def _status_response(site: Site, cap: Capture) -> None:
    """A redirect or error: Apache's stock HTML body and headers."""
    body = status_body(cap)
    cap.body = body
    cap.digest = payload_digest(body)
    cap.mime = "text/html"
    cap.http_headers = [("Date", site.span.http_date(cap.sec)), ("Server", site.author.server)]
    if cap.location:
        cap.http_headers.append(("Location", cap.location))
    cap.http_headers += [
        ("Content-Length", str(len(body))),
        ("Connection", "close"),
        ("Content-Type", "text/html; charset=iso-8859-1"),
    ]


def _content_headers(site: Site, cap: Capture, body: bytes, digest: str) -> list[tuple[str, str]]:
    """A 200's headers; some servers name the charset in Content-Type, some leave it out."""
    page, style = cap.page, site.style
    content_type = page.mime
    if page.is_html:
        charset = "utf-8" if page.mime == XHTML else style.charset
        if style.declare_charset and stable_hash(site.author.user, "ct") % 3:
            content_type += f"; charset={charset.upper() if style.upper else charset}"
    modified = site.span.http_date(page.versions[cap.version].sec or 1)
    return [
        ("Date", site.span.http_date(cap.sec)),
        ("Server", site.author.server),
        ("Last-Modified", modified),
        ("ETag", f'"{digest[:8].lower()}-{len(body):x}"'),
        ("Accept-Ranges", "bytes"),
        ("Content-Length", str(len(body))),
        ("Connection", "close"),
        ("Content-Type", content_type),
    ]


def _store(site: Site, cap: Capture, body: bytes) -> None:
    """Store the response, or a revisit of an earlier one with the same payload."""
    rng, memory, page, digest = site.rng, site.memory, cap.page, cap.digest
    known = memory.originals.setdefault(cap.urlkey, {})
    seen_digests = memory.page_digests.setdefault(page.path, set())
    if digest in known and rng.random() < REVISIT_SHARE:
        cap.record_type = "revisit"
        cap.mime = "warc/revisit"
        orig_url, orig_iso, orig_ts = known[digest]
        cap.refers_to_url_date = (orig_url, orig_iso)
        cap.refers_to = orig_ts
        cap.kind = "revisit" if page.is_html else "non_html"
    elif (
        page.is_html and digest not in seen_digests and cap.sec > 0 and rng.random() < ORPHAN_SHARE
    ):
        # Deduplicated against a capture this archive does not hold (another crawl's WARC).
        cap.record_type = "revisit"
        cap.mime = "warc/revisit"
        cap.refers_to_url_date = (cap.url, ORPHAN_ORIGINAL_DATE)
        cap.refers_to = ""
        cap.kind = "orphan_revisit"
    else:
        cap.body = body
        known[digest] = (cap.url, site.span.iso(cap.sec), site.span.ts14(cap.sec))
        seen_digests.add(digest)


def _observe(site: Site, cap: Capture, links: frozenset[str]) -> None:
    """An observation (rule 1); an update (rule 3) if it shows a link its page never showed
    before -- never the page's first observation, which is only a baseline."""
    memory, path = site.memory, cap.page.path
    cap.observation = True
    cap.links = links
    seen = memory.seen_links.setdefault(path, set())
    first = path not in memory.observed
    cap.update = (not first) and not links <= seen
    memory.observed.add(path)
    seen |= links


def status_body(cap: Capture) -> bytes:
    """The body Apache sends with a 301, 302, 404 or 503."""
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
