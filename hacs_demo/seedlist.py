"""``seeds.csv``: the librarian's seed list, ``url,author,tags``, with the usual mistakes.

One row per site, its URL written several ways (``hacs_demo.authors.draw_seed_url``), and
three rows HACS's seed reader must explain rather than import: a non-http row, an empty-URL
row and one duplicate seed written another way. The truth says what each row is.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

from hacs_demo.site import Site


@dataclass
class SeedLine:
    url: str
    author: str
    tags: str  # as written: "a;b"
    site: int | None  # the site it names, None for a bad row
    status: str  # ok | bad | duplicate
    reason: str | None
    line: int = 0  # 1-based line number in the file (the header is line 1)


def write_seeds(path: Path, sites: list[Site]) -> list[SeedLine]:
    """Write the seed list; returns its rows in file order with their line numbers."""
    rows = [
        SeedLine(s.seed_url, s.author.name, ";".join(s.author.tags), s.index, "ok", None)
        for s in sites
    ]
    for pos, row in sorted(_bad_rows(sites), key=lambda pair: -pair[0]):
        rows.insert(min(pos, len(rows)), row)
    with open(path, "w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f, lineterminator="\n")
        writer.writerow(["url", "author", "tags"])
        for lineno, row in enumerate(rows, start=2):
            writer.writerow([row.url, row.author, row.tags])
            row.line = lineno
    return rows


def _bad_rows(sites: list[Site]) -> list[tuple[int, SeedLine]]:
    """The rows to slip in, each with the position it goes to among the good ones."""
    first = sites[0].author
    dup = (sites[1] if len(sites) > 1 else sites[0]).author
    ftp = SeedLine(
        url=f"ftp://ftp.{first.host}/pub/~{first.user}/",
        author=first.name,  # the first author's mirror, written with their name
        tags="",
        site=None,
        status="bad",
        reason="not an http(s) URL",
    )
    empty = SeedLine(
        url="", author="Jane Roe", tags="databases", site=None, status="bad", reason="empty URL"
    )
    duplicate = SeedLine(
        url=f"HTTPS://WWW.{dup.host.upper()}/~{dup.user}/index.html",
        author=dup.name,
        tags=";".join(dup.tags),
        site=dup.index,
        status="duplicate",
        reason=f"same homepage as site {dup.index}",
    )
    return [(3, ftp), (7, empty), (12, duplicate)]
