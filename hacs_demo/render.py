"""A page version's bytes as the server sends them: HTML, the CV's PDF or the photo's JPEG.

Rendering is deterministic and remembered per version, so every capture of a version carries
the same payload digest -- which is what lets the crawler store identical captures as revisits
and lets HACS's reader tell "unchanged" from "changed" by digest alone.
"""

from __future__ import annotations

import hashlib

from hacs_demo.authors import Author
from hacs_demo.hashing import payload_digest
from hacs_demo.htmlpage import render_html
from hacs_demo.model import XHTML, Page, Rendered
from hacs_demo.site import Site
from hacs_demo.vocabulary import ascii_fold


def render(site: Site, page: Page, vi: int) -> Rendered:
    """The page's bytes at version ``vi``, their payload digest and their true link set."""
    hit = page.rendered.get(vi)
    if hit is not None:
        return hit
    if page.role == "cv":
        body = render_pdf(site.author, vi)
        result = Rendered(body, payload_digest(body), frozenset[str]())
    elif page.role == "photo":
        body = render_jpeg(site.author)
        result = Rendered(body, payload_digest(body), frozenset[str]())
    else:
        text, links = render_html(site, page, page.versions[vi])
        charset = "utf-8" if page.mime == XHTML else site.style.charset
        body = text.encode(charset, "xmlcharrefreplace")
        result = Rendered(body, payload_digest(body), frozenset(links))
    page.rendered[vi] = result
    return result


def render_pdf(author: Author, vi: int) -> bytes:
    """A tiny PDF whose bytes change with every revision of the CV (no links: not HTML)."""
    pad = hashlib.sha256(f"{author.index}/{vi}".encode()).hexdigest()
    return (
        b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<< /Type /Catalog /Pages 2 0 R >>\nendobj\n"
        + f"% Curriculum vitae of {ascii_fold(author.name)}, revision {vi} {pad}\n".encode()
        + b"trailer\n<< /Root 1 0 R >>\n%%EOF\n"
    )


def render_jpeg(author: Author) -> bytes:
    """A JFIF header around noise: the photo, the same bytes all along."""
    noise = hashlib.sha256(f"photo/{author.index}".encode()).digest() * 8
    return (
        b"\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00"
        + noise
        + b"\xff\xd9"
    )
