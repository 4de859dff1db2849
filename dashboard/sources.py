"""Where each capture came from, in words, for the Site page's timeline and captures table.

``Capture.source`` is written by ``archive.sources``: the archive's CDX address, a file imported
by hand, or a library crawl read back after a hand-off or from the crawl inbox.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from archive.sources import crawl_source_read
from hacs_demo.files import LOCAL_WARC_NAME
from handoff.models import HandOff


class HandOffNames:
    """Every hand-off's name by id (a handful of rows), read at the first question only: a
    page without library crawls costs no query."""

    def __init__(self) -> None:
        self._names: dict[int, str] | None = None

    def get(self, pk: int, default: str) -> str:
        if self._names is None:
            self._names = dict(HandOff.objects.values_list("pk", "name"))
        return self._names.get(pk, default)


def source_label(source: str, names: HandOffNames) -> str:
    """A capture's source in a few words: "Library crawl: Heritrix hand-off “Scholars”
    (20261124050000/warcs/….warc.gz)", "Archive web.archive.org", "File crawl.warc.gz"."""
    crawl = crawl_source_read(source)
    if crawl is not None:
        if crawl.kind == "inbox":
            return f"Library crawl: crawl inbox ({crawl.detail})"
        name = names.get(crawl.hand_off_id or 0, f"#{crawl.hand_off_id} (deleted)")
        kind = "Heritrix" if crawl.kind == "heritrix" else "Browsertrix"
        return f"Library crawl: {kind} hand-off “{name}” ({crawl.detail})"
    if source.startswith(("http://", "https://")):
        return f"Archive {urlsplit(source).netloc}"
    kind, _, name = source.partition(":")
    if name == LOCAL_WARC_NAME:
        return "Demo archive"
    if kind in ("warc", "wacz", "cdx") and name:
        return f"File {name}"
    return source  # empty when nobody recorded it (rows stored before sources were)


def is_library_crawl(source: str) -> bool:
    return crawl_source_read(source) is not None
