"""Where a capture came from (``Capture.source``): one name per source, written and read here.

* The configured archive's CDX server: its URL (``archive.wayback.ArchiveConfig.source``).
* A file imported by hand (``import_cdx``, ``import_warc``, an upload): ``cdx:NAME``,
  ``warc:NAME`` or ``wacz:NAME``.
* A library crawl read back without a hand (``operations.readback``), an observation like any
  other: ``crawl:heritrix:<hand-off id>:<launch>/warcs/<file>``,
  ``crawl:browsertrix:<hand-off id>:<crawl id>/<file>`` or ``crawl:inbox:<file>``.

A capture of one page at one instant is stored once, whichever source brought it first (the
unique (site, urlkey, timestamp)): the same content at the same time from two sources counts
once.
"""

from __future__ import annotations

from dataclasses import dataclass

CRAWL_PREFIX = "crawl:"
CRAWL_KINDS = ("heritrix", "browsertrix", "inbox")
MAX_SOURCE = 200  # Capture.source's length


@dataclass(frozen=True)
class CrawlSource:
    """A library crawl's source, read back: its kind, the hand-off that caused it (none for the
    inbox) and the file (with its launch or crawl)."""

    kind: str
    hand_off_id: int | None
    detail: str


def crawl_source(kind: str, detail: str, *, hand_off_id: int | None = None) -> str:
    """The source of a library crawl's captures (cut to the column's length)."""
    if kind not in CRAWL_KINDS:
        raise ValueError(f"a crawl source is one of {CRAWL_KINDS}, not {kind!r}")
    owner = "" if hand_off_id is None else f"{hand_off_id}:"
    return f"{CRAWL_PREFIX}{kind}:{owner}{detail}"[:MAX_SOURCE]


def crawl_source_read(source: str) -> CrawlSource | None:
    """The library crawl a source names, or None for an archive or a file imported by hand."""
    if not source.startswith(CRAWL_PREFIX):
        return None
    kind, _, rest = source[len(CRAWL_PREFIX) :].partition(":")
    if kind == "inbox":
        return CrawlSource(kind, None, rest)
    owner, _, detail = rest.partition(":")
    if kind not in CRAWL_KINDS or not owner.isdigit():
        return None
    return CrawlSource(kind, int(owner), detail)
