"""Helpers shared by the tests of the synthetic archive."""

from __future__ import annotations

import base64
import hashlib
from urllib.parse import urljoin

import lxml.html

from hacs_demo import canonical_link


def sha1_b32(data: bytes) -> str:
    return base64.b32encode(hashlib.sha1(data).digest()).decode()


def parse_links(body: bytes, url: str) -> set[str]:
    """A straightforward reading of DESIGN.md rule 2, independent of the generator."""
    doc = lxml.html.fromstring(body)
    base = url
    for el in doc.iter("base"):
        if el.get("href"):
            base = urljoin(url, el.get("href").strip())
            break
    links = set()
    for el in doc.iter("a", "area"):
        href = el.get("href")
        if href is None:
            continue
        absolute = urljoin(base, href.strip())
        if absolute.split(":", 1)[0].lower() in ("http", "https"):
            links.add(canonical_link(absolute))
    return links
