"""What authors put on their pages: publications, news, courses, lectures and releases.

Every new item brings at least one link the site has never used before, so an item's arrival
is an update by DESIGN.md rule 3 -- the event HACS tries to predict. Items mix internal links
(papers, slides, homework) with external ones (DOI, arXiv, conference programmes, GitHub), so
the link extractor meets both.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from hacs_demo.model import Item, Page, Segment, external, internal
from hacs_demo.vocabulary import (
    COURSE_TOPICS,
    FIRST_NAMES,
    LAST_NAMES,
    TITLE_WORDS,
    UNIVERSITIES,
    VENUES,
    ascii_fold,
)

# How many items a page starts with: integers in [low, high).
INITIAL_ITEMS = {
    "home": (2, 7),
    "pubs": (4, 16),
    "teaching": (1, 4),
    "course": (2, 9),
    "project": (1, 5),
    "subproject": (1, 4),
}


class ItemWriter:
    """Writes one author's items; ids count up across all their pages."""

    def __init__(
        self, rng: np.random.Generator, *, first: str, last: str, host: str, user: str
    ) -> None:
        self.rng = rng
        self.first, self.last = first, last
        self.host, self.user = host, user
        self.next_id = 0

    def initial_items(self, page: Page, start_year: int) -> None:
        """The content ``page`` already holds at the start, from up to five years back."""
        rng = self.rng
        lo, hi = INITIAL_ITEMS[page.role]
        for _ in range(int(rng.integers(lo, hi))):
            item = self.make_item(page, start_year - int(rng.integers(0, 6)))
            page.items[item.id] = item

    def make_item(self, page: Page, year: int) -> Item:
        """A new piece of content with at least one link never used before on this site."""
        rng = self.rng
        n = self.next_id + 1
        venue = VENUES[int(rng.integers(len(VENUES)))]
        if page.role in ("home", "pubs") and (page.role == "pubs" or rng.random() < 0.5):
            return self._publication(page, year, n, venue)
        if page.role == "home":
            return self._news(year, n, venue)
        if page.role == "teaching":
            return self._course_listing(year, n)
        if page.role == "course":
            return self._lecture(page, n)
        return self._release(page, n)

    def _new(self, segments: Sequence[Segment], removable: bool = True) -> Item:
        self.next_id += 1
        return Item(self.next_id, tuple(segments), removable)

    def _title(self) -> str:
        rng = self.rng
        count = int(rng.integers(3, 7))
        words = [TITLE_WORDS[int(i)] for i in rng.choice(len(TITLE_WORDS), count, False)]
        return " ".join(words).capitalize()

    def _publication(self, page: Page, year: int, n: int, venue: str) -> Item:
        rng = self.rng
        key = f"{ascii_fold(self.last).lower()}{year % 100:02d}-{n}"
        doi = f"/10.{1000 + int(rng.integers(9000))}/{year}.{n}"
        coauthor = (
            f"{FIRST_NAMES[int(rng.integers(len(FIRST_NAMES)))]} "
            f"{LAST_NAMES[int(rng.integers(len(LAST_NAMES)))]}"
        )
        segs: list[Segment] = [
            f"{self.first[0]}. {self.last} and {coauthor}. <i>{self._title()}</i>. "
            f"In <b>{venue} {year}</b>. [",
            (internal(f"papers/{key}.pdf"), "pdf"),
            "] [",
            (external("doi.org", doi), "DOI"),
            "]",
        ]
        if rng.random() < 0.3:
            arxiv = f"/abs/{year % 100:02d}{int(rng.integers(1, 13)):02d}.{n:05d}"
            segs += [" [", (external("arxiv.org", arxiv), "arXiv"), "]"]
        if page.role == "pubs" and rng.random() < 0.5:
            segs += [" [", (internal(f"slides/{key}.pdf"), "slides"), "]"]
        return self._new(segs)

    def _news(self, year: int, n: int, venue: str) -> Item:
        """A homepage news line: an accepted paper, or a new student."""
        rng = self.rng
        if rng.random() < 0.7:
            # Not "www2012.org": surt strips "www<digits>." as if it were "www.".
            host = f"{venue.lower().replace(' ', '')}conf{year}.org"
            return self._new(
                [
                    f"<b>{year}:</b> Our paper on {self._title().lower()} was accepted at ",
                    (external(host, f"/program/paper{n}.html", www=True), f"{venue} {year}"),
                    ".",
                ]
            )
        other = f"{ascii_fold(FIRST_NAMES[int(rng.integers(len(FIRST_NAMES)))]).lower()}{n}"
        uni = UNIVERSITIES[int(rng.integers(len(UNIVERSITIES)))]
        target = external(f"cs.{uni}.edu", f"/~{other}/", https=False, www=True)
        return self._new(["Welcome to my new student, ", (target, other.capitalize()), "!"])

    def _course_listing(self, year: int, n: int) -> Item:
        rng = self.rng
        code = f"cs{int(rng.integers(100, 900))}"
        term = ("spring", "summer", "fall")[int(rng.integers(3))]
        target = external(self.host, f"/courses/{term}{year}/{code}-{n}/", https=False, www=True)
        return self._new(
            [
                f"{code.upper()}: {self._title()} ({term.capitalize()} {year}) ",
                (target, "course page"),
            ]
        )

    def _lecture(self, page: Page, n: int) -> Item:
        rng = self.rng
        topic = COURSE_TOPICS[int(rng.integers(len(COURSE_TOPICS)))]
        prefix = page.path
        segs: list[Segment] = [
            f"Lecture {n}: {topic} ",
            (internal(f"{prefix}slides/lec{n:03d}.pdf"), "slides"),
        ]
        if rng.random() < 0.4:
            segs += [", ", (internal(f"{prefix}hw/hw{n:03d}.html"), "homework")]
        return self._new(segs)

    def _release(self, page: Page, n: int) -> Item:
        """A project or subproject page's release note, with its data."""
        rng = self.rng
        proj = page.path.strip("/").split("/")[1]
        ver = f"{int(rng.integers(0, 4))}.{n}"
        release = external("github.com", f"/{self.user}/{proj}/releases/tag/v{ver}", www=True)
        segs: list[Segment] = [f"Release {ver} ", (release, "release notes")]
        if rng.random() < 0.5:
            segs += [", ", (internal(f"{page.path}files/{proj}-{ver}.tar.gz"), "data")]
        return self._new(segs)
