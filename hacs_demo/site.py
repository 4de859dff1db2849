"""One author's website: who they are, its pages and their histories, and its captures.

A site's world depends only on (seed, its index): it draws everything from its own random
stream, in a fixed order -- the author, the style, the seed-list URL, the pages, the editing habits,
the histories, then (in ``hacs_demo.captures``) the capture plan and (in
``hacs_demo.responses``) the crawler's choices. So the first 40 sites of a 500-site archive
are the same authors with the same histories as a 40-site archive.
"""

from __future__ import annotations

import numpy as np

from hacs_demo.authors import Author, draw_author, draw_seed_url, draw_style
from hacs_demo.content import ItemWriter
from hacs_demo.history import build_history
from hacs_demo.hrefs import HrefWriter
from hacs_demo.model import ArchiveMemory, Capture
from hacs_demo.pages import draw_pages
from hacs_demo.sessions import EditingHabits
from hacs_demo.span import Span
from hacs_demo.urls import SiteUrls

SPARSE_SHARE = 0.1  # sites an archive rarely visits


class Site:
    """A site drawn whole at construction; ``captures`` and ``memory`` fill in later."""

    def __init__(
        self, *, seed: int, span: Span, index: int, prev: Site | None, used: set[tuple[str, str]]
    ) -> None:
        """Draw site ``index``; ``prev`` is the site before and ``used`` the (host, user)
        pairs already taken (it gains this site's)."""
        rng = np.random.default_rng([seed, index])
        author = draw_author(rng, index, prev.author if prev else None, used)
        style = draw_style(rng, span.total_sec)
        self.index = index
        self.rng = rng
        self.span = span
        self.author: Author = author  # annotated: the next site reads it through ``prev``
        self.style = style
        self.seed_url = draw_seed_url(rng, author, style)
        self.pages = draw_pages(rng)
        self.sparse = bool(rng.random() < SPARSE_SHARE)
        self.habits = EditingHabits.draw(rng)
        if not span.bursts:  # drawn all the same, so that every later draw stays the same
            self.habits = EditingHabits(0.0, self.habits.follow_up_days)
        self.urls = SiteUrls(
            author.host, author.user, style.www, style.https_default, style.migrate_sec
        )
        self.hrefs = HrefWriter(seed, index, self.urls)
        items = ItemWriter(
            rng, first=author.first, last=author.last, host=author.host, user=author.user
        )
        for page in self.pages:
            build_history(
                page,
                rng=rng,
                items=items,
                span=span,
                habits=self.habits,
                migrate_sec=style.migrate_sec,
            )
        self.captures: list[Capture] = []  # planned by hacs_demo.captures
        self.memory = ArchiveMemory()  # filled by hacs_demo.responses as the WARC is written

    @property
    def homepage(self) -> str:
        return self.urls.page_url(self.pages[0])

    def update_events(self) -> int:
        """The site's true link-adding events, on pages of any depth."""
        return sum(1 for p in self.pages for e in p.events if e.kind == "add")
